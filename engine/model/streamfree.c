/* streamfree.c: other streams' cached pools, reserved beside each phase (streamfree.h). */
#include "streamfree.h"

#include <math.h>

#include "streampool.h"

/* FSDP2's reduce-scatter output, which the sharded gradients view until zero_grad, is
 * allocated under the reduce-scatter stream (torch distributed/fsdp/_fully_shard/
 * _fsdp_collectives.py foreach_reduce at pytorch @010ae4a8, the code of the hf stack's torch
 * 2.11: "the GPU sharded gradient is allocated in the RS stream"), and the caching
 * allocator hands a cached block only to a request of the stream that freed it
 * (CUDACachingAllocator.cpp get_free_block). From the first backward on, that pool keeps the
 * gradients' segments: the phases that count no sharded gradient (forward, loss, the last
 * block's backward, before any unit is reduced) have them reserved beside their own, and
 * wholly free, so not held. The hf stacks' FSDP2 with a MixedPrecisionPolicy (FEAT_FSDP_MP:
 * our harness's adp rows; fp32 gradients), or with none over bf16 parameters
 * (train_fsdp2_plain16: bf16 gradients, the output in the reduce dtype, the gradients'),
 * without accumulation. The code before (pytorch @415cc262, 2024:
 * "The RS output is allocated in the RS stream") and after (@010ae4a8) allocates it there
 * (#132445, 2024-08, proposed the default stream; the later code does not show it).
 * torchtitan is left out: with the same term its TT rows move toward their measurements
 * (median 4.9 -> 4.3 %) but AOF8-08/09/12 (torchtitan 6fc499f, [norm, output] units) go
 * from +4 to +15 %, so another of their terms is high by about the pool's size; until it is
 * found, adding the pool there would trade one error for another (README "FSDP2's steps"). */
static void fsdp2_rs_pool(const struct train_config *c, const struct resident *r, struct mem_prepared *mp)
{
    if (!((c->features & FEAT_FSDP_MP) || train_fsdp2_plain16(c)) || !(c->features & FEAT_FSDP) ||
        !stack_hf_trainer(c->stack) || c->dp < 2 || c->method != METHOD_ADP)
        return;
    const enum mem_phase free_in[] = {PHASE_FORWARD, PHASE_LOSS, PHASE_BWD_LAST, PHASE_EVAL};
    for (size_t i = 0; i < sizeof free_in / sizeof *free_in; i++)
        mp->stream_free[free_in[i]] = memmodel_round(r->g);
}

/* FSDP1's side-stream pools (streampool.h streampool_fsdp1), reserved beside what each
 * phase holds: the unshard pool less the units the phase counts as gathered (its
 * parameters, a prefetched block and a block's flat gradient live there; at the end of
 * backward the root's gathered parameter, gradient and tied sum), the post-backward pool in
 * the phases that count no sharded gradient, the pre-unshard pool always; in the measured
 * regimes only (train_fsdp1), one rank's experts whole (ep 1). */
static void fsdp1_pools(const struct model_plan *p, const struct train_config *c, const struct resident *r,
                        struct mem_prepared *mp)
{
    if (!train_fsdp1(c) || train_ep(c) != 1)
        return;
    /* the root unit holds whatever no block holds: the embedding, the final norm and an
     * untied lm_head (one rank's experts: ep 1 only) */
    const double dp = (double)c->dp, layer = (double)p->layer_p;
    const double root = (double)p->params - (double)p->spec.layers * layer;
    const struct fsdp1_units u = {
        .root = (uint64_t)(ceil(root / dp) * dp * 2.0),
        .block = (uint64_t)(ceil(resident_gathered_block_bytes(p, c, layer, 2.0) / 2.0 / dp) * dp * 2.0),
        .blocks = (uint32_t)p->spec.layers, .dp = (uint32_t)c->dp,
        .trained = c->finetune == FT_FULL || train_mixed_units(c), .frozen_root = c->finetune != FT_FULL,
        .tied = !p->head_p, .fp32_master = train_fsdp_half_gather(c),
    };
    struct fsdp1_pools pool;
    if (streampool_fsdp1(&u, &pool) != 0)
        return;
    mp->side_pool = pool.pre_unshard; /* beside a replayed step (stepfsdp.c) */
    const uint64_t held[PHASE_COUNT] = {
        [PHASE_FORWARD] = r->gather_fwd, [PHASE_LOSS] = r->gather_fwd, [PHASE_BWD_LAST] = r->gather_bwd_last,
        [PHASE_BWD_FIRST] = r->gather_bwd, [PHASE_EVAL] = r->gather_fwd, [PHASE_BWD_END] = pool.unshard_root,
    };
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        const bool no_grads = ph == PHASE_FORWARD || ph == PHASE_LOSS || ph == PHASE_BWD_LAST || ph == PHASE_EVAL;
        mp->stream_free[ph] += (pool.unshard > held[ph] ? pool.unshard - held[ph] : 0) + pool.pre_unshard +
                               (no_grads ? pool.post_backward : 0);
    }
}

void streamfree_phases(const struct model_plan *p, const struct train_config *c, const struct resident *r,
                       bool acc_grad, struct mem_prepared *mp)
{
    if (!acc_grad)
        fsdp2_rs_pool(c, r, mp);
    fsdp1_pools(p, c, r, mp);
}
