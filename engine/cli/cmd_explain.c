/* cmd_explain.c: `llmem-sweep explain`: one configuration, every memory term, the phase
 * timeline, the peak phase, the step time and the budget verdict (text or JSON). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "commands.h"
#include "job.h"
#include "losspath.h"
#include "units.h"

/* One value per axis, with the explain defaults where the command line is silent. */
static int single_config(const struct options *o, struct train_config *c)
{
    if (o->axes.nmethods > 1 || o->axes.gpus.n > 1 || o->axes.batch.n > 1 || o->axes.seq.n > 1 || o->axes.tp.n > 1 ||
        o->axes.ep.n > 1 || o->axes.pp.n > 1 ||
        o->axes.nprecisions > 1 || o->axes.nfinetunes > 1 || o->axes.nquants > 1 || o->axes.noptimizers > 1 ||
        o->axes.nckpts > 1 || o->axes.ntargets > 1 || o->axes.lora_r.n > 1) {
        return usage_error("explain", "one value per option (lists are for the sweep)");
    }
    memset(c, 0, sizeof *c);
    c->method = o->axes.nmethods ? (enum method)o->axes.methods[0] : METHOD_SINGLE;
    int multi = c->method != METHOD_SINGLE;
    c->gpus = o->axes.gpus.n ? o->axes.gpus.v[0] : (c->method == METHOD_DPTP ? 4 : multi ? 2 : 1);
    if (c->method == METHOD_OFFLOAD && !o->axes.gpus.n)
        c->gpus = 1; /* ZeRO-Offload runs on one GPU too */
    c->tp = c->method == METHOD_TP ? c->gpus
          : c->method == METHOD_DPTP ? (o->axes.tp.n ? o->axes.tp.v[0] : 2)
          : c->method == METHOD_PP && o->axes.tp.n ? o->axes.tp.v[0] : 1;
    c->pp = c->method == METHOD_PP ? (o->axes.pp.n ? o->axes.pp.v[0] : 2) : 1;
    c->microbatches = c->method == METHOD_PP ? (o->axes.pp_microbatches ? o->axes.pp_microbatches : 4 * c->pp) : 1;
    c->offload = c->method == METHOD_OFFLOAD ? o->axes.offload : OFFLOAD_NONE;
    c->dp = c->gpus % (c->tp * c->pp) == 0 ? c->gpus / c->tp / c->pp : 0;
    c->ep = o->axes.ep.n ? o->axes.ep.v[0] : 1;
    c->micro_batch = o->axes.batch.n ? o->axes.batch.v[0] : 1;
    c->seq_len = o->axes.seq.n ? o->axes.seq.v[0] : 512;
    c->precision = o->axes.nprecisions ? (enum precision)o->axes.precisions[0] : o->paper ? PREC_FP16 : PREC_BF16;
    c->finetune = o->axes.nfinetunes ? (enum finetune)o->axes.finetunes[0] : FT_FULL;
    c->quant = o->axes.nquants ? (enum quant)o->axes.quants[0] : c->finetune == FT_QLORA ? QUANT_NF4 : QUANT_NONE;
    if (c->finetune != FT_FULL) {
        c->lora_r = o->axes.lora_r.n ? o->axes.lora_r.v[0] : 16;
        c->lora_targets = o->axes.ntargets ? o->axes.targets[0] : TARGETS_ALL;
    }
    train_set_ckpt(c, o->axes.nckpts ? o->axes.ckpts[0] : CKPT_ON);
    c->optimizer = o->axes.noptimizers ? (enum optimizer)o->axes.optimizers[0] : OPT_ADAMW;
    c->stack = o->paper ? STACK_COLOSSAL : o->axes.stack;
    c->data = o->axes.data;
    c->alloc = o->axes.alloc;
    c->features = stack_features(c->stack) | (o->axes.eager ? FEAT_EAGER_ATTN : 0);
    if (o->paper && (c->precision != PREC_FP16 || c->finetune != FT_FULL || !c->grad_ckpt ||
                     c->optimizer != OPT_ADAMW)) {
        fputs("llmem-sweep: --paper covers fp16 mixed precision, full fine-tuning, "
              "checkpointing and Adam only\n", stderr);
        return EXIT_USAGE;
    }
    return 0;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

/* The error band beside the peak (README "Error band"). */
static void print_band(const struct job *j, const struct sweep_point *pt)
{
    char group[64];
    band_group_name(&pt->band, &pt->cfg, group, sizeof group);
    if (pt->band.level < 0) {
        printf("\nband       none (%s has no band for this configuration)",
               j->sweep.band ? "band.csv" : "the data folder has no band.csv, so it");
        return;
    }
    printf("\nband       %.3f .. %.3f GiB (x%.3f .. x%.3f; group %s: %d measured rows, %d sources)",
           units_gib(pt->peak_lo), units_gib(pt->peak_hi), pt->band.lo, pt->band.hi, group,
           pt->band.rows, pt->band.sources);
}

static json_t *band_json(const struct job *j, const struct sweep_point *pt)
{
    char group[64];
    band_group_name(&pt->band, &pt->cfg, group, sizeof group);
    return json_pack("{sIsIsfsfsssisisssI}", "lo_bytes", (json_int_t)pt->peak_lo, "hi_bytes",
                     (json_int_t)pt->peak_hi, "lo_factor", pt->band.lo, "hi_factor", pt->band.hi,
                     "group", group, "rows", pt->band.rows, "sources", pt->band.sources, "margin",
                     j->opt.margin_pct < 0 ? "auto" : "pct", "fit_bytes", (json_int_t)pt->fit_peak);
}

/* What to change when the point does not fit (answer_suggest), fewest changed first. */
static void print_changes(const struct job *j, const struct sweep_point *pt)
{
    struct answer_change ch[ANSWER_SUGGEST_MAX];
    int n = answer_suggest(&j->sweep, 0, &pt->cfg, ch, ANSWER_SUGGEST_MAX);
    printf("changes    %s\n", n ? "each of these alone makes it fit (fewest changed first):"
                                 : "no single change tried makes it fit");
    for (int i = 0; i < n; i++)
        printf("           %-34s peak %.2f GiB (%.2f GiB with the margin)\n", ch[i].what,
               ch[i].peak_gib, ch[i].fit_peak_gib);
}

static json_t *changes_json(const struct job *j, const struct sweep_point *pt)
{
    struct answer_change ch[ANSWER_SUGGEST_MAX];
    int n = answer_suggest(&j->sweep, 0, &pt->cfg, ch, ANSWER_SUGGEST_MAX);
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{sssfsf}", "change", ch[i].what, "peak_gib",
                                           round(ch[i].peak_gib * 1e3) / 1e3, "fit_peak_gib",
                                           round(ch[i].fit_peak_gib * 1e3) / 1e3));
    return a;
}

