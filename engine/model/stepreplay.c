/* stepreplay.c: whole training steps through the caching allocator model (stepreplay.h).
 *
 * The op order is HF transformers' Llama-style decoder, each tensor where its code
 * allocates it (transformers models/llama/modeling_llama.py @00227283, unchanged in these
 * functions through 4.57: LlamaRMSNorm.forward, apply_rotary_pos_emb / rotate_half,
 * repeat_kv, eager_attention_forward, LlamaMLP.forward; the loss as losspath.c's
 * `outputs-kept` or `hf` path), in two op lists: a 16-bit stream (the base's dtype: full
 * fine-tuning in bf16-pure, or LoRA on a 16-bit base, its adapters with or without
 * autocast; PEFT MetaMathQA's loop is this without autocast), and full fine-tuning under
 * bf16 autocast over fp32 weights (the amp_ functions, whose comment cites what autocast
 * adds). SDPA or eager attention (attn_core_fwd). Checkpointing is torch.utils.checkpoint's
 * non-reentrant form (HF gradient_checkpointing_enable with use_reentrant False, as our
 * harness sets it): a layer's forward keeps only its input (the closure's argument), and
 * what backward would save dies at its last forward use (saved(): the saved-tensor hooks
 * keep nothing); its backward first recomputes the layer up to the last tensor it saves
 * (_StopRecomputationError). Backward frees each saved tensor when the node that saved it
 * has run (torch/csrc/autograd/engine.cpp releases saved variables after each node) and
 * writes gradients of the shapes autograd gives them; a weight's gradient is stolen by
 * AccumulateGrad (torch/csrc/autograd/functions/accumulate_grad.h: the new gradient becomes
 * .grad when none exists), and the optimizer's foreach AdamW allocates one sqrt(exp_avg_sq)
 * per parameter of the group at once and frees them after addcdiv (torch/optim/adam.py
 * _multi_tensor_adam, `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`); its
 * states are zeros_like each parameter, created at the first step (_init_group). Sizes
 * below a few KiB per token (biases, the norms' weight gradients, clip_grad_norm_'s
 * per-tensor norms, the adapters' weight casts) are left out.
 *
 * What a frozen base saves: autograd saves an input of mm or mul only when the gradient
 * that reads it is needed (pytorch tools/autograd/gen_variable_type.py emit_save_inputs
 * guard_for, "We don't want to save tensors if we know that they will never be used when
 * computing the derivative", @9e69e821): a frozen Linear keeps its weight, not its input,
 * and a frozen norm weight's product keeps nothing new. A LoRA adapter (PEFT
 * tuners/lora/layer.py Linear.forward, fp32 adapters by autocast_adapter_dtype) computes
 * `x = self._cast_input_dtype(x, lora_A.weight.dtype)`, an fp32 copy; without autocast
 * lora_A saves it and its fp32 r-wide output is what lora_B saves, then lora_B's output,
 * its product with the scaling and `result + ...` run in fp32 (transients) and
 * `result.to(torch_result_dtype)`; under autocast lora_A saves its own bf16 cast of the
 * copy (which dies with the forward) and the rest runs in bf16. */
#include "stepreplay.h"

#include <stdlib.h>
#include <string.h>

#include "allocsim.h"

/* A block's saved and transient tensors (slots per layer). */
enum {
    S_N1F, S_N1B, S_N1, S_Q, S_K, S_V, S_QE, S_KE, S_KC, S_VC, S_KR, S_VR, S_AO, S_LSE, S_P32, S_P16,
    S_AOC, S_O, S_H1,
    S_N2F, S_N2B, S_N2, S_G, S_ACT, S_U, S_PR, S_D, S_OUT, S_TMP1, S_TMP2, S_TMP3, S_TMP4,
    S_LX,               /* an adapter's fp32 input copy, per adapted role (ROLE_Q..ROLE_DOWN) */
    S_LA = S_LX + 7,    /* its fp32 r-wide lora_A output */
    S_CI = S_LA + 7,    /* autocast's 16-bit copy of a Linear's fp32 input, per role */
    NSLOT = S_CI + 7
};
/* Global tensors: final norm, loss path, gradient flow, kept outputs (two generations). */
enum {
    G_X0, G_FNF, G_FNB, G_FN, G_LG, G_UP, G_LSM, G_NLL, G_GLSM, G_GLG, G_GX, G_GA, G_GB,
    G_GC, G_GD, G_GE, G_GF, G_LR, G_LX, G_EMB, G_W16, G_W32, G_C1, G_C2, G_HC, G_S1, G_S2, G_MASK, NGLOB
};

struct tracer {
    allocsim_state st;
    allocsim_block *blocks;
    uint32_t *h;           /* handle per id */
    uint8_t *has_grad;     /* per parameter: .grad exists */
    uint8_t *live;         /* per id: allocated now */
    uint32_t n_ids, np;    /* ids, parameters */
    uint64_t seq;          /* the step's padded width (eager attention's scores) */
    int32_t layers;
    int fail;
};

/* id layout: weights, gradients, exp_avg, exp_avg_sq, sqrt temporaries, autocast's 16-bit
 * casts (np each), then layers x NSLOT, NGLOB, and the kept K/V/logits of two steps
 * (2 x (2 layers + 1)). */
