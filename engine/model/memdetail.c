/* memdetail.c: the tensors behind each memory term (memdetail.h).
 *
 * Each term of a phase is a sum of parts that memmodel.c computes per configuration
 * (mem_resident: weights, gradients, states, autocast copies, gathered units, buckets) or
 * per token (mem_act_tok, the loss path, the TP and pipeline buffers). The rows below
 * compose the peak phase from those parts as memmodel.c's fixed_phases, pp_phases and
 * memmodel_eval do, and split each part into its tensors: the weights from the plan's
 * tensor list with each tensor's format, the trained tensors' gradients and states by
 * their share of the trained elements, the activations by what one block saves per token.
 * A part whose tensors are fractional bytes (NF4's 4.5 bits, a shard of 1/dp) is split so
 * that its whole bytes add up to the part (the largest remainders take the odd bytes);
 * tests/test_memdetail.c checks the sums against the printed terms. */
#include "memdetail.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "activations.h"
#include "float8.h"
#include "mempoint.h"
#include "resident.h"
#include "units.h"

/* --- sources: where each size comes from ---------------------------------------------- */
#define SRC_CONTEXT "measured: datasets/gpus.csv context_bytes (datasets/CATALOG.md)"
#define SRC_AMP_CACHE "torch autocast_mode.cpp cached_cast: every block's 16-bit weight casts cached until " \
                      "the model's forward (and the loss inside it) returns; checkpointing saves none of " \
                      "them (datasets/measured/h200-20261127.csv gpu-25min-26/-27)"
#define SRC_NCCL "measured: datasets/gpus.csv nccl_bytes, NCCL's buffers outside the allocator"
#define SRC_CUBLAS "pytorch aten/src/ATen/cuda/CublasHandlePool.cpp getNewWorkspace (torch >= 2.0, " \
                   "PR #124250): one workspace per handle, forward and autograd threads"
#define SRC_WEIGHT "HF modelling code (engine/model/tensors.c builds the list); fp32 under " \
                   "mixed precision (torch.amp keeps the parameters fp32)"
#define SRC_FROZEN "frozen base in the compute dtype (fp32 with litgpt's bf16-mixed, and beside a k-bit base prepared by peft prepare_model_for_kbit_training)"
#define SRC_QUANT "bitsandbytes functional.quantize_4bit: 4 bits + fp32 absmax per 64 weights " \
                  "(double quant: 8-bit absmax + fp32 per 256 blocks), FSDP / ZeRO-3 shard the 4 bits " \
                  "and every rank keeps the absmax whole (module.quant_state); LLM.int8: int8"
#define SRC_INT8_SCALE "bitsandbytes Int8Params (LLM.int8): one fp32 scale per row"
#define SRC_UNTIED "litgpt: a separate lm_head even for tied models (model.py GPT.lm_head)"
#define SRC_ROPE "transformers <= 4.39: each attention layer's LlamaRotaryEmbedding buffers, whole on every rank"
#define SRC_LORA "PEFT tuners/lora/layer.py: lora_A (r x in), lora_B (out x r), fp32 by " \
                 "autocast_adapter_dtype; one adapter per fused module"
#define SRC_MIXED_UNIT "torch FSDP use_orig_params=True (Lightning fsdp.py:175 @71aed751f7): a Block " \
                       "unit's flat parameter requires grad if any of its parameters does " \
                       "(_wrap_utils.py _validate_frozen_params); lit-gpt 8641822 lora.py wraps {Block}"
#define SRC_GRAD "torch autograd: one .grad per trained parameter (zero_grad(set_to_none=True) " \
                 "frees them between steps); DeepSpeed stage_1_and_2.py, Megatron main_grad"
#define SRC_ACC_GRAD "torch FSDP no_sync: accumulates the full model's gradients until the sync"
#define SRC_HEAD_GRAD "torch autograd: the lm_head's weight gradient, first of backward"
#define SRC_ROOT_GRAD "torch FSDP1 _flat_param.py _use_unsharded_views: autograd-tracked split views of " \
                      "the flat parameter; split's backward waits for the embedding's gradient"
#define SRC_OPT_IN_BWD "torchtune optimizer-in-backward: each gradient stepped and freed when ready"
#define SRC_STATE "torch/optim/adamw.py exp_avg + exp_avg_sq (bitsandbytes AdamW8bit: 1 byte " \
                  "each); DeepSpeed stage_1_and_2.py fp32 master partition; Megatron 12/d"
#define SRC_PAGED "bitsandbytes optim/optimizer.py get_state_buffer @4a6fb352: states of parameters " \
                  "under 1e5 elements from the caching allocator, the rest in managed memory (resident.c " \
                  "bnb_paged_states)"
#define SRC_STEP_TMP "torch/optim/adamw.py _multi_tensor_adamw: foreach sqrt(exp_avg_sq); " \
                     "DeepSpeed stage_1_and_2.py step: the partition's gradients cast to fp32"
#define SRC_AMP "torch autocast: a 16-bit copy of each fp32 weight per matmul, kept for backward " \
                "(one block's under checkpointing, during its recomputation)"
#define SRC_FP8_W "torchao @eab345c2 float8_linear.py: Float8Linear saves weight_fp8_t (e4m3) for " \
                  "backward; eager SAC caches torchtitan @9dec370 _save_list's aten.abs outputs; + " \
                  "autocast's bf16 lm_head copy"
#define SRC_FP8_LIN_IN "torchao @eab345c2 float8_linear.py manual_float8_matmul_with_args_in_float8: " \
                       "each Float8Linear saves its own e4m3 input_fp8 (rowwise: the bf16 input)"
#define SRC_DEQUANT "bitsandbytes autograd/_functions.py MatMul4Bit: the weight dequantized " \
                    "per matmul (+ its fp16 dequantized copy beside the cast when Lightning " \
                    "quantized it from fp16)"
#define SRC_NORM "HF LlamaRMSNorm saves its fp32 input (LayerNorm its input), + the normalised input " \
                 "a trained weight multiplies, in the residual dtype"
#define SRC_LIN_IN "torch.nn.Linear saves its input for the weight gradient (trained weights only: " \
                   "mm's guard_for; under autocast each reader's own cast of an fp32 normed input); " \
                   "bitsandbytes MatMul4Bit keeps its input (ctx.tensors)"
#define SRC_SDPA "torch SDPA (flash / memory-efficient): q, k, v, output + fp32 logsumexp per head"
#define SRC_EAGER "eager attention: q, expanded k and v, fp32 softmax and its 16-bit cast " \
                  "(+ tanh softcapping's output: litgpt model.py, Gemma 2)"
