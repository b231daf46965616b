/* hf_families.c: each supported model_type's config.json keys (the transformers
 * configuration class: src/transformers/models/<type>/configuration_<type>.py, v4.45+) and
 * the reader of the keys beyond the common dimensions. hf_config.c reads the file. */
#include <string.h>

#include "hf_reader.h"

static int opt_extra(struct reader *r);
static int bigcode_extra(struct reader *r);
static int neox_extra(struct reader *r);
static int llama_extra(struct reader *r);
static int gemma_extra(struct reader *r);
static int stablelm_extra(struct reader *r);
static int falcon_extra(struct reader *r);
static int qwen_extra(struct reader *r);
static int mpt_extra(struct reader *r);
static int mixtral_extra(struct reader *r);
static int qwen_moe_extra(struct reader *r);
static int deepseek_extra(struct reader *r);

/* One row per model.h supported type. Defaults cite the HF config class of that type. */
static const struct hf_class classes[] = {
    /* OPTConfig: learned positions, so max_position_embeddings is required. */
    {.type = "opt", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .intermediate = K1("ffn_dim"), .max_pos = KSTD_POS, .max_pos_default = -1,
     .extra = opt_extra},
    /* BloomConfig: n_layer/n_head with attribute_map aliases; "n_embed" kwarg overrides
     * hidden_size; BloomMLP is always 4*hidden; ALiBi, so no position table (seq_length,
     * when given, is the training length). */
    {.type = "bloom", .hidden = K2("hidden_size", "n_embed"),
     .layers = K2("n_layer", "num_hidden_layers"), .heads = K2("n_head", "num_attention_heads"),
     .ffn_4x = true, .max_pos = K1("seq_length"), .max_pos_default = 0},
    /* CodeGenConfig: n_inner None -> 4*n_embd (CodeGenBlock); n_positions default 2048. */
    {.type = "codegen", .hidden = K2("n_embd", "hidden_size"),
     .layers = K2("n_layer", "num_hidden_layers"), .heads = K2("n_head", "num_attention_heads"),
     .intermediate = K1("n_inner"), .ffn_4x = true,
     .max_pos = K2("n_positions", "max_position_embeddings"), .max_pos_default = 2048},
    /* BioGptConfig */
    {.type = "biogpt", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .intermediate = KSTD_FFN, .max_pos = KSTD_POS, .max_pos_default = -1},
    /* GPTBigCodeConfig: like GPT2Config, plus multi_query (default True). */
    {.type = "gpt_bigcode", .hidden = K2("n_embd", "hidden_size"),
     .layers = K2("n_layer", "num_hidden_layers"), .heads = K2("n_head", "num_attention_heads"),
     .intermediate = K1("n_inner"), .ffn_4x = true,
     .max_pos = K2("n_positions", "max_position_embeddings"), .max_pos_default = -1,
     .extra = bigcode_extra},
    /* GPTNeoConfig: num_layers/num_heads; intermediate_size None -> 4*hidden (GPTNeoBlock). */
    {.type = "gpt_neo", .hidden = KSTD_HIDDEN, .layers = K2("num_layers", "num_hidden_layers"),
     .heads = K2("num_heads", "num_attention_heads"), .intermediate = KSTD_FFN, .ffn_4x = true,
     .max_pos = KSTD_POS, .max_pos_default = -1},
    /* GPT2Config: n_inner None -> 4*n_embd (GPT2Block). */
    {.type = "gpt2", .hidden = K2("n_embd", "hidden_size"),
     .layers = K2("n_layer", "num_hidden_layers"), .heads = K2("n_head", "num_attention_heads"),
     .intermediate = K1("n_inner"), .ffn_4x = true,
     .max_pos = K2("n_positions", "max_position_embeddings"), .max_pos_default = -1},
    /* GPTNeoXConfig: max_position_embeddings default 2048. */
    {.type = "gpt_neox", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .intermediate = KSTD_FFN, .max_pos = KSTD_POS, .max_pos_default = 2048, .extra = neox_extra},
    /* LlamaConfig: num_key_value_heads None -> heads, head_dim None -> hidden/heads,
     * max_position_embeddings default 2048. */
    {.type = "llama", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 2048, .extra = llama_extra},
    /* MistralConfig: max_position_embeddings default 4096*32. Biases are hard-coded off in
     * modeling_mistral.py, so attention_bias is not read. */
    {.type = "mistral", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 131072},
    /* Qwen2Config: default 32768. Qwen2Attention hard-codes q/k/v bias on and o_proj
     * bias off (family defaults); the file has no key for them. */
    {.type = "qwen2", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 32768},
    /* QWenConfig (Qwen v1 remote code, configuration_qwen.py as shipped with Qwen-7B-Chat
     * from Sep 2023, copy at Palpitate-v/LLM4ADD@9abbf7c7): hidden_size, num_hidden_layers,
     * num_attention_heads, intermediate_size (22016), max_position_embeddings (default 8192),
     * kv_channels (default 128) = head width, since QWenAttention's projection_size is
     * kv_channels * num_attention_heads. The Aug 2023 files (undefdev/Qwen-7B-Chat@04df5dd5,
     * a mirror of the hub repo) use n_embd, n_layer, n_head, ffn_hidden_size and n_positions
     * (attribute_map aliases), read as fallbacks. qwen_extra halves the MLP width. */
    {.type = "qwen", .hidden = {"hidden_size", {"hidden_size", "n_embd", NULL}},
     .layers = {"num_hidden_layers", {"num_hidden_layers", "n_layer", NULL}},
     .heads = {"num_attention_heads", {"num_attention_heads", "n_head", NULL}},
     .intermediate = {"intermediate_size", {"intermediate_size", "ffn_hidden_size", NULL}},
     .max_pos = {"max_position_embeddings", {"max_position_embeddings", "n_positions", NULL}},
     .head_dim = K1("kv_channels"), .max_pos_default = 8192, .head_dim_default = 128,
     .extra = qwen_extra},
    /* GemmaConfig / Gemma2Config: head_dim default 256 (not hidden/heads: Gemma-7B has
     * 3072/16 = 192 but head_dim 256); max_position_embeddings default 8192. */
    {.type = "gemma", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 8192, .head_dim_default = 256,
     .extra = gemma_extra},
    {.type = "gemma2", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 8192, .head_dim_default = 256,
     .extra = gemma_extra},
    /* PhiConfig: default 2048. qk_layernorm=true adds two LayerNorm(head_dim) per layer,
     * which the tensor model leaves out (4*head_dim params a layer). */
    {.type = "phi", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS, .max_pos_default = 2048},
    /* Phi3Config: default 4096. */
    {.type = "phi3", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 4096},
    /* FalconConfig: "n_embed" kwarg overrides hidden_size; n_layer/n_head are the RW-era
     * names, read only as a fallback; ffn_hidden_size None -> 4*hidden; default 2048.
     * tie_word_embeddings default True (not overridden from PretrainedConfig): family. */
    {.type = "falcon", .hidden = K2("hidden_size", "n_embed"),
     .layers = {"num_hidden_layers", {"num_hidden_layers", "n_layer", NULL}},
     .heads = {"num_attention_heads", {"num_attention_heads", "n_head", NULL}},
     .intermediate = K1("ffn_hidden_size"), .ffn_4x = true, .max_pos = KSTD_POS,
     .max_pos_default = 2048, .extra = falcon_extra},
    /* StableLmConfig: default 4096. */
    {.type = "stablelm", .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS,
     .kv_heads = KSTD_KV, .intermediate = KSTD_FFN, .max_pos = KSTD_POS,
     .head_dim = K1("head_dim"), .max_pos_default = 4096, .extra = stablelm_extra},
    /* MptConfig: d_model/n_heads/n_layers (attribute_map aliases hidden_size, ...);
     * expansion_ratio (default 4) sets the MLP width (mpt_extra); ALiBi, so max_seq_len
     * (default 2048) is the training length, not a position table. */
    {.type = "mpt", .hidden = K2("d_model", "hidden_size"),
     .layers = K2("n_layers", "num_hidden_layers"), .heads = K2("n_heads", "num_attention_heads"),
     .ffn_4x = true, .max_pos = K1("max_seq_len"), .max_pos_default = 2048, .extra = mpt_extra},
    /* Qwen3Config (configuration_qwen3.py): head_dim default 128, max_position_embeddings
     * default 32768, attention_bias default False. */
    {.type = "qwen3", KSTD_DIMS,
     .head_dim = K1("head_dim"), .max_pos_default = 32768, .head_dim_default = 128,
     .extra = gemma_extra},
    /* Gemma3TextConfig: head_dim default 256, max_position_embeddings default 131072,
     * attention_bias default False. A "gemma3" file (Gemma3ForConditionalGeneration) is
     * read through its text_config (read_root). Sliding-window layers change neither the
     * parameters nor, under SDPA or eager attention, what autograd saves (the window is a
     * mask), so sliding_window and layer_types are not read. */
    {.type = "gemma3_text", KSTD_DIMS,
     .head_dim = K1("head_dim"), .max_pos_default = 131072, .head_dim_default = 256,
     .extra = gemma_extra},
    /* Olmo2Config: num_key_value_heads None -> heads, max_position_embeddings default 2048,
     * attention_bias default False. */
    {.type = "olmo2", KSTD_DIMS,
     .max_pos_default = 2048, .extra = gemma_extra},
    /* MixtralConfig: intermediate_size is each expert's width (there is no dense MLP);
     * max_position_embeddings default 4096 * 32. num_key_value_heads, absent, is taken as
     * the heads here (the class default is 8; every published file gives it). */
    {.type = "mixtral", KSTD_DIMS,
     .head_dim = K1("head_dim"), .max_pos_default = 131072, .extra = mixtral_extra},
    /* Qwen2MoeConfig / Qwen3MoeConfig: intermediate_size is the dense MLP of mlp_only_layers
     * (none in the published models); max_position_embeddings default 32768 (Qwen3-MoE
     * 32768 too), Qwen3MoeConfig head_dim default 128. */
    {.type = "qwen2_moe", KSTD_DIMS,
     .max_pos_default = 32768, .extra = qwen_moe_extra},
    {.type = "qwen3_moe", KSTD_DIMS,
     .head_dim = K1("head_dim"), .max_pos_default = 32768, .head_dim_default = 128,
     .extra = qwen_moe_extra},
    /* DeepseekV2Config / DeepseekV3Config: intermediate_size is the dense MLP of the first
     * first_k_dense_replace blocks; the attention is latent (deepseek_extra sets head_dim). */
    {.type = "deepseek_v2", KSTD_DIMS,
     .max_pos_default = 2048, .extra = deepseek_extra},
    {.type = "deepseek_v3", KSTD_DIMS,
     .max_pos_default = 4096, .extra = deepseek_extra},
};

