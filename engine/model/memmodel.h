/* memmodel.h: peak GPU memory of one fine-tuning configuration, as a timeline of phases.
 *
 * Pure functions, no I/O, no allocation. The prediction is split in two so the sweep can
 * hoist work out of its inner loop:
 *   memmodel_prepare()  everything that does not depend on micro-batch and sequence length
 *                       (weights, gradients, optimizer states, their sharding), per config,
 *                       here;
 *   memmodel_eval()     the activation, logits and buffer terms for one (micro-batch, seq)
 *                       and the maximum over the phases (mempoint.h).
 * With `paper` set, the LLMem equations are used exactly (llmem.h); otherwise the stack's
 * timeline model (README "Memory model"), which reduces to corrected LLMem terms for the
 * colossal stack. */
#ifndef LLMEM_MEMMODEL_H
#define LLMEM_MEMMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu.h"
#include "llmem.h"
#include "losspath.h"
#include "plan.h"
#include "train.h"

enum mem_term {
    TERM_BASE,        /* CUDA context, library workspaces, NCCL buffers */
    TERM_PARAMS,      /* resident weights: trained, frozen, quantized, master copies */
    TERM_GRADS,       /* gradients */
    TERM_OPTIMIZER,   /* optimizer states and step temporaries */
    TERM_ACTIVATIONS, /* saved activations, recomputation, autocast weight copies */
    TERM_LOGITS,      /* lm_head output and loss temporaries */
    TERM_COMM,        /* gathered shards, gradient buckets, TP gather buffers */
    TERM_COUNT
};

enum mem_phase {
    PHASE_FORWARD,   /* end of the forward through the blocks */
    PHASE_LOSS,      /* lm_head + loss */
    PHASE_BWD_LAST,  /* backward through the last block */
    PHASE_BWD_FIRST, /* backward through the first block */
    PHASE_OPTIMIZER, /* optimizer step (first step allocates the states) */
    PHASE_EVAL,      /* evaluation pass with full logits (stacks that run one) */
    PHASE_BWD_END,   /* end of backward: FSDP1's root unit assembles its gradient */
    PHASE_COUNT
};

const char *mem_term_name(enum mem_term t);   /* "base", "params", ... */
const char *mem_phase_name(enum mem_phase p); /* "forward", "lm_head+loss", ... */

struct mem_options {
    bool paper;          /* LLMem's equations exactly */
    uint64_t base_bytes; /* m_base: CUDA context and workspaces of the GPU */
    uint64_t nccl_bytes; /* NCCL buffers of one communicator per GPU (gpu.h), outside the allocator */
    uint64_t ws_alloc, ws_res; /* cuBLAS workspaces: allocated, and the segments they take */
    uint64_t capacity_bytes;   /* what the caching allocator can reserve on the GPU (its
                                  memory less the context); 0 = no limit */
    bool whole_steps;    /* reserved from whole steps replayed through the allocator model
                            where stepreplay.c covers the configuration (validate, explain's
                            point, not its suggested changes): about 17 ms a configuration for
                            Llama-3.1-70B (README "The memory model"), so never on the sweep's
                            points (a --data packed report's 32,040 rows: 0.56 -> 21 s) */
};

/* The options of GPU g (NULL: no context, the default workspace and NCCL sizes of gpu.h):
 * its context, NCCL buffers and cuBLAS workspaces, whose segments the allocator model
 * works out here, once per GPU rather than per configuration. */
void mem_options_for_gpu(const struct gpu_spec *g, bool paper, struct mem_options *o);

