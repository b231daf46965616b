/* memmodel.c: the phase-timeline memory model (see memmodel.h and README "Memory model").
 *
 * Every byte count below is a tensor that exists in PyTorch at that point of a training
 * step; the comment on each term says which tensor and where its size comes from. */
#include "memmodel.h"

#include <math.h>
#include <string.h>

#include "activations.h"
#include "resident.h"
#include "allocsim.h"
#include "float8.h"
#include "fsdpwrap.h"
#include "losspath.h"
#include "replayscope.h"
#include "streampool.h"
#include "streamfree.h"
#include "units.h"

static const char *const term_names[TERM_COUNT] = {
    "base", "params", "grads", "optimizer", "activations", "logits", "comm_buffers",
};
static const char *const phase_names[PHASE_COUNT] = {
    "forward", "lm_head+loss", "backward last layer", "backward first layer", "optimizer step",
    "eval logits", "backward end",
};

const char *mem_term_name(enum mem_term t) { return (unsigned)t < TERM_COUNT ? term_names[t] : "?"; }
const char *mem_phase_name(enum mem_phase p) { return (unsigned)p < PHASE_COUNT ? phase_names[p] : "?"; }

/* The per-point terms below use the saturating bytes_add/bytes_mul/bytes_scale (units.h):
 * a micro-batch x sequence x vocabulary product can pass 2^64, and a saturated term keeps
 * every sum and every phase at BYTES_SAT instead of wrapping. */

static void set_phase(struct mem_prepared *mp, enum mem_phase ph, uint64_t params, uint64_t grads,
                      uint64_t optim, uint64_t act, uint64_t comm)
{
    mp->phase_on[ph] = true;
    mp->fixed[ph][TERM_PARAMS] = params;
    mp->fixed[ph][TERM_GRADS] = grads;
    mp->fixed[ph][TERM_OPTIMIZER] = optim;
    mp->fixed[ph][TERM_ACTIVATIONS] = act;
    mp->fixed[ph][TERM_COMM] = comm;
    mp->fixed_r[ph] = memmodel_round(params) + memmodel_round(grads) + memmodel_round(optim) +
                      memmodel_round(act) + memmodel_round(comm);
}

/* Gradients held between the micro-batches of one accumulated step. FSDP runs those
 * micro-batches under no_sync(), which skips the reduce-scatter: "FSDP will accumulate the
 * full model gradients (instead of gradient shards) until the eventual sync" (PyTorch,
 * FullyShardedDataParallel.no_sync; Lightning's no_backward_sync calls it for FSDP).
 * DeepSpeed ZeRO-3 reduces every micro-batch into its partition, DDP's are full anyway. */
static uint64_t accumulated_grads(const struct train_config *c, const struct resident *r)
{
    return train_fsdp_sharded(c) ? r->g * (uint64_t)c->dp : r->g;
}

/* The batch-independent bytes of each phase (see enum mem_phase). Gradients are None
 * between steps (zero_grad(set_to_none=True)), optimizer states exist from the first
 * step on, so they are resident in every phase of the steady state. */
/* Blocks of stage k of S under torchtitan without pipeline_parallel_split_points
 * (parallelisms/pipelining_utils.py generate_split_points, the same at 68064737 and 9dec370;
 * S = pp, or pp x 2 for a multi-stage schedule): base = L / S blocks on the first stage,
 * base + 1 on each middle stage while the remainder L % S lasts, the rest on the last,
 * base + max(0, L % S - (S - 2)); Llama-3.1-405B's 126 blocks on 8 stages are 15, 16 x 6, 15. */
static int32_t titan_split(int32_t L, int32_t stages, int32_t k)
{
    const int32_t base = L / stages, extra = L % stages;
    if (k == 0)
        return base;
    if (k < stages - 1)
        return base + (k <= extra ? 1 : 0);
    return base + (extra > stages - 2 ? extra - (stages - 2) : 0);
}

/* ... a rank's blocks: under the interleaved schedule (train_pp_local) torchtitan splits
 * over pp x 2 stages and rank r runs stages r and r + pp (stage_ids_this_rank "loop"):
 * Llama-3.1-405B on 8 ranks, 16 stages of 7, 8 x 14, 7: 7 + 8 on the first, 8 + 7 on the
 * last. Local stage j of the first or the last rank: pp_local_layers. */
static int32_t pp_local_layers(const struct model_plan *p, const struct train_config *c, bool last, int32_t j)
{
    const int32_t pp = train_pp(c), v = train_pp_local(c);
    return titan_split((int32_t)p->spec.layers, pp * v, (last ? pp - 1 : 0) + j * pp);
}

/* Blocks of the first or the last pipeline rank (the two the phases read, pp_phases): the
 * torchtitan split, elsewhere the uniform one, ceil(L / pp) on the stages that bind
 * (Megatron). */
static int32_t pp_stage_layers(const struct model_plan *p, const struct train_config *c, bool last)
{
    const int32_t pp = train_pp(c), L = (int32_t)p->spec.layers;
    if (c->stack != STACK_TORCHTITAN || pp < 2)
        return (L + pp - 1) / pp;
    int32_t n = 0;
    for (int32_t j = 0; j < train_pp_local(c); j++)
        n += pp_local_layers(p, c, last, j);
    return n;
}

/* What an FSDP2-sharded pipeline stage (torchtitan) keeps unsharded through the step.
 * torchtitan's apply_fsdp (parallelisms/parallelize_llama.py at 9dec370) passes
 * reshard_after_forward=False to every block and to the root when pp is on ("to avoid
 * per-microbatch all-gathers"), and torch's PipelineStage runs each micro-batch's
 * backward with set_reshard_after_backward(False) and set_requires_gradient_sync(False)
 * until the last one (torch/distributed/pipelining/stage.py backward_maybe_with_nosync,
 * torch 2.5 and later): the stage's parameters stay gathered in param_dtype from the first
 * forward to the end of the last backward, and its gradients accumulate unsharded,
 * upcast to reduce_dtype (FSDPParam.to_accumulated_grad_if_needed: unsharded_grad.to(
 * reduce_dtype); torchtitan's mixed_precision_reduce defaults to float32). stage_p is the
 * stage's parameters over all TP ranks, trained its trained parameters on this rank. */
