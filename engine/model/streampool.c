/* streampool.c: FSDP2's all-gather copy-in stream pool (see streampool.h). */
#include "streampool.h"

#include "allocsim.h"

/* A few live buffers and their split remainders: 32 blocks are plenty. */
#define POOL_BLOCKS 32
/* Blocks replayed in forward. From the second block on, two block outputs alternate between
 * the same two free blocks (each allocated while the other is held), so the pool's state
 * repeats every two blocks: replaying 6 or 7 of them, with the parity of the real count,
 * leaves the same segments for the last unit to find as all of them would. In backward one
 * output is live at a time and each returns the pool to where it was, so one block stands
 * for all. (tests/test_streampool.c replays the whole sequence to check both.) */
#define FWD_BLOCKS_MAX 6

/* One unit's unshard on the copy-in stream: the shards cast to the all-gather dtype (the
 * per-parameter casts counted as one allocation of their sum; none when u->as_is), then the
 * output they are copied into; the casts die when foreach_all_gather returns (`del
 * param_all_gather_inputs`). Returns the output's handle. */
static bool gather_unit(allocsim_state *st, const struct fsdp2_units *u, uint64_t out, uint32_t *h)
{
    uint32_t in = ALLOCSIM_NULL_HANDLE;
    return (u->as_is || allocsim_alloc(st, out / u->dp, &in) == ALLOCSIM_OK) &&
           allocsim_alloc(st, out, h) == ALLOCSIM_OK && allocsim_free(st, in) == ALLOCSIM_OK;
}

/* The output bytes of forward unit i (the first, the blocks, the last). */
static uint64_t unit_bytes(const struct fsdp2_units *u, uint32_t i, uint32_t n)
{
    if (u->first && i == 0)
        return u->first;
    if (u->last && i == n - 1)
        return u->last;
    return u->block;
}

/* Forward: each unit's output is allocated while the previous unit's result is still held
 * (all_gather_state), which wait_for_unshard frees just after; the root's post-forward
 * frees the last one. */
static bool forward(allocsim_state *st, const struct fsdp2_units *u)
{
    uint32_t held = ALLOCSIM_NULL_HANDLE, h;
    const uint32_t blocks = u->blocks > FWD_BLOCKS_MAX + 1 ? FWD_BLOCKS_MAX + (u->blocks & 1u) : u->blocks;
    const uint32_t n = blocks + (u->first ? 1u : 0u) + (u->last ? 1u : 0u);
    for (uint32_t i = 0; i < n; i++) {
        if (!gather_unit(st, u, unit_bytes(u, i, n), &h) || allocsim_free(st, held) != ALLOCSIM_OK)
            return false;
        held = h;
    }
    return allocsim_free(st, held) == ALLOCSIM_OK;
}

/* Backward: each prefetched unit's result is freed right after its copy-out. */
static bool backward(allocsim_state *st, const struct fsdp2_units *u)
{
    uint32_t h;
    if (u->bwd_blocks && (!gather_unit(st, u, u->block, &h) || allocsim_free(st, h) != ALLOCSIM_OK))
        return false;
    if (u->bwd_first && u->first)
        return gather_unit(st, u, u->first, &h) && allocsim_free(st, h) == ALLOCSIM_OK;
    return true;
}

uint64_t streampool_fsdp2_copy_in(const struct fsdp2_units *u)
{
    allocsim_block blocks[POOL_BLOCKS];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    if (u->dp < 2 || (!u->first && !u->blocks && !u->last) || allocsim_init(&st, &cfg, blocks, POOL_BLOCKS) != ALLOCSIM_OK)
        return 0;
    if (!forward(&st, u) || !backward(&st, u))
        return 0;
    return allocsim_get_stats(&st)->reserved;
}

/* A pool's allocator state over caller storage: the post-backward pool keeps one shard per
 * unit (126 blocks of Llama-3.1-405B and the root, with their split remainders). */
#define FSDP1_BLOCKS 600

/* n buffers of `bytes`, all live at once, added to st. */
static bool hold(allocsim_state *st, uint64_t bytes, uint32_t n)
{
    uint32_t h;
    for (uint32_t i = 0; i < n; i++)
        if (allocsim_alloc(st, bytes, &h) != ALLOCSIM_OK)
            return false;
    return true;
}

/* The unshard pool: each buffer the stream keeps a segment for is live beside the others
 * (a freed one waits on the default stream's event, then is too small or too large for
 * the next kind of request), so their segments add up. */
static bool unshard_pool(const struct fsdp1_units *u, struct fsdp1_pools *out)
{
    allocsim_block blocks[POOL_BLOCKS];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    const uint32_t roots = 1u + (u->trained && !u->frozen_root ? 1u + (u->tied ? 1u : 0u) : 0u);
    if (allocsim_init(&st, &cfg, blocks, POOL_BLOCKS) != ALLOCSIM_OK || !hold(&st, u->root, roots))
        return false;
    out->unshard_root = allocsim_get_stats(&st)->reserved;
    if (!hold(&st, u->block, u->blocks ? 2u + (u->trained ? 1u : 0u) : 0u))
        return false;
    out->unshard = allocsim_get_stats(&st)->reserved;
    return true;
}

/* One unit's reduce-scatter on the post-backward stream: the 16-bit output, and over fp32
 * parameters its fp32 cast kept in its place. */
static bool reduce_unit(allocsim_state *st, uint64_t gathered, const struct fsdp1_units *u)
{
    uint32_t out, cast;
    const uint64_t shard = gathered / u->dp;
    if (allocsim_alloc(st, shard, &out) != ALLOCSIM_OK)
        return false;
    return !u->fp32_master ||
           (allocsim_alloc(st, shard * 2, &cast) == ALLOCSIM_OK && allocsim_free(st, out) == ALLOCSIM_OK);
}

/* The post-backward pool over one backward (the blocks last to first, then the root) and
 * the pre-unshard pool over one forward (the root first, then each block). */
static bool side_pools(const struct fsdp1_units *u, struct fsdp1_pools *out)
{
    allocsim_block blocks[FSDP1_BLOCKS];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    if (u->trained) {
        if (allocsim_init(&st, &cfg, blocks, FSDP1_BLOCKS) != ALLOCSIM_OK)
            return false;
        for (uint32_t i = 0; i < u->blocks; i++)
            if (!reduce_unit(&st, u->block, u))
                return false;
        if (!u->frozen_root && !reduce_unit(&st, u->root, u))
            return false;
        out->post_backward = allocsim_get_stats(&st)->reserved;
    }
    if (u->fp32_master && u->trained) {
        uint32_t h;
        if (allocsim_init(&st, &cfg, blocks, FSDP1_BLOCKS) != ALLOCSIM_OK ||
            allocsim_alloc(&st, u->root / u->dp, &h) != ALLOCSIM_OK || allocsim_free(&st, h) != ALLOCSIM_OK ||
            (u->blocks && (allocsim_alloc(&st, u->block / u->dp, &h) != ALLOCSIM_OK ||
                           allocsim_free(&st, h) != ALLOCSIM_OK)))
            return false;
        out->pre_unshard = allocsim_get_stats(&st)->reserved;
    }
    return true;
}

int streampool_fsdp1(const struct fsdp1_units *u, struct fsdp1_pools *out)
{
    *out = (struct fsdp1_pools){0};
    if (u->dp < 2 || !u->root || !unshard_pool(u, out) || !side_pools(u, out)) {
        *out = (struct fsdp1_pools){0};
        return -1;
    }
    return 0;
}