/* Batch-independent part of a prediction (per model and configuration). */
struct mem_prepared {
    struct llmem_terms llmem;             /* static LLMem terms (paper and colossal) */
    uint64_t fixed[PHASE_COUNT][TERM_COUNT]; /* bytes per phase and term, allocated */
    uint64_t fixed_r[PHASE_COUNT];        /* the same phases rounded as the allocator does */
    uint64_t side_pool;      /* reserved by FSDP2's all-gather copy-in stream (streampool.h;
                                FSDP1: its pre-unshard stream, streamfree.c),
                                in fixed_r; the larger stage's under pp */
    uint64_t stream_free[PHASE_COUNT]; /* reserved, not held: another stream's cached
                                segments wholly free in the phase (FSDP2's reduce-scatter
                                pool between zero_grad and the next reduction,
                                memmodel.c fsdp2_rs_pool); the allocator releases those
                                before it fails, so they never decide a fit */
    uint64_t wrap_reserved;  /* FSDP1's wrap from CPU-resident weights (feature cpu-init):
                                what it left reserved on the default stream, its shards and
                                its cache (fsdpwrap.h); a floor under each phase's own
                                default-stream reserved, never held; 0 = none */
    uint64_t wrap_allocated; /* ... of it in use when the wrap returns (the shards) */
    uint64_t wrap_floor[PHASE_COUNT]; /* ... with what each phase holds beside that cache
                                (other streams' tensors, small-pool ones; fsdpwrap.c
                                fsdpwrap_phases): the least its own reserved can be; 0 = none */
    uint64_t wrap_top;       /* the largest of the phases' floors with their side pools' free
                                parts (stream_free): the least a replayed step reserves */
    bool phase_on[PHASE_COUNT];
    /* per-token coefficients of the batch-dependent terms (bytes) */
    uint64_t layer_tok;      /* one block's saved activations per token */
    uint64_t layer_tok_s;    /* ... per token and per unit of sequence (eager scores) */
    uint64_t kv_rep_tok;     /* K and V repeated to every query head before SDPA, beyond
                                their kv_heads width, per token (activations.c act_kv_repeat) */
    bool kv_rep_padded;      /* ... only in padded batches of several samples (HF) */
    uint64_t mask_tok_s;     /* SDPA's additive copy of the padded batch's mask, per token and
                                unit of sequence, in the same batches (activations.c act_sdpa_mask) */
    uint64_t ckpt_tok;       /* one block's checkpoint (its input) per token */
    uint64_t tail_tok;       /* final norm and lm_head input per token */
    uint64_t bwd_tok;        /* backward working set of one block per token */
    double logits_tok[LP_BATCH_BUCKETS];      /* per token and vocab entry at the loss peak,
                                                 per micro-batch bucket (losspath.h) */
    double logits_res_tok[LP_BATCH_BUCKETS];  /* ... what the caching allocator reserves for
                                                 them, per micro-batch bucket */
    double logits_need_tok[LP_BATCH_BUCKETS]; /* ... the part of that it cannot release when
                                                 memory is short */
    double loss_fwd_tok;     /* per token and vocab entry at the peak of the part of the loss
                                path the model's forward runs (losspath.h in_forward) */
    uint64_t amp_cache;      /* what autocast's cache adds while that part runs under
                                checkpointing (memmodel.c fixed_phases); 0 = nothing */
    uint64_t eval_logits_tok;/* per token and vocab entry in an evaluation pass */
    uint64_t liger_inc;      /* Liger's fused linear cross-entropy (memmodel.c liger_coeffs):
                                cdiv(V, h), the tokens a chunk is divided by; 0 = not Liger */
    uint32_t liger_h, liger_ea, liger_er; /* the lm_head input width, the logits' and the
                                             input's bytes an element */
    uint64_t comm_tok;       /* TP gather buffer per token */
    uint64_t kept_tok;       /* the KV cache a loop keeps in `outputs`, per token (all blocks) */
    uint64_t kept_prev_tok;  /* ... the previous step's, alive through this one's forward */
    uint64_t held_tok;       /* what a kept graph's ctx attributes hold, per token (all blocks;
                              * act_bnb_held_tok) */
    bool held_prev;          /* ... the previous step's is there through this one's forward */
    uint64_t held_blk_tok;   /* ... of that, one block's (counted in its activations too) */
    uint64_t prev_logits_tok;/* the previous step's logits alive in this one's forward */
    uint64_t fwd_logits_tok; /* ... and this step's, at the forward's end (litgpt's lm_head) */
    uint64_t kept_logits_tok;/* the logits a loop keeps past the loss (its 16-bit outputs, torchtune's
                              * fp32 copy), bytes per token and vocab entry */
    uint64_t pp_out_tok;     /* pp (torch.distributed.pipelining, torchtitan): one micro-batch's
                                logits the last stage keeps in output_chunks, per token and vocab
                                entry (e_a), and how many of them are alive at its loss */
    int32_t pp_out_n;
    uint64_t pp_recv_first_tok; /* pp (torch pipelining): receive buffers the first stage keeps
                                   (gradients of its output), per token of a micro-batch */
    uint64_t pp_recv_last_tok;  /* ... the last stage (its inputs, less the one in flight that
                                   is its first block's checkpoint) */
    uint64_t pp_outs_first_tok; /* pp (torch pipelining before PR #153383): the first stage's
                                   output of every micro-batch, kept in output_chunks */
    uint64_t pp_igrad_last_tok; /* ... the last stage's input gradients of the micro-batches
                                   already backwarded, kept as the receive buffers' .grad */
    uint64_t pp_outs_last_tok;  /* ... the last rank's other local stages' outputs (the
                                   interleaved schedule: memmodel.c pp_interleaved_io) */
    uint64_t pp_merge_tok;   /* pp (torch pipelining, default allocator): the step's merged
                                result of the last stage's outputs, per token of a micro-batch
                                and vocab entry, where no earlier request of the step can have
                                left a cached block that holds it (memmodel.c pp_merge); else 0 */
    uint64_t pp_merge_above; /* ... it needs a new segment only when larger than this: the
                                largest FSDP unit's reduce-scatter input on the last stage */
    uint64_t nccl;           /* device-level NCCL buffers */
    uint64_t paged;          /* optimizer states in managed memory (outside the allocator) */
    uint64_t paged_one;      /* ... the largest parameter's, which must fit (resident.c
                                bnb_paged_states); the driver pages out the rest */
    int32_t layers, tp;      /* layers, TP degree that divides the inner activations */
    int32_t act_layers[2];   /* blocks whose activations are held at the forward's end and at
                                the loss (pp: first stage x micro-batches in flight, last) */
    int32_t act_extra_bwd;   /* blocks held beside backward's first block (pp: earlier
                                micro-batches on the first stage) */
    bool tail_fwd;           /* the lm_head input exists at the forward's end (not on pp's
                                first stage) */
    uint64_t host;           /* host memory per GPU (offload) */
    /* per phase: communication buffers per token, 16-bit logits outside the loss path per
     * token and vocab entry; the phases on, in order (point_coeffs) */
    uint64_t cm_tok[PHASE_COUNT], lg_tok[PHASE_COUNT];
    uint8_t phases[PHASE_COUNT];
    int nphases;
    int64_t vocab, heads;
    bool ckpt, use_llmem;
    /* a loop that empties the cache every replay_window steps (feature empty-cache):
     * reserved from whole steps replayed through the allocator model (stepreplay.h);
     * 0 = not replayed */
    int32_t replay_window;
    /* whole steps of a dense HF decoder replayed through the allocator model
     * (stepreplay_steps, mem_options.whole_steps): the reserved peak, in place of the
     * phases' (never below the allocated peak); over
     * three steps of the packed length, or over a measured variable-length run's widths
     * (memmodel_replay_run; the caller's array, alive while the point is evaluated) */
    bool replay_steps;
    uint32_t replay_shards;  /* FSDP's ranks when the replayed steps are FSDP's (stepfsdp.c);
                                0: one GPU's, or a DDP replica's */
    bool replay_fsdp1;       /* ... and the FSDP is FSDP1 (flat units, accelerate's policy) */
    uint64_t replay_buckets; /* DDP: its gradient buckets (rounded), allocated at construction
                                and kept: beside a replayed step (replayscope.c) */
    const uint32_t *run_w;
    size_t run_n;
};

