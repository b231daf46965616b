/* replayscope.c: which configurations the whole-step replays cover (replayscope.h). */
#include "replayscope.h"

#include <string.h>

#include "activations.h"
#include "losspath.h"

/* Which configurations the step replay covers (stepreplay.c's op lists): a dense HF
 * Llama-style decoder (gated MLP, RMSNorm, RoPE, untied or tied head) trained on one GPU.
 * A loop that empties the cache (PEFT MetaMathQA, without autocast): without
 * checkpointing, under SDPA, bf16-pure full fine-tuning or LoRA on an unquantized 16-bit
 * base. Any other run, when the caller asks for whole steps (mem_options.whole_steps):
 * the cases listed below. */
static bool replay_family(const struct model_spec *m)
{
    /* transformers' Llama modelling code, which Mistral and Qwen2 repeat op for op (Qwen2
     * adds q/k/v biases, below the replay's resolution); Gemma's norms and embedding scale,
     * Qwen3's q/k norms and the others' blocks differ */
    static const char *const same[] = {"llama", "mistral", "qwen2"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (!strcmp(m->model_type, same[i]))
            return !model_is_moe(m) && m->mlp == MLP_GATED && m->norm == NORM_RMSNORM &&
                   !m->fused_qkv && !m->fused_gate_up && m->qk_norm == QK_NORM_NONE &&
                   m->norms_per_layer == 2 && !m->kv_lora_rank && !m->attn_softcap;
    return false;
}

/* FSDP2 as the measurement harness runs it (stepfsdp.c; datasets/measure/measure_worker.py
 * parallelize): fully_shard on every block, then on the model, with
 * MixedPrecisionPolicy(bf16, reduce fp32) over fp32 weights, or with no policy over bf16
 * ones (train_fsdp2_plain16); full fine-tuning, or LoRA under the policy (its adapters
 * gathered in bf16 beside the 16-bit base: stepreplay_shape.lora16). FEAT_FSDP_MP is
 * fully_shard's policy, whatever FSDP the stack brings by default (hf: FSDP1's flag). */
static bool replay_fsdp2(const struct train_config *c)
{
    const uint64_t need = FEAT_FSDP | FEAT_FSDP_MP | FEAT_FSDP_FP32_REDUCE;
    const bool mixed = (c->features & need) == need && c->precision == PREC_BF16;
    return c->method == METHOD_ADP && c->tp == 1 && c->dp == c->gpus && c->gpus > 1 &&
           (mixed || train_fsdp2_plain16(c)) && !(c->features & FEAT_FSDP_END_UNITS) &&
           (c->finetune == FT_FULL || (mixed && c->finetune == FT_LORA));
}

/* LoRA on bitsandbytes' 4-bit block Linears as the op lists run them (stepreplay.h quant4):
 * the lm_head left 16-bit, no cast after dequantizing, norms and ends in the base's dtype
 * (no k-bit preparation) */
static bool replay_quant4(const struct train_config *c)
{
    return (c->finetune == FT_LORA || c->finetune == FT_QLORA) &&
           (c->quant == QUANT_NF4 || c->quant == QUANT_NF4_DQ) &&
           !(c->features & (FEAT_TORCHAO_NF4 | FEAT_QUANT_HEAD | FEAT_DEQUANT_CAST | FEAT_KBIT_PREP |
                            FEAT_KBIT_TRL));
}

/* FSDP1 as HF Trainer runs it through accelerate (stepfsdp.c; streampool.h): a unit per
 * block and the root, full fine-tuning or LoRA (peft's fsdp_auto_wrap_policy: the adapters
 * are units of their own, left out; on a 16-bit or a 4-bit base) in bf16 (no GradScaler in
 * the replay), every rank a data-parallel one (train_fsdp1). */
static bool replay_fsdp1(const struct train_config *c)
{
    return train_fsdp1(c) && c->dp == c->gpus &&
           (((c->finetune == FT_FULL || c->finetune == FT_LORA) && c->quant == QUANT_NONE) ||
            (replay_quant4(c) && !train_mixed_units(c))) &&
           c->precision != PREC_FP16;
}

/* The loops the op lists run (stepreplay.c head): HF Trainer's, or one that keeps
 * `outputs`, on a transformers model's own loss path (losspath_transformers; TRL's
 * trainers and the other stacks hold tensors of their own). Which kept loops the lists
 * run with or without checkpointing stepreplay decides (a refused shape leaves the
 * phases' reserved). */
static bool replay_loop(const struct train_config *c, const struct model_spec *m)
{
    return stack_hf_trainer(c->stack) && losspath_transformers(losspath_select(c, m->model_type));
}

void replayscope_setup(const struct model_plan *p, const struct train_config *c,
                       const struct mem_options *opt, struct mem_prepared *mp)
{
    const struct model_spec *m = &p->spec;
    const bool one = c->gpus == 1 && c->method == METHOD_SINGLE, fsdp1 = replay_fsdp1(c);
    const bool fsdp2 = replay_fsdp2(c) || fsdp1;
    /* a DDP replica runs one GPU's step; its Reducer's buckets (a flat copy of the trained
     * gradients, torch/csrc/distributed/c10d/reducer.cpp initialize_buckets:
     * `bucket.gradients = at::empty({offset}, options)`) are allocated when DDP wraps the
     * model and kept; the copies into and out of them (copy_grad_to_bucket, and with
     * gradient_as_bucket_view False, HF's default, finalize_bucket_dense's grad.copy_)
     * allocate nothing, and the rebuild after the first step frees them all before it
     * allocates the same bytes again. Measured: gpu-25min-13 (2 ranks) reserves 4.6055 GiB
     * more than gpu-25min-00 (one GPU, same run), its buckets 4.604. */
    const bool ddp = c->method == METHOD_CDP && c->tp == 1 && c->dp == c->gpus && c->gpus > 1;
    if ((!one && !fsdp2 && !ddp) || !replay_loop(c, m) || c->ckpt_selective || !replay_family(m) ||
        (c->features & FEAT_FLASH_ATTN) || (!one && (c->features & FEAT_EMPTY_CACHE)))
        return;
    mp->replay_shards = fsdp2 ? (uint32_t)c->dp : 0;
    mp->replay_fsdp1 = fsdp1;
    if (!(c->features & FEAT_EMPTY_CACHE)) {
        /* full fine-tuning (under autocast over fp32 weights, or bf16-pure), or LoRA on the
         * block Linears of a 16-bit base: fp32 adapters, with or without autocast, or bf16
         * ones under bf16-pure (stepreplay_shape.lora16) */
        const bool full = c->finetune == FT_FULL &&
                          (c->precision == PREC_BF16 || c->precision == PREC_BF16_PURE);
        const bool fp32_adapters = (c->features & FEAT_ADAPTER_FP32) && !(c->features & FEAT_FP32_BASE);
        const bool lora = ((c->finetune == FT_LORA && c->quant == QUANT_NONE) || replay_quant4(c)) &&
                          (c->precision == PREC_BF16 || c->precision == PREC_BF16_PURE) &&
                          (fp32_adapters || c->precision == PREC_BF16_PURE) &&
                          !(plan_lora_targets(p, c) & ~(TARGETS_ATTN | TARGETS_MLP));
        /* lora_dropout's copies are in the op list for adapters in the base's dtype only */
        const bool dropout_ok = !(c->features & FEAT_LORA_DROPOUT) || (lora && train_lora_uncast(c));
        mp->replay_steps = opt->whole_steps && (full || lora) && dropout_ok &&
                           !(c->features & (FEAT_GRAD_ACCUM | FEAT_OUTPUTS_KEPT | FEAT_PAGED_OPT |
                                            FEAT_OPT_IN_BWD | FEAT_LIGER_FLCE | FEAT_CHUNKED_CE)) &&
                           c->optimizer != OPT_ADAMW8BIT;
        return;
    }
    if (mp->ckpt || act_eager_attn(m, c))
        return;
    const bool full_pure = c->finetune == FT_FULL && c->precision == PREC_BF16_PURE;
    const bool lora16 = c->finetune == FT_LORA && c->quant == QUANT_NONE &&
                        (c->precision == PREC_BF16 || c->precision == PREC_BF16_PURE);
    if (!full_pure && !lora16)
        return;
    mp->replay_window = (c->features & FEAT_EMPTY_CACHE_10) ? 10 : 1;
}

