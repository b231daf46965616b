/* hf_config.c: a HuggingFace config.json -> struct model_spec, with jansson.
 *
 * Key names and class defaults follow the transformers configuration classes
 * (src/transformers/models/<type>/configuration_<type>.py, v4.45+); what the modelling code
 * fixes regardless of the file comes from model_family_defaults() (model.c). */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: stat, realpath, strerror_r */

#include "hf_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* Same bound as model_check's DIM_MAX: larger dimensions are certainly a broken file. */
#define DIM_LIMIT (INT64_C(1) << 24)
#define PATH_BUF 4096

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */

/* strlcpy: copies what fits, always terminates (long paths are cut, on purpose). */
static void copy_str(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void err_init(struct input_error *err, const char *file)
{
    memset(err, 0, sizeof *err);
    err->code = EXIT_BAD_INPUT;
    copy_str(err->file, sizeof err->file, file ? file : "<buffer>");
}

static void set_err(struct input_error *err, const char *key, const char *fmt, ...) PRINTF_LIKE(3, 4);

static void set_err(struct input_error *err, const char *key, const char *fmt, ...)
{
    va_list ap;
    copy_str(err->field, sizeof err->field, key ? key : "");
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

/* What a bad value is, for "must be ..., not <what>". */
static void describe(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(buf, n, "a string");
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_object(v))
        snprintf(buf, n, "an object");
    else
        snprintf(buf, n, "an array");
}

/* ------------------------------------------------------------------------------------ */
/* Infinity / NaN pre-pass                                                              */

static bool ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* Length of a bare Infinity, -Infinity or NaN token at s[i], else 0. */
static size_t nonfinite_len(const char *s, size_t len, size_t i)
{
    static const char *const tokens[] = {"-Infinity", "Infinity", "NaN"};
    if (i > 0 && ident_char(s[i - 1]))
        return 0;
    for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
        size_t n = strlen(tokens[t]);
        if (len - i >= n && memcmp(s + i, tokens[t], n) == 0 &&
            (i + n == len || !ident_char(s[i + n])))
            return n;
    }
    return 0;
}

/* Python's json module writes Infinity and NaN by default and real configs carry them
 * (Mamba2 / Nemotron-H "time_step_limit": [0.0, Infinity]; transformers PR #42959), but
 * jansson rejects them. Outside strings they become null; (-)Infinity is padded with
 * spaces so later columns in error messages stay true. The memory model reads none of
 * those fields. Returns a malloc'ed copy, or NULL when memory runs out. */
static char *replace_nonfinite(const char *s, size_t len, size_t *out_len)
{
    char *out = malloc(len + len / 3 + 1); /* each 3-byte NaN grows by one */
    size_t o = 0, i = 0;
    bool in_string = false;
    if (!out)
        return NULL;
    while (i < len) {
        char ch = s[i];
        size_t n = in_string ? 0 : nonfinite_len(s, len, i);
        if (n) {
            memcpy(out + o, "null", 4);
            o += 4;
            for (size_t pad = 4; pad < n; pad++)
                out[o++] = ' ';
            i += n;
            continue;
        }
        out[o++] = ch;
        i++;
        if (in_string && ch == '\\' && i < len)
            out[o++] = s[i++]; /* the escaped byte, so \" does not end the string */
        else if (ch == '"')
            in_string = !in_string;
    }
    *out_len = o;
    return out;
}

/* ------------------------------------------------------------------------------------ */
/* Per-class key tables                                                                 */

enum field {
    F_LAYERS, F_HIDDEN, F_HEADS, F_KV_HEADS, F_HEAD_DIM, F_INTERMEDIATE, F_VOCAB, F_MAX_POS,
    F_EMB_DIM, F_NORMS, F_EXPERTS, F_TOPK, F_MOE_INTER, F_SHARED, F_DENSE, F_KV_LORA, F_COUNT
};

/* model_check()'s names for the fields above. */
static const char *const field_names[F_COUNT] = {
    "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "max_pos",
    "emb_dim", "norms_per_layer", "experts", "experts_per_tok", "moe_intermediate",
    "shared_intermediate", "dense_layers", "kv_lora_rank",
};

/* Where one dimension lives in a config class. name: the class attribute, named in a
 * "missing key" error. look: the keys tried, first hit wins; PretrainedConfig applies
 * attribute_map aliases (gpt2 "hidden_size" -> n_embd) and legacy kwargs (bloom and falcon
 * "n_embed") after the attribute itself, so those come first. An empty spec (name NULL)
 * means the class has no such key. */
