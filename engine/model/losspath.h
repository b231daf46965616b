/* losspath.h: the logits-sized tensors of one training step, per training stack and version.
 *
 * The lm_head and the loss create tensors of N x V elements (N tokens of the micro-batch, V
 * vocabulary entries): the logits, their fp32 upcast, shifted copies, log_softmax's output,
 * the gradients flowing back, metrics a trainer computes beside the loss. They are the
 * largest tensors of a fine-tuning step, and which of them exist at once, in which dtype,
 * differs between libraries and between versions of one library. A loss path is the ordered
 * list of allocations and frees that a library's code performs, each event citing the file
 * and commit it comes from (losspath.c).
 *
 * From that list come two numbers per configuration, both per token and vocabulary entry:
 *   - the allocated peak (what torch.cuda.max_memory_allocated sees of them), and
 *   - what the caching allocator reserves for them over a run (allocsim.h replays the list
 *     for the data shape: packed batches repeat one length, variable-length batches set
 *     records of increasing length), and the part of it a run cannot give back when memory
 *     runs short (segments still partly in use at the peak).
 * Pure functions; the replay runs once per configuration, never per sweep point. */
#ifndef LLMEM_LOSSPATH_H
#define LLMEM_LOSSPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "train.h"

/* Named loss paths; a stack and its features select one (losspath_select). */
enum loss_path {
    LOSS_HF,          /* transformers >= 4.49: upcast inside the loss, labels padded */
    LOSS_HF_446,      /* transformers 4.46 .. 4.48: upcast and a shifted copy inside the loss */
    LOSS_HF_431,      /* transformers 4.31 .. 4.45: fp32 logits from the forward, shifted copy */
    LOSS_QWEN1,       /* Qwen v1 remote code: 16-bit loss, fp32 nll under autocast */
    LOSS_KEPT,        /* a loop that holds its fp32 logits through backward (torchtune May 2024) */
    LOSS_CHUNKED_UPCAST,  /* torchtune chunked CE: 16-bit logits, each chunk upcast */
    LOSS_CHUNKED_COMPILED,/* the same under torch.compile: one fp32 chunk of 8 at a time */
    LOSS_LITGPT_LORA, /* litgpt LoRA: chunked lm_head, Fabric's fp32 copies, fp32 log_softmax */
    LOSS_LITGPT_FULL, /* litgpt full: full logits, Fabric's fp32 copy, a reshape copy, log_softmax */
    LOSS_LITGPT_LORA_FIRST, /* ... the run's first step: no previous step's logits */
    LOSS_LITGPT_FULL_FIRST,
    LOSS_OUTPUTS_KEPT,/* the hf path in a loop that keeps `outputs` (its 16-bit logits) past
                         the loss's backward (PEFT's MetaMathQA run.py, Answer.AI's train.py) */
    LOSS_HF446_KEPT,  /* ... the hf-4.46 path (the 16-bit logits) */
    LOSS_HF431_KEPT,  /* ... the hf-4.31 path (the fp32 logits the forward returns) */
    LOSS_COMPILED_CE, /* cross_entropy(logits.float()) under torch.compile (torchtitan's
                         compiled loss): no fp32 tensor of N x V */
    LOSS_LOSS_PARALLEL, /* torchtitan under TP: torch's loss_parallel handlers on the rank's
                           vocab shard (fp32 shifted copy, zeros + exp in backward) */
    LOSS_TRL,         /* TRL >= 1.6 SFTTrainer: the hf path + its metrics' flattened copy of
                         the shifted logits when the micro-batch has more than one sample */
    LOSS_TRL_022,     /* TRL 0.22: + entropy one sample at a time, then the accuracy copy */
    LOSS_TRL_015,     /* TRL 0.15 .. 0.21 and 0.23 .. 1.5: + the accuracy's contiguous copy */
    LOSS_LIGER,       /* Liger's fused linear cross-entropy: no N x V tensor beyond one chunk,
                         which depends on N, V and h and is counted per point (memmodel.c) */
    LOSS_COUNT
};

