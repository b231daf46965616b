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
};

#define LN NORM_LAYERNORM
#define RMS NORM_RMSNORM
static const struct family families[] = {
    /* type        norm mlp        pos          n  off tied qkvb ob   mlpb headb embn fqkv fgu  lm32 */
    {"opt",        LN,  MLP_PLAIN, POS_LEARNED, 2, 2,  1,   1,   1,   1,   0,    0,   0,   0,   0},
    {"bloom",      LN,  MLP_PLAIN, POS_ALIBI,   2, 0,  1,   1,   1,   1,   0,    1,   1,   0,   0},
    {"codegen",    LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  0,   0,   0,   1,   1,    0,   1,   0,   1},
    {"biogpt",     LN,  MLP_PLAIN, POS_LEARNED, 2, 2,  1,   1,   1,   1,   0,    0,   0,   0,   0},
    {"gpt_bigcode",LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   1,   1,   1,   0,    0,   1,   0,   0},
    {"gpt_neo",    LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   0,   1,   1,   0,    0,   0,   0,   1},
    {"gpt2",       LN,  MLP_PLAIN, POS_LEARNED, 2, 0,  1,   1,   1,   1,   0,    0,   1,   0,   0},
    {"gpt_neox",   LN,  MLP_PLAIN, POS_ROTARY,  2, 0,  0,   1,   1,   1,   0,    0,   1,   0,   0},
    {"llama",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0},
    {"mistral",    RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0},
    {"qwen2",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   1,   0,   0,   0,    0,   0,   0,   0},
    /* Qwen v1 remote code (modeling_qwen.py, copy at modelscope/ms-swift@cb89d919 and the
     * Qwen-7B-Chat hub mirror undefdev/Qwen-7B-Chat@04df5dd5): QWenBlock = ln_1 RMSNorm,
     * c_attn = nn.Linear(hidden, 3 * projection) with the default bias (q, k, v fused, bias
     * on), c_proj without bias (bias=not no_bias, no_bias True), ln_2 RMSNorm, QWenMLP
     * a1 * silu(a2) with w1 = up, w2 = gate, c_proj = down; rotary; lm_head without bias,
     * logits left in the compute dtype (CrossEntropyLoss on lm_logits directly). */
    {"qwen",       RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   1,   0,   0,   0,    0,   1,   0,   0},
    {"gemma",      RMS, MLP_GATED, POS_ROTARY,  2, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0},
    {"gemma2",     RMS, MLP_GATED, POS_ROTARY,  4, 0,  1,   0,   0,   0,   0,    0,   0,   0,   0},
    {"phi",        LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  0,   1,   1,   1,   1,    0,   0,   0,   0},
    {"phi3",       RMS, MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   1,   1,   0},
    {"falcon",     LN,  MLP_PLAIN, POS_ROTARY,  1, 0,  1,   0,   0,   0,   0,    0,   1,   0,   0},
    {"stablelm",   LN,  MLP_GATED, POS_ROTARY,  2, 0,  0,   0,   0,   0,   0,    0,   0,   0,   0},
    /* modeling_mpt.py: fused Wqkv, ALiBi, tied lm_head; no_bias=True (MptConfig default)
     * drops every bias, the LayerNorms' too, which the tensor model keeps (2*hidden a norm). */
    {"mpt",        LN,  MLP_PLAIN, POS_ALIBI,   2, 0,  1,   0,   0,   0,   0,    0,   1,   0,   0},
};
#undef LN
#undef RMS

const char *const model_supported_types[] = {
    "opt", "bloom", "codegen", "biogpt", "gpt_bigcode", "gpt_neo", "gpt2", "gpt_neox", "llama",
    "mistral", "qwen2", "qwen", "gemma", "gemma2", "phi", "phi3", "falcon", "stablelm", "mpt", NULL,
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
        return true;
    }
    return false;
}

/* 2^24 per dimension and 2^40 parameters keep every byte count the model forms (at most
 * 16 bytes per parameter, or b*s*v*4 with b, s <= 2^20) far below 2^63. */
#define DIM_MAX (INT64_C(1) << 24)

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
    /* parameters: roughly layers * 16 * hidden^2 must stay below 2^40 */
    double p = (double)m->layers * (4.0 * (double)m->hidden * (double)(m->heads * m->head_dim) +
                                    3.0 * (double)m->hidden * (double)m->intermediate) +
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
