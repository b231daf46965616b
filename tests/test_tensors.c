/* test_tensors.c: the parameter tensor list (tensors.h) and the model helpers built on it
 * (model.h): exact counts per role for hand-built models, fusion ids, tied heads, OPT-350m's
 * projections, learned positions, norm kinds, family defaults, model_check, and the
 * parameter count of every catalog model against its published count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "fixtures.h"
#include "model.h"
#include "plan.h"
#include "tensors.h"

/* A small llama-style model (RMSNorm, gated MLP, rotary, GQA, untied, no biases):
 * layers 2, hidden 64, heads 4, kv_heads 2, head_dim 16, intermediate 128, vocab 1000. */
static struct model_spec llama_spec(void)
{
    struct model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "test/tiny-llama");
    snprintf(m.model_type, sizeof m.model_type, "llama");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 16;
    m.intermediate = 128;
    m.vocab = 1000;
    m.max_pos = 4096;
    m.norms_per_layer = 2;
    m.norm = NORM_RMSNORM;
    m.mlp = MLP_GATED;
    m.pos = POS_ROTARY;
    return m;
}

/* A small OPT-style model (LayerNorm, plain MLP, learned positions with offset 2, tied,
 * biases everywhere but the head): layers 2, hidden 64, heads 4, kv 4, head_dim 16,
 * intermediate 256, vocab 1000, max_pos 128. */
static struct model_spec opt_spec(void)
{
    return fixture_opt_spec("test/tiny-opt", 2, 64, 4, 256, 1000, 128);
}

struct role_sums {
    int64_t weight[ROLE_COUNT]; /* non-bias elements per role */
    int64_t bias[ROLE_COUNT];   /* bias elements per role */
    int count[ROLE_COUNT];      /* tensors per role */
    int64_t total;
};

static struct role_sums sum_roles(const struct tensor_list *l)
{
    struct role_sums s;
    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < l->n; i++) {
        const struct tensor *t = &l->t[i];
        assert_true(t->role < ROLE_COUNT);
        s.count[t->role]++;
        if (t->bias)
            s.bias[t->role] += tensor_numel(t);
        else
            s.weight[t->role] += tensor_numel(t);
        s.total += tensor_numel(t);
    }
    return s;
}

static void test_llama_counts(void **state)
{
    (void)state;
    struct model_spec m = llama_spec();
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    struct role_sums s = sum_roles(&l);

    /* embed [1000, 64] = 64000 */
    assert_int_equal(s.weight[ROLE_EMBED], 64000);
    /* q [4*16, 64] = 4096 per layer, x2 layers = 8192 */
    assert_int_equal(s.weight[ROLE_Q], 8192);
    /* k, v [2*16, 64] = 2048 per layer, x2 = 4096 each (GQA: kv_heads, not heads) */
    assert_int_equal(s.weight[ROLE_K], 4096);
    assert_int_equal(s.weight[ROLE_V], 4096);
    /* o [64, 4*16] = 4096 per layer, x2 = 8192 */
    assert_int_equal(s.weight[ROLE_O], 8192);
    /* gate, up [128, 64], down [64, 128] = 8192 per layer each, x2 = 16384 */
    assert_int_equal(s.weight[ROLE_GATE], 16384);
    assert_int_equal(s.weight[ROLE_UP], 16384);
    assert_int_equal(s.weight[ROLE_DOWN], 16384);
    /* RMSNorm: weight only; 2 per layer x 2 layers + final = 5 x 64 = 320 */
    assert_int_equal(s.weight[ROLE_NORM], 320);
    assert_int_equal(s.count[ROLE_NORM], 5);
    /* untied lm_head [1000, 64] = 64000 */
    assert_int_equal(s.weight[ROLE_LM_HEAD], 64000);
    assert_int_equal(s.count[ROLE_POS_EMBED], 0); /* rotary: no position table */
    assert_int_equal(s.count[ROLE_PROJ], 0);
    for (int r = 0; r < ROLE_COUNT; r++)
        assert_int_equal(s.bias[r], 0);
    /* total: 64000 + 2 * (64 + 4096 + 2048 + 2048 + 4096 + 64 + 3 * 8192) + 64 + 64000
     *      = 64000 + 2 * 36992 + 64 + 64000 = 202048 */
    assert_int_equal(s.total, 202048);
    assert_int_equal(model_param_count(&m), 202048);
    /* tensors: embed + 2 x (norm q k v o norm gate up down) + final norm + head = 21 */
    assert_int_equal(l.n, 21);
    tensors_free(&l);
}

