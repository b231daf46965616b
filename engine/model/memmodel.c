/* memmodel.c: the phase-timeline memory model (see memmodel.h and README "Memory model").
 *
 * Every byte count below is a tensor that exists in PyTorch at that point of a training
 * step; the comment on each term says which tensor and where its size comes from. */
#include "memmodel.h"

#include <math.h>
#include <string.h>

#include "activations.h"
#include "allocsim.h"
#include "float8.h"
#include "losspath.h"
#include "streampool.h"
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

#define MIB (UINT64_C(1) << 20)

/* The per-point terms below use the saturating bytes_add/bytes_mul/bytes_scale (units.h):
 * a micro-batch x sequence x vocabulary product can pass 2^64, and a saturated term keeps
 * every sum and every phase at BYTES_SAT instead of wrapping. */

/* --- batch-independent terms ------------------------------------------------------- */

struct resident {
    double trained, frozen;   /* parameters per GPU */
    uint64_t w, g, o, tmp;    /* weights, grads, optimizer states, step temporaries (bytes) */
    uint64_t amp_all, amp_one;/* autocast 16-bit weight copies: all blocks, one block */
    uint64_t dequant;         /* one dequantized frozen block weight (bitsandbytes) */
    uint64_t dequant_head;    /* the dequantized lm_head, when the stack quantizes it */
    uint64_t gather_fwd, gather_bwd, bucket;
    uint64_t paged;           /* optimizer states bitsandbytes keeps in managed memory */
    uint64_t acc;             /* gradients accumulated unsharded over a pipelined step */
    uint64_t host;            /* bytes of this GPU's share kept in host memory (offload) */
    uint64_t root_hold;       /* FSDP1: the lm_head's gradient piece, held through backward */
    uint64_t root_end;        /* FSDP1: the root's gradient pieces + their concatenation */
    uint64_t root_gather;     /* the gathered root unit (embedding, lm_head, final norm) */
    uint64_t g_frozen;        /* the part of g that is frozen weights' (mixed_unit_grads) */
};

/* Bytes per element of what is trained: fp32 master weights under mixed precision (AMP
 * keeps the parameters fp32) and for PEFT adapters upcast by autocast_adapter_dtype. */
uint64_t memmodel_trained_bytes(const struct train_config *c)
{
    if (c->precision != PREC_BF16_PURE)
        return 4;
    return (c->finetune != FT_FULL && (c->features & FEAT_ADAPTER_FP32)) ? 4 : 2;
}

/* Optimizer state bytes per trained parameter: AdamW keeps exp_avg and exp_avg_sq in the
 * parameter dtype; bitsandbytes 8-bit AdamW one byte each (block-wise absmax ignored:
 * 2 x 4 bytes per 2048 elements); plain SGD without momentum none. */
static uint64_t state_bytes(const struct train_config *c, uint64_t wt)
{
    switch (c->optimizer) {
    case OPT_ADAMW:
        return 2 * wt;
    case OPT_ADAMW8BIT:
        return 2;
    default:
        return 0;
    }
}

/* Frozen base of LoRA: block Linear weights in the quantized format, the rest (embedding,
 * lm_head, norms, biases) in the compute dtype. NF4 stores 4 bits plus one fp32 absmax
 * per 64 weights; double quantization makes that absmax 8-bit plus one fp32 per 256
 * blocks (bitsandbytes functional.quantize_4bit). LLM.int8 keeps one fp32 scale per row. */
double memmodel_frozen_elem_bytes(const struct train_config *c, bool quantized)
{
    if (quantized) {
        switch (c->quant) {
        case QUANT_INT8:
            return 1.0;
        case QUANT_NF4:
            return 0.5 + 4.0 / 64.0;
        case QUANT_NF4_DQ:
            return 0.5 + 1.0 / 64.0 + 4.0 / (64.0 * 256.0);
        default:
            break;
        }
    }
    return (c->precision == PREC_FP32 || (train_mixed(c) && (c->features & FEAT_FP32_BASE))) ? 4.0 : 2.0;
}

/* Bytes per weight element while a quantized Linear computes: bitsandbytes' MatMul4Bit
 * runs linear(A, dequantize_4bit(B, quant_state).to(A.dtype).t()) (bitsandbytes 0.42.0
 * autograd/_functions.py:516, backward :546 the same), and dequantize_4bit allocates its
 * output in quant_state.dtype, the dtype the weight had when it was quantized
 * (functional.py:1026 torch.empty(quant_state.shape, dtype=quant_state.dtype)). Lightning's
 * BitsandbytesPrecision, which litgpt uses, quantizes from `weight.contiguous().to(device,
 * dtype=torch.half)` (lightning src/lightning/fabric/plugins/precision/bitsandbytes.py
 * _Linear4bit.quantize at 438f29f0, Mar 2024, and at the Oct 2023 version lit-gpt 8641822
 * ran), so under a bf16 (or fp32) compute dtype the fp16 dequantized weight and its cast
 * exist together until the cast returns: 2 + gb bytes a weight (feature dequant-cast).
 * HF's bitsandbytes integration quantizes from the loaded dtype, where .to() is a no-op. */
static uint64_t dequant_bytes(const struct train_config *c, uint64_t gb)
{
    const bool cast = (c->features & FEAT_DEQUANT_CAST) && c->precision != PREC_FP16;
    return gb + (cast ? 2 : 0);
}

static double frozen_bytes(const struct model_plan *p, const struct train_config *c,
                           double frozen_params, double quant_w, double tpdiv)
{
    const double bd = memmodel_frozen_elem_bytes(c, false), q = memmodel_frozen_elem_bytes(c, true);
    const double rest = frozen_params - quant_w;
    switch (c->quant) {
    case QUANT_INT8:
        return quant_w * q + 4.0 * (double)p->block_rows / tpdiv + rest * bd;
    case QUANT_NF4:
    case QUANT_NF4_DQ:
        return quant_w * q + rest * bd;
    default:
        return frozen_params * bd;
    }
}

