/* stepamp.c: the whole-step replay's op list for full fine-tuning under bf16 autocast over
 * fp32 weights (stepamp.h; HF Trainer bf16=True, or a loop in torch.autocast). The 16-bit
 * op list and the drivers are stepreplay.c's, the ops both share steptrace.c's.
 *
 * Sources: pytorch aten/src/ATen/autocast_mode.cpp cached_cast @001074d2 (a leaf fp32 weight that requires grad is cast once and cached until the outermost
 * autocast exits; any other fp32 input is cast on every call), autocast's op lists (linear,
 * matmul and SDPA run in bf16; mul, add, pow, rsqrt keep their inputs' promoted dtype),
 * transformers modeling_llama.py @00227283 (LlamaRMSNorm: `.to(torch.float32)` of an fp32
 * input is the input itself and `.to(input_dtype)` back to fp32 is too, so the residual
 * stream stays fp32 from the fp32 embedding on), torch/csrc/autograd/engine.cpp
 * validate_outputs (a gradient of another dtype than its input's is cast) and ToCopyBackward
 * (a bf16 cast's gradient is copied back to fp32 before AccumulateGrad steals it). */
#include "stepamp.h"

/* autocast's cast of weight pi, once a forward (cached). */
static void amp_cast(const struct ctx *c, size_t pi)
{
    const uint32_t id = id_param(c->t, K_CAST, pi);
    if (!c->t->live[id])
        ta(c->t, id, numel(c->sh, pi) * 2);
}

/* LlamaRMSNorm over the fp32 stream: pow (freed after mean), `hs * rsqrt` B (saved by the
 * trained weight's mul), the output N; the input itself is saved by pow and the mul. */
static void amp_norm_fwd(const struct ctx *c, int b, int n)
{
    const uint64_t h = c->sh->h;
    la(c, S_TMP1, 4 * h), lf(c, S_TMP1);
    la(c, b, 4 * h), la(c, n, 4 * h), saved(c, b);
}

/* A Linear of role r: the weight's cached cast, the input's cast when it is fp32 (saved by
 * the mm for the weight's gradient), the bf16 output. */
static void amp_linear_fwd(const struct ctx *c, const size_t *pi, enum tensor_role r, int out,
                           uint64_t w_in, uint64_t w_out, bool fp32_in)
{
    amp_cast(c, pi[r]);
    if (fp32_in)
        la(c, S_CI + (r - ROLE_Q), 2 * w_in);
    la(c, out, 2 * w_out);
    if (fp32_in)
        saved(c, S_CI + (r - ROLE_Q));
}

/* A decoder layer's forward over the fp32 stream `in_id` (saved by the first norm until its
 * backward). A recompute (checkpointing) stops at the last tensor the layer saves, down's
 * input: torch.utils.checkpoint's early stop (_StopRecomputationError). */
static void amp_block_fwd(const struct ctx *c, const size_t *pi, bool recompute)
{
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t h = sh->h, hq = sh->hq, hkv = sh->hkv, i = sh->inter;
    amp_norm_fwd(c, S_N1B, S_N1);
    amp_linear_fwd(c, pi, ROLE_Q, S_Q, h, hq, true);
    amp_linear_fwd(c, pi, ROLE_K, S_K, h, hkv, true);
    amp_linear_fwd(c, pi, ROLE_V, S_V, h, hkv, true);
    trace_rope_fwd(c, S_Q, S_QE, hq);
    trace_rope_fwd(c, S_K, S_KE, hkv);
    trace_attn_fwd(c);
    amp_linear_fwd(c, pi, ROLE_O, S_O, hq, h, false);
    trace_o_input_done(c, true);
    lf(c, S_N1); /* the attention's argument, saved by nothing */
    la(c, S_H1, 4 * h), lf(c, S_O); /* residual + attention output: fp32 */
    amp_norm_fwd(c, S_N2B, S_N2);
    amp_linear_fwd(c, pi, ROLE_GATE, S_G, h, i, true), la(c, S_ACT, 2 * i), saved(c, S_G);
    amp_linear_fwd(c, pi, ROLE_UP, S_U, h, i, true), la(c, S_PR, 2 * i);
    saved(c, S_ACT), saved(c, S_U);
    lf(c, S_N2);
    amp_cast(c, pi[ROLE_DOWN]);
    if (recompute)
        return;
    la(c, S_D, 2 * h), saved(c, S_PR);
    la(c, S_OUT, 4 * h), lf(c, S_D);
}

/* A trained weight's gradient: the mm's bf16 gradient, then its saved input cast and the
 * weight's cast are released (the node ran), the fp32 copy, AccumulateGrad. */
