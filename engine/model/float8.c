/* float8.c: float8 training (--precision fp8), torchao's Float8Linear as torchtitan
 * applies it: which of its paths a configuration takes and the inputs its Linears save.
 * The memory model (memmodel.c) and the speed model (speed.c) both read it.
 *
 * torchao's float8 training (pytorch/ao @eab345c2, the version of the torchtitan rows):
 * convert_to_float8_training swaps every nn.Linear for Float8Linear
 * (torchao/float8/float8_linear_utils.py); torchtitan's converter skips the lm_head
 * (torchtitan @9dec370 torchtitan/float8.py convert_to_float8_training(...,
 * module_filter_fn=lambda mod, fqn: fqn != "output")), and the embedding is no Linear. So
 * the block Linears run float8 GEMMs, the lm_head and attention bf16. Parameters,
 * gradients and AdamW states are those of bf16 mixed precision (memmodel.c mixed()): the
 * weights stay in their high-precision dtype and are cast for each matmul.
 * Float8Linear.forward (torchao @eab345c2 torchao/float8/float8_linear.py), tensorwise
 * dynamic scaling (the default Float8LinearConfig, recipe "all_tensorwise"):
 *   input_fp8 = cast_input_to_float8(input)          new e4m3 tensor, 1 byte an element
 *   weight_fp8_t = cast_weight_to_float8_t(weight)   new e4m3 tensor, 1 byte a weight,
 *                  unless the weight already is float8 (FSDP2 float8 all-gather:
 *                  tensor_already_casted_to_fp8 -> weight.t(), a view)
 *   manual_float8_matmul_with_args_in_float8: ctx.save_for_backward(input_fp8, weight_fp8_t)
 *   cast_output_to_float8_in_bw: the gradient of the output is cast to e5m2 in backward.
 * Each cast computes its scale from tensor_to_amax = torch.max(torch.abs(x))
 * (torchao/float8/float8_utils.py): a temporary abs(x) of x's size and dtype.
 * Rowwise (axiswise) scaling takes manual_float8_matmul_with_args_in_hp instead, which
 * saves the high-precision input and weight (ctx.save_for_backward(input_hp, weight_hp_t))
 * and casts inside forward and backward: saved tensors as bf16. */
#include "float8.h"

bool float8_on(const struct train_config *c) { return c->precision == PREC_FP8; }

/* the tensorwise path, whose saved tensors are the float8 casts */
bool float8_tensorwise(const struct train_config *c)
{
    return float8_on(c) && !(c->features & FEAT_FP8_ROWWISE);
}

/* FSDP2 all-gathers the weights in float8: torchao fsdp_utils.py
 * WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather casts the local shard to e4m3 and
 * fsdp_post_all_gather wraps the gathered uint8 data as the Float8Tensor the Linear uses
 * (enable_fsdp_float8_all_gather; torchtitan @9dec370 --float8.enable_fsdp_float8_all_gather,
 * off by default, on in train_configs/llama3_405b.toml). Only with FSDP sharding. */
bool float8_allgather(const struct train_config *c)
{
    return float8_tensorwise(c) && (c->features & FEAT_FP8_ALLGATHER) && (c->features & FEAT_FSDP);
}

/* torchtitan's float8 TP (@9dec370 parallelisms/parallelize_llama.py apply_tp with
 * enable_float8: Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput):
 * the attention and MLP inputs are cast to e4m3 once on the sequence shard and
 * all-gathered in float8, so q/k/v (and w1/w3) share one gathered float8 input. */
bool float8_tp(const struct train_config *c)
{
    return float8_tensorwise(c) && (c->features & FEAT_SEQ_PARALLEL) && c->tp > 1;
}

/* Inputs of one block's converted Linears per token, in elements, one copy per Linear
 * (each Float8Linear casts its own input) unless the float8 TP shares them. */
uint64_t float8_linear_inputs(const struct model_plan *p, const struct train_config *c)
{
    const struct model_spec *m = &p->spec;
    const uint64_t tp = (uint64_t)c->tp, h = (uint64_t)m->hidden;
    const uint64_t vd = (uint64_t)(m->v_head_dim ? m->v_head_dim : m->head_dim);
    const bool shared = float8_tp(c);
    const uint64_t nq = shared || m->fused_qkv ? 1 : 3;
    const uint64_t nm = shared || m->mlp != MLP_GATED || m->fused_gate_up ? 1 : 2;
    return h * (nq + nm) + (uint64_t)m->heads * vd / tp + (uint64_t)p->inter_active / tp;
}
