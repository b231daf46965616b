/* train.h: one fine-tuning configuration (a point of the sweep space, minus the model),
 * and the names its fields take on the command line and in CSV files. */
#ifndef LLMEM_TRAIN_H
#define LLMEM_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensors.h"

/* LLMem's five methods, then the ones beyond it (DESIGN.md section 8): ZeRO stage 1 and 2
 * (DeepSpeed; FSDP SHARD_GRAD_OP for stage 2), pipeline stages (1F1B, x TP x DP with the
 * distributed optimizer), ZeRO-3 with host-memory offload. */
enum method {
    METHOD_SINGLE, METHOD_CDP, METHOD_ADP, METHOD_TP, METHOD_DPTP,
    METHOD_ZERO1, METHOD_ZERO2, METHOD_PP, METHOD_OFFLOAD, METHOD_COUNT
};
/* What `offload` keeps in host memory: the optimizer (fp32 master weights, states and the
 * gradients they are updated from), or that and the 16-bit parameter shards too. */
enum offload_mode { OFFLOAD_NONE, OFFLOAD_OPTIMIZER, OFFLOAD_PARAMS, OFFLOAD_COUNT };
/* PREC_FP8: bf16 mixed precision (as PREC_BF16) whose block Linears are torchao Float8Linear
 * (float8 e4m3 forward GEMMs, e5m2 gradients, dynamic tensorwise scaling unless
 * FEAT_FP8_ROWWISE); the lm_head and the embedding stay in bf16 (memmodel.c cites it). */
enum precision { PREC_FP32, PREC_FP16, PREC_BF16, PREC_BF16_PURE, PREC_FP8, PREC_COUNT };
enum finetune { FT_FULL, FT_LORA, FT_QLORA, FT_COUNT };
enum quant { QUANT_NONE, QUANT_INT8, QUANT_NF4, QUANT_NF4_DQ, QUANT_COUNT };
enum optimizer { OPT_ADAMW, OPT_ADAMW8BIT, OPT_SGD, OPT_COUNT };
/* What the batches look like: every batch at the same length (packed or padded to a fixed
 * length), or variable lengths up to seq_len (unpacked SFT, padded to the longest sample).
 * The caching allocator behaves differently: see memmodel.c. */
enum data_shape { DATA_VARIABLE, DATA_PACKED, DATA_COUNT };
/* PYTORCH_CUDA_ALLOC_CONF: the default caching allocator, or expandable_segments:True. */
enum alloc_conf { ALLOC_DEFAULT, ALLOC_EXPANDABLE, ALLOC_COUNT };

/* Training stacks whose memory behaviour differs measurably (README, "Stacks"). */
enum stack {
    STACK_HF,        /* HF Trainer + PEFT, transformers >= 4.54 on torch >= 2.8 (fused AdamW) */
    STACK_LITGPT, STACK_TORCHTUNE, STACK_COLOSSAL,
    STACK_HF_446,    /* the same with transformers 4.46 .. 4.48 (losspath.c) */
    STACK_HF_431,    /* the same with transformers 4.31 .. 4.45 */
    STACK_TORCHTITAN,/* torchtitan: FSDP2, foreach AdamW, cross_entropy on the fp32 upcast */
    STACK_TRL,       /* TRL's SFTTrainer (>= 1.6) on HF Trainer + PEFT, transformers >= 4.49 */
    STACK_TRL_022,   /* the same with TRL 0.22 (per-sample entropy, losspath.c) */
    STACK_TRL_015,   /* the same with TRL 0.15 .. 0.21 or 0.23 .. 1.5 */
    STACK_HF_449,    /* HF Trainer + PEFT, transformers 4.49 .. 4.53 or torch < 2.8: the hf
                        loss path, foreach AdamW */
    STACK_COUNT
};

/* @return whether stack s trains through HF Trainer (transformers, PEFT, accelerate; TRL's
 * SFTTrainer subclasses it): the stacks that differ only in their loss path. */
bool stack_hf_trainer(enum stack s);
/* @return whether stack s stands for transformers whose SDPA attention gets a bool mask from
 *         masking_utils (transformers >= 4.54: hf, trl, trl-0.22). */
bool stack_hf_bool_mask(enum stack s);