static void test_llama_order_and_shapes(void **state)
{
    (void)state;
    struct model_spec m = llama_spec();
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    /* HF LlamaModel registration order: embed_tokens, layers[...], norm, lm_head */
    assert_int_equal(l.t[0].role, ROLE_EMBED);
    assert_int_equal(l.t[0].layer, -1);
    assert_int_equal(l.t[0].rows, 1000);
    assert_int_equal(l.t[0].cols, 64);
    /* k_proj: Linear(64 -> 32): rows = out = 32, cols = in = 64 */
    const struct tensor *k = NULL;
    for (size_t i = 0; i < l.n && !k; i++)
        if (l.t[i].role == ROLE_K)
            k = &l.t[i];
    assert_non_null(k);
    assert_int_equal(k->rows, 32);
    assert_int_equal(k->cols, 64);
    assert_int_equal(k->layer, 0);
    /* down_proj: Linear(128 -> 64) */
    const struct tensor *down = NULL;
    for (size_t i = 0; i < l.n && !down; i++)
        if (l.t[i].role == ROLE_DOWN)
            down = &l.t[i];
    assert_non_null(down);
    assert_int_equal(down->rows, 64);
    assert_int_equal(down->cols, 128);
    assert_int_equal(l.t[l.n - 1].role, ROLE_LM_HEAD);
    assert_int_equal(l.t[l.n - 2].role, ROLE_NORM);
    assert_int_equal(l.t[l.n - 2].layer, -1);
    /* every tensor of the blocks carries its layer index, in order */
    int32_t last = -1;
    for (size_t i = 1; i < l.n - 2; i++) {
        assert_true(l.t[i].layer >= last);
        last = l.t[i].layer;
    }
    assert_int_equal(last, 1);
    tensors_free(&l);
}

static void test_tied_vs_untied(void **state)
{
    (void)state;
    struct model_spec m = llama_spec();
    int64_t untied = model_param_count(&m);
    m.tied = true;
    /* tying drops the [1000, 64] head: 202048 - 64000 = 138048 */
    assert_int_equal(model_param_count(&m), 138048);
    assert_int_equal(untied - model_param_count(&m), 64000);
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    struct role_sums s = sum_roles(&l);
    assert_int_equal(s.count[ROLE_LM_HEAD], 0);
    assert_int_equal(l.n, 20);
    tensors_free(&l);

    /* a tied head that owns a bias (CodeGen-style) keeps only the [1000] bias */
    m.lm_head_bias = true;
    assert_int_equal(tensors_build(&m, &l), 0);
    s = sum_roles(&l);
    assert_int_equal(s.count[ROLE_LM_HEAD], 1);
    assert_int_equal(s.weight[ROLE_LM_HEAD], 0);
    assert_int_equal(s.bias[ROLE_LM_HEAD], 1000);
    tensors_free(&l);
}

/* plan_trained_tensors on the tiny llama with fused q/k/v and gate/up (2 layers, h 64,
 * q 64, k and v 32, intermediate 128, vocab 1000; 202048 parameters). */
