/* stepreplay.h: whole training steps of a dense decoder replayed through the caching
 * allocator model (allocsim.h): for loops that empty the cache every N steps
 * (stepreplay_run), and for a run's steps as they come (stepreplay_steps).
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
 * Without empty_cache() the same holds across phases: the optimizer step's parameter-sized
 * temporaries and states find the cache cut for activations and logits, and what no cached
 * block can hold opens new segments (our own gpu-25min-01: foreach AdamW after a
 * checkpointed step reserves 4.6 GiB beyond the fused step's, every sqrt(exp_avg_sq) in a
 * new segment; the phases' model, each phase on its own, cannot see it).
 *
 * FSDP2 (stepreplay_shape.shards, stepfsdp.c) adds what fully_shard allocates on the default
 * stream and the reduce-scatter stream's own pool: the sharded gradients' segments, which the
 * next step's activations cannot take, and each unit's fp32 reduce-scatter input (our own
 * gpu-25min-47, Llama-3.1-8B over 8 ranks: 28.31 GiB reserved, the phases 22.72, the replay
 * 28.30 with the copy-in stream's pool).
 *
 * The replay runs once per configuration and micro-batch/length (three steps of 4 x 4096
 * tokens of Llama-3.1-70B: about 17 ms; README "The memory model"); the sweep's points
 * never call it
 * (memmodel.h mem_options.whole_steps), so it may allocate its workspace. */
#ifndef LLMEM_STEPREPLAY_H
#define LLMEM_STEPREPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "losspath.h"
#include "tensors.h"

/* What the optimizer's step allocates beside the parameters. */
enum stepreplay_opt {
    STEPREPLAY_FOREACH, /* AdamW foreach: both states at the first step, then one
                           sqrt(exp_avg_sq) a parameter, all before any is freed */
    STEPREPLAY_FUSED,   /* AdamW fused: the states only (torch._fused_adamw_ works in place) */
    STEPREPLAY_PLAIN    /* SGD without momentum: nothing (_foreach_add_ in place) */
};

struct stepreplay_shape {
    const struct tensor_list *params; /* the model's parameters in registration order */
    uint64_t h, hq, hkv, inter, vocab; /* hidden, q width, K/V width, MLP width, vocabulary */
    uint64_t heads;                   /* query heads (SDPA's fp32 logsumexp per token) */
    int32_t layers;
    uint64_t ew;        /* bytes per element of activations (16-bit: 2), and of weights,
                           gradients and states without autocast */
    bool full;          /* every weight trained: gradients, optimizer states */
    bool amp;           /* bf16 autocast. full: over fp32 weights (casts cached for the
                           forward, an fp32 residual stream, fp32 gradients and states);
                           LoRA: the adapters run in bf16 on the 16-bit base's stream */
    bool ckpt;          /* every decoder layer checkpointed, non-reentrant (not with kept) */
    bool eager;         /* eager attention (scores materialised) instead of SDPA (not with
                           kept); kv_repeat must then say whether kv_heads < heads */
    enum stepreplay_opt opt; /* full only */
    bool expandable;    /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True */
    bool kv_repeat;     /* K and V repeated to the query heads before SDPA (GQA, padded) */
    enum loss_path loss;     /* from the lm_head's output to its input's gradient (losspath.h
                                losspath_ops): hf's, hf-4.46's, hf-4.31's or their kept forms */
    enum lp_class loss_class;
    bool kept;          /* the loop keeps `outputs` to the next forward: the path's kept
                           logits and the DynamicCache (not with ckpt) */
    bool until_step;    /* the loop keeps `outputs` (with ckpt: the logits only, the cache
                           being off) until its optimizer step has run (Answer.AI train.py) */
    uint64_t lora_r;    /* LoRA rank (frozen base: full false) */
    uint32_t lora_targets; /* TARGET_BIT(role) of the adapted block Linears (train.h) */
    bool lora16;        /* LoRA adapters in the base's 16-bit dtype, no autocast: lora_A runs
                           on the Linear's input itself and saves it (else fp32 adapters) */
    bool dropout;       /* with lora16: PEFT's lora_dropout (p > 0) before lora_A, which then
                           saves the dropped copy and not the Linear's input */
    bool quant4;        /* LoRA on bitsandbytes' 4-bit block Linears (the lm_head stays 16-bit),
                           stored as quant_storage's 16-bit elements, four weights to one;
                           not with shards beside FSDP1, nor with mixed units */
    bool nested;        /* with quant4: double quantization (an 8-bit absmax per 64 weights) */
    bool quant4_input;  /* with quant4: MatMul4Bit keeps its input for backward (bitsandbytes
                           before 0.43.2, feature bnb-input-kept; later ones keep the weight) */
    bool mixed;         /* LoRA under FSDP1 in units that hold the adapters beside the frozen
                           block weights (train_mixed_units): those weights get gradients and
                           save what trained ones save; the root stays frozen */
    uint32_t shards;    /* > 1: FSDP over this many ranks (stepfsdp.c), a unit per block and
                           the root (embedding, final norm, lm_head), ew 2: FSDP2's fully_shard
                           over fp32 weights with MixedPrecisionPolicy(bf16, reduce fp32) or
                           over bf16 weights without a policy (shard16), or FSDP1 (fsdp1).
                           Full fine-tuning without amp; or LoRA: under FSDP1 with or without
                           amp, under FSDP2's policy with lora16 */
    bool fsdp1;         /* with shards: FSDP1 (FullyShardedDataParallel, flat units on their
                           own streams, stepfsdp.c) instead of FSDP2 */
    bool shard16;       /* with shards: the shards, their gradients and states in ew bytes
                           (16-bit parameters); else fp32 under a 16-bit gather */
};

