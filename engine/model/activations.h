/* activations.h: what one transformer block saves for backward, per token.
 *
 * The per-token coefficients of the activation terms, by kind of tensor, for one
 * configuration (stack, precision, fine-tuning mode, attention, parallelism): memmodel.c
 * multiplies them by the blocks a phase holds and by micro-batch x sequence; memdetail.c
 * lists them tensor by tensor. Pure functions of the plan and the configuration. */
#ifndef LLMEM_ACTIVATIONS_H
#define LLMEM_ACTIVATIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

/* What one block saves for backward per token, by kind, without checkpointing (memmodel.c
 * sums them into mem_prepared.layer_tok, plus kv_rep when kv_rep_on; attn_s is per token and
 * unit of sequence). attn includes kv_rep when kv_rep_on: the repeated K and V that SDPA
 * saves, which depend on the micro-batch under HF (act_kv_repeat). */
struct mem_act_tok {
    uint64_t ea, er;          /* bytes of the compute dtype and of the residual stream */
    uint64_t em;              /* bytes of the MLP's inner tensors (act_fp32_norms: fp32) */
    uint64_t norm;            /* one norm's saved tensors */
    uint64_t norm_final;      /* the final norm's: a mixed unit's root stays frozen */
    uint64_t norms, lin_in, attn, attn_s, mlp, lora;
    uint64_t kv_rep;          /* the repeated K and V beyond their kv_heads width */
    bool kv_rep_on;           /* ... saved for this configuration (included in attn) */
    uint64_t mask_s;          /* SDPA's additive copy of a padded batch's bool mask, per token
                                 and unit of sequence (act_sdpa_mask) */
    bool mask_on;             /* ... saved for this configuration (not in attn_s) */
};
void act_block_tok(const struct model_plan *p, const struct train_config *c, struct mem_act_tok *a);

/* @return what selective checkpointing (torchtitan's op-level SAC) keeps of one block per
 *         token, in the compute dtype ea and the residual stream's er. */
uint64_t act_sac_tok(const struct model_plan *p, const struct train_config *c, uint64_t ea,
                     uint64_t er);

/* @return the divisor of the sequence-parallel tensors: tp under torchtitan's sequence
 *         parallelism with tp > 1, else 1. */
uint64_t act_seq_parallel(const struct train_config *c);

/* @return whether SDPA saves K and V repeated to every query head: 0 never, 1 always, 2
 *         only in padded batches of several samples. */
int act_kv_repeat(const struct train_config *c);

/* @return whether the attention of c on m keeps its scores (eager, or softcapped under a
 *         stack without SDPA for it). */
bool act_eager_attn(const struct model_spec *m, const struct train_config *c);

/* @return what a litgpt step's bitsandbytes MatMul4Bit nodes keep in ctx per token, over all
 *         blocks: alive until the next step's forward returns (0 elsewhere). */
uint64_t act_bnb_held_tok(const struct model_plan *p, const struct train_config *c);

#endif