#define SRC_MLP "HF gated MLP: gate, act(gate), up (a plain MLP: fc1's output); MoE: " \
                "transformers MixtralSparseMoeBlock @00d4b3d2 expert loop"
#define SRC_LORA_ACT "PEFT lora layer: lora_A's input (dropout copy and mask, or its fp32 cast) " \
                     "and its r-wide output"
#define SRC_CKPT "torch.utils.checkpoint: a checkpointed block keeps its input"
#define SRC_SAC "torchtitan models/llama3/infra/parallelize.py op-level SAC: block input, " \
                "attention output + logsumexp, every other matmul's output"
#define SRC_RECOMPUTE "torch.utils.checkpoint: backward reruns one block's forward"
#define SRC_BWD_WS "one block's backward: the output gradient and the MLP's input gradients"
#define SRC_TAIL "final norm's saved input and the lm_head input"
#define SRC_LIGER "Liger-Kernel ops/fused_linear_cross_entropy.py fused_linear_cross_entropy_forward " \
                  "@00eba634: grad_input, chunks of next_power_of_2(cdiv(N, cdiv(V, h))) tokens"
#define SRC_MASK "transformers masking_utils.sdpa_mask (bool, padded batches); torch attention.cpp " \
                 "convert_boolean_attn_mask per call, kept by the memory-efficient kernel"
#define SRC_AMP_HEAD "torch autocast cached_cast: the tied fp32 embedding cast to 16 bit for the lm_head's " \
                     "matmul, kept for its backward (snapshot datasets/measured/h100-20261127-snapshots/gpu-25min-15.txt)"
#define SRC_KBIT "peft utils/other.py prepare_model_for_kbit_training: the lm_head in fp32; its " \
                 "matmul under autocast keeps the 16-bit cast (torch autocast_mode.h cached_cast)"
#define SRC_PP_RECV "torch distributed/pipelining/stage.py PipelineStage._prepare_forward_infra and " \
                    "_create_grad_recv_info: one buffer per micro-batch, kept across steps (01386103)"
#define SRC_PP_OUT "torch distributed/pipelining/stage.py forward_one_chunk: the last stage appends each " \
                   "micro-batch's output to output_chunks, cleared when the next step starts (01386103)"
#define SRC_PP_OUTS "torch distributed/pipelining/stage.py forward_one_chunk: every stage appends its output " \
                    "to output_chunks until pytorch#153383 (2025-05), cleared when the next step starts"
#define SRC_PP_IGRAD "torch distributed/pipelining/_backward.py stage_backward: each input gradient stays " \
                     "in its receive buffer's .grad until clear_runtime_states (before pytorch#164329)"
#define SRC_EVAL "validation: the logits and their log_softmax; litgpt (5895df10 validate): Fabric's fp32 " \
    "copy, the shifted reshape copy, its fp32 log_softmax, and fit()'s last training logits"
#define SRC_BNB_HELD "bitsandbytes 0.42.0 MatMul4Bit: ctx.tensors = (A, B), not released by backward (bnb " \
    "PR #1270, 0.43.2); litgpt fit() keeps the graph through `logits` until the next forward returns"
#define SRC_KEPT_LOGITS "PEFT MetaMathQA run.py L213-215 @5fe7f8f8 `outputs`; torchtune recipes @0217d44c `logits` " \
    "(lora_finetune_single_device.py L460-469); litgpt fit() `logits` (Fabric's fp32 copy, 5895df10): " \
    "held until the next forward returns"
#define SRC_GATHER "torch FSDP: the root unit stays gathered (_post_forward_reshard), one block " \
                   "gathered, in backward + the prefetched block and a block's gradient; " \
                   "Gemini (no units): the whole 16-bit model (LLMem 5.2)"
#define SRC_BUCKET "torch DDP reducer buckets (one more copy of the gradients); DeepSpeed " \
                   "ipg_buffer of hidden^2 (HF integrations/deepspeed.py reduce_bucket_size auto); " \
                   "ZeRO-3's __ipg_bucket_flat_buffer of DeepSpeed's default 5e8 under an accelerate " \
                   "config (deepspeed runtime/zero/stage3.py, config.py)"
#define SRC_TP_BUF "Megatron TP all-reduce buffer of [s, b, h]"
#define SRC_PP_BUF "Megatron p2p_communication.py recv/send buffers of [s, b, h], both ways"
#define SRC_LLMEM "LLMem (Kim et al. 2024), reference/llmem-model.md "

/* --- rows ------------------------------------------------------------------------------- */

struct build {
    struct mem_detail *d;
    const struct train_config *c;
    double real[MEMDETAIL_MAX]; /* a part's exact (fractional) bytes per row */
};

static struct mem_detail_row *add_row(struct build *b, enum mem_term term, const char *name,
                                      const char *dtype, const char *source)
{
    struct mem_detail *d = b->d;
    if (d->n == MEMDETAIL_MAX) {
        d->truncated = true;
        return NULL;
    }
    struct mem_detail_row *r = &d->rows[d->n];
    memset(r, 0, sizeof *r);
    r->term = term;
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    snprintf(r->count, sizeof r->count, "1");
    r->source = source;
    b->real[d->n] = 0;
    d->n++;
    return r;
}

/* A row of exact bytes. */
static struct mem_detail_row *row_bytes(struct build *b, enum mem_term term, const char *name,
                                        const char *dtype, uint64_t bytes, const char *source)
{
    struct mem_detail_row *r = bytes ? add_row(b, term, name, dtype, source) : NULL;
    if (r)
        r->bytes = bytes;
    return r;
}

/* Rows [from, n) hold fractional bytes that make up `total`: whole bytes by the largest
 * remainders. When they do not add up to within a byte a row, the floors stay and the
 * term's sum shows the difference (the test fails). */
static void apportion(struct build *b, size_t from, uint64_t total)
{
    struct mem_detail *d = b->d;
    uint64_t floors = 0;
    for (size_t i = from; i < d->n; i++) {
        d->rows[i].bytes = (uint64_t)b->real[i];
        floors += d->rows[i].bytes;
    }
    if (total < floors || total - floors > d->n - from)
        return;
    for (uint64_t left = total - floors; left > 0; left--) {
        size_t best = from;
        double frac = -1;
        for (size_t i = from; i < d->n; i++) {
            double f = b->real[i] - floor(b->real[i]);
            if (f > frac) {
                frac = f;
                best = i;
            }
        }
        d->rows[best].bytes++;
        b->real[best] = floor(b->real[best]); /* taken */
    }
}

static const char *dtype_of(uint64_t bytes, enum precision prec)
{
    if (bytes == 4)
        return "fp32";
    if (bytes == 2)
        return prec == PREC_FP16 ? "fp16" : "bf16";
    if (bytes == 1) /* --precision fp8: the float8 casts torchao saves are e4m3 */
        return prec == PREC_FP8 ? "e4m3" : "int8";
    return "mixed";
}