struct keyspec {
    const char *name;
    const char *look[3];
};

#define K1(a) {a, {a, NULL, NULL}}
#define K2(attr, alias) {attr, {alias, attr, NULL}}
#define KSTD_HIDDEN K1("hidden_size")
#define KSTD_LAYERS K1("num_hidden_layers")
#define KSTD_HEADS K1("num_attention_heads")
#define KSTD_KV K1("num_key_value_heads")
#define KSTD_FFN K1("intermediate_size")
#define KSTD_POS K1("max_position_embeddings")
/* The six keys of the Llama-like config classes */
#define KSTD_DIMS                                                                          \
    .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS, .kv_heads = KSTD_KV, \
    .intermediate = KSTD_FFN, .max_pos = KSTD_POS

struct reader {
    json_t *root;
    struct model_spec *m;
    struct input_error *err;
    const char *src[F_COUNT]; /* the key each dimension came from, for model_check errors */
};

struct hf_class {
    const char *type;
    struct keyspec hidden, layers, heads, kv_heads, intermediate, max_pos, head_dim;
    bool ffn_4x;             /* intermediate absent or null means 4 * hidden */
    int64_t max_pos_default; /* the class default when the key is absent; -1: required */
    int64_t head_dim_default; /* when head_dim is absent or null; 0: hidden / heads */
    int (*extra)(struct reader *r);
};

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

static const struct hf_class *find_class(const char *type)
{
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(classes[i].type, type) == 0)
            return &classes[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Typed getters                                                                        */

/* The first non-null value among k's keys; *found names it. */
static json_t *lookup(const struct reader *r, const struct keyspec *k, const char **found)
{
    for (size_t i = 0; i < sizeof k->look / sizeof k->look[0] && k->look[i]; i++) {
        json_t *v = json_object_get(r->root, k->look[i]);
        if (v && !json_is_null(v)) {
            *found = k->look[i];
            return v;
        }
    }
    return NULL;
}

/* A dimension: an integer in [1, 2^24]; an integral real (4096.0) is accepted too. */
static bool to_dim(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 1 || i > DIM_LIMIT)
            return false;
        *out = (int64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 1.0 && d <= (double)DIM_LIMIT) || d != (double)(int64_t)d)
            return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

static void missing_key(struct reader *r, const struct keyspec *k)
{
    const char *alt = NULL;
    for (size_t i = 0; i < sizeof k->look / sizeof k->look[0] && k->look[i]; i++)
        if (strcmp(k->look[i], k->name) != 0)
            alt = k->look[i];
    if (alt)
        set_err(r->err, k->name, "missing key \"%s\" (or \"%s\")", k->name, alt);
    else
        set_err(r->err, k->name, "missing key \"%s\"", k->name);
}

/* Reads dimension f from k into *out. Absent or null: dflt, or an error when dflt < 0.
 * A spec with no key always gives dflt. */
static int get_dim(struct reader *r, const struct keyspec *k, int64_t dflt, enum field f,
                   int64_t *out)
{
    const char *key = NULL;
    json_t *v = k->name ? lookup(r, k, &key) : NULL;
    if (!v) {
        if (dflt < 0 && k->name) {
            missing_key(r, k);
            return -1;
        }
        *out = dflt;
        return 0;
    }
    if (!to_dim(v, out)) {
        char what[48];
        describe(v, what, sizeof what);
        set_err(r->err, key, "key \"%s\" must be an integer from 1 to %lld, not %s", key,
                (long long)DIM_LIMIT, what);
        return -1;
    }
    r->src[f] = key;
    return 0;
}

/* A boolean key; absent or null gives dflt. */
static int get_bool(struct reader *r, const char *key, bool dflt, bool *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) {
        char what[48];
        describe(v, what, sizeof what);
        set_err(r->err, key, "key \"%s\" must be true or false, not %s", key, what);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
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
    if (get_dim(r, &proj_key, 0, F_EMB_DIM, &proj) != 0)
        return -1;
    if (proj != 0 && proj != m->hidden)
        m->emb_dim = proj;
    /* OPTConfig.enable_bias (default True) switches the biases of every block Linear. */
    if (get_bool(r, "enable_bias", m->qkv_bias, &bias) != 0)
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
    if (get_bool(r, "multi_query", true, &mq) != 0)
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
    if (get_bool(r, "attention_bias", r->m->qkv_bias, &bias) != 0)
        return -1;
    r->m->qkv_bias = r->m->o_bias = bias;
    return 0;
}