static void print_text(const struct job *j, const struct sweep_point *pt, const struct model_plan *p)
{
    const struct train_config *c = &pt->cfg;
    const struct mem_estimate *e = &pt->mem;
    const struct llmem_terms *t = &e->llmem;
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    printf("model      %s (%s, %" PRId64 " parameters)\n", p->spec.name, p->spec.model_type, p->params);
    printf("config     %s, %d GPU(s) (tp %d x dp %d", method_name(c->method), c->gpus, c->tp, c->dp);
    if (c->method == METHOD_PP)
        printf(" x pp %d, %d micro-batches a step", train_pp(c), train_microbatches(c));
    printf("), micro-batch %d, seq %d\n", c->micro_batch, c->seq_len);
    if (c->method == METHOD_OFFLOAD)
        printf("           offload %s: %.3f GiB of host memory a GPU (%.3f GiB a node of %d)\n",
               offload_name(c->offload), units_gib(e->host),
               units_gib(e->host) * (c->gpus < j->gpu.gpus_per_node ? c->gpus : j->gpu.gpus_per_node),
               j->gpu.gpus_per_node);
    printf("           %s, %s", precision_name(c->precision), finetune_name(c->finetune));
    if (c->finetune != FT_FULL)
        printf(" r=%d on %s, base %s", c->lora_r, targets, quant_name(c->quant));
    printf(", checkpointing %s, %s, stack %s%s\n", ckpt_mode_name(c),
           optimizer_name(c->optimizer), stack_name(c->stack), j->opt.paper ? " (--paper)" : "");
    printf("           %s batches, %s allocator\n", data_shape_name(c->data), alloc_conf_name(c->alloc));
    if (model_is_moe(&p->spec))
        printf("experts    %" PRId64 " routed, %" PRId64 " a token (width %" PRId64 "), shared width %"
               PRId64 ", %" PRId64 " dense block(s); %.0f parameters a token passes; ep %d\n",
               p->spec.experts, p->spec.experts_per_tok, p->spec.moe_intermediate,
               p->spec.shared_intermediate, p->spec.dense_layers, plan_active_params(p),
               train_ep(c));
    printf("GPU        %s, budget %.2f GiB, m_base %.0f MiB\n\n", j->gpu.name, units_gib(j->sweep.budget),
           mib(j->sweep.mem.base_bytes));
    /* the paper's terms are another model (full fine-tuning, fp16, Adam, Gemini chunks):
     * beside a different prediction they read as a contradiction, so only with --paper */
    if (j->opt.paper) {
        printf("LLMem terms (MiB)\n");
        printf("  m_base %10.1f   m_p  %10.1f   m_p16 %10.1f   m_p32 %10.1f\n", mib(t->m_base),
               mib(t->m_p), mib(t->m_p16), mib(t->m_p32));
        printf("  m_os   %10.1f   m_out %9.1f   m_lm  %10.1f   m_back %9.1f\n", mib(t->m_os),
               mib(t->m_out), mib(t->m_lm), mib(t->m_back));
        printf("  embed_p %" PRId64 ", other_p %" PRId64 ", chunk %" PRId64 " elements, LLMem peak "
               "%.1f MiB\n\n", p->embed_p, p->other_p, t->chunk_elems, mib(t->peak));
    } else {
        printf("parameters embed_p %" PRId64 ", other_p %" PRId64 " (the LLMem paper's terms: "
               "--paper)\n\n", p->embed_p, p->other_p);
    }
    printf("%-22s", "phase (GiB)");
    for (int k = 0; k < TERM_COUNT; k++)
        printf(" %12s", mem_term_name((enum mem_term)k));
    printf(" %10s\n", "reserved");
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (e->phase_reserved[ph] == 0)
            continue;
        printf("%-22s", mem_phase_name((enum mem_phase)ph));
        for (int k = 0; k < TERM_COUNT; k++)
            printf(" %12.3f", units_gib(e->phase[ph][k]));
        printf(" %10.3f%s\n", units_gib(e->phase_reserved[ph]), ph == (int)e->peak_phase ? "  <- peak" : "");
    }
    if (pt->rule >= 0)
        printf("\npeak       %.3f GiB device by measured rule %s (the model alone: %.3f GiB at %s)",
               units_gib(pt->peak), rules_label(j->sweep.rules, pt->rule), units_gib(e->device),
               mem_phase_name(e->peak_phase));
    else
        printf("\npeak       %.3f GiB device (%.3f reserved, %.3f allocated) at %s", units_gib(pt->peak),
               units_gib(e->reserved), units_gib(e->allocated), mem_phase_name(e->peak_phase));
    print_band(j, pt);
    if (!j->opt.paper && c->stack != STACK_COLOSSAL) {
        struct loss_cost lc;
        enum loss_path lp = losspath_select(c, p->spec.model_type);
        const unsigned bk = losspath_batch_bucket(c->micro_batch);
        losspath_cost(lp, losspath_class(c->precision), losspath_data_shape(c), c->alloc, &lc);
        printf("\nloss path  %s: %.2f allocated, %.2f reserved, %.2f held at the peak "
               "(bytes per token and vocab entry)", loss_path_name(lp), lc.allocated,
               lc.reserved[bk], lc.needed[bk]);
    }
    printf("\nstep       %.4f s (compute %.4f, memory %.4f, communication %.4f", pt->speed.step_time_s,
           pt->speed.compute_s, pt->speed.memory_s, pt->speed.comm_s);
    if (c->method == METHOD_PP)
        printf(", pipeline bubble %.4f", pt->speed.bubble_s);
    printf("), %.1f tokens/s\n", pt->speed.tokens_per_s);
    printf("verdict    %s: %.2f GiB headroom of %.2f GiB", pt->fits ? "fits" : "DOES NOT FIT",
           units_gib(j->sweep.budget) - units_gib(pt->peak), units_gib(j->sweep.budget));
    if (j->opt.margin_pct < 0)
        printf(" (the band's upper end, %.2f GiB, must fit)\n", units_gib(pt->fit_peak));
    else if (j->opt.margin_pct > 0)
        printf(" (the peak + %g %%, %.2f GiB, must fit)\n", j->opt.margin_pct, units_gib(pt->fit_peak));
    else
        putchar('\n');
    if (!pt->fits)
        print_changes(j, pt);
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

