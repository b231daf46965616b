/* explain_out.c: `llmem-sweep explain` as text and JSON: one configuration, every memory
 * term, the phase timeline, the peak phase, the step time and the budget verdict, written
 * from a finished explanation (explanation.h). */
#include "explain_out.h"
#include "report.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "units.h"

static double mib(uint64_t b) { return (double)b / 1048576.0; }

/* The error band beside the peak (README "Error band"). */
static void text_band(const struct explanation *x, FILE *f)
{
    const struct sweep_point *pt = &x->pt;
    if (pt->band.level < 0) {
        fprintf(f, "\nband       none (%s has no band for this configuration)",
                x->band_table ? "band.csv" : "the data folder has no band.csv, so it");
        return;
    }
    fprintf(f, "\nband       %.3f .. %.3f GiB (x%.3f .. x%.3f; group %s: %d measured rows, %d sources)",
            units_gib(pt->peak_lo), units_gib(pt->peak_hi), pt->band.lo, pt->band.hi, x->band_group,
            pt->band.rows, pt->band.sources);
}

static json_t *band_json(const struct explanation *x)
{
    const struct sweep_point *pt = &x->pt;
    return json_pack("{sIsIsfsfsssisisssI}", "lo_bytes", (json_int_t)pt->peak_lo, "hi_bytes",
                     (json_int_t)pt->peak_hi, "lo_factor", pt->band.lo, "hi_factor", pt->band.hi,
                     "group", x->band_group, "rows", pt->band.rows, "sources", pt->band.sources, "margin",
                     x->par.margin_pct < 0 ? "auto" : "pct", "fit_bytes", (json_int_t)pt->fit_peak);
}

/* What to change when the point does not fit, fewest changed first. */
static void text_changes(const struct explanation *x, FILE *f)
{
    fprintf(f, "changes    %s\n", x->nchanges ? "each of these makes it fit (fewest changed first):"
                                              : "no single change tried makes it fit");
    for (int i = 0; i < x->nchanges; i++)
        fprintf(f, "           peak %7.2f GiB (%7.2f GiB with the margin)  %s\n", x->changes[i].peak_gib,
                x->changes[i].fit_peak_gib, x->changes[i].what);
}

static json_t *changes_json(const struct explanation *x)
{
    json_t *a = json_array();
    for (int i = 0; i < x->nchanges; i++)
        json_array_append_new(a, report_change_json(&x->changes[i]));
    return a;
}

static void text_config(const struct explanation *x, FILE *f)
{
    const struct train_config *c = &x->pt.cfg;
    const struct model_plan *p = x->plan;
    const struct mem_estimate *e = &x->pt.mem;
    fprintf(f, "model      %s (%s, %" PRId64 " parameters)\n", p->spec.name, p->spec.model_type, p->params);
    fprintf(f, "config     %s, %d GPU(s) (tp %d x dp %d", method_name(c->method), c->gpus, c->tp, c->dp);
    if (c->method == METHOD_PP)
        fprintf(f, " x pp %d, %d micro-batches a step%s", train_pp(c), train_microbatches(c),
                train_pp_local(c) > 1 ? ", interleaved 1F1B" : "");
    fprintf(f, "), micro-batch %d, seq %d\n", c->micro_batch, c->seq_len);
    if (c->method == METHOD_OFFLOAD)
        fprintf(f, "           offload %s: %.3f GiB of host memory a GPU (%.3f GiB a node of %d)\n",
                offload_name(c->offload), units_gib(e->host), units_gib(x->pt.host_node), x->gpus_per_node);
    fprintf(f, "           %s, %s", precision_name(c->precision), finetune_name(c->finetune));
    if (c->finetune != FT_FULL)
        fprintf(f, " r=%d on %s, base %s", c->lora_r, x->targets, quant_name(c->quant));
    fprintf(f, ", checkpointing %s, %s%s, stack %s%s%s%s\n", ckpt_mode_name(c),
            optimizer_name(c->optimizer), (c->features & FEAT_PAGED_OPT) ? " (paged)" : "", stack_name(c->stack),
            (c->features & FEAT_LIGER_FLCE) ? "+liger" : "", stack_feature_suffix(c->features),
            x->par.paper ? " (--paper)" : "");
    fprintf(f, "           %s batches, %s allocator\n", data_shape_name(c->data), alloc_conf_name(c->alloc));
    if (x->moe)
        fprintf(f, "experts    %" PRId64 " routed, %" PRId64 " a token (width %" PRId64 "), shared width %"
                PRId64 ", %" PRId64 " dense block(s); %.0f parameters a token passes; ep %d\n",
                p->spec.experts, p->spec.experts_per_tok, p->spec.moe_intermediate,
                p->spec.shared_intermediate, p->spec.dense_layers, x->active_params, train_ep(c));
    fprintf(f, "GPU        %s, budget %.2f GiB, m_base %.0f MiB\n\n", x->gpu, units_gib(x->budget),
            mib(x->base_bytes));
}