/* ZeRO-3's gathered parameters per GPU. FSDP wraps each block as a unit; what is left
 * (embedding, lm_head, final norm) forms the root unit, which FSDP does not reshard after
 * forward because backward needs it at once (torch FSDP _post_forward_reshard: "Do not free
 * the root's parameters in the post-forward for FULL_SHARD"; FSDP2 sets the root's
 * reshard_after_forward to False). So the root stays gathered through forward and backward,
 * beside the block being computed; backward also prefetches the next block (BACKWARD_PRE;
 * forward_prefetch is off by default) and holds one block's unsharded gradient until its
 * reduce-scatter. Without FSDP's unit wrapping the whole 16-bit model ends up gathered, as
 * LLMem observes for Gemini (5.2). */
static double gathered_block_bytes(const struct model_plan *p, const struct train_config *c,
                                   double layer, double gb);

/* FSDP1's flat parameters (FEAT_FSDP_FLAT) and the root unit's gradient in full training.
 * In forward FSDP1 hands each module views of the unsharded FlatParameter that autograd
 * tracks ("We use `Tensor` views in the forward so that they are tracked by autograd",
 * FlatParamHandle._use_unsharded_flat_param -> _use_unsharded_views(as_params=False):
 * torch.split of the flat parameter, then .view per original parameter; pytorch
 * torch/distributed/fsdp/_flat_param.py at 01caf79e, as in torch 2.2/2.3), and its
 * post-backward hook sits on the FlatParameter's AccumulateGrad. So a unit's gradient
 * reaches the FlatParameter only when SplitWithSizesBackward has every view's gradient:
 * for the root unit (token embedding, lm_head, final norm) the lm_head weight's gradient,
 * made first in backward, waits in the autograd engine's input buffer until the embedding's,
 * made last; then split's backward concatenates them into a new flat gradient beside the
 * pieces, before AccumulateGrad adds it to .grad (no_sync) or FSDP reduce-scatters it.
 * A tied weight is one view: its gradient is held and the embedding's added to it. Blocks
 * do the same within their own backward (the block gradient gather_bwd counts). FSDP2
 * (fully_shard: per-parameter DTensors) has no flat parameter. */
static void root_grads(const struct model_plan *p, const struct train_config *c,
                       struct resident *r, double root, double gb)
{
    const bool flat = (c->features & FEAT_FSDP_FLAT) && c->finetune == FT_FULL && c->dp > 1 &&
                      (c->method == METHOD_ADP || c->method == METHOD_DPTP);
    if (!flat)
        return;
    const double embed = (double)p->embed_p / (double)c->tp;
    const double head = root > embed ? root - embed : embed; /* the tied weight: one view */
    r->root_hold = (uint64_t)(head * gb);
    r->root_end = (uint64_t)((head + embed + root) * gb); /* the pieces + their cat */
    r->root_gather = (uint64_t)(root * gb);
}

/* torchtitan from 83e69410 (2025-07-28, models/llama3/infra/parallelize.py apply_fsdp):
 * fully_shard on tok_embeddings, on each block and on [norm, output], then on the model,
 * which keeps no parameters of its own. The embedding and every block are resharded after
 * forward, norm and output are not (reshard_after_forward_policy "default"), and each unit
 * is resharded after its backward. So the forward's last block is gathered alone and the
 * loss has norm and output alone (the one forward figure takes the larger); the last block's
 * backward holds it and the prefetched block, the first block's it and the prefetched
 * embedding (the one backward figure takes the larger), beside a block's gradient. */
static void zero3_end_units(const struct model_plan *p, const struct train_config *c,
                            struct resident *r, double unit, uint64_t unit_grad)
{
    const double gb = c->precision == PREC_FP32 ? 4.0 : 2.0, tp = (double)c->tp;
    const double head = (double)(p->head_p ? p->head_p : p->embed_p) / tp * gb;
    const double emb = (double)p->embed_p / tp * gb;
    r->gather_fwd = (uint64_t)(head > unit ? head : unit);
    r->gather_bwd = (uint64_t)(unit + (emb > unit ? emb : unit)) + unit_grad;
}

static void zero3_gather(const struct model_plan *p, const struct train_config *c,
                         struct resident *r, double layer, double root)
{
    const uint64_t gb = c->precision == PREC_FP32 ? 4 : 2;
    const double wt = (double)memmodel_trained_bytes(c);
    if (!(c->features & FEAT_FSDP)) {
        double all = (double)p->params / (double)c->tp;
        r->gather_fwd = r->gather_bwd = (uint64_t)(all * (double)gb * (1.0 - 1.0 / (double)c->dp));
        return;
    }
    const double unit = gathered_block_bytes(p, c, layer, (double)gb);
    root_grads(p, c, r, root, (double)gb);
    /* a mixed unit's new gradient is its whole block (mixed_unit_grads); in the longest
     * batch's first step under no_sync, AccumulateGrad keeps it as the flat parameter's
     * .grad itself (no sum yet), which fixed_phases counts among the accumulated ones */
    const bool mixed = r->g_frozen && !((c->features & FEAT_LONGEST_FIRST) && (c->features & FEAT_GRAD_ACCUM));
    const double unit_p = c->finetune == FT_FULL || mixed ? layer + (mixed ? r->trained / (double)p->spec.layers : 0)
                                                          : r->trained / (double)p->spec.layers;
    const uint64_t unit_grad = (uint64_t)(unit_p * wt);
    if (c->features & FEAT_FSDP_END_UNITS) {
        zero3_end_units(p, c, r, unit, unit_grad);
        return;
    }
    r->gather_fwd = (uint64_t)(root * (double)gb + unit);
    r->gather_bwd = (uint64_t)(root * (double)gb + 2 * unit) + unit_grad;
}