enum { K_WEIGHT, K_GRAD, K_AVG, K_AVG_SQ, K_SQRT, K_CAST, K_COUNT };
static uint32_t id_param(const struct tracer *t, int kind, size_t i) { return (uint32_t)(kind * t->np + i); }
static uint32_t id_slot(const struct tracer *t, int32_t l, int s)
{
    return K_COUNT * t->np + (uint32_t)l * NSLOT + (uint32_t)s;
}
static uint32_t id_glob(const struct tracer *t, int g) { return K_COUNT * t->np + (uint32_t)t->layers * NSLOT + (uint32_t)g; }
static uint32_t id_kept(const struct tracer *t, int gen, int32_t k)
{
    return id_glob(t, NGLOB) + (uint32_t)gen * (2 * (uint32_t)t->layers + 1) + (uint32_t)k;
}

static void ta(struct tracer *t, uint32_t id, uint64_t bytes)
{
    if (!t->fail && allocsim_alloc(&t->st, bytes, &t->h[id]) != ALLOCSIM_OK)
        t->fail = 1;
    t->live[id] = 1;
}
static void tf(struct tracer *t, uint32_t id)
{
    if (!t->fail && allocsim_free(&t->st, t->h[id]) != ALLOCSIM_OK)
        t->fail = 1;
    t->live[id] = 0;
}
/* Hands a live allocation to another id (a tensor that changes owner, no copy). */
static void tmove(struct tracer *t, uint32_t to, uint32_t from)
{
    t->h[to] = t->h[from];
    t->live[to] = t->live[from];
    t->live[from] = 0;
}

/* Bytes per element of the weights, their gradients and optimizer states. */
static uint64_t wbytes(const struct stepreplay_shape *sh) { return sh->amp && sh->full ? 4 : sh->ew; }

static uint64_t numel(const struct stepreplay_shape *sh, size_t pi)
{
    return (uint64_t)tensor_numel(&sh->params->t[pi]);
}

struct ctx {
    struct tracer *t;
    const struct stepreplay_shape *sh;
    uint64_t tok;  /* tokens of the micro-batch */
    int32_t l;
    bool ckpt_fwd; /* a checkpointed forward: what backward would save dies at its last use */
};
static void la(const struct ctx *c, int s, uint64_t per_tok) { ta(c->t, id_slot(c->t, c->l, s), c->tok * per_tok); }
static void lf(const struct ctx *c, int s) { tf(c->t, id_slot(c->t, c->l, s)); }
/* A tensor kept for backward only: under a checkpointed forward the saved-tensor hooks keep
 * nothing, so it dies where the forward last reads it. */
static void saved(const struct ctx *c, int s)
{
    if (c->ckpt_fwd)
        lf(c, s);
}

/* LlamaRMSNorm.forward: `.to(float32)` F (saved by pow and the mul), `.pow(2)` (freed after
 * mean), `hs * rsqrt` (freed after the cast), `.to(input_dtype)` B (saved by `weight *`
 * only when the weight is trained), `self.weight * ...` the output N (saved by the
 * Linears that read it). */
static void norm_fwd(const struct ctx *c, int f, int b, int n)
{
    const uint64_t h = c->sh->h, ew = c->sh->ew;
    la(c, f, 4 * h);
    la(c, S_TMP1, 4 * h), lf(c, S_TMP1);
    la(c, S_TMP1, 4 * h), saved(c, f), la(c, b, ew * h), lf(c, S_TMP1);
    la(c, n, ew * h);
    if (!c->sh->full)
        lf(c, b);
    else
        saved(c, b);
}

/* apply_rotary_pos_emb for q (w = hq) or k: `q * cos` A, rotate_half's `-x2` and cat, the
 * product with sin, the sum E (kept); the inputs and partial products freed. */
static void rope_fwd(const struct ctx *c, int in, int e, uint64_t w)
{
    const uint64_t ew = c->sh->ew;
    la(c, S_TMP1, ew * w);
    la(c, S_TMP2, ew * w / 2), la(c, S_TMP3, ew * w), lf(c, S_TMP2);
    la(c, S_TMP2, ew * w), lf(c, S_TMP3);
    la(c, e, ew * w), lf(c, S_TMP1), lf(c, S_TMP2), lf(c, in);
}

static bool adapted(const struct stepreplay_shape *sh, enum tensor_role r)
{
    return !sh->full && (sh->lora_targets & (1u << r));
}

/* A block Linear of role r reading `in` (width w_in) and writing `out` (w_out): the base
 * matmul and, when adapted, the PEFT adapter beside it. The input stays only while a
 * trained weight's gradient needs it (full fine-tuning); callers free it otherwise. */
