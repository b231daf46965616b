/* stepreplay.h: whole training steps of a dense decoder replayed through the caching
 * allocator model (allocsim.h), for loops that empty the cache every N steps.
 *
 * Why: with the cache emptied every N steps, what `torch.cuda.memory_reserved()` shows
 * after a step is every segment the steps since the last empty_cache() cut and kept:
 * segments cut for activations (sizes that scale with the tokens of a batch) cannot hold
 * the gradients and optimizer temporaries (sizes of the parameters) and the other way
 * round, so the reserved pool is more than the largest phase's allocation. PEFT's
 * MetaMathQA benchmark samples memory_reserved() after each step and reports its 99th
 * percentile (method_comparison/MetaMathQA/run.py @51c2ff66: the log appended after
 * lr_scheduler.step(), `torch_accelerator_module.empty_cache()` when
 * `step % ACCELERATOR_EMPTY_CACHE_SCHEDULE == 0`, 10; every step at f650b08a).
 *
 * The replay runs once per configuration and micro-batch/length; the sweep never calls it
 * (only rows with feature empty-cache do), so it may allocate its workspace. */
#ifndef LLMEM_STEPREPLAY_H
#define LLMEM_STEPREPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "tensors.h"

struct stepreplay_shape {
    const struct tensor_list *params; /* the model's parameters in registration order */
    uint64_t h, hq, hkv, inter, vocab; /* hidden, q width, K/V width, MLP width, vocabulary */
    uint64_t heads;                   /* query heads (SDPA's fp32 logsumexp per token) */
    int32_t layers;
    uint64_t ew;        /* bytes per element of weights and activations (16-bit: 2) */
    bool full;          /* every weight trained: gradients, AdamW states, foreach sqrt */
    bool kv_repeat;     /* K and V repeated to the query heads before SDPA (GQA, padded) */
    bool kept;          /* the loop keeps `outputs`: 16-bit logits and the DynamicCache */
    uint64_t lora_r;    /* LoRA rank (frozen base: full false) */
    uint32_t lora_targets; /* TARGET_BIT(role) of the adapted block Linears (train.h) */
};

struct stepreplay_result {
    uint64_t reserved;  /* highest memory_reserved() after a step of the measured window */
    uint64_t resident;  /* bytes (rounded) the replay keeps between steps: weights, and when
                           full gradients and AdamW states */
    uint64_t allocated; /* memory_allocated() after the last step: resident + kept outputs */
};

/* Replays windows of `window` steps (torch.cuda.empty_cache() after each window) of micro-
 * batch `batch` whose longest batch has `cap` tokens a sample, the later ones shorter as a
 * bucket sorted longest first gives them (stepreplay.c replay), and reports the
 * steady state's highest reserved after a step.
 * @return 0, or -1 when memory for the workspace runs out or the allocator model fails. */
int stepreplay_run(const struct stepreplay_shape *sh, int32_t batch, int32_t cap, int32_t window,
                   struct stepreplay_result *out);

/* The padded length of the j-th batch (from 0) of a bucket of `bucket_batches` batches of
 * `batch` samples, sorted longest first, sample lengths uniform on 1..cap: the expected
 * (b*j+1)-th largest of b*B samples, cap * (1 - (b*j + 1) / (b*B + 1)). */
int32_t stepreplay_batch_len(int32_t cap, int32_t batch, int32_t bucket_batches, int32_t j);

#endif
