/* space.c: enumeration of the configuration space (see space.h). */
#include "space.h"

#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct grow {
    struct space_outer *v;
    size_t n, cap;
    size_t *group; /* first outer entry of each rank group */
    size_t ngroups, gcap;
    int failed;
};

static void add(struct grow *g, uint32_t model, const struct train_config *c, bool starts_group)
{
    if (g->failed)
        return;
    if (starts_group) {
        size_t *v = grow_array(g->group, &g->gcap, g->ngroups, sizeof *v, 1024);
        if (!v) {
            g->failed = 1;
            return;
        }
        g->group = v;
        g->group[g->ngroups++] = g->n;
    }
    struct space_outer *v = grow_array(g->v, &g->cap, g->n, sizeof *v, 1024);
    if (!v) {
        g->failed = 1;
        return;
    }
    g->v = v;
    g->v[g->n++] = (struct space_outer){.model = model, .cfg = *c};
}

/* The fine-tuning axes (precision, mode, quantization, rank, targets, checkpointing,
 * optimizer) for one model and parallel layout. */
static void add_tuning(struct grow *g, const struct space_axes *o, uint32_t model,
                       struct train_config c)
{
    for (int pi = 0; pi < o->nprecisions; pi++)
        for (int fi = 0; fi < o->nfinetunes; fi++)
            for (int qi = 0; qi < o->nquants; qi++) {
                c.precision = (enum precision)o->precisions[pi];
                c.finetune = (enum finetune)o->finetunes[fi];
                c.quant = (enum quant)o->quants[qi];
                bool nf4 = c.quant == QUANT_NF4 || c.quant == QUANT_NF4_DQ;
                if (c.finetune == FT_FULL && c.quant != QUANT_NONE)
                    continue;
                if ((c.finetune == FT_QLORA) != nf4) /* lora+nf4 is qlora: list it once */
                    continue;
                if (train_precision_check(&c)) /* fp8 is full training only */
                    continue;
                int nr = c.finetune == FT_FULL ? 1 : o->lora_r.n;
                int nt = c.finetune == FT_FULL ? 1 : o->ntargets;
                /* ranks innermost and ascending: one rank group is consecutive entries */
                for (int ti = 0; ti < nt; ti++)
                    for (int ki = 0; ki < o->nckpts; ki++)
                        for (int oi = 0; oi < o->noptimizers; oi++)
                            for (int ri = 0; ri < nr; ri++) {
                                c.lora_r = c.finetune == FT_FULL ? 0 : o->lora_r.v[ri];
                                c.lora_targets = c.finetune == FT_FULL ? 0 : o->targets[ti];
                                train_set_ckpt(&c, o->ckpts[ki]);
                                c.optimizer = (enum optimizer)o->optimizers[oi];
                                add(g, model, &c, ri == 0);
                            }
            }
}

/* The expert-parallel degrees of one layout: --ep's (default 1), each where it is valid
 * (a MoE model, a data-parallel method, ep dividing dp and the experts). */
static void add_ep(struct grow *g, const struct space_axes *o, uint32_t model,
                   const struct model_plan *p, struct train_config c)
{
    static const int32_t one = 1;
    const int32_t *ep = o->ep.n ? o->ep.v : &one;
    const int nep = o->ep.n ? o->ep.n : 1;
    for (int i = 0; i < nep; i++) {
        c.ep = ep[i];
        if (train_config_check(&c, &p->spec) == NULL)
            add_tuning(g, o, model, c);
    }
}

static bool listed_or_empty(const struct int_list *l, int32_t v)
{
    if (!l->n)
        return true;
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return true;
    return false;
}

uint64_t space_features(const struct space_axes *o)
{
    return (o->eager ? FEAT_EAGER_ATTN : 0) | (o->flash ? FEAT_FLASH_ATTN : 0) | (o->liger ? FEAT_LIGER_FLCE : 0) |
           (o->paged ? FEAT_PAGED_OPT : 0) | (o->pp_interleaved ? FEAT_PP_INTERLEAVED : 0) |
           (o->rope_tables ? FEAT_ROPE_TABLES : 0) | (o->rope_tables == 2 ? FEAT_ROPE_TABLES_FP32 : 0) |
           (o->end_units ? FEAT_FSDP_END_UNITS : 0);
}

/* The configuration of a layout before the tuning axes are set. */
static struct train_config layout_config(const struct space_axes *o, enum method m, int32_t n)
{
    struct train_config c = {.method = m, .gpus = n, .ep = 1, .stack = o->stack,
                             .data = o->data, .alloc = o->alloc};
    c.features = stack_features(o->stack) | space_features(o);
    c.micro_batch = c.seq_len = 1;
    c.finetune = FT_FULL; /* the layout check ignores the tuning fields */
    c.offload = m == METHOD_OFFLOAD ? o->offload : OFFLOAD_NONE;
    return c;
}

