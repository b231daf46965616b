/* resident.c: the batch-independent bytes one GPU holds for a configuration (resident.h):
 * weights, gradients, optimizer states and their temporaries, autocast and dequantized
 * copies, gathered FSDP / ZeRO-3 units, buckets and what offload keeps on the host.
 *
 * Every byte count is a tensor that exists in PyTorch during a training step; the comment
 * on each term says which tensor and where its size comes from. memmodel.c places these
 * terms in the step's phases. */
#include "resident.h"

#include <string.h>

#include "float8.h"
#include "memmodel.h"

/* Bytes per element of what is trained: fp32 master weights under mixed precision (AMP
 * keeps the parameters fp32) and for PEFT adapters upcast by autocast_adapter_dtype. */
uint64_t memmodel_trained_bytes(const struct train_config *c)
{
    if (train_adapters_bf16(c))
        return 2;
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
    /* a prepared k-bit base keeps its embedding and lm_head in fp32 (train_kbit_ends_fp32;
     * its norms too, a few bytes left out) */
    return (c->precision == PREC_FP32 || (train_mixed(c) && (c->features & FEAT_FP32_BASE)) ||
            train_kbit_ends_fp32(c)) ? 4.0 : 2.0;
}

/* Bytes per quantized weight that every rank keeps whole while FSDP or ZeRO-3 shards the
 * rest. bitsandbytes keeps a Linear4bit's QuantState (absmax: fp32 per 64 weights, or
 * under double quantization uint8 per 64 plus fp32 per 256 blocks, functional.py
 * quantize_4bit L981-1022) as a plain attribute of the module (Params4bit._quantize,
 * `self.module.quant_state = quant_state`, nn/modules.py L278-291), not as a parameter or
 * buffer, so FSDP flattens and shards only the packed 4-bit storage, and Linear4bit.forward
 * puts the whole state back on the gathered view ("the quant state got lost when the
 * parameter got converted. This happens for example for fsdp", L405-418; bitsandbytes
 * 0.43.0 @48763245). DeepSpeed ZeRO-3 partitions parameters only, the same. torchao's
 * NF4Tensor shards its scalers with its data (_INNER_TENSOR_NAMES_FOR_SHARDING:
 * quantized_scalers, quantization_factor, quantized_data; torchao dtypes/nf4tensor.py
 * @05980129): nothing stays whole. */
double memmodel_quant_state_bytes(const struct train_config *c)
{
    if (c->features & FEAT_TORCHAO_NF4)
        return 0.0;
    switch (c->quant) {
    case QUANT_NF4:
    case QUANT_NF4_DQ:
        /* the packed 4 bits: ((n+1)//mod, 1) elements of quant_storage, mod = 2 x its
         * bytes (quantize_4bit L985-986), half a byte a weight in any storage dtype */
        return memmodel_frozen_elem_bytes(c, true) - 0.5;
    default:
        return 0.0;
    }
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
    const double embed = plan_embed_rank(p, c);
    const double head = root > embed ? root - embed : embed; /* the tied weight: one view */
    r->root_hold = (uint64_t)(head * gb);
    r->root_end = (uint64_t)((head + embed + root) * gb); /* the pieces + their cat */
    r->root_gather = (uint64_t)(root * gb);
    /* The root's sharded gradient is made only by its post-backward hook, which runs on the
     * FlatParameter's AccumulateGrad after the cat: reduce-scatter into a new shard, then
     * its cast to the parameter's dtype (torch/distributed/fsdp/_runtime_utils.py
     * _post_backward_hook -> _reduce_grad -> _accumulate_sharded_grad at 01caf79e); with
     * zero_grad(set_to_none=True) no shard of it is left from the step before. Measured:
     * datasets/measured/h200-20261127-residue.csv gpu-residue-00 (Llama-3.2-1B, 4 ranks,
     * 1 x 256 tokens, peaking at the cat) was +3.8 % with it counted there. */
    r->root_shard = (uint64_t)(root * (double)memmodel_trained_bytes(c) / (double)c->dp);
}

/* torchtitan from 83e69410 (2025-07-28, models/llama3/infra/parallelize.py apply_fsdp):
 * fully_shard on tok_embeddings, on each block and on [norm, output], then on the model,
 * which keeps no parameters of its own. The embedding and every block are resharded after
 * forward, norm and output are not (reshard_after_forward_policy "default"), and each unit
 * is resharded after its backward. So the forward's last block is gathered alone and the
 * loss has norm and output alone (the one forward figure takes the larger); the last block's
 * backward holds it and the prefetched block, the first block's it and the prefetched
 * embedding, beside a block's gradient: gather_bwd_last is the former, gather_bwd the larger
 * of the two. */
