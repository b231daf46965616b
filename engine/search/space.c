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
    g->v[g->n++] = (struct space_outer){model, *c};
}

/* The fine-tuning axes (precision, mode, quantization, rank, targets, checkpointing,
 * optimizer) for one model and parallel layout. */
static void add_tuning(struct grow *g, const struct options *o, uint32_t model,
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
static void add_ep(struct grow *g, const struct options *o, uint32_t model,
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
static void add_layouts(struct grow *g, const struct options *o, uint32_t model,
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

int space_build(const struct options *o, const struct model_plan *const *models,
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
    return 0;
}

void space_free(struct space *s)
{
    if (s) {
        free(s->outer);
        free(s->group);
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