const struct hf_class *hf_class_find(const char *type)
{
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(classes[i].type, type) == 0)
            return &classes[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Per-type extras (keys beyond the common dimensions)                                  */

static int opt_extra(struct reader *r)
{
    static const struct keyspec proj_key = K1("word_embed_proj_dim");
    struct model_spec *m = r->m;
    int64_t proj = 0;
    bool bias;
    /* OPTConfig: word_embed_proj_dim None -> hidden_size; when it differs (OPT-350m: 512
     * vs 1024) OPTDecoder adds project_in/project_out around the blocks. */
    if (hf_get_dim(r, &proj_key, 0, F_EMB_DIM, &proj) != 0)
        return -1;
    if (proj != 0 && proj != m->hidden)
        m->emb_dim = proj;
    /* OPTConfig.enable_bias (default True) switches the biases of every block Linear. */
    if (hf_get_bool(r, "enable_bias", m->qkv_bias, &bias) != 0)
        return -1;
    m->qkv_bias = m->o_bias = m->mlp_bias = bias;
    /* do_layer_norm_before=false (OPT-350m) makes OPTDecoder drop final_layer_norm. The
     * tensor model keeps it: 2*hidden = 2048 params, 0.0006% of OPT-350m. Not read. */
    return 0;
}

static int bigcode_extra(struct reader *r)
{
    bool mq;
    /* GPTBigCodeConfig.multi_query (default True): one shared k/v head (c_attn is
     * hidden -> hidden + 2*head_dim). */
    if (hf_get_bool(r, "multi_query", true, &mq) != 0)
        return -1;
    if (mq) {
        r->m->kv_heads = 1;
        r->src[F_KV_HEADS] = "multi_query";
    }
    return 0;
}

static int neox_extra(struct reader *r)
{
    bool bias;
    /* GPTNeoXConfig.attention_bias (default True): query_key_value and dense biases. */
    if (hf_get_bool(r, "attention_bias", r->m->qkv_bias, &bias) != 0)
        return -1;
    r->m->qkv_bias = r->m->o_bias = bias;
    return 0;
}

static int llama_extra(struct reader *r)
{
    bool attn, mlp;
    /* LlamaConfig.attention_bias (q/k/v/o_proj) and mlp_bias (gate/up/down), both False. */
    if (hf_get_bool(r, "attention_bias", r->m->qkv_bias, &attn) != 0 ||
        hf_get_bool(r, "mlp_bias", r->m->mlp_bias, &mlp) != 0)
        return -1;
    r->m->qkv_bias = r->m->o_bias = attn;
    r->m->mlp_bias = mlp;
    return 0;
}

static int gemma_extra(struct reader *r)
{
    bool attn;
    /* GemmaConfig / Gemma2Config / Gemma3TextConfig / Qwen3Config / Olmo2Config
     * .attention_bias (default False): q/k/v/o biases; the MLP has no bias. */
    if (hf_get_bool(r, "attention_bias", r->m->qkv_bias, &attn) != 0)
        return -1;
    r->m->qkv_bias = r->m->o_bias = attn;
    /* attn_logit_softcapping: a number turns the scores' tanh softcapping on, null off;
     * absent keeps the family default (on for gemma2) */
    json_t *cap = json_object_get(r->root, "attn_logit_softcapping");
    if (cap)
        r->m->attn_softcap = json_is_number(cap) && json_number_value(cap) > 0;
    return 0;
}

static int stablelm_extra(struct reader *r)
{
    bool qkv, parallel;
    /* StableLmConfig.use_qkv_bias (default False). use_parallel_residual (default False)
     * drops post_attention_layernorm (StableLmDecoderLayer). qk_layernorm's per-head norms
     * are left out of the tensor model. */
    if (hf_get_bool(r, "use_qkv_bias", r->m->qkv_bias, &qkv) != 0 ||
        hf_get_bool(r, "use_parallel_residual", false, &parallel) != 0)
        return -1;
    r->m->qkv_bias = qkv;
    if (parallel)
        r->m->norms_per_layer = 1;
    return 0;
}

static int qwen_extra(struct reader *r)
{
    struct model_spec *m = r->m;
    bool no_bias;
    /* QWenMLP: w1 and w2 are nn.Linear(hidden, intermediate_size // 2) and c_proj maps
     * intermediate_size // 2 back to hidden, so the config's 22016 is twice the MLP width
     * (11008 for Qwen-7B; modeling_qwen.py at modelscope/ms-swift@cb89d919, QWenMLP; the
     * Aug 2023 file divides ffn_hidden_size the same way, undefdev/Qwen-7B-Chat@04df5dd5). */
    m->intermediate /= 2;
    /* QWenConfig.no_bias (default True) removes the biases of attn.c_proj, w1, w2 and
     * mlp.c_proj; c_attn always has one (nn.Linear's default bias=True). */
    if (hf_get_bool(r, "no_bias", true, &no_bias) != 0)
        return -1;
    m->o_bias = m->mlp_bias = !no_bias;
    return 0;
}

/* FalconAttention: num_kv_heads is used with new_decoder_architecture or without
 * multi_query; otherwise one k/v head. FalconConfig: num_kv_heads None -> heads. */
static int falcon_kv(struct reader *r, bool new_arch)
{
    static const struct keyspec kv_key = K1("num_kv_heads");
    bool mq;
    int64_t kv = 0;
    if (hf_get_bool(r, "multi_query", true, &mq) != 0 ||
        hf_get_dim(r, &kv_key, r->m->heads, F_KV_HEADS, &kv) != 0)
        return -1;
    if (new_arch || !mq) {
        r->m->kv_heads = kv;
    } else {
        r->m->kv_heads = 1;
        r->src[F_KV_HEADS] = "multi_query";
    }
    return 0;
}

/* FalconDecoderLayer: without parallel_attn, input + post-attention norms; with it,
 * ln_attn + ln_mlp when num_ln_in_parallel_attn is 2 (None -> 2 under
 * new_decoder_architecture), else one shared input_layernorm (Falcon-7B). */
static int falcon_norms(struct reader *r, bool new_arch)
{
    static const struct keyspec ln_key = K1("num_ln_in_parallel_attn");
    bool parallel;
    int64_t n_ln = 0;
    if (hf_get_bool(r, "parallel_attn", true, &parallel) != 0 ||
        hf_get_dim(r, &ln_key, new_arch ? 2 : 0, F_NORMS, &n_ln) != 0)
        return -1;
    r->m->norms_per_layer = (!parallel || n_ln == 2) ? 2 : 1;
    return 0;
}

static int falcon_extra(struct reader *r)
{
    struct model_spec *m = r->m;
    bool new_arch, bias, alibi;
    /* FalconConfig: new_decoder_architecture False, bias False (every Linear but
     * lm_head), alibi False (rotary otherwise). */
    if (hf_get_bool(r, "new_decoder_architecture", false, &new_arch) != 0 ||
        hf_get_bool(r, "bias", false, &bias) != 0 || hf_get_bool(r, "alibi", false, &alibi) != 0 ||
        falcon_kv(r, new_arch) != 0 || falcon_norms(r, new_arch) != 0)
        return -1;
    m->qkv_bias = m->o_bias = m->mlp_bias = bias;
    if (alibi)
        m->pos = POS_ALIBI;
    return 0;
}

static int mpt_extra(struct reader *r)
{
    static const struct keyspec ratio_key = K1("expansion_ratio");
    struct model_spec *m = r->m;
    int64_t ratio;
    bool no_bias;
    /* MptMLP: up_proj is d_model -> expansion_ratio * d_model (default 4); no_bias (default
     * True) removes the bias of every Linear. */
    if (hf_get_dim(r, &ratio_key, 4, F_INTERMEDIATE, &ratio) != 0 ||
        hf_get_bool(r, "no_bias", true, &no_bias) != 0)
        return -1;
    m->intermediate = ratio * m->hidden;
    m->qkv_bias = m->o_bias = m->mlp_bias = !no_bias;
    return 0;
}

/* A count that may be 0 (n_shared_experts, first_k_dense_replace): absent or null gives
 * dflt; otherwise an integer from 0 to 2^24. */
static int get_count(struct reader *r, const char *key, int64_t dflt, enum field f,
                     int64_t *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) == 0) {
        *out = 0;
        r->src[f] = key;
        return 0;
    }
    const struct keyspec k = {key, {key, NULL, NULL}};
    return hf_get_dim(r, &k, dflt, f, out);
}

