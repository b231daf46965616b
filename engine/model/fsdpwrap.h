/* fsdpwrap.h: what FSDP1's wrap leaves reserved when it moves CPU-resident weights to the
 * GPU unit by unit (feature cpu-init: HF Trainer's order, where the model is loaded on the
 * CPU and accelerate hands it to FullyShardedDataParallel with device_id; Answer.AI's
 * fsdp_qlora rank 0 under low_memory).
 *
 * FSDP1 wraps bottom-up (the auto-wrap policy's units in module order, the root last) and
 * builds each unit in torch/distributed/fsdp/_init_utils.py _init_param_handle_from_module
 * (read at pytorch 00743e70; the same steps from torch 2.1 to 2.11):
 *   1. _move_module_to_device: each CPU parameter `tensor.data = tensor.to(device)`, one
 *      allocation per parameter, in module order;
 *   2. with sync_module_states, _sync_module_params_and_buffers -> dist._broadcast_coalesced
 *      (PARAM_BROADCAST_BUCKET_SIZE, 250 MiB): torch/csrc/distributed/c10d/comm.cpp
 *      broadcast_coalesced flattens each bucket (a bucket closes once it reaches the size;
 *      flatten_dense_tensors copies with at::cat, a lone tensor is only viewed), at most two
 *      buckets in flight, each freed after its copy back;
 *   3. FlatParamHandle.__init__ (_flat_param.py): flatten_tensors_into_flat_param, the
 *      unit's unsharded flat parameter (torch.cat);
 *   4. FlatParamHandle.shard: the rank's chunk cloned (_get_shard), then the unsharded
 *      storage `orig_storage._resize_(0)`; the moved parameters die last (the caller's
 *      managed_params list, or under use_orig_params _use_sharded_views).
 * The freed blocks stay cached (nothing calls empty_cache) on the default stream, and the
 * next unit's requests reuse them by the allocator's best fit: the cache left is about one
 * block's and the root's parameters twice, plus each shard's rounding. Measured
 * (datasets/measured/h200-20261127-residue.csv, notes cache_kept_gib): README "FSDP1's wrap
 * cache, derived". bitsandbytes' QuantState tensors, quantized before the wrap and kept whole
 * on every rank, are in the floor by their bytes (fsdpwrap_phases), not replayed. Not
 * modelled: buffers (rotary tables), the small-pool debris of the quantization, accelerate's
 * upcast of 16-bit trainable shards to fp32 after the wrap. */
#ifndef LLMEM_FSDPWRAP_H
#define LLMEM_FSDPWRAP_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

struct fsdpwrap_result {
    uint64_t reserved;  /* the allocator's reserved bytes when the wrap returns */
    uint64_t allocated; /* ... of them in use: the rank's shards */
};

/* Replays the wrap of configuration c (FSDP1, FULL_SHARD over c->dp ranks, a unit per block
 * and the root, LoRA's adapters units of their own unless train_mixed_units) through the
 * allocator model, starting from an empty cache; sync_states adds step 2.
 * @return 0 with *out, or -1 when c is not FSDP1 (flat parameters, method adp, no TP) over
 *         two ranks or more, a unit has more than 96 parameters (MoE blocks), or the model
 *         runs out of memory for its blocks. */
int fsdpwrap_replay(const struct model_plan *p, const struct train_config *c, bool sync_states,
                    struct fsdpwrap_result *out);

struct resident;
struct mem_prepared;

/* The wrap in configuration c's phases (feature cpu-init, sync-states for step 2): fills
 * mp->wrap_reserved, wrap_allocated, wrap_floor and wrap_top from the replay and the
 * phases' fixed terms and side pools (r: c's resident terms; after streamfree_phases), or
 * leaves them 0 without the feature or the replay. */
void fsdpwrap_phases(const struct model_plan *p, const struct train_config *c, const struct resident *r,
                     struct mem_prepared *mp);

#endif