/* --- weight groups: like tensors of the plan's list -------------------------------------- */

#define GROUPS_MAX 64

struct group {
    const struct tensor *t; /* the first of its tensors */
    int64_t n;              /* tensors */
    int32_t layers;         /* blocks they are in (0: outside the blocks) */
    int32_t last_layer;
};

static bool same_kind(const struct tensor *a, const struct tensor *b)
{
    return a->role == b->role && a->bias == b->bias && a->expert == b->expert && a->rows == b->rows &&
           a->cols == b->cols && (a->layer < 0) == (b->layer < 0);
}

static size_t groups_build(const struct model_plan *p, struct group *g)
{
    size_t n = 0;
    for (size_t i = 0; i < p->tensors.n; i++) {
        const struct tensor *t = &p->tensors.t[i];
        size_t k = 0;
        while (k < n && !same_kind(g[k].t, t))
            k++;
        if (k == n) {
            if (n == GROUPS_MAX)
                continue; /* flagged by the trained-elements check */
            g[n++] = (struct group){.t = t, .last_layer = -1};
        }
        g[k].n++;
        if (t->layer >= 0 && t->layer != g[k].last_layer) {
            g[k].layers++;
            g[k].last_layer = t->layer;
        }
    }
    return n;
}

/* Elements of a group on one GPU: TP shards the matrices, EP the routed experts (not
 * under ZeRO-3, whose shard is 1/dp either way: resident.c resident_terms). */
static double group_elems(const struct group *g, const struct train_config *c, const struct mem_resident *r)
{
    double e = (double)tensor_numel(g->t) * (double)g->n;
    if (tensor_is_matrix(g->t)) {
        e /= g->t->role == ROLE_EMBED ? (double)train_embed_tp(c) : (double)c->tp;
        if (g->t->expert && !r->zero3)
            e /= (double)train_ep(c);
    }
    return e;
}

static void group_label(const struct group *g, char *name, size_t nn, char *shape, size_t ns,
                        char *count, size_t nc)
{
    const struct tensor *t = g->t;
    snprintf(name, nn, "%s%s %s", t->expert ? "expert " : "", tensor_role_name(t->role),
             t->bias ? "bias" : "weight");
    if (t->cols == 1)
        snprintf(shape, ns, "%" PRId64, t->rows);
    else
        snprintf(shape, ns, "%" PRId64 " x %" PRId64, t->rows, t->cols);
    if (g->layers > 0)
        snprintf(count, nc, "%" PRId64 " x %d layers", g->n / g->layers, g->layers);
    else
        snprintf(count, nc, "%" PRId64, g->n);
}

/* A pipeline stage holds its share of each whole-model group (memmodel.c pp_stage scales
 * the terms by the stage's share of the parameters): the count says so. */
static void stage_note(const struct train_config *c, char *count, size_t n)
{
    const size_t len = strlen(count);
    if (c->method == METHOD_PP && len < n)
        snprintf(count + len, n - len, ", stage share");
}

/* --- the trained tensors: the weight groups (full), or the adapters (LoRA) ---------------- */

struct trained {
    char name[40], shape[64], count[48];
    double elems; /* on one GPU */
    bool root;    /* the root unit's embedding or lm_head, as resident.c counts its root */
};

static size_t adapters(const struct model_plan *p, const struct train_config *c, const struct mem_resident *r,
                       struct trained *out)
{
    const uint32_t targets = plan_lora_targets(p, c);
    const double ep_keep = r->zero3 ? 0.0 : 1.0 - 1.0 / (double)train_ep(c);
    size_t n = 0;
    for (int role = 0; role < ROLE_COUNT; role++) {
        if (!(targets & TARGET_BIT(role)) || !p->lora_io[role])
            continue;
        const struct tensor *t = NULL;
        int64_t mods = 0;
        for (size_t i = 0; i < p->tensors.n; i++)
            if (p->tensors.t[i].role == (enum tensor_role)role && tensor_is_matrix(&p->tensors.t[i])) {
                t = t ? t : &p->tensors.t[i];
                mods++;
            }
        const bool fused = plan_peft_fused(c);
        double io = (double)(p->lora_io[role] - (fused ? p->lora_shared_in[role] : 0));
        if (c->lora_targets & TARGET_BIT(role))
            io -= (double)p->lora_io_expert[role] * ep_keep;
        struct trained *a = &out[n++];
        a->root = false;
        a->elems = io * (double)c->lora_r / (double)c->tp;
        snprintf(a->name, sizeof a->name, "lora_A + lora_B on %s", tensor_role_name((enum tensor_role)role));
        snprintf(a->shape, sizeof a->shape, "%d x %" PRId64 " + %" PRId64 " x %d", c->lora_r, t->cols, t->rows,
                 c->lora_r);
        mods -= fused ? p->lora_shared_mods[role] : 0;
        if (mods >= p->spec.layers)
            snprintf(a->count, sizeof a->count, "%" PRId64 " x %" PRId64 " layers", mods / p->spec.layers,
                     p->spec.layers);
        else
            snprintf(a->count, sizeof a->count, "%" PRId64, mods);
    }
    return n;
}

static size_t trained_list(const struct model_plan *p, const struct train_config *c, const struct mem_resident *r,
                           const struct group *g, size_t ng, struct trained *out)
{
    if (c->finetune != FT_FULL)
        return adapters(p, c, r, out);
    for (size_t k = 0; k < ng; k++) {
        group_label(&g[k], out[k].name, sizeof out[k].name, out[k].shape, sizeof out[k].shape, out[k].count,
                    sizeof out[k].count);
        out[k].elems = group_elems(&g[k], c, r);
        out[k].root = g[k].t->role == ROLE_EMBED || g[k].t->role == ROLE_LM_HEAD;
    }
    const struct model_spec *m = &p->spec;
    if (m->tied && (c->features & FEAT_UNTIED_HEAD) && ng < GROUPS_MAX) { /* trained too */
        const int64_t e = m->emb_dim ? m->emb_dim : m->hidden;
        snprintf(out[ng].name, sizeof out[ng].name, "lm_head weight (untied copy)");
        snprintf(out[ng].shape, sizeof out[ng].shape, "%" PRId64 " x %" PRId64, m->vocab, e);
        snprintf(out[ng].count, sizeof out[ng].count, "1");
        out[ng].elems = (double)(m->vocab * e) / (double)c->tp;
        out[ng].root = true;
        return ng + 1;
    }
    return ng;
}

/* A trained part (gradients, states, step temporaries): its bytes split over the trained
 * tensors by their share of the trained elements; without the root unit's tensors where
 * their part does not exist yet (no_root). */