static void linear_fwd(const struct ctx *c, enum tensor_role r, int out, uint64_t w_in, uint64_t w_out)
{
    const uint64_t ew = c->sh->ew;
    if (!adapted(c->sh, r)) {
        la(c, out, ew * w_out);
        return;
    }
    const int lx = S_LX + (r - ROLE_Q), lA = S_LA + (r - ROLE_Q);
    if (c->sh->amp) { /* autocast runs lora_A and lora_B in bf16 (amp_cast's sources) */
        la(c, S_TMP4, ew * w_out);                   /* result = self.base_layer(x) */
        la(c, S_TMP1, 4 * w_in);                     /* x.to(lora_A.weight.dtype) */
        la(c, lx, 2 * w_in), la(c, lA, 2 * c->sh->lora_r); /* lora_A's input cast, output */
        saved(c, lx);
        la(c, S_TMP2, 2 * w_out), saved(c, lA);      /* lora_B */
        la(c, S_TMP3, 2 * w_out), lf(c, S_TMP2);     /* * scaling */
        la(c, out, ew * w_out), lf(c, S_TMP3), lf(c, S_TMP4); /* result + ... */
        lf(c, S_TMP1);                               /* the fp32 x dies with the forward */
        return;
    }
    la(c, S_TMP4, ew * w_out);                        /* result = self.base_layer(x) */
    la(c, lx, 4 * w_in), la(c, lA, 4 * c->sh->lora_r); /* x.to(fp32), lora_A(x) */
    saved(c, lx);
    la(c, S_TMP1, 4 * w_out), saved(c, lA);
    la(c, S_TMP2, 4 * w_out), lf(c, S_TMP1); /* lora_B, * scaling */
    la(c, S_TMP3, 4 * w_out), lf(c, S_TMP2), lf(c, S_TMP4);             /* result + ... */
    la(c, out, ew * w_out), lf(c, S_TMP3);                              /* .to(bf16) */
}

/* The backward of an adapted Linear of role r, before the base matmul's: ToCopyBackward's
 * fp32 copy of the output's gradient (4 w_out), the engine's cast of it for the bf16 base
 * result (2 w_out, torch/csrc/autograd/engine.cpp validate_outputs: a gradient of another
 * dtype than its input is cast), the scaling's product (4 w_out), lora_B's and lora_A's
 * input gradients (fp32, r and w_in wide) with their saved tensors freed, and the cast of
 * the latter to the base dtype (2 w_in). The base result's gradient (G_LR) and the adapter's
 * input gradient (G_LX) stay for lora_bwd_post. The adapters' weight gradients are counted
 * outside the replay (stepreplay_result.resident covers the base only). */
static void lora_bwd_pre(const struct ctx *c, enum tensor_role r, uint64_t w_in, uint64_t w_out)
{
    if (!adapted(c->sh, r))
        return;
    struct tracer *t = c->t;
    const int lx = S_LX + (r - ROLE_Q), lA = S_LA + (r - ROLE_Q);
    const uint32_t gd = id_glob(t, G_GD), ge = id_glob(t, G_GE);
    const uint64_t n = c->tok, ew = c->sh->ew;
    if (c->sh->amp) { /* bf16 throughout but for the fp32 copy of x and its gradient */
        ta(t, ge, n * 2 * w_out);                             /* * scaling */
        ta(t, gd, n * 2 * c->sh->lora_r), tf(t, ge), lf(c, lA); /* lora_B's input gradient */
        ta(t, ge, n * 2 * w_in), tf(t, gd), lf(c, lx);         /* lora_A's */
        ta(t, gd, n * 4 * w_in), tf(t, ge);                    /* autocast's cast, back */
        ta(t, id_glob(t, G_LX), n * ew * w_in), tf(t, gd);     /* x.to(fp32), back */
        return;
    }
    ta(t, gd, n * 4 * w_out), ta(t, id_glob(t, G_LR), n * ew * w_out);
    ta(t, ge, n * 4 * w_out), tf(t, gd);                      /* * scaling */
    ta(t, gd, n * 4 * c->sh->lora_r), tf(t, ge), lf(c, lA);   /* lora_B's input gradient */
    ta(t, ge, n * 4 * w_in), tf(t, gd), lf(c, lx);            /* lora_A's */
    ta(t, id_glob(t, G_LX), n * ew * w_in), tf(t, ge);        /* .to(bf16) */
}

/* After the base matmul's input gradient: the adapter's is summed into it in place, and
 * the base result's gradient is no longer referenced. */
static void lora_bwd_post(const struct ctx *c, enum tensor_role r)
{
    if (!adapted(c->sh, r))
        return;
    tf(c->t, id_glob(c->t, G_LX));
    if (!c->sh->amp)
        tf(c->t, id_glob(c->t, G_LR));
}

/* The attention between RoPE and o_proj's input, from QE, KE and V: repeat_kv's copies
 * (which the attention saves; the unrepeated K and V die with the attention's call), then
 * SDPA (its output and fp32 logsumexp saved), or eager attention
 * (transformers eager_attention_forward @00227283: q @ k^T, * scaling, + the causal mask,
 * softmax(dtype=float32) saved, .to(q.dtype) saved by @ v; dropout 0 returns its input,
 * aten/src/ATen/native/Dropout.cpp _dropout_impl), and the transposed contiguous copy. */
static void attn_core_fwd(const struct ctx *c)
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
    la(c, S_AOC, ew * hq); /* attn_output.transpose(1, 2).contiguous() */
    if (sh->eager)         /* @ v's output: nothing saves it */
        lf(c, S_AO);
    else
        saved(c, S_AO);
}

/* Its backward, from the gradient of the attention's output in G_GB (freed): q's gradient
 * in G_GA, k's in G_GC and v's in G_GF (repeated widths), the saved tensors released. */
static void attn_core_bwd(const struct ctx *c)
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

/* How a layer's forward runs: plainly; checkpointed (its input stays for the recompute);
 * or as that recompute, which stops at the last tensor the layer saves (down's). */
enum fwd_mode { FWD_PLAIN, FWD_CKPT, FWD_RECOMPUTE };

