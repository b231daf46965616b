/* activations.c: what one block saves for backward per token (see activations.h and README
 * "The memory model").
 *
 * Each count is a tensor autograd keeps between a block's forward and its backward, read
 * from the stack's modelling code and PyTorch's derivative formulas; the comment on each says
 * which tensor and where it is made. memmodel.c turns these per-token coefficients into the
 * phases' activation terms. */
#include "activations.h"

#include "float8.h"

/* Whether a LoRA base is a bitsandbytes layer that keeps its input whenever the input
 * requires grad, for a frozen weight too (bitsandbytes/autograd/_functions.py):
 * MatMul8bitLt in every version (`ctx.tensors = (CAt, subA, A)` when any(needs_input_grad),
 * at 0.43.1 :425 and 0.45.0 :389); MatMul4Bit before 0.43.2 (`ctx.tensors = (A, B)` at
 * 0.43.1 :516; (None, B) from 9e753741, #1270, "fix QLoRA mem bug: delete useless buffered
 * activation": its backward needs only the weight), feature bnb-input-kept. torchao's
 * linear_nf4 backward needs only the weight (torchao dtypes/nf4tensor.py). */
static bool bnb_keeps_input(const struct train_config *c)
{
    if (c->finetune == FT_FULL || c->quant == QUANT_NONE || (c->features & FEAT_TORCHAO_NF4))
        return false;
    return c->quant == QUANT_INT8 || (c->features & FEAT_BNB_INPUT_KEPT);
}

/* Whether o_proj's input is a tensor of its own. SDPA's flash and memory-efficient kernels
 * allocate their output (B, T, heads, head_dim) and return it transposed, so
 * transpose(1, 2)(.contiguous()).reshape in every stack (transformers LlamaAttention,
 * torchtune modules/attention.py, litgpt model.py) is a view of the output SDPA saves;
 * eager attention's att @ v is transposed and copied. */
static bool o_input_own(const struct model_spec *m, const struct train_config *c)
{
    return act_eager_attn(m, c);
}

/* The hidden-wide Linear inputs of one block when each reader casts its own: under autocast
 * an fp32 normed input (the fp32 residual stream of fp32 weights through HF's RMSNorm, or any
 * LayerNorm, which autocast runs in fp32) is cast to 16 bit by every Linear that reads it,
 * since autocast caches the casts of leaf tensors that require grad only (pytorch
 * aten/src/ATen/autocast_mode.h cached_cast: `arg.is_leaf() && arg.requires_grad()`), and each
 * mm keeps its own cast. q, k and v (one fused qkv: one), gate and up (fused, or a plain MLP's
 * fc1: one); a parallel block's attention and MLP read the same normed input. Measured:
 * datasets/measured/h100-20261127.csv gpu-25min-00/-02/-16 (Llama-3.2-1B full, bf16 mixed). */
static uint64_t amp_cast_inputs(const struct model_spec *m)
{
    const uint64_t qkv = m->fused_qkv ? 1 : 3;
    const uint64_t mlp = m->mlp == MLP_GATED && !m->fused_gate_up ? 2 : 1;
    return (uint64_t)m->hidden * (qkv + mlp);
}

/* The block Linears' inputs kept per token for their own backward. A trained Linear keeps its
 * input for the weight gradient. A frozen nn.Linear keeps nothing: F.linear on a 3-D input is
 * matmul -> mm, and mm's derivative saves `self` only when should_compute_output(mat2)
 * (pytorch tools/autograd/gen_variable_type.py guard_for, derivatives.yaml mm), which a
 * weight without requires_grad never sets. A bitsandbytes base keeps its input (attention
 * input, MLP input, down input, o input where it is its own); a wrapped adapter's lora_A
 * keeps the same input, counted in lora_tok. */
