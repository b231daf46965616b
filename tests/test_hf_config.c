/* test_hf_config.c: HF config.json reader against real configs and malformed files.
 *
 * Fixtures live in tests/data/hf/: the model configs are the published config.json files
 * (values as on the HF hub); bad-*.json and infinity.json are hand-made. Parameter counts
 * are checked against the published totals within 0.5%. */
#define _XOPEN_SOURCE 700 /* mkdtemp, unlink, rmdir */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hf_config.h"
#include "model.h"

/* tests/CMakeLists.txt defines TEST_DATA_DIR; llmem_core carries LLMEM_SOURCE_DIR. */
#if defined(TEST_DATA_DIR)
#define HF_DIR TEST_DATA_DIR "/hf/"
#elif defined(LLMEM_SOURCE_DIR)
#define HF_DIR LLMEM_SOURCE_DIR "/tests/data/hf/"
#else
#define HF_DIR "tests/data/hf/"
#endif

/* ---- helpers ------------------------------------------------------------------------ */

static void load_ok(const char *path, struct model_spec *m)
{
    struct input_error err;
    int rc = hf_config_load(path, m, &err);
    if (rc != 0)
        print_error("%s:%ld: [%s] %s\n", err.file, err.line, err.field, err.msg);
    assert_int_equal(rc, 0);
}

static void parse_ok(const char *json, struct model_spec *m)
{
    struct input_error err;
    int rc = hf_config_parse(json, strlen(json), "inline.json", m, &err);
    if (rc != 0)
        print_error("%s: [%s] %s\n", err.file, err.field, err.msg);
    assert_int_equal(rc, 0);
}

/* A load that must fail; checks the file and key it reports. */
static void load_fails(const char *path, const char *file, const char *key,
                       struct input_error *err)
{
    struct model_spec m;
    memset(&m, 0x5a, sizeof m);
    assert_int_equal(hf_config_load(path, &m, err), -1);
    assert_string_equal(err->file, file);
    assert_string_equal(err->field, key);
    assert_true(err->msg[0] != '\0');
    assert_int_equal(m.layers, 0x5a5a5a5a5a5a5a5a); /* *m untouched on error */
}

static void parse_fails(const char *json, const char *key, struct input_error *err)
{
    struct model_spec m;
    assert_int_equal(hf_config_parse(json, strlen(json), "inline.json", &m, err), -1);
    assert_string_equal(err->file, "inline.json");
    assert_string_equal(err->field, key);
    assert_true(err->msg[0] != '\0');
}

static void assert_params(const struct model_spec *m, int64_t published)
{
    int64_t n = model_param_count(m);
    if (llabs(n - published) * 200 > published)
        print_error("%s: %lld parameters, published %lld\n", m->name, (long long)n,
                    (long long)published);
    assert_true(llabs(n - published) * 200 <= published);
}

static void assert_dims(const struct model_spec *m, int64_t layers, int64_t hidden,
                        int64_t heads, int64_t kv, int64_t head_dim, int64_t inter,
                        int64_t vocab, int64_t max_pos)
{
    assert_int_equal(m->layers, layers);
    assert_int_equal(m->hidden, hidden);
    assert_int_equal(m->heads, heads);
    assert_int_equal(m->kv_heads, kv);
    assert_int_equal(m->head_dim, head_dim);
    assert_int_equal(m->intermediate, inter);
    assert_int_equal(m->vocab, vocab);
    assert_int_equal(m->max_pos, max_pos);
}

/* ---- real configs ------------------------------------------------------------------- */

static void test_llama_3_1_8b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "llama-3.1-8b.json", &m);
    assert_string_equal(m.model_type, "llama");
    assert_string_equal(m.name, "hf"); /* no _name_or_path: the folder's name */
    assert_dims(&m, 32, 4096, 32, 8, 128, 14336, 128256, 131072);
    assert_false(m.tied);
    assert_false(m.qkv_bias);
    assert_false(m.o_bias);
    assert_false(m.mlp_bias);
    assert_int_equal(m.norm, NORM_RMSNORM);
    assert_int_equal(m.mlp, MLP_GATED);
    assert_int_equal(m.pos, POS_ROTARY);
    assert_int_equal(m.emb_dim, 0);
    assert_params(&m, 8030261248);
}

static void test_qwen2_5_0_5b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "qwen2.5-0.5b.json", &m);
    assert_string_equal(m.name, "Qwen/Qwen2.5-0.5B");
    assert_string_equal(m.model_type, "qwen2");
    assert_dims(&m, 24, 896, 14, 2, 64, 4864, 151936, 32768);
    assert_true(m.tied);
    assert_true(m.qkv_bias); /* Qwen2Attention: q/k/v bias always on */
    assert_false(m.o_bias);
    assert_false(m.mlp_bias);
    assert_params(&m, 494032768);
}