struct stepreplay_result {
    uint64_t reserved;  /* highest memory_reserved() after a step of the measured window;
                           stepreplay_steps: max_memory_reserved() over the run (FSDP: the
                           default stream's pool and the reduce-scatter stream's, FSDP1's
                           unshard stream's too; FSDP2's all-gather copy-in stream's and
                           FSDP1's pre-unshard one are streampool.h's) */
    uint64_t peak_allocated; /* stepreplay_steps: max_memory_allocated() over the run (FSDP2:
                                both pools together) */
    uint64_t resident;  /* bytes (rounded) the replay keeps at the optimizer step: weights,
                           and when full gradients and the optimizer's states */
    uint64_t allocated; /* memory_allocated() after the last step: resident + kept outputs
                           (the default stream's; FSDP's sharded gradients: grads) */
    uint64_t grads;     /* FSDP: what the reduce-scatter (FSDP1: post-backward) stream's pool
                           holds after the last step, the sharded gradients */
};

/* Replays windows of `window` steps (torch.cuda.empty_cache() after each window) of micro-
 * batch `batch` whose longest batch has `cap` tokens a sample, the later ones shorter as a
 * bucket sorted longest first gives them (stepreplay.c replay), and reports the
 * steady state's highest reserved after a step.
 * @return 0, or -1 when memory for the workspace runs out or the allocator model fails. */
int stepreplay_run(const struct stepreplay_shape *sh, int32_t batch, int32_t cap, int32_t window,
                   struct stepreplay_result *out);

/* Replays `n` training steps of micro-batch `batch` padded to widths[0..n) tokens a sample,
 * in order, on an allocator that held only the weights before the first (the measurement
 * loop's empty_cache() after loading; datasets/measure/measure_worker.py), without
 * emptying the cache, and reports the run's peaks.
 * @return 0, or -1 when an argument is out of range, memory for the workspace runs out or
 *         the allocator model fails. */
int stepreplay_steps(const struct stepreplay_shape *sh, int32_t batch, const uint32_t *widths,
                     size_t n, struct stepreplay_result *out);

/* The padded length of the j-th batch (from 0) of a bucket of `bucket_batches` batches of
 * `batch` samples, sorted longest first, sample lengths uniform on 1..cap: the expected
 * (b*j+1)-th largest of b*B samples, cap * (1 - (b*j + 1) / (b*B + 1)). */
int32_t stepreplay_batch_len(int32_t cap, int32_t batch, int32_t bucket_batches, int32_t j);

#endif
