/* train.c: names and checks of a fine-tuning configuration. */
#include "train.h"

#include "gpu.h"

#include <stdio.h>
#include <string.h>

static const char *const method_names[METHOD_COUNT] = {"single", "cdp", "adp", "tp", "dp+tp",
                                                       "zero1", "zero2", "pp", "offload"};
static const char *const offload_names[OFFLOAD_COUNT] = {"none", "optimizer", "params"};
static const char *const precision_names[PREC_COUNT] = {"fp32", "fp16", "bf16", "bf16-pure",
                                                               "fp8"};
static const char *const finetune_names[FT_COUNT] = {"full", "lora", "qlora"};
static const char *const quant_names[QUANT_COUNT] = {"none", "int8", "nf4", "nf4-dq"};
static const char *const optimizer_names[OPT_COUNT] = {"adamw", "adamw8bit", "sgd"};
static const char *const stack_names[STACK_COUNT] = {"hf", "litgpt", "torchtune", "colossal",
                                                     "hf-4.46", "hf-4.31", "torchtitan",
                                                     "trl", "trl-0.22", "trl-0.15", "hf-4.49"};
static const char *const data_shape_names[DATA_COUNT] = {"variable", "packed"};
static const char *const alloc_conf_names[ALLOC_COUNT] = {"default", "expandable"};