/* Stack features; each stack has defaults (stack_features) and a measured row may add some.
 * Bits of a uint64_t (macros: ISO C enumerators stop at INT_MAX). */
/* lm_head/cross-entropy in chunks, no full fp32 logits */
#define FEAT_CHUNKED_CE (UINT64_C(1) << 0)
/* optimizer step fused into backward: grads never all live */
#define FEAT_OPT_IN_BWD (UINT64_C(1) << 1)
/* framework keeps a separate lm_head for a tied model */
#define FEAT_UNTIED_HEAD (UINT64_C(1) << 2)
/* eager attention: b*heads*s^2 scores are kept */
#define FEAT_EAGER_ATTN (UINT64_C(1) << 3)
/* PEFT autocast_adapter_dtype: LoRA weights in fp32 */
#define FEAT_ADAPTER_FP32 (UINT64_C(1) << 4)
/* ADP gathers one unit at a time (FSDP) instead of all */
#define FEAT_FSDP (UINT64_C(1) << 5)
/* an evaluation pass materialises full logits */
#define FEAT_EVAL_LOGITS (UINT64_C(1) << 6)
/* bitsandbytes paged optimizer: states in managed memory */
#define FEAT_PAGED_OPT (UINT64_C(1) << 7)
/* LoRA dropout > 0: each adapter keeps its dropped input */
#define FEAT_LORA_DROPOUT (UINT64_C(1) << 8)
/* bit 9 is free: it was FEAT_FULL_INIT, a whole-model copy inferred from rows LGRT-18..27;
 * lit-gpt 8641822 builds on the meta device under FSDP (resident.c mixed_unit_grads) */
/* the stack's attention has one fused qkv Linear (litgpt) */
#define FEAT_FUSED_QKV (UINT64_C(1) << 10)
/* fused AdamW kernel: no step temporaries */
#define FEAT_FUSED_OPT (UINT64_C(1) << 11)
/* mixed precision keeps the frozen base in fp32 too */
#define FEAT_FP32_BASE (UINT64_C(1) << 12)
/* gradient accumulation: gradients live across micro-batches */
#define FEAT_GRAD_ACCUM (UINT64_C(1) << 13)
/* torch.compile: pointwise ops recomputed, not saved */
#define FEAT_COMPILE (UINT64_C(1) << 14)
/* torchao NF4 (torchtune QLoRA): saves no Linear input */
#define FEAT_TORCHAO_NF4 (UINT64_C(1) << 15)
/* a quantized base includes the lm_head */
#define FEAT_QUANT_HEAD (UINT64_C(1) << 16)
/* the loop holds its fp32 logits through backward */
#define FEAT_LOGITS_KEPT (UINT64_C(1) << 17)
/* the Triton FlashAttention kernel (llm-foundry triton) */
#define FEAT_TRITON_ATTN (UINT64_C(1) << 18)
/* the loop calls torch.cuda.empty_cache() after every step */
#define FEAT_EMPTY_CACHE (UINT64_C(1) << 19)
/* mixed precision by FSDP2's MixedPrecisionPolicy, no autocast */
#define FEAT_FSDP_MP (UINT64_C(1) << 20)
/* TP with sequence parallelism and vocab-sharded loss
 * (torchtitan's TP plan): see memmodel.c activation_coeffs */
#define FEAT_SEQ_PARALLEL (UINT64_C(1) << 21)
/* the loop keeps `outputs` (16-bit logits, KV cache) until
 * the next forward returns (PEFT MetaMathQA run.py) */
#define FEAT_OUTPUTS_KEPT (UINT64_C(1) << 22)
/* the loss function runs under torch.compile (torchtitan
 * >= bbb1b616e with --training.compile) */
#define FEAT_COMPILED_LOSS (UINT64_C(1) << 23)
/* --precision fp8: FSDP all-gathers the float8 weights
 * (torchao enable_fsdp_float8_all_gather) */
#define FEAT_FP8_ALLGATHER (UINT64_C(1) << 24)
/* --precision fp8: rowwise (axiswise) scaling instead of
 * tensorwise (torchao Float8LinearConfig "rowwise" recipe) */