/* Qwen v1 (model_type "qwen", remote code). Exact count 7721324544: embedding and lm_head
 * 151936 x 4096 each, per block ln_1 + ln_2 (2 x 4096), c_attn 4096 x 12288 + bias 12288,
 * attn c_proj 4096 x 4096, w1, w2, mlp c_proj 3 x 4096 x 11008, ln_f 4096; the same total
 * as calflops printed for Qwen-7B (MrYxJ/calculate-flops.pytorch@6bccc05f README.md, "Qwen-7B
 * 7.72B 7721324544"); the model card says 7B, the hub's safetensors header 7.72B. */
static void assert_qwen_7b(const struct model_spec *m)
{
    assert_string_equal(m->model_type, "qwen");
    /* intermediate_size 22016 is twice the MLP width: w1/w2 are 22016 // 2 = 11008 wide */
    assert_dims(m, 32, 4096, 32, 32, 128, 11008, 151936, m->max_pos);
    assert_false(m->tied);
    assert_true(m->qkv_bias);  /* c_attn keeps nn.Linear's default bias */
    assert_false(m->o_bias);   /* no_bias: true */
    assert_false(m->mlp_bias);
    assert_true(m->fused_qkv);
    assert_int_equal(m->norm, NORM_RMSNORM);
    assert_int_equal(m->mlp, MLP_GATED);
    assert_int_equal(m->pos, POS_ROTARY);
    assert_false(m->logits_fp32);
    assert_int_equal(model_param_count(m), INT64_C(7721324544));
}

static void test_qwen_7b_chat(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "qwen-7b-chat.json", &m);
    assert_qwen_7b(&m);
    assert_int_equal(m.max_pos, 8192);
    /* the Aug 2023 file names the same dimensions n_embd, n_layer, n_head, ffn_hidden_size */
    load_ok(HF_DIR "qwen-7b-chat-2023-08.json", &m);
    assert_qwen_7b(&m);
    assert_int_equal(m.max_pos, 6144); /* n_positions */
}

/* no_bias false gives attn.c_proj, w1, w2 and mlp.c_proj biases; an intermediate_size of
 * 1 halves to an MLP of width 0, blamed on intermediate_size. */
static void test_qwen_keys(void **state)
{
    struct model_spec m;
    struct input_error err;
    (void)state;
    parse_ok("{\"model_type\": \"qwen\", \"vocab_size\": 100, \"hidden_size\": 64, "
             "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"kv_channels\": 16, "
             "\"intermediate_size\": 257, \"no_bias\": false}", &m);
    assert_int_equal(m.intermediate, 128); /* 257 // 2, as Python floors */
    assert_int_equal(m.max_pos, 8192);     /* QWenConfig default */
    assert_true(m.qkv_bias);
    assert_true(m.o_bias);
    assert_true(m.mlp_bias);
    const char *bad = "{\"model_type\": \"qwen\", \"vocab_size\": 100, \"hidden_size\": 64, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                      "\"intermediate_size\": 1}";
    assert_int_equal(hf_config_parse(bad, strlen(bad), "q.json", &m, &err), -1);
    assert_string_equal(err.field, "intermediate_size");
}

static void test_gemma_2_2b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "gemma-2-2b.json", &m);
    assert_string_equal(m.model_type, "gemma2");
    assert_dims(&m, 26, 2304, 8, 4, 256, 9216, 256000, 8192); /* head_dim != 2304/8 */
    assert_int_equal(m.norms_per_layer, 4);
    assert_true(m.tied);
    assert_false(m.qkv_bias);
    assert_true(m.attn_softcap); /* attn_logit_softcapping 50.0 */
    assert_params(&m, 2614341888);
    /* null turns the softcapping off; absent keeps gemma2's default; gemma (v1) has none */
    parse_ok("{\"model_type\": \"gemma2\", \"hidden_size\": 2304, \"intermediate_size\": "
             "9216, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, "
             "\"num_hidden_layers\": 26, \"vocab_size\": 256000, \"head_dim\": 256, "
             "\"attn_logit_softcapping\": null}",
             &m);
    assert_false(m.attn_softcap);
    parse_ok("{\"model_type\": \"gemma2\", \"hidden_size\": 2304, \"intermediate_size\": "
             "9216, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, "
             "\"num_hidden_layers\": 26, \"vocab_size\": 256000, \"head_dim\": 256}",
             &m);
    assert_true(m.attn_softcap);
}

static void test_opt_350m(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "opt-350m.json", &m);
    assert_string_equal(m.name, "facebook/opt-350m");
    assert_dims(&m, 24, 1024, 16, 16, 64, 4096, 50272, 2048);
    assert_int_equal(m.emb_dim, 512);
    assert_int_equal(m.pos_offset, 2);
    assert_int_equal(m.pos, POS_LEARNED);
    assert_true(m.tied);
    assert_true(m.qkv_bias);
    assert_true(m.o_bias);
    assert_true(m.mlp_bias);
    assert_params(&m, 331196416);
}