static void trained_rows(struct build *b, enum mem_term term, const struct trained *t, size_t nt,
                         double all, uint64_t total, bool no_root, const char *suffix, const char *dtype,
                         const char *src)
{
    for (size_t k = 0; no_root && k < nt; k++)
        all -= t[k].root ? t[k].elems : 0.0;
    if (!total || all <= 0)
        return;
    const size_t from = b->d->n;
    for (size_t k = 0; k < nt; k++) {
        if (no_root && t[k].root)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s %s", t[k].name, suffix);
        struct mem_detail_row *r = add_row(b, term, name, dtype, src);
        if (!r)
            return;
        snprintf(r->shape, sizeof r->shape, "%s", t[k].shape);
        snprintf(r->count, sizeof r->count, "%s", t[k].count);
        stage_note(b->c, r->count, sizeof r->count);
        b->real[b->d->n - 1] = (double)total * (t[k].elems / all);
    }
    apportion(b, from, total);
}

/* --- the terms ------------------------------------------------------------------------------ */

struct ctx {
    const struct model_plan *p;
    const struct train_config *c;
    const struct mem_options *opt;
    struct mem_prepared mp;
    struct mem_resident all, r; /* the whole model's and the phase's (a pipeline stage's) */
    struct group g[GROUPS_MAX];
    size_t ng;
    struct trained t[GROUPS_MAX + 1];
    size_t nt;
    double trained_elems;
    struct mem_act_tok act;     /* what one block saves per token, by kind */
    enum mem_phase ph;
};

static bool quantized(const struct ctx *x, const struct tensor *t)
{
    const bool linear = tensor_is_matrix(t) && t->role != ROLE_EMBED && t->role != ROLE_POS_EMBED;
    return x->c->quant != QUANT_NONE &&
           linear && (t->role != ROLE_LM_HEAD || (x->c->features & FEAT_QUANT_HEAD));
}

/* The weights (resident.c resident_terms, master_in_optimizer): every tensor of the list
 * in its format, the adapters, divided as the method shards them. */
static void weight_rows(struct build *b, const struct ctx *x)
{
    const struct train_config *c = x->c;
    const struct mem_resident *r = &x->r;
    const bool offload = c->method == METHOD_OFFLOAD;
    const double div = offload ? (double)c->dp : r->zero3 && !r->ds ? (double)c->dp : 1.0;
    /* a rank's share of what is sharded; offloaded parameters leave only what stays whole */
    const double shard = offload && c->offload == OFFLOAD_PARAMS ? 0.0 : 1.0 / div;
    const uint64_t tb = r->ds ? (c->precision == PREC_FP32 ? 4 : 2) : memmodel_trained_bytes(c);
    /* a pipeline stage holds its share of the model beside its blocks' rotary tables
     * (memmodel.c pp_stage) */
    const uint64_t rest = x->all.w - x->all.tables;
    const double share = rest ? (double)(r->w - r->tables) / (double)rest : 0.0;
    const bool full = c->finetune == FT_FULL;
    const size_t from = b->d->n;
    char name[64], shape[64], count[48];
    if (!r->w) /* offload of the parameters too */
        return;
    for (size_t k = 0; k < x->ng; k++) {
        const struct group *g = &x->g[k];
        const bool q = !full && quantized(x, g->t);
        const double per = full ? (double)tb : memmodel_frozen_elem_bytes(c, q);
        const double whole = q ? memmodel_quant_state_bytes(c) : 0.0;
        if (!shard && !whole)
            continue;
        group_label(g, name, sizeof name, shape, sizeof shape, count, sizeof count);
        struct mem_detail_row *row = add_row(b, TERM_PARAMS, name,
                                             q ? quant_name(c->quant) : dtype_of((uint64_t)per, c->precision),
                                             full ? SRC_WEIGHT : q ? SRC_QUANT : SRC_FROZEN);
        if (!row)
            return;
        snprintf(row->shape, sizeof row->shape, "%s", shape);
        snprintf(row->count, sizeof row->count, "%s", count);
        stage_note(c, row->count, sizeof row->count);
        b->real[b->d->n - 1] = group_elems(g, c, r) * ((per - whole) * shard + whole) * share;
    }
    const struct model_spec *m = &x->p->spec;
    if (m->tied && (c->features & FEAT_UNTIED_HEAD)) {
        const bool q = !full && c->quant != QUANT_NONE && (c->features & FEAT_QUANT_HEAD);
        const double per = full ? (double)tb : memmodel_frozen_elem_bytes(c, q);
        const double whole = q ? memmodel_quant_state_bytes(c) : 0.0;
        struct mem_detail_row *row = !shard && !whole ? NULL :
                                     add_row(b, TERM_PARAMS, "lm_head weight (untied copy)",
                                             q ? quant_name(c->quant) : dtype_of((uint64_t)per, c->precision),
                                             SRC_UNTIED);
        if (row) {
            const int64_t e = m->emb_dim ? m->emb_dim : m->hidden;
            snprintf(row->shape, sizeof row->shape, "%" PRId64 " x %" PRId64, m->vocab, e);
            b->real[b->d->n - 1] = (double)(m->vocab * e) / (double)c->tp * ((per - whole) * shard + whole) * share;
        }
    }
    if (!full && c->quant == QUANT_INT8 && shard) {
        struct mem_detail_row *row = add_row(b, TERM_PARAMS, "int8 row scales", "fp32", SRC_INT8_SCALE);
        if (row) {
            snprintf(row->shape, sizeof row->shape, "%" PRId64 " rows", x->p->block_rows);
            b->real[b->d->n - 1] = 4.0 * (double)x->p->block_rows / (double)c->tp * shard * share;
        }
    }
    if (r->tables) { /* resident.c resident_rope_table */
        const uint64_t eb = resident_rope_table(x->p, c) / (uint64_t)(m->max_pos * m->head_dim);
        struct mem_detail_row *row = add_row(b, TERM_PARAMS, "rotary cos/sin tables",
                                             dtype_of(eb, c->precision), SRC_ROPE);
        if (row) {
            snprintf(row->shape, sizeof row->shape, "%" PRId64 " x %" PRId64, m->max_pos, m->head_dim);
            snprintf(row->count, sizeof row->count, "2 x %" PRIu64 " layers",
                     r->tables / (2 * resident_rope_table(x->p, c)));
            b->real[b->d->n - 1] = (double)r->tables;
        }
    }
    if (!full && shard) { /* the adapters, in the trained dtype */
        for (size_t k = 0; k < x->nt; k++) {
            char n2[64];
            snprintf(n2, sizeof n2, "%s", x->t[k].name);
            struct mem_detail_row *row = add_row(b, TERM_PARAMS, n2, dtype_of(tb, c->precision), SRC_LORA);
            if (!row)
                return;
            snprintf(row->shape, sizeof row->shape, "%s", x->t[k].shape);
            snprintf(row->count, sizeof row->count, "%s", x->t[k].count);
            stage_note(c, row->count, sizeof row->count);
            b->real[b->d->n - 1] = x->t[k].elems * (double)tb * shard * share;
        }
    }
    apportion(b, from, r->w);
}