#define FEAT_FP8_ROWWISE (UINT64_C(1) << 25)
/* the stack computes softcapped attention eagerly (litgpt:
 * "with softcapping we cannot use SDPA") */
#define FEAT_SOFTCAP_EAGER (UINT64_C(1) << 26)
/* the quantized base was quantized from fp16 (Lightning's
 * BitsandbytesPrecision): each dequantized weight is fp16
 * and cast to the compute dtype beside it */
#define FEAT_DEQUANT_CAST (UINT64_C(1) << 27)
/* the flash-attn package (HF flash_attention_2): K and V
 * keep their kv_heads, GQA in the kernel */
#define FEAT_FLASH_ATTN (UINT64_C(1) << 28)
/* FSDP reduce-scatters gradients in fp32 (MixedPrecision
 * reduce_dtype=float32, composer's DEFAULT): speed only */
#define FEAT_FSDP_FP32_REDUCE (UINT64_C(1) << 29)
/* FSDP1 (FullyShardedDataParallel): flat parameters whose
 * views autograd tracks (resident.c root_grads) */
#define FEAT_FSDP_FLAT (UINT64_C(1) << 30)
/* torchtitan >= 83e69410: the embedding and [norm, output] are FSDP
 * units of their own, every block is resharded after forward (resident.c zero3_gather) */
#define FEAT_FSDP_END_UNITS (UINT64_C(1) << 31)
/* ... every 10th step instead (PEFT MetaMathQA run.py
 * ACCELERATOR_EMPTY_CACHE_SCHEDULE from 90d3fc05) */
#define FEAT_EMPTY_CACHE_10 (UINT64_C(1) << 32)
/* DeepSpeed ZeRO-3 configured by an accelerate config without a
 * DeepSpeed JSON: DeepSpeed's default reduce_bucket_size (resident.c ds_zero3_ipg_bytes) */
#define FEAT_DS_DEFAULT_BUCKETS (UINT64_C(1) << 33)
/* the run's longest batch is its first step and the others are shorter (lit-gpt 8641822's
 * get_batch(..., longest_seq_ix if iter_num == 0), "force the longest sample at the beginning
 * so potential OOMs happen right away"): what a loop keeps of the previous step is not there
 * at the peak (memmodel.c kept_logits, act_bnb_held_tok, fixed_phases' summed gradients) */
#define FEAT_LONGEST_FIRST (UINT64_C(1) << 34)
/* bitsandbytes before 0.43.2: MatMul4Bit keeps its input whenever it requires grad,
 * `ctx.tensors = (A, B)` (bitsandbytes/autograd/_functions.py at 0.43.1 :516); 9e753741
 * (#1270, 0.43.2) made it (None, B) (activations.c bnb_keeps_input) */
#define FEAT_BNB_INPUT_KEPT (UINT64_C(1) << 35)
/* PEFT's prepare_model_for_kbit_training (peft src/peft/utils/other.py, "cast all non INT8
 * parameters to fp32", the same from v0.4.0 0769587a to 5d602fdb): every parameter of a
 * k-bit base that is not a quantized weight in fp32, the norms, the embedding and the
 * lm_head (train_kbit_norms_fp32, train_kbit_ends_fp32) */
#define FEAT_KBIT_PREP (UINT64_C(1) << 36)
/* TRL's PEFT preparation of a k-bit model (sft_trainer.py _prepare_peft_model at v0.15.0
 * :281-327, then models/utils.py prepare_peft_model at v0.22.0 :514-564): PEFT's prepare_model_for_kbit_training
 * (TRL's own from v0.25, norms only), then, under bf16, peft_module_casting_to_bf16 casts
 * the embedding and lm_head back to bf16; the norms stay fp32. TRL 0.26 on prepares nothing */
#define FEAT_KBIT_TRL (UINT64_C(1) << 37)
/* TRL from 0.26 casts a k-bit model's trainable parameters to bf16 after get_peft_model
 * ("the PEFT adapter weights are converted to bf16 to follow the recommendations from the
 * original paper", sft_trainer.py at v0.26.0 84794a7d :703-718, the same at v1.6.0):
 * train_adapters_bf16 */