static void test_bloom_560m(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "bloom-560m.json", &m); /* n_embed, n_layer, num_attention_heads */
    assert_string_equal(m.model_type, "bloom");
    assert_dims(&m, 24, 1024, 16, 16, 64, 4096, 250880, 0);
    assert_int_equal(m.pos, POS_ALIBI);
    assert_true(m.emb_norm);
    assert_true(m.tied);
    assert_params(&m, 559214592);
}

/* MPT-7B (mosaicml/mpt-7b config.json): d_model/n_heads/n_layers, expansion_ratio 4,
 * no_bias. Parameters by hand: embedding 50432*4096 = 206569472; per layer Wqkv 4096*12288
 * + out_proj 4096^2 + up/down 2*4096*16384 = 201326592, plus two LayerNorms; 32 layers and
 * a final norm. HF (no_bias) counts 6649286656; the tensor model keeps the LayerNorm
 * biases, 65 * 4096 = 266240 more. */
static void test_mpt_7b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "mpt-7b.json", &m);
    assert_string_equal(m.model_type, "mpt");
    assert_dims(&m, 32, 4096, 32, 32, 128, 16384, 50432, 2048);
    assert_int_equal(m.pos, POS_ALIBI);
    assert_true(m.tied);
    assert_true(m.fused_qkv);
    assert_false(m.qkv_bias || m.o_bias || m.mlp_bias);
    assert_params(&m, 6649286656 + 266240);
}

/* no_bias false and expansion_ratio 2 switch the biases on and halve the MLP. */
static void test_mpt_bias_ratio(void **state)
{
    struct model_spec m;
    (void)state;
    parse_ok("{\"model_type\": \"mpt\", \"d_model\": 256, \"n_heads\": 4, \"n_layers\": 2, "
             "\"expansion_ratio\": 2, \"no_bias\": false, \"vocab_size\": 1000}", &m);
    assert_int_equal(m.intermediate, 512);
    assert_true(m.qkv_bias && m.o_bias && m.mlp_bias);
}

/* The same model as re-saved by newer transformers: hidden_size and n_head. */
static void test_bloom_resaved_keys(void **state)
{
    struct model_spec m;
    (void)state;
    parse_ok("{\"model_type\": \"bloom\", \"hidden_size\": 1024, \"n_head\": 16, "
             "\"n_layer\": 24, \"n_inner\": null, \"vocab_size\": 250880, "
             "\"seq_length\": 2048}",
             &m);
    assert_string_equal(m.name, "inline.json");
    assert_dims(&m, 24, 1024, 16, 16, 64, 4096, 250880, 2048);
    assert_params(&m, 559214592);
}

static void test_falcon_7b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "falcon-7b.json", &m);
    assert_string_equal(m.model_type, "falcon");
    /* multi_query: one k/v head; no max_position_embeddings: FalconConfig's 2048 */
    assert_dims(&m, 32, 4544, 71, 1, 64, 18176, 65024, 2048);
    assert_int_equal(m.norms_per_layer, 1); /* parallel_attn, one shared input norm */
    assert_true(m.tied);                    /* FalconConfig default True */
    assert_false(m.qkv_bias);
    assert_false(m.o_bias);
    assert_false(m.mlp_bias);
    assert_int_equal(m.pos, POS_ROTARY);
    assert_params(&m, 6921720704);
}

/* Falcon-40B style: new_decoder_architecture with num_kv_heads, ln_attn + ln_mlp. */
static void test_falcon_new_architecture(void **state)
{
    struct model_spec m;
    (void)state;
    parse_ok("{\"model_type\": \"falcon\", \"hidden_size\": 8192, \"num_attention_heads\": 128,"
             " \"num_hidden_layers\": 60, \"num_kv_heads\": 8, \"new_decoder_architecture\": "
             "true, \"parallel_attn\": true, \"bias\": false, \"vocab_size\": 65024}",
             &m);
    assert_dims(&m, 60, 8192, 128, 8, 64, 32768, 65024, 2048);
    assert_int_equal(m.norms_per_layer, 2);
    /* RW-era names and alibi */
    parse_ok("{\"model_type\": \"falcon\", \"n_embed\": 2048, \"n_head\": 32, \"n_layer\": 24,"
             " \"multi_query\": false, \"alibi\": true, \"bias\": true, "
             "\"parallel_attn\": false, \"vocab_size\": 65024}",
             &m);
    assert_dims(&m, 24, 2048, 32, 32, 64, 8192, 65024, 2048);
    assert_int_equal(m.norms_per_layer, 2);
    assert_int_equal(m.pos, POS_ALIBI);
    assert_true(m.qkv_bias);
    assert_true(m.mlp_bias);
}

