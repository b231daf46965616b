/* space.c: enumeration of the configuration space (see space.h). */
#include "space.h"

#include <stdlib.h>
#include <string.h>

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
    if (starts_group && g->ngroups == g->gcap) {
        size_t cap = g->gcap ? 2 * g->gcap : 1024;
        size_t *v = realloc(g->group, cap * sizeof *v);
        if (!v) {
            g->failed = 1;
            return;
        }
        g->group = v;
        g->gcap = cap;
    }
    if (starts_group)
        g->group[g->ngroups++] = g->n;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 1024;
        struct space_outer *v = realloc(g->v, cap * sizeof *v);
        if (!v) {
            g->failed = 1;
            return;
        }
        g->v = v;
        g->cap = cap;
    }
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

/* The parallel layouts of a method on n GPUs: single 1x1; CDP/ADP n x 1; TP 1 x n; DP+TP
 * every tp in --tp (or every divisor) with dp, tp > 1. */
static void add_layouts(struct grow *g, const struct space_axes *o, uint32_t model,
                        const struct model_plan *p, enum method m, int32_t n)
{
    struct train_config c = {.method = m, .gpus = n, .ep = 1, .stack = o->stack,
                             .data = o->data, .alloc = o->alloc};
    c.features = stack_features(o->stack) | (o->eager ? FEAT_EAGER_ATTN : 0);
    for (int32_t tp = 1; tp <= n; tp++) {
        if (n % tp)
            continue;
        if (m == METHOD_DPTP && o->tp.n) {
            bool listed = false;
            for (int i = 0; i < o->tp.n; i++)
                listed |= o->tp.v[i] == tp;
            if (!listed)
                continue;
        }
        c.tp = tp;
        c.dp = n / tp;
        c.micro_batch = c.seq_len = 1;
        c.finetune = FT_FULL; /* the layout check ignores the tuning fields */
        c.lora_r = 0;
        c.lora_targets = 0;
        c.quant = QUANT_NONE;
        add_ep(g, o, model, p, c);
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