#define FEAT_KBIT_BF16_ADAPTERS (UINT64_C(1) << 38)
/* Liger Kernel's fused linear cross-entropy (HF Trainer and TRL `use_liger_kernel=True`):
 * the lm_head and the loss in chunks, no N x V tensor (losspath.c LOSS_LIGER, memmodel.c
 * liger_coeffs, mempoint.c memmodel_liger_bytes) */
#define FEAT_LIGER_FLCE (UINT64_C(1) << 39)
/* torch pipelining's ScheduleInterleaved1F1B (torchtitan pipeline_parallel_schedule
 * "Interleaved1F1B"): two stages a rank, looped (pipelining_utils.py stage_ids_this_rank
 * "loop": rank r runs stages r and r + pp), the blocks split over pp x 2 stages
 * (generate_split_points with num_stages_per_rank 2); train_pp_local */
#define FEAT_PP_INTERLEAVED (UINT64_C(1) << 40)
/* Measured on one GPU as one rank of PyTorch's fake process group (the measurement
 * harness's `fake-pg` rows, datasets/measure/measure_worker.py parallelize): collectives
 * allocate their outputs but no NCCL communicator exists, so none of its buffers
 * (gpus.csv nccl_bytes) is on the device. Measured: datasets/measured/h200-20261127.csv,
 * device minus reserved 0.7488 GiB on DDP and TP rows -13/-43/-44, as on one GPU. */
#define FEAT_FAKE_PG (UINT64_C(1) << 41)
/* FSDP1 with accelerate's mixed precision policy: under --precision bf16/fp16 accelerate's
 * FullyShardedDataParallelPlugin.set_mixed_precision gives FSDP1
 * MixedPrecision(param_dtype=half, reduce_dtype=half, buffer_dtype=half) (accelerate
 * src/accelerate/utils/dataclasses.py @0059501736ae; accelerate 1.15.0 as measured, notes
 * `fsdp1_mp=` of datasets/measured/h200-20261127-fsdp1.csv), so each unit is gathered
 * in 16 bit and the fp32 shards are never cast by autocast (train_fsdp_half_gather) */
#define FEAT_FSDP1_MP (UINT64_C(1) << 42)
/* FSDP1 units that hold LoRA's adapters beside the frozen block weights: a wrap policy of
 * whole blocks without peft's fsdp_auto_wrap_policy (train_mixed_units) */
#define FEAT_FSDP_MIXED_UNITS (UINT64_C(1) << 43)
/* the loop keeps the model's `outputs` (logits, KV cache) through the backward and the
 * optimizer step and drops them before the next forward (Answer.AI fsdp_qlora train.py:
 * `output = None` after optimizer.step(), L874 @50efa1e) */
#define FEAT_OUTPUTS_UNTIL_STEP (UINT64_C(1) << 44)
/* FSDP1 wrapped CPU-resident weights (moving each unit to the GPU) and the cache its wrap
 * left stays into training (fsdpwrap.h; feature cpu-init) */
#define FEAT_WRAP_CACHE (UINT64_C(1) << 45)
/* ... with sync_module_states: the wrap broadcasts each unit in flat buckets (fsdpwrap.h) */
#define FEAT_SYNC_STATES (UINT64_C(1) << 46)
/* transformers 4.31 - 4.39: every attention layer's LlamaRotaryEmbedding keeps cos and sin
 * tables of max_position_embeddings x head_dim as non-persistent buffers, built in the
 * default dtype when the model is constructed (resident.c rope_tables cites the source);
 * 4.40 computes them per forward from inv_freq. In the weights' dtype, or fp32
 * (FEAT_ROPE_TABLES_FP32: a model built without torch_dtype and never cast, as Answer.AI's
 * QLoRA loader builds it) */
#define FEAT_ROPE_TABLES (UINT64_C(1) << 47)
#define FEAT_ROPE_TABLES_FP32 (UINT64_C(1) << 48)

/* LoRA targets: a bit set of tensor roles (1u << ROLE_Q, ...). */
#define TARGET_BIT(r) (1u << (r))
#define TARGETS_ATTN (TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V) | TARGET_BIT(ROLE_O))
#define TARGETS_MLP (TARGET_BIT(ROLE_GATE) | TARGET_BIT(ROLE_UP) | TARGET_BIT(ROLE_DOWN))
#define TARGETS_ALL (TARGETS_ATTN | TARGETS_MLP)

