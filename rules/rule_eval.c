/* rule_eval.c: which rule set applies to a model and a configuration, and what it
 * predicts (rules.h: rules_bind .. rules_eval). Arithmetic only once prepared. */
#include "rule_book.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>

#include "units.h"

/* --- matching ------------------------------------------------------------------------ */

static bool in_list(char *const *v, size_t n, const char *s)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i], s) == 0)
            return true;
    return false;
}

static bool model_matches(const struct rule_set *s, const struct model_plan *p)
{
    return in_list(s->models, s->nmodels, p->spec.name) &&
           in_list(s->families, s->nfamilies, p->spec.model_type);
}

static bool in_range(const struct rule_set *s, int r, int64_t v)
{
    if ((s->has_lo & (1u << r)) && v < s->lo[r])
        return false;
    return !((s->has_hi & (1u << r)) && v > s->hi[r]);
}

static bool config_matches(const struct rule_set *s, const struct train_config *c)
{
    for (int k = 0; k < K_COUNT; k++) {
        int v = rule_enum_value((enum enum_key)k, c);
        if (s->allow[k] && (v < 0 || v >= 32 || !(s->allow[k] & (1u << v))))
            return false;
    }
    if (s->ntargets) {
        int i = 0;
        while (i < s->ntargets && s->targets[i] != c->lora_targets)
            i++;
        if (i == s->ntargets)
            return false;
    }
    return in_range(s, R_LORA_R, c->lora_r) && in_range(s, R_GPUS, c->gpus);
}

static bool point_matches(const struct rule_set *s, const struct train_config *c)
{
    return in_range(s, R_MICRO_BATCH, rule_range_value(R_MICRO_BATCH, c)) &&
           in_range(s, R_SEQ_LEN, rule_range_value(R_SEQ_LEN, c));
}

int rules_bind(struct rule_book *rb, const struct model_plan *p)
{
    if (!rb)
        return -1;
    int *list = malloc((rb->nsets ? rb->nsets : 1) * sizeof *list);
    if (!list)
        return -1;
    int n = 0;
    for (size_t i = 0; i < rb->nsets; i++)
        if (model_matches(&rb->sets[i], p))
            list[n++] = (int)i;
    /* the same list for another model (or the same model bound again) reuses its binding */
    for (size_t b = 0; n > 0 && b < rb->nbinds; b++) {
        if (rb->binds[b].n == n && memcmp(rb->binds[b].sets, list, (size_t)n * sizeof *list) == 0) {
            free(list);
            return (int)b;
        }
    }
    if (n == 0 || rule_grow((void **)&rb->binds, &rb->capbinds, rb->nbinds, sizeof *rb->binds) != 0) {
        free(list);
        return -1;
    }
    rb->binds[rb->nbinds] = (struct rule_binding){list, n};
    return (int)rb->nbinds++;
}

int rules_prepare(const struct rule_book *rb, int binding, const struct model_plan *p,
                  const struct train_config *c)
{
    (void)p;
    if (!rb || binding < 0 || (size_t)binding >= rb->nbinds)
        return -1;
    const struct rule_binding *b = &rb->binds[binding];
    for (int i = 0; i < b->n; i++)
        if (config_matches(&rb->sets[b->sets[i]], c))
            return b->sets[i];
    return -1;
}

int rules_select(struct rule_book *rb, const struct model_plan *p, const struct train_config *c)
{
    int set = rules_prepare(rb, rules_bind(rb, p), p, c);
    return set >= 0 && point_matches(&rb->sets[set], c) ? set : -1;
}

/* --- evaluation ---------------------------------------------------------------------- */

void rules_compile(const struct rule_book *rb, int set, const struct model_plan *p,
                   const struct train_config *c, struct rules_point *pt)
{
    const struct rule_set *s = rule_book_set(rb, set);
    pt->set = s ? set : -1;
    pt->ncand = s ? s->ncand : 0;
    for (int i = 0; i < pt->ncand; i++) {
        const struct rule_cand *cd = &rb->cands[s->cand[i]];
        double *k = pt->k[i];
        k[0] = k[1] = k[2] = 0.0;
        for (int t = 0; t < cd->nterms; t++) {
            int f = cd->terms[t].feature;
            k[rules_feature_monomial(f)] += cd->terms[t].coef * rules_feature_factor(f, p, c);
        }
    }
}