static void test_trained_tensors(void **state)
{
    (void)state;
    struct model_spec m = llama_spec();
    m.fused_qkv = m.fused_gate_up = true;
    struct model_plan p;
    assert_int_equal(plan_init(&p, &m), 0);
    struct train_config c = {.finetune = FT_LORA, .lora_r = 8, .tp = 1, .stack = STACK_HF,
                             .lora_targets = TARGET_BIT(ROLE_Q)};
    double below[2], largest;
    /* PEFT adapts the fused qkv module: lora_A 8 x 64 = 512, lora_B 8 x (64 + 32 + 32) = 1024
     * a layer */
    plan_trained_tensors(&p, &c, 1.0, (const double[2]){600, 1e5}, below, &largest);
    assert_true(below[0] == 1024 && below[1] == 3072 && largest == 1024);
    /* litgpt keeps one adapter per part and adapts q only: 512 + 512 a layer */
    c.stack = STACK_LITGPT;
    plan_trained_tensors(&p, &c, 1.0, (const double[2]){600, 1e5}, below, &largest);
    assert_true(below[0] == 2048 && below[1] == 2048 && largest == 512);
    /* full fine-tuning over 2 shards: below 4096 the five norms (160), k and v (1024 x 4),
     * q and o (2048 x 4); gate, up and down hold 4096 each; the embedding 32000 is largest */
    c.finetune = FT_FULL;
    plan_trained_tensors(&p, &c, 2.0, (const double[2]){4096, 1e5}, below, &largest);
    assert_true(below[0] == 160 + 4096 + 8192 && below[1] == 101024 && largest == 32000);
    plan_free(&p);
}

static void test_fused_qkv_ids(void **state)
{
    (void)state;
    struct model_spec m = llama_spec();
    m.fused_qkv = true;
    m.fused_gate_up = true;
    m.qkv_bias = true;
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    int32_t qkv_id[2] = {0, 0}, gu_id[2] = {0, 0};
    for (size_t i = 0; i < l.n; i++) {
        const struct tensor *t = &l.t[i];
        switch (t->role) {
        case ROLE_Q:
        case ROLE_K:
        case ROLE_V:
            /* q, k, v weights and their biases share one id per layer */
            assert_true(t->fuse > 0);
            if (!qkv_id[t->layer])
                qkv_id[t->layer] = t->fuse;
            assert_int_equal(t->fuse, qkv_id[t->layer]);
            break;
        case ROLE_GATE:
        case ROLE_UP:
            assert_true(t->fuse > 0);
            if (!gu_id[t->layer])
                gu_id[t->layer] = t->fuse;
            assert_int_equal(t->fuse, gu_id[t->layer]);
            break;
        default:
            assert_int_equal(t->fuse, 0); /* o, down, norms, embeddings: not fused */
        }
    }
    /* ids differ between layers and between the two fusions */
    assert_true(qkv_id[0] != qkv_id[1]);
    assert_true(gu_id[0] != gu_id[1]);
    assert_true(qkv_id[0] != gu_id[0]);
    assert_true(qkv_id[1] != gu_id[1]);
    /* fusion changes grouping, never the count: 202048 + qkv biases 2 * (64 + 32 + 32) */
    assert_int_equal(model_param_count(&m), 202048 + 256);
    tensors_free(&l);

    m.fused_qkv = m.fused_gate_up = false;
    assert_int_equal(tensors_build(&m, &l), 0);
    for (size_t i = 0; i < l.n; i++)
        assert_int_equal(l.t[i].fuse, 0);
    tensors_free(&l);
}

static void test_opt_learned_positions_layernorm(void **state)
{
    (void)state;
    struct model_spec m = opt_spec();
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    struct role_sums s = sum_roles(&l);
    /* learned positions: (max_pos + offset 2) x hidden = 130 x 64 = 8320 */
    assert_int_equal(s.count[ROLE_POS_EMBED], 1);
    assert_int_equal(s.weight[ROLE_POS_EMBED], 8320);
    const struct tensor *pos = NULL;
    for (size_t i = 0; i < l.n && !pos; i++)
        if (l.t[i].role == ROLE_POS_EMBED)
            pos = &l.t[i];
    assert_int_equal(pos->rows, 130);
    assert_int_equal(pos->cols, 64);
    /* LayerNorm: weight + bias, 2 per layer x 2 layers + final = 5 norms, 10 tensors */
    assert_int_equal(s.count[ROLE_NORM], 10);
    assert_int_equal(s.weight[ROLE_NORM], 5 * 64);
    assert_int_equal(s.bias[ROLE_NORM], 5 * 64);
    /* biases: q, k, v, o 64 each per layer (x2 = 128 each); up 256 x 2 = 512; down 64 x 2 */
    assert_int_equal(s.bias[ROLE_Q], 128);
    assert_int_equal(s.bias[ROLE_K], 128);
    assert_int_equal(s.bias[ROLE_V], 128);
    assert_int_equal(s.bias[ROLE_O], 128);
    assert_int_equal(s.bias[ROLE_UP], 512);
    assert_int_equal(s.bias[ROLE_DOWN], 128);
    assert_int_equal(s.count[ROLE_GATE], 0); /* plain MLP: no gate */
    assert_int_equal(s.count[ROLE_LM_HEAD], 0); /* tied, no head bias */
    /* per layer: norms 2*(64+64) + q,k,v,o 4*(4096+64) + up 256*64+256 + down 64*256+64
     *          = 256 + 16640 + 16640 + 16448 = 49984
     * total: embed 64000 + pos 8320 + 2 * 49984 + final norm 128 = 172416 */
    assert_int_equal(s.total, 172416);
    assert_int_equal(model_param_count(&m), 172416);
    tensors_free(&l);

    /* the same model with RMSNorm loses the 5 norm biases: 172416 - 5 * 64 = 172096 */
    m.norm = NORM_RMSNORM;
    assert_int_equal(model_param_count(&m), 172096);
}