struct train_config {
    enum method method;
    int32_t gpus, tp, dp; /* dp * tp * pp == gpus */
    int32_t ep;           /* expert parallelism within dp (MoE); 0 or 1: none */
    int32_t micro_batch, seq_len;
    enum precision precision;
    enum finetune finetune;
    int32_t lora_r;        /* 0 for full fine-tuning */
    uint32_t lora_targets; /* 0 for full fine-tuning */
    enum quant quant;      /* frozen-base format; qlora implies nf4 */
    bool grad_ckpt;        /* full activation checkpointing of every block */
    bool ckpt_selective;   /* selective checkpointing (grad_ckpt false): see ckpt_mode */
    enum optimizer optimizer;
    enum stack stack;
    uint64_t features;     /* FEAT_* bits */
    enum data_shape data;  /* variable-length or packed batches */
    enum alloc_conf alloc; /* caching allocator configuration */
    /* beyond LLMem (0 reads as 1 / none, so older initialisers stay valid) */
    int32_t pp;            /* pipeline stages: gpus = dp x tp x pp */
    int32_t microbatches;  /* micro-batches of one pipelined step (method pp) */
    enum offload_mode offload; /* method offload: what lives in host memory */
};

/* Pipeline stages and micro-batches per step of a configuration (1 without pp). */
static inline int32_t train_pp(const struct train_config *c) { return c->pp > 1 ? c->pp : 1; }
static inline int32_t train_microbatches(const struct train_config *c)
{
    return c->pp > 1 && c->microbatches > 1 ? c->microbatches : 1;
}
/* Pipeline stages a rank runs: 2 under the interleaved schedule, else 1. */
static inline int32_t train_pp_local(const struct train_config *c)
{
    return c->method == METHOD_PP && train_pp(c) > 1 && (c->features & FEAT_PP_INTERLEAVED) ? 2 : 1;
}
/* A training loop under Lightning Fabric, as litgpt's finetune scripts run (2024: lit-gpt
 * 8641822, litgpt 5895df10): _FabricModule.forward's convert_output returns fp32 logits,
 * fit() keeps them (and, through their grad_fn, the step's graph) until the next step's
 * model() returns, a quantized lm_head dequantizes inside each chunk's matmul, and the FSDP
 * strategy wraps with use_orig_params=True (losspath.c litgpt_lora_path, memmodel.c
 * kept_logits, activations.c act_bnb_held_tok, resident.c mixed_unit_grads cite each). */
static inline bool train_fabric_loop(const struct train_config *c)
{
    return c->stack == STACK_LITGPT;
}
/* FSDP (FEAT_FSDP: units that gather, compute and reshard) sharding over 2 or more
 * data-parallel ranks, with or without TP. */
static inline bool train_fsdp_sharded(const struct train_config *c)
{
    return (c->features & FEAT_FSDP) && c->dp > 1 && (c->method == METHOD_ADP || c->method == METHOD_DPTP);
}
/* FSDP1 units that mix frozen and trained parameters, which use_orig_params=True permits:
 * a unit's FlatParameter requires grad when any parameter in it does (pytorch
 * torch/distributed/fsdp/_flat_param.py FlatParamHandle._validate_tensors_to_flatten:
 * `flat_param_requires_grad = flat_param_requires_grad or tensor.requires_grad`, @01caf79e),
 * and in forward every parameter is a view of it (_use_unsharded_views), so the frozen
 * weights get gradients (resident.c mixed_unit_grads) and every block Linear and norm weight
 * saves what a trained one saves (activations.c). litgpt's Fabric loop wraps whole Blocks,
 * adapters and all; FEAT_FSDP_MIXED_UNITS says an FSDP1 run wrapped its blocks so (HF
 * Trainer gives a LoRA model peft's fsdp_auto_wrap_policy, whose adapters are units of
 * their own: Trainer._fsdp_qlora_plugin_updates). */
static inline bool train_mixed_units(const struct train_config *c)
{
    return train_fsdp_sharded(c) && c->finetune != FT_FULL &&
           (train_fabric_loop(c) || (c->features & FEAT_FSDP_MIXED_UNITS));
}
/* Mixed precision: 16-bit compute over fp32 parameters (fp16, bf16, and fp8, bf16 with
 * float8 block Linears). */