static uint64_t linear_inputs(const struct model_plan *p, const struct train_config *c, uint64_t ea,
                              bool amp_casts)
{
    const struct model_spec *m = &p->spec;
    const uint64_t tp = (uint64_t)c->tp, i = (uint64_t)p->inter_active;
    const uint64_t ao = (uint64_t)m->heads * (uint64_t)(m->v_head_dim ? m->v_head_dim : m->head_dim);
    const uint64_t ins = (uint64_t)m->hidden * (m->norms_per_layer == 1 ? 1 : 2);
    if (c->finetune == FT_FULL || train_mixed_units(c)) /* the frozen weights too */
        return ea * ((amp_casts ? amp_cast_inputs(m) : ins) + (o_input_own(m, c) ? ao / tp : 0) + i / tp);
    if (!bnb_keeps_input(c))
        return 0;
    return ea * (ins + (o_input_own(m, c) ? ao / tp : 0) + i / tp);
}

/* litgpt's fused qkv output held by the saved v (model.py CausalSelfAttention.forward at
 * 8641822 and 5895df10): qkv.view(B, T, groups, q_per_kv + 2, hs).permute(0, 2, 3, 1, 4),
 * split; q and k are roped into new tensors (torch.cat), but with as many query groups as
 * heads v.reshape(B, -1, T, hs) only drops a size-1 dimension and stays a view, which SDPA
 * (or eager att @ v) saves: the whole qkv output stays, q's and k's widths beyond v. With
 * fewer groups k and v are expanded and reshaped into copies (kv_repeat) and nothing is
 * held. Under torch.compile the partitioner chooses what to keep. Per token, per block. */
static uint64_t litgpt_qkv_hold(const struct model_spec *m, const struct train_config *c, uint64_t ea)
{
    if (c->stack != STACK_LITGPT || m->kv_heads != m->heads || (c->features & FEAT_COMPILE))
        return 0;
    return ea * (uint64_t)(m->heads + m->kv_heads) * (uint64_t)m->head_dim / (uint64_t)c->tp;
}

/* litgpt LoRAQKVLinear.zero_pad (lora.py at 8641822 and 5895df10) when some but not all of
 * q, k, v carry LoRA: result.index_copy(1, lora_ind, x.reshape(-1, sum(qkv_shapes))), and
 * index_copy keeps its source for backward (derivatives.yaml index_copy: the source's
 * gradient is grad.index_select(dim, index).expand_as(source), and expand_as takes the tensor
 * itself): the adapters' output, the enabled widths, per token and block. */
static uint64_t litgpt_zero_pad(const struct model_spec *m, const struct train_config *c, uint32_t targets,
                                uint64_t ea)
{
    const uint32_t qkv = targets & (TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V));
    if (c->stack != STACK_LITGPT || c->finetune == FT_FULL || !qkv ||
        qkv == (TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V)))
        return 0;
    const uint64_t q = (uint64_t)(m->heads * m->head_dim), kv = (uint64_t)(m->kv_heads * m->head_dim);
    const uint64_t width = ((qkv & TARGET_BIT(ROLE_Q)) ? q : 0) + ((qkv & TARGET_BIT(ROLE_K)) ? kv : 0) +
                           ((qkv & TARGET_BIT(ROLE_V)) ? kv : 0);
    return ea * width / (uint64_t)c->tp;
}

/* Whether a wrapped module's input (no dropout, no cast) is a tensor counted already: the
 * attention input after the first of q, k, v, the MLP input after gate, o's input (SDPA's
 * output) under SDPA, any input a bitsandbytes base or a mixed unit's frozen weight keeps
 * (linear_inputs). */
static bool shared_input(const struct model_plan *p, const struct train_config *c, int role, bool *qkv_done,
                         bool *mlp_in_done)
{
    const bool in_qkv = role == ROLE_Q || role == ROLE_K || role == ROLE_V;
    const bool mlp_in = role == ROLE_GATE || role == ROLE_UP;
    bool counted = bnb_keeps_input(c) || train_mixed_units(c) || (in_qkv && *qkv_done) ||
                   (mlp_in && *mlp_in_done) ||
                   (role == ROLE_O && !o_input_own(&p->spec, c));
    *mlp_in_done |= mlp_in;
    return counted;
}

