/* json_out.c: the report as JSON (jansson): the inputs, the counts and the same rows and
 * fields as the ranked CSV. Numbers are rounded to the CSV's precision so the two agree
 * and the file diffs cleanly. */
#include "report.h"

#include <jansson.h>

#include "numfmt.h"

/* The number the CSV prints for v with this many decimals (numfmt.h). */
static json_t *rounded(double v, int decimals)
{
    return json_real(numfmt_value(v, decimals));
}

static json_t *row_json(const struct report_row *r)
{
    char targets[96];
    const struct train_config *c = &r->cfg;
    targets_format(c->lora_targets, targets, sizeof targets);
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r->rank));
    json_object_set_new(o, "model", json_string(r->model));
    json_object_set_new(o, "method", json_string(method_name(c->method)));
    json_object_set_new(o, "gpus", json_integer(c->gpus));
    json_object_set_new(o, "tp", json_integer(c->tp));
    json_object_set_new(o, "dp", json_integer(c->dp));
    json_object_set_new(o, "micro_batch", json_integer(c->micro_batch));
    json_object_set_new(o, "global_batch", json_integer(r->global_batch));
    json_object_set_new(o, "seq_len", json_integer(c->seq_len));
    json_object_set_new(o, "precision", json_string(precision_name(c->precision)));
    json_object_set_new(o, "finetune", json_string(finetune_name(c->finetune)));
    json_object_set_new(o, "lora_r", json_integer(c->lora_r));
    json_object_set_new(o, "lora_targets", json_string(targets));
    json_object_set_new(o, "quant", json_string(quant_name(c->quant)));
    json_object_set_new(o, "grad_ckpt", json_string(ckpt_mode_name(c)));
    json_object_set_new(o, "optimizer", json_string(optimizer_name(c->optimizer)));
    json_object_set_new(o, "peak_gib", rounded(r->peak_gib, 3));
    json_object_set_new(o, "budget_gib", rounded(r->budget_gib, 3));
    json_object_set_new(o, "headroom_gib", rounded(r->headroom_gib, 3));
    json_object_set_new(o, "peak_phase", json_string(r->peak_phase));
    static const char *const terms[TERM_COUNT] = {
        "base_gib", "params_gib", "grads_gib", "optimizer_gib", "activations_gib", "logits_gib",
        "comm_buffers_gib",
    };
    for (int t = 0; t < TERM_COUNT; t++)
        json_object_set_new(o, terms[t], rounded(r->term_gib[t], 3));
    json_object_set_new(o, "rule", json_string(r->rule));
    json_object_set_new(o, "step_time_s", rounded(r->step_time_s, 6));
    json_object_set_new(o, "samples_per_s", rounded(r->samples_per_s, 3));
    json_object_set_new(o, "tokens_per_s", rounded(r->tokens_per_s, 1));
    json_object_set_new(o, "fits", json_integer(r->fits ? 1 : 0));
    json_object_set_new(o, "index", json_integer((json_int_t)r->index));
    json_object_set_new(o, "score", json_real(r->score));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->peak_bytes));
    json_object_set_new(o, "allocated_gib", rounded(r->allocated_gib, 3));
    json_object_set_new(o, "reserved_gib", rounded(r->reserved_gib, 3));
    json_object_set_new(o, "peak_hi_gib", rounded(r->peak_hi_gib, 3));
    json_object_set_new(o, "speed_within_error", json_integer(r->speed_tie ? 1 : 0));
    json_object_set_new(o, "ep", json_integer(train_ep(c)));
    json_object_set_new(o, "pp", json_integer(train_pp(c)));
    json_object_set_new(o, "pp_microbatches", json_integer(train_microbatches(c)));
    json_object_set_new(o, "offload", json_string(offload_name(c->offload)));
    json_object_set_new(o, "host_gib", rounded(r->host_gib, 3));
    json_object_set_new(o, "recipe_id", json_string(r->recipe_id));
    json_object_set_new(o, "config_id", json_string(r->config_id));
    json_object_set_new(o, "tokens_per_s_gpu", rounded(r->tokens_per_s_gpu, 1));
    json_object_set_new(o, "recipe_min_gpus", json_integer(r->recipe_min_gpus));
    return o;
}

