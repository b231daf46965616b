/* speed.h: estimated step time and throughput of a configuration (DESIGN.md section 7).
 *
 * The step is the sum of its kinds of work, each at the rate that bounds it:
 *  - matrix multiplies, one class per Linear role (q, k, v, o, gate, up, down, lm_head and
 *    the LoRA adapters): a roofline, max(FLOPs / matmul rate, bytes / memory bandwidth),
 *    where the matmul rate is the GPU's dense peak times its measured maximum achievable
 *    matmul efficiency (speed_gpu_eff), and the bytes are the weight plus the activations
 *    the GEMM reads and writes. Forward, input gradient, weight gradient (trained only) and
 *    recomputation under checkpointing;
 *  - attention: FlashAttention FLOPs at the kernel's measured efficiency for the GPU
 *    generation, which rises with the sequence length as s / (s + s_half); eager attention
 *    as matmuls plus the bytes of its materialised scores;
 *  - memory-bound work: norms, activations, rotary, residual adds, cross-entropy over the
 *    vocabulary, the optimizer step and dequantization, by the bytes they move;
 *  - communication: overlapped with compute where the method overlaps it (FSDP prefetches
 *    the next unit's all-gather; DDP all-reduces buckets during backward), exposed where
 *    it does not (tensor-parallel all-reduces); PCIe GPUs without peer-to-peer pay for
 *    the trip through host memory;
 *  - the host: each kernel costs a launch; the GPU runs behind the host, so the step takes
 *    the longer of the two.
 * Everything that does not depend on the micro-batch and sequence length is folded into
 * struct speed_prepared once per configuration; speed_eval does a few multiplications. */
#ifndef LLMEM_SPEED_H
#define LLMEM_SPEED_H

#include "gpu.h"
#include "plan.h"
#include "train.h"

/* Fraction of the link bandwidth collectives reach (NCCL bus bandwidth vs. link rate). */
#define SPEED_LINK_EFF 0.70
/* Fraction of the peak memory bandwidth streaming kernels reach: BabelStream's triad on
 * A100-40GB runs at ~1.3-1.4 TB/s of 1.555 (Deakin et al., "Evaluating the performance of
 * HPC-style SYCL applications", 2020, and the BabelStream results page), H100 about the same
 * share. */
#define SPEED_BW_EFF 0.85
/* Host cost per kernel: the CUDA launch latency of ~5 us (NVIDIA CUDA C++ Best Practices
 * Guide); the GPU overlaps it unless its kernels are shorter. */
#define SPEED_LAUNCH_S 5e-6
/* FlashAttention's efficiency at sequence length s is E * s / (s + SPEED_ATTN_S_HALF):
 * the FA3 paper's forward benchmark (B*S = 16k, H*D = 2048, head dim 128; re-run in
 * pytorch/benchmark commit ff65cb67, PR #2391, on H100) gives 430, 517, 566, 590, 614, 621
 * TFLOP/s at s = 512..16k, i.e. 0.69, 0.83, 0.91, 0.95, 0.99 of the 16k rate: s_half = 250
 * at 512, 243 at 1k, 269 at 2k. The FA2 paper (Dao 2023, fig. 4/5) shows the same rise on
 * A100. */
#define SPEED_ATTN_S_HALF 256.0
/* The Triton FlashAttention kernel (flash_attn_triton.py, which llm-foundry's attn_impl
 * triton runs) is 1.3-2.5x slower than FlashAttention-2 (Dao 2023, arXiv:2307.08691,
 * abstract and fig. 4-6): the geometric middle, 1.8. */
#define SPEED_TRITON_ATTN_SLOWDOWN 1.8
/* DDP's gradient bucket (torch.nn.parallel.DistributedDataParallel bucket_cap_mb = 25):
 * the last bucket's all-reduce runs after backward ends. */
#define SPEED_DDP_BUCKET_BYTES (25.0 * 1024 * 1024)
/* The speed model's own error: the median |error| of tokens/s per GPU over the measured
 * rows `validate` compares (README "Speed model"; re-measure when the model changes).
 * Layouts of one recipe closer than this are reported as within the error. */