/* bitsandbytes' MatMul4Bit up to 0.43.1 keeps its input as a plain ctx attribute,
 * `ctx.tensors = (A, B)` when the input requires grad (bnb autograd/_functions.py at 0.42.0,
 * 4870580f; bnb PR #1270, in 0.43.2, made it (None, B): "the bug that caused a lot of memory
 * issues with QLoRA"). Backward releases saved variables, not ctx attributes, so these inputs
 * live as long as the graph, and litgpt's fit() keeps the graph: `logits = model(...)` binds
 * the step's outputs (their grad_fn chain reaches every block) until the next step's model()
 * returns (finetune/lora.py fit at 5895df10, lit-gpt 8641822 finetune/lora.py train; litgpt
 * pins bitsandbytes==0.42.0, pyproject.toml at 5895df10). Held per token over all blocks: each
 * block's Linear inputs (the attention input, o's input, the MLP input, down's input), less
 * the first block's attention input, which comes from the frozen embedding and norm and does
 * not require grad; and the lm_head's chunks of the final norm's output when it is a
 * bitsandbytes layer too. */
uint64_t act_bnb_held_tok(const struct model_plan *p, const struct train_config *c)
{
    const struct model_spec *m = &p->spec;
    if (!train_fabric_loop(c) || !bnb_keeps_input(c))
        return 0;
    const uint64_t ea = c->precision == PREC_FP32 ? 4 : 2, tp = (uint64_t)c->tp, h = (uint64_t)m->hidden;
    const uint64_t ao = (uint64_t)m->heads * (uint64_t)(m->v_head_dim ? m->v_head_dim : m->head_dim);
    const uint64_t block = h * (m->norms_per_layer == 1 ? 1 : 2) + ao / tp + (uint64_t)p->inter_active / tp;
    return ea * (block * (uint64_t)m->layers - h + ((c->features & FEAT_QUANT_HEAD) ? h : 0));
}

/* Whether a prepared k-bit base (train_kbit_norms_fp32) runs its blocks on fp32 normed
 * inputs under autocast. transformers' LlamaRMSNorm.forward returns `self.weight *
 * hidden_states.to(input_dtype)` (models/llama/modeling_llama.py @00227283): an fp32 weight
 * promotes the output to fp32 (mul is not an autocast op). bitsandbytes' Linear4bit.forward
 * computes in compute_dtype and returns `.to(inp_dtype)` (bitsandbytes/nn/modules.py at
 * 0.43.1 4a6fb352 :123-130, 0.45.0 64d382da :113-119, 0.50.1 37d2a938 :123-134): gate and up
 * come back in fp32, and so do act(gate), their product and down's output, which turns the
 * residual stream fp32 from the first block's MLP on; q, k and v come back fp32 too, but
 * autocast casts them to 16 bit for SDPA, which saves the casts. A LayerNorm's output is
 * fp32 under autocast whatever its weight (layer_norm is on CUDA autocast's float32 list,
 * PyTorch's "Automatic Mixed Precision" op reference), so HF's LayerNorm models (GPT-2,
 * Phi, Falcon, GPT-NeoX) run their 4-bit blocks the same way prepared or not. LLM.int8
 * layers are left as they are (their output dtype is not derived here). */
static bool act_fp32_norms(const struct model_spec *m, const struct train_config *c)
{
    const bool fp32_norm = train_kbit_norms_fp32(c) ||
                           (stack_hf_trainer(c->stack) && m->norm == NORM_LAYERNORM && c->finetune != FT_FULL);
    return fp32_norm && train_mixed(c) && (c->quant == QUANT_NF4 || c->quant == QUANT_NF4_DQ);
}

/* The bytes an element of the input copy each adapted module's lora_A keeps of its own, or
 * 0 when it reads the module's input itself. PEFT's LoRA Linear casts its input to the
 * adapter dtype, `x = self._cast_input_dtype(x, lora_A.weight.dtype)` (tuners/lora/layer.py
 * at 5d602fdb); its bitsandbytes layers only when autocast is off (tuners/lora/bnb.py
 * Linear8bitLt / Linear4bit.forward, `requires_conversion = not torch.is_autocast_enabled()`,
 * the same from v0.7.0 2665f80a to 5d602fdb). Under autocast lora_A runs on autocast's 16-bit
 * cast of what it gets, a copy of its own unless that is 16-bit already (an fp32 cast of the
 * input, or the fp32 normed input of act_fp32_norms); without autocast it keeps the input's
 * cast to fp32 adapters. */