/* Layer patterns the tensor model does not express: every block from dense_layers on is
 * MoE. decoder_sparse_step / moe_layer_freq other than 1 and a non-empty mlp_only_layers
 * (none in the published Qwen and DeepSeek models) are refused with the key named. */
static int moe_every_layer(struct reader *r, const char *step_key)
{
    json_t *v = json_object_get(r->root, step_key);
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1)) {
        hf_set_err(r->err, step_key, "key \"%s\" other than 1 (MoE only in some blocks) is not "
                "supported", step_key);
        return -1;
    }
    v = json_object_get(r->root, "mlp_only_layers");
    if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0)) {
        hf_set_err(r->err, "mlp_only_layers", "key \"mlp_only_layers\" must be empty: dense "
                "blocks among MoE blocks are not supported");
        return -1;
    }
    return 0;
}

static int read_topk(struct reader *r, const char *experts_key, int64_t experts_default)
{
    static const struct keyspec topk_key = K1("num_experts_per_tok");
    struct keyspec ek = {experts_key, {experts_key, NULL, NULL}};
    return hf_get_dim(r, &ek, experts_default, F_EXPERTS, &r->m->experts) != 0 ||
                   hf_get_dim(r, &topk_key, 2, F_TOPK, &r->m->experts_per_tok) != 0
               ? -1
               : 0;
}