static void fsdp_stage_held(const struct model_plan *p, const struct train_config *c, bool last,
                            double stage_p, double trained, struct resident *r)
{
    const double gb = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const double acc = train_mixed(c) || c->precision == PREC_FP32 ? 4.0 : 2.0;
    /* float8 all-gather: the stage's block Linears gathered in float8 */
    const double lin = float8_allgather(c) ? (double)pp_stage_layers(p, c, last) * (double)p->layer_linear_w : 0.0;
    r->gather_fwd = r->gather_bwd = r->gather_bwd_last = (uint64_t)(((stage_p - lin) * gb + lin) / (double)c->tp);
    r->acc = (uint64_t)(trained * acc);
}

/* One pipeline stage's share of the whole model's resident terms (per TP rank). The
 * blocks split as pp_stage_layers says; the embedding sits on the first stage, the final norm and lm_head on the last,
 * where a tied lm_head keeps a copy of the embedding (Megatron's shared embedding,
 * megatron/core/models/common/language_module: setup_embeddings_and_output_layer). Each
 * term is scaled by the stage's share of the parameters; LoRA's trained adapters by its
 * share of the blocks. */
static void pp_stage(const struct model_plan *p, const struct train_config *c,
                     const struct resident *all, bool last, struct resident *r)
{
    const double L = (double)p->spec.layers, per = (double)pp_stage_layers(p, c, last);
    const double ends = last ? (double)(p->head_p ? p->head_p : p->embed_p) : (double)p->embed_p;
    const double share = (per * (double)p->layer_p + ends) / (double)p->params;
    const double tshare = c->finetune == FT_FULL ? share : per / L;
    *r = *all;
    r->tables = all->tables / (uint64_t)p->spec.layers * (uint64_t)per; /* its blocks' */
    r->w = (uint64_t)((double)(all->w - all->tables) * share) + r->tables;
    r->g = (uint64_t)((double)all->g * tshare);
    r->o = (uint64_t)((double)all->o * tshare);
    r->paged = (uint64_t)((double)all->paged * tshare);
    r->tmp = (uint64_t)((double)all->tmp * tshare);
    r->amp_all = (uint64_t)((double)all->amp_all * share);
    r->dequant_head = last ? all->dequant_head : 0;
    if (c->stack == STACK_TORCHTITAN)
        fsdp_stage_held(p, c, last, per * (double)p->layer_p + ends, all->trained * tshare, r);
}

/* The blocks a rank of the interleaved schedule holds, in torch pipelining's order
 * (pytorch/pytorch torch/distributed/pipelining/schedules.py ScheduleInterleaved1F1B.
 * _calculate_single_rank_operations and _get_1f1b_rank_ops, the 2024 version torchtitan
 * 9dec370 ran): min((v - 1) pp + 2 (pp - 1 - rank), m v) warm-up forwards, then a forward
 * and a backward in turn, then the remaining backwards; forward op f runs local stage
 * (f / pp) mod v, backward op b local stage v - 1 - (b / pp) mod v, each on its next
 * micro-batch. A forward keeps its chunk's block inputs until that chunk's backward. Out:
 * the most blocks held (held[0]), the most at a forward of the rank's last local stage, its
 * loss on the last rank (held[1]), and the most beside a backward of its first local stage,
 * less that chunk (held[2]). */
static void interleaved_held(const struct model_plan *p, const struct train_config *c, bool last,
                             int32_t held[3])
{
    const int32_t pp = train_pp(c), v = train_pp_local(c), m = train_microbatches(c);
    const int32_t rank = last ? pp - 1 : 0, total = m * v;
    int32_t warm = (v - 1) * pp + 2 * (pp - 1 - rank);
    warm = warm < total ? warm : total;
    int32_t now = 0, f = 0, b = 0;
    held[0] = held[1] = held[2] = 0;
    /* the op list: warm forwards, (forward, backward) x (total - warm), warm backwards */
    for (int32_t op = 0; op < 2 * total; op++) {
        const bool forward = op < warm ? true : op < 2 * total - warm ? (op - warm) % 2 == 0 : false;
        if (forward) {
            const int32_t j = (f++ / pp) % v;
            now += pp_local_layers(p, c, last, j);
            held[0] = now > held[0] ? now : held[0];
            if (j == v - 1)
                held[1] = now > held[1] ? now : held[1];
        } else {
            const int32_t j = v - 1 - (b++ / pp) % v, n = pp_local_layers(p, c, last, j);
            if (j == 0)
                held[2] = now - n > held[2] ? now - n : held[2];
            now -= n;
        }
    }
}

/* 1F1B (Megatron schedules.py forward_backward_pipelining_without_interleaving; torch
 * pipelining Schedule1F1B, which torchtitan runs): stage s runs min(pp - s, m) warm-up
 * forwards before its first backward, so the first stage holds the activations of
 * min(pp, m) micro-batches and the last stage of one. The phases split between them: the
 * forward and the first block's backward are the first stage's, lm_head+loss and the
 * last block's backward the last stage's; the optimizer step the larger stage's. */
static void pp_phases(const struct model_plan *p, const struct train_config *c,
                      const struct resident *all, struct mem_prepared *mp)
{
    struct resident f, l;
    pp_stage(p, c, all, false, &f);
    pp_stage(p, c, all, true, &l);
    /* Megatron's gradient buffer lives through every phase; FSDP stages (torchtitan) hold
     * the gathered stage and its unsharded accumulated gradients (fsdp_stage_held), which
     * 1F1B's steady state interleaves with the forwards, and their shards at the step */
    const bool fsdp = c->stack == STACK_TORCHTITAN;
    set_phase(mp, PHASE_FORWARD, f.w, fsdp ? f.acc : f.g, f.o, f.amp_all + f.dequant, f.gather_fwd + f.bucket);
    set_phase(mp, PHASE_BWD_FIRST, f.w, fsdp ? f.acc : f.g, f.o, f.amp_one + f.dequant, f.gather_bwd + f.bucket);
    set_phase(mp, PHASE_LOSS, l.w, fsdp ? l.acc : l.g, l.o, l.amp_all + l.dequant_head + l.amp_head,
              l.gather_fwd + l.bucket);
    set_phase(mp, PHASE_BWD_LAST, l.w, fsdp ? l.acc : l.g, l.o, l.amp_all + l.dequant,
              l.gather_bwd_last + l.bucket);
    const struct resident *big = f.w + f.g + f.o + f.tmp > l.w + l.g + l.o + l.tmp ? &f : &l;
    set_phase(mp, PHASE_OPTIMIZER, big->w, big->g, big->o + big->tmp, 0, big->bucket);
    mp->paged = f.paged > l.paged ? f.paged : l.paged; /* a stage's paged states */
    const int32_t first = pp_stage_layers(p, c, false), m = train_microbatches(c);
    const int32_t inflight = m < train_pp(c) ? m : train_pp(c);
    mp->act_layers[0] = first * inflight;
    mp->act_layers[1] = pp_stage_layers(p, c, true);
    mp->act_extra_bwd = first * (inflight - 1);
    if (train_pp_local(c) > 1) {
        int32_t hf[3], hl[3];
        interleaved_held(p, c, false, hf);
        interleaved_held(p, c, true, hl);
        mp->act_layers[0] = hf[0];
        mp->act_extra_bwd = hf[2];
        mp->act_layers[1] = hl[1];
    }
    mp->tail_fwd = false;
}