static uint64_t lora_own_input(const struct model_spec *m, const struct train_config *c, uint64_t ea)
{
    if (c->precision == PREC_FP32 || train_lora_uncast(c))
        return 0;
    const bool fp32_adapters = (c->features & FEAT_ADAPTER_FP32) && !train_adapters_bf16(c);
    if (!train_mixed(c)) /* bf16-pure under fp32 adapters: the input's fp32 copy */
        return 4;
    const bool bnb = c->quant != QUANT_NONE && !(c->features & FEAT_TORCHAO_NF4);
    return act_fp32_norms(m, c) || (fp32_adapters && !bnb) ? ea : 0;
}

/* What LoRA adapters of one block save per token. Each wrapped module keeps the r-wide
 * output of lora_A (input of lora_B) and lora_A's input: with dropout the dropped copy (in
 * the dtype lora_A reads) and its bool mask (native_dropout); a copy of its own
 * (lora_own_input); else the module's input itself, counted with the Linear inputs.
 * Modules sharing one Linear (a fused qkv) share one adapter input. */
static uint64_t lora_tok(const struct model_plan *p, const struct train_config *c, uint64_t ea)
{
    const uint64_t own = lora_own_input(&p->spec, c, ea), drop = own > ea ? own : ea;
    const bool fused_qkv = p->spec.fused_qkv || (c->features & FEAT_FUSED_QKV);
    const uint32_t targets = plan_lora_targets(p, c);
    uint64_t bytes = 0;
    bool qkv_done = false, mlp_in_done = false;
    for (int role = ROLE_Q; role <= ROLE_DOWN; role++) {
        if (!(targets & TARGET_BIT(role)) || !p->role_w[role])
            continue;
        bool in_qkv = role == ROLE_Q || role == ROLE_K || role == ROLE_V;
        /* per block and token: the adapters a token passes (a MoE block's routed experts
         * count experts_per_tok / experts each) */
        const double layers = (double)p->spec.layers;
        uint64_t in = (uint64_t)(p->lora_in_active[role] / layers);
        /* one PEFT adapter (one r-wide lora_A output) per fused module */
        const double mods = p->lora_mods_active[role] -
                            (plan_peft_fused(c) ? (double)p->lora_shared_mods[role] : 0.0);
        bytes += (uint64_t)((double)(ea * (uint64_t)c->lora_r) * (mods / layers));
        if (in_qkv && fused_qkv && qkv_done)
            continue;
        if (c->features & FEAT_LORA_DROPOUT)
            bytes += (drop + 1) * in;
        else if (own)
            bytes += own * in;
        else
            bytes += shared_input(p, c, role, &qkv_done, &mlp_in_done) ? 0 : ea * in;
        qkv_done |= in_qkv;
    }
    return bytes / (uint64_t)c->tp + litgpt_zero_pad(&p->spec, c, targets, ea);
}

/* Sequence parallelism with TP (torchtitan 9dec370 parallelisms/parallelize_llama.py
 * apply_tp; Korthikanti et al. 2022): the residual stream between the TP regions is
 * sharded over the sequence (the embedding's RowwiseParallel(output_layouts=Shard(1)),
 * each wo / w2 RowwiseParallel(output_layouts=Shard(1)), a reduce-scatter instead of an
 * all-reduce), and the norms run as SequenceParallel on that shard. So a block's input,
 * its checkpoint, the norms' saved tensors and the residual gradient are 1/tp per rank.
 * The Linears' inputs are not: PrepareModuleInput(desired_input_layouts=Replicate())
 * all-gathers the normed input as a differentiable DTensor redistribute, and the
 * colwise wq/wk/wv (w1/w3) matmuls save that gathered tensor (Megatron's
 * --sequence-parallel instead saves the shard and gathers again in backward). Returns
 * the divisor: tp under the feature, else 1. */
uint64_t act_seq_parallel(const struct train_config *c)
{
    return (c->features & FEAT_SEQ_PARALLEL) && c->tp > 1 ? (uint64_t)c->tp : 1;
}