static void test_santacoder(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "santacoder.json", &m);
    assert_string_equal(m.model_type, "gpt_bigcode");
    assert_dims(&m, 24, 2048, 16, 1, 128, 8192, 49280, 2048);
    assert_true(m.tied);
    assert_params(&m, 1124886528);
}

static void test_codegen_350m(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "codegen-350m-nl.json", &m);
    assert_dims(&m, 20, 1024, 16, 16, 64, 4096, 51200, 2048); /* n_inner null: 4*n_embd */
    assert_false(m.tied);
    assert_true(m.lm_head_bias);
    assert_int_equal(m.norms_per_layer, 1);
    assert_params(&m, 356712448);
}

static void test_gpt2(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "gpt2.json", &m);
    assert_dims(&m, 12, 768, 12, 12, 64, 3072, 50257, 1024); /* no n_inner key */
    assert_true(m.tied);
    assert_int_equal(m.pos, POS_LEARNED);
    assert_params(&m, 124439808);
    /* attribute_map alias: "hidden_size" is n_embd */
    parse_ok("{\"model_type\": \"gpt2\", \"hidden_size\": 768, \"n_head\": 12, "
             "\"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}",
             &m);
    assert_int_equal(m.hidden, 768);
}

static void test_phi_2(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "phi-2.json", &m);
    assert_string_equal(m.name, "microsoft/phi-2");
    assert_dims(&m, 32, 2560, 32, 32, 80, 10240, 51200, 2048);
    assert_false(m.tied);
    assert_true(m.lm_head_bias);
    assert_int_equal(m.norms_per_layer, 1);
    assert_params(&m, 2779683840);
}

/* ---- keys and defaults -------------------------------------------------------------- */

static void test_llama_defaults_and_biases(void **state)
{
    struct model_spec m;
    (void)state;
    /* no num_key_value_heads: MHA; real 4096.0 is accepted; attention_bias/mlp_bias */
    parse_ok("{\"model_type\": \"llama\", \"hidden_size\": 4096.0, \"intermediate_size\": "
             "11008, \"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
             "\"num_key_value_heads\": null, \"attention_bias\": true, \"mlp_bias\": true, "
             "\"vocab_size\": 32000, \"_name_or_path\": \"\"}",
             &m);
    assert_string_equal(m.name, "inline.json"); /* empty _name_or_path is ignored */
    assert_dims(&m, 32, 4096, 32, 32, 128, 11008, 32000, 2048);
    assert_true(m.qkv_bias);
    assert_true(m.o_bias);
    assert_true(m.mlp_bias);
    assert_false(m.tied);
}

static void test_gemma_head_dim_default(void **state)
{
    struct model_spec m;
    (void)state;
    /* GemmaConfig head_dim default 256 even where hidden/heads = 192 (Gemma-7B) */
    parse_ok("{\"model_type\": \"gemma\", \"hidden_size\": 3072, \"intermediate_size\": "
             "24576, \"num_attention_heads\": 16, \"num_hidden_layers\": 28, "
             "\"vocab_size\": 256000}",
             &m);
    assert_int_equal(m.head_dim, 256);
    assert_true(m.tied);
    assert_int_equal(m.max_pos, 8192);
    assert_false(m.attn_softcap);
}

static void test_stablelm_keys(void **state)
{
    struct model_spec m;
    (void)state;
    parse_ok("{\"model_type\": \"stablelm\", \"hidden_size\": 2048, \"intermediate_size\": "
             "5632, \"num_attention_heads\": 32, \"num_hidden_layers\": 24, "
             "\"num_key_value_heads\": 32, \"use_qkv_bias\": true, "
             "\"use_parallel_residual\": true, \"vocab_size\": 100352}",
             &m);
    assert_true(m.qkv_bias);
    assert_int_equal(m.norms_per_layer, 1);
    assert_int_equal(m.norm, NORM_LAYERNORM);
}

static void test_infinity_and_nan(void **state)
{
    struct model_spec m;
    (void)state;
    /* bare Infinity, -Infinity, NaN in fields the reader ignores; the same words inside
     * strings (after \" and after an escaped backslash) stay text */
    load_ok(HF_DIR "infinity.json", &m);
    assert_string_equal(m.name, "org/NaN-\"Infinity\"-model");
    assert_string_equal(m.model_type, "mistral");
    assert_dims(&m, 32, 4096, 32, 8, 128, 14336, 32000, 32768);
}