/* A layout's fields (method, GPUs, split, micro-batch, checkpointing) into o. */
static void set_layout(json_t *o, const struct train_config *c)
{
    json_object_set_new(o, "method", json_string(method_name(c->method)));
    json_object_set_new(o, "gpus", json_integer(c->gpus));
    json_object_set_new(o, "tp", json_integer(c->tp));
    json_object_set_new(o, "dp", json_integer(c->dp));
    json_object_set_new(o, "micro_batch", json_integer(c->micro_batch));
    json_object_set_new(o, "grad_ckpt", json_string(ckpt_mode_name(c)));
    json_object_set_new(o, "ep", json_integer(train_ep(c)));
    json_object_set_new(o, "pp", json_integer(train_pp(c)));
    json_object_set_new(o, "offload", json_string(offload_name(c->offload)));
}

static json_t *knobs_json(const char *model, const struct train_config *c, bool layout)
{
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(model));
    json_object_set_new(o, "finetune", json_string(finetune_name(c->finetune)));
    json_object_set_new(o, "lora_r", json_integer(c->lora_r));
    json_object_set_new(o, "lora_targets", json_string(targets));
    json_object_set_new(o, "quant", json_string(quant_name(c->quant)));
    json_object_set_new(o, "precision", json_string(precision_name(c->precision)));
    json_object_set_new(o, "optimizer", json_string(optimizer_name(c->optimizer)));
    json_object_set_new(o, "seq_len", json_integer(c->seq_len));
    if (layout)
        set_layout(o, c);
    return o;
}

/* The layout fields only (the recipe's knobs are in the enclosing object). */
static json_t *layout_json(const struct answer_layout *l)
{
    const struct train_config *c = &l->cfg;
    json_t *o = json_object();
    json_object_set_new(o, "config_id", json_string(l->config_id));
    set_layout(o, c);
    json_object_set_new(o, "peak_gib", rounded(l->peak_gib, 3));
    json_object_set_new(o, "tokens_per_s", rounded(l->tokens_per_s, 1));
    json_object_set_new(o, "tokens_per_s_gpu", rounded(l->tokens_per_s_gpu, 1));
    json_object_set_new(o, "hours", rounded(l->hours, 3));
    json_object_set_new(o, "gpu_hours", rounded(l->gpu_hours, 3));
    return o;
}

json_t *report_change_json(const struct answer_change *ch)
{
    json_t *o = json_object();
    json_object_set_new(o, "change", json_string(ch->what));
    json_object_set_new(o, "peak_gib", rounded(ch->peak_gib, 3));
    json_object_set_new(o, "fit_peak_gib", rounded(ch->fit_peak_gib, 3));
    json_object_set_new(o, "config", knobs_json("", &ch->cfg, true));
    json_object_del(json_object_get(o, "config"), "model");
    return o;
}

static json_t *recipe_json(const struct report *r, const struct answer_recipe *k)
{
    json_t *o = json_object();
    json_object_set_new(o, "recipe_id", json_string(k->recipe_id));
    json_object_set_new(o, "knobs", knobs_json(k->model, &k->cfg, false));
    const struct answer_layout *by = r->by_gpus + k->by0;
    json_object_set_new(o, "min_gpus", k->min_gpus ? json_integer(k->min_gpus) : json_null());
    json_object_set_new(o, "fitting_layouts", k->fitting >= 0 ? json_integer(k->fitting) : json_null());
    json_object_set_new(o, "best", k->best >= 0 ? layout_json(&by[k->best]) : json_null());
    json_t *bg = json_object();
    for (size_t i = 0; i < k->nby; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", by[i].cfg.gpus);
        json_object_set_new(bg, key, layout_json(&by[i]));
    }
    json_object_set_new(o, "by_gpus", bg);
    if (k->has_miss) {
        json_t *m = knobs_json(k->model, &k->miss.cfg, true);
        json_object_del(m, "model");
        json_object_set_new(m, "peak_gib", rounded(k->miss.peak_gib, 3));
        json_object_set_new(m, "largest_term", json_string(k->miss.term));
        json_object_set_new(m, "largest_term_gib", rounded(k->miss.term_gib, 3));
        json_object_set_new(m, "peak_phase", json_string(k->miss.phase));
        json_object_set_new(o, "closest", m);
    }
    if (!k->nby) {
        json_t *sg = json_array();
        for (int i = 0; i < k->nchange; i++)
            json_array_append_new(sg, report_change_json(&k->change[i]));
        json_object_set_new(o, "suggestions", sg);
    }
    return o;
}