/* Selective checkpointing keeps per block and token (torchtitan op-level SAC,
 * torchtitan/models/llama3/infra/parallelize.py: _save_list = {aten.mm, the SDPA flash and
 * efficient kernels, reduce_scatter}; its policy saves a matmul's output unless it is the
 * block's 2nd, 4th, ... matmul (mm_count % 2 == 0); everything else is recomputed): the
 * checkpointed block input, the attention output and its fp32 logsumexp, and the outputs of
 * the 1st, 3rd, ... matmul in call order (q, k, v or fused qkv; o; gate, up or fused; down).
 * Megatron-LM's selective recompute (recompute only core attention) keeps a superset. */
uint64_t act_sac_tok(const struct model_plan *p, const struct train_config *c, uint64_t ea,
                    uint64_t er)
{
    const struct model_spec *m = &p->spec;
    const uint64_t tp = (uint64_t)c->tp, h = (uint64_t)m->hidden, i = (uint64_t)p->inter_active / tp;
    const uint64_t q = (uint64_t)(m->heads * m->head_dim) / tp, kv = (uint64_t)(m->kv_heads * m->head_dim) / tp;
    uint64_t out[7];
    int n = 0;
    if (m->fused_qkv)
        out[n++] = q + 2 * kv;
    else
        out[n++] = q, out[n++] = kv, out[n++] = kv;
    out[n++] = h;
    if (m->mlp == MLP_GATED && !m->fused_gate_up)
        out[n++] = i, out[n++] = i;
    else
        out[n++] = m->mlp == MLP_GATED ? 2 * i : i;
    out[n++] = h;
    uint64_t kept = er * h / act_seq_parallel(c) + ea * q + 4 * (uint64_t)m->heads / tp;
    for (int k = 0; k < n; k += 2)
        kept += ea * out[k];
    /* --precision fp8, eager: the policy's aten.abs outputs of each Float8Linear input cast
     * (fp8_weight_copies cites it), in the input's dtype; torchtitan's float8 TP casts the
     * attention and MLP inputs once each, on the sequence shard (PrepareFloat8ModuleInput) */
    if (float8_on(c) && c->stack == STACK_TORCHTITAN && !(c->features & FEAT_COMPILE)) {
        const uint64_t vd = (uint64_t)(m->v_head_dim ? m->v_head_dim : m->head_dim);
        kept += float8_tp(c) ? ea * (2 * h / act_seq_parallel(c) + (uint64_t)m->heads * vd / tp + i)
                          : ea * float8_linear_inputs(p, c);
    }
    return kept;
}

/* What a MoE block saves per token beyond a dense gated MLP of the width a token passes
 * through (plan inter_active), in transformers' eager MoE blocks, which loop over the
 * experts (MixtralSparseMoeBlock.forward, huggingface/transformers@00d4b3d2
 * models/mixtral/modeling_mixtral.py; Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock and
 * DeepseekV2MoE do the same): the router's fp32 softmax output (4 E), the top-k indices
 * (int64, 8 k); per routed token (k of them): the gathered input copy hidden_states[top_x]
 * the expert's first Linears keep (e_a h), the expert output the routing-weight multiply
 * keeps (e_a h), that weight (e_a) and the top_x / idx indices (2 x 8). Every token is
 * computed (no capacity, no dropping), so these are exact in total whatever the routing.
 * Qwen2-MoE's shared_expert_gate: sigmoid(gate(x)) * shared_expert(x) keeps the shared
 * output and the gate (e_a h + e_a). The one-hot expert_mask (E x k x tokens, int64) is
 * freed before backward and is not counted. Averaged over the blocks. */
static uint64_t moe_tok(const struct model_plan *p, uint64_t ea)
{
    const struct model_spec *m = &p->spec;
    if (!p->moe_layers)
        return 0;
    const uint64_t h = (uint64_t)m->hidden, k = (uint64_t)m->experts_per_tok;
    uint64_t block = 4 * (uint64_t)m->experts + 8 * k + k * (2 * ea * h + ea + 16);
    if (m->shared_gate)
        block += ea * h + ea;
    return block * (uint64_t)p->moe_layers / (uint64_t)m->layers;
}

/* q_norm / k_norm (Qwen3, Gemma 3, OLMo 2): RMSNorm keeps its fp32 input, and, when its
 * weight is trained, the normalised 16-bit output, over the q and k widths. */