/* The paper's terms are another model (full fine-tuning, fp16, Adam, Gemini chunks): beside
 * a different prediction they read as a contradiction, so only with --paper. */
static void text_llmem(const struct explanation *x, FILE *f)
{
    const struct model_plan *p = x->plan;
    const struct llmem_terms *t = &x->pt.mem.llmem;
    if (!x->par.paper) {
        fprintf(f, "parameters embed_p %" PRId64 ", other_p %" PRId64 " (the LLMem paper's terms: "
                "--paper)\n\n", p->embed_p, p->other_p);
        return;
    }
    fprintf(f, "LLMem terms (MiB)\n");
    fprintf(f, "  m_base %10.1f   m_p  %10.1f   m_p16 %10.1f   m_p32 %10.1f\n", mib(t->m_base),
            mib(t->m_p), mib(t->m_p16), mib(t->m_p32));
    fprintf(f, "  m_os   %10.1f   m_out %9.1f   m_lm  %10.1f   m_back %9.1f\n", mib(t->m_os),
            mib(t->m_out), mib(t->m_lm), mib(t->m_back));
    fprintf(f, "  embed_p %" PRId64 ", other_p %" PRId64 ", chunk %" PRId64 " elements, LLMem peak "
            "%.1f MiB\n\n", p->embed_p, p->other_p, t->chunk_elems, mib(t->peak));
}

static void text_phases(const struct mem_estimate *e, FILE *f)
{
    fprintf(f, "%-22s", "phase (GiB)");
    for (int k = 0; k < TERM_COUNT; k++)
        fprintf(f, " %12s", mem_term_name((enum mem_term)k));
    fprintf(f, " %10s\n", "reserved");
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (e->phase_reserved[ph] == 0)
            continue;
        fprintf(f, "%-22s", mem_phase_name((enum mem_phase)ph));
        for (int k = 0; k < TERM_COUNT; k++)
            fprintf(f, " %12.3f", units_gib(e->phase[ph][k]));
        fprintf(f, " %10.3f%s\n", units_gib(e->phase_reserved[ph]), ph == (int)e->peak_phase ? "  <- peak" : "");
    }
}

/* explain --measured: the row beside the model's value of its metric. */
static void text_measured(const struct explain_measured *m, FILE *f)
{
    if (!m->has)
        return;
    fprintf(f, "\nmeasured   %.3f GiB %s (%s, %s:%ld)", m->gib, m->metric, m->id, m->file, m->line);
    if (m->predicted_gib >= 0)
        fprintf(f, "; the model: %.3f GiB %s, %+.1f %%", m->predicted_gib, m->metric,
                100.0 * (m->predicted_gib - m->gib) / m->gib);
}

static json_t *measured_json(const struct explain_measured *m)
{
    json_t *o = json_pack("{sssssIsssf}", "id", m->id, "file", m->file, "line", (json_int_t)m->line,
                          "metric", m->metric, "gib", m->gib);
    if (o && m->predicted_gib >= 0) {
        json_object_set_new(o, "predicted_gib", json_real(m->predicted_gib));
        json_object_set_new(o, "error_pct", json_real(100.0 * (m->predicted_gib - m->gib) / m->gib));
    }
    return o;
}