static const char *name_of(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

static int parse_in(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

const char *method_name(enum method m) { return name_of(method_names, METHOD_COUNT, (int)m); }
const char *precision_name(enum precision p) { return name_of(precision_names, PREC_COUNT, (int)p); }
const char *finetune_name(enum finetune f) { return name_of(finetune_names, FT_COUNT, (int)f); }
const char *quant_name(enum quant q) { return name_of(quant_names, QUANT_COUNT, (int)q); }
const char *optimizer_name(enum optimizer o) { return name_of(optimizer_names, OPT_COUNT, (int)o); }
const char *stack_name(enum stack s) { return name_of(stack_names, STACK_COUNT, (int)s); }
const char *stack_feature_suffix(uint64_t f)
{
    static const char *const tails[3][2] = {{"", "+end-units"},
                                            {"+rope-tables", "+rope-tables+end-units"},
                                            {"+rope-tables-fp32", "+rope-tables-fp32+end-units"}};
    const int rope = !(f & FEAT_ROPE_TABLES) ? 0 : (f & FEAT_ROPE_TABLES_FP32) ? 2 : 1;
    return tails[rope][(f & FEAT_FSDP_END_UNITS) != 0];
}
const char *data_shape_name(enum data_shape d) { return name_of(data_shape_names, DATA_COUNT, (int)d); }
const char *alloc_conf_name(enum alloc_conf a) { return name_of(alloc_conf_names, ALLOC_COUNT, (int)a); }
const char *offload_name(enum offload_mode m) { return name_of(offload_names, OFFLOAD_COUNT, (int)m); }

int method_parse(const char *s) { return parse_in(method_names, METHOD_COUNT, s); }
int precision_parse(const char *s) { return parse_in(precision_names, PREC_COUNT, s); }
int finetune_parse(const char *s) { return parse_in(finetune_names, FT_COUNT, s); }
int quant_parse(const char *s) { return parse_in(quant_names, QUANT_COUNT, s); }
int optimizer_parse(const char *s) { return parse_in(optimizer_names, OPT_COUNT, s); }
int stack_parse(const char *s) { return parse_in(stack_names, STACK_COUNT, s); }
int data_shape_parse(const char *s) { return parse_in(data_shape_names, DATA_COUNT, s); }
int alloc_conf_parse(const char *s) { return parse_in(alloc_conf_names, ALLOC_COUNT, s); }
int offload_parse(const char *s) { return parse_in(offload_names, OFFLOAD_COUNT, s); }

/* TrainingArguments.optim defaults to "adamw_torch_fused" on torch >= 2.8 from transformers
 * 4.54 (huggingface/transformers PR #37358, merged 2025-07-09: `if
 * is_torch_greater_or_equal_than_2_8: default_optim = "adamw_torch_fused"`), "adamw_torch"
 * (torch.optim.AdamW, foreach) before. `hf` and the TRL stacks whose TRL needs transformers
 * >= 4.55 (TRL 0.21 on, pyproject.toml) stand for torch >= 2.8; hf-4.49 and the older ones
 * for the foreach default. */
static bool hf_fused_adamw(enum stack s)
{
    return s == STACK_HF || s == STACK_TRL || s == STACK_TRL_022;
}

/* How a stack prepares a k-bit base. HF Trainer leaves it to the script, and PEFT's QLoRA
 * guide has every script call prepare_model_for_kbit_training ("Next, you should call the
 * prepare_model_for_kbit_training() function", docs/source/developer_guides/quantization.md
 * at 5d602fdb). TRL's SFTTrainer prepares it itself from 0.15 to 0.25 (FEAT_KBIT_TRL cites
 * it); from 0.26 (sft_trainer.py at v0.26.0 84794a7d :703-718) it calls get_peft_model
 * alone and casts the adapters to bf16 (FEAT_KBIT_BF16_ADAPTERS), so `trl` (>= 1.6)
 * prepares nothing; `trl-0.15` stands for 0.15 .. 0.21 and 0.23 .. 0.25 here, rows of
 * 0.26 .. 1.5 say no-kbit-prep+adapter-bf16. */
static uint64_t kbit_preparation(enum stack s)
{
    switch (s) {
    case STACK_TRL:
        return FEAT_KBIT_BF16_ADAPTERS;
    case STACK_TRL_022:
    case STACK_TRL_015:
        return FEAT_KBIT_TRL;
    default:
        return FEAT_KBIT_PREP;
    }
}

bool train_kbit_prepared(const struct train_config *c)
{
    const bool bnb = c->quant != QUANT_NONE && !(c->features & FEAT_TORCHAO_NF4);
    return bnb && c->finetune != FT_FULL && (c->features & (FEAT_KBIT_PREP | FEAT_KBIT_TRL)) &&
           c->method != METHOD_ADP && c->method != METHOD_OFFLOAD;
}

bool stack_hf_bool_mask(enum stack s)
{
    return hf_fused_adamw(s);
}

bool stack_hf_trainer(enum stack s)
{
    return s == STACK_HF || s == STACK_HF_449 || s == STACK_HF_446 || s == STACK_HF_431 ||
           s == STACK_TRL || s == STACK_TRL_022 || s == STACK_TRL_015;
}

uint64_t stack_features(enum stack s)
{
    if (stack_hf_trainer(s)) /* HF Trainer + PEFT: adapters upcast to fp32, FSDP for sharding
                                (accelerate's FullyShardedDataParallelPlugin: FSDP1); versions
                                and TRL differ in the loss path (losspath.c), and transformers
                                4.31 .. 4.45 (Jul 2023 .. Sep 2024) ran mostly with the
                                bitsandbytes of before 0.43.2 (Jul 2024) */
        return FEAT_ADAPTER_FP32 | FEAT_FSDP | FEAT_FSDP_FLAT | FEAT_FSDP1_MP | (s == STACK_HF_431 ? FEAT_BNB_INPUT_KEPT : 0) |
               (hf_fused_adamw(s) ? FEAT_FUSED_OPT : 0) | kbit_preparation(s);
    switch (s) {
    case STACK_LITGPT:    /* chunked lm_head + CE (LoRA; full fine-tuning chunks only the
                             CE, losspath.c litgpt-full), separate lm_head, full-logit
                             validation, lora_dropout > 0 in every config_hub LoRA recipe
                             (0.05, the Gemma ones 0.1: the same bytes), fused qkv;
                             bf16-mixed keeps every weight, frozen ones too, in fp32; every
                             recipe accumulates gradients (global_batch_size > micro);
                             BitsandbytesPrecision quantizes every Linear, lm_head too, from
                             an fp16 copy of the weight (resident.c resident_terms); a
                             softcapped model's attention runs eagerly (act_block_tok);
                             Lightning's FSDPStrategy wraps FSDP1 (flat parameters); litgpt
                             pins bitsandbytes==0.42.0 (pyproject.toml at 5895df10) */
        return FEAT_CHUNKED_CE | FEAT_UNTIED_HEAD | FEAT_FSDP | FEAT_FSDP_FLAT | FEAT_EVAL_LOGITS |
               FEAT_LORA_DROPOUT | FEAT_FUSED_QKV | FEAT_FP32_BASE | FEAT_GRAD_ACCUM |
               FEAT_QUANT_HEAD | FEAT_DEQUANT_CAST | FEAT_SOFTCAP_EAGER | FEAT_BNB_INPUT_KEPT;
    case STACK_TORCHTUNE: /* FSDP2; configs naming torch's AdamW set fused=True (from
                             cca50f02e; unfused-adamw before); QLoRA is torchao NF4; chunked
                             CE and compile per recipe */
        return FEAT_FSDP | FEAT_FUSED_OPT | FEAT_TORCHAO_NF4;
    case STACK_TORCHTITAN: /* FSDP2 (fully_shard per block, the root kept gathered); AdamW with
                              optimizer.fused = False by default (torchtitan 9dec370
                              components/optimizer); its loss, cross_entropy(pred.float()) after
                              which train.py does `del pred` before backward, is the hf path.
                              Mixed precision is FSDP2's MixedPrecisionPolicy(param_dtype,
                              reduce_dtype) (parallelisms/parallelize_llama.py:320 at 9dec370),
                              not autocast: train.py's train_context (utils.py
                              get_train_context :196) enters no torch.autocast. Its TP plan
                              always shards the sequence outside the TP regions and, by
                              default, the loss over the vocabulary (apply_tp; parallel_dims.py
                              loss_parallel_enabled = tp > 1 and not disable_loss_parallel) */
        return FEAT_FSDP | FEAT_FSDP_MP | FEAT_SEQ_PARALLEL;
    case STACK_COLOSSAL:  /* LLMem's own stack: Gemini chunks, full gather under ADP */
    default:
        return 0;
    }
}

/* Module names of LoRA targets; "head" is the lm_head. */
static const struct {
    const char *name;
    uint32_t bits;
} target_names[] = {
    {"all", TARGETS_ALL},   {"attn", TARGETS_ATTN},           {"mlp", TARGETS_MLP},
    {"q", TARGET_BIT(ROLE_Q)}, {"k", TARGET_BIT(ROLE_K)},     {"v", TARGET_BIT(ROLE_V)},
    {"o", TARGET_BIT(ROLE_O)}, {"gate", TARGET_BIT(ROLE_GATE)}, {"up", TARGET_BIT(ROLE_UP)},
    {"down", TARGET_BIT(ROLE_DOWN)}, {"head", TARGET_BIT(ROLE_LM_HEAD)},
};
#define N_TARGET_NAMES (sizeof target_names / sizeof target_names[0])

int targets_parse(const char *s, uint32_t *out)
{
    return targets_parse_with(s, NULL, 0, out);
}

int targets_parse_with(const char *s, const char *extra, uint32_t extra_bits, uint32_t *out)
{
    uint32_t bits = 0;
    while (*s) {
        size_t len = strcspn(s, "+");
        size_t i;
        for (i = 0; i < N_TARGET_NAMES; i++)
            if (strlen(target_names[i].name) == len && strncmp(target_names[i].name, s, len) == 0)
                break;
        if (i < N_TARGET_NAMES)
            bits |= target_names[i].bits;
        else if (extra && strlen(extra) == len && strncmp(extra, s, len) == 0)
            bits |= extra_bits;
        else
            return -1;
        s += len;
        if (*s == '+' && *++s == '\0')
            return -1;
    }
    if (!bits)
        return -1;
    *out = bits;
    return 0;
}

void targets_format(uint32_t targets, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    uint32_t left = targets;
    /* shorthands first, so "attn+mlp" prints as "all" */
    for (size_t i = 0; i < N_TARGET_NAMES && left; i++) {
        uint32_t b = target_names[i].bits;
        if ((left & b) != b)
            continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? "+" : "", target_names[i].name);
        if (w < 0 || (size_t)w >= n - used)
            return;
        used += (size_t)w;
        left &= ~b;
    }
}

/* The layout rules of the methods beyond LLMem; NULL when c keeps them. */
static const char *beyond_llmem_check(const struct train_config *c)
{
    const int32_t pp = train_pp(c);
    if (c->method != METHOD_PP && pp != 1)
        return "pipeline stages (pp > 1) need method pp";
    if ((c->method == METHOD_OFFLOAD) != (c->offload != OFFLOAD_NONE))
        return "offload keeps the optimizer (or parameters) in host memory: method offload only";
    switch (c->method) {
    case METHOD_ZERO1:
    case METHOD_ZERO2:
        if (c->tp != 1 || c->gpus < 2)
            return "zero1 and zero2 shard over data parallelism: 2 or more GPUs and tp 1";
        break;
    case METHOD_PP:
        if (pp < 2)
            return "pp needs 2 or more pipeline stages";
        break;
    case METHOD_OFFLOAD:
        if (c->tp != 1)
            return "offload is ZeRO-3 over data parallelism: tp 1";
        break;
    default:
        break;
    }
    /* LLMem's equations (--paper, the colossal stack) cover its five methods only */
    if (c->method >= METHOD_ZERO1 && c->stack == STACK_COLOSSAL)
        return "LLMem's equations (--paper, --stack colossal) cover single, cdp, adp, tp and dp+tp";
    return NULL;
}

/* How a stack splits a model for TP decides which degrees are valid.
 * colossal (LLMem's stack, and --paper): Colossal-AI's TP1D shards each weight along its
 * last dimension into tp equal parts (ShardSpec([-1], [tp]); hpcaitech/ColossalAI
 * examples/language/gpt/gemini/train_gpt_demo.py @01f884b6 tensor_parallelize, the setup
 * LLMem follows) and gathers the outputs, so heads are never split: tp must divide every
 * sharded width (hidden, the attention width heads x head_dim, the MLP width). That is why
 * the paper could run 4TP on BioGPT-Large (25 heads, hidden 1600) and santacoder (one KV
 * head).
 * Every other stack splits heads Megatron-style: Megatron-core's Attention takes
 * divide(num_attention_heads, tp) and divide(num_query_groups, tp) heads per rank
 * (megatron/core/transformer/attention.py; divide() asserts), torchtitan and HF's tp_plan
 * shard q/k/v column-wise by heads the same way. KV heads are not replicated in training;
 * replication when tp exceeds the KV heads is what inference engines do (vLLM's
 * QKVParallelLinear), not these stacks. */
const char *train_tp_check(const struct train_config *c, const struct model_spec *m)
{
    const int64_t tp = c->tp;
    if (tp <= 1)
        return NULL;
    if (c->stack == STACK_COLOSSAL) {
        if (m->hidden % tp || (m->heads * m->head_dim) % tp || m->intermediate % tp)
            return "tp must divide the hidden size, the attention width and the MLP width "
                   "(colossal: Colossal-AI TP1D splits every weight's last dimension)";
        return NULL;
    }
    if (m->heads % tp != 0 || m->kv_heads % tp != 0)
        return "tp must divide the attention heads and the KV heads (Megatron-style TP "
               "splits heads; only --stack colossal splits weights without regard to heads)";
    return NULL;
}

const char *train_config_check(const struct train_config *c, const struct model_spec *m)
{
    if (c->gpus < 1 || c->tp < 1 || c->dp < 1 || (int64_t)c->dp * c->tp * train_pp(c) != c->gpus)
        return "dp x tp x pp must equal the GPU count";
    switch (c->method) {
    case METHOD_SINGLE:
        if (c->gpus != 1)
            return "single runs on one GPU";
        break;
    case METHOD_CDP:
    case METHOD_ADP:
        if (c->tp != 1 || c->gpus < 2)
            return "data parallelism needs 2 or more GPUs and tp 1";
        break;
    case METHOD_TP:
        if (c->dp != 1 || c->gpus < 2)
            return "tensor parallelism needs 2 or more GPUs and dp 1";
        break;
    case METHOD_DPTP:
        if (c->dp < 2 || c->tp < 2)
            return "dp+tp needs dp > 1 and tp > 1";
        break;
    case METHOD_ZERO1:
    case METHOD_ZERO2:
    case METHOD_PP:
    case METHOD_OFFLOAD:
        break;
    default:
        return "unknown method";
    }
    const char *why = beyond_llmem_check(c);
    if (why)
        return why;
    const char *tp = train_tp_check(c, m);
    if (tp)
        return tp;
    /* ScheduleInterleaved1F1B: "Interleaved 1F1B requires the number of microbatches to be a
     * multiple of the number of pipeline ranks"; torchtitan's split needs a block a stage */
    if (train_pp_local(c) > 1 &&
        (c->stack != STACK_TORCHTITAN || train_microbatches(c) % train_pp(c) != 0 ||
         (int64_t)train_pp(c) * train_pp_local(c) > m->layers))
        return "the interleaved pipeline schedule is modelled for --stack torchtitan, with "
               "micro-batches a multiple of pp and a block for each of the 2 x pp stages";
    if (c->ep > 1 && (!model_is_moe(m) || c->dp % c->ep != 0 || m->experts % c->ep != 0 ||
                      c->method == METHOD_SINGLE || c->method == METHOD_TP))
        return "ep needs a MoE model, a data-parallel method, and must divide dp and the "
               "experts";
    if (c->micro_batch < 1 || c->seq_len < 1)
        return "micro-batch and sequence length must be positive";
    if (c->finetune == FT_FULL && (c->lora_r != 0 || c->quant != QUANT_NONE))
        return "full fine-tuning trains unquantized weights without LoRA";
    if (c->finetune != FT_FULL && (c->lora_r < 1 || c->lora_targets == 0))
        return "LoRA needs a rank and target modules";
    if (c->finetune == FT_QLORA && c->quant != QUANT_NF4 && c->quant != QUANT_NF4_DQ)
        return "qlora quantizes the base to nf4";
    return train_precision_check(c);
}

const char *train_precision_check(const struct train_config *c)
{
    /* torchao's float8 training swaps each trained nn.Linear for Float8Linear
     * (convert_to_float8_training; torchtitan's float8 converter): full training of the
     * block weights. A frozen or quantized base under LoRA/QLoRA is not what it converts. */
    if (c->precision == PREC_FP8 && c->finetune != FT_FULL)
        return "fp8 (torchao Float8Linear) is full training: not lora or qlora";
    if (c->precision == PREC_FP8 && c->stack == STACK_COLOSSAL)
        return "LLMem's equations (--paper, --stack colossal) have no float8 training";
    if ((c->features & (FEAT_FP8_ALLGATHER | FEAT_FP8_ROWWISE)) && c->precision != PREC_FP8)
        return "fp8-allgather and fp8-rowwise need --precision fp8";
    /* torchao: "float8 all-gather only supports tensorwise scaling" (Float8LinearConfig
     * __post_init__, torchao/float8/config.py) */
    if ((c->features & FEAT_FP8_ALLGATHER) && (c->features & FEAT_FP8_ROWWISE))
        return "float8 all-gather needs tensorwise scaling (torchao Float8LinearConfig)";
    return NULL;
}

/* torchtitan 9dec370 float8.py _is_sm89_or_later: "Float8 is only supported on SM89 or
 * later" (Ada, Hopper): torch._scaled_mm needs float8 tensor cores. */
const char *train_gpu_check(const struct train_config *c, const struct gpu_spec *g)
{
    if (g && c->precision == PREC_FP8 && !(g->fp8_tflops > 0))
        return "fp8 needs float8 tensor cores (SM 8.9 or later: Ada, Hopper, Blackwell); "
               "this GPU has none (gpus.csv fp8_tflops)";
    return NULL;
}

static const char *const ckpt_names[CKPT_COUNT] = {"off", "on", "selective"};

enum ckpt_mode train_ckpt_mode(const struct train_config *c)
{
    return c->grad_ckpt ? CKPT_ON : c->ckpt_selective ? CKPT_SELECTIVE : CKPT_OFF;
}

const char *ckpt_name(enum ckpt_mode m)
{
    return (int)m >= 0 && m < CKPT_COUNT ? ckpt_names[m] : "?";
}

const char *ckpt_mode_name(const struct train_config *c)
{
    return ckpt_name(train_ckpt_mode(c));
}

int ckpt_mode_parse(const char *s)
{
    for (int m = 0; m < CKPT_COUNT; m++)
        if (!strcmp(s, ckpt_names[m]))
            return m;
    return -1;
}

void train_set_ckpt(struct train_config *c, int mode)
{
    c->grad_ckpt = mode == CKPT_ON;
    c->ckpt_selective = mode == CKPT_SELECTIVE;
}