static int llama_extra(struct reader *r)
{
    bool attn, mlp;
    /* LlamaConfig.attention_bias (q/k/v/o_proj) and mlp_bias (gate/up/down), both False. */
    if (get_bool(r, "attention_bias", r->m->qkv_bias, &attn) != 0 ||
        get_bool(r, "mlp_bias", r->m->mlp_bias, &mlp) != 0)
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
    if (get_bool(r, "attention_bias", r->m->qkv_bias, &attn) != 0)
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
    if (get_bool(r, "use_qkv_bias", r->m->qkv_bias, &qkv) != 0 ||
        get_bool(r, "use_parallel_residual", false, &parallel) != 0)
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
    if (get_bool(r, "no_bias", true, &no_bias) != 0)
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
    if (get_bool(r, "multi_query", true, &mq) != 0 ||
        get_dim(r, &kv_key, r->m->heads, F_KV_HEADS, &kv) != 0)
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
    if (get_bool(r, "parallel_attn", true, &parallel) != 0 ||
        get_dim(r, &ln_key, new_arch ? 2 : 0, F_NORMS, &n_ln) != 0)
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
    if (get_bool(r, "new_decoder_architecture", false, &new_arch) != 0 ||
        get_bool(r, "bias", false, &bias) != 0 || get_bool(r, "alibi", false, &alibi) != 0 ||
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
    if (get_dim(r, &ratio_key, 4, F_INTERMEDIATE, &ratio) != 0 ||
        get_bool(r, "no_bias", true, &no_bias) != 0)
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
    return get_dim(r, &k, dflt, f, out);
}

/* Layer patterns the tensor model does not express: every block from dense_layers on is
 * MoE. decoder_sparse_step / moe_layer_freq other than 1 and a non-empty mlp_only_layers
 * (none in the published Qwen and DeepSeek models) are refused with the key named. */
static int moe_every_layer(struct reader *r, const char *step_key)
{
    json_t *v = json_object_get(r->root, step_key);
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1)) {
        set_err(r->err, step_key, "key \"%s\" other than 1 (MoE only in some blocks) is not "
                "supported", step_key);
        return -1;
    }
    v = json_object_get(r->root, "mlp_only_layers");
    if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0)) {
        set_err(r->err, "mlp_only_layers", "key \"mlp_only_layers\" must be empty: dense "
                "blocks among MoE blocks are not supported");
        return -1;
    }
    return 0;
}

static int read_topk(struct reader *r, const char *experts_key, int64_t experts_default)
{
    static const struct keyspec topk_key = K1("num_experts_per_tok");
    struct keyspec ek = {experts_key, {experts_key, NULL, NULL}};
    return get_dim(r, &ek, experts_default, F_EXPERTS, &r->m->experts) != 0 ||
                   get_dim(r, &topk_key, 2, F_TOPK, &r->m->experts_per_tok) != 0
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
        get_dim(r, &moe_key, v2 ? 1408 : 768, F_MOE_INTER, &m->moe_intermediate) != 0 ||
        moe_every_layer(r, "decoder_sparse_step") != 0)
        return -1;
    if (v2 && get_count(r, "shared_expert_intermediate_size", 5632, F_SHARED,
                        &m->shared_intermediate) != 0)
        return -1;
    m->shared_gate = m->shared_intermediate > 0;
    if (!v2 && get_bool(r, "attention_bias", false, &attn) != 0)
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
    return get_dim(r, &k, 1536, F_KV_LORA, &r->m->q_lora_rank);
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
        get_dim(r, &moe_key, -1, F_MOE_INTER, &m->moe_intermediate) != 0 ||
        get_count(r, "n_shared_experts", 0, F_SHARED, &shared) != 0 ||
        get_count(r, "first_k_dense_replace", 0, F_DENSE, &m->dense_layers) != 0 ||
        moe_every_layer(r, "moe_layer_freq") != 0 || read_q_lora(r) != 0 ||
        get_dim(r, &kv_key, -1, F_KV_LORA, &m->kv_lora_rank) != 0 ||
        get_dim(r, &nope_key, -1, F_HEAD_DIM, &nope) != 0 ||
        get_dim(r, &rope_key, -1, F_KV_LORA, &m->qk_rope_dim) != 0 ||
        get_dim(r, &v_key, -1, F_KV_LORA, &m->v_head_dim) != 0 ||
        get_bool(r, "attention_bias", false, &attn) != 0)
        return -1;
    m->shared_intermediate = shared * m->moe_intermediate;
    m->head_dim = nope + m->qk_rope_dim; /* the query/key head */
    m->kv_heads = m->heads;              /* every head gets its own k and v from the latent */
    m->qkv_bias = attn;                  /* q_a_proj and kv_a_proj_with_mqa */
    m->o_bias = attn;
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* The reader                                                                           */

