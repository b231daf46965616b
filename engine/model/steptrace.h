/* steptrace.h: what the whole-step replay's two op lists share (stepreplay.c, 16-bit;
 * stepamp.c, autocast over fp32 weights); private to engine/model. The ids of a step's
 * tensors and their allocation through the allocator model (allocsim.h), one layer's
 * context, and the ops both lists run alike: RoPE, the attention between RoPE and o_proj,
 * zero_grad, a checkpointed layer's drop and the optimizer's step. */
#ifndef LLMEM_STEPTRACE_H
#define LLMEM_STEPTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocsim.h"
#include "stepreplay.h"

/* A block's saved and transient tensors (slots per layer). */
enum {
    S_N1F, S_N1B, S_N1, S_Q, S_K, S_V, S_QE, S_KE, S_KC, S_VC, S_KR, S_VR, S_AO, S_LSE, S_P32, S_P16,
    S_AOC, S_O, S_H1,
    S_N2F, S_N2B, S_N2, S_G, S_ACT, S_U, S_PR, S_D, S_OUT, S_TMP1, S_TMP2, S_TMP3, S_TMP4,
    S_LX,               /* an adapter's fp32 input copy, per adapted role (ROLE_Q..ROLE_DOWN) */
    S_LA = S_LX + 7,    /* its fp32 r-wide lora_A output */
    S_CI = S_LA + 7,    /* autocast's 16-bit copy of a Linear's fp32 input, per role */
    S_DM = S_CI + 7,    /* lora_dropout's bool mask, per adapted role (S_LX: its output) */
    NSLOT = S_DM + 7
};
/* Global tensors: final norm, loss path, gradient flow, kept outputs (two generations). */
enum {
    G_X0, G_FNF, G_FNB, G_FN, G_GX, G_GA, G_GB,
    G_GC, G_GD, G_GE, G_GF, G_LR, G_LX, G_EMB, G_W16, G_W32, G_C1, G_C2, G_HC, G_S1, G_S2, G_MASK,
    G_DR,                        /* lora_dropout's input gradient */
    G_DQ, G_DQA,                 /* a 4-bit weight dequantized, and its fp32 absmax */
    G_LP,                        /* the loss path's slots (losspath_ops) */
    NGLOB = G_LP + LOSSPATH_SLOTS
};

struct tracer {
    allocsim_state st;
    allocsim_block *blocks;
    allocsim_state rs;     /* FSDP's reduce-scatter (FSDP1: post-backward) stream's pool */
    allocsim_block *rs_blocks;
    allocsim_state ag;     /* FSDP1's unshard stream's pool (stepfsdp.c) */
    allocsim_block *ag_blocks;
    bool tied;             /* FSDP1: the root's embedding is the lm_head too */
    uint32_t *unit;        /* FSDP2: per parameter, its unit (a layer; `layers`: the root) */
    uint64_t peak_both;    /* FSDP: the highest allocated of all pools together */
    uint32_t *h;           /* handle per id */
    uint8_t *has_grad;     /* per parameter: enum grad_state */
    uint8_t *live;         /* per id: allocated now */
    uint32_t n_ids, np;    /* ids, parameters */
    uint64_t seq;          /* the step's padded width (eager attention's scores) */
    uint32_t head_grad;    /* the logits' gradient the lm_head's backward reads (head) */
    int32_t layers;
    int fail;
};

/* A parameter's .grad: none; a tensor of its own (K_GRAD); or (FSDP2) reduce-scattered,
 * a view of its unit's reduce-scatter output. */
enum grad_state { GRAD_NONE, GRAD_LOCAL, GRAD_REDUCED };

/* id layout: weights, gradients, exp_avg, exp_avg_sq, sqrt temporaries, autocast's 16-bit
 * casts or FSDP2's gathered 16-bit parameters (np each), then layers x NSLOT, NGLOB, the
 * kept K/V/logits of two steps (2 x (2 layers + 1)), and FSDP2's reduce-scatter input and
 * output of each unit (2 x (layers + 1)). */
