/* streampool.h: what FSDP2's all-gather copy-in stream keeps reserved.
 *
 * PyTorch's caching allocator keeps a pool per stream: a cached block is handed out only to
 * a request on the stream that freed it (c10/cuda/CUDACachingAllocator.cpp get_free_block:
 * `(*it)->stream != p.stream()` returns false). FSDP2 allocates each all-gather output on
 * its copy-in stream in forward and in backward's prefetch (FSDPCommContext.
 * get_all_gather_streams returns all_gather_copy_in_stream for FORWARD and PRE_BACKWARD;
 * foreach_all_gather allocates `all_gather_output = torch.empty(numel * world_size)` and the
 * param_dtype casts of the shards under `torch.cuda.stream(all_gather_copy_in_stream)`;
 * torch/distributed/_composable/fsdp/_fsdp_collectives.py and _fsdp_param_group.py, the
 * same logic from mid-2024 through 2026 under fsdp/_fully_shard/). So the segments those
 * buffers took stay reserved for that stream, from the first step's forward on, and the
 * default stream's peak (activations, logits) cannot reuse them: they add to
 * max_memory_reserved, not to max_memory_allocated.
 *
 * The order matters because of [Note: Overlapping all-gather copy-in and all-gather]
 * (_fsdp_param_group.py): in forward, unit i's all-gather output is allocated by its
 * unshard() while unit i-1's result is still held in comm_ctx.all_gather_state; only the
 * following wait_for_unshard() frees it. Two outputs are therefore live at each step of the
 * forward, and the root's (embedding and lm_head, gathered first) sets the first segment.
 * In backward the result is freed right after its copy-out (one at a time).
 *
 * The gradients' reduce-scatter buffers are not here. The input is allocated on the default
 * stream (since PR #129721, 2024-06, whose description keeps "the reduce-scatter outputs
 * ... in the separate reduce_scatter stream"). The output, which the sharded gradients
 * view, is allocated under the reduce-scatter stream in the code before (@415cc262) and
 * after (@010ae4a8, 2026: "the GPU sharded gradient is allocated in the RS stream");
 * #132445 (2024-08) proposed the default stream, and the later code does not show it. That
 * pool is the whole-step replay's second allocator (stepfsdp.c) and, in the phases,
 * memmodel.c fsdp2_rs_pool. */
#ifndef LLMEM_STREAMPOOL_H
#define LLMEM_STREAMPOOL_H

#include <stdbool.h>
#include <stdint.h>

/* The FSDP2 units of one rank, in forward order: the first (torchtitan 9dec370's root, unsharded
 * in the root's pre-forward before the embedding runs; from 83e69410 the embedding's own
 * unit), the blocks, and a last one (from 83e69410, [norm, output]). */
struct fsdp2_units {
    uint64_t first;      /* bytes of the first unit's all-gather output; 0: none */
    uint64_t block;      /* bytes of one block's all-gather output */
    uint64_t last;       /* bytes of the last unit's all-gather output; 0: none */
    uint32_t blocks;     /* block units */
    uint32_t dp;         /* the shard group's size: each cast shard is output / dp */
    uint32_t bwd_blocks; /* blocks gathered again in backward (resharded after forward) */
    bool bwd_first;      /* the first unit gathered again at the end of backward */
};

/* Replays the copy-in stream's allocations of one step through the allocator model (its
 * own pool) and returns the bytes its segments reserve; 0 when dp < 2 or nothing is
 * gathered, or when the replay cannot run. */
uint64_t streampool_fsdp2_copy_in(const struct fsdp2_units *u);

#endif
