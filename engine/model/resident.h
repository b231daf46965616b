/* resident.h: the batch-independent bytes one GPU holds for a configuration (internal to
 * the model layer: memmodel.c reads them into its phases; memmodel_resident exports a copy).
 * Pure functions of the plan and the configuration. */
#ifndef LLMEM_RESIDENT_H
#define LLMEM_RESIDENT_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

struct resident {
    double trained, frozen;   /* parameters per GPU */
    uint64_t w, g, o, tmp;    /* weights, grads, optimizer states, step temporaries (bytes) */
    uint64_t amp_all, amp_one;/* autocast 16-bit weight copies: all blocks, one block */
    uint64_t dequant;         /* one dequantized frozen block weight (bitsandbytes) */
    uint64_t dequant_head;    /* the dequantized lm_head, when the stack quantizes it */
    uint64_t amp_head;        /* autocast's 16-bit copy of an fp32 lm_head (frozen beside a
                                 quantized base, or trained, tied or not), out of amp_all,
                                 saved by its matmul until the lm_head's backward */
    uint64_t gather_fwd, gather_bwd, bucket;
    uint64_t gather_bwd_last; /* gathered in the last block's backward (gather_bwd: the larger
                                 of both backward phases') */
    uint64_t paged;           /* optimizer states bitsandbytes keeps in managed memory */
    uint64_t paged_one;       /* ... of them, the largest parameter's (what must fit) */
    uint64_t acc;             /* gradients accumulated unsharded over a pipelined step */
    uint64_t host;            /* bytes of this GPU's share kept in host memory (offload) */
    uint64_t root_hold;       /* FSDP1: the lm_head's gradient piece, held through backward */
    uint64_t root_end;        /* FSDP1: the root's gradient pieces + their concatenation */
    uint64_t root_gather;     /* the gathered root unit (embedding, lm_head, final norm) */
    uint64_t root_shard;      /* FSDP1: the root's sharded gradient, made after its cat */
    uint64_t g_frozen;        /* the part of g that is frozen weights' (mixed_unit_grads) */
    uint64_t whole;           /* the part of w every rank keeps whole beside its shards:
                                 bitsandbytes' QuantState (memmodel_quant_state_bytes) */
    uint64_t tables;          /* the part of w that is module buffers every rank keeps whole:
                                 transformers <= 4.39's rotary cos/sin tables (FEAT_ROPE_TABLES) */
};

/* Fills *r for configuration c of plan p (per GPU, after its TP, DP, EP and pipeline-free
 * shares; memmodel.c's pp_stage takes a stage's share of it). */
void resident_terms(const struct model_plan *p, const struct train_config *c, struct resident *r);

/* @return the bytes of one rotary table (cos or sin) of one attention layer under
 *         FEAT_ROPE_TABLES, max_position_embeddings x head_dim in its dtype; 0 without. */
uint64_t resident_rope_table(const struct model_plan *p, const struct train_config *c);

/* Whether c shards parameters, gradients and states over dp (FSDP / ZeRO-3: *zero3) and
 * whether its fp32 master copy lives in DeepSpeed's optimizer (*ds). */
void resident_shard_kind(const struct train_config *c, bool *zero3, bool *ds);

/* @return the bytes of one gathered block of `layer` parameters in the gathered dtype gb:
 *         its Linear weights in float8 under float8 all-gather, or in their quantized
 *         format less what stays whole (memmodel_quant_state_bytes) under a quantized
 *         LoRA base, the rest in gb. */
double resident_gathered_block_bytes(const struct model_plan *p, const struct train_config *c,
                                     double layer, double gb);

#endif