/* The phase's fixed part of each term, composed as memmodel.c fixed_phases / pp_phases. */
struct fixed {
    uint64_t grads, head_grad; /* head_grad: only the lm_head's gradient exists */
    uint64_t grads_frozen;     /* the frozen weights' part of grads (resident.c mixed_unit_grads) */
    bool grads_whole;          /* FSDP no_sync: the whole model's gradients */
    bool grads_no_root;        /* FSDP1's backward: the root unit's shard is not made yet */
    uint64_t opt, tmp;
    uint64_t root_hold, root_end; /* FSDP1's root gradient (resident.c root_grads) */
    uint64_t amp, amp_one_block, dequant, dequant_head, amp_head;
    uint64_t gather, bucket;
    bool gather_bwd;
};

static void fixed_parts(const struct ctx *x, struct fixed *f)
{
    const struct train_config *c = x->c;
    const struct mem_resident *r = &x->r;
    const enum mem_phase ph = x->ph;
    memset(f, 0, sizeof *f);
    f->opt = r->o;
    f->tmp = ph == PHASE_OPTIMIZER ? r->tmp : 0;
    f->bucket = r->bucket;
    f->gather_bwd = ph == PHASE_BWD_LAST || ph == PHASE_BWD_FIRST;
    f->gather = ph == PHASE_OPTIMIZER ? 0 : ph == PHASE_BWD_LAST ? r->gather_bwd_last
              : f->gather_bwd ? r->gather_bwd : r->gather_fwd;
    if (c->method == METHOD_PP) {
        /* FSDP stages (torchtitan) hold their unsharded accumulated gradients until the step */
        const bool fsdp = c->stack == STACK_TORCHTITAN;
        f->grads = ph == PHASE_OPTIMIZER || !fsdp ? r->g : r->acc;
        f->grads_whole = fsdp && ph != PHASE_OPTIMIZER;
        f->amp = ph == PHASE_BWD_FIRST ? 0 : ph == PHASE_OPTIMIZER ? 0 : r->amp_all;
        f->amp_one_block = ph == PHASE_BWD_FIRST ? r->amp_one : 0;
        f->dequant = ph == PHASE_FORWARD || ph == PHASE_BWD_FIRST || ph == PHASE_BWD_LAST ? r->dequant : 0;
        f->dequant_head = ph == PHASE_LOSS ? r->dequant_head : 0;
        f->amp_head = ph == PHASE_LOSS ? r->amp_head : 0;
        return;
    }
    const bool fsdp_acc = train_fsdp_sharded(c);
    const uint64_t acc = (c->features & FEAT_GRAD_ACCUM) ? (fsdp_acc ? r->g * (uint64_t)c->dp : r->g) : 0;
    f->grads_whole = acc && fsdp_acc;
    /* memmodel.c fixed_phases: the longest batch first has no summed gradient before its
     * backward, and the last block's only at its first block-backward */
    const bool first = (c->features & FEAT_LONGEST_FIRST) != 0;
    switch (ph) {
    case PHASE_FORWARD:
    case PHASE_LOSS:
        f->grads = first ? 0 : acc;
        /* memmodel.c fixed_phases: Liger's fused loss makes the lm_head's gradient */
        if (ph == PHASE_LOSS && losspath_select(c, x->p->spec.model_type) == LOSS_LIGER)
            f->head_grad = memmodel_head_grad_bytes(x->p, c);
        break;
    case PHASE_BWD_LAST:
        if (acc) {
            f->grads = first ? acc / (uint64_t)x->p->spec.layers : acc;
            f->root_hold = r->root_hold;
        } else {
            f->head_grad = memmodel_head_grad_bytes(x->p, c);
        }
        break;
    case PHASE_BWD_FIRST:
    case PHASE_BWD_END:
        f->grads = memmodel_bwd_grads(acc, r->g, r->root_shard);
        f->grads_no_root = !acc && r->root_shard;
        f->grads_whole = f->grads_whole && acc > r->g;
        f->root_hold = ph == PHASE_BWD_FIRST ? r->root_hold : 0;
        f->root_end = ph == PHASE_BWD_END ? r->root_end : 0;
        f->gather = ph == PHASE_BWD_END ? r->root_gather : f->gather;
        break;
    case PHASE_OPTIMIZER:
        f->grads = r->g;
        f->grads_whole = false;
        break;
    default:
        break;
    }
    f->grads_frozen = r->g ? (uint64_t)((double)f->grads * (double)r->g_frozen / (double)r->g) : 0;
    const uint64_t amp_fwd = c->grad_ckpt ? r->amp_one : r->amp_all;
    const bool one = ph == PHASE_BWD_FIRST || (c->grad_ckpt && ph != PHASE_OPTIMIZER && ph != PHASE_EVAL);
    if (ph == PHASE_BWD_END) /* memmodel.c fixed_phases: nothing per block is left */
        return;
    if (ph != PHASE_OPTIMIZER && ph != PHASE_EVAL) {
        f->amp = one ? 0 : amp_fwd;
        f->amp_one_block = one ? r->amp_one : 0;
    }
    /* memmodel.c fixed_phases: litgpt's forward is the lm_head's moment, its loss after it */
    const bool head_fwd = memmodel_head_in_forward(c, r->dequant, r->dequant_head);
    f->dequant = ph == PHASE_LOSS || ph == PHASE_OPTIMIZER || (ph == PHASE_FORWARD && head_fwd) ? 0 : r->dequant;
    f->dequant_head = (ph == PHASE_LOSS && !train_fabric_loop(c)) || ph == PHASE_EVAL ||
                      (ph == PHASE_FORWARD && head_fwd) ? r->dequant_head : 0;
    f->amp_head = ph == PHASE_LOSS ? r->amp_head : 0;
}

static void base_rows(struct build *b, const struct ctx *x)
{
    row_bytes(b, TERM_BASE, "CUDA context", "-", x->opt->base_bytes, SRC_CONTEXT);
    row_bytes(b, TERM_BASE, "NCCL buffers", "-", x->mp.nccl, SRC_NCCL);
    struct mem_detail_row *r = row_bytes(b, TERM_BASE, "cuBLAS workspaces", "-", x->opt->ws_alloc, SRC_CUBLAS);
    if (r)
        snprintf(r->count, sizeof r->count, "2");
}

