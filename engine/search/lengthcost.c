/* lengthcost.c: the loss path's cost on the user's data, replayed once per key (lengthcost.h).
 *
 * The replay runs outside the lock, so threads that need different keys replay them at the
 * same time; a thread that needs a key another is replaying waits for it. Entries are only
 * appended, so an index stays valid when the array grows. */
#include "lengthcost.h"

#include <stdbool.h>
#include <stdlib.h>

#include "grow.h"

struct length_cost_entry {
    enum loss_path lp;
    enum lp_class k;
    enum alloc_conf a;
    uint32_t seq;
    unsigned bucket;
    bool done;          /* replayed (else a thread is replaying it) */
    int rc;             /* losspath_lengths_cost's */
    double res, need;
};

int length_costs_init(struct length_costs *lc, const uint32_t *tokens, size_t n, uint32_t longest)
{
    *lc = (struct length_costs){.tokens = tokens, .n = n, .longest = longest};
    if (mtx_init(&lc->lock, mtx_plain) != thrd_success)
        return -1;
    if (cnd_init(&lc->replayed) != thrd_success) {
        mtx_destroy(&lc->lock);
        return -1;
    }
    return 0;
}

void length_costs_free(struct length_costs *lc)
{
    if (!lc->tokens)
        return;
    cnd_destroy(&lc->replayed);
    mtx_destroy(&lc->lock);
    free(lc->e);
    *lc = (struct length_costs){0};
}

/* The index of the key's entry, replayed when new (unlocked while it runs) and waited for
 * while another thread replays it; -1 when memory runs out. Called and returns locked. */
static long entry(struct length_costs *lc, enum loss_path lp, enum lp_class k, enum alloc_conf a,
                  uint32_t seq, unsigned bucket)
{
    for (size_t i = 0; i < lc->ne; i++) {
        const struct length_cost_entry *x = &lc->e[i];
        if (x->lp == lp && x->k == k && x->a == a && x->seq == seq && x->bucket == bucket) {
            while (!lc->e[i].done)
                cnd_wait(&lc->replayed, &lc->lock);
            return (long)i;
        }
    }
    struct length_cost_entry *e = grow_array(lc->e, &lc->cap, lc->ne, sizeof *e, 16);
    if (!e)
        return -1;
    lc->e = e;
    const size_t i = lc->ne++;
    lc->e[i] = (struct length_cost_entry){.lp = lp, .k = k, .a = a, .seq = seq, .bucket = bucket};
    double res = 0.0, need = 0.0;
    mtx_unlock(&lc->lock);
    const int rc = losspath_lengths_cost(lp, k, a, lc->tokens, lc->n, seq, UINT32_C(1) << bucket,
                                         &res, &need);
    mtx_lock(&lc->lock);
    lc->e[i].rc = rc, lc->e[i].res = res, lc->e[i].need = need, lc->e[i].done = true;
    cnd_broadcast(&lc->replayed);
    return (long)i;
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
        const long i = entry(lc, lp, k, a, seq, b);
        rc = i >= 0 && lc->e[i].rc == 0 ? 0 : -1;
        r[b] = i >= 0 ? lc->e[i].res : 0.0;
        n[b] = i >= 0 ? lc->e[i].need : 0.0;
    }
    mtx_unlock(&lc->lock);
    for (unsigned b = 0; b < LP_BATCH_BUCKETS && rc == 0; b++)
        if (buckets & (1u << b))
            res[b] = r[b], need[b] = n[b];
    return rc;
}