const char *loss_path_name(enum loss_path lp);
/* The library code path lp follows (file and commit), for explain --detail. */
const char *losspath_source(enum loss_path lp);

/* @return whether a loop that keeps the model's `outputs` past the loss's backward (features
 *         outputs-kept, outputs-until-step) is modelled on stack s: a transformers stack
 *         whose own path is hf's, hf-4.46's or hf-4.31's, where `outputs.logits` is the
 *         tensor the model's forward returns (16-bit from 4.46, fp32 in 4.31 .. 4.45); TRL's
 *         stacks hold other logits-sized tensors in their own compute_loss. */
bool losspath_outputs_kept(enum stack s);

/* @return the bytes per token and vocabulary entry of the logits that a loop keeping the
 *         model's `outputs` holds past the loss on stack s in precision p (the tensor its
 *         kept path frees last: 2 for 16-bit logits, 4 for fp32 ones), or 0 where that loop
 *         is not modelled (losspath_outputs_kept). */
uint64_t losspath_kept_logits(enum stack s, enum precision p);

/* The loss path a configuration's stack and features run; model_type (config.json) names
 * models whose own code computes the loss ("qwen": Qwen v1 remote code). */
enum loss_path losspath_select(const struct train_config *c, const char *model_type);

/* The data shape the allocator sees: a loop that calls torch.cuda.empty_cache() after every
 * step (feature empty-cache) starts each step on an empty cache, so no step finds segments
 * cut by earlier, differently sized ones: the packed replay of one step. */
enum data_shape losspath_data_shape(const struct train_config *c);

/* Precision classes the sizes depend on: fp32; 16-bit weights without autocast (bf16-pure);
 * autocast mixed precision (fp16/bf16 with fp32 master weights). */
enum lp_class { LP_MIXED, LP_HALF, LP_FP32, LP_CLASS_COUNT };
enum lp_class losspath_class(enum precision p);

/* A loss path's events as a whole-step replay runs them (stepreplay.h): in order, each the
 * allocation or the free of one of LOSSPATH_SLOTS tensors, allocations sized in
 * 1/LOSSPATH_UNIT of a byte per token and vocabulary entry. */
#define LOSSPATH_SLOTS 10
#define LOSSPATH_UNIT 256
#define LOSSPATH_MAX_OPS 32
struct lp_op {
    bool alloc;     /* allocate the slot, else free it */
    uint8_t slot;
    uint32_t units; /* allocations: bytes per token and vocabulary entry x LOSSPATH_UNIT */
};
struct lp_ops {
    struct lp_op op[LOSSPATH_MAX_OPS];
    size_t n;        /* events */
    size_t forward;  /* the first events, which the model's forward runs */
    int outputs_slot;/* the slot of `outputs.logits` a loop keeps past the loss (the path's
                        last free: features outputs-kept, outputs-until-step), else -1 */
    size_t grad_free;/* the event that frees the logits' 16-bit gradient, which the lm_head's
                        backward reads: a replay defers it until that backward has run */
};

/* @return whether lp is a transformers model's own loss path (hf, hf-4.46, hf-4.31) or the
 *         form a loop that keeps `outputs` makes of it: the paths losspath_ops gives. */
bool losspath_transformers(enum loss_path lp);

/* @return 0 with path lp's events in class k at micro-batch `batch` in *out; -1 for a bad
 *         argument or a path that is not a transformers model's (losspath_transformers). */
int losspath_ops(enum loss_path lp, enum lp_class k, uint32_t batch, struct lp_ops *out);

/* Micro-batch buckets of the variable-length cost: 1, 2-3, 4-7, 8-15, 16-31, 32 and more
 * (a bucket is replayed at its smallest micro-batch). */
#define LP_BATCH_BUCKETS 6

/* @return the bucket of micro_batch (values below 1 count as 1). */
unsigned losspath_batch_bucket(int32_t micro_batch);

/* What a loss path holds, in bytes per token and vocabulary entry of the longest step, per
 * micro-batch bucket (a trainer's metrics can work one sample at a time). */