/* Pipeline layouts on n GPUs: every pp in --pp (or every divisor >= 2, at most the layer
 * count) x every tp in --tp (or every divisor of n / pp up to the GPUs of a node: "tensor
 * model parallelism should generally be used up to degree g when using g-GPU servers, and
 * then pipeline model parallelism can be used to scale up ... across servers", Narayanan
 * et al. 2021, takeaway #1), dp the rest (Megatron's tp x dp x pp grid);
 * --pp-microbatches per step, 4 x pp by default. */
static void add_pipelines(struct grow *g, const struct space_axes *o, uint32_t model,
                          const struct model_plan *p, int32_t n)
{
    struct train_config c = layout_config(o, METHOD_PP, n);
    const int32_t node = o->gpus_per_node > 0 ? o->gpus_per_node : GPU_PER_NODE_DEFAULT;
    for (int32_t pp = 2; pp <= n && pp <= p->spec.layers; pp++) {
        if (n % pp || !listed_or_empty(&o->pp, pp))
            continue;
        for (int32_t tp = 1; tp <= n / pp; tp++) {
            if ((n / pp) % tp || !listed_or_empty(&o->tp, tp) || (!o->tp.n && tp > node))
                continue;
            c.pp = pp;
            c.tp = tp;
            c.dp = n / pp / tp;
            c.microbatches = o->pp_microbatches > 0 ? o->pp_microbatches : 4 * pp;
            add_ep(g, o, model, p, c);
        }
    }
}

/* The parallel layouts of a method on n GPUs: single 1x1; CDP/ADP/ZeRO n x 1; TP 1 x n;
 * DP+TP every tp in --tp (or every divisor) with dp, tp > 1; pipelines (add_pipelines). */
static void add_layouts(struct grow *g, const struct space_axes *o, uint32_t model,
                        const struct model_plan *p, enum method m, int32_t n)
{
    if (m == METHOD_PP) {
        add_pipelines(g, o, model, p, n);
        return;
    }
    struct train_config c = layout_config(o, m, n);
    for (int32_t tp = 1; tp <= n; tp++) {
        if (n % tp)
            continue;
        if (m == METHOD_DPTP && !listed_or_empty(&o->tp, tp))
            continue;
        c.tp = tp;
        c.dp = n / tp;
        add_ep(g, o, model, p, c);
    }
}

/* Why a method on n GPUs gives no layout for model p: the reason of its first candidate
 * layout (tp = n for tp, the smallest pipeline for pp, else tp 1). */
static const char *layout_reason(const struct space_axes *o, const struct model_plan *p,
                                 enum method m, int32_t n)
{
    struct train_config c = layout_config(o, m, n);
    c.tp = m == METHOD_TP ? n : 1;
    c.pp = m == METHOD_PP ? (o->pp.n ? o->pp.v[0] : 2) : 1;
    if (m == METHOD_DPTP)
        c.tp = o->tp.n ? o->tp.v[0] : 2;
    if (m == METHOD_PP && c.pp > p->spec.layers)
        return "pp exceeds the layer count";
    c.dp = n % (c.tp * c.pp) ? 0 : n / c.tp / c.pp;
    const char *why = train_config_check(&c, &p->spec);
    return why ? why : "no --tp/--pp value divides the GPU count";
}

void space_why_empty(const struct space_axes *o, const struct model_plan *p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    /* no (precision, fine-tuning) pair is valid (fp8 asked for LoRA only): say that */
    const char *tuning = NULL;
    bool any_valid = false;
    for (int pi = 0; pi < o->nprecisions && !any_valid; pi++)
        for (int fi = 0; fi < o->nfinetunes && !any_valid; fi++) {
            struct train_config c = layout_config(o, METHOD_SINGLE, 1);
            c.precision = (enum precision)o->precisions[pi];
            c.finetune = (enum finetune)o->finetunes[fi];
            tuning = train_precision_check(&c);
            any_valid = tuning == NULL;
        }
    if (!any_valid && tuning) {
        snprintf(buf, n, "%s", tuning);
        return;
    }
    for (int k = 0; k < o->nmethods; k++)
            for (int gi = 0; gi < o->gpus.n && used + 1 < n; gi++) {
                const enum method m = (enum method)o->methods[k];
                int w = snprintf(buf + used, n - used, "%s%s on %d GPU(s): %s", used ? "; " : "",
                                 method_name(m), o->gpus.v[gi],
                                 layout_reason(o, p, m, o->gpus.v[gi]));
                if (w < 0 || (size_t)w >= n - used) {
                    buf[used] = '\0';
                    return;
                }
                used += (size_t)w;
            }
}