/* The methods whose module lives in 16 bit with the fp32 master copy in the optimizer
 * (train_master_in_optimizer): DeepSpeed ZeRO stage 1/2 and ZeRO-3 offload, Megatron's
 * distributed optimizer (pp). What each rank allocates, per trained parameter, dp ranks:
 *  - ZeRO-1/2, DeepSpeed runtime/zero/stage_1_and_2.py (DeepSpeedZeroOptimizer @v0.16):
 *    the bit16 module params whole; `single_partition_of_fp32_groups` (the fp32 master
 *    partition, 4/dp) and the optimizer's states on it (8/dp for AdamW); gradients in the
 *    module dtype, whole under stage 1 (each param's .grad until the reduce at the
 *    boundary), the rank's partition under stage 2 (`averaged_gradients`, 2/dp); at the
 *    step the partition's gradients are flattened and cast to fp32 (4/dp, `step`:
 *    single_grad_partition ... .to(fp32)). backward() allocates `ipg_buffer`,
 *    reduce_bucket_size elements in the module dtype, and a second one with overlap_comm
 *    (transformers docs/source/en/deepspeed.md's ZeRO-2 and ZeRO-3 examples set it true,
 *    and the speed model overlaps the reduce-scatters with backward accordingly); the HF
 *    Trainer sets reduce_bucket_size "auto" to hidden x hidden (integrations/deepspeed.py
 *    trainer_config_finalize).
 *    FSDP SHARD_GRAD_OP holds the same bytes in forward and backward: fp32 shards (4/dp)
 *    and the unsharded 16-bit parameters kept from forward through backward (2).
 *  - pp (Megatron-LM, docs/source/api-guide/dist_optimizer.md): bf16 parameters (2), the
 *    fp32 main_grad buffer (4: bf16 training accumulates and all-reduces gradients in fp32,
 *    arguments.py), fp32 main parameters and Adam states sharded over dp (12/dp): "6 +
 *    12/d" bytes per parameter; its fused Adam keeps no step temporary.
 *  - offload (ZeRO-3 with offload_optimizer, DeepSpeed stage3.py + DeepSpeedCPUAdam): the
 *    16-bit parameter partition on the GPU (2/dp, gathered per unit as ZeRO-3), the fp32
 *    master, states and fp32 gradient partition in pinned host memory (16/dp), the step on
 *    the CPU; offload_param (`--offload params`, FSDP CPUOffload(offload_params=True))
 *    moves the 16-bit partition to the host as well. */
static void master_in_optimizer(const struct model_plan *p, const struct train_config *c,
                                struct resident *r, double dp)
{
    const bool mixed_p = train_mixed(c);
    const double module = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const double state = state_bytes(c, c->precision == PREC_BF16_PURE ? 2 : 4);
    const double master = mixed_p ? 4.0 : 0.0;
    const double hidden2 = (double)p->spec.hidden * (double)p->spec.hidden;
    const double trained = r->trained, frozen16 = (double)r->w; /* frozen part, bytes */
    r->w = (uint64_t)(frozen16 + trained * module);
    r->o = (uint64_t)(trained * (master + state) / dp);
    r->tmp = 0;
    switch (c->method) {
    case METHOD_ZERO1:
    case METHOD_ZERO2:
        r->g = (uint64_t)(trained * module / (c->method == METHOD_ZERO2 ? dp : 1.0));
        r->tmp = (uint64_t)(trained * (mixed_p ? 4.0 : 0.0) / dp);
        if (c->optimizer == OPT_ADAMW && !(c->features & FEAT_FUSED_OPT))
            r->tmp += (uint64_t)(trained * (mixed_p ? 4.0 : module) / dp); /* foreach sqrt */
        r->bucket = (uint64_t)(2.0 * hidden2 * module);
        break;
    case METHOD_PP:
        r->g = (uint64_t)(trained * (mixed_p ? 4.0 : module));
        break;
    default: /* offload: the step runs on the CPU */
        r->g = r->o = 0;
        r->bucket = (uint64_t)(hidden2 * module);
        r->host = (uint64_t)(trained * (master + state + (mixed_p ? 4.0 : module)) / dp);
        r->w = (uint64_t)((double)r->w / dp);
        if (c->offload == OFFLOAD_PARAMS) {
            r->host += r->w;
            r->w = 0;
        }
        break;
    }
}

/* How a method shards the resident terms: ZeRO-3 (parameters, gradients and states over
 * dp) and whether the fp32 master copy lives in the optimizer (ds: DeepSpeed ZeRO-1/2 and
 * offload, Megatron's distributed optimizer). torchtitan's pipelines shard each stage with
 * FSDP2 (ZeRO-3 over dp: torchtitan models/llama3/infra/parallelize.py applies fully_shard
 * to every stage's blocks), Megatron's keep bf16 parameters and shard only the optimizer. */
static void shard_kind(const struct train_config *c, bool *zero3, bool *ds)
{
    const bool fsdp_stages = c->method == METHOD_PP && c->stack == STACK_TORCHTITAN;
    *zero3 = c->method == METHOD_ADP || c->method == METHOD_DPTP || c->method == METHOD_OFFLOAD ||
             fsdp_stages;
    *ds = train_master_in_optimizer(c) && !fsdp_stages;
}