static inline bool train_mixed(const struct train_config *c)
{
    return c->precision == PREC_FP16 || c->precision == PREC_BF16 || c->precision == PREC_FP8;
}
/* FSDP's mixed precision gathers each unit's parameters in the 16-bit dtype: FSDP2's
 * MixedPrecisionPolicy (FEAT_FSDP_MP), or FSDP1's MixedPrecision as accelerate sets it
 * (FEAT_FSDP1_MP) on a sharded mixed-precision run. Autocast then finds 16-bit weights and
 * caches no casts; the residual stream starts from the 16-bit embedding. Measured:
 * h200-20261127-fsdp1.csv gpu-fsdp1-01/-06/-07/-11/-13 (bf16, FSDP1 x 2..8, allocated
 * +17.7..+31.0 % with the casts counted, -0.11..+0.0 % without). */
static inline bool train_fsdp_half_gather(const struct train_config *c)
{
    if (c->features & FEAT_FSDP_MP)
        return true;
    const uint64_t fsdp1 = FEAT_FSDP_FLAT | FEAT_FSDP1_MP;
    return train_fsdp_sharded(c) && (c->features & fsdp1) == fsdp1 &&
           (c->precision == PREC_BF16 || c->precision == PREC_FP16);
}
/* FSDP1 (flat parameters, the hf stacks' FSDP) sharding a data-parallel run over 2 or more
 * ranks in the regimes our rows measured (datasets/measured/h200-20261127-fsdp1*.csv):
 * 16-bit parameters, or accelerate's MixedPrecision over fp32 ones; no tensor parallelism
 * or accumulation (no_sync keeps unsharded gradients). A quantized base's flat parameters
 * are its packed storage, gathered by the same _unshard (since stop 38; no row of ours
 * measures it). Its side-stream pools (streamfree.c) and its replayed steps (memmodel.c
 * replay_fsdp1, unquantized only) take this. */
static inline bool train_fsdp1(const struct train_config *c)
{
    const uint64_t flat = FEAT_FSDP | FEAT_FSDP_FLAT;
    return (c->features & flat) == flat && !(c->features & (FEAT_FSDP_MP | FEAT_GRAD_ACCUM)) &&
           c->method == METHOD_ADP && c->tp == 1 && c->dp > 1 &&
           (train_fsdp_half_gather(c) || c->precision == PREC_BF16_PURE);
}
/* FSDP2 (fully_shard: FEAT_FSDP without FSDP1's flat parameters) with no
 * MixedPrecisionPolicy over bf16-pure parameters, a data-parallel run of 2 or more ranks:
 * each unit gathers, computes and reduces in bf16 as it is (torch
 * distributed/fsdp/_fully_shard/_fsdp_param.py init_dtype_attrs, _fsdp_collectives.py
 * foreach_reduce: `reduce_dtype = reduce_dtype or grad_dtype`, torch v2.11.0 @70d99e99, read
 * in a verbatim copy so marked). The measurement harness's feature fsdp2 without fsdp-mp. */
static inline bool train_fsdp2_plain16(const struct train_config *c)
{
    return (c->features & (FEAT_FSDP | FEAT_FSDP_FLAT | FEAT_FSDP_MP)) == FEAT_FSDP &&
           c->precision == PREC_BF16_PURE && c->method == METHOD_ADP && c->tp == 1 && c->dp > 1 &&
           c->quant == QUANT_NONE;
}
/* A k-bit base prepared for training (FEAT_KBIT_PREP, FEAT_KBIT_TRL): bitsandbytes-quantized
 * block Linears under LoRA, on a model each rank loads whole. TRL leaves a sharded QLoRA
 * alone (is_sharded_qlora: the 4-bit weights on cpu or meta when FSDP or ZeRO-3 loads them),
 * and PEFT's FSDP and ZeRO-3 QLoRA recipes run through it (docs/source/accelerate), so
 * method adp and offload are left out. */
