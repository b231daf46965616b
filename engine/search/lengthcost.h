/* lengthcost.h: the loss path's cached segments on the user's own data (--lengths FILE).
 *
 * Without it, a variable-length run draws its sample lengths uniformly up to the cap (the
 * table losspath.c compiles in). With it, each run draws the dataset's lengths, cut to the
 * point's --seq, so the cost depends on the sequence length as well as on the path, the
 * precision class, the allocator and the micro-batch bucket. A replay takes about 0.1 s,
 * so each (path, class, allocator, seq, bucket) is replayed once, when a point first needs
 * it, and kept for the sweep's other points: never per point. The values are pure
 * functions of that key, so the sweep's output does not depend on which thread asked
 * first. Thread-safe; threads replay different keys at the same time. */
#ifndef LLMEM_LENGTHCOST_H
#define LLMEM_LENGTHCOST_H

#include <stddef.h>
#include <stdint.h>
#include <threads.h>

#include "losspath.h"

struct length_cost_entry;

struct length_costs {
    const uint32_t *tokens; /* the dataset's sample lengths (lengths.h), not owned */
    size_t n;
    uint32_t longest;
    mtx_t lock;
    cnd_t replayed;         /* an entry was replayed */
    struct length_cost_entry *e;
    size_t ne, cap;
};

/* @return 0, or -1 when the lock or its condition cannot be made. */
int length_costs_init(struct length_costs *lc, const uint32_t *tokens, size_t n, uint32_t longest);
void length_costs_free(struct length_costs *lc);

/* The reserved and needed bytes per token and vocabulary entry of a seq-long step for path
 * lp in class k under allocator a, in the micro-batch buckets of `buckets` (bit b: bucket
 * b, replayed at its smallest micro-batch, as the compiled-in table is); other buckets of
 * res[] and need[] are left as they are.
 * @return 0, or -1 when the path has nothing to replay (Liger's) or memory runs out: the
 *         caller keeps the uniform table's values. */
int length_costs_get(struct length_costs *lc, enum loss_path lp, enum lp_class k, enum alloc_conf a,
                     uint32_t seq, unsigned buckets, double res[LP_BATCH_BUCKETS],
                     double need[LP_BATCH_BUCKETS]);

#endif