/* The float8 weight casts a step keeps (--precision fp8), in place of autocast's 16-bit
 * copies of the block Linears (Float8Linear casts the weight itself; autocast still copies
 * the bf16 lm_head under the autocast stacks). Tensorwise without float8 all-gather, each
 * Linear saves weight_fp8_t, a new e4m3 tensor of its unsharded (per TP rank) weight, for
 * backward: all blocks' without checkpointing, one block's while it is recomputed (torchao
 * warns "When using FSDP, it's recommended to enable
 * config.force_recompute_fp8_weight_in_bwd", config.py @eab345c2). With float8 all-gather
 * the saved weight is a view of the gathered unit, rowwise saves the weight itself: none.
 * Selective checkpointing recomputes the casts, but torchtitan's op policy saves every
 * aten.abs output (@9dec370 parallelize_llama.py _save_list: "for low precision training,
 * it's useful to always save the result of max(abs(tensor))": aten.abs, aten.max), and
 * eager checkpointing caches what its policy saves (torch/utils/checkpoint.py
 * _CachingTorchDispatchMode) until the block's recomputation: abs(weight) of every block
 * Linear cast inside the block, in the gathered weight's dtype. Under torch.compile the
 * partitioner saves only what backward reads, the amax, not abs. (Later torchtitan dropped
 * aten.abs from the list: e7c0cae models/llama3/parallelize_llama.py keeps aten.max only;
 * the stack follows 9dec370, the commit of the TT rows, as its loss path does.) */
static void fp8_weight_copies(const struct model_plan *p, const struct train_config *c,
                              struct resident *r, double ep_keep, double tpdiv)
{
    const double all = ((double)p->linear_w - (double)p->head_p - (double)p->expert_p * ep_keep) / tpdiv;
    const double one = ((double)p->layer_linear_w - (double)p->layer_expert_p * ep_keep) / tpdiv;
    const double head16 = (c->features & FEAT_FSDP_MP) ? 0.0 : (double)p->head_p / tpdiv * 2.0;
    const bool copies = float8_tensorwise(c) && !float8_allgather(c);
    r->amp_one = copies ? (uint64_t)one : 0;
    if (c->grad_ckpt)
        r->amp_all = (uint64_t)head16;
    else if (c->ckpt_selective) {
        const double hp = (c->features & FEAT_FSDP_MP) ? 2.0 : 4.0; /* the weight at the cast */
        const bool abs_kept = !(c->features & FEAT_COMPILE) && c->stack == STACK_TORCHTITAN &&
                              !float8_allgather(c);
        r->amp_all = (uint64_t)(head16 + (abs_kept ? all * hp : 0.0));
    } else
        r->amp_all = (uint64_t)(head16 + (copies ? all : 0.0));
}

/* Bytes of one gathered block: its Linear weights in float8 under float8 all-gather, the
 * rest (norms) in the 16-bit param dtype. */
static double gathered_block_bytes(const struct model_plan *p, const struct train_config *c,
                                   double layer, double gb)
{
    if (!float8_allgather(c))
        return layer * gb;
    const double ep_keep = 1.0 - 1.0 / (double)train_ep(c); /* a rank's own experts */
    const double lin = ((double)p->layer_linear_w - (double)p->layer_expert_p * ep_keep) / (double)c->tp;
    return (layer - lin) * gb + lin;
}

/* DeepSpeed ZeRO-3's contiguous gradient bucket: DeepSpeedZeroOptimizer_Stage3
 * _setup_for_real_optimizer allocates `__ipg_bucket_flat_buffer = torch.empty(
 * self.reduce_bucket_size, dtype=self.dtype)` when contiguous_gradients (the default) and
 * keeps it for the run (deepspeed/runtime/zero/stage3.py @ea78ab68). An accelerate config
 * without a DeepSpeed JSON builds zero_optimization with stage, offload devices and
 * stage3_gather_16bit_weights_on_model_save only (accelerate utils/dataclasses.py
 * DeepSpeedPlugin.__post_init__), and accelerate's and the Trainer's hidden-size fill-ins
 * replace only "auto" values, so reduce_bucket_size keeps DeepSpeed's default, 5e8 elements
 * (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig @1b88ac36), in the 16-bit module
 * dtype: 1 GB a GPU. */
#define DS_DEFAULT_REDUCE_BUCKET 500000000.0
static uint64_t ds_zero3_ipg_bytes(uint64_t module_bytes)
{
    return (uint64_t)(DS_DEFAULT_REDUCE_BUCKET * (double)module_bytes);
}

/* litgpt's FSDP units mix frozen and trained parameters, and their gradients cover the
 * frozen ones too. Lightning's FSDPStrategy defaults use_orig_params=True (lightning
 * src/lightning/fabric/strategies/fsdp.py:175 @71aed751f7, the commit lit-gpt 8641822's
 * requirements.txt pins; litgpt keeps it through 2024) and lit-gpt wraps each whole Block,
 * LoRA adapters and frozen base alike (finetune/lora.py setup: auto_wrap_policy={Block} @8641822).
 * FSDP then makes one FlatParameter per Block whose requires_grad is the OR over its
 * parameters ("For `use_orig_params=True`, permit non-uniform `requires_grad`", pytorch
 * torch/distributed/fsdp/_flat_param.py FlatParamHandle._validate_tensors_to_flatten and
 * _init_flat_param_and_metadata @01caf79e; the same code was flat_param.py in the torch 2.1.0
 * the rows ran, whose exact tag this session could not fetch), so autograd produces the
 * gradient of the whole flat parameter: "the gradient memory usage will be higher than
 * expected (<block numel> numel instead of <adapter numel> numel before sharding via
 * reduce-scatter)" (torch distributed/fsdp/_wrap_utils.py _validate_frozen_params, the
 * warning litgpt PR #1538 quotes for transformer.h.0). The root unit (embedding, final norm,
 * lm_head) holds no adapter and gets no gradient. The flat parameter's dtype is the trained
 * one (bf16-true: bf16; FSDPPrecision's mixed modes keep fp32 parameters). Bytes of the
 * frozen block weights' gradients at the shard size of r->g (accumulated_grads scales it
 * to the unsharded no_sync sum). */