static void unsupported_type(struct input_error *err, const char *type)
{
    char list[400] = "", shown[48];
    size_t used = 0;
    for (size_t i = 0; model_supported_types[i] && used < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                         model_supported_types[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    text_printable(type, shown, sizeof shown); /* a hostile file sends no terminal escapes */
    set_err(err, "model_type", "unsupported model_type \"%s\" (supported: %s)", shown, list);
}

/* model_type -> family defaults and the key table. */
static int read_type(struct reader *r, const struct hf_class **cls)
{
    json_t *t = json_object_get(r->root, "model_type");
    if (!t) {
        set_err(r->err, "model_type", "missing key \"model_type\"");
        return -1;
    }
    if (!json_is_string(t)) {
        set_err(r->err, "model_type", "key \"model_type\" must be a string");
        return -1;
    }
    /* Gemma3Config (Gemma3ForConditionalGeneration) keeps the language model's dimensions
     * in text_config, a Gemma3TextConfig */
    *cls = find_class(strcmp(json_string_value(t), "gemma3") == 0 ? "gemma3_text"
                                                                   : json_string_value(t));
    if (!*cls || !model_family_defaults(json_string_value(t), r->m)) {
        unsupported_type(r->err, json_string_value(t));
        return -1;
    }
    return 0;
}

/* Gemma3ForConditionalGeneration: the text part is what a causal-LM fine-tune trains
 * (Gemma3ForCausalLM loads it alone); the vision tower and projector are not counted. */
static int multimodal_text(struct reader *r)
{
    json_t *text;
    if (strcmp(r->m->model_type, "gemma3") != 0)
        return 0;
    text = json_object_get(r->root, "text_config");
    if (!json_is_object(text)) {
        set_err(r->err, "text_config", text ? "key \"text_config\" must be an object"
                                             : "missing key \"text_config\"");
        return -1;
    }
    r->root = text;
    return 0;
}

static void read_name(struct reader *r, const char *fallback)
{
    json_t *v = json_object_get(r->root, "_name_or_path");
    const char *name = json_is_string(v) ? json_string_value(v) : "";
    copy_str(r->m->name, sizeof r->m->name, *name ? name : fallback);
}

/* head_dim: the key, else the class default, else hidden / heads, which HF classes that
 * derive it require to divide (e.g. GPTNeoXAttention, BloomAttention raise otherwise). */
static int read_head_dim(struct reader *r, const struct hf_class *c)
{
    struct model_spec *m = r->m;
    if (get_dim(r, &c->head_dim, 0, F_HEAD_DIM, &m->head_dim) != 0)
        return -1;
    if (m->head_dim == 0)
        m->head_dim = c->head_dim_default;
    if (m->head_dim != 0)
        return 0;
    if (m->hidden % m->heads != 0) {
        set_err(r->err, r->src[F_HEADS], "%s %lld is not divisible by %s %lld",
                r->src[F_HIDDEN], (long long)m->hidden, r->src[F_HEADS], (long long)m->heads);
        return -1;
    }
    m->head_dim = m->hidden / m->heads;
    r->src[F_HEAD_DIM] = r->src[F_HEADS];
    return 0;
}

static int read_dims(struct reader *r, const struct hf_class *c)
{
    static const struct keyspec vocab_key = K1("vocab_size");
    struct model_spec *m = r->m;
    if (get_dim(r, &vocab_key, -1, F_VOCAB, &m->vocab) != 0 ||
        get_dim(r, &c->hidden, -1, F_HIDDEN, &m->hidden) != 0 ||
        get_dim(r, &c->layers, -1, F_LAYERS, &m->layers) != 0 ||
        get_dim(r, &c->heads, -1, F_HEADS, &m->heads) != 0 ||
        get_dim(r, &c->kv_heads, m->heads, F_KV_HEADS, &m->kv_heads) != 0 ||
        get_dim(r, &c->intermediate, c->ffn_4x ? 4 * m->hidden : -1, F_INTERMEDIATE,
                &m->intermediate) != 0 ||
        get_dim(r, &c->max_pos, c->max_pos_default, F_MAX_POS, &m->max_pos) != 0)
        return -1;
    /* Derived dimensions blame the keys they derive from. */
    if (!r->src[F_KV_HEADS])
        r->src[F_KV_HEADS] = r->src[F_HEADS];
    if (!r->src[F_INTERMEDIATE])
        r->src[F_INTERMEDIATE] = c->intermediate.name ? c->intermediate.name : r->src[F_HIDDEN];
    return read_head_dim(r, c);
}

/* tie_word_embeddings, absent: the family default, which is the config class default
 * (PretrainedConfig's True unless the class overrides it, e.g. LlamaConfig False).
 * dtype (transformers >= 4.56) and torch_dtype are informational and not read. */
static int read_flags(struct reader *r)
{
    return get_bool(r, "tie_word_embeddings", r->m->tied, &r->m->tied);
}

/* model_check's verdict, reported against the config key the bad field came from. */
static int check_spec(struct reader *r)
{
    const char *bad = model_check(r->m);
    const char *key;
    if (!bad)
        return 0;
    key = bad;
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(field_names[f], bad) == 0 && r->src[f])
            key = r->src[f];
    set_err(r->err, key, "dimensions do not fit together: %s (key \"%s\") is out of range or "
            "does not divide the others", bad, key);
    return -1;
}

static int read_root(json_t *root, const char *fallback_name, struct model_spec *m,
                     struct input_error *err)
{
    struct reader r = {.root = root, .m = m, .err = err};
    const struct hf_class *c = NULL;
    if (!json_is_object(root)) {
        set_err(err, "", "the top level must be a JSON object");
        return -1;
    }
    if (read_type(&r, &c) != 0)
        return -1;
    read_name(&r, fallback_name);
    if (multimodal_text(&r) != 0)
        return -1;
    if (read_dims(&r, c) != 0 || read_flags(&r) != 0 || (c->extra && c->extra(&r) != 0))
        return -1;
    return check_spec(&r);
}

static void syntax_error(struct input_error *err, const json_error_t *je)
{
    err->line = je->line > 0 ? je->line : 0;
    if (json_error_code(je) == json_error_duplicate_key) {
        /* jansson says: duplicate object key near '"name"' */
        const char *q = strstr(je->text, "'\"");
        char key[64] = "";
        if (q) {
            size_t n = strcspn(q + 2, "\"");
            snprintf(key, sizeof key, "%.*s", (int)(n < sizeof key ? n : sizeof key - 1),
                     q + 2);
        }
        set_err(err, key, "duplicate key \"%s\"", key);
        return;
    }
    if (je->column > 0)
        set_err(err, "", "invalid JSON at column %d: %s", je->column, je->text);
    else
        set_err(err, "", "invalid JSON: %s", je->text);
}

/* The line of a key's first `"key":` in the text, for errors about its value (jansson keeps
 * no positions); 0 when the key is not there (a missing key has no line). */
static long key_line(const char *buf, size_t len, const char *key)
{
    size_t k = strlen(key);
    long line = 1;
    for (size_t i = 0; k && i + k + 2 <= len; i++) {
        if (buf[i] == '\n')
            line++;
        if (buf[i] != '"' || memcmp(buf + i + 1, key, k) != 0 || buf[i + 1 + k] != '"')
            continue;
        size_t j = i + k + 2;
        while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\r' || buf[j] == '\n'))
            j++;
        if (j < len && buf[j] == ':')
            return line;
    }
    return 0;
}

/* Parses len bytes; err->file is already set. */
static int parse_buffer(const char *buf, size_t len, const char *fallback_name,
                        struct model_spec *m, struct input_error *err)
{
    struct model_spec spec = {0};
    json_error_t je;
    size_t clean_len = 0;
    char *clean;
    json_t *root;
    int rc;
    if (len > HF_CONFIG_MAX_BYTES) {
        set_err(err, "", "file is larger than %zu MiB", HF_CONFIG_MAX_BYTES >> 20);
        return -1;
    }
    clean = replace_nonfinite(buf ? buf : "", buf ? len : 0, &clean_len);
    if (!clean) {
        set_err(err, "", "out of memory");
        return -1;
    }
    root = json_loadb(clean, clean_len, JSON_REJECT_DUPLICATES, &je);
    free(clean);
    if (!root) {
        syntax_error(err, &je);
        return -1;
    }
    rc = read_root(root, fallback_name, &spec, err);
    json_decref(root);
    if (rc != 0 && err->field[0])
        err->line = key_line(buf ? buf : "", buf ? len : 0, err->field);
    if (rc == 0)
        *m = spec; /* *m is untouched on error */
    return rc;
}

int hf_config_parse(const char *buf, size_t len, const char *name, struct model_spec *m,
                    struct input_error *err)
{
    err_init(err, name);
    return parse_buffer(buf, len, name ? name : "<buffer>", m, err);
}

/* ------------------------------------------------------------------------------------ */
/* Files                                                                                */

static void io_error(struct input_error *err, const char *what, int errnum)
{
    char reason[128] = "unknown error";
    if (strerror_r(errnum, reason, sizeof reason) != 0)
        snprintf(reason, sizeof reason, "error %d", errnum);
    set_err(err, "", "%s: %s", what, reason);
}

/* path, or path/config.json when path is a folder, into file. */
static int resolve_path(const char *path, char *file, size_t size, struct input_error *err)
{
    struct stat st;
    size_t n = strlen(path);
    if (stat(path, &st) != 0) {
        io_error(err, "cannot open", errno);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        copy_str(file, size, path);
        return 0;
    }
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= size - sizeof "/config.json") {
        set_err(err, "", "path is too long");
        return -1;
    }
    snprintf(file, size, "%.*s/config.json", (int)n, path);
    copy_str(err->file, sizeof err->file, file);
    if (stat(file, &st) != 0) {
        io_error(err, "folder has no config.json", errno);
        return -1;
    }
    return 0;
}