static uint64_t qk_norm_tok(const struct model_spec *m, uint64_t ea, bool trained)
{
    if (m->qk_norm == QK_NORM_NONE)
        return 0;
    return (4 + (trained ? ea : 0)) * (uint64_t)((m->heads + m->kv_heads) * m->head_dim);
}

/* Latent attention (DeepSeek): the q and kv latents pass an RMSNorm (fp32 input, and the
 * 16-bit output when trained) and feed q_b_proj / kv_b_proj, which keep them (e_a). */
static uint64_t latent_tok(const struct model_spec *m, uint64_t ea, bool trained)
{
    if (!m->kv_lora_rank)
        return 0;
    return (4 + (trained ? ea : 0) + ea) * (uint64_t)(m->kv_lora_rank + m->q_lora_rank);
}

/* Whether SDPA receives K and V repeated to every query head (grouped-query attention,
 * kv_heads < heads) and saves those copies for backward: 0 never, 1 always, 2 only in
 * padded batches of several samples.
 *  - litgpt (model.py CausalSelfAttention.forward at 5895df10 and 2b195c7f): k.expand and
 *    v.expand to the query groups, then reshape(B, -1, T, hs), a copy, into SDPA;
 *  - torchtune (modules/attention.py at 0217d44c and 30b8519e): k.expand / v.expand, then
 *    reshape(b, s, -1, head_dim);
 *  - torchtitan (models/llama/model.py at 9dec370: repeat_kv, unsqueeze + expand +
 *    reshape, before F.scaled_dot_product_attention);
 *  - HF transformers (integrations/sdpa_attention.py sdpa_attention_forward at 00c238bd):
 *    repeat_kv unless use_gqa_in_sdpa, which needs torch >= 2.5 and attention_mask None;
 *    the mask is dropped only when no sample of the batch is padded (masking_utils'
 *    causal-skip), so K and V are repeated in variable-length batches of several samples.
 *    Earlier transformers repeated them always (LlamaSdpaAttention); the hf-4.x stacks take
 *    the current rule, a lower bound there.
 * Eager attention counts the repeated K and V already; the flash-attn package takes K and
 * V with their kv_heads (Dao-AILab/flash-attention flash_attn_interface.py: "Supports
 * multi-query and grouped-query attention (MQA/GQA) by passing in KV with fewer heads than
 * Q"), as does llm-foundry's Triton kernel on its MHA models. Under torch.compile the
 * min-cut partitioner saves the smallest set of tensors from which backward can recompute
 * the rest, and expand, clone, reshape and _unsafe_view are in its recomputable ops
 * (pytorch/pytorch torch/_functorch/partitioners.py, min_cut_rematerialization_partition's
 * default_recomputable_ops for inductor, at c28ba8e5): it keeps K and V at their KV width
 * and repeats them again in backward. */
int act_kv_repeat(const struct train_config *c)
{
    if (c->features & (FEAT_FLASH_ATTN | FEAT_TRITON_ATTN | FEAT_COMPILE))
        return 0;
    if (stack_hf_trainer(c->stack))
        return c->data == DATA_VARIABLE ? 2 : 0;
    switch (c->stack) {
    case STACK_LITGPT:
    case STACK_TORCHTUNE:
    case STACK_TORCHTITAN:
        return 1;
    default:
        return 0;
    }
}

/* A padded batch's attention mask as SDPA keeps it, bytes per token and unit of sequence
 * per block. transformers' masking_utils.sdpa_mask (the current one, 2ccc6cae) returns None
 * when no sample is padded (is_causal instead) and else a 4D bool mask (batch, 1, q, kv),
 * one for the whole forward; torch's scaled_dot_product_attention turns a bool mask into an
 * additive one in the query's dtype on every call (aten/src/ATen/native/transformers/
 * attention.cpp convert_boolean_attn_mask: at::where(attn_mask->logical_not(), -inf,
 * scalar_tensor(0.0, dtype))), and the memory-efficient kernel, the one that takes a mask,
 * keeps that bias for its backward (_scaled_dot_product_efficient_attention_backward reads
 * attn_bias): one (b, 1, s, s) copy a block, e_a bytes an element, beside K and V repeated
 * under the same condition (act_kv_repeat 2). Earlier transformers built one additive mask
 * in the model dtype for all blocks, which SDPA passes through: not counted. Eager attention
 * adds its mask without saving it; flash-attn takes no 4D mask. */