static uint64_t mixed_unit_grads(const struct model_plan *p, const struct train_config *c,
                                 double layer, uint64_t wt, double dpdiv)
{
    const bool fsdp = (c->features & FEAT_FSDP) && c->dp > 1 &&
                      (c->method == METHOD_ADP || c->method == METHOD_DPTP);
    if (c->stack != STACK_LITGPT || c->finetune == FT_FULL || !fsdp)
        return 0;
    return (uint64_t)((double)p->spec.layers * layer * (double)wt / dpdiv);
}

static void resident_terms(const struct model_plan *p, const struct train_config *c,
                           struct resident *r)
{
    bool zero3, ds;
    shard_kind(c, &zero3, &ds);
    const double tpdiv = (double)c->tp, dpdiv = zero3 && !ds ? (double)c->dp : 1.0;
    const uint64_t wt = memmodel_trained_bytes(c), gb = c->precision == PREC_FP32 ? 4 : 2;
    int64_t extra_head = (p->spec.tied && (c->features & FEAT_UNTIED_HEAD))
                             ? p->spec.vocab * (p->spec.emb_dim ? p->spec.emb_dim : p->spec.hidden)
                             : 0;
    /* TP shards the matrices (Megatron column/row and vocab-parallel embedding); norms and
     * biases stay replicated. */
    double base = (double)(p->params - p->vector_p + extra_head) / tpdiv + (double)p->vector_p;
    /* expert parallelism (MoE): a rank holds experts / ep of the routed experts. Under
     * ZeRO-3 a rank's shard of them is 1/dp either way (the experts' data-parallel group
     * is dp / ep), so there only the gathered unit shrinks. */
    const double ep_keep = 1.0 - 1.0 / (double)train_ep(c);
    const double ep_cut = zero3 ? 0.0 : (double)p->expert_p * ep_keep / tpdiv;
    base -= ep_cut;
    double layer = ((double)p->layer_p - (double)p->layer_expert_p * ep_keep) / tpdiv;
    double big = (double)(p->embed_p > p->head_p + extra_head ? p->embed_p : p->head_p + extra_head) / tpdiv;
    double root = (double)(p->embed_p + p->head_p + extra_head) / tpdiv;

    memset(r, 0, sizeof *r);
    if (c->finetune == FT_FULL) {
        r->trained = base;
        r->w = ds ? 0 : (uint64_t)(base * (double)wt / dpdiv);
    } else {
        r->frozen = base;
        r->trained = (double)plan_lora_params_cfg(p, c) / tpdiv;
        if (!zero3) /* the adapters of a rank's experts only */
            r->trained -= (double)plan_lora_expert_params(p, c->lora_targets, c->lora_r) *
                          ep_keep / tpdiv;
        /* the block Linears are quantized; Lightning's BitsandbytesPrecision (litgpt)
         * converts every nn.Linear, the lm_head too */
        const bool qhead = (c->features & FEAT_QUANT_HEAD) != 0;
        double head = (double)(p->head_p + extra_head) / tpdiv;
        double quant_w = (double)(p->linear_w - p->head_p) / tpdiv + (qhead ? head : 0) - ep_cut;
        r->w = (uint64_t)((frozen_bytes(p, c, base, quant_w, tpdiv) + (ds ? 0 : r->trained * (double)wt)) / dpdiv);
        if (c->quant != QUANT_NONE) { /* dequantized to the compute dtype for each matmul */
            const uint64_t db = dequant_bytes(c, gb);
            r->dequant = (uint64_t)((double)p->max_linear_w / tpdiv) * db;
            r->dequant_head = qhead ? (uint64_t)head * db : 0;
        }
    }
    if (ds) {
        master_in_optimizer(p, c, r, (double)c->dp);
        if (c->method == METHOD_OFFLOAD)
            zero3_gather(p, c, r, layer, root);
        return;
    }
    uint64_t sb = state_bytes(c, wt);
    r->g = (uint64_t)(r->trained * (double)wt / dpdiv);
    r->g_frozen = zero3 ? mixed_unit_grads(p, c, layer, wt, dpdiv) : 0;
    r->g += r->g_frozen;
    r->o = (uint64_t)(r->trained * (double)sb / dpdiv);
    /* torch AdamW (foreach) builds one sqrt(exp_avg_sq) temporary per parameter group;
     * the fused kernel updates in place, and so does bitsandbytes' (paged) AdamW:
     * Optimizer2State.update_step calls F.optimizer_update_32bit, one CUDA kernel over
     * p, grad, state1 and state2 (bitsandbytes 0.43.1 @4a6fb352 optim/optimizer.py:496) */
    r->tmp = c->optimizer == OPT_ADAMW && !(c->features & (FEAT_FUSED_OPT | FEAT_PAGED_OPT))
                 ? (uint64_t)(r->trained * (double)wt / dpdiv) : 0;
    if (c->features & FEAT_PAGED_OPT) {
        /* paged optimizers allocate their states with cudaMallocManaged: the caching
         * allocator never sees them, nvidia-smi does while they are resident */
        r->paged = r->o;
        r->o = 0;
    }
    if (c->features & FEAT_OPT_IN_BWD) {
        /* optimizer-in-backward steps and frees each gradient as soon as it is ready */
        double largest = c->finetune == FT_FULL ? big : r->trained / (double)p->spec.layers;
        r->g = (uint64_t)(largest * (double)wt / dpdiv);
        r->tmp = (uint64_t)(largest * (double)wt / dpdiv);
    }
    /* autocast casts each fp32 weight to 16 bit for its matmul, and the matmul keeps that
     * copy to compute its input's gradient (trained weights are also in autocast's cache;
     * frozen fp32 weights, as under litgpt bf16-mixed LoRA, are kept the same way).
     * Reentrant checkpointing runs the block forward under no_grad, so then only the
     * lm_head copy (and one block's during recomputation) exists. */
    const bool fp32_blocks = c->finetune == FT_FULL ||
                             ((c->features & FEAT_FP32_BASE) && c->quant == QUANT_NONE);
    /* FSDP2's MixedPrecisionPolicy casts each unit's parameters to param_dtype when it
     * gathers them (counted as the gathered units) and runs no autocast: no extra copies.
     * A rank computes with its own experts only. */
    if (train_mixed(c) && fp32_blocks && !(c->features & FEAT_FSDP_MP)) {
        r->amp_all = (uint64_t)(((double)p->linear_w - (double)p->expert_p * ep_keep) / tpdiv) * 2;
        r->amp_one = (uint64_t)(((double)p->layer_linear_w - (double)p->layer_expert_p * ep_keep) /
                                tpdiv) * 2;
    }
    if (float8_on(c))
        fp8_weight_copies(p, c, r, ep_keep, tpdiv);
    if (c->method == METHOD_CDP) /* DDP gradient buckets: one more copy of the gradients */
        r->bucket = (uint64_t)(r->trained * (double)wt);
    if (c->method == METHOD_ADP && (c->features & FEAT_DS_DEFAULT_BUCKETS))
        r->bucket += ds_zero3_ipg_bytes(gb);
    if (zero3)
        zero3_gather(p, c, r, layer, root);
}

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
    const bool fsdp = (c->features & FEAT_FSDP) && c->dp > 1 &&
                      (c->method == METHOD_ADP || c->method == METHOD_DPTP);
    return fsdp ? r->g * (uint64_t)c->dp : r->g;
}