struct mem_estimate {
    uint64_t phase[PHASE_COUNT][TERM_COUNT]; /* allocated bytes per phase and term */
    uint64_t phase_reserved[PHASE_COUNT];    /* reserved bytes per phase (no context) */
    uint64_t allocated, reserved, device;    /* the three peaks; device is what OOMs */
    uint64_t shown;                          /* reserved + what lies outside the allocator:
                                                what nvidia-smi shows with memory to spare */
    uint64_t paged_moved;                    /* managed-memory optimizer states that cross
                                                PCIe each way once a step, having no room
                                                beside the reserved pool (mempoint.c
                                                paged_room); 0 when they stay resident */
    uint64_t step_end;                       /* of reserved: the segment the step adds after
                                                its phases (the pipeline's merged result) */
    uint32_t replayed_steps;                 /* reserved came from this many whole steps
                                                replayed (mem_options.whole_steps); 0: the
                                                phases' */
    uint64_t reserved_phases;                /* the phases' reserved then (what the sweep's
                                                reports show for the point) */
    enum mem_phase peak_phase;               /* where the device peak is */
    /* `reserved` is what torch.cuda.max_memory_reserved reports when memory is plentiful;
     * `device` counts only what the allocator could not give back when memory runs short
     * (it releases wholly free cached segments and retries before raising OOM), plus the
     * memory outside the allocator. */
    struct llmem_terms llmem;                /* LLMem's terms for this point */
    uint64_t host;                           /* host memory this GPU's share needs (offload) */
};

/* The batch-independent bytes of one GPU by kind, before the phases sum them (explain
 * --detail; the sweep never calls it). A pipeline's stages differ: MEM_STAGE_FIRST and
 * MEM_STAGE_LAST give a stage's share (other methods ignore the stage). */