/* Appends up to cap - *n bytes from f to *buf, growing it; returns false when memory runs out. */
static bool read_more(FILE *f, char **buf, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t grown = *cap * 2 > HF_CONFIG_MAX_BYTES + 1 ? HF_CONFIG_MAX_BYTES + 1 : *cap * 2;
        char *b = realloc(*buf, grown);
        if (!b)
            return false;
        *buf = b;
        *cap = grown;
    }
    *n += fread(*buf + *n, 1, *cap - *n, f);
    return true;
}

/* The whole file, at most HF_CONFIG_MAX_BYTES (one byte more is read to tell). */
static int read_file(const char *file, char **buf, size_t *len, struct input_error *err)
{
    FILE *f = fopen(file, "rb");
    size_t n = 0, cap = 64 * 1024;
    char *b;
    bool ok;
    if (!f) {
        io_error(err, "cannot open", errno);
        return -1;
    }
    b = malloc(cap);
    ok = b != NULL;
    while (ok && n <= HF_CONFIG_MAX_BYTES && !feof(f) && !ferror(f))
        ok = read_more(f, &b, &n, &cap);
    if (!ok)
        set_err(err, "", "out of memory");
    else if (ferror(f))
        io_error(err, "read error", errno);
    else if (n > HF_CONFIG_MAX_BYTES)
        set_err(err, "", "file is larger than %zu MiB", HF_CONFIG_MAX_BYTES >> 20);
    fclose(f);
    if (!ok || *err->msg) {
        free(b);
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* The name of the folder holding file: the model's name when the config gives none. */
static void folder_name(const char *file, char *out, size_t size)
{
    char dir[PATH_BUF];
    const char *slash = strrchr(file, '/');
    char *real;
    const char *base;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == file ? 1 : (int)(slash - file), file);
    real = realpath(dir, NULL);
    base = strrchr(real ? real : dir, '/');
    base = base ? base + 1 : (real ? real : dir);
    copy_str(out, size, *base ? base : "config");
    free(real);
}

int hf_config_load(const char *path, struct model_spec *m, struct input_error *err)
{
    char file[PATH_BUF], name[MODEL_NAME_MAX];
    char *buf = NULL;
    size_t len = 0;
    int rc;
    err_init(err, path);
    if (!path || !*path) {
        set_err(err, "", "no path given");
        return -1;
    }
    if (resolve_path(path, file, sizeof file, err) != 0 ||
        read_file(file, &buf, &len, err) != 0)
        return -1;
    folder_name(file, name, sizeof name);
    rc = parse_buffer(buf, len, name, m, err);
    free(buf);
    return rc;
}