static void fixed_phases(const struct model_plan *p, const struct train_config *c,
                         struct mem_prepared *mp)
{
    struct resident r;
    resident_terms(p, c, &r);
    mp->paged = r.paged;
    mp->paged_one = r.paged_one;
    mp->host = r.host;
    mp->act_layers[0] = mp->act_layers[1] = (int32_t)p->spec.layers;
    mp->act_extra_bwd = 0;
    mp->tail_fwd = true;
    if (c->method == METHOD_PP) {
        pp_phases(p, c, &r, mp);
        return;
    }
    const uint64_t amp_fwd = c->grad_ckpt ? r.amp_one : r.amp_all;
    /* autocast caches the 16-bit cast of every fp32 leaf that requires grad, grad mode or
     * not (torch aten/src/ATen/autocast_mode.cpp cached_cast: can_try_cache), and clears the
     * cache when the outermost autocast region ends. A checkpointed block's forward saves
     * none of its casts, but the cache keeps every block's until the model's forward
     * returns, so the loss computed inside it (the HF stacks: labels passed to the model,
     * under accelerate's autocast wrapper) runs beside all of them; the backward's
     * recomputation enters and leaves autocast per block (one block's). Measured:
     * datasets/measured/h200-20261127.csv gpu-25min-26/-27 (Llama-3.2-1B full, bf16, ckpt):
     * the loss phase's allocated peak 1.81 GiB (16 blocks' casts) above what the
     * no-checkpointing rows -03/-04 imply; -3.5 % and -6.0 % without this term. Methods
     * that keep whole parameters only: FSDP's and ZeRO-3's gathered parameters are views
     * of a flat buffer or swapped storage, which the cache may not hold (not measured). */
    const bool whole = c->method == METHOD_SINGLE || c->method == METHOD_CDP || c->method == METHOD_TP;
    mp->amp_cache = c->grad_ckpt && whole && stack_hf_trainer(c->stack) ? r.amp_all - r.amp_one : 0;
    const uint64_t head_w_grad = memmodel_head_grad_bytes(p, c);
    uint64_t head_grad = head_w_grad;
    /* accumulating micro-batches keeps the summed gradients through the next forward */
    const uint64_t acc_grad = (c->features & FEAT_GRAD_ACCUM) ? accumulated_grads(c, &r) : 0;
    const uint64_t bwd_grad = memmodel_bwd_grads(acc_grad, r.g, r.root_shard);
    /* the longest batch first (FEAT_LONGEST_FIRST): its forward comes before any backward,
     * so no summed gradient exists yet, and its backward has the last block's only */
    const bool first = (c->features & FEAT_LONGEST_FIRST) != 0;
    const uint64_t held_grad = first ? 0 : acc_grad;
    if (acc_grad)
        head_grad = first ? acc_grad / (uint64_t)p->spec.layers : acc_grad;
    /* litgpt: a quantized lm_head's dequantized weight exists only while each chunk's
     * MatMul4Bit runs (bnb autograd/_functions.py at 0.42.0: F.dequantize_4bit(B).to(A.dtype)
     * inside forward), before Fabric's fp32 copies of the logits (losspath.c
     * litgpt_lora_path): the forward phase is that moment, the loss phase the copies' */
    const bool head_fwd = memmodel_head_in_forward(c, r.dequant, r.dequant_head);
    set_phase(mp, PHASE_FORWARD, r.w, held_grad, r.o, amp_fwd + (head_fwd ? r.dequant_head : r.dequant),
              r.gather_fwd + r.bucket);
    /* Liger's fused loss makes a trained lm_head's gradient in its forward (liger_coeffs) */
    const uint64_t liger_grad = losspath_select(c, p->spec.model_type) == LOSS_LIGER ? head_w_grad : 0;
    set_phase(mp, PHASE_LOSS, r.w, held_grad + liger_grad, r.o,
              amp_fwd + (train_fabric_loop(c) ? 0 : r.dequant_head) + r.amp_head, r.gather_fwd + r.bucket);
    /* FSDP1 (root_grads): the lm_head's gradient piece is held through backward, beside the
     * accumulated gradients (without accumulation it is head_grad itself at the last block) */
    const uint64_t last_grad = acc_grad ? head_grad + r.root_hold : head_grad;
    set_phase(mp, PHASE_BWD_LAST, r.w, last_grad, r.o, amp_fwd + r.dequant, r.gather_bwd_last + r.bucket);
    set_phase(mp, PHASE_BWD_FIRST, r.w, bwd_grad + r.root_hold, r.o, r.amp_one + r.dequant,
              r.gather_bwd + r.bucket);
    set_phase(mp, PHASE_OPTIMIZER, r.w, r.g, r.o + r.tmp, 0, r.bucket);
    if (c->features & FEAT_EVAL_LOGITS)
        set_phase(mp, PHASE_EVAL, r.w, 0, r.o, r.dequant + r.dequant_head, r.gather_fwd + r.bucket);
    /* after the first block: the root unit gathered, its gradient pieces and their cat */
    if (r.root_end)
        set_phase(mp, PHASE_BWD_END, r.w, bwd_grad + r.root_end, r.o, 0, r.root_gather + r.bucket);
    streamfree_phases(p, c, &r, acc_grad != 0, mp);
    fsdpwrap_phases(p, c, &r, mp);
    if (c->method == METHOD_CDP) /* beside a replayed step (replayscope_setup) */
        mp->replay_buckets = memmodel_round(r.bucket);
}