static void test_opt350m_projections(void **state)
{
    (void)state;
    struct model_spec m = opt_spec();
    m.emb_dim = 32; /* word_embed_proj_dim != hidden (64), as in OPT-350m */
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    struct role_sums s = sum_roles(&l);
    /* project_in Linear(32 -> 64) and project_out Linear(64 -> 32), no bias: 2 x 2048 */
    assert_int_equal(s.count[ROLE_PROJ], 2);
    assert_int_equal(s.weight[ROLE_PROJ], 4096);
    assert_int_equal(s.bias[ROLE_PROJ], 0);
    bool in = false, out = false;
    for (size_t i = 0; i < l.n; i++) {
        if (l.t[i].role != ROLE_PROJ)
            continue;
        in |= l.t[i].rows == 64 && l.t[i].cols == 32;
        out |= l.t[i].rows == 32 && l.t[i].cols == 64;
    }
    assert_true(in && out);
    /* the word embedding is [vocab, emb_dim] = 1000 x 32; positions stay at hidden */
    assert_int_equal(l.t[0].role, ROLE_EMBED);
    assert_int_equal(l.t[0].cols, 32);
    assert_int_equal(s.weight[ROLE_EMBED], 32000);
    assert_int_equal(s.weight[ROLE_POS_EMBED], 8320);
    /* 172416 - 64000 + 32000 + 4096 = 144512 */
    assert_int_equal(model_param_count(&m), 144512);
    tensors_free(&l);

    /* emb_dim == hidden is the same as 0: no projections */
    m.emb_dim = 64;
    assert_int_equal(model_param_count(&m), 172416);
}

/* KNOWN BUG (tensors.c): tensors.h promises HF registration order (Gemini packs chunks in
 * it). HF OPTDecoder.__init__ registers embed_tokens, embed_positions, project_out,
 * project_in, final_layer_norm and only then layers; tensors.c puts project_in first and
 * project_out and the final norm after the blocks. */
static void test_opt_registration_order(void **state)
{
    (void)state;
    struct model_spec m = opt_spec();
    m.emb_dim = 32;
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    assert_int_equal(l.t[0].role, ROLE_EMBED);
    assert_int_equal(l.t[1].role, ROLE_POS_EMBED);
    assert_int_equal(l.t[2].role, ROLE_PROJ); /* project_out: Linear(64 -> 32) */
    assert_int_equal(l.t[2].rows, 32);
    assert_int_equal(l.t[3].role, ROLE_PROJ); /* project_in: Linear(32 -> 64) */
    assert_int_equal(l.t[3].rows, 64);
    assert_int_equal(l.t[4].role, ROLE_NORM); /* final_layer_norm, before the layers */
    assert_int_equal(l.t[4].layer, -1);
    tensors_free(&l);
}