static int mixtral_extra(struct reader *r)
{
    /* MixtralConfig: num_local_experts default 8, num_experts_per_tok default 2; every
     * block is MoE (MixtralDecoderLayer.block_sparse_moe) with experts of
     * intermediate_size. Biases are hard-coded off. */
    if (read_topk(r, "num_local_experts", 8) != 0)
        return -1;
    r->m->moe_intermediate = r->m->intermediate;
    r->src[F_MOE_INTER] = r->src[F_INTERMEDIATE];
    return 0;
}

static int qwen_moe_extra(struct reader *r)
{
    static const struct keyspec moe_key = K1("moe_intermediate_size");
    struct model_spec *m = r->m;
    bool attn = m->qkv_bias;
    /* Qwen2MoeConfig: num_experts 60, num_experts_per_tok 4, moe_intermediate_size 1408,
     * shared_expert_intermediate_size 5632 (Qwen2MoeSparseMoeBlock: shared_expert MLP and
     * shared_expert_gate Linear(hidden, 1)). Qwen3MoeConfig: num_experts 128,
     * num_experts_per_tok 8, moe_intermediate_size 768, no shared expert, attention_bias. */
    const bool v2 = strcmp(m->model_type, "qwen2_moe") == 0;
    if (read_topk(r, "num_experts", v2 ? 60 : 128) != 0 ||
        hf_get_dim(r, &moe_key, v2 ? 1408 : 768, F_MOE_INTER, &m->moe_intermediate) != 0 ||
        moe_every_layer(r, "decoder_sparse_step") != 0)
        return -1;
    if (v2 && get_count(r, "shared_expert_intermediate_size", 5632, F_SHARED,
                        &m->shared_intermediate) != 0)
        return -1;
    m->shared_gate = m->shared_intermediate > 0;
    if (!v2 && hf_get_bool(r, "attention_bias", false, &attn) != 0)
        return -1;
    m->qkv_bias = attn;
    m->o_bias = v2 ? false : attn;
    return 0;
}