static void text_verdict(const struct explanation *x, FILE *f)
{
    const struct sweep_point *pt = &x->pt;
    const struct mem_estimate *e = &pt->mem;
    if (x->rule[0])
        fprintf(f, "\npeak       %.3f GiB device by measured rule %s (the model alone: %.3f GiB at %s)",
                units_gib(pt->peak), x->rule, units_gib(e->device), mem_phase_name(e->peak_phase));
    else
        fprintf(f, "\npeak       %.3f GiB device (%.3f reserved, %.3f allocated) at %s", units_gib(pt->peak),
                units_gib(e->reserved), units_gib(e->allocated), mem_phase_name(e->peak_phase));
    /* device below reserved reads as a contradiction unless said (memmodel.h mem_estimate) */
    if (!x->rule[0] && e->shown > e->device)
        fprintf(f, "\ncache      %.3f GiB of the reserved are segments wholly free when memory runs "
                   "short: the allocator releases them and retries before it fails, so device leaves "
                   "them out", units_gib(e->shown - e->device));
    text_measured(&x->measured, f);
    text_band(x, f);
    if (x->has_loss)
        fprintf(f, "\nloss path  %s: %.2f allocated, %.2f reserved, %.2f held at the peak "
                "(bytes per token and vocab entry%s)", x->loss_path, x->loss_allocated, x->loss_reserved,
                x->loss_needed, x->loss_on_lengths ? "; reserved and held on the --lengths data" : "");
    if (x->side_pool)
        fprintf(f, "\nside pool  %.3f GiB reserved by %s (in every phase's reserved, not in allocated)",
                units_gib(x->side_pool), x->side_pool_stream);
    if (x->wrap_reserved)
        fprintf(f, "\nwrap       %.3f GiB reserved when FSDP1's wrap of CPU-resident weights returns, %.3f of "
                "them cached and free (a floor under each phase's default-stream reserved)",
                units_gib(x->wrap_reserved), units_gib(x->wrap_reserved - x->wrap_allocated));
    if (x->paged)
        fprintf(f, "\npaged      %.3f GiB of optimizer states in managed memory (bitsandbytes): %.3f GiB on the "
                "GPU beside the reserved pool, %.3f GiB to host and back each step; the largest parameter's "
                "%.3f GiB must fit (in device)", units_gib(x->paged), units_gib(x->paged - e->paged_moved),
                units_gib(e->paged_moved), units_gib(x->paged_one));
    if (e->step_end)
        fprintf(f, "\nstep end   %.3f GiB reserved after the phases: torch pipelining's merged result of the "
                "last stage's outputs, a segment of its own (in reserved, not in allocated)", units_gib(e->step_end));
    if (e->replayed_steps)
        fprintf(f, "\nreplayed   reserved from %u whole steps through the allocator model (stepreplay.c); "
                "the phases alone, as the sweep's reports show it: %.3f GiB", e->replayed_steps,
                units_gib(e->reserved_phases));
    fprintf(f, "\nstep       %.4f s (compute %.4f, memory %.4f, communication %.4f", pt->speed.step_time_s,
            pt->speed.compute_s, pt->speed.memory_s, pt->speed.comm_s);
    if (pt->cfg.method == METHOD_PP)
        fprintf(f, ", pipeline bubble %.4f", pt->speed.bubble_s);
    fprintf(f, "), %.1f tokens/s\n", pt->speed.tokens_per_s);
    if (pt->host_over) {
        fprintf(f, "verdict    DOES NOT FIT: the offload fills %.2f GiB of host memory a node, above "
                   "--host-memory %.2f GiB\n", units_gib(pt->host_node), units_gib(x->host_budget));
        return;
    }
    fprintf(f, "verdict    %s: %.2f GiB headroom of %.2f GiB", pt->fits ? "fits" : "DOES NOT FIT",
            units_gib(x->budget) - units_gib(pt->peak), units_gib(x->budget));
    if (x->par.margin_pct < 0)
        fprintf(f, " (the band's upper end, %.2f GiB, must fit)\n", units_gib(pt->fit_peak));
    else if (x->par.margin_pct > 0)
        fprintf(f, " (the peak + %g %%, %.2f GiB, must fit)\n", x->par.margin_pct, units_gib(pt->fit_peak));
    else
        fputc('\n', f);
}

/* --detail: each term of the peak phase, then the tensors it is the sum of. */
static void text_detail(const struct explanation *x, FILE *f)
{
    const struct mem_detail *d = &x->detail;
    const struct mem_estimate *e = &x->pt.mem;
    fprintf(f, "\ntensors at %s (MiB on this GPU, after its TP, DP and EP shares; shape with the "
            "dimensions resolved; count: per layer x layers)\n", mem_phase_name(d->phase));
    for (int k = 0; k < TERM_COUNT; k++) {
        if (!e->phase[d->phase][k])
            continue;
        fprintf(f, "%-12s %12.3f\n", mem_term_name((enum mem_term)k), mib(e->phase[d->phase][k]));
        for (size_t i = 0; i < d->n; i++) {
            const struct mem_detail_row *r = &d->rows[i];
            if (r->term == (enum mem_term)k)
                fprintf(f, "  %-46s %-22s %-6s %-16s %12.3f  %s\n", r->name, r->shape, r->dtype, r->count,
                        mib(r->bytes), r->source);
        }
    }
    if (d->truncated)
        fprintf(f, "  (more than %d rows: the rest left out)\n", MEMDETAIL_MAX);
}