struct mem_resident {
    double trained, frozen;   /* parameters per GPU */
    uint64_t w, g, o, tmp;    /* weights, gradients, optimizer states, step temporaries */
    uint64_t amp_all, amp_one;/* autocast 16-bit weight copies: all blocks, one block */
    uint64_t dequant, dequant_head; /* a dequantized block Linear, the dequantized lm_head */
    uint64_t amp_head;        /* autocast's 16-bit copy of an fp32 lm_head outside amp_all (loss) */
    uint64_t gather_fwd, gather_bwd, bucket; /* gathered units, gradient buckets */
    uint64_t gather_bwd_last; /* gathered in the last block's backward */
    uint64_t paged, host;     /* managed-memory optimizer states; host memory (offload) */
    uint64_t paged_one;       /* the largest parameter's managed-memory states */
    uint64_t acc;             /* gradients accumulated unsharded over a pipelined step */
    uint64_t root_hold, root_end, root_gather; /* FSDP1's root unit (resident.c root_grads) */
    uint64_t root_shard;      /* FSDP1: the root's gradient shard, out of g (made after backward) */
    uint64_t g_frozen;        /* the part of g that is frozen weights' (resident.c mixed_unit_grads) */
    uint64_t tables;          /* the part of w that is rotary cos/sin tables (FEAT_ROPE_TABLES) */
    bool zero3;               /* parameters, gradients and states sharded over dp */
    bool ds;                  /* the fp32 master copy lives in the optimizer */
};
/* Bytes per element of what is trained (fp32 master weights under mixed precision, fp32
 * PEFT adapters), and of a frozen weight: quantized (a block Linear of a QLoRA base: NF4's
 * 4 bits and absmax, int8 without its row scales) or in the frozen dtype. */
uint64_t memmodel_trained_bytes(const struct train_config *c);
/* @return the bytes of the lm_head weight's gradient on one GPU in full training (a tied
 *         head's is the embedding's), in the gradient dtype; 0 for LoRA and QLoRA. */
uint64_t memmodel_head_grad_bytes(const struct model_plan *p, const struct train_config *c);
/* @return the gradient bytes alive in backward's block phases: the sums kept under no_sync
 *         (acc, when accumulating; at least the shards g), else every shard but FSDP1's
 *         root's, which its post-backward hook makes only after the root's concatenation,
 *         the last thing backward does (resident.c root_grads). */
static inline uint64_t memmodel_bwd_grads(uint64_t acc, uint64_t g, uint64_t root_shard)
{
    return acc ? (acc > g ? acc : g) : g - root_shard;
}
double memmodel_frozen_elem_bytes(const struct train_config *c, bool quantized);
/* @return the bytes per quantized weight, out of memmodel_frozen_elem_bytes(c, true), that
 *         FSDP / ZeRO-3 leave whole on every rank (bitsandbytes' quant_state); 0 for
 *         torchao's NF4, which shards them, and without a 4-bit base. */
double memmodel_quant_state_bytes(const struct train_config *c);
enum mem_stage { MEM_STAGE_ALL, MEM_STAGE_FIRST, MEM_STAGE_LAST };
void memmodel_resident(const struct model_plan *p, const struct train_config *c, enum mem_stage stage,
                       struct mem_resident *out);

/* Whether a prediction uses the LLMem equations (--paper, or the colossal stack): then the
 * plan's chunk size must have been searched (plan_chunk) before memmodel_prepare. */
bool memmodel_uses_llmem(enum stack stack, const struct mem_options *opt);

/* Batch-independent preparation (see memmodel_uses_llmem for the precondition). */
void memmodel_prepare(const struct model_plan *p, const struct train_config *c,
                      const struct mem_options *opt, struct mem_prepared *mp);

/* A lower bound on the allocated peak of any run of c: the weights, gradients and optimizer
 * states at the optimizer step, or the weights, states and the block activations backward
 * cannot do without at the end of forward (only with exact_seq: every sample had seq_len
 * tokens). Only terms that follow from the configuration itself, none of the stack- or
 * measurement-inferred ones; validate flags measurements below it. *at gets the phase.
 * before_grads: the measurement is a local peak of the step before any gradient exists
 * (Salisbury's peak types B, C, D: up to the end of forward), so only the forward bound
 * applies to it. */
uint64_t memmodel_floor(const struct model_plan *p, const struct train_config *c,
                        bool exact_seq, bool before_grads, enum mem_phase *at);

/* What the caching allocator reserves for one term of `bytes`: requests up to 1 MiB are
 * 512-byte granules of 2 MiB segments, larger ones get segments rounded up to 2 MiB
 * (c10/cuda/CUDACachingAllocator). A select, not a branch: which side a term falls on
 * changes from point to point of the sweep (bytes stays below BYTES_SAT = 2^62, so the sum
 * cannot wrap). */
static inline uint64_t memmodel_round(uint64_t bytes)
{
    const uint64_t unit = bytes <= (UINT64_C(1) << 20) ? 512 : UINT64_C(2) << 20;
    return (bytes + unit - 1) & ~(unit - 1);
}

/* @return whether the forward phase of c holds the dequantized lm_head rather than a block
 *         Linear's (litgpt: the lm_head's moment, before Fabric's fp32 logits). */
bool memmodel_head_in_forward(const struct train_config *c, uint64_t dequant, uint64_t dequant_head);

#endif
