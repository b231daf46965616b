/* model.c: family defaults per HF model_type, consistency checks, parameter count. */
#include "model.h"

#include <stdio.h>
#include <string.h>

#include "tensors.h"

/* What the HF modelling code of each model_type fixes regardless of config.json.
 * Sources: transformers modeling_<type>.py (v4.29 for the LLMem families, v4.45+ for the
 * rest). Biases, fusions and the logits upcast are properties of the code, not the
 * checkpoint; a config key that overrides one is read in hf_config.c. */
struct family {
    const char *type;
    enum norm_kind norm;
    enum mlp_kind mlp;
    enum pos_kind pos;
    int norms_per_layer;
    int64_t pos_offset;
    bool tied, qkv_bias, o_bias, mlp_bias, lm_head_bias, emb_norm, fused_qkv, fused_gate_up;
    bool logits_fp32;
    enum qk_norm_kind qk;
};

#define LN NORM_LAYERNORM
#define RMS NORM_RMSNORM
static const struct family families[] = {
    /* type        norm mlp        pos          n  off tied qkvb ob   mlpb headb embn fqkv fgu  lm32 qk */
    {"opt",        LN,  MLP_PLAIN, POS_LEARNED, 2, 2,  1,   1,   1,   1,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"bloom",      LN,  MLP_PLAIN, POS_ALIBI,   2, 0,  1,   1,   1,   1,   0,    1,   1,   0,   0, QK_NORM_NONE},
    {"codegen",    LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  0,   0,   0,   1,   1,    0,   1,   0,   1, QK_NORM_NONE},
    {"biogpt",     LN,  MLP_PLAIN, POS_LEARNED, 2, 2,  1,   1,   1,   1,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"gpt_bigcode",LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   1,   1,   1,   0,    0,   1,   0,   0, QK_NORM_NONE},
    {"gpt_neo",    LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   0,   1,   1,   0,    0,   0,   0,   1, QK_NORM_NONE},
    {"gpt2",       LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   1,   1,   1,   0,    0,   1,   0,   0, QK_NORM_NONE},
    {"gpt_neox",   LN,  MLP_PLAIN, POS_ROTARY,  2, 0,  0,   1,   1,   1,   0,    0,   1,   0,   0, QK_NORM_NONE},
    {"llama",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"mistral",    RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"qwen2",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   1,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    /* Qwen v1 remote code (modeling_qwen.py, copy at modelscope/ms-swift@cb89d919 and the
     * Qwen-7B-Chat hub mirror undefdev/Qwen-7B-Chat@04df5dd5): QWenBlock = ln_1 RMSNorm,
     * c_attn = nn.Linear(hidden, 3 * projection) with the default bias (q, k, v fused, bias
     * on), c_proj without bias (bias=not no_bias, no_bias True), ln_2 RMSNorm, QWenMLP
     * a1 * silu(a2) with w1 = up, w2 = gate, c_proj = down; rotary; lm_head without bias,
     * logits left in the compute dtype (CrossEntropyLoss on lm_logits directly). */
    {"qwen",       RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   1,   0,   0,   0,    0,   1,   0,   0, QK_NORM_NONE},
    {"gemma",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"gemma2",     RMS, MLP_GATED, POS_ROTARY,  4, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"phi",        LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  0,   1,   1,   1,   1,    0,   0,   0,   0, QK_NORM_NONE},
    {"phi3",       RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   1,   1,   0, QK_NORM_NONE},
    {"falcon",     LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  1,   0,   0,   0,   0,    0,   1,   0,   0, QK_NORM_NONE},
    {"stablelm",   LN,  MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    /* modeling_mpt.py: fused Wqkv, ALiBi, tied lm_head; no_bias=True (MptConfig default)
     * drops every bias, the LayerNorms' too, which the tensor model keeps (2*hidden a norm). */
    {"mpt",        LN,  MLP_PLAIN, POS_ALIBI,   2, 0,  1,   0,   0,   0,   0,    0,   1,   0,   0, QK_NORM_NONE},
    /* Qwen3Attention (modeling_qwen3.py): q_norm, k_norm = Qwen3RMSNorm(head_dim), no bias
     * unless attention_bias; Qwen3Config ties by default only through the file's key. */
    {"qwen3",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_HEAD},
    /* Gemma3DecoderLayer: input, post_attention, pre_feedforward, post_feedforward norms;
     * Gemma3Attention: q_norm, k_norm = Gemma3RMSNorm(head_dim); lm_head tied. "gemma3" is
     * Gemma3ForConditionalGeneration's config: its text_config is read (hf_config.c). */
    {"gemma3_text",RMS, MLP_GATED, POS_ROTARY,  4, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_HEAD},
    {"gemma3",     RMS, MLP_GATED, POS_ROTARY,  4, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_HEAD},
    /* Olmo2DecoderLayer: post_attention_layernorm and post_feedforward_layernorm (no input
     * norm); Olmo2Attention: q_norm = RMSNorm(heads * head_dim), k_norm = RMSNorm(kv_heads *
     * head_dim). */
    {"olmo2",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_PROJ},
    /* MoE families: the attention of their dense relative; the MLP from the MoE fields. */
    {"mixtral",    RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"qwen2_moe",  RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   1,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"qwen3_moe",  RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_HEAD},
    {"deepseek_v2",RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
    {"deepseek_v3",RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0, QK_NORM_NONE},
};
#undef LN
#undef RMS

const char *const model_supported_types[] = {
    "opt", "bloom", "codegen", "biogpt", "gpt_bigcode", "gpt_neo", "gpt2", "gpt_neox", "llama",
    "mistral", "qwen2", "qwen", "gemma", "gemma2", "phi", "phi3", "falcon", "stablelm", "mpt", "qwen3", "gemma3_text", "gemma3", "olmo2", "mixtral", "qwen2_moe",
    "qwen3_moe", "deepseek_v2", "deepseek_v3", NULL,
};

bool model_family_defaults(const char *model_type, struct model_spec *m)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const struct family *f = &families[i];
        if (strcmp(f->type, model_type) != 0)
            continue;
        snprintf(m->model_type, sizeof m->model_type, "%s", f->type);
        m->norm = f->norm;
        m->mlp = f->mlp;
        m->pos = f->pos;
        m->norms_per_layer = f->norms_per_layer;
        m->pos_offset = f->pos_offset;
        m->tied = f->tied;
        m->qkv_bias = f->qkv_bias;
        m->o_bias = f->o_bias;
        m->mlp_bias = f->mlp_bias;
        m->lm_head_bias = f->lm_head_bias;
        m->emb_norm = f->emb_norm;
        m->fused_qkv = f->fused_qkv;
        m->fused_gate_up = f->fused_gate_up;
        m->logits_fp32 = f->logits_fp32;
        /* Gemma2Config's attn_logit_softcapping defaults to 50.0 (transformers
         * models/gemma2/configuration_gemma2.py; litgpt config.py's Gemma-2 entries at
         * 2b195c7f and 00af8b0d set attention_logit_softcapping=50.0); Gemma 3 dropped it
         * (Gemma3TextConfig: None). A config.json key overrides it (hf_config.c). */
        m->attn_softcap = strcmp(f->type, "gemma2") == 0;
        m->qk_norm = f->qk;
        return true;
    }
    return false;
}

/* 2^24 per dimension and 2^40 parameters keep every byte count the model forms (at most
 * 16 bytes per parameter, or b*s*v*4 with b, s <= 2^20) far below 2^63. */
#define DIM_MAX (INT64_C(1) << 24)

/* The MoE and latent-attention fields: each in range and coherent with the others. */
static const char *moe_check(const struct model_spec *m)
{
    if (m->experts < 0 || m->experts > 4096)
        return "experts";
    if (m->experts > 0) {
        if (m->experts_per_tok < 1 || m->experts_per_tok > m->experts)
            return "experts_per_tok";
        if (m->moe_intermediate < 1 || m->moe_intermediate > DIM_MAX)
            return "moe_intermediate";
        if (m->dense_layers < 0 || m->dense_layers > m->layers)
            return "dense_layers";
        if (m->mlp != MLP_GATED)
            return "mlp";
    } else if (m->experts_per_tok || m->moe_intermediate || m->shared_intermediate ||
               m->dense_layers || m->shared_gate) {
        return "experts";
    }
    if (m->shared_intermediate < 0 || m->shared_intermediate > DIM_MAX)
        return "shared_intermediate";
    if (m->kv_lora_rank < 0 || m->kv_lora_rank > DIM_MAX || m->q_lora_rank < 0 ||
        m->q_lora_rank > DIM_MAX)
        return "kv_lora_rank";
    if (m->kv_lora_rank > 0 &&
        (m->qk_rope_dim < 1 || m->qk_rope_dim >= m->head_dim || m->v_head_dim < 1 ||
         m->v_head_dim > DIM_MAX || m->kv_heads != m->heads || m->fused_qkv))
        return "kv_lora_rank";
    if (m->kv_lora_rank == 0 && (m->q_lora_rank || m->qk_rope_dim || m->v_head_dim))
        return "kv_lora_rank";
    return NULL;
}

const char *model_check(const struct model_spec *m)
{
    struct {
        const char *name;
        int64_t v;
    } dims[] = {
        {"layers", m->layers},   {"hidden", m->hidden},       {"heads", m->heads},
        {"kv_heads", m->kv_heads}, {"head_dim", m->head_dim}, {"intermediate", m->intermediate},
        {"vocab", m->vocab},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v <= 0 || dims[i].v > DIM_MAX)
            return dims[i].name;
    if (m->max_pos < 0 || m->max_pos > DIM_MAX)
        return "max_pos";
    if (m->pos == POS_LEARNED && m->max_pos == 0)
        return "max_pos";
    if (m->pos_offset < 0 || m->pos_offset > 64)
        return "pos_offset";
    if (m->emb_dim < 0 || m->emb_dim > DIM_MAX)
        return "emb_dim";
    if (m->heads % m->kv_heads != 0)
        return "kv_heads";
    if (m->norms_per_layer < 1 || m->norms_per_layer > 8)
        return "norms_per_layer";
    if (m->layers > 4096)
        return "layers";
    const char *moe = moe_check(m);
    if (moe)
        return moe;
    /* parameters: roughly layers * 16 * hidden^2 must stay below 2^40 */
    double p = (double)m->layers * (4.0 * (double)m->hidden * (double)(m->heads * m->head_dim) +
                                    3.0 * (double)m->hidden * (double)m->intermediate +
                                    3.0 * (double)m->hidden * (double)m->moe_intermediate *
                                        (double)m->experts) +
               2.0 * (double)m->vocab * (double)m->hidden;
    if (p > 1099511627776.0)
        return "hidden";
    return NULL;
}

int64_t model_param_count(const struct model_spec *m)
{
    struct tensor_list l;
    if (tensors_build(m, &l) != 0)
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < l.n; i++)
        n += tensor_numel(&l.t[i]);
    tensors_free(&l);
    return n;
}