static void block_fwd(const struct ctx *c, uint32_t in_id, enum fwd_mode mode)
{
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t ew = sh->ew, h = sh->h, hq = sh->hq, hkv = sh->hkv, i = sh->inter;
    norm_fwd(c, S_N1F, S_N1B, S_N1);
    linear_fwd(c, ROLE_Q, S_Q, h, hq), linear_fwd(c, ROLE_K, S_K, h, hkv);
    linear_fwd(c, ROLE_V, S_V, h, hkv);
    if (!sh->full)
        lf(c, S_N1);
    else
        saved(c, S_N1);
    rope_fwd(c, S_Q, S_QE, hq);
    rope_fwd(c, S_K, S_KE, hkv);
    if (sh->kept) { /* DynamicLayer.update: torch.cat onto an empty tensor, a copy the cache
                       keeps; the name rebinds to it and the original dies */
        la(c, S_KC, ew * hkv), lf(c, S_KE);
        la(c, S_VC, ew * hkv), lf(c, S_V);
    }
    attn_core_fwd(c);
    linear_fwd(c, ROLE_O, S_O, hq, h);
    if (!sh->full)
        lf(c, S_AOC);
    else
        saved(c, S_AOC);
    la(c, S_H1, ew * h), lf(c, S_O); /* residual add */
    if (mode == FWD_PLAIN) /* the first norm saved its fp32 copy, not the input */
        tf(c->t, in_id);
    norm_fwd(c, S_N2F, S_N2B, S_N2);
    linear_fwd(c, ROLE_GATE, S_G, h, i), la(c, S_ACT, ew * i); /* silu saves its input */
    saved(c, S_G);
    linear_fwd(c, ROLE_UP, S_U, h, i), la(c, S_PR, ew * i);    /* the product saves both */
    saved(c, S_ACT), saved(c, S_U);
    if (!sh->full)
        lf(c, S_N2);
    else
        saved(c, S_N2);
    linear_fwd(c, ROLE_DOWN, S_D, i, h);
    if (!sh->full)
        lf(c, S_PR);
    else
        saved(c, S_PR);
    if (mode == FWD_RECOMPUTE) {
        lf(c, S_D), lf(c, S_H1);
        return;
    }
    la(c, S_OUT, ew * h), lf(c, S_D), lf(c, S_H1);
}

/* The gradient flowing in the residual stream is G_GX; each Linear's input gradient is a
 * new tensor, summed in place into the first of a pair (autograd's InputBuffer::add). */
static void norm_bwd(const struct ctx *c, int f, int b, int n)
{
    struct tracer *t = c->t;
    const uint64_t h = c->sh->h, ew = c->sh->ew;
    ta(t, id_glob(t, G_GD), c->tok * 4 * h), ta(t, id_glob(t, G_GE), c->tok * ew * h);
    tf(t, id_glob(t, G_GD)), tf(t, id_glob(t, G_GA));
    lf(c, f);
    if (c->sh->full) /* the Linears' saved input, and the normalized input the weight's
                        gradient reads */
        lf(c, n), lf(c, b);
    tf(t, id_glob(t, G_GE)); /* summed into the residual gradient */
}

/* The final norm's backward: its input gradient starts the residual gradient G_GX. */
static void final_norm_bwd(struct tracer *t, const struct stepreplay_shape *sh, uint64_t tok)
{
    ta(t, id_glob(t, G_GD), tok * 4 * sh->h), ta(t, id_glob(t, G_GX), tok * sh->ew * sh->h);
    tf(t, id_glob(t, G_GD)), tf(t, id_glob(t, G_GA));
    tf(t, id_glob(t, G_FNF)), tf(t, id_glob(t, G_FN)), tf(t, id_glob(t, G_FNB));
}

static void wgrad(const struct ctx *c, size_t pi)
{
    if (c->sh->full && !c->t->has_grad[pi]) {
        ta(c->t, id_param(c->t, K_GRAD, pi), numel(c->sh, pi) * c->sh->ew);
        c->t->has_grad[pi] = 1;
    }
}

/* The MLP's backward (down, the product, silu, up and gate) from the residual gradient;
 * leaves the gradient of the second norm's output in G_GA. pi: the block's parameter index
 * per role (struct roles). Saved Linear inputs exist only under full fine-tuning (block_fwd
 * freed them otherwise). */
static void mlp_bwd(const struct ctx *c, const size_t *pi)
{
    struct tracer *t = c->t;
    const uint64_t ew = c->sh->ew, h = c->sh->h, i = c->sh->inter;
    const uint32_t ga = id_glob(t, G_GA), gb = id_glob(t, G_GB), gc = id_glob(t, G_GC);
    lora_bwd_pre(c, ROLE_DOWN, i, h);
    ta(t, ga, c->tok * ew * i), wgrad(c, pi[ROLE_DOWN]), lora_bwd_post(c, ROLE_DOWN);
    if (c->sh->full)
        lf(c, S_PR);
    ta(t, gb, c->tok * ew * i), ta(t, gc, c->tok * ew * i), tf(t, ga), lf(c, S_ACT), lf(c, S_U);
    ta(t, ga, c->tok * ew * i), tf(t, gb), lf(c, S_G);
    lora_bwd_pre(c, ROLE_UP, h, i);
    ta(t, gb, c->tok * ew * h), wgrad(c, pi[ROLE_UP]), lora_bwd_post(c, ROLE_UP), tf(t, gc);
    lora_bwd_pre(c, ROLE_GATE, h, i);
    ta(t, gc, c->tok * ew * h), wgrad(c, pi[ROLE_GATE]), lora_bwd_post(c, ROLE_GATE);
    tf(t, ga), tf(t, gc);
    tmove(t, ga, gb);
}