static void amp_wgrad(const struct ctx *c, size_t pi, int saved_in)
{
    struct tracer *t = c->t;
    const uint64_t n = numel(c->sh, pi);
    ta(t, id_glob(t, G_W16), 2 * n);
    tf(t, id_param(t, K_CAST, pi));
    if (saved_in >= 0)
        lf(c, saved_in);
    if (!t->has_grad[pi]) {
        ta(t, id_param(t, K_GRAD, pi), 4 * n);
        t->has_grad[pi] = GRAD_LOCAL;
    } else { /* accumulated in place; the new gradient dies */
        ta(t, id_glob(t, G_W32), 4 * n), tf(t, id_glob(t, G_W32));
    }
    tf(t, id_glob(t, G_W16));
}

/* A Linear's backward from the bf16 gradient in `g` (freed): its input gradient (bf16,
 * w_in wide) into `out`, then the weight's. */
static void amp_linear_bwd(const struct ctx *c, const size_t *pi, enum tensor_role r,
                           uint32_t g, uint32_t out, uint64_t w_in, int saved_in)
{
    ta(c->t, out, c->tok * 2 * w_in);
    amp_wgrad(c, pi[r], saved_in);
    tf(c->t, g);
}

/* The bf16 input gradient in `g` cast back to fp32 for the fp32 stream (ToCopyBackward),
 * into `out`. */
static void amp_up(const struct ctx *c, uint32_t g, uint32_t out)
{
    ta(c->t, out, c->tok * 4 * c->sh->h), tf(c->t, g);
}

/* A norm's backward from the fp32 gradient of its output in G_C2: B's gradient, the input's
 * (summed into the stream's gradient G_GX in place); B and the saved input die. */
static void amp_norm_bwd(const struct ctx *c, uint32_t b_id, uint32_t in_id)
{
    struct tracer *t = c->t;
    const uint64_t n4 = c->tok * 4 * c->sh->h;
    ta(t, id_glob(t, G_GD), n4), tf(t, id_glob(t, G_C2)), tf(t, b_id);
    ta(t, id_glob(t, G_GE), n4), tf(t, id_glob(t, G_GD));
    tf(t, in_id), tf(t, id_glob(t, G_GE));
}

static void amp_block_bwd(const struct ctx *c, const size_t *pi, uint32_t in_id)
{
    struct tracer *t = c->t;
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t n = c->tok, h = sh->h, hq = sh->hq, hkv = sh->hkv, i = sh->inter;
    const uint32_t ga = id_glob(t, G_GA), gb = id_glob(t, G_GB), gc = id_glob(t, G_GC);
    const uint32_t c1 = id_glob(t, G_C1), c2 = id_glob(t, G_C2), gd = id_glob(t, G_GD);
    /* MLP: down's output gradient cast to bf16 */
    ta(t, c1, n * 2 * h);
    amp_linear_bwd(c, pi, ROLE_DOWN, c1, ga, i, S_PR);
    ta(t, gb, n * 2 * i), ta(t, gc, n * 2 * i), tf(t, ga), lf(c, S_ACT), lf(c, S_U); /* mul */
    ta(t, ga, n * 2 * i), tf(t, gb), lf(c, S_G);                                       /* silu */
    amp_linear_bwd(c, pi, ROLE_UP, gc, gb, h, S_CI + (ROLE_UP - ROLE_Q));
    amp_up(c, gb, c2);
    amp_linear_bwd(c, pi, ROLE_GATE, ga, gb, h, S_CI + (ROLE_GATE - ROLE_Q));
    amp_up(c, gb, gd), tf(t, gd); /* summed into c2 */
    amp_norm_bwd(c, id_slot(t, c->l, S_N2B), id_slot(t, c->l, S_H1));
    /* attention: o_proj's output gradient cast to bf16 */
    ta(t, c1, n * 2 * h);
    amp_linear_bwd(c, pi, ROLE_O, c1, ga, hq, o_saved_slot(c));
    ta(t, gb, n * 2 * hq), tf(t, ga); /* the transpose's contiguous gradient */
    trace_attn_bwd(c);
    ta(t, gb, n * 2 * hq), tf(t, ga); /* RoPE backward of q */
    amp_linear_bwd(c, pi, ROLE_Q, gb, ga, h, S_CI + (ROLE_Q - ROLE_Q));
    amp_up(c, ga, c2);
    ta(t, gb, n * 2 * hkv), tf(t, gc); /* RoPE backward of k (after the group sum) */
    amp_linear_bwd(c, pi, ROLE_K, gb, gc, h, S_CI + (ROLE_K - ROLE_Q));
    amp_up(c, gc, gd), tf(t, gd);
    ta(t, gb, n * 2 * hkv), tf(t, id_glob(t, G_GF)); /* v's gradient after the group sum */
    amp_linear_bwd(c, pi, ROLE_V, gb, gc, h, S_CI + (ROLE_V - ROLE_Q));
    amp_up(c, gc, gd), tf(t, gd);
    amp_norm_bwd(c, id_slot(t, c->l, S_N1B), in_id);
}

/* The final norm, the lm_head and the loss path's events inside the model's forward (hf's:
 * losspath.c `hf_path`, the only path the autocast list runs): the norm's saved product
 * and output in fp32, the head weight's cast (saved by its mm, so the autocast exit leaves
 * it), the input's cast, then the bf16 logits, their fp32 upcast and log_softmax's saved
 * output, the upcast dying with the loss function; the norm's output dies as the forward
 * returns. */