static void test_tensor_helpers(void **state)
{
    (void)state;
    struct tensor w = {ROLE_Q, 0, 0, false, 64, 64};
    struct tensor b = {ROLE_Q, 0, 0, true, 64, 1};
    struct tensor n = {ROLE_NORM, 0, 0, false, 64, 1};
    struct tensor e = {ROLE_EMBED, -1, 0, false, 1000, 64};
    assert_true(tensor_is_matrix(&w));
    assert_false(tensor_is_matrix(&b));
    assert_false(tensor_is_matrix(&n));
    assert_true(tensor_is_matrix(&e));
    assert_int_equal(tensor_numel(&e), 64000);
    assert_string_equal(tensor_role_name(ROLE_Q), "q");
    assert_string_equal(tensor_role_name(ROLE_GATE), "gate");
    assert_string_equal(tensor_role_name(ROLE_LM_HEAD), "lm_head");
    assert_string_equal(tensor_role_name(ROLE_COUNT), "?");
}

static void test_family_defaults(void **state)
{
    (void)state;
    int n = 0;
    for (const char *const *t = model_supported_types; *t; t++, n++) {
        struct model_spec m;
        memset(&m, 0, sizeof m);
        if (!model_family_defaults(*t, &m))
            fail_msg("model_family_defaults(\"%s\") returned false", *t);
        assert_string_equal(m.model_type, *t);
        assert_true(m.norms_per_layer >= 1);
    }
    assert_true(n >= 6); /* at least the LLMem families */

    struct model_spec m;
    memset(&m, 0, sizeof m);
    assert_false(model_family_defaults("t5", &m));
    assert_false(model_family_defaults("", &m));
    assert_false(model_family_defaults("LLAMA", &m)); /* HF model_type is lowercase */

    assert_true(model_family_defaults("llama", &m));
    assert_int_equal(m.norm, NORM_RMSNORM);
    assert_int_equal(m.mlp, MLP_GATED);
    assert_int_equal(m.pos, POS_ROTARY);
    assert_false(m.tied);
    assert_true(model_family_defaults("opt", &m));
    assert_int_equal(m.norm, NORM_LAYERNORM);
    assert_int_equal(m.pos, POS_LEARNED);
    assert_int_equal(m.pos_offset, 2);
    assert_true(m.tied);
    /* LLMem's B = 4: CodeGen and GPT-Neo upcast logits to fp32 (reference 4.5) */
    assert_true(model_family_defaults("codegen", &m));
    assert_true(m.logits_fp32);
    assert_true(model_family_defaults("gpt_neo", &m));
    assert_true(m.logits_fp32);
    assert_true(model_family_defaults("bloom", &m));
    assert_false(m.logits_fp32);
    assert_true(m.emb_norm);
}

/* Qwen-7B from the qwen family defaults, counted by hand per role (modeling_qwen.py:
 * c_attn 4096 -> 3 x 4096 with bias, c_proj 4096 -> 4096 without, w1/w2 4096 -> 11008,
 * mlp c_proj 11008 -> 4096, RMSNorm weights only, untied lm_head). The total, 7721324544,
 * is what calflops printed for Qwen-7B (MrYxJ/calculate-flops.pytorch@6bccc05f README.md). */
static void test_qwen_v1_counts(void **state)
{
    (void)state;
    struct model_spec m;
    memset(&m, 0, sizeof m);
    assert_true(model_family_defaults("qwen", &m));
    m.layers = 32;
    m.hidden = 4096;
    m.heads = m.kv_heads = 32;
    m.head_dim = 128;
    m.intermediate = 11008;
    m.vocab = 151936;
    m.max_pos = 8192;
    assert_null(model_check(&m));
    struct tensor_list l;
    assert_int_equal(tensors_build(&m, &l), 0);
    struct role_sums s = sum_roles(&l);
    const int64_t L = 32, h = 4096, i = 11008, v = 151936;
    assert_int_equal(s.weight[ROLE_EMBED], v * h);
    assert_int_equal(s.weight[ROLE_LM_HEAD], v * h); /* untied */
    assert_int_equal(s.weight[ROLE_Q] + s.weight[ROLE_K] + s.weight[ROLE_V], L * h * 3 * h);
    assert_int_equal(s.bias[ROLE_Q] + s.bias[ROLE_K] + s.bias[ROLE_V], L * 3 * h);
    assert_int_equal(s.weight[ROLE_O], L * h * h);
    assert_int_equal(s.bias[ROLE_O], 0);
    assert_int_equal(s.weight[ROLE_GATE] + s.weight[ROLE_UP] + s.weight[ROLE_DOWN], L * 3 * h * i);
    assert_int_equal(s.bias[ROLE_GATE] + s.bias[ROLE_UP] + s.bias[ROLE_DOWN], 0);
    assert_int_equal(s.weight[ROLE_NORM], (2 * L + 1) * h);
    assert_int_equal(s.bias[ROLE_NORM], 0);
    assert_int_equal(s.total, INT64_C(7721324544));
    for (size_t k = 0; k < l.n; k++) /* c_attn: q, k, v one allocation per block */
        if (l.t[k].role == ROLE_Q || l.t[k].role == ROLE_K || l.t[k].role == ROLE_V)
            assert_true(l.t[k].fuse > 0);
    tensors_free(&l);
}