/* q_lora_rank: null means no query compression (DeepSeek-V2-Lite); absent, the class
 * default 1536 (DeepseekV2Config and DeepseekV3Config). */
static int read_q_lora(struct reader *r)
{
    json_t *v = json_object_get(r->root, "q_lora_rank");
    static const struct keyspec k = K1("q_lora_rank");
    if (v && json_is_null(v)) {
        r->m->q_lora_rank = 0;
        return 0;
    }
    return hf_get_dim(r, &k, 1536, F_KV_LORA, &r->m->q_lora_rank);
}

static int deepseek_extra(struct reader *r)
{
    static const struct keyspec moe_key = K1("moe_intermediate_size"),
                                kv_key = K1("kv_lora_rank"), nope_key = K1("qk_nope_head_dim"),
                                rope_key = K1("qk_rope_head_dim"), v_key = K1("v_head_dim");
    struct model_spec *m = r->m;
    int64_t shared = 0, nope = 0;
    bool attn;
    /* DeepseekV2MoE: n_routed_experts experts of moe_intermediate_size, num_experts_per_tok
     * of them a token, shared_experts = one MLP of moe_intermediate_size * n_shared_experts;
     * blocks below first_k_dense_replace keep the dense MLP (DeepseekV2DecoderLayer). The
     * MoE keys are required: the published files all give them. */
    if (read_topk(r, "n_routed_experts", -1) != 0 ||
        hf_get_dim(r, &moe_key, -1, F_MOE_INTER, &m->moe_intermediate) != 0 ||
        get_count(r, "n_shared_experts", 0, F_SHARED, &shared) != 0 ||
        get_count(r, "first_k_dense_replace", 0, F_DENSE, &m->dense_layers) != 0 ||
        moe_every_layer(r, "moe_layer_freq") != 0 || read_q_lora(r) != 0 ||
        hf_get_dim(r, &kv_key, -1, F_KV_LORA, &m->kv_lora_rank) != 0 ||
        hf_get_dim(r, &nope_key, -1, F_HEAD_DIM, &nope) != 0 ||
        hf_get_dim(r, &rope_key, -1, F_KV_LORA, &m->qk_rope_dim) != 0 ||
        hf_get_dim(r, &v_key, -1, F_KV_LORA, &m->v_head_dim) != 0 ||
        hf_get_bool(r, "attention_bias", false, &attn) != 0)
        return -1;
    m->shared_intermediate = shared * m->moe_intermediate;
    m->head_dim = nope + m->qk_rope_dim; /* the query/key head */
    m->kv_heads = m->heads;              /* every head gets its own k and v from the latent */
    m->qkv_bias = attn;                  /* q_a_proj and kv_a_proj_with_mqa */
    m->o_bias = attn;
    return 0;
}