static void test_nonfinite_dimension_rejected(void **state)
{
    struct input_error err;
    (void)state;
    /* NaN becomes null: for a required key that reads as missing */
    parse_fails("{\"model_type\": \"gpt2\", \"n_embd\": NaN, \"n_head\": 12, \"n_layer\": 12,"
                " \"n_positions\": 1024, \"vocab_size\": 50257}",
                "n_embd", &err);
    /* a NaN-like identifier is not a token: still invalid JSON */
    parse_fails("{\"model_type\": \"gpt2\", \"x\": NaNa}", "", &err);
    assert_int_equal(err.line, 1);
}

/* ---- malformed files ---------------------------------------------------------------- */

static void test_truncated(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-truncated.json", HF_DIR "bad-truncated.json", "", &err);
    assert_int_equal(err.line, 4);
    assert_int_equal(err.code, EXIT_BAD_INPUT);
    assert_non_null(strstr(err.msg, "invalid JSON at column "));
}

static void test_duplicate_key(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-duplicate-key.json", HF_DIR "bad-duplicate-key.json", "vocab_size",
               &err);
    assert_int_equal(err.line, 8);
    assert_string_equal(err.msg, "duplicate key \"vocab_size\"");
}

static void test_unsupported_type(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-t5.json", HF_DIR "bad-t5.json", "model_type", &err);
    assert_non_null(strstr(err.msg, "unsupported model_type \"t5\""));
    assert_non_null(strstr(err.msg, "(supported: opt, bloom, codegen"));
    assert_non_null(strstr(err.msg, "stablelm, mpt, qwen3, gemma3_text, gemma3, olmo2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)"));
    parse_fails("{\"model_type\": \"bert\", \"hidden_size\": 768}", "model_type", &err);
    assert_non_null(strstr(err.msg, "unsupported model_type \"bert\""));
    parse_fails("{\"model_type\": \"\\u001b[31mx\"}", "model_type", &err);
    assert_non_null(strstr(err.msg, "\"\\x1b[31mx\"")); /* no terminal escapes: text_printable */
    parse_fails("{\"hidden_size\": 768}", "model_type", &err);
    assert_string_equal(err.msg, "missing key \"model_type\"");
    parse_fails("{\"model_type\": 7}", "model_type", &err);
}

static void test_missing_hidden(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-missing-hidden.json", HF_DIR "bad-missing-hidden.json",
               "hidden_size", &err);
    assert_string_equal(err.msg, "missing key \"hidden_size\"");
    /* aliases are named too */
    parse_fails("{\"model_type\": \"gpt2\", \"n_head\": 12, \"n_layer\": 12, "
                "\"n_positions\": 1024, \"vocab_size\": 50257}",
                "n_embd", &err);
    assert_string_equal(err.msg, "missing key \"n_embd\" (or \"hidden_size\")");
    parse_fails("{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, \"n_layer\": 12,"
                " \"n_positions\": 1024}",
                "vocab_size", &err);
}

static void test_negative_layers(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-negative-layers.json", HF_DIR "bad-negative-layers.json",
               "num_hidden_layers", &err);
    assert_non_null(strstr(err.msg, "not -32"));
}

static void test_string_for_int(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-string-int.json", HF_DIR "bad-string-int.json",
               "num_attention_heads", &err);
    assert_non_null(strstr(err.msg, "not a string"));
}

static void test_bad_values(void **state)
{
    struct input_error err;
    (void)state;
#define GPT2_WITH(x)                                                                         \
    "{\"model_type\": \"gpt2\", \"n_head\": 12, \"n_layer\": 12, \"n_positions\": 1024, "   \
    "\"vocab_size\": 50257, " x "}"
    parse_fails(GPT2_WITH("\"n_embd\": 0"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": 16777217"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": 768.5"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": 1e300"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": [768]"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": true"), "n_embd", &err);
    parse_fails(GPT2_WITH("\"n_embd\": 100"), "n_head", &err); /* 100 % 12 != 0 */
    parse_fails(GPT2_WITH("\"n_embd\": 768, \"tie_word_embeddings\": \"yes\""),
                "tie_word_embeddings", &err);
    parse_fails(GPT2_WITH("\"n_embd\": 768, \"n_inner\": -1"), "n_inner", &err);
#undef GPT2_WITH
    /* model_check: kv heads must divide heads; blamed on the config key */
    parse_fails("{\"model_type\": \"mistral\", \"hidden_size\": 4096, \"intermediate_size\": "
                "14336, \"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
                "\"num_key_value_heads\": 5, \"vocab_size\": 32000}",
                "num_key_value_heads", &err);
    parse_fails("[1, 2]", "", &err);
    assert_non_null(strstr(err.msg, "object"));
}

static void test_empty_file(void **state)
{
    struct input_error err;
    (void)state;
    load_fails(HF_DIR "bad-empty.json", HF_DIR "bad-empty.json", "", &err);
    assert_int_equal(err.line, 1);
    parse_fails("", "", &err);
}