/* FSDP2's all-gather copy-in stream pool (streampool.h) wherever fully_shard runs with a
 * MixedPrecisionPolicy (FEAT_FSDP_MP: stack torchtitan always; the measurement harness's adp
 * rows, which wrap every block, then the model, as torchtitan did before 83e69410), on
 * torchtitan's units. At 9dec370
 * (parallelisms/parallelize_llama.py apply_fsdp) fully_shard goes on each block, then on
 * the whole model, whose root unit holds the embedding, final norm and lm_head; the last
 * block is not resharded after forward, so backward gathers the others again. From
 * 83e69410 (FEAT_FSDP_END_UNITS, zero3_end_units) the embedding comes first and [norm,
 * output] last as units of their own, every block and the embedding are gathered again in
 * backward. Under pp no unit is resharded after forward, and a stage holds the ends it
 * keeps (pipeline_llama.py _build_stage). The pool is reserved in every phase from the
 * first forward on; the norms' few bytes are left out as zero3_gather leaves them. */
static uint64_t side_pool_stage(const struct model_plan *p, const struct train_config *c,
                                struct fsdp2_units u, bool has_emb, bool has_head)
{
    const double gb = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const uint64_t emb = has_emb ? (uint64_t)(plan_embed_rank(p, c) * gb) : 0;
    /* a tied lm_head is the embedding: gathered once, with the unit that holds it */
    const bool tied_here = !p->head_p && has_emb;
    const uint64_t head = has_head && !tied_here ? (uint64_t)(plan_head_rank(p, c) * gb) : 0;
    const bool pp = c->method == METHOD_PP;
    if (c->features & FEAT_FSDP_END_UNITS) {
        u.first = emb, u.last = head;
        u.bwd_blocks = pp ? 0 : u.blocks, u.bwd_first = !pp;
    } else {
        u.first = emb + head; /* the root unit */
        u.bwd_blocks = pp ? 0 : u.blocks - 1;
    }
    return streampool_fsdp2_copy_in(&u);
}

static void fsdp2_side_pool(const struct model_plan *p, const struct train_config *c,
                            struct mem_prepared *mp)
{
    bool zero3, ds;
    resident_shard_kind(c, &zero3, &ds);
    const bool pp = c->method == METHOD_PP;
    const bool plain16 = train_fsdp2_plain16(c);
    if (!((c->features & FEAT_FSDP_MP) || plain16) || !zero3 || ds || c->dp < 2 ||
        c->method == METHOD_OFFLOAD || (!pp && !(c->features & FEAT_FSDP)))
        return;
    const double layer = ((double)p->layer_p - (double)p->layer_expert_p * (1.0 - 1.0 / (double)train_ep(c))) /
                         (double)c->tp;
    const struct fsdp2_units u = {
        .block = (uint64_t)resident_gathered_block_bytes(p, c, layer, c->precision == PREC_FP32 ? 4.0 : 2.0),
        .dp = (uint32_t)c->dp, .blocks = (uint32_t)(pp ? pp_stage_layers(p, c, false) : (int32_t)p->spec.layers),
        /* the shards need no cast when they are in the gather dtype already: bf16 weights,
         * or LoRA's 16-bit frozen base (the adapters' casts are a few KiB) */
        .as_is = plain16 || (c->finetune == FT_LORA && !(c->features & FEAT_FP32_BASE) &&
                             c->precision != PREC_FP32 && c->quant == QUANT_NONE),
    };
    struct fsdp2_units ul = u;
    ul.blocks = pp ? (uint32_t)pp_stage_layers(p, c, true) : u.blocks;
    const uint64_t first = side_pool_stage(p, c, u, true, !pp), last = pp ? side_pool_stage(p, c, ul, false, true) : first;
    /* the pipeline's phases: forward and the first block's backward are the first stage's,
     * the loss and the last block's backward the last stage's (pp_phases) */
    const uint64_t by_phase[PHASE_COUNT] = {
        [PHASE_FORWARD] = first, [PHASE_BWD_FIRST] = first, [PHASE_LOSS] = last,
        [PHASE_BWD_LAST] = last, [PHASE_OPTIMIZER] = first > last ? first : last, [PHASE_EVAL] = first,
    };
    mp->side_pool = first > last ? first : last;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        if (mp->phase_on[ph])
            mp->fixed_r[ph] = bytes_add(mp->fixed_r[ph], by_phase[ph]);
}

void memmodel_resident(const struct model_plan *p, const struct train_config *c, enum mem_stage stage,
                       struct mem_resident *out)
{
    struct resident all, r;
    resident_terms(p, c, &all);
    r = all;
    if (c->method == METHOD_PP && stage != MEM_STAGE_ALL)
        pp_stage(p, c, &all, stage == MEM_STAGE_LAST, &r);
    *out = (struct mem_resident){
        .trained = r.trained, .frozen = r.frozen, .w = r.w, .g = r.g, .o = r.o, .tmp = r.tmp,
        .amp_all = r.amp_all, .amp_one = r.amp_one, .dequant = r.dequant,
        .dequant_head = r.dequant_head, .amp_head = r.amp_head, .gather_fwd = r.gather_fwd, .gather_bwd = r.gather_bwd,
        .gather_bwd_last = r.gather_bwd_last,
        .bucket = r.bucket, .paged = r.paged, .paged_one = r.paged_one, .host = r.host, .acc = r.acc,
        .root_hold = r.root_hold, .root_end = r.root_end, .root_gather = r.root_gather,
        .root_shard = r.root_shard,
        .g_frozen = r.g_frozen, .tables = r.tables,
    };
    resident_shard_kind(c, &out->zero3, &out->ds);
}

uint64_t memmodel_head_grad_bytes(const struct model_plan *p, const struct train_config *c)
{
    if (c->finetune != FT_FULL)
        return 0;
    const uint64_t gb = train_master_in_optimizer(c) ? (c->precision == PREC_FP32 ? 4 : 2)
                                                     : memmodel_trained_bytes(c);
    return (uint64_t)plan_head_rank(p, c) * gb;
}

bool memmodel_head_in_forward(const struct train_config *c, uint64_t dequant, uint64_t dequant_head)
{
    return train_fabric_loop(c) && dequant_head > dequant;
}

/* torchtune's recipes at 0217d44c (feature logits-kept) rebind `logits` to the shifted
 * fp32 copy and never delete it: `logits = self._model(input_ids)`, `logits =
 * logits[..., :-1, :].contiguous()`, `logits = logits.transpose(1, 2)`, loss.backward()
 * (recipes/lora_finetune_single_device.py L460-469, full_finetune_distributed.py
 * L478-488). The copy (fp32: TransformerDecoder.forward returns `self.output(h).float()`,
 * torchtune/modules/transformer.py L210) lives on through the blocks' backward and the
 * optimizer step until the next step's forward returns and rebinds the name: 4 bytes per
 * token and vocab entry in every phase but the loss, whose path (LOSS_KEPT) has it. */