int rules_eval_metric(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, double *bytes)
{
    const struct rule_set *s = rule_book_set(rb, pt->set);
    if (!s || pt->ncand < 1 || !point_matches(s, c))
        return -1;
    const double bs = (double)c->micro_batch * (double)c->seq_len;
    const double bss = bs * (double)c->seq_len;
    int best = 0;
    double top = -HUGE_VAL;
    for (int i = 0; i < pt->ncand; i++) {
        double v = pt->k[i][0] + pt->k[i][1] * bs + pt->k[i][2] * bss;
        if (!isfinite(v)) /* a coefficient of 1e300 overflows: no GPU holds that, never "fits" */
            v = HUGE_VAL;
        if (v > top) { /* strict: the first candidate wins ties, deterministically */
            top = v;
            best = i;
        }
    }
    /* an additive correction may be negative: the model's part is added by the caller */
    *bytes = top > 0.0 || s->with_model == RULES_ADD ? top : 0.0;
    return s->cand[best];
}

/* Rule bytes in the set's metric to device bytes: add what the model puts between that
 * metric and the device peak (allocator slack, CUDA context, communication buffers). The
 * offset is signed: `device` counts only what the allocator cannot give back (memmodel.h),
 * so it can be below `reserved`; validate inverts this conversion exactly. */
static uint64_t to_device(double v, int metric, const struct mem_estimate *e)
{
    double extra = 0.0;
    if (metric == RULES_RESERVED)
        extra = (double)e->device - (double)e->reserved;
    else if (metric == RULES_ALLOCATED)
        extra = (double)e->device - (double)e->allocated;
    else /* a device-metric set predicts what nvidia-smi shows */
        extra = (double)e->device - (double)e->shown;
    double d = ceil(fmax(0.0, v + extra));
    return !(d < (double)BYTES_SAT) ? BYTES_SAT : (uint64_t)d; /* saturating (units.h) */
}

/* What a correction can never take away: the weights, gradients and optimizer states that
 * coexist at the optimizer step (memmodel_floor's step term, as the timeline holds it). */
static double resident_floor(const struct mem_estimate *e)
{
    const uint64_t *step = e->phase[PHASE_OPTIMIZER];
    return (double)step[TERM_PARAMS] + (double)step[TERM_GRADS] + (double)step[TERM_OPTIMIZER];
}

double rules_model_metric(int metric, const struct mem_estimate *e)
{
    return (double)(metric == RULES_ALLOCATED ? e->allocated
                    : metric == RULES_RESERVED ? e->reserved : e->shown);
}

bool rules_eval_point(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, const struct mem_estimate *e,
                      uint64_t *peak, int *candidate)
{
    double v = 0.0;
    int id = rules_eval_metric(rb, pt, c, &v);
    *peak = e->device;
    *candidate = -1;
    if (id < 0)
        return false;
    const struct rule_set *s = &rb->sets[pt->set];
    if (s->with_model == RULES_ADD) /* model + correction, in the set's metric; always binds */
        v = fmax(resident_floor(e), rules_model_metric(s->metric, e) + v);
    uint64_t dev = to_device(v, s->metric, e);
    if (s->with_model == 1 && e->device >= dev) /* the model bounds it: report no rule */
        return false;
    *peak = dev;
    *candidate = id;
    return true;
}

bool rules_eval(const struct rule_book *rb, int set, const struct model_plan *p,
                const struct train_config *c, const struct mem_estimate *e, uint64_t *peak,
                int *candidate)
{
    struct rules_point pt;
    if (set < 0) {
        *peak = e->device;
        *candidate = -1;
        return false;
    }
    rules_compile(rb, set, p, c, &pt);
    return rules_eval_point(rb, &pt, c, e, peak, candidate);
}

