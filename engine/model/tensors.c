/* tensors.c: a model's parameter tensors, in HF registration order. */
#include "tensors.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static const char *const role_names[ROLE_COUNT] = {
    "embed", "pos_embed", "proj", "q", "k", "v", "o", "gate", "up", "down", "norm", "lm_head",
    "router",
};

const char *tensor_role_name(enum tensor_role r)
{
    return (unsigned)r < ROLE_COUNT ? role_names[r] : "?";
}

bool tensor_is_matrix(const struct tensor *t)
{
    return !t->bias && t->role != ROLE_NORM;
}

struct builder {
    struct tensor *t;
    size_t n, cap;
    int32_t next_fuse;
    bool expert; /* tensors pushed now belong to a routed expert */
    int failed;
};

static void push(struct builder *b, enum tensor_role role, int32_t layer, int32_t fuse,
                 bool bias, int64_t rows, int64_t cols)
{
    if (b->failed)
        return;
    struct tensor *t = grow_array(b->t, &b->cap, b->n, sizeof *t, 64);
    if (!t) {
        b->failed = 1;
        return;
    }
    b->t = t;
    b->t[b->n++] = (struct tensor){role, layer, fuse, bias, rows, cols, b->expert};
}

/* A Linear(in -> out): weight [out, in] then, if present, bias [out]. */
static void linear(struct builder *b, enum tensor_role role, int32_t layer, int32_t fuse,
                   int64_t in, int64_t out, bool has_bias)
{
    push(b, role, layer, fuse, false, out, in);
    if (has_bias)
        push(b, role, layer, fuse, true, out, 1);
}

static void norm(struct builder *b, const struct model_spec *m, int32_t layer)
{
    push(b, ROLE_NORM, layer, 0, false, m->hidden, 1);
    if (m->norm == NORM_LAYERNORM)
        push(b, ROLE_NORM, layer, 0, true, m->hidden, 1);
}

static void vector(struct builder *b, int32_t layer, int64_t n)
{
    push(b, ROLE_NORM, layer, 0, false, n, 1);
}

/* Multi-head latent attention as DeepseekV2Attention registers it (transformers
 * models/deepseek_v2/modeling_deepseek_v2.py, the same in deepseek_v3): q_proj, or q_a_proj
 * (hidden -> q_lora_rank), q_a_layernorm and q_b_proj (-> heads * qk head); then
 * kv_a_proj_with_mqa (hidden -> kv_lora_rank + qk_rope_dim), kv_a_layernorm, kv_b_proj
 * (kv_lora_rank -> heads * (qk_nope + v_head_dim)) and o_proj (heads * v_head_dim ->
 * hidden). For LoRA targets q = q_proj / q_a_proj + q_b_proj, k = kv_a_proj_with_mqa,
 * v = kv_b_proj. */
static void mla(struct builder *b, const struct model_spec *m, int32_t layer)
{
    const int64_t h = m->hidden, nope = m->head_dim - m->qk_rope_dim;
    if (m->q_lora_rank) {
        linear(b, ROLE_Q, layer, 0, h, m->q_lora_rank, m->qkv_bias);
        vector(b, layer, m->q_lora_rank);
        linear(b, ROLE_Q, layer, 0, m->q_lora_rank, m->heads * m->head_dim, false);
    } else {
        linear(b, ROLE_Q, layer, 0, h, m->heads * m->head_dim, false);
    }
    linear(b, ROLE_K, layer, 0, h, m->kv_lora_rank + m->qk_rope_dim, m->qkv_bias);
    vector(b, layer, m->kv_lora_rank);
    linear(b, ROLE_V, layer, 0, m->kv_lora_rank, m->heads * (nope + m->v_head_dim), false);
    linear(b, ROLE_O, layer, 0, m->heads * m->v_head_dim, h, m->o_bias);
}