static void kept_logits(const struct train_config *c, uint64_t ea, struct mem_prepared *mp)
{
    if (c->features & FEAT_LOGITS_KEPT)
        mp->kept_logits_tok = 4;
    /* litgpt's fit() keeps the fp32 logits Fabric's convert_output made the same way until the
     * next step's model() returns (losspath.c litgpt_lora_path, which has them at the loss) */
    if (train_fabric_loop(c))
        mp->kept_logits_tok = 4;
    mp->prev_logits_tok = (c->features & FEAT_LONGEST_FIRST) ? 0 : mp->kept_logits_tok;
    /* litgpt's forward phase ends with the lm_head: this step's 16-bit logits beside them */
    mp->fwd_logits_tok = mp->prev_logits_tok + (train_fabric_loop(c) ? ea : 0);
}

/* A loop that keeps the model's `outputs` as a plain local holds them from its forward on:
 * - feature outputs-kept (PEFT's method_comparison/MetaMathQA/run.py L213-215 @5fe7f8f8,
 *   8be1a16f, 51c2ff66: `outputs = model(**batch, ...)`, never deleted) until the next
 *   step's forward returns and rebinds the name, so the previous step's are alive through
 *   this one's forward;
 * - feature outputs-until-step (Answer.AI fsdp_qlora train.py @50efa1e: `output = None`
 *   after optimizer.step(), L874) through the backward and the optimizer step only.
 * They hold the logits the forward returned (losspath_kept_logits: 16-bit from transformers
 * 4.46, fp32 before; the kept loss paths keep them through the loss's backward) and, since
 * neither loop passes use_cache=False and config.json's use_cache is true, the cache
 * transformers' LlamaModel.forward builds: every block's K (after RoPE) and V, kv_heads x
 * head_dim each, not repeated for GQA (DynamicCache, or before 4.36 the tuple of them).
 * Under gradient checkpointing transformers turns use_cache off in training ("use_cache=True
 * is incompatible with gradient checkpointing"), so then only the logits are kept. */
static void kept_outputs(const struct model_plan *p, const struct train_config *c, uint64_t ea,
                         struct mem_prepared *mp)
{
    const struct model_spec *m = &p->spec;
    kept_logits(c, ea, mp);
    const uint64_t lg = losspath_kept_logits(c->stack, c->precision);
    if (!(c->features & (FEAT_OUTPUTS_KEPT | FEAT_OUTPUTS_UNTIL_STEP)) || !lg)
        return;
    const bool next = (c->features & FEAT_OUTPUTS_KEPT) != 0; /* into the next forward */
    mp->kept_logits_tok = lg;
    mp->prev_logits_tok = mp->fwd_logits_tok = next ? lg : 0;
    if (!c->grad_ckpt && !c->ckpt_selective)
        mp->kept_tok = 2 * ea * (uint64_t)(m->kv_heads * m->head_dim) * (uint64_t)m->layers /
                       (uint64_t)c->tp;
    mp->kept_prev_tok = next ? mp->kept_tok : 0;
}

/* What torch's pipelining keeps of each micro-batch at the stage boundary until the next
 * step's clear_runtime_states, beside the receive buffers (torchtitan 9dec370 runs the torch
 * nightly of 2024-12-23, 1963fc83):
 * - the first stage's output: forward_one_chunk appended every stage's output to
 *   output_chunks (`self.output_chunks.append(output)`, unconditional until pytorch/pytorch
 *   PR #153383, merged 2025-05-13, made it `if self.is_last`; the PR: "we should not keep the
 *   outputs of each stage in memory"), so the first stage keeps all m of its [b, s/tp, h]
 *   outputs, which no block on it saves (a checkpointed block keeps its input, not its
 *   output). torchtitan from 83e69410 (2025-07-28, FEAT_FSDP_END_UNITS) runs a torch after it,
 *   where only the min(m, pp) outputs in flight stay (fwd_cache's stage_output, the root of
 *   each micro-batch's backward).
 * - the last stage's input gradients: its receive buffers are leaves with requires_grad
 *   (_prepare_forward_infra: `r.buffer.requires_grad_(True)`), stage_backward's
 *   torch.autograd.backward accumulates each micro-batch's input gradient into the buffer's
 *   .grad and returns it (_backward.py stage_backward: `grad_inputs.append(val.grad)`), and
 *   only clear_runtime_states sets `a.buffer.grad = None` ("torch.autograd.backward() will
 *   accumulate gradients into leaf tensors"): at the last micro-batch's loss and its last
 *   block's backward the m - 1 earlier ones are alive (stage_backward's `val.grad = None`,
 *   pytorch/pytorch PR #164329 of 2025-10, releases them early; not in these versions). */
static void pp_stage_io_kept(const struct train_config *c, uint64_t m, uint64_t io,
                             struct mem_prepared *mp)
{
    /* a later torch still holds the outputs in flight, in fwd_cache until their backward */
    const uint64_t pp = (uint64_t)train_pp(c), inflight = m < pp ? m : pp;
    mp->pp_outs_first_tok = ((c->features & FEAT_FSDP_END_UNITS) ? inflight : m) * io;
    mp->pp_igrad_last_tok = (m > 0 ? m - 1 : 0) * io;
}

/* The interleaved schedule's other local stages (train_pp_local): each is a middle stage of
 * the pipeline, with m input and m gradient receive buffers (_prepare_forward_infra,
 * _prepare_backward_infra, as pp_stage_io_kept cites) and, before pytorch PR #153383, its m
 * outputs in output_chunks; the first rank's first stage has gradient buffers and kept
 * outputs already counted, its last rank's last stage input buffers. The other stages'
 * input gradients (.grad of their receive buffers) are left out: their backwards come
 * after the last stage's loss in each round. */
static void pp_interleaved_io(const struct train_config *c, uint64_t m, uint64_t io, struct mem_prepared *mp)
{
    const uint64_t other = (uint64_t)(train_pp_local(c) - 1);
    const uint64_t outs = (c->features & FEAT_FSDP_END_UNITS) ? 0 : other * m * io;
    mp->pp_recv_first_tok += 2 * other * m * io;
    mp->pp_recv_last_tok += 2 * other * m * io;
    mp->pp_outs_first_tok += outs;
    mp->pp_outs_last_tok = outs;
}

