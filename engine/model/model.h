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
    int64_t published_params; /* total parameters as published; 0 when unknown */
};

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