static uint64_t act_sdpa_mask(const struct model_spec *m, const struct train_config *c, uint64_t ea)
{
    if (act_eager_attn(m, c) || act_kv_repeat(c) != 2 || !stack_hf_bool_mask(c->stack))
        return 0;
    return ea;
}

/* Whether the attention materialises its scores: eager attention asked for, or a stack
 * that cannot use SDPA with softcapped scores (litgpt model.py at 2b195c7f and 00af8b0d,
 * CausalSelfAttention.scaled_dot_product_attention: "with softcapping we cannot use SDPA",
 * then q @ k.mT, tanh softcapping, the causal mask added, softmax(dtype=float), .to(q.dtype),
 * @ v). */
bool act_eager_attn(const struct model_spec *m, const struct train_config *c)
{
    return (c->features & FEAT_EAGER_ATTN) ||
           (m->attn_softcap && (c->features & FEAT_SOFTCAP_EAGER));
}

/* Saved activations of one block per token (bytes), without checkpointing. Each count is
 * a tensor autograd saves for backward in the HF modelling code:
 *  - RMSNorm saves its fp32 upcast input (4h); LayerNorm its input (e_r h); a trained norm
 *    weight also keeps the normalised output;
 *  - Linear inputs (e_a h into q/k/v and into the MLP, e_a q into o, e_a i into down) that
 *    a trained weight or a bitsandbytes base keeps (linear_inputs);
 *  - SDPA (flash / memory-efficient) saves q, k, v, its output and an fp32 logsumexp per
 *    head;
 *  - eager attention saves q and the expanded k, v, the fp32 softmax and its 16-bit cast
 *    (heads x s each per token);
 *  - a gated MLP saves gate, act(gate) and up (3 e_a i), a plain one the fc1 output;
 *  - LoRA adapters add what lora_tok() counts.
 * Dropout in the base model is 0 in the fine-tuning configs of current models. */