static void test_model_check(void **state)
{
    (void)state;
    struct model_spec ok = llama_spec();
    assert_null(model_check(&ok));
    struct model_spec o = opt_spec();
    assert_null(model_check(&o));

    struct model_spec m = ok;
    m.hidden = 0;
    assert_string_equal(model_check(&m), "hidden");
    m = ok;
    m.layers = -1;
    assert_string_equal(model_check(&m), "layers");
    m = ok;
    m.heads = 0;
    assert_non_null(model_check(&m));
    m = ok;
    m.vocab = -5;
    assert_string_equal(model_check(&m), "vocab");
    m = ok;
    m.intermediate = 0;
    assert_string_equal(model_check(&m), "intermediate");
    m = ok;
    m.head_dim = 0;
    assert_string_equal(model_check(&m), "head_dim");
    m = ok;
    m.kv_heads = 0;
    assert_string_equal(model_check(&m), "kv_heads");
    m = ok;
    m.kv_heads = 3; /* 3 does not divide 4 heads */
    assert_string_equal(model_check(&m), "kv_heads");
    m = ok;
    m.heads = 6;
    m.kv_heads = 4; /* 4 does not divide 6 */
    assert_string_equal(model_check(&m), "kv_heads");
    m = o;
    m.max_pos = 0; /* learned positions need a table */
    assert_string_equal(model_check(&m), "max_pos");
    m = ok;
    m.norms_per_layer = 0;
    assert_string_equal(model_check(&m), "norms_per_layer");
    m = ok;
    m.hidden = INT64_C(1) << 40; /* byte counts must stay far from overflow */
    assert_non_null(model_check(&m));
}

static void test_catalog_param_counts(void **state)
{
    (void)state;
    struct catalog c;
    fixture_shipped_catalog(&c);
    assert_true(c.nmodels > 0);
    double worst = 0;
    const char *worst_name = "";
    size_t checked = 0;
    for (size_t i = 0; i < c.nmodels; i++) {
        const struct model_spec *m = &c.models[i];
        if (m->published_params <= 0)
            continue;
        int64_t n = model_param_count(m);
        double err = 100.0 * (double)(n - m->published_params) / (double)m->published_params;
        double a = err < 0 ? -err : err;
        if (a > worst) {
            worst = a;
            worst_name = m->name;
        }
        if (a > 0.5)
            print_error("%s: %lld parameters, published %lld (%+.3f %%)\n", m->name,
                        (long long)n, (long long)m->published_params, err);
        assert_true(a <= 0.5);
        checked++;
    }
    print_message("%zu catalog models checked; worst %.4f %% (%s)\n", checked, worst, worst_name);
    assert_true(checked > 0);
    catalog_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_counts),
        cmocka_unit_test(test_llama_order_and_shapes),
        cmocka_unit_test(test_tied_vs_untied),
        cmocka_unit_test(test_fused_qkv_ids),
        cmocka_unit_test(test_opt_learned_positions_layernorm),
        cmocka_unit_test(test_opt350m_projections),
        cmocka_unit_test(test_opt_registration_order),
        cmocka_unit_test(test_tensor_helpers),
        cmocka_unit_test(test_family_defaults),
        cmocka_unit_test(test_qwen_v1_counts),
        cmocka_unit_test(test_model_check),
        cmocka_unit_test(test_trained_tensors),
        cmocka_unit_test(test_catalog_param_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
