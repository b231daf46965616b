/* plan.h: everything about a model that the memory and speed models need, computed once
 * per model so that evaluating a configuration is arithmetic only. */
#ifndef LLMEM_PLAN_H
#define LLMEM_PLAN_H

#include <stdint.h>

#include "model.h"
#include "tensors.h"
#include "train.h"

struct model_plan {
    struct model_spec spec;
    struct tensor_list tensors;
    int64_t params;              /* all parameters */
    int64_t embed_p;             /* input token embedding (LLMem embed_p) */
    int64_t head_p;              /* separate lm_head weight; 0 when tied */
    int64_t other_p;             /* all but embed_p and head_p (LLMem other_p) */
    int64_t emb_modules;         /* nn.Embedding modules: token (+ learned positions) */
    int64_t embedding_w;         /* weights of Embedding modules (LLMem's t = E) */
    int64_t linear_w;            /* weights of Linear modules, lm_head included (t = L) */
    int64_t vector_p;            /* norm weights and all biases */
    int64_t role_w[ROLE_COUNT];  /* weight elements per role, all layers */
    int64_t lora_io[ROLE_COUNT]; /* sum of (in + out) over the Linear weights of a role */
    int64_t lora_in[ROLE_COUNT]; /* sum of in-features over the Linear weights of a role */
    int64_t layer_p;             /* parameters of one transformer block (the largest) */
    int64_t layer_linear_w;      /* Linear weights of one block (the largest) */
    int64_t max_linear_w;        /* largest Linear weight of a block (dequantization buffer) */
    int64_t block_rows;          /* Linear weights of the blocks: sum of rows (int8 scales) */
    int64_t chunk_searched;      /* Gemini chunk size (elements), 0 until plan_chunk() */
    /* Mixture of experts: what one token passes through. Equal to role_w and lora_io for a
     * dense model; a routed expert's weights count experts_per_tok / experts of theirs. */
    double role_active[ROLE_COUNT];
    double lora_io_active[ROLE_COUNT];
    double lora_in_active[ROLE_COUNT];   /* in-features a token passes, all blocks */
    /* In-features of the 2nd, 3rd member of a fused Linear (q/k/v in one qkv_proj, gate/up
     * in one gate_up_proj), all blocks: one PEFT adapter on the fused module reads its
     * input once. */
    int64_t lora_shared_in[ROLE_COUNT];
    int64_t lora_shared_mods[ROLE_COUNT];
    double lora_mods_active[ROLE_COUNT]; /* Linear modules a token passes, all blocks */
    int64_t role_expert_w[ROLE_COUNT]; /* routed experts' weights per role, all layers */
    int64_t lora_io_expert[ROLE_COUNT];/* routed experts' share of lora_io */
    /* MLP width a token passes through, averaged over the blocks: intermediate for a dense
     * model; a MoE block's experts_per_tok x moe_intermediate + the shared MLP */
    double inter_active;
    int64_t expert_p;            /* routed experts' parameters, all layers (0: dense) */
    int64_t layer_expert_p;      /* routed experts' parameters of one MoE block */
    int64_t moe_layers;          /* blocks with a MoE MLP */
};

/* Builds the plan; returns 0, or -1 when memory runs out. */
int plan_init(struct model_plan *p, const struct model_spec *m);
void plan_free(struct model_plan *p);

/* Gemini's chunk size for the model (searched on first use, then cached). Not thread
 * safe on first use: call it before a parallel region. */
int64_t plan_chunk(struct model_plan *p);

/* LoRA adapter parameters for rank r on the target roles: r * (in + out) per matrix. */
int64_t plan_lora_params(const struct model_plan *p, uint32_t targets, int32_t r);
/* Parameters a token passes through (a MoE model's "active" parameters: every expert
 * counted experts_per_tok / experts; all of them for a dense model). */
double plan_active_params(const struct model_plan *p);

/* Elements of the token embedding on one TP rank (train_embed_tp: HF stacks keep it whole). */
double plan_embed_rank(const struct model_plan *p, const struct train_config *c);
/* Parameters one TP rank holds: the matrices split over the TP group, the embedding as
 * train_embed_tp says (the norms and biases counted split too, as the speed model has). */
double plan_rank_params(const struct model_plan *p, const struct train_config *c);
/* Elements of the lm_head on one TP rank: an untied head split over the TP group (colwise),
 * a tied one the embedding's. */
double plan_head_rank(const struct model_plan *p, const struct train_config *c);

/* The LoRA targets as configuration c applies them. PEFT wraps whole nn.Linear modules:
 * on a model whose HF code fuses q/k/v (qkv_proj, query_key_value, c_attn) or gate/up
 * (Phi-3's gate_up_proj), naming any member adapts the fused module, so the targets grow
 * to the whole group (`q+v` on Phi-3 is qkv_proj). litgpt's fused qkv keeps one adapter
 * per enabled part; torchtune's models split q/k/v. */
uint32_t plan_lora_targets(const struct model_plan *p, const struct train_config *c);
/* Whether c's adapters on a fused module are one PEFT adapter (reading the input once). */
bool plan_peft_fused(const struct train_config *c);
/* LoRA adapter parameters of configuration c: r x (in + out) per adapted module, one
 * adapter per fused module under PEFT. */
int64_t plan_lora_params_cfg(const struct model_plan *p, const struct train_config *c);

/* The routed experts' share of it (what expert parallelism divides). */
int64_t plan_lora_expert_params(const struct model_plan *p, uint32_t targets, int32_t r);

/* The trained parameters of c as an optimizer holds them, one tensor at a time: full
 * fine-tuning trains every tensor, LoRA an lora_A (r x in) and an lora_B (out x r) per
 * adapted module (one pair per fused module under PEFT). Matrices count 1/tp of their
 * elements, every tensor 1/shard (FSDP / ZeRO-3). A MoE model's experts are all counted
 * (expert parallelism's share is not taken).
 * @return in *below[i] the elements of the tensors with fewer than limit[i] elements
 *         (i < 2), in *largest the elements of the largest tensor. */
void plan_trained_tensors(const struct model_plan *p, const struct train_config *c, double shard,
                          const double limit[2], double below[2], double *largest);

#endif
