/* explanation.c: one configuration explained, as data (explanation.h). */
#include "explanation.h"

#include <stdio.h>
#include <string.h>

#include "llmem.h"
#include "losspath.h"
#include "mempoint.h"
#include "rules.h"
#include "units.h"

/* The loss path's cost per token and vocabulary entry at the point's micro-batch bucket:
 * what the timeline model charges its N x V tensors (not used by LLMem's equations). */
static void loss_cost_of(struct explanation *x, const struct train_config *c)
{
    struct loss_cost lc;
    const enum loss_path lp = losspath_select(c, x->plan->spec.model_type);
    const unsigned bk = losspath_batch_bucket(c->micro_batch);
    losspath_cost(lp, losspath_class(c->precision), losspath_data_shape(c), c->alloc, &lc);
    x->has_loss = true;
    snprintf(x->loss_path, sizeof x->loss_path, "%s", loss_path_name(lp));
    x->loss_allocated = lc.allocated[bk];
    x->loss_reserved = lc.reserved[bk];
    x->loss_needed = lc.needed[bk];
}

int explanation_build(struct explanation *x, struct sweep *s, uint32_t model,
                      const struct train_config *c, const struct explain_params *par)
{
    memset(x, 0, sizeof *x);
    x->par = *par;
    struct model_plan *p = &s->models[model];
    x->plan = p;
    plan_chunk(p); /* chunk_elems is reported in every mode */
    struct sweep_point *pt = &x->pt;
    sweep_eval_run(s, model, c, par->widths, par->nwidths, pt);
    if (!pt->mem.llmem.chunk_elems) { /* the timeline model: add LLMem's decomposition */
        struct llmem_terms t;
        llmem_static(p, &pt->cfg, s->mem.base_bytes, false, &t);
        llmem_eval(p, &pt->cfg, false, &t);
        pt->mem.llmem = t;
    }
    snprintf(x->gpu, sizeof x->gpu, "%s", s->gpu->name);
    x->gpus_per_node = s->gpu->gpus_per_node;
    x->budget = s->budget;
    x->host_budget = s->host_budget;
    x->base_bytes = s->mem.base_bytes;
    if (pt->rule >= 0)
        snprintf(x->rule, sizeof x->rule, "%s", rules_label(s->rules, pt->rule));
    band_group_name(&pt->band, &pt->cfg, x->band_group, sizeof x->band_group);
    x->band_table = s->band != NULL;
    targets_format(pt->cfg.lora_targets, x->targets, sizeof x->targets);
    x->moe = model_is_moe(&p->spec);
    x->active_params = plan_active_params(p);
    if (!par->paper && pt->cfg.stack != STACK_COLOSSAL) {
        loss_cost_of(x, &pt->cfg);
        struct mem_prepared mp;
        memmodel_prepare(p, &pt->cfg, &s->mem, &mp);
        const unsigned bk = losspath_batch_bucket(pt->cfg.micro_batch);
        if (par->nwidths && memmodel_replay_run(p, &pt->cfg, par->widths, par->nwidths, &mp) == 0) {
            x->loss_reserved = mp.logits_res_tok[bk]; /* the row's own run */
            x->loss_needed = mp.logits_need_tok[bk];
        } else if (sweep_use_lengths(s, p, &pt->cfg, 1u << bk, &mp) == 0) {
            x->loss_reserved = mp.logits_res_tok[bk]; /* the user's data (--lengths) */
            x->loss_needed = mp.logits_need_tok[bk];
            x->loss_on_lengths = true;
        }
        x->side_pool = mp.side_pool;
        x->side_pool_stream = train_fsdp1(&pt->cfg) ? "FSDP1's pre-unshard stream"
                                                    : "FSDP2's all-gather copy-in stream";
        x->wrap_reserved = mp.wrap_reserved;
        x->wrap_allocated = mp.wrap_allocated;
        x->paged = mp.paged;
        x->paged_one = mp.paged_one;
    }
    if (par->detail)
        memdetail_build(p, &pt->cfg, &s->mem, &pt->mem, pt->mem.peak_phase, &x->detail);
    if (!pt->fits) { /* the changes are sweep points, which fit by the held peak: no whole
                        steps replayed for them (memmodel.h mem_options.whole_steps) */
        const bool whole = s->mem.whole_steps;
        s->mem.whole_steps = false;
        x->nchanges = answer_suggest(s, model, &pt->cfg, x->changes, ANSWER_SUGGEST_MAX);
        s->mem.whole_steps = whole;
    }
    return 0;
}

void explanation_set_measured(struct explanation *x, const char *file, long line, const char *id,
                              const char *metric, double gib)
{
    struct explain_measured *m = &x->measured;
    m->has = true;
    snprintf(m->file, sizeof m->file, "%s", file);
    m->line = line;
    snprintf(m->id, sizeof m->id, "%s", id);
    snprintf(m->metric, sizeof m->metric, "%s", metric);
    m->gib = gib;
    const int k = rules_metric_parse(metric);
    m->predicted_gib = k >= 0 ? rules_model_metric(k, &x->pt.mem) / (double)GIB : -1.0;
}
