/* stepfsdp.c: FSDP2's hooks in the whole-step replay (steptrace.h), as fully_shard runs them
 * on one rank with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over fp32
 * weights, or with no policy over bf16 ones (shape.shard16: every buffer below in bf16, the
 * reduce dtype the gradients'), each decoder layer a unit and the model the root (the
 * embedding, final norm and lm_head). Sources: torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py,
 * _fsdp_collectives.py and _fsdp_param.py at pytorch @010ae4a8 and @002a76fb (2026; our
 * own rows ran torch 2.11, not read at its tag: the replay meets their reserved peaks within
 * 1.5 %, README "FSDP2's steps"):
 *
 * - unshard: the all-gather lands in a buffer on the copy-in stream (streampool.h), then
 *   foreach_all_gather_copy_out allocates each parameter's unsharded bf16 storage on the
 *   default stream (FSDPParam.alloc_all_gather_outputs, one storage a parameter, padded to
 *   the shards) and copies into it; reshard frees them (free_storage). Layers reshard
 *   after forward and gather again at their pre-backward; the root stays gathered from its
 *   pre-forward to its post-backward.
 * - post_backward: the unit reshards, the previous unit's reduce-scatter input is released
 *   (comm_ctx.reduce_scatter_state = None), foreach_reduce allocates this unit's input on
 *   the default stream (fp32, the padded unsharded size), copies the bf16 gradients in and
 *   frees them (`unsharded_grads.clear()`), then allocates the output under
 *   `device_handle.stream(reduce_scatter_stream)` ("the GPU sharded gradient is allocated
 *   in the RS stream"); the sharded gradients are views of it until zero_grad. The input
 *   stays in reduce_scatter_state until the next unit's post_backward, the root's until
 *   _root_post_backward_final_callback ends the backward.
 *
 * The caching allocator hands a cached block only to its own stream
 * (CUDACachingAllocator.cpp get_free_block), so the reduce-scatter stream's segments form
 * a pool of their own: its allocator state here is separate (tracer.rs).
 *
 * FSDP1 (stepreplay_shape.fsdp1: FullyShardedDataParallel, FULL_SHARD, as HF Trainer runs it
 * through accelerate; streampool.h has the sources and the traces that name each segment):
 *
 * - unshard: the unit's padded flat parameter in one buffer on the unshard stream (tracer.ag);
 *   the root stays gathered through the step, a block from its pre-forward to its
 *   post-forward and again from its pre-backward, which also prefetches the next block
 *   (BACKWARD_PRE; the root's prefetches the last block).
 * - post_backward: the views' gradients (the replay's per-parameter pieces on the default
 *   stream) meet in SplitWithSizesBackward's cat, which autograd runs on the views' stream,
 *   the unshard stream (a tied weight's two gradients are summed there first); the pieces go,
 *   the unit reshards, the reduce-scatter output is allocated on the post-backward stream
 *   (tracer.rs) and, over fp32 parameters, replaced by its fp32 cast; the cat goes. The
 *   sharded gradients stay until the next forward (zero_grad here). */
#include <stdlib.h>

#include "steptrace.h"

static uint64_t padded_numel(const struct stepreplay_shape *sh, size_t pi)
{
    return held_numel(sh, pi) * sh->shards;
}

/* Frees id from pool st when it is live (a unit's buffers exist in some steps only). */
static void pf(struct tracer *t, allocsim_state *st, uint32_t id)
{
    if (t->live[id])
        tpf(t, st, id);
}

/* FSDP1's flat parameter of unit u: its parameters' elements, padded to the shards. */
static uint64_t flat_numel(const struct tracer *t, const struct stepreplay_shape *sh, uint32_t u, bool padded)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u)
            n += numel(sh, i);
    return padded ? (n + sh->shards - 1) / sh->shards * sh->shards : n;
}

void fsdp_unshard(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u)
{
    if (sh->fsdp1) {
        if (!t->live[id_unit(t, U_AG, u)])
            tpa(t, &t->ag, id_unit(t, U_AG, u), flat_numel(t, sh, u, true) * sh->ew);
        return;
    }
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u)
            ta(t, id_param(t, K_CAST, i), padded_numel(sh, i) * sh->ew);
}

void fsdp_pre_backward(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u)
{
    if (!sh->fsdp1) {
        if (u < (uint32_t)t->layers)
            fsdp_unshard(t, sh, u);
        return;
    }
    fsdp_unshard(t, sh, u);
    if (u > 0) /* the next in backward order: the block below (the root's: the last block) */
        fsdp_unshard(t, sh, u - 1);
}