static void zero3_end_units(const struct model_plan *p, const struct train_config *c,
                            struct resident *r, double unit, uint64_t unit_grad)
{
    const double gb = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const double head = plan_head_rank(p, c) * gb, emb = plan_embed_rank(p, c) * gb;
    r->gather_fwd = (uint64_t)(head > unit ? head : unit);
    r->gather_bwd = (uint64_t)(unit + (emb > unit ? emb : unit)) + unit_grad;
    r->gather_bwd_last = (uint64_t)(2 * unit) + unit_grad;
}

static void zero3_gather(const struct model_plan *p, const struct train_config *c,
                         struct resident *r, double layer, double root)
{
    const uint64_t gb = c->precision == PREC_FP32 ? 4 : 2;
    const double wt = (double)memmodel_trained_bytes(c);
    if (!(c->features & FEAT_FSDP)) {
        double all = (double)(p->params - p->embed_p) / (double)c->tp + plan_embed_rank(p, c);
        r->gather_fwd = r->gather_bwd = (uint64_t)(all * (double)gb * (1.0 - 1.0 / (double)c->dp));
        r->gather_bwd_last = r->gather_bwd;
        return;
    }
    const double unit = resident_gathered_block_bytes(p, c, layer, (double)gb);
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
    r->gather_bwd = r->gather_bwd_last = (uint64_t)(root * (double)gb + 2 * unit) + unit_grad;
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
void resident_shard_kind(const struct train_config *c, bool *zero3, bool *ds)
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
    const double head16 = train_fsdp_half_gather(c) ? 0.0 : (double)p->head_p / tpdiv * 2.0;
    const bool copies = float8_tensorwise(c) && !float8_allgather(c);
    r->amp_one = copies ? (uint64_t)one : 0;
    if (p->head_p) /* an untied head's 16-bit cast is head16 here */
        r->amp_head = 0;
    if (c->grad_ckpt)
        r->amp_all = (uint64_t)head16;
    else if (c->ckpt_selective) {
        const double hp = train_fsdp_half_gather(c) ? 2.0 : 4.0; /* the weight at the cast */
        const bool abs_kept = !(c->features & FEAT_COMPILE) && c->stack == STACK_TORCHTITAN &&
                              !float8_allgather(c);
        r->amp_all = (uint64_t)(head16 + (abs_kept ? all * hp : 0.0));
    } else
        r->amp_all = (uint64_t)(head16 + (copies ? all : 0.0));
}

/* Bytes of one gathered block: its Linear weights in float8 under float8 all-gather, the
 * rest (norms) in the 16-bit param dtype. */
double resident_gathered_block_bytes(const struct model_plan *p, const struct train_config *c,
                                     double layer, double gb)
{
    const double ep_keep = 1.0 - 1.0 / (double)train_ep(c); /* a rank's own experts */
    const double lin = ((double)p->layer_linear_w - (double)p->layer_expert_p * ep_keep) / (double)c->tp;
    if (float8_allgather(c))
        return (layer - lin) * gb + lin;
    /* a quantized base gathers its Linears packed (bitsandbytes' 4 bits in the
     * quant_storage dtype, which FSDP needs uniform: memmodel_quant_state_bytes; torchao's
     * NF4 with its scalers) */
    if (c->finetune != FT_FULL && c->quant != QUANT_NONE)
        return (layer - lin) * gb +
               lin * (memmodel_frozen_elem_bytes(c, true) - memmodel_quant_state_bytes(c));
    return layer * gb;
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
    if (!train_mixed_units(c)) /* litgpt's, or FEAT_FSDP_MIXED_UNITS */
        return 0;
    return (uint64_t)((double)p->spec.layers * layer * (double)wt / dpdiv);
}

/* A bitsandbytes paged optimizer's states (bitsandbytes optim/optimizer.py, the same at
 * 0.39.1 4395d68c, 0.42.0 4870580f and 0.43.1 4a6fb352): Optimizer2State.init_state keeps
 * both states in fp32 for a 32-bit optimizer whatever the parameter's dtype, in uint8 for
 * an 8-bit one but in fp32 below min_8bit_size (4096 elements, adamw.py PagedAdamW8bit);
 * get_state_buffer puts them in managed memory (F.get_paged: cudaMallocManaged with
 * cudaMemAttachHost, csrc/pythonInterface.cpp cget_managed_ptr) only from 1e5 elements,
 * a smaller parameter's states being torch.zeros_like from the caching allocator. The
 * caching allocator never sees the managed states; step() prefetches one parameter's at a
 * time (prefetch_state), and the driver evicts managed pages to host memory when the GPU
 * runs short (the QLoRA paper's paged optimizers, Dettmers et al. 2023, section 2), so of
 * them only the largest parameter's must fit beside what the run holds (paged_one). */