void act_block_tok(const struct model_plan *p, const struct train_config *c, struct mem_act_tok *a)
{
    const struct model_spec *m = &p->spec;
    const uint64_t ea = c->precision == PREC_FP32 ? 4 : 2;
    /* torch.autocast runs over the module: mixed precision that is neither FSDP2's
     * MixedPrecisionPolicy nor a 16-bit module with its master copy in the optimizer */
    const bool autocast = train_mixed(c) && !train_fsdp_half_gather(c) && !train_master_in_optimizer(c);
    /* the residual stream has the dtype of the weights it starts from (the embedding);
     * under FSDP2's MixedPrecisionPolicy that is the gathered param_dtype copy */
    const bool fp32_weights = autocast && (c->finetune == FT_FULL || (c->features & FEAT_FP32_BASE));
    const bool kbit = act_fp32_norms(m, c);
    const uint64_t er = (c->precision == PREC_FP32 || fp32_weights || kbit) ? 4 : 2;
    const uint64_t em = kbit ? 4 : ea;
    const uint64_t h = (uint64_t)m->hidden, i = (uint64_t)p->inter_active;
    const uint64_t q = (uint64_t)(m->heads * m->head_dim), kv = (uint64_t)(m->kv_heads * m->head_dim);
    /* the value and attention-output widths: the head width, or DeepSeek's v_head_dim */
    const uint64_t vd = (uint64_t)(m->v_head_dim ? m->v_head_dim : m->head_dim);
    const uint64_t v = (uint64_t)m->kv_heads * vd, ao = (uint64_t)m->heads * vd;
    const uint64_t tp = (uint64_t)c->tp, heads = (uint64_t)m->heads;
    /* weights that save what a trained one saves: full fine-tuning's, and a frozen base in
     * FSDP units whose flat parameter requires grad (train_mixed_units) */
    const bool trained = c->finetune == FT_FULL || train_mixed_units(c);
    /* torch.compile's min-cut partitioner recomputes pointwise ops in backward: a norm
     * then keeps only its input, a gated MLP only gate and up (not act(gate)) */
    const bool compiled = (c->features & FEAT_COMPILE) != 0;
    const uint64_t sp = act_seq_parallel(c);
    /* a trained RMSNorm weight keeps the normalised input it multiplies, in the residual
     * dtype: transformers LlamaRMSNorm.forward `return self.weight *
     * hidden_states.to(input_dtype)` (Qwen2 and Mistral the same) */
    const uint64_t norm_out = (m->norm == NORM_RMSNORM ? er : ea) * h;
    const uint64_t norm_in = compiled ? er * h : (m->norm == NORM_RMSNORM ? 4 : er) * h;
    const uint64_t norm = (norm_in + (trained && !compiled ? norm_out : 0)) / sp;
    /* the final norm sits in the root unit, which holds no adapter (train_mixed_units) */
    const uint64_t norm_final = (norm_in + (c->finetune == FT_FULL && !compiled ? norm_out : 0)) / sp;
    /* q/k/v read one normalised input; the MLP another unless the block is parallel; under
     * autocast an fp32 one is cast by each reader (amp_cast_inputs) */
    const bool amp_casts = autocast && !compiled && !model_is_moe(m) && m->kv_lora_rank == 0 &&
                           (er == 4 || m->norm == NORM_LAYERNORM);
    uint64_t lin_in = linear_inputs(p, c, ea, amp_casts);
    /* --precision fp8, tensorwise: each Float8Linear saves its own e4m3 input_fp8 (1 byte
     * an element) instead of sharing the 16-bit normed input (float8.c cites
     * torchao); rowwise saves the high-precision input, as nn.Linear */
    if (float8_tensorwise(c))
        lin_in = float8_linear_inputs(p, c);
    uint64_t attn, attn_s = 0, kv_rep = 0;
    bool kv_rep_on = false;
    if (act_eager_attn(m, c)) {
        attn = ea * 3 * q / tp;
        attn_s = heads * (ea == 2 ? 6 : 4) / tp;
        /* tanh softcapping (Gemma 2) between the score matmul and the softmax: scores /
         * cap, tanh, * cap; tanh saves its output for backward (the divisions and the
         * multiply by a Python scalar save nothing): one more scores-sized tensor in the
         * compute dtype. litgpt model.py CausalSelfAttention.scaled_dot_product_attention
         * (2b195c7f, 00af8b0d); transformers Gemma2 eager_attention_forward the same. */
        if (m->attn_softcap)
            attn_s += heads * ea / tp;
    } else {
        attn = (ea * (q + kv + v + ao) + 4 * heads) / tp;
        const int rep = act_kv_repeat(c);
        if (rep && kv < q) { /* K to the query width, V to the attention-output width */
            kv_rep = ea * ((q - kv) + (ao - v)) / tp;
            kv_rep_on = rep == 1 || c->micro_batch > 1;
            attn += kv_rep_on ? kv_rep : 0;
        }
    }
    attn += qk_norm_tok(m, ea, trained) / tp + latent_tok(m, ea, trained) + litgpt_qkv_hold(m, c, ea);
    uint64_t mlp = (m->mlp == MLP_GATED ? (compiled ? 2 : 3) : 1) * em * i / tp + moe_tok(p, ea);
    uint64_t lora = c->finetune != FT_FULL ? lora_tok(p, c, ea) : 0;
    uint64_t norms = (uint64_t)(m->norms_per_layer > 2 ? 2 : m->norms_per_layer) * norm +
                     (uint64_t)(m->norms_per_layer > 2 ? m->norms_per_layer - 2 : 0) * 4 * h;
    const uint64_t mask_s = act_sdpa_mask(m, c, ea);
    *a = (struct mem_act_tok){.ea = ea, .er = er, .em = em, .norm = norm, .norm_final = norm_final,
                              .norms = norms, .lin_in = lin_in,
                              .attn = attn, .attn_s = attn_s, .mlp = mlp, .lora = lora,
                              .kv_rep = kv_rep, .kv_rep_on = kv_rep_on,
                              .mask_s = mask_s, .mask_on = mask_s && c->micro_batch > 1};
}