/* The attention's backward (o_proj, SDPA, repeat_kv, RoPE, q/k/v); leaves the gradient of
 * the first norm's output in G_GA. */
static void attn_bwd(const struct ctx *c, const size_t *pi)
{
    struct tracer *t = c->t;
    const struct stepreplay_shape *sh = c->sh;
    const uint64_t ew = sh->ew, h = sh->h, hq = sh->hq, hkv = sh->hkv;
    const uint32_t ga = id_glob(t, G_GA), gb = id_glob(t, G_GB), gc = id_glob(t, G_GC);
    lora_bwd_pre(c, ROLE_O, hq, h);
    ta(t, ga, c->tok * ew * hq), wgrad(c, pi[ROLE_O]), lora_bwd_post(c, ROLE_O);
    if (sh->full)
        lf(c, S_AOC);
    ta(t, gb, c->tok * ew * hq), tf(t, ga);
    attn_core_bwd(c);
    ta(t, gb, c->tok * ew * hq), tf(t, ga); /* RoPE backward of q */
    lora_bwd_pre(c, ROLE_Q, h, hq);
    ta(t, ga, c->tok * ew * h), wgrad(c, pi[ROLE_Q]), lora_bwd_post(c, ROLE_Q), tf(t, gb);
    ta(t, gb, c->tok * ew * hkv), tf(t, gc); /* RoPE backward of k (after the group sum) */
    lora_bwd_pre(c, ROLE_K, h, hkv);
    ta(t, gc, c->tok * ew * h), wgrad(c, pi[ROLE_K]), lora_bwd_post(c, ROLE_K), tf(t, gb), tf(t, gc);
    lora_bwd_pre(c, ROLE_V, h, hkv);
    ta(t, gc, c->tok * ew * h), wgrad(c, pi[ROLE_V]), lora_bwd_post(c, ROLE_V);
    tf(t, id_glob(t, G_GF)), tf(t, gc);
}

static void block_bwd(const struct ctx *c, const size_t *pi)
{
    mlp_bwd(c, pi);
    norm_bwd(c, S_N2F, S_N2B, S_N2);
    attn_bwd(c, pi);
    norm_bwd(c, S_N1F, S_N1B, S_N1);
}

/* Under autocast (full fine-tuning over fp32 weights; HF Trainer bf16=True or a loop in
 * torch.autocast). Sources: pytorch aten/src/ATen/autocast_mode.cpp cached_cast @001074d2
 * (a leaf fp32 weight that requires grad is cast once and cached until the outermost
 * autocast exits; any other fp32 input is cast on every call), autocast's op lists (linear,
 * matmul and SDPA run in bf16; mul, add, pow, rsqrt keep their inputs' promoted dtype),
 * transformers modeling_llama.py @00227283 (LlamaRMSNorm: `.to(torch.float32)` of an fp32
 * input is the input itself and `.to(input_dtype)` back to fp32 is too, so the residual
 * stream stays fp32 from the fp32 embedding on), torch/csrc/autograd/engine.cpp
 * validate_outputs (a gradient of another dtype than its input's is cast) and ToCopyBackward
 * (a bf16 cast's gradient is copied back to fp32 before AccumulateGrad steals it). */

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
    rope_fwd(c, S_Q, S_QE, hq);
    rope_fwd(c, S_K, S_KE, hkv);
    attn_core_fwd(c);
    amp_linear_fwd(c, pi, ROLE_O, S_O, hq, h, false);
    saved(c, S_AOC);
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
        t->has_grad[pi] = 1;
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
    amp_linear_bwd(c, pi, ROLE_O, c1, ga, hq, S_AOC);
    ta(t, gb, n * 2 * hq), tf(t, ga); /* the transpose's contiguous gradient */
    attn_core_bwd(c);
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

/* The final norm, lm_head and ForCausalLMLoss (losspath.c `outputs-kept`: 16-bit logits
 * kept, fp32 upcast, log_softmax; backward nll and log_softmax gradients, the 16-bit
 * gradient of the logits), with the previous step's outputs dying when the forward
 * returns; not kept (the `hf` path), the 16-bit logits die with the forward. */
static void head(struct tracer *t, const struct stepreplay_shape *sh, uint64_t tok, int gen,
                 bool have_prev, uint32_t x_id)
{
    const uint64_t ew = sh->ew, h = sh->h, nv = tok * sh->vocab;
    ta(t, id_glob(t, G_FNF), tok * 4 * h);
    ta(t, id_glob(t, G_GA), tok * 4 * h), tf(t, id_glob(t, G_GA));
    ta(t, id_glob(t, G_GA), tok * 4 * h), ta(t, id_glob(t, G_FNB), tok * ew * h), tf(t, id_glob(t, G_GA));
    ta(t, id_glob(t, G_FN), tok * ew * h), tf(t, x_id);
    const uint32_t lg = sh->kept ? id_kept(t, gen, 2 * t->layers) : id_glob(t, G_LG);
    ta(t, lg, nv * ew), ta(t, id_glob(t, G_UP), nv * 4), ta(t, id_glob(t, G_LSM), nv * 4);
    tf(t, id_glob(t, G_UP));
    if (!sh->kept) /* the model's outputs die with the loss: nothing saves the 16-bit logits */
        tf(t, lg);
    if (have_prev)
        for (int32_t k = 0; k <= 2 * t->layers; k++)
            tf(t, id_kept(t, !gen, k));
    ta(t, id_glob(t, G_NLL), nv * 4), ta(t, id_glob(t, G_GLSM), nv * 4);
    tf(t, id_glob(t, G_LSM)), tf(t, id_glob(t, G_NLL));
    ta(t, id_glob(t, G_GLG), nv * ew), tf(t, id_glob(t, G_GLSM));
    ta(t, id_glob(t, G_GA), tok * ew * h); /* lm_head's input gradient */
}