bool train_kbit_prepared(const struct train_config *c);
/* ... whose norm weights are fp32 (both preparations) */
static inline bool train_kbit_norms_fp32(const struct train_config *c)
{
    return train_kbit_prepared(c);
}
/* ... whose embedding and lm_head are fp32 too: PEFT's preparation, or TRL's when not under
 * bf16 (peft_module_casting_to_bf16 runs only with args.bf16) */
static inline bool train_kbit_ends_fp32(const struct train_config *c)
{
    return train_kbit_prepared(c) &&
           ((c->features & FEAT_KBIT_PREP) || c->precision != PREC_BF16);
}
/* Whether LoRA adapters on a k-bit base are bf16 (FEAT_KBIT_BF16_ADAPTERS), their
 * gradients and AdamW states too (zeros_like the parameter). */
static inline bool train_adapters_bf16(const struct train_config *c)
{
    return (c->features & FEAT_KBIT_BF16_ADAPTERS) && c->finetune != FT_FULL && c->quant != QUANT_NONE;
}
/* LoRA adapters that run in the 16-bit compute dtype on the Linear's own input, no cast and
 * no autocast (PEFT's `_cast_input_dtype` returns x itself): adapters in the base dtype under
 * bf16-pure, or any adapters under FSDP2's MixedPrecisionPolicy, which gathers every
 * parameter of a unit in param_dtype, the trained fp32 adapters too (torch
 * distributed/fsdp/_fully_shard/_fsdp_param.py FSDPParam.init_dtype_attrs), and runs no
 * autocast. Measured: h200-20261127.csv gpu-25min-46 (Qwen2.5-1.5B LoRA, FSDP2 x 4),
 * allocated +7.0 % with a copy counted. Not FSDP1 (train_fsdp_half_gather's other half): HF
 * Trainer wraps a LoRA model with peft's fsdp_auto_wrap_policy (transformers
 * Trainer._fsdp_qlora_plugin_updates), which makes lora_A and lora_B units of their own, so
 * when PEFT's Linear.forward reads lora_A's weight dtype that unit is still its fp32 shard
 * and the input is cast (peft 0.21.0 as measured). Measured: h200-20261127-fsdp1-pools.csv
 * gpu-fsdp1-pools-05/-08 (LoRA, FSDP1 x 4 / x 2), allocated +0.16 / +0.30 % with the copy,
 * -6.4 % without. activations.c lora_own_input and the replay (stepreplay_shape.lora16)
 * take this. */
static inline bool train_lora_uncast(const struct train_config *c)
{
    const bool fp32_adapters = (c->features & FEAT_ADAPTER_FP32) && !train_adapters_bf16(c);
    return c->finetune != FT_FULL && ((c->precision == PREC_BF16_PURE && !fp32_adapters) ||
                                      (train_mixed(c) && (c->features & FEAT_FSDP_MP)));
}
/* Methods whose module lives in 16 bit, its fp32 master copy in the optimizer (DeepSpeed
 * ZeRO-1/2/3 and Megatron's distributed optimizer), as opposed to torch AMP's (or FSDP's
 * mixed precision) fp32 parameters with 16-bit compute copies: torchtitan's pipelines shard
 * each stage with FSDP2 instead. */
static inline bool train_master_in_optimizer(const struct train_config *c)
{
    return c->method == METHOD_ZERO1 || c->method == METHOD_ZERO2 || c->method == METHOD_OFFLOAD ||
           (c->method == METHOD_PP && c->stack != STACK_TORCHTITAN);
}

/* --grad-ckpt: off, on (every block recomputed), selective (torchtitan's op-level SAC:
 * matmul outputs alternate saved/recomputed, attention outputs saved, pointwise ops
 * recomputed; speed.c and memmodel.c cite the policy). */
enum ckpt_mode { CKPT_OFF, CKPT_ON, CKPT_SELECTIVE, CKPT_COUNT };
enum ckpt_mode train_ckpt_mode(const struct train_config *c);
const char *ckpt_name(enum ckpt_mode m);                  /* "off", "on", "selective" */
const char *ckpt_mode_name(const struct train_config *c); /* ckpt_name(train_ckpt_mode(c)) */
/* The one parser of a checkpointing value: the command line, the measured CSV's and the
 * ranked CSV's grad_ckpt column, the rules' grad_ckpt key. -1 when unknown. */