/* Same tuning recipe: everything but the layout (method, GPUs, split, checkpointing). */
static int tuning_cmp(const struct space_outer *a, const struct space_outer *b)
{
    const struct train_config *x = &a->cfg, *y = &b->cfg;
    const int64_t k[7][2] = {
        {a->model, b->model},         {x->finetune, y->finetune},   {x->lora_r, y->lora_r},
        {x->lora_targets, y->lora_targets}, {x->quant, y->quant},   {x->precision, y->precision},
        {x->optimizer, y->optimizer},
    };
    for (int i = 0; i < 7; i++)
        if (k[i][0] != k[i][1])
            return (k[i][0] > k[i][1]) - (k[i][0] < k[i][1]);
    return 0;
}

static const struct space_outer *sort_base;

static int outer_idx_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int d = tuning_cmp(&sort_base[x], &sort_base[y]);
    return d ? d : (x > y) - (x < y);
}

/* Numbers the tuning recipes (in the order of their first outer entry) and each entry's
 * position among its recipe's layouts. Returns 0 or -1. */
static int number_recipes(struct space *s)
{
    size_t n = s->nouter;
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    uint32_t *first = malloc((n ? n : 1) * sizeof *first);
    s->recipe_outer = malloc((n ? n : 1) * sizeof *s->recipe_outer);
    s->nlayout = calloc(n ? n : 1, sizeof *s->nlayout);
    if (!ord || !first || !s->recipe_outer || !s->nlayout) {
        free(ord);
        free(first);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    sort_base = s->outer; /* setup only, single-threaded */
    qsort(ord, n, sizeof *ord, outer_idx_cmp);
    /* groups of equal tuning: each group's first (lowest) outer index names it */
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && !tuning_cmp(&s->outer[ord[hi]], &s->outer[ord[lo]]); hi++)
            ;
        for (size_t k = lo; k < hi; k++) {
            s->outer[ord[k]].layout = (uint32_t)(k - lo);
            first[ord[k]] = (uint32_t)ord[lo];
        }
    }
    /* recipe ids in the order of the first outer entry: deterministic, and the same for
     * every shard */
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (first[i] == i)
            s->recipe_outer[t] = (uint32_t)i, s->outer[i].recipe = (uint32_t)t++;
    for (size_t i = 0; i < n; i++) {
        s->outer[i].recipe = s->outer[first[i]].recipe;
        s->nlayout[s->outer[i].recipe]++;
    }
    s->ntuning = t;
    free(ord);
    free(first);
    return 0;
}

int space_gpu_index(const struct space *s, int32_t gpus)
{
    for (int i = 0; i < s->ngpus; i++)
        if (s->gpus[i] == gpus)
            return i;
    return -1;
}

void space_recipe_config(const struct space *s, size_t r, uint32_t *model, struct train_config *c)
{
    const struct space_outer *o = &s->outer[s->recipe_outer[r / (size_t)s->nseq]];
    *model = o->model;
    *c = o->cfg;
    c->seq_len = s->seq[r % (size_t)s->nseq];
    c->micro_batch = 1;
}

int space_build(const struct space_axes *o, const struct model_plan *const *models,
                size_t nmodels, struct space *s)
{
    struct grow g = {0};
    memset(s, 0, sizeof *s);
    for (size_t mi = 0; mi < nmodels; mi++)
        for (int k = 0; k < o->nmethods; k++)
            for (int gi = 0; gi < o->gpus.n; gi++)
                add_layouts(&g, o, (uint32_t)mi, models[mi], (enum method)o->methods[k], o->gpus.v[gi]);
    if (g.failed) {
        free(g.v);
        free(g.group);
        return -1;
    }
    s->outer = g.v;
    s->nouter = g.n;
    s->group = g.group;
    s->ngroups = g.ngroups;
    s->nbatch = o->batch.n;
    s->nseq = o->seq.n;
    memcpy(s->batch, o->batch.v, (size_t)o->batch.n * sizeof s->batch[0]);
    memcpy(s->seq, o->seq.v, (size_t)o->seq.n * sizeof s->seq[0]);
    s->ngpus = o->gpus.n;
    memcpy(s->gpus, o->gpus.v, (size_t)o->gpus.n * sizeof s->gpus[0]);
    if (number_recipes(s) != 0) {
        space_free(s);
        return -1;
    }
    return 0;
}

void space_free(struct space *s)
{
    if (s) {
        free(s->outer);
        free(s->group);
        free(s->recipe_outer);
        free(s->nlayout);
        memset(s, 0, sizeof *s);
    }
}

const struct space_outer *space_decode(const struct space *s, uint64_t index,
                                       struct train_config *c)
{
    uint64_t inner = (uint64_t)s->nseq * (uint64_t)s->nbatch;
    const struct space_outer *o = &s->outer[index / inner];
    uint64_t r = index % inner;
    *c = o->cfg;
    c->seq_len = s->seq[r / (uint64_t)s->nbatch];
    c->micro_batch = s->batch[r % (uint64_t)s->nbatch];
    return o;
}