static int print_json(const struct job *j, const struct sweep_point *pt, const struct model_plan *p)
{
    const struct train_config *c = &pt->cfg;
    const struct mem_estimate *e = &pt->mem;
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    json_t *inputs = json_pack(
        "{sssIsIsIsIsIsIsisisisisisssssisssssssssbssssss}", "model", p->spec.name,
        "embed_p", (json_int_t)p->embed_p, "other_p", (json_int_t)p->other_p, "chunk_elems",
        (json_int_t)e->llmem.chunk_elems, "layers", (json_int_t)p->spec.layers, "hidden",
        (json_int_t)p->spec.hidden, "vocab", (json_int_t)p->spec.vocab, "micro_batch", c->micro_batch,
        "seq_len", c->seq_len, "gpus", c->gpus, "tp", c->tp, "dp", c->dp, "method", method_name(c->method),
        "precision", precision_name(c->precision), "lora_r", c->lora_r, "lora_targets", targets,
        "finetune", finetune_name(c->finetune), "quant", quant_name(c->quant), "optimizer",
        optimizer_name(c->optimizer), "grad_ckpt", c->grad_ckpt, "stack", stack_name(c->stack),
        "data", data_shape_name(c->data), "alloc_conf", alloc_conf_name(c->alloc));
    if (model_is_moe(&p->spec)) { /* MoE only, so dense outputs keep their bytes */
        json_object_set_new(inputs, "ep", json_integer(train_ep(c)));
        json_object_set_new(inputs, "experts", json_integer(p->spec.experts));
        json_object_set_new(inputs, "experts_per_tok", json_integer(p->spec.experts_per_tok));
        json_object_set_new(inputs, "active_params", json_integer((json_int_t)plan_active_params(p)));
    }
    if (c->method == METHOD_PP) {
        json_object_set_new(inputs, "pp", json_integer(train_pp(c)));
        json_object_set_new(inputs, "pp_microbatches", json_integer(train_microbatches(c)));
    }
    if (c->method == METHOD_OFFLOAD)
        json_object_set_new(inputs, "offload", json_string(offload_name(c->offload)));
    if (c->ckpt_selective) /* grad_ckpt stays a boolean (full checkpointing) */
        json_object_set_new(inputs, "grad_ckpt_mode", json_string(ckpt_mode_name(c)));
    json_t *speed = json_pack("{sfsfsfsfsfsf}", "step_time_s", pt->speed.step_time_s, "compute_s",
                              pt->speed.compute_s, "memory_s", pt->speed.memory_s, "comm_s", pt->speed.comm_s,
                              "samples_per_s", pt->speed.samples_per_s, "tokens_per_s", pt->speed.tokens_per_s);
    if (c->method == METHOD_PP)
        json_object_set_new(speed, "bubble_s", json_real(pt->speed.bubble_s));
    json_t *root = json_pack(
        "{sIsIsIsIsssosososssbsIsbss}", "peak_bytes", (json_int_t)pt->peak, "allocated_bytes",
        (json_int_t)e->allocated, "reserved_bytes", (json_int_t)e->reserved, "device_bytes",
        (json_int_t)e->device, "peak_phase", mem_phase_name(e->peak_phase), "terms", terms_json(&e->llmem),
        "inputs", inputs, "phases", phases_json(e), "gpu", j->gpu.name, "paper", j->opt.paper,
        "budget_bytes", (json_int_t)j->sweep.budget, "fits", pt->fits, "rule",
        pt->rule >= 0 ? rules_label(j->sweep.rules, pt->rule) : "");
    json_object_set_new(root, "speed", speed);
    if (c->method == METHOD_OFFLOAD)
        json_object_set_new(root, "host_bytes", json_integer((json_int_t)e->host));
    json_object_set_new(root, "band", band_json(j, pt));
    if (!pt->fits)
        json_object_set_new(root, "suggestions", changes_json(j, pt));
    int rc = root ? json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    json_decref(root);
    putchar('\n');
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    struct options o;
    struct train_config c;
    int rc = options_parse(argc, argv, 1, OPTIONS_EXPLAIN, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.nmodels != 1) {
        return usage_error("explain", "needs exactly one --model");
    }
    if ((rc = single_config(&o, &c)))
        return rc;
    if (o.format != FORMAT_AUTO && o.format != FORMAT_TEXT && o.format != FORMAT_JSON) {
        return usage_error("explain", "--format is text or json");
    }
    static struct job j;
    if ((rc = job_init(&j, &o))) {
        job_free(&j);
        return rc;
    }
    struct model_plan *p = &j.sweep.models[0];
    const char *bad = train_config_check(&c, &p->spec);
    if (bad) {
        fprintf(stderr, "llmem-sweep: invalid configuration: %s\n", bad);
        job_free(&j);
        return EXIT_USAGE;
    }
    plan_chunk(p); /* chunk_elems is reported in every mode */
    struct sweep_point pt;
    sweep_eval_config(&j.sweep, 0, &c, &pt);
    if (!pt.mem.llmem.chunk_elems) { /* the timeline model: add LLMem's decomposition */
        struct llmem_terms t;
        llmem_static(p, &c, j.sweep.mem.base_bytes, false, &t);
        llmem_eval(p, &c, false, &t);
        pt.mem.llmem = t;
    }
    if (o.format == FORMAT_JSON) {
        if (print_json(&j, &pt, p) != 0 && !ferror(stdout)) { /* a write error: main() says so */
            fputs("llmem-sweep: out of memory\n", stderr);
            rc = EXIT_IO;
        }
    } else
        print_text(&j, &pt, p);
    job_free(&j);
    return rc; /* main() checks stdout */
}
