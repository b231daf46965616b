/* steptrace.c: the ops and the bookkeeping both whole-step op lists share (steptrace.h). */
#include "steptrace.h"

#include <stdlib.h>
#include <string.h>

/* apply_rotary_pos_emb for q (w = hq) or k: `q * cos` A, rotate_half's `-x2` and cat, the
 * product with sin, the sum E (kept); the inputs and partial products freed. */
void trace_rope_fwd(const struct ctx *c, int in, int e, uint64_t w)
{
    const uint64_t ew = c->sh->ew;
    la(c, S_TMP1, ew * w);
    la(c, S_TMP2, ew * w / 2), la(c, S_TMP3, ew * w), lf(c, S_TMP2);
    la(c, S_TMP2, ew * w), lf(c, S_TMP3);
    la(c, e, ew * w), lf(c, S_TMP1), lf(c, S_TMP2), lf(c, in);
}

/* The attention between RoPE and o_proj's input, from QE, KE and V: repeat_kv's copies
 * (which the attention saves; the unrepeated K and V die with the attention's call), then
 * SDPA (its output and fp32 logsumexp saved), or eager attention
 * (transformers eager_attention_forward @00227283: q @ k^T, * scaling, + the causal mask,
 * softmax(dtype=float32) saved, .to(q.dtype) saved by @ v; dropout 0 returns its input,
 * aten/src/ATen/native/Dropout.cpp _dropout_impl), and eager's transposed contiguous copy. */
void trace_attn_fwd(const struct ctx *c)
{
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t ew = sh->ew, hq = sh->hq, hs = sh->heads * c->t->seq;
    const int k = sh->kv_repeat ? S_KR : S_KE, v = sh->kv_repeat ? S_VR : S_V;
    if (sh->kv_repeat) {
        la(c, S_KR, ew * hq), la(c, S_VR, ew * hq);
        if (!sh->kept) /* kept: the cache's copies replaced them already */
            lf(c, S_KE), lf(c, S_V);
    }
    if (sh->eager) {
        la(c, S_TMP1, ew * hs), la(c, S_TMP2, ew * hs), lf(c, S_TMP1);
        la(c, S_TMP1, ew * hs), lf(c, S_TMP2);
        la(c, S_P32, 4 * hs), lf(c, S_TMP1);
        la(c, S_P16, ew * hs), saved(c, S_P32);
        la(c, S_AO, ew * hq), saved(c, S_P16);
    } else {
        la(c, S_AO, ew * hq), la(c, S_LSE, 4 * sh->heads), saved(c, S_LSE);
    }
    saved(c, S_QE), saved(c, k), saved(c, v);
    if (sh->eager) { /* attn_output.transpose(1, 2).contiguous(), a copy; @ v's output dies */
        la(c, S_AOC, ew * hq);
        lf(c, S_AO);
    } /* SDPA: that contiguous() is a view of the output SDPA saves (trace_o_input_done) */
}

void trace_o_input_done(const struct ctx *c, bool kept)
{
    if (!c->sh->eager)
        saved(c, S_AO); /* the view's base: SDPA keeps it, but under checkpointing it dies now */
    else if (kept)
        saved(c, S_AOC);
    else
        lf(c, S_AOC);
}

/* Its backward, from the gradient of the attention's output in G_GB (freed): q's gradient
 * in G_GA, k's in G_GC and v's in G_GF (repeated widths), the saved tensors released. */
void trace_attn_bwd(const struct ctx *c)
{
    struct tracer *t = c->t;
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t n = c->tok, ew = sh->ew, hq = sh->hq, hs = sh->heads * t->seq;
    const uint64_t kvw = sh->kv_repeat ? hq : sh->hkv;
    const int k = sh->kv_repeat ? S_KR : S_KE, v = sh->kv_repeat ? S_VR : S_V;
    const uint32_t ga = id_glob(t, G_GA), gb = id_glob(t, G_GB), gc = id_glob(t, G_GC);
    const uint32_t s1 = id_glob(t, G_S1), s2 = id_glob(t, G_S2), gf = id_glob(t, G_GF);
    if (sh->eager) {
        ta(t, s1, n * ew * hs), ta(t, gf, n * ew * kvw), tf(t, gb), lf(c, S_P16); /* @ v */
        ta(t, s2, n * 4 * hs), tf(t, s1);               /* .to(q.dtype) */
        ta(t, s1, n * 4 * hs), tf(t, s2), lf(c, S_P32); /* softmax */
        ta(t, s2, n * ew * hs), tf(t, s1);              /* its upcast */
        ta(t, s1, n * ew * hs), tf(t, s2);              /* * scaling */
        ta(t, ga, n * ew * hq), ta(t, gc, n * ew * kvw), tf(t, s1);             /* q @ k^T */
    } else {
        ta(t, ga, n * ew * hq), ta(t, gc, n * ew * kvw), ta(t, gf, n * ew * kvw), tf(t, gb);
        lf(c, S_AO), lf(c, S_LSE);
    }
    lf(c, S_QE);
    if (sh->kv_repeat || !sh->kept) /* kept: the cache holds what SDPA saved */
        lf(c, k), lf(c, v);
}