static json_t *meta_json(const struct report_meta *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "version", json_string(m->version ? m->version : ""));
    json_object_set_new(o, "gpu", json_string(m->gpu));
    json_object_set_new(o, "budget_gib", rounded(m->budget_gib, 3));
    json_object_set_new(o, "host_memory_gib", /* --host-memory; null: not checked */
                        m->host_budget_bytes ? rounded(units_gib(m->host_budget_bytes), 3) : json_null());
    json_object_set_new(o, "stack", json_string(m->stack));
    json_object_set_new(o, "rank", json_string(m->rank_mode));
    json_object_set_new(o, "paper", json_boolean(m->paper));
    json_object_set_new(o, "rules", m->rules ? json_string(m->rules) : json_null());
    /* the batches the loss path's allocator replay assumed (README "Contract extensions");
     * null where the inputs are not known (merge of shard CSVs) */
    json_object_set_new(o, "data", m->in ? json_string(data_shape_name(m->in->axes.data)) : json_null());
    json_object_set_new(o, "alloc_conf", m->in ? json_string(alloc_conf_name(m->in->axes.alloc)) : json_null());
    json_object_set_new(o, "lengths", m->in && m->in->lengths ? json_string(m->in->lengths) : json_null());
    if (m->has_counts) {
        json_t *c = json_object();
        json_object_set_new(c, "space", json_integer((json_int_t)m->space));
        json_object_set_new(c, "evaluated", json_integer((json_int_t)m->evaluated));
        json_object_set_new(c, "pruned", json_integer((json_int_t)m->pruned));
        json_object_set_new(c, "fitting", json_integer((json_int_t)m->fitting));
        json_object_set_new(o, "counts", c);
    }
    return o;
}

/* What a dashboard needs to tell two runs apart (issue: JSON `meta`). */
static json_t *run_meta_json(const struct report *r)
{
    const struct report_meta *m = &r->meta;
    json_t *o = json_object();
    json_object_set_new(o, "tool", json_string("llmem-sweep"));
    json_object_set_new(o, "version", json_string(m->version ? m->version : ""));
    json_object_set_new(o, "command", m->command ? json_string(m->command) : json_null());
    json_t *in = json_array();
    for (size_t i = 0; i < r->nmodels; i++)
        json_array_append_new(in, json_string(r->models[i].name));
    json_object_set_new(o, "models", in);
    json_object_set_new(o, "gpu", json_string(m->gpu));
    json_object_set_new(o, "gpu_memory_gib", m->gpu_memory_gib > 0 ? rounded(m->gpu_memory_gib, 3) : json_null());
    json_object_set_new(o, "budget_gib", rounded(m->budget_gib, 3));
    json_object_set_new(o, "stack", json_string(m->stack));
    json_object_set_new(o, "margin", m->margin_pct < 0 ? json_string("auto") : json_real(m->margin_pct));
    json_object_set_new(o, "objective", json_string(objective_name(m->objective)));
    json_object_set_new(o, "tokens", json_real(m->tokens));
    json_object_set_new(o, "warnings", m->warning[0] ? json_pack("[s]", m->warning) : json_array());
    return o;
}

int report_write_json(const struct report *r, FILE *f)
{
    json_t *root = json_object(), *rows = json_array(), *recipes = json_array();
    json_object_set_new(root, "meta", run_meta_json(r));
    json_object_set_new(root, "inputs", meta_json(&r->meta));
    for (size_t i = 0; i < r->nrecipes; i++)
        json_array_append_new(recipes, recipe_json(r, &r->recipes[i]));
    json_object_set_new(root, "recipes", recipes);
    for (size_t i = 0; i < r->nrows; i++)
        json_array_append_new(rows, row_json(&r->rows[i]));
    json_object_set_new(root, "rows", rows);
    int rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (rc == 0 && fputc('\n', f) == EOF)
        rc = -1;
    return rc;
}