static void resident_rows(struct build *b, const struct ctx *x, const struct fixed *f)
{
    const struct train_config *c = x->c;
    weight_rows(b, x);
    struct mem_detail_row *r = row_bytes(b, TERM_GRADS, "frozen block weights' gradients (mixed FSDP units)",
                                         dtype_of(memmodel_trained_bytes(c), c->precision),
                                         f->grads_frozen, SRC_MIXED_UNIT);
    if (r)
        snprintf(r->count, sizeof r->count, "%" PRId64 " blocks", x->p->spec.layers);
    if (c->features & FEAT_OPT_IN_BWD && !x->r.ds) {
        row_bytes(b, TERM_GRADS, "the largest gradient at a time", dtype_of(memmodel_trained_bytes(c), c->precision),
                  f->grads, SRC_OPT_IN_BWD);
        row_bytes(b, TERM_OPTIMIZER, "its step temporary", dtype_of(memmodel_trained_bytes(c), c->precision),
                  f->tmp, SRC_OPT_IN_BWD);
    } else {
        trained_rows(b, TERM_GRADS, x->t, x->nt, x->trained_elems, f->grads - f->grads_frozen,
                     f->grads_no_root, f->grads_whole ? "gradient (whole, no_sync)" : "gradient", "-",
                     f->grads_whole ? SRC_ACC_GRAD : SRC_GRAD);
        trained_rows(b, TERM_OPTIMIZER, x->t, x->nt, x->trained_elems, f->tmp, false, "step temporaries", "-",
                     SRC_STEP_TMP);
    }
    r = row_bytes(b, TERM_GRADS, "lm_head weight gradient", dtype_of(memmodel_trained_bytes(c), c->precision),
                  f->head_grad, SRC_HEAD_GRAD);
    if (r)
        snprintf(r->shape, sizeof r->shape, "%" PRId64 " x %" PRId64, x->p->spec.vocab,
                 x->p->spec.emb_dim ? x->p->spec.emb_dim : x->p->spec.hidden);
    const char *gdt = dtype_of(c->precision == PREC_FP32 ? 4 : 2, c->precision);
    row_bytes(b, TERM_GRADS, "lm_head weight gradient held for the root's split", gdt, f->root_hold,
              SRC_ROOT_GRAD);
    row_bytes(b, TERM_GRADS, "root unit's gradient pieces + their concatenation", gdt, f->root_end,
              SRC_ROOT_GRAD);
    if (c->features & FEAT_PAGED_OPT) /* which tensors: resident.c bnb_paged_states */
        row_bytes(b, TERM_OPTIMIZER, "states of the parameters under 1e5 elements", "-", f->opt, SRC_PAGED);
    else
        trained_rows(b, TERM_OPTIMIZER, x->t, x->nt, x->trained_elems, f->opt, false,
                     x->r.ds ? "fp32 master + states" : "optimizer states", "-", SRC_STATE);
    if (c->precision == PREC_FP8) { /* resident.c fp8_weight_copies */
        const bool autocast = !train_fsdp_half_gather(c); /* + its bf16 lm_head copy */
        if (c->ckpt_selective)
            row_bytes(b, TERM_ACTIVATIONS, "abs(weight) of the float8 casts (eager SAC cache)",
                      autocast ? "mixed" : "bf16", f->amp, SRC_FP8_W);
        else
            row_bytes(b, TERM_ACTIVATIONS, "float8 weight casts (weight_fp8_t)", autocast ? "mixed" : "e4m3",
                      f->amp, SRC_FP8_W);
        row_bytes(b, TERM_ACTIVATIONS, "float8 weight casts of one block", "e4m3", f->amp_one_block, SRC_FP8_W);
    } else {
        row_bytes(b, TERM_ACTIVATIONS, "autocast 16-bit copies of the fp32 weights", "bf16", f->amp, SRC_AMP);
        row_bytes(b, TERM_ACTIVATIONS, "autocast 16-bit copy of one block's weights", "bf16", f->amp_one_block,
                  SRC_AMP);
    }
    /* Lightning quantized from fp16 (resident.c dequant_bytes): the fp16 dequantized weight
     * beside its cast to the compute dtype */
    const bool cast = (x->c->features & FEAT_DEQUANT_CAST) && x->c->precision != PREC_FP16;
    const char *dq = cast ? "fp16+bf16" : "bf16";
    row_bytes(b, TERM_ACTIVATIONS, "dequantized block Linear (the largest)", dq, f->dequant, SRC_DEQUANT);
    row_bytes(b, TERM_ACTIVATIONS, "dequantized lm_head", dq, f->dequant_head, SRC_DEQUANT);
    row_bytes(b, TERM_ACTIVATIONS, "autocast 16-bit copy of the fp32 lm_head", "bf16", f->amp_head,
              x->c->quant != QUANT_NONE ? SRC_KBIT : SRC_AMP_HEAD);
    row_bytes(b, TERM_COMM, f->gather_bwd ? "gathered units in backward" : "gathered units",
              float8_allgather(c) ? "e4m3+bf16" : "bf16",
              f->gather, SRC_GATHER);
    row_bytes(b, TERM_COMM, "gradient buckets", "-", f->bucket, SRC_BUCKET);
}

/* A per-token part: bytes per token x tokens x blocks. A single tensor of `width` elements
 * of eb bytes a token shows its shape; a composite part its bytes a token. */
static void tok_row(struct build *b, const struct ctx *x, enum mem_term term, const char *name, uint64_t per_tok,
                    uint64_t blocks, uint64_t width, uint64_t eb, const char *src)
{
    const struct train_config *c = x->c;
    const uint64_t t = bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len);
    const bool one = width && width * eb == per_tok;
    struct mem_detail_row *r = row_bytes(b, term, name, one ? dtype_of(eb, c->precision) : "mixed",
                                         bytes_mul(bytes_mul(t, per_tok), blocks), src);
    if (!r)
        return;
    if (one)
        snprintf(r->shape, sizeof r->shape, "%d x %d x %" PRIu64, c->micro_batch, c->seq_len, width);
    else
        snprintf(r->shape, sizeof r->shape, "%d x %d tokens x %" PRIu64 " B", c->micro_batch, c->seq_len,
                 per_tok);
    snprintf(r->count, sizeof r->count, "%" PRIu64 " block%s", blocks, blocks == 1 ? "" : "s");
}

