/* streamfree.h: what the pools of FSDP's side streams keep reserved beside each phase.
 *
 * The caching allocator hands a cached block only to a request of the stream that freed it
 * (c10/cuda/CUDACachingAllocator.cpp get_free_block), so the segments FSDP's all-gather,
 * reduce-scatter and cast streams cut stay reserved while the default stream's phases run.
 * What a phase holds of them is counted among its own terms; the rest is reserved, not held
 * (mem_prepared.stream_free): the allocator frees wholly free segments before it fails, so
 * no fit changes. FSDP2's all-gather copy-in pool is in the phases' fixed reserve instead
 * (memmodel.c fsdp2_side_pool). */
#ifndef LLMEM_STREAMFREE_H
#define LLMEM_STREAMFREE_H

#include <stdbool.h>

#include "memmodel.h"
#include "resident.h"

/* Adds to mp->stream_free the free part of FSDP2's reduce-scatter pool (hf stacks, without
 * accumulation: acc_grad false) and of FSDP1's unshard, post-backward and pre-unshard pools
 * (streampool.h streampool_fsdp1), phase by phase; r: the configuration's resident terms. */
void streamfree_phases(const struct model_plan *p, const struct train_config *c, const struct resident *r,
                       bool acc_grad, struct mem_prepared *mp);

#endif