static void test_size_limit(void **state)
{
    struct input_error err;
    struct model_spec m;
    size_t len = HF_CONFIG_MAX_BYTES + 1;
    char *big = malloc(len);
    (void)state;
    assert_non_null(big);
    memset(big, ' ', len);
    assert_int_equal(hf_config_parse(big, len, "big.json", &m, &err), -1);
    assert_string_equal(err.file, "big.json");
    assert_string_equal(err.field, "");
    assert_non_null(strstr(err.msg, "16 MiB"));
    free(big);
}

/* ---- paths -------------------------------------------------------------------------- */

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_folder_paths(void **state)
{
    static const char gpt2[] = "{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, "
                               "\"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}";
    char dir[] = "/tmp/hf-config-test-XXXXXX", file[64], slash[64];
    const char *base;
    struct input_error err;
    struct model_spec m;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/config.json", dir);
    snprintf(slash, sizeof slash, "%s/", dir);
    base = strrchr(dir, '/') + 1;

    load_fails(dir, file, "", &err); /* a folder without config.json */
    assert_non_null(strstr(err.msg, "config.json"));

    write_file(file, gpt2, sizeof gpt2 - 1);
    load_ok(dir, &m); /* a folder holding config.json */
    assert_string_equal(m.name, base);
    assert_int_equal(m.hidden, 768);
    load_ok(slash, &m);
    assert_string_equal(m.name, base);
    load_ok(file, &m);
    assert_string_equal(m.name, base);

    /* one byte over the limit */
    {
        size_t len = HF_CONFIG_MAX_BYTES + 1;
        char *big = malloc(len);
        assert_non_null(big);
        memset(big, ' ', len);
        write_file(file, big, len);
        free(big);
        load_fails(dir, file, "", &err);
        assert_non_null(strstr(err.msg, "16 MiB"));
    }
    assert_int_equal(unlink(file), 0);
    assert_int_equal(rmdir(dir), 0);

    load_fails(dir, dir, "", &err); /* gone */
    load_fails("", "", "", &err);
}

/* A Hugging Face hub cache snapshot, <cache>/models--ORG--NAME/snapshots/<commit>/, is named
 * by its repository id, before the uploader's _name_or_path; a "snapshots" folder elsewhere
 * keeps _name_or_path. */
static void test_hub_cache_name(void **state)
{
    static const char gpt2[] = "{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, "
                               "\"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257, "
                               "\"_name_or_path\": \"/home/someone/ckpt\"}";
    static const char *const repos[][2] = {{"models--acme--tiny-gpt", "acme/tiny-gpt"},
                                           {"models--gpt2", "gpt2"},
                                           {"runs", "/home/someone/ckpt"}};
    char root[] = "/tmp/hf-hub-test-XXXXXX", path[256];
    struct model_spec m;
    (void)state;
    assert_non_null(mkdtemp(root));
    for (size_t i = 0; i < sizeof repos / sizeof *repos; i++) {
        const char *parts[] = {repos[i][0], "snapshots", "c0ffee"};
        size_t k = (size_t)snprintf(path, sizeof path, "%s", root);
        for (int j = 0; j < 3; j++) {
            k += (size_t)snprintf(path + k, sizeof path - k, "/%s", parts[j]);
            assert_int_equal(mkdir(path, 0700), 0);
        }
        snprintf(path + k, sizeof path - k, "/config.json");
        write_file(path, gpt2, sizeof gpt2 - 1);
        load_ok(path, &m);
        assert_string_equal(m.name, repos[i][1]);
        path[k] = '\0';
        load_ok(path, &m); /* the snapshot folder itself */
        assert_string_equal(m.name, repos[i][1]);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    assert_int_equal(system(path), 0);
}

/* ---- today's dense families and MoE (issue 16) -------------------------------------- */
/* Published totals: Qwen3-8B 8,190,735,360 (HF safetensors); gemma-3-1b 999,885,952;
 * OLMo-2-1124-13B 13,716,198,400 (its model.safetensors.index.json total_size 54,864,793,600
 * bytes / 4, fp32); Mixtral-8x7B 46,702,792,704; Qwen3-30B-A3B 30,532,122,624;
 * DeepSeek-V2-Lite 15,706,484,224; DeepSeek-V2 235.7B ("236B"). */

static void test_qwen3_8b(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "qwen3-8b.json", &m);
    assert_string_equal(m.model_type, "qwen3");
    assert_dims(&m, 36, 4096, 32, 8, 128, 12288, 151936, 40960);
    assert_int_equal(m.qk_norm, QK_NORM_HEAD);
    assert_false(m.tied);
    assert_false(m.qkv_bias);
    assert_false(model_is_moe(&m));
    assert_params(&m, 8190735360);
}