struct loss_cost {
    double allocated[LP_BATCH_BUCKETS];/* the allocated peak of the path's tensors */
    double reserved[LP_BATCH_BUCKETS]; /* what the caching allocator holds for them at the
                                          run's peak, per micro-batch bucket */
    double needed[LP_BATCH_BUCKETS];   /* the part of it a run cannot release when memory
                                          runs short */
    double in_forward;                 /* the allocated peak of the part the model's forward
                                          runs (under autocast, when the run uses it): the
                                          lm_head's output, and the loss where the model
                                          computes it (losspath.c paths[].forward) */
};

/* The cost of path lp in precision class k, batches of data shape `data` and allocator
 * configuration `alloc`: the packed replay runs once per combination for the whole process
 * (thread-safe), the variable-length one comes from the table built at compile time; never
 * per sweep point. */
void losspath_cost(enum loss_path lp, enum lp_class k, enum data_shape data, enum alloc_conf alloc,
                   struct loss_cost *out);

/* The variable-length cost of path lp in class k under allocator `alloc`, replayed now (a
 * run of 1000 steps over 128 data orders per micro-batch bucket: under half a second);
 * losspath_cost reads the same numbers from a table built with it at compile time.
 * @return 0, or -1 for a bad argument or a replay that ran out of blocks. */
int losspath_variable_cost(enum loss_path lp, enum lp_class k, enum alloc_conf alloc,
                           struct loss_cost *out);

/* Step lengths of losspath_replay are in 1/LP_LEN_UNIT of the longest step. */
#define LP_LEN_UNIT 4096

/* The variable-length run the model stands for: LP_RUN_STEPS steps, replayed over
 * LP_RUN_ORDERS data orders (losspath.c explains the choice). */
#define LP_RUN_STEPS 1000
#define LP_RUN_ORDERS 128

/* Replays path lp over steps of lengths len[0..n) (each 1 .. LP_LEN_UNIT) of micro-batch
 * `batch` through the caching allocator model on a fresh allocator.
 * @return 0 with *reserved (the peak reserved) and *needed (the most that could not be
 *         released at any moment) in bytes per vocabulary entry and token of a step of
 *         length LP_LEN_UNIT; -1 for a bad argument or when the replay's block array
 *         (1024 blocks) runs out. */
int losspath_replay(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t batch,
                    const uint32_t *len, size_t n, double *reserved, double *needed);

/* A variable-length run of `steps` steps (1 .. LP_RUN_STEPS) of micro-batch `batch`, each
 * padded to the longest of its samples, lengths uniform on 1 .. LP_LEN_UNIT, replayed over
 * each of the LP_RUN_ORDERS data orders the model's cost uses (the cost is the median of a
 * run of LP_RUN_STEPS). For comparisons with shorter runs than the model stands for (the
 * measurement harness's 30 steps): no model term reads it.
 * @return 0 with each order's reserved[] and needed[] (as losspath_replay's), ascending;
 *         -1 for a bad argument or a replay that ran out of blocks. */
int losspath_variable_orders(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t batch,
                              size_t steps, double reserved[LP_RUN_ORDERS], double needed[LP_RUN_ORDERS]);

/* The variable-length cost of path lp in class k under allocator `alloc` on a dataset of its
 * own: the same run as the model's (LP_RUN_STEPS steps of micro-batch `batch`, each padded
 * to the longest of its samples, over LP_RUN_ORDERS data orders, the median order's), with
 * each sample a row of tokens[0..n) drawn uniformly and cut to the cap seq, in place of
 * lengths uniform up to the cap. Samples at the cap cut the largest segments early and
 * every later step fits in them (README "The loss path and the caching allocator"). About
 * 0.1 s: callers keep the result per (path, class, allocator, seq, micro-batch bucket).
 * @return 0 with *reserved and *needed in bytes per vocabulary entry and token of a step of
 *         seq tokens; -1 for a bad argument, Liger's path (no N x V tensor to replay) or a
 *         replay that ran out of blocks. */
int losspath_lengths_cost(enum loss_path lp, enum lp_class k, enum alloc_conf alloc,
                          const uint32_t *tokens, size_t n, uint32_t seq, uint32_t batch,
                          double *reserved, double *needed);

#endif