void fsdp_reshard(struct tracer *t, uint32_t u)
{
    if (t->ag_blocks) {
        pf(t, &t->ag, id_unit(t, U_AG, u));
        return;
    }
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u && t->live[id_param(t, K_CAST, i)])
            tf(t, id_param(t, K_CAST, i));
}

/* FSDP1's post-backward of unit u (see above); tied: the embedding is the lm_head. */
static void fsdp1_post_backward(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u)
{
    uint64_t tied = 0;
    bool any = false;
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u && t->has_grad[i] == GRAD_LOCAL) {
            any = true;
            if (u == (uint32_t)t->layers && sh->params->t[i].role == ROLE_EMBED && t->tied)
                tied = numel(sh, i) * sh->ew;
        }
    if (!any) {
        fsdp_reshard(t, u);
        return;
    }
    if (tied)
        tpa(t, &t->ag, id_unit(t, U_SUM, u), tied);
    tpa(t, &t->ag, id_unit(t, U_CAT, u), flat_numel(t, sh, u, false) * sh->ew);
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u && t->has_grad[i] == GRAD_LOCAL)
            tf(t, id_param(t, K_GRAD, i)), t->has_grad[i] = GRAD_REDUCED;
    pf(t, &t->ag, id_unit(t, U_SUM, u));
    fsdp_reshard(t, u);
    const uint64_t shard = flat_numel(t, sh, u, true) / sh->shards;
    const uint32_t o = id_unit(t, U_RS_OUT, u), in = id_unit(t, U_RS_IN, u);
    tpa(t, &t->rs, o, shard * sh->ew);
    if (!sh->shard16) { /* _cast_grad_to_param_dtype: the fp32 copy takes its place */
        tmove(t, in, o);
        tpa(t, &t->rs, o, shard * 4);
        pf(t, &t->rs, in);
    }
    pf(t, &t->ag, id_unit(t, U_CAT, u));
}

/* Frees whichever unit's reduce-scatter input is still held. */
static void release_rs_input(struct tracer *t)
{
    for (uint32_t v = 0; v <= (uint32_t)t->layers; v++)
        pf(t, &t->st, id_unit(t, U_RS_IN, v));
}

void fsdp_post_backward(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u)
{
    if (sh->fsdp1) {
        fsdp1_post_backward(t, sh, u);
        return;
    }
    uint64_t in = 0, out = 0;
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u && t->has_grad[i] == GRAD_LOCAL)
            in += padded_numel(sh, i), out += held_numel(sh, i);
    fsdp_reshard(t, u);
    release_rs_input(t);
    if (!in)
        return;
    const uint64_t rb = sh->shard16 ? sh->ew : 4; /* the reduce dtype */
    ta(t, id_unit(t, U_RS_IN, u), in * rb);
    for (size_t i = 0; i < t->np; i++)
        if (t->unit[i] == u && t->has_grad[i] == GRAD_LOCAL)
            tf(t, id_param(t, K_GRAD, i)), t->has_grad[i] = GRAD_REDUCED;
    tpa(t, &t->rs, id_unit(t, U_RS_OUT, u), out * rb);
}

void fsdp_zero_grad(struct tracer *t)
{
    for (uint32_t u = 0; u <= (uint32_t)t->layers; u++)
        pf(t, &t->rs, id_unit(t, U_RS_OUT, u));
}

void fsdp_backward_end(struct tracer *t, const struct stepreplay_shape *sh)
{
    fsdp_post_backward(t, sh, (uint32_t)t->layers);
    if (!sh->fsdp1)
        release_rs_input(t);
}

int fsdp_open(struct tracer *t, const struct stepreplay_shape *sh, const allocsim_config *cfg)
{
    const size_t n_blocks = 4 * ((size_t)t->layers + 1) + 64;
    t->unit = malloc((t->np ? t->np : 1) * sizeof *t->unit);
    t->rs_blocks = calloc(n_blocks, sizeof *t->rs_blocks);
    if (!t->unit || !t->rs_blocks || allocsim_init(&t->rs, cfg, t->rs_blocks, n_blocks) != ALLOCSIM_OK)
        return -1;
    if (sh->fsdp1) {
        t->ag_blocks = calloc(n_blocks, sizeof *t->ag_blocks);
        if (!t->ag_blocks || allocsim_init(&t->ag, cfg, t->ag_blocks, n_blocks) != ALLOCSIM_OK)
            return -1;
    }
    t->tied = true;
    for (size_t i = 0; i < t->np; i++) {
        t->tied = t->tied && sh->params->t[i].role != ROLE_LM_HEAD;
        const int32_t l = sh->params->t[i].layer;
        t->unit[i] = l >= 0 && l < sh->layers ? (uint32_t)l : (uint32_t)sh->layers;
    }
    return 0;
}