enum { K_WEIGHT, K_GRAD, K_AVG, K_AVG_SQ, K_SQRT, K_CAST, K_COUNT };
static inline uint32_t id_param(const struct tracer *t, int kind, size_t i) { return (uint32_t)(kind * t->np + i); }
static inline uint32_t id_slot(const struct tracer *t, int32_t l, int s)
{
    return K_COUNT * t->np + (uint32_t)l * NSLOT + (uint32_t)s;
}
static inline uint32_t id_glob(const struct tracer *t, int g) { return K_COUNT * t->np + (uint32_t)t->layers * NSLOT + (uint32_t)g; }
static inline uint32_t id_kept(const struct tracer *t, int gen, int32_t k)
{
    return id_glob(t, NGLOB) + (uint32_t)gen * (2 * (uint32_t)t->layers + 1) + (uint32_t)k;
}
/* per unit: FSDP2's reduce-scatter input and output; FSDP1's gathered flat parameter, its
 * flat gradient (the views' cat) and a tied weight's summed gradient */
enum { U_RS_IN, U_RS_OUT, U_AG, U_CAT, U_SUM, U_COUNT };
static inline uint32_t id_unit(const struct tracer *t, int kind, uint32_t u)
{
    return id_kept(t, 2, 0) + (uint32_t)kind * ((uint32_t)t->layers + 1) + u;
}

void trace_note_peak(struct tracer *t);
/* id allocated and freed in pool st: the default stream's (t->st: ta, tf) or one of FSDP's
 * side streams' (stepfsdp.c). */
static inline void tpa(struct tracer *t, allocsim_state *st, uint32_t id, uint64_t bytes)
{
    if (!t->fail && allocsim_alloc(st, bytes, &t->h[id]) != ALLOCSIM_OK)
        t->fail = 1;
    t->live[id] = 1;
    if (t->unit)
        trace_note_peak(t);
}
static inline void tpf(struct tracer *t, allocsim_state *st, uint32_t id)
{
    if (!t->fail && allocsim_free(st, t->h[id]) != ALLOCSIM_OK)
        t->fail = 1;
    t->live[id] = 0;
}
static inline void ta(struct tracer *t, uint32_t id, uint64_t bytes) { tpa(t, &t->st, id, bytes); }
static inline void tf(struct tracer *t, uint32_t id) { tpf(t, &t->st, id); }
/* Hands a live allocation to another id (a tensor that changes owner, no copy). */
static inline void tmove(struct tracer *t, uint32_t to, uint32_t from)
{
    t->h[to] = t->h[from];
    t->live[to] = t->live[from];
    t->live[from] = 0;
}

/* Bytes per element of the weights, their gradients and optimizer states (FSDP2: the fp32
 * shards and their states; the gradients its reduce-scatter writes). */
static inline uint64_t wbytes(const struct stepreplay_shape *sh)
{
    return (sh->amp && sh->full) || (sh->shards > 1 && !sh->shard16) ? 4 : sh->ew;
}

/* Whether parameter pi is a bitsandbytes 4-bit weight: a block Linear's. */
static inline bool quantized(const struct stepreplay_shape *sh, size_t pi)
{
    return sh->quant4 && tensor_is_block_matrix(&sh->params->t[pi]);
}

/* The elements parameter pi stores: a 4-bit weight packs two weights a byte into
 * quant_storage's 16-bit elements (bitsandbytes nn/modules.py Params4bit, quant_storage
 * torch.bfloat16 as FSDP QLoRA loads it), a quarter of its weights; FSDP flattens and
 * shards those elements like any other. */
static inline uint64_t numel(const struct stepreplay_shape *sh, size_t pi)
{
    const uint64_t n = (uint64_t)tensor_numel(&sh->params->t[pi]);
    return quantized(sh, pi) ? (n + 3) / 4 : n;
}

/* The elements of parameter pi this rank holds: all of it, or under FSDP2 its shard,
 * fully_shard's padded_sharded_param_size (dim 0 split in `shards`, rounded up; torch
 * distributed/fsdp/_fully_shard/_fsdp_param.py FSDPParam._init_sharded_param). */
static inline uint64_t held_numel(const struct stepreplay_shape *sh, size_t pi)
{
    const struct tensor *x = &sh->params->t[pi];
    if (sh->shards < 2)
        return numel(sh, pi);
    if (quantized(sh, pi)) /* Params4bit's data is one column of packed elements */
        return (numel(sh, pi) + sh->shards - 1) / sh->shards;
    return ((uint64_t)x->rows + sh->shards - 1) / sh->shards * (uint64_t)x->cols;
}