#define SPEED_ERROR_PCT 15.0
/* Host side of offload (speed.c prepare_offload): pinned host-device copies reach about
 * 0.8 of the PCIe link (CUDA samples bandwidthTest: ~26 of 32 GB/s on Gen4 x16, ~52 of 64
 * on Gen5); a CPU Adam step streams host DRAM at about 0.8 of its peak (STREAM triad on
 * two-socket Xeon and EPYC servers reaches 75-85 %). Without gpus.csv figures: a PCIe
 * Gen4 x16 link and one 8-channel DDR4-3200 socket. */
#define SPEED_PCIE_EFF 0.8
#define SPEED_HOST_EFF 0.8
#define SPEED_PCIE_DEFAULT_GBS 32.0
#define SPEED_HOST_DEFAULT_GBS 204.8
/* At most this many GEMM classes: 8 Linear roles, lm_head, and one LoRA class per role. */
#define SPEED_GEMM_MAX 24
/* Output tile shapes cuBLAS chooses between for a large bf16 GEMM (speed.c cites them). */
#define SPEED_TILES 2

/* Per-GPU efficiencies (speed.c cites each). */
struct speed_gpu_eff {
    double matmul; /* maximum achievable matmul FLOP/s over the dense peak (MAMF) */
    double attn;   /* FlashAttention-2 forward+backward FLOP/s over the dense peak, long s */
    int sms;       /* streaming multiprocessors; 0: unknown (no tile or SM accounting) */
    int nccl_channels; /* NCCL's channels (one CTA, one SM each) for a large collective */
    int tile_m[SPEED_TILES], tile_n[SPEED_TILES]; /* output tile candidates (rows x cols) */
};
void speed_gpu_eff(const struct gpu_spec *g, struct speed_gpu_eff *e);
/* The share of the GPU's SMs NCCL's kernel holds during one ring collective whose larger
 * buffer (send or receive) is `bytes` (speed.c cites the channel rule). */
double speed_nccl_sm_share(const struct speed_gpu_eff *e, double bytes);
/* What `comm` seconds of collectives add to `hidden` seconds of compute they overlap when
 * NCCL holds `share` of the SMs meanwhile: the compute runs at 1 - share while they run,
 * so the pair takes max(hidden + share x comm, comm); returns that minus hidden. */
double speed_overlap_cost(double comm, double hidden, double share);

struct speed_estimate {
    double flops;         /* per GPU per step */
    double compute_s, memory_s, comm_s;
    double bubble_s;      /* pipeline: the idle pp - 1 slots of a 1F1B step */
    double step_time_s;
    double samples_per_s, tokens_per_s; /* whole job */
};

/* Share of an M x N GEMM's output tiles that do useful work on the GPU's SMs: M x N over
 * waves x SMs x tile area, waves = ceil(tiles / SMs), for the better tile candidate
 * (tile and wave quantization); 1 when the SMs are unknown. */
double speed_wave_efficiency(const struct speed_gpu_eff *e, double m, double n);

/* One class of GEMMs: per token FLOPs and activation bytes, weight bytes per pass. */
struct speed_gemm {
    double flops_tok, bytes_tok, bytes_fixed;
    double passes; /* forward passes + input-gradient + weight-gradient GEMMs of one step */
    /* the shape of each of its `mods` matrices on one GPU (after the TP split), for tile
     * and wave quantization; mods 0: no shape, the class runs at the matmul rate */
    double in, out, mods;
    double wgrad;  /* weight-gradient passes among `passes` (1 when trained) */
    double fast;   /* the class's rate over matmul_rate (float8 GEMMs); 0 reads as 1 */
};

/* A class with a shape, folded for the point loop: per GEMM kind (forward: N = out,
 * input gradient: N = in; M = the tokens) the N tiles and the seconds of one wave of each
 * tile candidate, every matrix and pass included; the weight gradient (K = the tokens,
 * M x N fixed: cuBLAS splits K, so only the tile padding counts) in seconds per token. */
struct speed_wave {
    double n_tiles[2][SPEED_TILES], wave_s[2][SPEED_TILES];
    double wgrad_s, mem_s, mem_fixed_s;
};