static void test_gemma3(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "gemma-3-1b.json", &m);
    assert_string_equal(m.model_type, "gemma3_text");
    assert_dims(&m, 26, 1152, 4, 1, 256, 6912, 262144, 32768);
    assert_true(m.tied);
    assert_int_equal(m.norms_per_layer, 4);
    assert_int_equal(m.qk_norm, QK_NORM_HEAD);
    assert_params(&m, 999885952);
    /* Gemma3ForConditionalGeneration: the text part from text_config; the 4b text model
     * is the 4.30B total less SigLIP's 0.42B */
    load_ok(HF_DIR "gemma-3-4b.json", &m);
    assert_string_equal(m.model_type, "gemma3");
    assert_dims(&m, 34, 2560, 8, 4, 256, 10240, 262208, 131072);
    assert_true(m.tied);
    assert_int_equal(model_param_count(&m), 3880263168);
    struct input_error err;
    const char *no_text = "{\"model_type\": \"gemma3\", \"vision_config\": {}}";
    assert_int_equal(hf_config_parse(no_text, strlen(no_text), "g.json", &m, &err), -1);
    assert_string_equal(err.field, "text_config");
}

static void test_olmo2(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "olmo-2-13b.json", &m);
    assert_string_equal(m.model_type, "olmo2");
    assert_dims(&m, 40, 5120, 40, 40, 128, 13824, 100352, 4096);
    assert_int_equal(m.qk_norm, QK_NORM_PROJ);
    assert_int_equal(m.norms_per_layer, 2);
    assert_false(m.tied);
    assert_int_equal(model_param_count(&m), 13716198400); /* exact */
}

static void test_mixtral(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "mixtral-8x7b.json", &m);
    assert_string_equal(m.model_type, "mixtral");
    assert_dims(&m, 32, 4096, 32, 8, 128, 14336, 32000, 32768);
    assert_int_equal(m.experts, 8);
    assert_int_equal(m.experts_per_tok, 2);
    assert_int_equal(m.moe_intermediate, 14336);
    assert_int_equal(m.shared_intermediate, 0);
    assert_int_equal(m.dense_layers, 0);
    assert_int_equal(model_param_count(&m), 46702792704);
}

static void test_qwen3_moe(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "qwen3-30b-a3b.json", &m);
    assert_string_equal(m.model_type, "qwen3_moe");
    assert_int_equal(m.experts, 128);
    assert_int_equal(m.experts_per_tok, 8);
    assert_int_equal(m.moe_intermediate, 768);
    assert_int_equal(m.qk_norm, QK_NORM_HEAD);
    assert_false(m.shared_gate);
    assert_int_equal(model_param_count(&m), 30532122624);
    /* dense blocks among MoE blocks are refused with the key named */
    struct input_error err;
    const char *sparse = "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
                         "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                         "\"intermediate_size\": 128, \"vocab_size\": 100, "
                         "\"mlp_only_layers\": [1]}";
    assert_int_equal(hf_config_parse(sparse, strlen(sparse), "q.json", &m, &err), -1);
    assert_string_equal(err.field, "mlp_only_layers");
}

static void test_qwen2_moe_shared(void **state)
{
    struct model_spec m;
    (void)state;
    /* Qwen1.5-MoE-A2.7B's dimensions: 60 experts of 1408, 4 a token, a shared expert of
     * 5632 behind a sigmoid gate, q/k/v biases; 14,315,784,192 parameters (HF total) */
    parse_ok("{\"model_type\": \"qwen2_moe\", \"hidden_size\": 2048, "
             "\"num_hidden_layers\": 24, \"num_attention_heads\": 16, "
             "\"num_key_value_heads\": 16, \"intermediate_size\": 5632, "
             "\"moe_intermediate_size\": 1408, \"shared_expert_intermediate_size\": 5632, "
             "\"num_experts\": 60, \"num_experts_per_tok\": 4, \"vocab_size\": 151936, "
             "\"tie_word_embeddings\": false}", &m);
    assert_true(m.shared_gate);
    assert_true(m.qkv_bias);
    assert_false(m.o_bias);
    assert_int_equal(m.shared_intermediate, 5632);
    assert_params(&m, 14315784192);
}