/* One block's saved activations by kind (memmodel.h mem_act_tok), `blocks` times. */
static void block_rows(struct build *b, const struct ctx *x, uint64_t blocks, const char *what)
{
    const struct mem_act_tok a = x->act;
    char name[64];
    const struct { const char *name; uint64_t tok; const char *src; } kinds[] = {
        {"norms", a.norms, SRC_NORM},
        {"linear inputs", a.lin_in, x->c->precision == PREC_FP8 ? SRC_FP8_LIN_IN : SRC_LIN_IN},
        {"attention", a.attn, act_eager_attn(&x->p->spec, x->c) ? SRC_EAGER : SRC_SDPA},
        {"attention scores", a.attn_s * (uint64_t)x->c->seq_len, SRC_EAGER},
        {"attention mask (SDPA's additive copy)", a.mask_on ? a.mask_s * (uint64_t)x->c->seq_len : 0, SRC_MASK},
        {"MLP", a.mlp, SRC_MLP},
        {"LoRA adapters", a.lora, SRC_LORA_ACT},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        snprintf(name, sizeof name, "%s: %s", what, kinds[k].name);
        tok_row(b, x, TERM_ACTIVATIONS, name, kinds[k].tok, blocks, 0, 0, kinds[k].src);
    }
}

/* The Linear inputs a kept graph's bitsandbytes nodes hold (mempoint.c act_coeffs). */
static void bnb_held_rows(struct build *b, const struct ctx *x)
{
    const struct mem_prepared *mp = &x->mp;
    uint64_t held = 0;
    if (x->ph == PHASE_FORWARD || x->ph == PHASE_LOSS)
        held = mp->held_prev ? mp->held_tok : 0;
    else if (x->ph == PHASE_BWD_FIRST)
        held = mp->held_tok - mp->held_blk_tok;
    else if (x->ph == PHASE_OPTIMIZER || x->ph == PHASE_EVAL)
        held = mp->held_tok;
    if (held)
        tok_row(b, x, TERM_ACTIVATIONS, x->ph == PHASE_FORWARD || x->ph == PHASE_LOSS
                    ? "previous step's MatMul4Bit inputs (kept graph)" : "this step's MatMul4Bit inputs (kept graph)",
                held, 1, 0, 0, SRC_BNB_HELD);
}

/* The batch-dependent activations of the phase (memmodel_eval's act[]). */
static void activation_rows(struct build *b, const struct ctx *x)
{
    const struct mem_prepared *mp = &x->mp;
    const enum mem_phase ph = x->ph;
    uint64_t held = 0;
    bnb_held_rows(b, x);
    switch (ph) {
    case PHASE_FORWARD:
        held = (uint64_t)mp->act_layers[0];
        break;
    case PHASE_LOSS:
    case PHASE_BWD_LAST:
        held = (uint64_t)mp->act_layers[1];
        break;
    case PHASE_BWD_FIRST:
        held = 1 + (uint64_t)mp->act_extra_bwd;
        break;
    default:
        return;
    }
    if (!mp->ckpt)
        block_rows(b, x, held, "saved");
    else
        tok_row(b, x, TERM_ACTIVATIONS, x->c->ckpt_selective ? "selective checkpoints" : "block inputs (checkpoints)",
                mp->ckpt_tok, held, (uint64_t)x->p->spec.hidden, x->act.er, x->c->ckpt_selective ? SRC_SAC : SRC_CKPT);
    if ((ph == PHASE_FORWARD && mp->tail_fwd) || ph == PHASE_LOSS)
        tok_row(b, x, TERM_ACTIVATIONS, "final norm + lm_head input", mp->tail_tok, 1, 0, 0, SRC_TAIL);
    if (ph == PHASE_BWD_LAST || ph == PHASE_BWD_FIRST) {
        if (mp->ckpt)
            block_rows(b, x, 1, "recomputed");
        tok_row(b, x, TERM_ACTIVATIONS, "backward working set", mp->bwd_tok, 1, 0, 0, SRC_BWD_WS);
    }
}

static void logits_rows(struct build *b, const struct ctx *x)
{
    const struct train_config *c = x->c;
    const uint64_t entries = bytes_mul(bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len),
                                       (uint64_t)x->mp.vocab);
    struct mem_detail_row *r = NULL;
    char name[64];
    if (x->ph == PHASE_LOSS) {
        const enum loss_path lp = losspath_select(c, x->p->spec.model_type);
        const double per = x->mp.logits_tok[losspath_batch_bucket(c->micro_batch)];
        snprintf(name, sizeof name, "loss path %s: %.2f B per token and vocab entry", loss_path_name(lp), per);
        r = row_bytes(b, TERM_LOGITS, name, "mixed", bytes_scale(entries, per), losspath_source(lp));
    } else if (x->ph == PHASE_EVAL) {
        r = row_bytes(b, TERM_LOGITS, "validation logits + log_softmax", "mixed",
                      bytes_mul(entries, x->mp.eval_logits_tok), SRC_EVAL);
    } else if (x->mp.lg_tok[x->ph]) { /* a loop's kept logits (memmodel.c kept_outputs, kept_logits) */
        const uint64_t per = x->mp.lg_tok[x->ph];
        const bool head = x->ph == PHASE_FORWARD && train_fabric_loop(c); /* memmodel.c kept_logits */
        r = row_bytes(b, TERM_LOGITS, head ? "kept logits + the lm_head's 16-bit output" : "logits the loop keeps past the loss",
                      head ? "mixed" : per == 4 ? "fp32" : "bf16", bytes_mul(entries, per), SRC_KEPT_LOGITS);
    }
    if (r)
        snprintf(r->shape, sizeof r->shape, "%d x %d x %" PRId64, c->micro_batch, c->seq_len, x->mp.vocab);
    /* checkpointing under autocast: the loss's forward beside the cached casts (mempoint.h) */
    const uint64_t extra = x->ph == PHASE_LOSS
                               ? memmodel_amp_cache_extra(&x->mp, entries, losspath_batch_bucket(c->micro_batch))
                               : 0;
    if (extra)
        row_bytes(b, TERM_LOGITS, "loss's forward beside autocast's cache of every block's casts",
                  "mixed", extra, SRC_AMP_CACHE);
    /* Liger's fused loss: no N x V tensor, its chunk and the input's gradient (mempoint.h) */
    const uint64_t t = bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len);
    if (x->ph == PHASE_LOSS && x->mp.liger_inc)
        row_bytes(b, TERM_LOGITS, "Liger: lm_head input grad + one chunk",
                  "mixed", memmodel_liger_bytes(&x->mp, t, false), SRC_LIGER);
    /* the last pipeline stage's kept outputs (memmodel.c logits_coeffs) */
    if (x->mp.pp_out_n && (x->ph == PHASE_LOSS || x->ph == PHASE_BWD_LAST)) {
        r = row_bytes(b, TERM_LOGITS, "pipeline output_chunks: every micro-batch's logits",
                      x->mp.pp_out_tok == 4 ? "fp32" : "bf16",
                      bytes_mul(bytes_mul(entries, x->mp.pp_out_tok), (uint64_t)x->mp.pp_out_n), SRC_PP_OUT);
        if (r) {
            snprintf(r->shape, sizeof r->shape, "%d x %d x %" PRId64, c->micro_batch, c->seq_len, x->mp.vocab);
            snprintf(r->count, sizeof r->count, "%d micro-batches", (int)x->mp.pp_out_n);
        }
    }
}