/* The batch-independent bytes of each phase (see enum mem_phase). Gradients are None
 * between steps (zero_grad(set_to_none=True)), optimizer states exist from the first
 * step on, so they are resident in every phase of the steady state. */
/* Blocks of the first or the last pipeline stage (the two the phases read, pp_phases).
 * torchtitan without pipeline_parallel_split_points and a single-stage schedule
 * (parallelisms/pipelining_utils.py generate_split_points, the same at 68064737 and 9dec370):
 * base = L / pp blocks on the first stage, base + 1 on each middle stage while the
 * remainder L % pp lasts, the rest on the last, base + max(0, L % pp - (pp - 2));
 * Llama-3.1-405B's 126 blocks on 8 stages are 15, 16 x 6, 15. Elsewhere the uniform split,
 * ceil(L / pp) on the stages that bind (Megatron). */
static int32_t pp_stage_layers(const struct model_plan *p, const struct train_config *c, bool last)
{
    const int32_t pp = train_pp(c), L = (int32_t)p->spec.layers;
    if (c->stack != STACK_TORCHTITAN || pp < 2)
        return (L + pp - 1) / pp;
    const int32_t base = L / pp, extra = L % pp;
    return last && extra > pp - 2 ? base + extra - (pp - 2) : base;
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
    r->gather_fwd = r->gather_bwd = (uint64_t)(((stage_p - lin) * gb + lin) / (double)c->tp);
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
    r->w = (uint64_t)((double)all->w * share);
    r->g = (uint64_t)((double)all->g * tshare);
    r->o = (uint64_t)((double)all->o * tshare);
    r->tmp = (uint64_t)((double)all->tmp * tshare);
    r->amp_all = (uint64_t)((double)all->amp_all * share);
    r->dequant_head = last ? all->dequant_head : 0;
    if (c->stack == STACK_TORCHTITAN)
        fsdp_stage_held(p, c, last, per * (double)p->layer_p + ends, all->trained * tshare, r);
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
    set_phase(mp, PHASE_LOSS, l.w, fsdp ? l.acc : l.g, l.o, l.amp_all + l.dequant_head, l.gather_fwd + l.bucket);
    set_phase(mp, PHASE_BWD_LAST, l.w, fsdp ? l.acc : l.g, l.o, l.amp_all + l.dequant, l.gather_bwd + l.bucket);
    const struct resident *big = f.w + f.g + f.o + f.tmp > l.w + l.g + l.o + l.tmp ? &f : &l;
    set_phase(mp, PHASE_OPTIMIZER, big->w, big->g, big->o + big->tmp, 0, big->bucket);
    const int32_t first = pp_stage_layers(p, c, false), m = train_microbatches(c);
    const int32_t inflight = m < train_pp(c) ? m : train_pp(c);
    mp->act_layers[0] = first * inflight;
    mp->act_layers[1] = pp_stage_layers(p, c, true);
    mp->act_extra_bwd = first * (inflight - 1);
    mp->tail_fwd = false;
}

