/* speed.h: estimated step time and throughput of a configuration (DESIGN.md section 7).
 *
 * Compute: FLOPs of forward, backward (LoRA skips the weight gradients of frozen layers)
 * and recomputation under checkpointing, at the GPU's dense rate for the precision times
 * an efficiency factor. Memory-bound extras: the optimizer step and NF4/int8
 * dequantization. Communication: what each method moves over the intra-node interconnect.
 * Compute and communication are added (no overlap assumed: a conservative ranking). */
#ifndef LLMEM_SPEED_H
#define LLMEM_SPEED_H

#include "gpu.h"
#include "plan.h"
#include "train.h"

/* Fraction of the dense peak a fine-tuning step reaches (model FLOPs utilisation). 0.40 is
 * the middle of the 35-45 % MFU reported for Megatron/FSDP fine-tuning of 7-70B models
 * (Narayanan et al. SC21; PyTorch FSDP paper, VLDB 2023). It scales every configuration
 * alike, so it changes absolute numbers, not the ranking between compute-bound points. */
#define SPEED_MFU 0.40
/* Fraction of the link bandwidth collectives reach (NCCL bus bandwidth vs. link rate). */
#define SPEED_LINK_EFF 0.70
/* A transformer block runs about 20 kernels forward (norms, projections, rotary, attention,
 * activations, residual adds) and twice that backward; each costs at least the CUDA launch
 * latency of ~5 us (NVIDIA CUDA C++ Best Practices Guide), which bounds small micro-batches. */
#define SPEED_KERNELS_PER_BLOCK 20.0
#define SPEED_LAUNCH_S 5e-6

struct speed_estimate {
    double flops;         /* per GPU per step */
    double compute_s, memory_s, comm_s;
    double step_time_s;
    double samples_per_s, tokens_per_s; /* whole job */
};

/* Batch-independent part of the speed model, per (model, config). */
struct speed_prepared {
    double matmul_params;   /* weights in matmuls per token, per GPU (TP divides) */
    double attn_flops_tok;  /* attention score FLOPs per token per unit sequence length */
    double bwd_factor;      /* backward FLOPs / forward FLOPs */
    double fwd_passes;      /* forward passes per step: 1, or 2 with recomputation */
    double rate;            /* FLOP/s reached */
    double fixed_s;         /* optimizer step, dequantization, kernel launches */
    double comm_fixed_s;    /* gradient and parameter collectives per step */
    double act_comm_tok;    /* TP all-reduce seconds per token */
};

void speed_prepare(const struct model_plan *p, const struct train_config *c,
                   const struct gpu_spec *g, struct speed_prepared *sp);
void speed_eval(const struct train_config *c, const struct speed_prepared *sp,
                struct speed_estimate *s);

#endif