static void activation_coeffs(const struct model_plan *p, const struct train_config *c,
                              const struct mem_act_tok *blk, struct mem_prepared *mp)
{
    const struct mem_act_tok a = *blk;
    const uint64_t ea = a.ea, er = a.er, h = (uint64_t)p->spec.hidden, i = (uint64_t)p->inter_active;
    const uint64_t tp = (uint64_t)c->tp, sp = act_seq_parallel(c);
    /* the repeated K and V are added per point when the micro-batch pads (act_kv_repeat) */
    mp->layer_tok = a.norms + a.lin_in + a.attn + a.mlp + a.lora - (a.kv_rep_on ? a.kv_rep : 0);
    mp->layer_tok_s = a.attn_s;
    mp->held_tok = act_bnb_held_tok(p, c);
    mp->held_prev = !(c->features & FEAT_LONGEST_FIRST);
    mp->held_blk_tok = mp->held_tok / (uint64_t)p->spec.layers;
    mp->kv_rep_tok = a.kv_rep;
    mp->kv_rep_padded = act_kv_repeat(c) == 2;
    mp->mask_tok_s = a.mask_s;
    mp->ckpt_tok = c->ckpt_selective ? act_sac_tok(p, c, ea, er) : er * h / sp;
    /* final norm and the lm_head input (gathered: ColwiseParallel(input_layouts=Shard(1))) */
    mp->tail_tok = a.norm_final + ea * h;
    mp->bwd_tok = er * h / sp + 2 * a.em * i / tp;
    /* --precision fp8: backward's float8 casts of the largest GEMM (gate/up, i wide): the
     * e5m2 gradient of its output (cast_output_to_float8_in_bw; rowwise: its dim0 and dim1
     * casts) and the transposed e4m3 operand of the weight gradient, 1 byte an element
     * each (torchao @eab345c2 float8_linear.py backward, float8_ops.py _scaled_mm needs its
     * second operand column-major) */
    if (float8_on(c))
        mp->bwd_tok += 2 * i / tp;
    /* the TP input all-gather: in float8 under torchtitan's float8 TP (float8_tp) */
    mp->comm_tok = c->tp > 1 ? (float8_tp(c) ? 1 : ea) * h : 0;
    /* pipeline stages receive the previous stage's output and send their own (forward),
     * and the same-sized gradients back (Megatron p2p_communication: recv_forward /
     * send_backward buffers of [s, b, h]) */
    if (c->method == METHOD_PP && c->stack != STACK_TORCHTITAN)
        mp->comm_tok += 2 * ea * h;
    /* torch.distributed.pipelining (torchtitan's stages) allocates its receive buffers once,
     * one per micro-batch, and keeps them across steps: PipelineStage._prepare_forward_infra
     * makes `_make_tensor_from_meta(inp)` for every chunk_id on a stage that is not the first
     * (the stage's input, received into it), _prepare_backward_infra one gradient buffer of
     * the stage's output per micro-batch through _create_grad_recv_info on a stage that is not
     * the last (pytorch/pytorch torch/distributed/pipelining/stage.py at 01386103). The stage
     * boundary is the residual stream, [b, s / tp, h] per rank under torchtitan's sequence
     * parallelism, in the residual dtype. Sends pass the output tensor itself. The first
     * stage keeps m gradient buffers; the last m input buffers, of which the micro-batch in
     * flight is its first block's checkpoint, counted there already. */
    if (c->method == METHOD_PP && c->stack == STACK_TORCHTITAN) {
        const uint64_t m = (uint64_t)train_microbatches(c), io = er * h / sp;
        mp->pp_recv_first_tok = m * io;
        mp->pp_recv_last_tok = ((c->grad_ckpt || c->ckpt_selective) && m > 0 ? m - 1 : m) * io;
        pp_stage_io_kept(c, m, io, mp);
        pp_interleaved_io(c, m, io, mp);
    }
    kept_outputs(p, c, ea, mp);
}

/* What the last stage's step reserves after its phases. PipelineScheduleSingle.step and
 * PipelineScheduleMulti.step end with `return self._merge_outputs(stage.output_chunks)` on
 * the last stage, and merge_chunks builds the result with `torch.cat(partial_values,
 * dim=...)` (pytorch/pytorch torch/distributed/pipelining/schedules.py and microbatch.py, in
 * every version before PR #165822 of 2025-10, which added return_outputs): one new tensor of
 * all m outputs, m x e_a bytes per token of a micro-batch and vocab entry, which torchtitan
 * 9dec370 drops at once (train.py `pp_schedule.step(target=labels, losses=losses)`, its
 * result unbound). The caching allocator serves a request from a cached free block at least
 * as large or cudaMallocs a segment for it, and a large segment is one earlier request
 * rounded up to 2 MiB that never joins another (c10/cuda/CUDACachingAllocator.cpp
 * get_allocation_size, alloc_block): a request larger than every earlier one finds no block
 * and adds its own segment to all the step reserved before. The last stage's earlier
 * requests are at most fp32 per logits entry (the loss path: 4), fp32 per token and
 * activation width (4 max(h, i/tp), a bound on any block tensor under SDPA) and one FSDP
 * unit's reduce-scatter input (foreach_reduce's reduce_scatter_input, the unit's unsharded
 * numel in the fp32 reduce_dtype: pp_merge_above, compared per point); a request of at most
 * kLargeBuffer (20 MiB) may still find room in a 20 MiB segment cut for smaller ones. Under
 * expandable_segments the free tail of the segment can take part of the request, how much
 * is not derived: not counted there. torchtitan from e5ef99aa (2025-10-22) passes
 * return_outputs=False: no merge (and no output_chunks; not a stack here). */
static void pp_merge(const struct model_plan *p, const struct train_config *c, struct mem_prepared *mp)
{
    const uint64_t per_entry = mp->pp_out_tok * (uint64_t)mp->pp_out_n;
    const uint64_t h = (uint64_t)p->spec.hidden, i = (uint64_t)p->inter_active / (uint64_t)c->tp;
    const uint64_t width = h > i ? h : i, end = (uint64_t)(p->head_p ? p->head_p : p->embed_p);
    const uint64_t unit = (uint64_t)p->layer_p > end ? (uint64_t)p->layer_p : end;
    if (c->alloc != ALLOC_DEFAULT || per_entry <= 4 || per_entry * (uint64_t)mp->vocab <= 4 * width)
        return;
    mp->pp_merge_tok = per_entry;
    const uint64_t unit_rs = 4 * unit / (uint64_t)c->tp;
    mp->pp_merge_above = unit_rs > ALLOCSIM_LARGE_BUFFER ? unit_rs : ALLOCSIM_LARGE_BUFFER;
}