int explain_write_text(const struct explanation *x, FILE *f)
{
    text_config(x, f);
    text_llmem(x, f);
    text_phases(&x->pt.mem, f);
    if (x->par.detail)
        text_detail(x, f);
    text_verdict(x, f);
    if (!x->pt.fits)
        text_changes(x, f);
    return 0;
}

static json_t *terms_json(const struct llmem_terms *t)
{
    return json_pack("{sIsIsIsIsIsIsIsI}", "m_base", (json_int_t)t->m_base, "m_p", (json_int_t)t->m_p,
                     "m_p16", (json_int_t)t->m_p16, "m_p32", (json_int_t)t->m_p32, "m_os",
                     (json_int_t)t->m_os, "m_out", (json_int_t)t->m_out, "m_lm", (json_int_t)t->m_lm,
                     "m_back", (json_int_t)t->m_back);
}

static json_t *phases_json(const struct mem_estimate *e)
{
    json_t *a = json_array();
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (e->phase_reserved[ph] == 0)
            continue;
        json_t *o = json_pack("{sssI}", "phase", mem_phase_name((enum mem_phase)ph), "reserved_bytes",
                              (json_int_t)e->phase_reserved[ph]);
        for (int k = 0; k < TERM_COUNT; k++)
            json_object_set_new(o, mem_term_name((enum mem_term)k), json_integer((json_int_t)e->phase[ph][k]));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *inputs_json(const struct explanation *x)
{
    const struct train_config *c = &x->pt.cfg;
    const struct model_plan *p = x->plan;
    json_t *inputs = json_pack(
        "{sssIsIsIsIsIsIsisisisisisssssisssssssssbssssss}", "model", p->spec.name,
        "embed_p", (json_int_t)p->embed_p, "other_p", (json_int_t)p->other_p, "chunk_elems",
        (json_int_t)x->pt.mem.llmem.chunk_elems, "layers", (json_int_t)p->spec.layers, "hidden",
        (json_int_t)p->spec.hidden, "vocab", (json_int_t)p->spec.vocab, "micro_batch", c->micro_batch,
        "seq_len", c->seq_len, "gpus", c->gpus, "tp", c->tp, "dp", c->dp, "method", method_name(c->method),
        "precision", precision_name(c->precision), "lora_r", c->lora_r, "lora_targets", x->targets,
        "finetune", finetune_name(c->finetune), "quant", quant_name(c->quant), "optimizer",
        optimizer_name(c->optimizer), "grad_ckpt", c->grad_ckpt, "stack", stack_name(c->stack),
        "data", data_shape_name(c->data), "alloc_conf", alloc_conf_name(c->alloc));
    if (x->moe) { /* MoE only, so dense outputs keep their bytes */
        json_object_set_new(inputs, "ep", json_integer(train_ep(c)));
        json_object_set_new(inputs, "experts", json_integer(p->spec.experts));
        json_object_set_new(inputs, "experts_per_tok", json_integer(p->spec.experts_per_tok));
        json_object_set_new(inputs, "active_params", json_integer((json_int_t)x->active_params));
    }
    if (c->method == METHOD_PP) {
        json_object_set_new(inputs, "pp", json_integer(train_pp(c)));
        json_object_set_new(inputs, "pp_microbatches", json_integer(train_microbatches(c)));
        json_object_set_new(inputs, "pp_schedule", json_string(train_pp_local(c) > 1 ? "interleaved" : "1f1b"));
    }
    if (c->method == METHOD_OFFLOAD)
        json_object_set_new(inputs, "offload", json_string(offload_name(c->offload)));
    if (c->features & FEAT_ROPE_TABLES) /* only with the tables, so other outputs keep their bytes */
        json_object_set_new(inputs, "rope_tables",
                            json_string((c->features & FEAT_ROPE_TABLES_FP32) ? "fp32" : "weights"));
    if (c->features & FEAT_FSDP_END_UNITS) /* likewise only when on */
        json_object_set_new(inputs, "fsdp_end_units", json_true());
    if (c->ckpt_selective) /* grad_ckpt stays a boolean (full checkpointing) */
        json_object_set_new(inputs, "grad_ckpt_mode", json_string(ckpt_mode_name(c)));
    return inputs;
}

static json_t *speed_json(const struct sweep_point *pt)
{
    json_t *speed = json_pack("{sfsfsfsfsfsf}", "step_time_s", pt->speed.step_time_s, "compute_s",
                              pt->speed.compute_s, "memory_s", pt->speed.memory_s, "comm_s", pt->speed.comm_s,
                              "samples_per_s", pt->speed.samples_per_s, "tokens_per_s", pt->speed.tokens_per_s);
    if (pt->cfg.method == METHOD_PP)
        json_object_set_new(speed, "bubble_s", json_real(pt->speed.bubble_s));
    return speed;
}

static json_t *detail_json(const struct explanation *x)
{
    const struct mem_detail *d = &x->detail;
    const struct mem_estimate *e = &x->pt.mem;
    json_t *terms = json_array();
    for (int k = 0; k < TERM_COUNT; k++) {
        if (!e->phase[d->phase][k])
            continue;
        json_t *rows = json_array();
        for (size_t i = 0; i < d->n; i++) {
            const struct mem_detail_row *r = &d->rows[i];
            if (r->term == (enum mem_term)k)
                json_array_append_new(rows, json_pack("{sssssssssIss}", "name", r->name, "shape", r->shape,
                                                      "dtype", r->dtype, "count", r->count, "bytes",
                                                      (json_int_t)r->bytes, "source", r->source));
        }
        json_array_append_new(terms, json_pack("{sssIso}", "term", mem_term_name((enum mem_term)k), "bytes",
                                               (json_int_t)e->phase[d->phase][k], "tensors", rows));
    }
    return json_pack("{sssosb}", "phase", mem_phase_name(d->phase), "terms", terms, "truncated", d->truncated);
}

int explain_write_json(const struct explanation *x, FILE *f)
{
    const struct sweep_point *pt = &x->pt;
    const struct mem_estimate *e = &pt->mem;
    json_t *root = json_pack(
        "{sIsIsIsIsssosososssbsIsbss}", "peak_bytes", (json_int_t)pt->peak, "allocated_bytes",
        (json_int_t)e->allocated, "reserved_bytes", (json_int_t)e->reserved, "device_bytes",
        (json_int_t)e->device, "peak_phase", mem_phase_name(e->peak_phase), "terms", terms_json(&e->llmem),
        "inputs", inputs_json(x), "phases", phases_json(e), "gpu", x->gpu, "paper", x->par.paper,
        "budget_bytes", (json_int_t)x->budget, "fits", pt->fits, "rule", x->rule);
    json_object_set_new(root, "speed", speed_json(pt));
    if (pt->cfg.method == METHOD_OFFLOAD) {
        json_object_set_new(root, "host_bytes", json_integer((json_int_t)e->host));
        json_object_set_new(root, "host_node_bytes", json_integer((json_int_t)pt->host_node));
    }
    if (x->host_budget)
        json_object_set_new(root, "host_budget_bytes", json_integer((json_int_t)x->host_budget));
    if (e->step_end)
        json_object_set_new(root, "step_end_reserved_bytes", json_integer((json_int_t)e->step_end));
    if (e->replayed_steps) { /* replayed points only, so other outputs keep their bytes */
        json_object_set_new(root, "replayed_steps", json_integer((json_int_t)e->replayed_steps));
        json_object_set_new(root, "phases_reserved_bytes", json_integer((json_int_t)e->reserved_phases));
    }
    if (x->paged) { /* paged optimizers only, so other outputs keep their bytes */
        json_object_set_new(root, "paged_bytes", json_integer((json_int_t)x->paged));
        json_object_set_new(root, "paged_moved_bytes", json_integer((json_int_t)e->paged_moved));
        json_object_set_new(root, "paged_largest_bytes", json_integer((json_int_t)x->paged_one));
    }
    /* what nvidia-smi shows with memory to spare: reserved and what lies outside the allocator
     * (text: the cache line is shown_bytes - device_bytes) */
    json_object_set_new(root, "shown_bytes", json_integer((json_int_t)e->shown));
    if (x->has_loss) /* bytes per token and vocabulary entry (README "The loss path") */
        json_object_set_new(root, "loss_path",
                            json_pack("{sssfsfsfsb}", "name", x->loss_path, "allocated", x->loss_allocated,
                                      "reserved", x->loss_reserved, "held", x->loss_needed,
                                      "on_lengths", x->loss_on_lengths));
    json_object_set_new(root, "band", band_json(x));
    if (x->measured.has)
        json_object_set_new(root, "measured", measured_json(&x->measured));
    if (!pt->fits)
        json_object_set_new(root, "suggestions", changes_json(x));
    if (x->par.detail)
        json_object_set_new(root, "detail", detail_json(x));
    int rc = root ? json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    json_decref(root);
    fputc('\n', f);
    return rc;
}