static void fixed_phases(const struct model_plan *p, const struct train_config *c,
                         struct mem_prepared *mp)
{
    struct resident r;
    resident_terms(p, c, &r);
    mp->paged = r.paged;
    mp->host = r.host;
    mp->act_layers[0] = mp->act_layers[1] = (int32_t)p->spec.layers;
    mp->act_extra_bwd = 0;
    mp->tail_fwd = true;
    if (c->method == METHOD_PP) {
        pp_phases(p, c, &r, mp);
        return;
    }
    const uint64_t amp_fwd = c->grad_ckpt ? r.amp_one : r.amp_all;
    const uint64_t gbytes = train_master_in_optimizer(c) ? (c->precision == PREC_FP32 ? 4 : 2)
                                                         : memmodel_trained_bytes(c);
    uint64_t head_grad = c->finetune == FT_FULL
        ? (uint64_t)((double)(p->head_p ? p->head_p : p->embed_p) / c->tp) * gbytes : 0;
    /* accumulating micro-batches keeps the summed gradients through the next forward */
    const uint64_t acc_grad = (c->features & FEAT_GRAD_ACCUM) ? accumulated_grads(c, &r) : 0;
    const uint64_t bwd_grad = acc_grad > r.g ? acc_grad : r.g;
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
    set_phase(mp, PHASE_LOSS, r.w, held_grad, r.o, amp_fwd + (c->stack == STACK_LITGPT ? 0 : r.dequant_head),
              r.gather_fwd + r.bucket);
    /* FSDP1 (root_grads): the lm_head's gradient piece is held through backward, beside the
     * accumulated gradients (without accumulation it is head_grad itself at the last block) */
    const uint64_t last_grad = acc_grad ? head_grad + r.root_hold : head_grad;
    set_phase(mp, PHASE_BWD_LAST, r.w, last_grad, r.o, amp_fwd + r.dequant, r.gather_bwd + r.bucket);
    set_phase(mp, PHASE_BWD_FIRST, r.w, bwd_grad + r.root_hold, r.o, r.amp_one + r.dequant,
              r.gather_bwd + r.bucket);
    set_phase(mp, PHASE_OPTIMIZER, r.w, r.g, r.o + r.tmp, 0, r.bucket);
    if (c->features & FEAT_EVAL_LOGITS)
        set_phase(mp, PHASE_EVAL, r.w, 0, r.o, r.dequant + r.dequant_head, r.gather_fwd + r.bucket);
    /* after the first block: the root unit gathered, its gradient pieces and their cat */
    if (r.root_end)
        set_phase(mp, PHASE_BWD_END, r.w, bwd_grad + r.root_end, r.o, 0, r.root_gather + r.bucket);
}

/* FSDP2's all-gather copy-in stream pool (streampool.h) on torchtitan's units. At 9dec370
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
    const double gb = c->precision == PREC_FP32 ? 4.0 : 2.0, tp = (double)c->tp;
    const uint64_t emb = has_emb ? (uint64_t)((double)p->embed_p / tp * gb) : 0;
    const uint64_t head = has_head ? (uint64_t)((double)(p->head_p ? p->head_p : p->embed_p) / tp * gb) : 0;
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
    shard_kind(c, &zero3, &ds);
    const bool pp = c->method == METHOD_PP;
    if (c->stack != STACK_TORCHTITAN || !zero3 || ds || c->dp < 2 || c->method == METHOD_OFFLOAD ||
        (!pp && !(c->features & FEAT_FSDP)))
        return;
    const double layer = ((double)p->layer_p - (double)p->layer_expert_p * (1.0 - 1.0 / (double)train_ep(c))) /
                         (double)c->tp;
    const struct fsdp2_units u = {
        .block = (uint64_t)gathered_block_bytes(p, c, layer, c->precision == PREC_FP32 ? 4.0 : 2.0),
        .dp = (uint32_t)c->dp, .blocks = (uint32_t)(pp ? pp_stage_layers(p, c, false) : (int32_t)p->spec.layers),
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
        .dequant_head = r.dequant_head, .gather_fwd = r.gather_fwd, .gather_bwd = r.gather_bwd,
        .bucket = r.bucket, .paged = r.paged, .host = r.host, .acc = r.acc,
        .root_hold = r.root_hold, .root_end = r.root_end, .root_gather = r.root_gather,
        .g_frozen = r.g_frozen,
    };
    shard_kind(c, &out->zero3, &out->ds);
}

bool memmodel_head_in_forward(const struct train_config *c, uint64_t dequant, uint64_t dequant_head)
{
    return c->stack == STACK_LITGPT && dequant_head > dequant;
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
    if (c->stack == STACK_LITGPT)
        mp->kept_logits_tok = 4;
    mp->prev_logits_tok = (c->features & FEAT_LONGEST_FIRST) ? 0 : mp->kept_logits_tok;
    /* litgpt's forward phase ends with the lm_head: this step's 16-bit logits beside them */
    mp->fwd_logits_tok = mp->prev_logits_tok + (c->stack == STACK_LITGPT ? ea : 0);
}

/* A loop that keeps the model's `outputs` as a plain local (feature outputs-kept: PEFT's
 * method_comparison/MetaMathQA/run.py L213-215 @5fe7f8f8, 8be1a16f, 51c2ff66:
 * `outputs = model(**batch, ...)`, never deleted) holds them from its forward until the
 * next step's forward returns and rebinds the name: the 16-bit logits (e_a per token and
 * vocab entry; the loss path LOSS_OUTPUTS_KEPT keeps them through backward) and, since
 * the loop passes no use_cache=False and config.json's use_cache is true, the DynamicCache
 * transformers' LlamaModel.forward builds: every block's K (after RoPE) and V, kv_heads x
 * head_dim each, not repeated for GQA. Under gradient checkpointing transformers turns
 * use_cache off in training ("use_cache=True is incompatible with gradient checkpointing"),
 * so then only the logits are kept. */