/* A GEMM class folded for the point loop: seconds = max(compute_s * tokens,
 * mem_s * tokens + mem_fixed_s), every pass included. */
struct speed_term {
    double compute_s, mem_s, mem_fixed_s;
};

enum speed_overlap { OVERLAP_NONE, OVERLAP_FSDP, OVERLAP_DDP };

/* Batch-independent part of the speed model, per (model, config). */
struct speed_prepared {
    int ngemm;
    struct speed_gemm gemm[SPEED_GEMM_MAX];
    double matmul_rate, bw;  /* FLOP/s and bytes/s reached */
    double flops_tok;        /* matmul FLOPs per token of one step (for the flops output) */
    double attn_flops_tok;   /* causal attention forward FLOPs per token per unit of s */
    double attn_passes;      /* forward passes + backward (2.5x forward, FA2) */
    double attn_rate;        /* FlashAttention FLOP/s at long sequences */
    double attn_bytes_tok;   /* eager attention: score bytes per token per unit of s, step */
    double elem_bytes_tok;   /* memory-bound bytes per token of one step */
    double fixed_s;          /* optimizer step, dequantization, embedding gradient */
    double fwd_share;        /* share of compute in forward passes (DDP overlap) */
    double host_s;           /* kernel launches of one step */
    enum speed_overlap overlap;
    double comm_fixed_s;     /* gradient and parameter collectives per step */
    double comm_first_s;     /* what prefetching cannot hide: first gather / last bucket */
    double comm_post_s;      /* after backward, exposed: ZeRO's parameter all-gather, the
                                distributed optimizer's DP collectives, offload's CPU step */
    double comm_sm_share;    /* share of the SMs NCCL's kernels hold while an overlapped
                                collective runs (speed_nccl_sm_share) */
    int pp, pp_micro;        /* pipeline stages and micro-batches per step (1, 1 without) */
    int pp_local;            /* stages a rank runs (2 under the interleaved schedule) */
    double p2p_tok, p2p_fixed_s; /* a stage's send + receive per micro-batch: s/token, latency */
    double act_comm_tok;     /* TP all-reduce seconds per token (exposed) */
    double act_comm_fixed_s; /* their latency per step */
    /* folded by speed_fold for speed_eval: classes of proportional cost merged */
    int nterm;
    struct speed_term term[SPEED_GEMM_MAX];
    int nwave;
    struct speed_wave wave[SPEED_GEMM_MAX];
    struct speed_gpu_eff gpu_eff; /* SMs and tiles for the waves */
    double inv_tile_m[SPEED_TILES], inv_sms;
    double attn_s_tok;       /* FlashAttention seconds per token per unit of (s + s_half) */
    double eager_s_tok;      /* eager attention seconds per token per unit of s */
    double elem_s_tok;       /* memory-bound seconds per token */
};

/* Passes over the optimizer's element size one optimizer step makes per trained
 * parameter (speed.c cites the kernels): 18 for unfused AdamW, 7 fused, 3 for SGD. */
double speed_opt_passes(const struct train_config *c);
/* Bytes FSDP moves over its unsharded gradient per trained parameter and backward for
 * e-byte gradients: FSDP1's split-backward concatenation, the cast to an fp32 reduce dtype
 * (FEAT_FSDP_FP32_REDUCE) and the reduce-scatter hook's pre-division; FSDP2's copy into the
 * reduce-scatter buffer (speed.c cites each). */
double speed_fsdp_grad_bytes(const struct train_config *c, double e);

void speed_prepare(const struct model_plan *p, const struct train_config *c,
                   const struct gpu_spec *g, struct speed_prepared *sp);
/* Folds the descriptive fields above into the per-token coefficients speed_eval uses
 * (speed_prepare calls it; call it again after changing them by hand). */
void speed_fold(struct speed_prepared *sp);
void speed_eval(const struct train_config *c, const struct speed_prepared *sp,
                struct speed_estimate *s);
/* Adds to s (in its communication) the PCIe traffic of a step whose paged optimizer states
 * do not stay on GPU g: `moved` bytes in and out (mem_estimate.paged_moved). */
void speed_add_paging(const struct gpu_spec *g, uint64_t moved, struct speed_estimate *s);

#endif