/* Liger's fused linear cross-entropy (Liger-Kernel ops/fused_linear_cross_entropy.py
 * fused_linear_cross_entropy_forward @00eba634), run inside the loss's forward: grad_input =
 * zeros_like(_input), the gradient of the N x h lm_head input, kept for backward; the input
 * in chunks of next_power_of_2(cdiv(N, cdiv(V, h))) tokens (at most N), each chunk's logits
 * `_input_chunk @ weight.t()` in the compute dtype (the cross-entropy kernel writes their
 * gradient in place) and its input gradient `grad_logits_chunk @ weight`, one chunk at a
 * time (mempoint.c memmodel_liger_bytes); a trained lm_head's grad_weight = zeros_like(weight) from
 * the loss on (fixed_phases). LigerForCausalLMLoss pads the labels and views the hidden
 * states (transformers/model/loss_utils.py @1226bba2): no N x V tensor beyond a chunk. */
static void liger_coeffs(const struct model_plan *p, const struct mem_act_tok *a, struct mem_prepared *mp)
{
    const uint64_t h = (uint64_t)p->spec.hidden;
    mp->liger_inc = ((uint64_t)mp->vocab + h - 1) / h;
    mp->liger_h = (uint32_t)h;
    mp->liger_ea = (uint32_t)a->ea;
    mp->liger_er = (uint32_t)a->er;
}

/* What a validation pass holds per token and vocab entry: its logits and their log_softmax
 * (2 e_a). litgpt's validate() (finetune/lora.py and full.py at 5895df10, lit-gpt 8641822
 * finetune/lora.py) runs `logits = model(input_ids)` through Fabric, which returns an fp32
 * copy (losspath.c litgpt_lora_path; the 16-bit logits, e_a, are dropped by then when
 * e_a + 4 < 12), then chunked_cross_entropy(logits[..., :-1, :], ..., chunk_size=0) reshapes
 * the non-contiguous slice into an fp32 copy and cross_entropy takes its fp32 log_softmax:
 * 12; fit() calls it between steps, while `logits` still binds the last step's fp32 logits
 * (4): 16 at the training length. */
static uint64_t eval_logits(const struct train_config *c, uint32_t ea)
{
    if (!train_fabric_loop(c))
        return 2 * (uint64_t)ea;
    /* a run whose longest batch is its first step validates on random, shorter batches */
    return (c->features & FEAT_LONGEST_FIRST) ? 0 : 16;
}

/* Logits and loss per token and vocab entry: the stack's loss path (losspath.h) gives the
 * allocated peak of its N x V tensors and what the caching allocator reserves for them for
 * the data shape and allocator configuration; a validation pass's (eval_logits). */
static void logits_coeffs(const struct model_plan *p, const struct train_config *c,
                          const struct mem_act_tok *blk, struct mem_prepared *mp)
{
    const uint32_t ea = c->precision == PREC_FP32 ? 4 : 2;
    struct loss_cost cost;
    const enum loss_path lp = losspath_select(c, p->spec.model_type);
    losspath_cost(lp, losspath_class(c->precision), losspath_data_shape(c), c->alloc, &cost);
    /* torchtitan's loss parallelism (the output ColwiseParallel(output_layouts=Shard(-1),
     * use_local_output=False) and train.py's loss_parallel() context): each TP rank keeps
     * and upcasts its vocab / tp columns of the logits */
    mp->vocab = (p->spec.vocab + (int64_t)act_seq_parallel(c) - 1) / (int64_t)act_seq_parallel(c);
    memcpy(mp->logits_tok, cost.allocated, sizeof mp->logits_tok);
    memcpy(mp->logits_res_tok, cost.reserved, sizeof mp->logits_res_tok);
    memcpy(mp->logits_need_tok, cost.needed, sizeof mp->logits_need_tok);
    mp->loss_fwd_tok = cost.in_forward;
    mp->eval_logits_tok = (c->features & FEAT_EVAL_LOGITS) ? eval_logits(c, ea) : 0;
    if (lp == LOSS_LIGER)
        liger_coeffs(p, blk, mp);
    /* torch.distributed.pipelining keeps every micro-batch's output of the last stage for
     * the step's merged result: _PipelineStageBase.forward_one_chunk appends it to
     * self.output_chunks (`if self.is_last`: "Output chunks is only used for the last
     * stage since we only merge the output of the last stage"), which
     * clear_runtime_states empties only when the next step starts; the step returns
     * _merge_outputs(output_chunks) (pytorch/pytorch torch/distributed/pipelining/stage.py
     * and schedules.py at 01386103). torchtitan's last stage outputs the lm_head's logits
     * (9dec370 parallelisms/pipeline_llama.py _build_stage: norm and output on the last
     * stage; a vocab-sharded DTensor under loss_parallel), so when the last micro-batch's
     * loss runs backward, all m of them are alive, the current one included: the loss path
     * frees its own copy (`del pred` in the non-pipelined loop), these are the m the
     * schedule holds. 1F1B runs the last stage's backward right after each forward, so
     * nothing else of the earlier micro-batches stays. */
    if (c->method == METHOD_PP && c->stack == STACK_TORCHTITAN) {
        mp->pp_out_tok = ea;
        mp->pp_out_n = train_microbatches(c);
        pp_merge(p, c, mp);
    }
}

/* PyTorch takes a cuBLAS workspace from the caching allocator for each (handle, stream)
 * (CublasHandlePool.cpp getNewWorkspace, torch >= 2.0; PR #124250 restored it for CUDA
 * >= 12.2 in 2.4), and hands out one handle per (thread, device): a training step runs its
 * forward on the Python thread and its backward on autograd's device thread, so two.
 * Their segments come from the allocator model: off Hopper two 8.125 MiB blocks share one
 * 20 MiB segment, on Hopper two 32 MiB blocks take 64 MiB. */
static void blas_workspaces(uint64_t ws, struct mem_options *o)
{
    allocsim_block blocks[8];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    uint32_t h;
    o->ws_alloc = o->ws_res = 0;
    if (!ws || allocsim_init(&st, &cfg, blocks, 8) != ALLOCSIM_OK ||
        allocsim_alloc(&st, ws, &h) != ALLOCSIM_OK || allocsim_alloc(&st, ws, &h) != ALLOCSIM_OK)
        return;
    o->ws_alloc = allocsim_get_stats(&st)->allocated;
    o->ws_res = allocsim_get_stats(&st)->reserved;
}