static void bnb_paged_states(const struct model_plan *p, const struct train_config *c,
                             double shard, struct resident *r)
{
    static const double limit[2] = {4096.0, 1e5};
    double below[2], largest;
    plan_trained_tensors(p, c, shard, limit, below, &largest);
    const double wide = c->optimizer == OPT_ADAMW8BIT ? 2.0 : 8.0; /* bytes an element */
    double paged = r->trained / shard - below[1];
    r->o = (uint64_t)(below[0] * 8.0 + (below[1] - below[0]) * wide);
    r->paged = paged > 0 ? (uint64_t)(paged * wide) : 0;
    r->paged_one = largest >= limit[1] ? (uint64_t)(largest * wide) : 0;
}

/* resident_terms less what every rank keeps whole beside its shard; @return those bytes
 * (memmodel_quant_state_bytes), which neither sharding nor offload moves. */
static double sharded_terms(const struct model_plan *p, const struct train_config *c,
                            struct resident *r)
{
    bool zero3, ds;
    resident_shard_kind(c, &zero3, &ds);
    const double tpdiv = (double)c->tp, dpdiv = zero3 && !ds ? (double)c->dp : 1.0;
    const uint64_t wt = memmodel_trained_bytes(c), gb = c->precision == PREC_FP32 ? 4 : 2;
    int64_t extra_head = (p->spec.tied && (c->features & FEAT_UNTIED_HEAD))
                             ? p->spec.vocab * (p->spec.emb_dim ? p->spec.emb_dim : p->spec.hidden)
                             : 0;
    /* TP shards the matrices (Megatron column/row; the embedding as train_embed_tp says);
     * norms and biases stay replicated. */
    const double embed = plan_embed_rank(p, c);
    double base = (double)(p->params - p->vector_p - p->embed_p + extra_head) / tpdiv + embed +
                  (double)p->vector_p;
    /* expert parallelism (MoE): a rank holds experts / ep of the routed experts. Under
     * ZeRO-3 a rank's shard of them is 1/dp either way (the experts' data-parallel group
     * is dp / ep), so there only the gathered unit shrinks. */
    const double ep_keep = 1.0 - 1.0 / (double)train_ep(c);
    const double ep_cut = zero3 ? 0.0 : (double)p->expert_p * ep_keep / tpdiv;
    base -= ep_cut;
    double layer = ((double)p->layer_p - (double)p->layer_expert_p * ep_keep) / tpdiv;
    const double head_all = (double)(p->head_p + extra_head) / tpdiv;
    double big = embed > head_all ? embed : head_all;
    double root = embed + head_all;

    double whole = 0.0;
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
        double head = head_all;
        double quant_w = (double)(p->linear_w - p->head_p) / tpdiv + (qhead ? head : 0) - ep_cut;
        whole = quant_w * memmodel_quant_state_bytes(c);
        r->w = (uint64_t)((frozen_bytes(p, c, base, quant_w, tpdiv) - whole + (ds ? 0 : r->trained * (double)wt)) /
                          dpdiv);
        if (c->quant != QUANT_NONE) { /* dequantized to the compute dtype for each matmul */
            const uint64_t db = dequant_bytes(c, gb);
            r->dequant = (uint64_t)((double)p->max_linear_w / tpdiv) * db;
            r->dequant_head = qhead ? (uint64_t)head * db : 0;
            /* an fp32 lm_head of a prepared k-bit base (train_kbit_ends_fp32) under autocast:
             * F.linear runs in 16 bit on a cast of the weight, which autograd saves for the
             * input's gradient until the lm_head's backward (autocast caches casts of leaf
             * tensors that require grad only, torch autocast_mode.h cached_cast, so a frozen
             * weight's cast is the mm's own); a tied head is the embedding itself */
            if (!qhead && train_mixed(c) && memmodel_frozen_elem_bytes(c, false) == 4.0 &&
                !train_fsdp_half_gather(c))
                r->amp_head = (uint64_t)(plan_head_rank(p, c) * 2.0);
        }
    }
    if (ds) {
        master_in_optimizer(p, c, r, (double)c->dp);
        if (c->method == METHOD_OFFLOAD)
            zero3_gather(p, c, r, layer, root);
        return whole;
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
    if ((c->features & FEAT_PAGED_OPT) && sb)
        bnb_paged_states(p, c, dpdiv, r);
    if (c->features & FEAT_OPT_IN_BWD) {
        /* optimizer-in-backward steps and frees each gradient as soon as it is ready */
        double largest = c->finetune == FT_FULL ? big : r->trained / (double)p->spec.layers;
        r->g = (uint64_t)(largest * (double)wt / dpdiv);
        r->tmp = (uint64_t)(largest * (double)wt / dpdiv);
    }
    /* autocast casts each fp32 weight to 16 bit for its matmul, and the matmul keeps that
     * copy to compute its input's gradient (trained weights are also in autocast's cache;
     * frozen fp32 weights, as under litgpt bf16-mixed LoRA, are kept the same way). A
     * checkpointed block's matmuls keep none: one block's during its recomputation
     * (amp_one), every block's in autocast's cache until the forward returns (memmodel.c
     * amp_cache). The lm_head is not checkpointed: its copy (amp_head) lives until its
     * backward either way. */
    const bool fp32_blocks = c->finetune == FT_FULL ||
                             ((c->features & FEAT_FP32_BASE) && c->quant == QUANT_NONE);
    /* FSDP2's MixedPrecisionPolicy casts each unit's parameters to param_dtype when it
     * gathers them (counted as the gathered units) and runs no autocast: no extra copies.
     * A rank computes with its own experts only. */
    if (train_mixed(c) && fp32_blocks && !train_fsdp_half_gather(c)) {
        r->amp_all = (uint64_t)(((double)p->linear_w - (double)p->head_p - (double)p->expert_p * ep_keep) /
                                tpdiv) * 2;
        r->amp_one = (uint64_t)(((double)p->layer_linear_w - (double)p->layer_expert_p * ep_keep) /
                                tpdiv) * 2;
        /* the lm_head's 16-bit cast (a tied head's is the fp32 embedding's) is made for the
         * logits and kept by their mm until the lm_head's backward. Measured: the snapshot
         * datasets/measured/h100-20261127-snapshots/gpu-25min-15.txt, one 128256x2048 bf16
         * aten._to_copy from linear.py alive at backward's start. */
        if (p->head_p || p->spec.tied)
            r->amp_head = (uint64_t)(plan_head_rank(p, c) * 2.0);
    }
    if (float8_on(c))
        fp8_weight_copies(p, c, r, ep_keep, tpdiv);
    if (c->method == METHOD_CDP) /* DDP gradient buckets: one more copy of the gradients */
        r->bucket = (uint64_t)(r->trained * (double)wt);
    if (c->method == METHOD_ADP && (c->features & FEAT_DS_DEFAULT_BUCKETS))
        r->bucket += ds_zero3_ipg_bytes(gb);
    if (zero3)
        zero3_gather(p, c, r, layer, root);
    return whole;
}