struct roles {
    size_t embed, head;
    size_t *layer; /* layers x ROLE_COUNT parameter indices */
};

/* optimizer.zero_grad() (set_to_none): every gradient of the last step dies. */
static void zero_grad(struct tracer *t)
{
    for (size_t i = 0; i < t->np; i++)
        if (t->has_grad[i])
            tf(t, id_param(t, K_GRAD, i)), t->has_grad[i] = 0;
}

/* Frees what a checkpointed layer's forward does not keep: everything but its output (the
 * next layer's input, which the next checkpoint's closure holds). */
static void ckpt_drop(struct tracer *t, int32_t l)
{
    for (int s = 0; s < NSLOT; s++)
        if (s != S_OUT && t->live[id_slot(t, l, s)])
            tf(t, id_slot(t, l, s));
}

/* The blocks' forward and the head; the kept outputs take the cache's K and V. */
static void forward(struct tracer *t, const struct stepreplay_shape *sh, uint64_t tok, int gen,
                    bool have_prev)
{
    uint32_t x = id_glob(t, G_X0);
    ta(t, x, tok * sh->ew * sh->h);
    if (sh->eager) /* masking_utils' additive (b, 1, s, s) mask, one for every layer */
        ta(t, id_glob(t, G_MASK), tok * sh->ew * t->seq);
    for (int32_t l = 0; l < sh->layers; l++) {
        const struct ctx c = {t, sh, tok, l, sh->ckpt};
        block_fwd(&c, x, sh->ckpt ? FWD_CKPT : FWD_PLAIN);
        if (sh->ckpt)
            ckpt_drop(t, l);
        x = id_slot(t, l, S_OUT);
        if (sh->kept) { /* the DynamicCache's K (after RoPE) and V of every block */
            tmove(t, id_kept(t, gen, 2 * l), id_slot(t, l, S_KC));
            tmove(t, id_kept(t, gen, 2 * l + 1), id_slot(t, l, S_VC));
        }
    }
    head(t, sh, tok, gen, have_prev, x);
    if (sh->eager && !sh->ckpt) /* ckpt: each layer's closure holds it until its backward */
        tf(t, id_glob(t, G_MASK));
}

/* From the lm_head's backward to the embedding's; the remaining parameters' gradients
 * (embedding, norms, biases) last. */
static void backward(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                     uint64_t tok)
{
    const struct ctx c0 = {t, sh, tok, 0, false};
    wgrad(&c0, r->head); /* lm_head's weight gradient (the embedding's when tied) */
    tf(t, id_glob(t, G_GLG));
    final_norm_bwd(t, sh, tok);
    for (int32_t l = sh->layers - 1; l >= 0; l--) {
        const struct ctx c = {t, sh, tok, l, false};
        const uint32_t in_id = l ? id_slot(t, l - 1, S_OUT) : id_glob(t, G_X0);
        if (sh->ckpt)
            block_fwd(&c, in_id, FWD_RECOMPUTE);
        block_bwd(&c, r->layer + (size_t)l * ROLE_COUNT);
        if (sh->ckpt) /* the checkpoint's closure held the input until now */
            tf(t, in_id);
    }
    tf(t, id_glob(t, G_GX));
    if (sh->eager && sh->ckpt)
        tf(t, id_glob(t, G_MASK));
    if (!sh->full)
        return;
    if (r->embed == r->head) { /* tied: embedding_dense_backward's new gradient, added in */
        ta(t, id_glob(t, G_EMB), (uint64_t)tensor_numel(&sh->params->t[r->embed]) * sh->ew);
        tf(t, id_glob(t, G_EMB));
    }
    for (size_t i = 0; i < t->np; i++)
        wgrad(&c0, i);
}

/* The optimizer's step (stepreplay_opt): AdamW's states at the first step, zeros_like each
 * parameter in order (_init_group); foreach, one sqrt(exp_avg_sq) a parameter, all
 * allocated before any is freed. */
static void optimizer_step(struct tracer *t, const struct stepreplay_shape *sh, bool *have_states)
{
    const uint64_t wb = wbytes(sh);
    for (size_t i = 0; i < t->np && !*have_states && sh->opt != STEPREPLAY_PLAIN; i++)
        ta(t, id_param(t, K_AVG, i), numel(sh, i) * wb), ta(t, id_param(t, K_AVG_SQ, i), numel(sh, i) * wb);
    *have_states = true;
    if (sh->opt != STEPREPLAY_FOREACH)
        return;
    for (size_t i = 0; i < t->np; i++)
        ta(t, id_param(t, K_SQRT, i), numel(sh, i) * wb);
    for (size_t i = 0; i < t->np; i++)
        tf(t, id_param(t, K_SQRT, i));
}