void trace_loss_ops(struct tracer *t, const struct lp_ops *lp, size_t from, size_t to, uint64_t nv,
                    uint32_t outputs)
{
    for (size_t i = from; i < to && i < lp->n; i++) {
        const struct lp_op *o = &lp->op[i];
        const uint32_t id = (int)o->slot == lp->outputs_slot ? outputs : id_glob(t, G_LP + o->slot);
        if (i == lp->grad_free)
            t->head_grad = id;
        else if (o->alloc)
            ta(t, id, nv * o->units / LOSSPATH_UNIT);
        else if (!(i == lp->n - 1 && lp->outputs_slot >= 0))
            tf(t, id);
    }
}

/* optimizer.zero_grad() (set_to_none): every gradient of the last step dies (FSDP2: the
 * reduce-scatter outputs the sharded gradients are views of, in their stream's pool). */
void trace_zero_grad(struct tracer *t)
{
    for (size_t i = 0; i < t->np; i++) {
        if (t->has_grad[i] == GRAD_LOCAL)
            tf(t, id_param(t, K_GRAD, i));
        t->has_grad[i] = GRAD_NONE;
    }
    if (t->unit)
        fsdp_zero_grad(t);
}

void trace_note_peak(struct tracer *t)
{
    const uint64_t a = allocsim_get_stats(&t->st)->allocated + allocsim_get_stats(&t->rs)->allocated +
                       (t->ag_blocks ? allocsim_get_stats(&t->ag)->allocated : 0);
    if (a > t->peak_both)
        t->peak_both = a;
}

/* Frees what a checkpointed layer's forward does not keep: everything but its output (the
 * next layer's input, which the next checkpoint's closure holds). */
void trace_ckpt_drop(struct tracer *t, int32_t l)
{
    for (int s = 0; s < NSLOT; s++)
        if (s != S_OUT && t->live[id_slot(t, l, s)])
            tf(t, id_slot(t, l, s));
}

/* The optimizer's step (stepreplay_opt): AdamW's states at the first step, zeros_like each
 * parameter in order (_init_group); foreach, one sqrt(exp_avg_sq) a parameter, all
 * allocated before any is freed. */
void trace_optimizer_step(struct tracer *t, const struct stepreplay_shape *sh, bool *have_states)
{
    const uint64_t wb = wbytes(sh);
    for (size_t i = 0; i < t->np && !*have_states && sh->opt != STEPREPLAY_PLAIN; i++)
        ta(t, id_param(t, K_AVG, i), held_numel(sh, i) * wb),
            ta(t, id_param(t, K_AVG_SQ, i), held_numel(sh, i) * wb);
    *have_states = true;
    if (sh->opt != STEPREPLAY_FOREACH)
        return;
    for (size_t i = 0; i < t->np; i++)
        ta(t, id_param(t, K_SQRT, i), held_numel(sh, i) * wb);
    for (size_t i = 0; i < t->np; i++)
        tf(t, id_param(t, K_SQRT, i));
}

/* Parameter indices per role: the embedding, lm_head (the embedding when tied), and each
 * block's q, k, v, o, gate, up, down weights (biases and norms are not looked up). */
static int find_roles(const struct stepreplay_shape *sh, struct roles *r)
{
    const struct tensor_list *p = sh->params;
    r->layer = calloc((size_t)sh->layers * ROLE_COUNT, sizeof *r->layer);
    if (!r->layer)
        return -1;
    r->embed = r->head = 0;
    bool head = false;
    for (size_t i = 0; i < p->n; i++) {
        const struct tensor *x = &p->t[i];
        if (x->bias)
            continue;
        if (x->role == ROLE_EMBED)
            r->embed = i;
        else if (x->role == ROLE_LM_HEAD)
            r->head = i, head = true;
        else if (x->layer >= 0 && x->layer < sh->layers)
            r->layer[(size_t)x->layer * ROLE_COUNT + x->role] = i;
    }
    if (!head)
        r->head = r->embed;
    return 0;
}

/* The tracer's memory and an empty allocator; -1 when memory runs out. */
int trace_open(struct tracer *t, struct roles *r, const struct stepreplay_shape *sh)
{
    memset(t, 0, sizeof *t);
    memset(r, 0, sizeof *r);
    t->np = (uint32_t)sh->params->n;
    t->layers = sh->layers;
    t->n_ids = id_unit(t, U_COUNT, 0);
    const size_t n_blocks = 8 * (size_t)t->n_ids + 4096;
    t->h = calloc(t->n_ids, sizeof *t->h);
    t->live = calloc(t->n_ids, 1);
    t->has_grad = calloc(t->np ? t->np : 1, 1);
    t->blocks = calloc(n_blocks, sizeof *t->blocks);
    const allocsim_config cfg = {.expandable = sh->expandable};
    if (!t->h || !t->live || !t->has_grad || !t->blocks || find_roles(sh, r) ||
        allocsim_init(&t->st, &cfg, t->blocks, n_blocks) != ALLOCSIM_OK)
        return -1;
    return sh->shards > 1 ? fsdp_open(t, sh, &cfg) : 0;
}

void trace_close(struct tracer *t, struct roles *r)
{
    free(r->layer), free(t->blocks), free(t->has_grad), free(t->live), free(t->h);
    free(t->rs_blocks), free(t->ag_blocks), free(t->unit);
}
