/* model.h: the architecture of one decoder-only LLM, as the memory model needs it.
 *
 * A model_spec is plain data: it comes from a datasets/models.csv row (catalog.c) or a
 * HuggingFace config.json (hf_config.c). Family defaults for a HF model_type live in
 * model.c so both sources agree on what e.g. "bloom" means. */
#ifndef LLMEM_MODEL_H
#define LLMEM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODEL_NAME_MAX 160
#define MODEL_TYPE_MAX 32

enum mlp_kind { MLP_PLAIN, MLP_GATED };          /* up->act->down, or act(gate)*up->down */
enum norm_kind { NORM_LAYERNORM, NORM_RMSNORM }; /* LayerNorm has a bias, RMSNorm none */
enum pos_kind { POS_LEARNED, POS_ROTARY, POS_ALIBI };
/* RMSNorm on queries and keys before rotary: none; per head over head_dim, shared by the
 * heads (Qwen3, Gemma 3); over the whole projection, heads * head_dim (OLMo 2). */
enum qk_norm_kind { QK_NORM_NONE, QK_NORM_HEAD, QK_NORM_PROJ };

struct model_spec {
    char name[MODEL_NAME_MAX];       /* HF id, or the name a config.json gives */
    char model_type[MODEL_TYPE_MAX]; /* HF model_type, e.g. "llama" */
    int64_t layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, max_pos;
    int64_t pos_offset;  /* extra learned-position rows (OPT and BioGPT add 2) */
    int64_t emb_dim;     /* word-embedding width; differs from hidden only for OPT-350m */
    int norms_per_layer; /* 1: one shared pre-norm (Falcon-7B, CodeGen, Phi); 2 usual; 4 Gemma-2 */
    enum norm_kind norm;
    enum mlp_kind mlp;
    enum pos_kind pos;
    bool tied;         /* lm_head shares the input embedding */
    bool qkv_bias, o_bias, mlp_bias, lm_head_bias;
    bool emb_norm;     /* a norm right after the embedding (BLOOM) */
    bool fused_qkv;    /* q, k, v live in one parameter tensor */
    bool fused_gate_up;
    bool logits_fp32;  /* the modelling code upcasts logits to fp32 (LLMem's B = 4) */
    bool attn_softcap; /* attention scores pass tanh softcapping (Gemma 2: config.json's
                          attn_logit_softcapping, 50.0 by default) */
    int64_t published_params; /* total parameters as published; 0 when unknown */
    enum qk_norm_kind qk_norm;
    /* Mixture of experts (experts == 0: a dense model). A MoE layer replaces the MLP by a
     * router Linear(hidden, experts), `experts` gated MLPs of width moe_intermediate of
     * which each token uses experts_per_tok, and optionally an always-used shared MLP of
     * width shared_intermediate (DeepSeek: n_shared_experts * moe_intermediate; Qwen2-MoE:
     * shared_expert_intermediate_size, with a sigmoid gate Linear(hidden, 1)). The first
     * dense_layers blocks keep the dense MLP of width `intermediate` (DeepSeek
     * first_k_dense_replace). */
    int64_t experts, experts_per_tok, moe_intermediate, shared_intermediate, dense_layers;
    bool shared_gate;
    /* Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank == 0: none): q through
     * q_lora_rank (0: one q_proj), k and v from a kv_lora_rank latent plus a shared rotary
     * key of qk_rope_dim; head_dim is the query/key head (nope + rope), v_head_dim the value
     * head. kv_heads == heads. */
    int64_t q_lora_rank, kv_lora_rank, qk_rope_dim, v_head_dim;
};

static inline bool model_is_moe(const struct model_spec *m) { return m->experts > 0; }
/* Whether block `layer` has a MoE MLP. */
static inline bool model_layer_moe(const struct model_spec *m, int64_t layer)
{
    return m->experts > 0 && layer >= m->dense_layers;
}

/* Defaults of one HF model_type: what a config.json does not say but the modelling code
 * fixes (norm kind, biases, fusions, logits upcast). Returns false for an unsupported type. */
bool model_family_defaults(const char *model_type, struct model_spec *m);

/* Names of the supported model_types, NULL-terminated, for messages and tests. */
extern const char *const model_supported_types[];

/* Checks dimensions for consistency (positive, heads divide, kv divides heads, sizes that
 * keep every byte count below 2^62). Returns NULL when fine, else a static message naming
 * the bad field. */
const char *model_check(const struct model_spec *m);

/* Total parameter count from the tensor list (tensors.h). */
int64_t model_param_count(const struct model_spec *m);

#endif