void mem_options_for_gpu(const struct gpu_spec *g, bool paper, struct mem_options *o)
{
    memset(o, 0, sizeof *o);
    o->paper = paper;
    o->base_bytes = g ? g->context_bytes : 0;
    o->nccl_bytes = g ? g->nccl_bytes : NCCL_BYTES_DEFAULT;
    o->capacity_bytes = g && g->memory_bytes > g->context_bytes ? g->memory_bytes - g->context_bytes : 0;
    blas_workspaces(g ? g->cublas_ws_bytes : CUBLAS_WS_DEFAULT, o);
}

/* The per-token coefficients of the batch-dependent terms, per phase: what memmodel_seq
 * and the point functions below multiply by micro-batch x sequence. Activations depend on
 * the sequence length (eager attention scores) and are hoisted per sequence length
 * (memmodel_seq); communication buffers and the 16-bit logits a loop keeps are per
 * configuration. */
static void point_coeffs(struct mem_prepared *mp)
{
    for (int ph = PHASE_FORWARD; ph <= PHASE_BWD_FIRST; ph++)
        mp->cm_tok[ph] = mp->comm_tok;
    /* the pipeline's receive buffers (activation_coeffs): the first stage's phases, the last's */
    mp->cm_tok[PHASE_FORWARD] = bytes_add(mp->cm_tok[PHASE_FORWARD], mp->pp_recv_first_tok);
    mp->cm_tok[PHASE_BWD_FIRST] = bytes_add(mp->cm_tok[PHASE_BWD_FIRST], mp->pp_recv_first_tok);
    mp->cm_tok[PHASE_LOSS] = bytes_add(mp->cm_tok[PHASE_LOSS], mp->pp_recv_last_tok);
    mp->cm_tok[PHASE_BWD_LAST] = bytes_add(mp->cm_tok[PHASE_BWD_LAST], mp->pp_recv_last_tok);
    /* the stage outputs and input gradients torch's pipelining keeps (pp_stage_io_kept) */
    mp->cm_tok[PHASE_FORWARD] = bytes_add(mp->cm_tok[PHASE_FORWARD], mp->pp_outs_first_tok);
    mp->cm_tok[PHASE_BWD_FIRST] = bytes_add(mp->cm_tok[PHASE_BWD_FIRST], mp->pp_outs_first_tok);
    mp->cm_tok[PHASE_LOSS] = bytes_add(mp->cm_tok[PHASE_LOSS], mp->pp_igrad_last_tok + mp->pp_outs_last_tok);
    mp->cm_tok[PHASE_BWD_LAST] = bytes_add(mp->cm_tok[PHASE_BWD_LAST], mp->pp_igrad_last_tok + mp->pp_outs_last_tok);
    /* logits per vocab entry outside the loss path: those a loop keeps past the loss
     * (kept_outputs, kept_logits; inside the loss path at the loss itself), the evaluation
     * pass's */
    mp->lg_tok[PHASE_FORWARD] = mp->fwd_logits_tok;
    for (int ph = PHASE_BWD_LAST; ph <= PHASE_OPTIMIZER; ph++)
        mp->lg_tok[ph] = mp->kept_logits_tok;
    mp->lg_tok[PHASE_EVAL] = mp->eval_logits_tok;
    mp->nphases = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        if (mp->phase_on[ph])
            mp->phases[mp->nphases++] = (uint8_t)ph;
}

bool memmodel_uses_llmem(enum stack stack, const struct mem_options *opt)
{
    return opt->paper || stack == STACK_COLOSSAL;
}

void memmodel_prepare(const struct model_plan *p, const struct train_config *c,
                      const struct mem_options *opt, struct mem_prepared *mp)
{
    memset(mp, 0, sizeof *mp);
    mp->layers = (int32_t)p->spec.layers;
    mp->tp = c->tp;
    mp->heads = p->spec.heads;
    mp->ckpt = c->grad_ckpt || c->ckpt_selective;
    mp->nccl = c->gpus > 1 && !(c->features & FEAT_FAKE_PG) ? opt->nccl_bytes : 0;
    mp->use_llmem = memmodel_uses_llmem(c->stack, opt);
    if (mp->use_llmem) {
        llmem_static(p, c, opt->base_bytes, opt->paper, &mp->llmem);
        return;
    }
    fixed_phases(p, c, mp);
    fsdp2_side_pool(p, c, mp);
    struct mem_act_tok blk; /* one block's saved tensors per token (activations.h) */
    act_block_tok(p, c, &blk);
    activation_coeffs(p, c, &blk, mp);
    logits_coeffs(p, c, &blk, mp);
    point_coeffs(mp);
    replayscope_setup(p, c, opt, mp);
}

/* The least allocated memory any run of c must reach (memmodel.h). At the optimizer step
 * the resident weights, every gradient (one, under optimizer-in-backward) and the states
 * coexist. At the end of a forward over exact-length samples the weights and states (from
 * step 2 on) coexist with what backward cannot do without: each block's input (the
 * checkpoint, or the input its first norm saves), in the 16-bit compute dtype at least and
 * whole on every TP rank (1/tp of it under sequence parallelism); without checkpointing also the MLP tensors the activation's
 * backward reads (gate and up of a gated MLP, as even a fused SwiGLU keeps, or fc1's
 * output). Stack-specific and inferred terms are left out on purpose. */
uint64_t memmodel_floor(const struct model_plan *p, const struct train_config *c,
                        bool exact_seq, bool before_grads, enum mem_phase *at)
{
    struct resident r, all;
    resident_terms(p, c, &all);
    r = all;
    uint64_t blocks = (uint64_t)p->spec.layers;
    if (c->method == METHOD_PP) { /* the first stage, with its micro-batches in flight */
        pp_stage(p, c, &all, false, &r);
        const int32_t m = train_microbatches(c), pp = train_pp(c);
        blocks = (uint64_t)pp_stage_layers(p, c, false) * (uint64_t)(m < pp ? m : pp);
    }
    const uint64_t step = r.w + r.g + r.o;
    uint64_t fwd = r.w + r.o;
    if (exact_seq) {
        const uint64_t t = bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len);
        const uint64_t ea = c->precision == PREC_FP32 ? 4 : 2;
        uint64_t tok = ea * (uint64_t)p->spec.hidden / act_seq_parallel(c);
        if (!c->grad_ckpt && !c->ckpt_selective)
            tok += (p->spec.mlp == MLP_GATED ? 2u : 1u) * ea * (uint64_t)p->inter_active /
                   (uint64_t)c->tp;
        fwd = bytes_add(fwd, bytes_mul(t, bytes_mul(tok, blocks)));
    }
    *at = fwd > step || before_grads ? PHASE_FORWARD : PHASE_OPTIMIZER;
    return *at == PHASE_FORWARD ? fwd : step;
}