/* The final norm, the lm_head and the hf loss path (losspath.c `hf_path`): the norm's
 * saved product and output in fp32, the head weight's cast (saved by its mm, so the
 * autocast exit leaves it), the input's cast, the bf16 logits, their fp32 upcast and
 * log_softmax's saved output; the upcast dies with the loss function, accelerate's fp32
 * copy of the logits (HF Trainer under mixed precision; a loop of its own has none, and the
 * copy takes the upcast's block of the same size, so the allocator's state is the same)
 * and the model's outputs with Trainer.compute_loss returning the loss only. */
static void amp_head_fwd(struct tracer *t, const struct stepreplay_shape *sh, size_t head, uint64_t tok)
{
    const uint64_t h = sh->h, nv = tok * sh->vocab;
    const struct ctx c0 = {t, sh, tok, 0, false};
    ta(t, id_glob(t, G_GA), tok * 4 * h), tf(t, id_glob(t, G_GA));
    ta(t, id_glob(t, G_FNB), tok * 4 * h), ta(t, id_glob(t, G_FN), tok * 4 * h);
    amp_cast(&c0, head);
    ta(t, id_glob(t, G_HC), tok * 2 * h);
    ta(t, id_glob(t, G_LG), nv * 2), ta(t, id_glob(t, G_UP), nv * 4), ta(t, id_glob(t, G_LSM), nv * 4);
    tf(t, id_glob(t, G_UP)), ta(t, id_glob(t, G_UP), nv * 4);
    tf(t, id_glob(t, G_LG)), tf(t, id_glob(t, G_UP)), tf(t, id_glob(t, G_FN));
}

/* The loss's backward, the lm_head's and the final norm's: the stream's fp32 gradient G_GX. */
static void amp_head_bwd(struct tracer *t, const struct stepreplay_shape *sh, size_t head,
                         uint64_t tok, uint32_t x_id)
{
    const uint64_t nv = tok * sh->vocab;
    const struct ctx c0 = {t, sh, tok, 0, false};
    ta(t, id_glob(t, G_NLL), nv * 4), ta(t, id_glob(t, G_GLSM), nv * 4);
    tf(t, id_glob(t, G_LSM)), tf(t, id_glob(t, G_NLL));
    ta(t, id_glob(t, G_GLG), nv * 2), tf(t, id_glob(t, G_GLSM));
    ta(t, id_glob(t, G_GA), tok * 2 * sh->h);
    amp_wgrad(&c0, head, -1);
    tf(t, id_glob(t, G_HC)), tf(t, id_glob(t, G_GLG));
    amp_up(&c0, id_glob(t, G_GA), id_glob(t, G_C2));
    ta(t, id_glob(t, G_GD), tok * 4 * sh->h), tf(t, id_glob(t, G_C2)), tf(t, id_glob(t, G_FNB));
    ta(t, id_glob(t, G_GX), tok * 4 * sh->h), tf(t, id_glob(t, G_GD)), tf(t, x_id);
}

/* The stream's input of layer l: the embedding's fp32 output, or the layer before's. */
static uint32_t amp_layer_in(const struct tracer *t, int32_t l)
{
    return l ? id_slot(t, l - 1, S_OUT) : id_glob(t, G_X0);
}

static void amp_step(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                     uint64_t tok, bool *have_states)
{
    ta(t, id_glob(t, G_X0), tok * 4 * sh->h);
    if (sh->eager) /* masking_utils' additive (b, 1, s, s) mask in bf16 */
        ta(t, id_glob(t, G_MASK), tok * 2 * t->seq);
    for (int32_t l = 0; l < sh->layers; l++) {
        const struct ctx c = {t, sh, tok, l, sh->ckpt};
        amp_block_fwd(&c, r->layer + (size_t)l * ROLE_COUNT, false);
        if (sh->ckpt)
            ckpt_drop(t, l);
    }
    amp_head_fwd(t, sh, r->head, tok);
    if (sh->eager && !sh->ckpt)
        tf(t, id_glob(t, G_MASK));
    if (sh->ckpt) /* the outermost autocast exits: cached casts nothing saved die */
        for (size_t i = 0; i < t->np; i++)
            if (i != r->head && t->live[id_param(t, K_CAST, i)])
                tf(t, id_param(t, K_CAST, i));
    amp_head_bwd(t, sh, r->head, tok, amp_layer_in(t, sh->layers));
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
            ta(t, id_param(t, K_GRAD, i), numel(sh, i) * 4), t->has_grad[i] = 1;
    optimizer_step(t, sh, have_states);
    zero_grad(t);
}

static void step(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                 uint64_t tok, int gen, bool have_prev, bool *have_states)
{
    zero_grad(t);
    forward(t, sh, tok, gen, have_prev);
    backward(t, sh, r, tok);
    if (sh->full) /* LoRA's adapters and their states live outside the replay */
        optimizer_step(t, sh, have_states);
}