static void test_deepseek_v2(void **state)
{
    struct model_spec m;
    (void)state;
    load_ok(HF_DIR "deepseek-v2-lite.json", &m);
    assert_string_equal(m.model_type, "deepseek_v2");
    assert_int_equal(m.head_dim, 192); /* qk_nope 128 + qk_rope 64 */
    assert_int_equal(m.v_head_dim, 128);
    assert_int_equal(m.q_lora_rank, 0); /* null: one q_proj */
    assert_int_equal(m.kv_lora_rank, 512);
    assert_int_equal(m.experts, 64);
    assert_int_equal(m.experts_per_tok, 6);
    assert_int_equal(m.shared_intermediate, 2 * 1408);
    assert_int_equal(m.dense_layers, 1);
    assert_int_equal(model_param_count(&m), 15706484224);
    load_ok(HF_DIR "deepseek-v2.json", &m);
    assert_int_equal(m.q_lora_rank, 1536);
    assert_params(&m, 235741434880);
    /* DeepSeek-V3: q_lora_rank 1536, 3 dense blocks, 256 experts of 2048, 8 a token, one
     * shared; 671,026,419,200 published (the main model, with the routers' 14,848
     * e_score_correction_bias values the tensor model leaves out) */
    parse_ok("{\"model_type\": \"deepseek_v3\", \"hidden_size\": 7168, "
             "\"intermediate_size\": 18432, \"num_hidden_layers\": 61, "
             "\"num_attention_heads\": 128, \"num_key_value_heads\": 128, "
             "\"vocab_size\": 129280, \"q_lora_rank\": 1536, \"kv_lora_rank\": 512, "
             "\"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, "
             "\"n_routed_experts\": 256, \"num_experts_per_tok\": 8, \"n_shared_experts\": 1, "
             "\"moe_intermediate_size\": 2048, \"first_k_dense_replace\": 3}", &m);
    assert_int_equal(m.dense_layers, 3);
    assert_int_equal(model_param_count(&m), 671026419200 - 58 * 256);
    /* the MoE keys are required */
    struct input_error err;
    const char *no_experts = "{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, "
                             "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                             "\"intermediate_size\": 128, \"vocab_size\": 100}";
    assert_int_equal(hf_config_parse(no_experts, strlen(no_experts), "d.json", &m, &err), -1);
    assert_string_equal(err.field, "n_routed_experts");
}

/* An error about a key's value names the line of its `"key":`; a missing key has none. */
static void test_key_lines(void **state)
{
    struct model_spec m;
    struct input_error err;
    (void)state;
    const char *bad = "{\"model_type\": \"llama\",\n \"hidden_size\": 4096,\n"
                      " \"vocab_size\": 32000,\n \"num_hidden_layers\" :\n \"32\"}";
    assert_int_equal(hf_config_parse(bad, strlen(bad), "c.json", &m, &err), -1);
    assert_string_equal(err.field, "num_hidden_layers");
    assert_int_equal(err.line, 4);
    assert_int_equal(err.code, EXIT_BAD_INPUT);
    const char *missing = "{\"model_type\": \"llama\",\n \"hidden_size\": 4096}";
    assert_int_equal(hf_config_parse(missing, strlen(missing), "c.json", &m, &err), -1);
    assert_int_equal(err.line, 0);
    /* a value that merely contains the key's name is not the key */
    const char *quoted = "{\"model_type\": \"llama\", \"x\": \"\\\"vocab_size\\\"\",\n"
                         "\"vocab_size\": -1, \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
                         "\"num_attention_heads\": 4, \"intermediate_size\": 128}";
    assert_int_equal(hf_config_parse(quoted, strlen(quoted), "c.json", &m, &err), -1);
    assert_string_equal(err.field, "vocab_size");
    assert_int_equal(err.line, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_3_1_8b),
        cmocka_unit_test(test_qwen2_5_0_5b),
        cmocka_unit_test(test_qwen_7b_chat),
        cmocka_unit_test(test_qwen_keys),
        cmocka_unit_test(test_gemma_2_2b),
        cmocka_unit_test(test_opt_350m),
        cmocka_unit_test(test_bloom_560m),
        cmocka_unit_test(test_bloom_resaved_keys),
        cmocka_unit_test(test_mpt_7b),
        cmocka_unit_test(test_mpt_bias_ratio),
        cmocka_unit_test(test_falcon_7b),
        cmocka_unit_test(test_falcon_new_architecture),
        cmocka_unit_test(test_santacoder),
        cmocka_unit_test(test_codegen_350m),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_phi_2),
        cmocka_unit_test(test_llama_defaults_and_biases),
        cmocka_unit_test(test_gemma_head_dim_default),
        cmocka_unit_test(test_stablelm_keys),
        cmocka_unit_test(test_infinity_and_nan),
        cmocka_unit_test(test_nonfinite_dimension_rejected),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_unsupported_type),
        cmocka_unit_test(test_missing_hidden),
        cmocka_unit_test(test_negative_layers),
        cmocka_unit_test(test_string_for_int),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_folder_paths),
        cmocka_unit_test(test_hub_cache_name),
        cmocka_unit_test(test_qwen3_8b),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_olmo2),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_qwen2_moe_shared),
        cmocka_unit_test(test_deepseek_v2),
        cmocka_unit_test(test_key_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