/* transformers 4.31 - 4.39 (FEAT_ROPE_TABLES): each attention layer builds its own
 * LlamaRotaryEmbedding, which registers cos and sin of every position up to
 * max_position_embeddings as non-persistent buffers of max_position_embeddings x dim, in
 * torch.get_default_dtype() at construction: 4.31 - 4.37 `_set_cos_sin_cache(...,
 * dtype=torch.get_default_dtype())` (`cos_cached`, `sin_cached`), 4.38.0 - 4.39.3
 * `register_buffer("_cos_cached", emb.cos().to(torch.get_default_dtype()), persistent=False)`
 * "For BC" (src/transformers/models/llama/modeling_llama.py, LlamaRotaryEmbedding.__init__;
 * Mistral's and Qwen2's copies the same); 4.40 keeps inv_freq only. from_pretrained and
 * from_config with torch_dtype construct under that default dtype, and .to(dtype) casts
 * floating buffers too, so the tables are in the weights' dtype, or fp32 where a script
 * built the model without torch_dtype and cast only its parameters (Answer.AI fsdp_qlora
 * train.py L576-577 @4cd6923: `from_config(cfg)` under init_empty_weights, whose buffers
 * stay real on the CPU; load_and_quantize converts the checkpoint's tensors only, and
 * non-persistent buffers are not in it). Buffers are neither flattened nor sharded: every
 * rank (every TP rank too) moves its units' tables to the GPU whole. dim is head_dim (the
 * Llama family; a partial rotary's smaller tables would be over-counted). */
uint64_t resident_rope_table(const struct model_plan *p, const struct train_config *c)
{
    const struct model_spec *m = &p->spec;
    if (!(c->features & FEAT_ROPE_TABLES) || m->pos != POS_ROTARY || m->max_pos < 1)
        return 0;
    /* the weights' load dtype: a k-bit preparation's fp32 ends are cast parameters only */
    const bool fp32 = (c->features & FEAT_ROPE_TABLES_FP32) || c->precision == PREC_FP32 ||
                      (c->finetune == FT_FULL ? memmodel_trained_bytes(c) == 4
                                              : train_mixed(c) && (c->features & FEAT_FP32_BASE));
    const uint64_t eb = fp32 ? 4 : 2;
    return (uint64_t)m->max_pos * (uint64_t)m->head_dim * eb;
}

void resident_terms(const struct model_plan *p, const struct train_config *c, struct resident *r)
{
    const double whole = sharded_terms(p, c, r);
    r->whole = (uint64_t)whole;
    r->tables = resident_rope_table(p, c) * 2 * (uint64_t)p->spec.layers;
    r->w += r->whole + r->tables;
}