static void comm_rows(struct build *b, const struct ctx *x)
{
    if (x->ph > PHASE_BWD_FIRST)
        return;
    const uint64_t ea = x->c->precision == PREC_FP32 ? 4 : 2, h = (uint64_t)x->p->spec.hidden;
    const bool torch_pp = x->mp.pp_recv_first_tok || x->mp.pp_recv_last_tok;
    const uint64_t pp_buf = x->c->method == METHOD_PP && !torch_pp ? 2 * ea * h : 0;
    if (x->c->tp > 1) /* 1 byte an element under torchao's float8 TP (float8.c float8_tp) */
        tok_row(b, x, TERM_COMM, "TP all-reduce buffer", x->mp.comm_tok - pp_buf, 1, h,
                (x->mp.comm_tok - pp_buf) / h, SRC_TP_BUF);
    if (pp_buf)
        tok_row(b, x, TERM_COMM, "pipeline send/receive buffers", 2 * ea * h, 1, 0, 0, SRC_PP_BUF);
    if (torch_pp) { /* torch pipelining's per-micro-batch receive buffers (memmodel.c) */
        const bool first = x->ph == PHASE_FORWARD || x->ph == PHASE_BWD_FIRST;
        const uint64_t tok = first ? x->mp.pp_recv_first_tok : x->mp.pp_recv_last_tok;
        if (tok)
            tok_row(b, x, TERM_COMM, first ? "pipeline gradient receive buffers" : "pipeline input receive buffers",
                    tok, 1, 0, 0, SRC_PP_RECV);
        const uint64_t kept = first ? x->mp.pp_outs_first_tok : x->mp.pp_igrad_last_tok;
        if (kept)
            tok_row(b, x, TERM_COMM, first ? "pipeline stage outputs (output_chunks)" : "pipeline input gradients (.grad)",
                    kept, 1, 0, 0, first ? SRC_PP_OUTS : SRC_PP_IGRAD);
        if (!first && x->mp.pp_outs_last_tok) /* the interleaved schedule's other stages */
            tok_row(b, x, TERM_COMM, "pipeline stage outputs (output_chunks)", x->mp.pp_outs_last_tok, 1, 0, 0,
                    SRC_PP_OUTS);
    }
}

/* LLMem's equations (--paper, the colossal stack): memmodel.c eval_llmem maps the paper's
 * terms onto the columns; each column is one of its terms or shares of two. */
static void llmem_rows(struct build *b, const struct mem_estimate *e)
{
    const uint64_t *ph = e->phase[PHASE_LOSS];
    row_bytes(b, TERM_BASE, "m_base: context and workspaces", "-", ph[TERM_BASE], SRC_LLMEM "4.1, m_base");
    row_bytes(b, TERM_PARAMS, "m_p: parameters and gradients (chunks)", "mixed",
              ph[TERM_PARAMS], SRC_LLMEM "4.2 and 5, m_p (m_p16 + m_p32 shares)");
    row_bytes(b, TERM_OPTIMIZER, "m_os: Adam states", "fp32", ph[TERM_OPTIMIZER], SRC_LLMEM "4.3 and 5, m_os");
    row_bytes(b, TERM_ACTIVATIONS, "m_out: block outputs (checkpoints)", "fp16", ph[TERM_ACTIVATIONS],
              SRC_LLMEM "4.4, m_out");
    row_bytes(b, TERM_LOGITS, "m_lm: lm_head output and loss", "mixed", ph[TERM_LOGITS], SRC_LLMEM "4.5, m_lm");
    row_bytes(b, TERM_COMM, "m_back: gathered parameters in backward", "fp16", ph[TERM_COMM],
              SRC_LLMEM "5, m_back");
}

static enum mem_stage stage_of(const struct ctx *x)
{
    if (x->c->method != METHOD_PP)
        return MEM_STAGE_ALL;
    if (x->ph == PHASE_FORWARD || x->ph == PHASE_BWD_FIRST)
        return MEM_STAGE_FIRST;
    if (x->ph == PHASE_LOSS || x->ph == PHASE_BWD_LAST)
        return MEM_STAGE_LAST;
    struct mem_resident f, l; /* the optimizer step: the larger stage (memmodel.c pp_phases) */
    memmodel_resident(x->p, x->c, MEM_STAGE_FIRST, &f);
    memmodel_resident(x->p, x->c, MEM_STAGE_LAST, &l);
    return f.w + f.g + f.o + f.tmp > l.w + l.g + l.o + l.tmp ? MEM_STAGE_FIRST : MEM_STAGE_LAST;
}

void memdetail_build(const struct model_plan *p, const struct train_config *c, const struct mem_options *opt,
                     const struct mem_estimate *e, enum mem_phase phase, struct mem_detail *d)
{
    struct ctx x;
    struct build b = {.d = d, .c = c};
    memset(d, 0, sizeof *d);
    d->phase = phase;
    if (memmodel_uses_llmem(c->stack, opt)) { /* one phase: the paper's lm_head stage */
        d->phase = PHASE_LOSS;
        llmem_rows(&b, e);
        return;
    }
    memset(&x, 0, sizeof x);
    x.p = p;
    x.c = c;
    x.opt = opt;
    x.ph = phase;
    memmodel_prepare(p, c, opt, &x.mp);
    act_block_tok(p, c, &x.act);
    memmodel_resident(p, c, MEM_STAGE_ALL, &x.all);
    memmodel_resident(p, c, stage_of(&x), &x.r);
    x.ng = groups_build(p, x.g);
    x.nt = trained_list(p, c, &x.r, x.g, x.ng, x.t);
    for (size_t k = 0; k < x.nt; k++)
        x.trained_elems += x.t[k].elems;
    struct fixed f;
    fixed_parts(&x, &f);
    base_rows(&b, &x);
    resident_rows(&b, &x, &f);
    activation_rows(&b, &x);
    logits_rows(&b, &x);
    comm_rows(&b, &x);
}

uint64_t memdetail_term_sum(const struct mem_detail *d, enum mem_term t)
{
    uint64_t s = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].term == t)
            s = bytes_add(s, d->rows[i].bytes);
    return s;
}