int32_t stepreplay_batch_len(int32_t cap, int32_t batch, int32_t bucket_batches, int32_t j)
{
    const double n = (double)batch * bucket_batches;
    const double len = (double)cap * (1.0 - ((double)batch * j + 1.0) / (n + 1.0));
    return len < 1.0 ? 1 : (int32_t)(len + 0.5);
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

/* PEFT MetaMathQA's BucketIterator (utils.py @51c2ff66): buckets of 20 batches
 * (BUCKET_FACTOR) in dataset order, each sorted longest first; empty_cache() every 10
 * steps starts each window at the first or the eleventh batch of a bucket. The windows that
 * set the 99th percentile of the after-step samples (about 5 of 5000 steps' 500 windows)
 * are first halves of buckets whose longest sample lies nearest the cap (the largest of 80
 * uniform samples exceeds 0.9997 cap in 2 % of buckets): their first batch is the cap, the
 * later ones the bucket's expected order statistics. */
#define BUCKET_BATCHES 20

static void replay(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                   int32_t batch, int32_t cap, int32_t window, struct stepreplay_result *out)
{
    for (size_t i = 0; i < t->np; i++)
        ta(t, id_param(t, K_WEIGHT, i), numel(sh, i) * wbytes(sh));
    bool have_states = false, have_prev = false;
    int gen = 0;
    const int windows = 2; /* the first fills the optimizer states; the second is measured */
    for (int w = 0; w < windows && !t->fail; w++) {
        for (int32_t j = 0; j < window && !t->fail; j++) {
            const int32_t len = j > 0 ? stepreplay_batch_len(cap, batch, BUCKET_BATCHES, j) : cap;
            t->seq = (uint64_t)len;
            step(t, sh, r, (uint64_t)batch * (uint64_t)len, gen, have_prev, &have_states);
            have_prev = sh->kept;
            gen = !gen;
            const uint64_t res = allocsim_get_stats(&t->st)->reserved;
            if (w == windows - 1 && res > out->reserved)
                out->reserved = res;
        }
        out->allocated = allocsim_get_stats(&t->st)->allocated;
        if (allocsim_empty_cache(&t->st) != ALLOCSIM_OK)
            t->fail = 1;
    }
    uint64_t resident = 0;
    for (size_t i = 0; i < t->np; i++)
        resident += allocsim_round_size((uint64_t)tensor_numel(&sh->params->t[i]) * sh->ew) *
                    (sh->full ? 4u : 1u);
    out->resident = resident;
}

/* The tracer's memory and an empty allocator; -1 when memory runs out. */
static int tracer_open(struct tracer *t, struct roles *r, const struct stepreplay_shape *sh)
{
    memset(t, 0, sizeof *t);
    memset(r, 0, sizeof *r);
    t->np = (uint32_t)sh->params->n;
    t->layers = sh->layers;
    t->n_ids = id_kept(t, 2, 0);
    const size_t n_blocks = 8 * (size_t)t->n_ids + 4096;
    t->h = calloc(t->n_ids, sizeof *t->h);
    t->live = calloc(t->n_ids, 1);
    t->has_grad = calloc(t->np ? t->np : 1, 1);
    t->blocks = calloc(n_blocks, sizeof *t->blocks);
    const allocsim_config cfg = {.expandable = sh->expandable};
    if (!t->h || !t->live || !t->has_grad || !t->blocks || find_roles(sh, r) ||
        allocsim_init(&t->st, &cfg, t->blocks, n_blocks) != ALLOCSIM_OK)
        return -1;
    return 0;
}

static void tracer_close(struct tracer *t, struct roles *r)
{
    free(r->layer), free(t->blocks), free(t->has_grad), free(t->live), free(t->h);
}

int stepreplay_run(const struct stepreplay_shape *sh, int32_t batch, int32_t cap, int32_t window,
                   struct stepreplay_result *out)
{
    memset(out, 0, sizeof *out);
    if (batch < 1 || cap < 1 || window < 1 || sh->layers < 1 || sh->amp || sh->ckpt || sh->eager)
        return -1;
    struct tracer t;
    struct roles r;
    int rc = -1;
    if (!tracer_open(&t, &r, sh)) {
        replay(&t, sh, &r, batch, cap, window, out);
        rc = t.fail ? -1 : 0;
    }
    tracer_close(&t, &r);
    return rc;
}

int stepreplay_steps(const struct stepreplay_shape *sh, int32_t batch, const int32_t *widths,
                     size_t n, struct stepreplay_result *out)
{
    memset(out, 0, sizeof *out);
    if (batch < 1 || !n || !widths || sh->layers < 1 || ((sh->ckpt || sh->eager) && sh->kept))
        return -1;
    for (size_t k = 0; k < n; k++)
        if (widths[k] < 1)
            return -1;
    struct tracer t;
    struct roles r;
    int rc = -1;
    if (!tracer_open(&t, &r, sh)) {
        for (size_t i = 0; i < t.np; i++)
            ta(&t, id_param(&t, K_WEIGHT, i), numel(sh, i) * wbytes(sh));
        allocsim_reset_peaks(&t.st);
        bool have_states = false;
        int gen = 0;
        for (size_t k = 0; k < n && !t.fail; k++) {
            const uint64_t tok = (uint64_t)batch * (uint64_t)widths[k];
            t.seq = (uint64_t)widths[k];
            if (sh->amp && sh->full)
                amp_step(&t, sh, &r, tok, &have_states);
            else
                step(&t, sh, &r, tok, gen, k > 0 && sh->kept, &have_states), gen = !gen;
        }
        const allocsim_stats *st = allocsim_get_stats(&t.st);
        const uint64_t kinds = !sh->full ? 1 : sh->opt == STEPREPLAY_PLAIN ? 2 : 4;
        for (size_t i = 0; i < t.np; i++)
            out->resident += allocsim_round_size(numel(sh, i) * wbytes(sh)) * kinds;
        out->reserved = st->peak_reserved;
        out->peak_allocated = st->peak_allocated;
        out->allocated = st->allocated;
        rc = t.fail ? -1 : 0;
    }
    tracer_close(&t, &r);
    return rc;
}