static void kept_outputs(const struct model_plan *p, const struct train_config *c, uint64_t ea,
                         struct mem_prepared *mp)
{
    const struct model_spec *m = &p->spec;
    kept_logits(c, ea, mp);
    if (!(c->features & FEAT_OUTPUTS_KEPT))
        return;
    mp->kept_logits_tok = mp->prev_logits_tok = ea;
    mp->fwd_logits_tok = ea;
    if (!c->grad_ckpt && !c->ckpt_selective)
        mp->kept_tok = 2 * ea * (uint64_t)(m->kv_heads * m->head_dim) * (uint64_t)m->layers /
                       (uint64_t)c->tp;
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

static void activation_coeffs(const struct model_plan *p, const struct train_config *c,
                              struct mem_prepared *mp)
{
    struct mem_act_tok a;
    act_block_tok(p, c, &a);
    const uint64_t ea = a.ea, er = a.er, h = (uint64_t)p->spec.hidden, i = (uint64_t)p->inter_active;
    const uint64_t tp = (uint64_t)c->tp, sp = act_seq_parallel(c), norm = a.norm;
    /* the repeated K and V are added per point when the micro-batch pads (act_kv_repeat) */
    mp->layer_tok = a.norms + a.lin_in + a.attn + a.mlp + a.lora - (a.kv_rep_on ? a.kv_rep : 0);
    mp->layer_tok_s = a.attn_s;
    mp->held_tok = act_bnb_held_tok(p, c);
    mp->held_prev = !(c->features & FEAT_LONGEST_FIRST);
    mp->held_blk_tok = mp->held_tok / (uint64_t)p->spec.layers;
    mp->kv_rep_tok = a.kv_rep;
    mp->kv_rep_padded = act_kv_repeat(c) == 2;
    mp->ckpt_tok = c->ckpt_selective ? act_sac_tok(p, c, ea, er) : er * h / sp;
    /* final norm and the lm_head input (gathered: ColwiseParallel(input_layouts=Shard(1))) */
    mp->tail_tok = norm + ea * h;
    mp->bwd_tok = er * h / sp + 2 * ea * i / tp;
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
    }
    kept_outputs(p, c, ea, mp);
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
    if (c->stack != STACK_LITGPT)
        return 2 * (uint64_t)ea;
    /* a run whose longest batch is its first step validates on random, shorter batches */
    return (c->features & FEAT_LONGEST_FIRST) ? 0 : 16;
}

/* Logits and loss per token and vocab entry: the stack's loss path (losspath.h) gives the
 * allocated peak of its N x V tensors and what the caching allocator reserves for them for
 * the data shape and allocator configuration; a validation pass's (eval_logits). */
static void logits_coeffs(const struct model_plan *p, const struct train_config *c,
                          struct mem_prepared *mp)
{
    const uint32_t ea = c->precision == PREC_FP32 ? 4 : 2;
    struct loss_cost cost;
    losspath_cost(losspath_select(c, p->spec.model_type), losspath_class(c->precision),
                  losspath_data_shape(c), c->alloc, &cost);
    /* torchtitan's loss parallelism (the output ColwiseParallel(output_layouts=Shard(-1),
     * use_local_output=False) and train.py's loss_parallel() context): each TP rank keeps
     * and upcasts its vocab / tp columns of the logits */
    mp->vocab = (p->spec.vocab + (int64_t)act_seq_parallel(c) - 1) / (int64_t)act_seq_parallel(c);
    mp->logits_tok = cost.allocated;
    memcpy(mp->logits_res_tok, cost.reserved, sizeof mp->logits_res_tok);
    memcpy(mp->logits_need_tok, cost.needed, sizeof mp->logits_need_tok);
    mp->eval_logits_tok = (c->features & FEAT_EVAL_LOGITS) ? eval_logits(c, ea) : 0;
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
    mp->cm_tok[PHASE_LOSS] = bytes_add(mp->cm_tok[PHASE_LOSS], mp->pp_igrad_last_tok);
    mp->cm_tok[PHASE_BWD_LAST] = bytes_add(mp->cm_tok[PHASE_BWD_LAST], mp->pp_igrad_last_tok);
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

/* Which configurations the step replay covers (stepreplay.c's op list): a dense HF
 * Llama-style decoder (gated MLP, RMSNorm, RoPE, untied or tied head) on one GPU, without
 * checkpointing, under SDPA, with 16-bit weights: bf16-pure full fine-tuning, or LoRA
 * on an unquantized 16-bit base (PEFT MetaMathQA trains without autocast). */
static void replay_setup(const struct model_plan *p, const struct train_config *c,
                         struct mem_prepared *mp)
{
    const struct model_spec *m = &p->spec;
    if (!(c->features & FEAT_EMPTY_CACHE) || c->gpus != 1 || mp->ckpt || c->stack != STACK_HF ||
        model_is_moe(m) || m->mlp != MLP_GATED || m->norm != NORM_RMSNORM || m->fused_qkv ||
        m->kv_lora_rank || act_eager_attn(m, c) || (c->features & FEAT_FLASH_ATTN))
        return;
    const bool full_pure = c->finetune == FT_FULL && c->precision == PREC_BF16_PURE;
    const bool lora16 = c->finetune == FT_LORA && c->quant == QUANT_NONE &&
                        (c->precision == PREC_BF16 || c->precision == PREC_BF16_PURE);
    if (!full_pure && !lora16)
        return;
    mp->replay_window = (c->features & FEAT_EMPTY_CACHE_10) ? 10 : 1;
}

void memmodel_prepare(const struct model_plan *p, const struct train_config *c,
                      const struct mem_options *opt, struct mem_prepared *mp)
{
    memset(mp, 0, sizeof *mp);
    mp->layers = (int32_t)p->spec.layers;
    mp->tp = c->tp;
    mp->heads = p->spec.heads;
    mp->ckpt = c->grad_ckpt || c->ckpt_selective;
    mp->nccl = c->gpus > 1 ? opt->nccl_bytes : 0;
    mp->use_llmem = memmodel_uses_llmem(c->stack, opt);
    if (mp->use_llmem) {
        llmem_static(p, c, opt->base_bytes, opt->paper, &mp->llmem);
        return;
    }
    fixed_phases(p, c, mp);
    fsdp2_side_pool(p, c, mp);
    activation_coeffs(p, c, mp);
    logits_coeffs(p, c, mp);
    point_coeffs(mp);
    replay_setup(p, c, mp);
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
