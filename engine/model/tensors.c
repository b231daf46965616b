/* tensors.c: a model's parameter tensors, in HF registration order. */
#include "tensors.h"

#include <stdlib.h>
#include <string.h>

static const char *const role_names[ROLE_COUNT] = {
    "embed", "pos_embed", "proj", "q", "k", "v", "o", "gate", "up", "down", "norm", "lm_head",
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
    int failed;
};

static void push(struct builder *b, enum tensor_role role, int32_t layer, int32_t fuse,
                 bool bias, int64_t rows, int64_t cols)
{
    if (b->failed)
        return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        struct tensor *t = realloc(b->t, cap * sizeof *t);
        if (!t) {
            b->failed = 1;
            return;
        }
        b->t = t;
        b->cap = cap;
    }
    b->t[b->n++] = (struct tensor){role, layer, fuse, bias, rows, cols};
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

static void block(struct builder *b, const struct model_spec *m, int32_t layer)
{
    const int64_t h = m->hidden;
    const int64_t q_out = m->heads * m->head_dim, kv_out = m->kv_heads * m->head_dim;
    int32_t qkv = m->fused_qkv ? ++b->next_fuse : 0;
    int32_t gu = m->fused_gate_up ? ++b->next_fuse : 0;

    norm(b, m, layer);
    linear(b, ROLE_Q, layer, qkv, h, q_out, m->qkv_bias);
    linear(b, ROLE_K, layer, qkv, h, kv_out, m->qkv_bias);
    linear(b, ROLE_V, layer, qkv, h, kv_out, m->qkv_bias);
    linear(b, ROLE_O, layer, 0, q_out, h, m->o_bias);
    for (int i = 1; i < m->norms_per_layer; i++)
        norm(b, m, layer);
    if (m->mlp == MLP_GATED)
        linear(b, ROLE_GATE, layer, gu, h, m->intermediate, m->mlp_bias);
    linear(b, ROLE_UP, layer, gu, h, m->intermediate, m->mlp_bias);
    linear(b, ROLE_DOWN, layer, 0, m->intermediate, h, m->mlp_bias);
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