static void attention(struct builder *b, const struct model_spec *m, int32_t layer)
{
    const int64_t h = m->hidden;
    const int64_t q_out = m->heads * m->head_dim, kv_out = m->kv_heads * m->head_dim;
    int32_t qkv = m->fused_qkv ? ++b->next_fuse : 0;
    if (m->kv_lora_rank) {
        mla(b, m, layer);
        return;
    }
    linear(b, ROLE_Q, layer, qkv, h, q_out, m->qkv_bias);
    linear(b, ROLE_K, layer, qkv, h, kv_out, m->qkv_bias);
    linear(b, ROLE_V, layer, qkv, h, kv_out, m->qkv_bias);
    linear(b, ROLE_O, layer, 0, q_out, h, m->o_bias);
    /* q_norm and k_norm, registered after o_proj (Qwen3Attention, Olmo2Attention,
     * Gemma3Attention) */
    if (m->qk_norm == QK_NORM_HEAD) {
        vector(b, layer, m->head_dim);
        vector(b, layer, m->head_dim);
    } else if (m->qk_norm == QK_NORM_PROJ) {
        vector(b, layer, q_out);
        vector(b, layer, kv_out);
    }
}

static void mlp(struct builder *b, const struct model_spec *m, int32_t layer, int64_t width,
                bool fused_gate_up)
{
    const int64_t h = m->hidden;
    int32_t gu = fused_gate_up ? ++b->next_fuse : 0;
    if (m->mlp == MLP_GATED)
        linear(b, ROLE_GATE, layer, gu, h, width, m->mlp_bias);
    linear(b, ROLE_UP, layer, gu, h, width, m->mlp_bias);
    linear(b, ROLE_DOWN, layer, 0, width, h, m->mlp_bias);
}

/* A MoE MLP: the router (MixtralSparseMoeBlock.gate, Qwen2MoeSparseMoeBlock.gate,
 * DeepseekV2MoE.gate: no bias), the routed experts, the shared MLP and, for Qwen2-MoE, its
 * sigmoid gate Linear(hidden, 1) (shared_expert_gate). */
static void moe(struct builder *b, const struct model_spec *m, int32_t layer)
{
    linear(b, ROLE_ROUTER, layer, 0, m->hidden, m->experts, false);
    b->expert = true;
    for (int64_t e = 0; e < m->experts; e++)
        mlp(b, m, layer, m->moe_intermediate, false);
    b->expert = false;
    if (m->shared_intermediate)
        mlp(b, m, layer, m->shared_intermediate, false);
    if (m->shared_gate)
        linear(b, ROLE_ROUTER, layer, 0, m->hidden, 1, false);
}

static void block(struct builder *b, const struct model_spec *m, int32_t layer)
{
    norm(b, m, layer);
    attention(b, m, layer);
    for (int i = 1; i < m->norms_per_layer; i++)
        norm(b, m, layer);
    if (model_layer_moe(m, layer))
        moe(b, m, layer);
    else
        mlp(b, m, layer, m->intermediate, m->fused_gate_up);
}

int tensors_build(const struct model_spec *m, struct tensor_list *out)
{
    struct builder b = {0};
    const int64_t e = m->emb_dim ? m->emb_dim : m->hidden;
    const bool proj = m->emb_dim && m->emb_dim != m->hidden;
    /* HF OPTDecoder registers project_out, project_in and the final norm before the layers */
    const bool opt_order = strcmp(m->model_type, "opt") == 0;

    push(&b, ROLE_EMBED, -1, 0, false, m->vocab, e);
    if (m->pos == POS_LEARNED)
        push(&b, ROLE_POS_EMBED, -1, 0, false, m->max_pos + m->pos_offset, m->hidden);
    if (proj && opt_order)
        linear(&b, ROLE_PROJ, -1, 0, m->hidden, e, false); /* project_out */
    if (proj) /* project_in; no bias */
        linear(&b, ROLE_PROJ, -1, 0, e, m->hidden, false);
    if (m->emb_norm)
        norm(&b, m, -1);
    if (opt_order)
        norm(&b, m, -1);
    for (int64_t l = 0; l < m->layers; l++)
        block(&b, m, (int32_t)l);
    if (!opt_order)
        norm(&b, m, -1);
    if (proj && !opt_order)
        linear(&b, ROLE_PROJ, -1, 0, m->hidden, e, false);
    if (!m->tied)
        linear(&b, ROLE_LM_HEAD, -1, 0, e, m->vocab, m->lm_head_bias);
    else if (m->lm_head_bias) /* a tied head can still own a bias */
        push(&b, ROLE_LM_HEAD, -1, 0, true, m->vocab, 1);

    if (b.failed) {
        free(b.t);
        *out = (struct tensor_list){0};
        return -1;
    }
    *out = (struct tensor_list){b.t, b.n};
    return 0;
}

void tensors_free(struct tensor_list *l)
{
    if (!l)
        return;
    free(l->t);
    *l = (struct tensor_list){0};
}
