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
    bool as_is;          /* the shards are gathered in their own dtype, uncast: no policy, or
                            one whose param_dtype is theirs (_fsdp_param.py init_dtype_attrs
                            clamps it to None; _get_param_all_gather_inputs copies only
                            shards with a param_dtype) */
};

/* Replays the copy-in stream's allocations of one step through the allocator model (its
 * own pool) and returns the bytes its segments reserve; 0 when dp < 2 or nothing is
 * gathered, or when the replay cannot run. */
uint64_t streampool_fsdp2_copy_in(const struct fsdp2_units *u);

/* FSDP1 (FullyShardedDataParallel, FULL_SHARD, a unit per block and the root) on one rank,
 * with its three side streams (torch/distributed/fsdp/_runtime_utils.py _init_streams,
 * _unshard, _post_backward_hook, _reduce_grad; _flat_param.py; read at ROCm/pytorch
 * @3539e1d2 and pytorch @01caf79e, the same logic from torch 2.2 to 2.11). Each pool's
 * segments are named by the allocator trace of our own rows
 * (datasets/measured/h200-20261127-fsdp1-segments/, frames of the requests that cut them):
 *
 * - unshard stream: each unit's padded unsharded flat parameter (`_unshard` allocates it
 *   under `stream(unshard_stream)`; `_alloc_padded_unsharded_flat_param`), freed under
 *   record_stream on the default stream. The parameter views are made in the same context
 *   (`_use_unsharded_views`), and autograd runs a node's backward on its forward's stream:
 *   a trained unit's flat gradient (SplitWithSizesBackward's cat) is cut here too, and for
 *   a tied embedding the sum of its two gradients. The root stays gathered through the step
 *   (`_post_forward_reshard` skips the root under FULL_SHARD); in backward a block is
 *   gathered beside the one BACKWARD_PRE prefetched. Segments: the root once, once more
 *   for its gradient and again for a tied sum; blocks twice, once more for their gradient.
 *   A CPU far ahead of the GPU can keep one more block's buffer waiting on its
 *   record_stream event (measured: Llama-2-7B, 4 ranks, one 388 MiB segment more than
 *   under CUDA_LAUNCH_BLOCKING); that one is left out.
 * - post-backward stream: each unit's reduce-scatter output (`_get_reduce_scatter_tensors`),
 *   and under MixedPrecision over fp32 parameters its fp32 cast (`_cast_grad_to_param_dtype`,
 *   kept as the sharded gradient; the 16-bit output freed at once). The sharded gradients
 *   stay until the next forward's root pre-forward (`_reset_flat_param_grad_info_if_needed`
 *   after zero_grad(set_to_none=True)).
 * - pre-unshard stream, MixedPrecision over fp32 parameters only: the low-precision copy of
 *   the unit's shard (`_use_low_precision_shard`), freed after its all-gather. */
struct fsdp1_units {
    uint64_t root;    /* the root unit's gathered bytes (embedding, untied lm_head), padded to dp */
    uint64_t block;   /* one block unit's gathered bytes, padded to dp */
    uint32_t blocks;  /* block units */
    uint32_t dp;      /* the shard group's size */
    bool trained;     /* every block unit has a flat gradient: full fine-tuning, or LoRA in
                         units that mix the adapters with the frozen base (train_mixed_units) */
    bool frozen_root; /* with trained: the root has none (mixed units: no adapter in it) */
    bool tied;        /* the root's embedding is the lm_head too */
    bool fp32_master; /* MixedPrecision(param_dtype 16-bit) over fp32 parameters */
};

/* The bytes each side stream's pool reserves; root: the unshard pool's root segments. */
struct fsdp1_pools {
    uint64_t unshard, unshard_root, post_backward, pre_unshard;
};

/* Fills *out from the units through the allocator model, one pool at a time.
 * @return 0, or -1 when dp < 2, nothing is gathered or the model runs out of blocks. */
int streampool_fsdp1(const struct fsdp1_units *u, struct fsdp1_pools *out);

#endif