static void amp_head_fwd(struct tracer *t, const struct stepreplay_shape *sh, size_t head, uint64_t tok,
                         const struct lp_ops *lp)
{
    const uint64_t h = sh->h;
    const struct ctx c0 = {t, sh, tok, 0, false};
    ta(t, id_glob(t, G_GA), tok * 4 * h), tf(t, id_glob(t, G_GA));
    ta(t, id_glob(t, G_FNB), tok * 4 * h), ta(t, id_glob(t, G_FN), tok * 4 * h);
    amp_cast(&c0, head);
    ta(t, id_glob(t, G_HC), tok * 2 * h);
    trace_loss_ops(t, lp, 0, lp->forward, tok * sh->vocab, UINT32_MAX); /* no kept outputs */
    tf(t, id_glob(t, G_FN));
}

/* After the autocast exit: the rest of the loss path, accelerate's fp32 copy of the logits
 * (HF Trainer under mixed precision) and the model's outputs dying with
 * Trainer.compute_loss returning the loss only, then the loss's backward; the lm_head's and
 * the final norm's: the stream's fp32 gradient G_GX. */
static void amp_head_bwd(struct tracer *t, const struct stepreplay_shape *sh, size_t head,
                         uint64_t tok, uint32_t x_id, const struct lp_ops *lp)
{
    const struct ctx c0 = {t, sh, tok, 0, false};
    trace_loss_ops(t, lp, lp->forward, lp->n, tok * sh->vocab, UINT32_MAX);
    ta(t, id_glob(t, G_GA), tok * 2 * sh->h);
    amp_wgrad(&c0, head, -1);
    tf(t, id_glob(t, G_HC)), tf(t, t->head_grad);
    amp_up(&c0, id_glob(t, G_GA), id_glob(t, G_C2));
    ta(t, id_glob(t, G_GD), tok * 4 * sh->h), tf(t, id_glob(t, G_C2)), tf(t, id_glob(t, G_FNB));
    ta(t, id_glob(t, G_GX), tok * 4 * sh->h), tf(t, id_glob(t, G_GD)), tf(t, x_id);
}

/* The stream's input of layer l: the embedding's fp32 output, or the layer before's. */
static uint32_t amp_layer_in(const struct tracer *t, int32_t l)
{
    return l ? id_slot(t, l - 1, S_OUT) : id_glob(t, G_X0);
}

void stepamp_step(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                     uint64_t tok, bool *have_states)
{
    ta(t, id_glob(t, G_X0), tok * 4 * sh->h);
    if (sh->eager) /* masking_utils' additive (b, 1, s, s) mask in bf16 */
        ta(t, id_glob(t, G_MASK), tok * 2 * t->seq);
    for (int32_t l = 0; l < sh->layers; l++) {
        const struct ctx c = {t, sh, tok, l, sh->ckpt};
        amp_block_fwd(&c, r->layer + (size_t)l * ROLE_COUNT, false);
        if (sh->ckpt)
            trace_ckpt_drop(t, l);
    }
    struct lp_ops lp;
    if (losspath_ops(sh->loss, sh->loss_class, 1, &lp) != 0) {
        t->fail = 1;
        return;
    }
    amp_head_fwd(t, sh, r->head, tok, &lp);
    if (sh->eager && !sh->ckpt)
        tf(t, id_glob(t, G_MASK));
    if (sh->ckpt) /* the outermost autocast exits: cached casts nothing saved die */
        for (size_t i = 0; i < t->np; i++)
            if (i != r->head && t->live[id_param(t, K_CAST, i)])
                tf(t, id_param(t, K_CAST, i));
    amp_head_bwd(t, sh, r->head, tok, amp_layer_in(t, sh->layers), &lp);
    for (int32_t l = sh->layers - 1; l >= 0; l--) {
        const struct ctx c = {t, sh, tok, l, false};
        const size_t *pi = r->layer + (size_t)l * ROLE_COUNT;
        if (sh->ckpt)
            amp_block_fwd(&c, pi, true);
        amp_block_bwd(&c, pi, amp_layer_in(t, l));
    }
    /* the embedding's fp32 gradient (embedding_dense_backward), then the norms' */
    if (t->has_grad[r->embed])
        ta(t, id_glob(t, G_W32), numel(sh, r->embed) * 4), tf(t, id_glob(t, G_W32));
    tf(t, id_glob(t, G_GX));
    if (sh->eager && sh->ckpt)
        tf(t, id_glob(t, G_MASK));
    for (size_t i = 0; i < t->np; i++)
        if (!t->has_grad[i])
            ta(t, id_param(t, K_GRAD, i), numel(sh, i) * 4), t->has_grad[i] = GRAD_LOCAL;
    trace_optimizer_step(t, sh, have_states);
    trace_zero_grad(t);
}