struct ctx {
    struct tracer *t;
    const struct stepreplay_shape *sh;
    uint64_t tok;  /* tokens of the micro-batch */
    int32_t l;
    bool ckpt_fwd; /* a checkpointed forward: what backward would save dies at its last use */
};
static inline void la(const struct ctx *c, int s, uint64_t per_tok) { ta(c->t, id_slot(c->t, c->l, s), c->tok * per_tok); }
static inline void lf(const struct ctx *c, int s) { tf(c->t, id_slot(c->t, c->l, s)); }
/* A tensor kept for backward only: under a checkpointed forward the saved-tensor hooks keep
 * nothing, so it dies where the forward last reads it. */
static inline void saved(const struct ctx *c, int s)
{
    if (c->ckpt_fwd)
        lf(c, s);
}

struct roles {
    size_t embed, head;
    size_t *layer; /* layers x ROLE_COUNT parameter indices */
};

/* apply_rotary_pos_emb on slot `in` (width w) into slot `e` (steptrace.c). */
void trace_rope_fwd(const struct ctx *c, int in, int e, uint64_t w);
/* The attention between RoPE and o_proj's input, and its backward (steptrace.c). */
void trace_attn_fwd(const struct ctx *c);
void trace_attn_bwd(const struct ctx *c);
/* o_proj's input once o_proj has run, kept for its backward or not: eager attention's own
 * contiguous copy (S_AOC); under SDPA a view of the output SDPA saves (activations.c
 * o_input_own: the kernels write (B, T, heads, head_dim), so transpose(1, 2).contiguous()
 * copies nothing), which adds no bytes and holds that output until o_proj has run.
 * o_saved_slot: the slot o's backward releases, or -1 under SDPA (trace_attn_bwd does). */
void trace_o_input_done(const struct ctx *c, bool kept);
static inline int o_saved_slot(const struct ctx *c) { return c->sh->eager ? S_AOC : -1; }
/* Events [from, to) of loss path lp (losspath_ops) over nv tokens x vocabulary entries: slot
 * s is the tensor id_glob(G_LP + s), the loop's kept outputs (lp->outputs_slot) `outputs`.
 * The free of the logits' gradient waits for the lm_head's backward (t->head_grad), and a
 * kept output's last free for the loop. */
void trace_loss_ops(struct tracer *t, const struct lp_ops *lp, size_t from, size_t to, uint64_t nv,
                    uint32_t outputs);
/* optimizer.zero_grad(set_to_none=True). */
void trace_zero_grad(struct tracer *t);
/* What a checkpointed layer l's forward does not keep. */
void trace_ckpt_drop(struct tracer *t, int32_t l);
/* The optimizer's step (stepreplay_opt); *have_states after the first. */
void trace_optimizer_step(struct tracer *t, const struct stepreplay_shape *sh, bool *have_states);
/* FSDP2's hooks on unit u (a layer; `layers`: the root) (stepfsdp.c). */
void fsdp_unshard(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u);
/* A unit's pre-backward: gathered again (FSDP2), or kept and the next one prefetched
 * (FSDP1's BACKWARD_PRE); u = layers: the root's, at the loss's backward. */
void fsdp_pre_backward(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u);
void fsdp_reshard(struct tracer *t, uint32_t u);
void fsdp_post_backward(struct tracer *t, const struct stepreplay_shape *sh, uint32_t u);
/* zero_grad: the reduce-scatter outputs, which the sharded gradients view, die. */
void fsdp_zero_grad(struct tracer *t);
/* The root's post-backward callback: the root's reduction, then its input buffer freed. */
void fsdp_backward_end(struct tracer *t, const struct stepreplay_shape *sh);
/* The units of the parameters and the reduce-scatter stream's pool; -1 when memory runs out. */
int fsdp_open(struct tracer *t, const struct stepreplay_shape *sh, const allocsim_config *cfg);
/* The tracer's memory, the parameters' roles and an empty allocator.
 * @return 0, or -1 when memory runs out (trace_close frees what was taken either way). */
int trace_open(struct tracer *t, struct roles *r, const struct stepreplay_shape *sh);
void trace_close(struct tracer *t, struct roles *r);

#endif