int ckpt_mode_parse(const char *s);
void train_set_ckpt(struct train_config *c, int mode);

const char *method_name(enum method m);
const char *precision_name(enum precision p);
const char *finetune_name(enum finetune f);
const char *quant_name(enum quant q);
const char *optimizer_name(enum optimizer o);
const char *stack_name(enum stack s);
/* @return the stack label's tail for the features --rope-tables and --fsdp-end-units set
 *         (the sweep's report and explain both print it after the stack): "",
 *         "+rope-tables" or "+rope-tables-fp32", then "+end-units" if FEAT_FSDP_END_UNITS. */
const char *stack_feature_suffix(uint64_t features);
const char *data_shape_name(enum data_shape d); /* "variable", "packed" */
const char *alloc_conf_name(enum alloc_conf a); /* "default", "expandable" */
const char *offload_name(enum offload_mode m);  /* "none", "optimizer", "params" */

/* Name -> value; return -1 when the name is unknown. */
int method_parse(const char *s);
int precision_parse(const char *s);
int finetune_parse(const char *s);
int quant_parse(const char *s);
int optimizer_parse(const char *s);
int stack_parse(const char *s);
int data_shape_parse(const char *s);
int alloc_conf_parse(const char *s);
int offload_parse(const char *s);

/* The default features of a stack (README "Stacks"). */
uint64_t stack_features(enum stack s);

/* "attn", "mlp", "all", or roles joined by '+' ("q+v", "q+k+v+o+gate+up+down+head").
 * Returns 0 on success, -1 on an unknown module. */
int targets_parse(const char *s, uint32_t *out);
/* The same, also accepting one extra module name (the rules' "embed") as extra_bits. */
int targets_parse_with(const char *s, const char *extra, uint32_t extra_bits, uint32_t *out);
/* Canonical text: "attn", "mlp", "all", or the roles joined by '+'; "" when none. */
void targets_format(uint32_t targets, char *buf, size_t n);

/* Checks that a configuration is coherent for model m (tp divides the GPU count and what
 * the stack splits, single runs on one GPU, ep divides dp and the experts, dp x tp x pp =
 * GPUs, ...). Returns
 * NULL when valid, else a static reason. */
const char *train_config_check(const struct train_config *c, const struct model_spec *m);
/* The TP part of it: which degrees the stack's way of splitting the model allows (train.c
 * cites each stack). */
const char *train_tp_check(const struct train_config *c, const struct model_spec *m);
/* The precision's part of train_config_check (fp8: full training, not LLMem's equations,
 * its recipe features), which the sweep's tuning axes apply to each combination. */
const char *train_precision_check(const struct train_config *c);
/* What the GPU must offer the configuration: --precision fp8 needs float8 tensor cores
 * (gpus.csv fp8_tflops > 0: Ada and Hopper or later). NULL when it does, or g is NULL. */
struct gpu_spec;
const char *train_gpu_check(const struct train_config *c, const struct gpu_spec *g);

/* Expert-parallel degree: experts sharded over ep ranks of the data-parallel group. A
 * configuration that leaves ep 0 means 1. */
static inline int32_t train_ep(const struct train_config *c) { return c->ep > 1 ? c->ep : 1; }
/* The TP degree the token embedding is split over (a tied lm_head is the same weight).
 * Megatron's VocabParallelEmbedding, torchtitan's and torchtune's RowwiseParallel
 * tok_embeddings and Colossal-AI's TP1D split it over the TP group. The HF stacks apply the
 * model's tp_plan, which names the blocks' Linears only (transformers
 * models/llama/configuration_llama.py base_model_tp_plan @008e5743: q/k/v/gate/up colwise,
 * o/down rowwise) plus an untied lm_head ("colwise_rep": the weight split, the logits
 * gathered), so embed_tokens, the norms and a tied head stay whole on every rank. Measured:
 * datasets/measured/h200-20261127.csv gpu-25min-14/-44/-45 (Llama-3.2-1B, tied, TP 2/4/8 on
 * the fake process group), -8 to -15 % allocated while the embedding was counted split. */
static inline int32_t train_embed_tp(const struct train_config *c)
{
    return stack_hf_trainer(c->stack) ? 1 : c->tp;
}

#endif
