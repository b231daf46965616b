/* lengthcost.c: the loss path's cost on the user's data, replayed once per key (lengthcost.h). */
#include "lengthcost.h"

#include <stdlib.h>

struct length_cost_entry {
    enum loss_path lp;
    enum lp_class k;
    enum alloc_conf a;
    uint32_t seq;
    unsigned bucket;
    int rc;             /* losspath_lengths_cost's */
    double res, need;
};

int length_costs_init(struct length_costs *lc, const uint32_t *tokens, size_t n, uint32_t longest)
{
    *lc = (struct length_costs){.tokens = tokens, .n = n, .longest = longest};
    return mtx_init(&lc->lock, mtx_plain) == thrd_success ? 0 : -1;
}

void length_costs_free(struct length_costs *lc)
{
    if (!lc->tokens)
        return;
    mtx_destroy(&lc->lock);
    free(lc->e);
    *lc = (struct length_costs){0};
}

/* The entry of the key, replayed now when new; NULL when memory runs out. Called locked. */
static const struct length_cost_entry *entry(struct length_costs *lc, enum loss_path lp,
                                             enum lp_class k, enum alloc_conf a, uint32_t seq,
                                             unsigned bucket)
{
    for (size_t i = 0; i < lc->ne; i++) {
        const struct length_cost_entry *x = &lc->e[i];
        if (x->lp == lp && x->k == k && x->a == a && x->seq == seq && x->bucket == bucket)
            return x;
    }
    if (lc->ne == lc->cap) {
        const size_t cap = lc->cap ? 2 * lc->cap : 16;
        struct length_cost_entry *e = realloc(lc->e, cap * sizeof *e);
        if (!e)
            return NULL;
        lc->e = e, lc->cap = cap;
    }
    struct length_cost_entry *x = &lc->e[lc->ne++];
    *x = (struct length_cost_entry){.lp = lp, .k = k, .a = a, .seq = seq, .bucket = bucket};
    x->rc = losspath_lengths_cost(lp, k, a, lc->tokens, lc->n, seq, UINT32_C(1) << bucket,
                                  &x->res, &x->need);
    return x;
}

int length_costs_get(struct length_costs *lc, enum loss_path lp, enum lp_class k, enum alloc_conf a,
                     uint32_t seq, unsigned buckets, double res[LP_BATCH_BUCKETS],
                     double need[LP_BATCH_BUCKETS])
{
    double r[LP_BATCH_BUCKETS], n[LP_BATCH_BUCKETS];
    int rc = 0;
    mtx_lock(&lc->lock);
    for (unsigned b = 0; b < LP_BATCH_BUCKETS && rc == 0; b++) {
        if (!(buckets & (1u << b)))
            continue;
        const struct length_cost_entry *x = entry(lc, lp, k, a, seq, b);
        rc = x && x->rc == 0 ? 0 : -1;
        r[b] = x ? x->res : 0.0;
        n[b] = x ? x->need : 0.0;
    }
    mtx_unlock(&lc->lock);
    for (unsigned b = 0; b < LP_BATCH_BUCKETS && rc == 0; b++)
        if (buckets & (1u << b))
            res[b] = r[b], need[b] = n[b];
    return rc;
}
