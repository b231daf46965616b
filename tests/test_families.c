/* test_families.c: terms of today's families worked by hand: mixture of experts, q/k
 * norms, and the per-stack TP rule.
 *
 * The tiny MoE model: mixtral-style, layers 2, hidden 64, heads 4 of 16, kv_heads 2,
 * 4 experts of width 32, 2 a token, vocab 1000, untied. Its dense twin is the llama-style
 * model with one MLP of width 64 = 2 x 32, the width a token passes through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mempoint.h"
#include "plan.h"
#include "speed.h"
#include "train.h"

static struct model_plan moe, dense;

static void tiny(struct model_spec *m, const char *type)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "tiny-%s", type);
    model_family_defaults(type, m);
    m->layers = 2, m->hidden = 64, m->heads = 4, m->kv_heads = 2, m->head_dim = 16;
    m->vocab = 1000, m->max_pos = 128;
}

static int setup(void **state)
{
    struct model_spec m;
    (void)state;
    tiny(&m, "mixtral");
    m.intermediate = m.moe_intermediate = 32;
    m.experts = 4, m.experts_per_tok = 2;
    if (plan_init(&moe, &m) != 0)
        return -1;
    tiny(&m, "llama");
    m.intermediate = 64;
    return plan_init(&dense, &m);
}

static int teardown(void **state)
{
    (void)state;
    plan_free(&moe);
    plan_free(&dense);
    return 0;
}

static struct train_config config(void)
{
    struct train_config c = {
        .method = METHOD_SINGLE, .gpus = 1, .tp = 1, .dp = 1, .ep = 1, .micro_batch = 2,
        .seq_len = 8, .precision = PREC_BF16_PURE, .finetune = FT_FULL,
        .optimizer = OPT_ADAMW, .stack = STACK_HF,
    };
    return c;
}

static void predict(const struct model_plan *p, const struct train_config *c, struct mem_estimate *e)
{
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    memmodel_predict(p, c, &o, e);
}

/* embed 64,000; a block: norms 128, q/o 4096 each, k/v 2048 each, router 64 x 4 = 256,
 * experts 4 x 3 x 64 x 32 = 24,576: 37,248; two blocks 74,496; final norm 64; lm_head
 * 64,000: 202,560. A token passes 2 of the 4 experts: 202,560 - 2 x 12,288 = 177,984. */
static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(moe.params, 202560);
    assert_int_equal(moe.expert_p, 2 * 24576);
    assert_int_equal(moe.layer_expert_p, 24576);
    assert_int_equal(moe.moe_layers, 2);
    assert_true(plan_active_params(&moe) == 177984.0);
    assert_true(moe.inter_active == 64.0);
    assert_true(plan_active_params(&dense) == (double)dense.params);
    /* DeepSeek's first blocks are dense: the largest block is a MoE one */
    struct model_spec m = moe.spec;
    struct model_plan p;
    m.dense_layers = 1, m.intermediate = 100;
    assert_int_equal(plan_init(&p, &m), 0);
    assert_int_equal(p.moe_layers, 1);
    assert_int_equal(p.layer_p, 37248);
    assert_true(p.inter_active == (100.0 + 64.0) / 2.0);
    plan_free(&p);
}

/* Per MoE block and token (bf16, e_a = 2): router softmax 4 x 4 = 16, top-k indices
 * 8 x 2 = 16, per routed token gathered input + expert output 2 x 2 x 64 = 256, routing
 * weight 2, indices 16: 2 x 274 = 548; 580 in all. Over 2 blocks and 16 tokens: 18,560
 * above the dense twin, whose MLP tensors are the same size. */
static void test_activations(void **state)
{
    (void)state;
    struct train_config c = config();
    struct mem_estimate a, b;
    predict(&moe, &c, &a);
    predict(&dense, &c, &b);
    assert_int_equal(a.phase[PHASE_FORWARD][TERM_ACTIVATIONS] - b.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     18560);
}

/* Expert parallelism on 2 GPUs (CDP): a rank keeps 2 of the 4 experts: weights, gradients
 * -24,576 elements x 2 bytes = -49,152 each. Under ZeRO-3 the shard is the same. */
static void test_expert_parallel_weights(void **state)
{
    (void)state;
    struct train_config c = config();
    struct mem_estimate a, b;
    c.method = METHOD_CDP, c.gpus = 2, c.dp = 2;
    assert_null(train_config_check(&c, &moe.spec));
    predict(&moe, &c, &a);
    c.ep = 2;
    assert_null(train_config_check(&c, &moe.spec));
    predict(&moe, &c, &b);
    assert_int_equal(a.phase[PHASE_OPTIMIZER][TERM_PARAMS] - b.phase[PHASE_OPTIMIZER][TERM_PARAMS], 49152);
    assert_int_equal(a.phase[PHASE_OPTIMIZER][TERM_GRADS] - b.phase[PHASE_OPTIMIZER][TERM_GRADS], 49152);
    c.method = METHOD_ADP;
    predict(&moe, &c, &b);
    c.ep = 1;
    predict(&moe, &c, &a);
    assert_int_equal(a.phase[PHASE_OPTIMIZER][TERM_PARAMS], b.phase[PHASE_OPTIMIZER][TERM_PARAMS]);
}

/* FLOPs: the experts a token passes equal the dense twin's MLP; the router adds
 * 2 x 256 FLOPs a block and pass, 3 passes (forward, input and weight gradients), 2
 * blocks: 3,072 per token. */
static void test_active_flops(void **state)
{
    (void)state;
    struct gpu_spec g = {.name = "TEST", .bf16_tflops = 100, .fp16_tflops = 100, .fp32_tflops = 50,
                         .mem_bw_gbs = 1000, .interconnect_gbs = 300, .gpus_per_node = 8};
    struct train_config c = config();
    struct speed_prepared a, b;
    speed_prepare(&moe, &c, &g, &a);
    speed_prepare(&dense, &c, &g, &b);
    assert_true(a.flops_tok - b.flops_tok == 3072.0);
    /* expert parallelism adds the dispatch and combine all-to-alls, exposed per token */
    c.method = METHOD_CDP, c.gpus = 2, c.dp = 2;
    speed_prepare(&moe, &c, &g, &a);
    c.ep = 2;
    speed_prepare(&moe, &c, &g, &b);
    assert_true(a.act_comm_tok == 0.0);
    assert_true(b.act_comm_tok > 0.0);
}

static void test_ep_rules(void **state)
{
    (void)state;
    struct train_config c = config();
    c.method = METHOD_CDP, c.gpus = 2, c.dp = 2, c.ep = 2;
    assert_non_null(train_config_check(&c, &dense.spec)); /* not a MoE model */
    c.gpus = c.dp = 3, c.ep = 3;
    assert_non_null(train_config_check(&c, &moe.spec)); /* 3 does not divide 4 experts */
    c.gpus = c.dp = 4, c.ep = 4;
    assert_null(train_config_check(&c, &moe.spec));
    c.method = METHOD_TP, c.tp = 4, c.dp = 1;
    assert_non_null(train_config_check(&c, &moe.spec)); /* ep lives in the DP group */
}

/* BioGPT-Large: 25 heads of 64, hidden 1600, MLP 6400. LLMem ran it at 4TP under
 * Colossal-AI, which splits each weight's last dimension (1600 / 4, 6400 / 4); a
 * Megatron-style split needs 4 to divide 25 heads. SantaCoder's single KV head likewise. */
static void test_tp_per_stack(void **state)
{
    (void)state;
    struct model_spec m;
    memset(&m, 0, sizeof m);
    model_family_defaults("biogpt", &m);
    m.layers = 48, m.hidden = 1600, m.heads = 25, m.kv_heads = 25, m.head_dim = 64;
    m.intermediate = 6400, m.vocab = 57717, m.max_pos = 2048;
    struct train_config c = config();
    c.method = METHOD_TP, c.gpus = 4, c.tp = 4;
    c.stack = STACK_COLOSSAL;
    assert_null(train_config_check(&c, &m));
    c.stack = STACK_HF;
    assert_non_null(strstr(train_config_check(&c, &m), "heads"));
    c.method = METHOD_DPTP, c.tp = 2, c.dp = 2, c.stack = STACK_COLOSSAL;
    assert_null(train_config_check(&c, &m));
    c.tp = 3, c.gpus = 6, c.dp = 2; /* 1600 / 3 is not whole */
    assert_non_null(strstr(train_config_check(&c, &m), "hidden"));
    model_family_defaults("gpt_bigcode", &m);
    m.layers = 24, m.hidden = 2048, m.heads = 16, m.kv_heads = 1, m.head_dim = 128;
    m.intermediate = 8192, m.vocab = 49280, m.max_pos = 2048;
    c.method = METHOD_TP, c.gpus = c.tp = 4, c.dp = 1;
    c.stack = STACK_COLOSSAL;
    assert_null(train_config_check(&c, &m));
    c.stack = STACK_TORCHTITAN;
    assert_non_null(train_config_check(&c, &m));
}

/* Qwen3-style q_norm / k_norm over head_dim on the dense twin: 2 x 16 weights a block;
 * per block and token the fp32 inputs and (trained) 16-bit outputs over q and k:
 * (4 + 2) x (4 + 2) x 16 = 576; 2 blocks x 16 tokens: 18,432. */
static void test_qk_norm(void **state)
{
    (void)state;
    struct model_spec m = dense.spec;
    struct model_plan p;
    struct train_config c = config();
    struct mem_estimate a, b;
    m.qk_norm = QK_NORM_HEAD;
    assert_int_equal(plan_init(&p, &m), 0);
    assert_int_equal(p.params - dense.params, 64);
    predict(&p, &c, &a);
    predict(&dense, &c, &b);
    assert_int_equal(a.phase[PHASE_FORWARD][TERM_ACTIVATIONS] - b.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     18432);
    plan_free(&p);
    /* OLMo 2 normalises the whole projection: 64 + 32 weights a block */
    m.qk_norm = QK_NORM_PROJ;
    assert_int_equal(plan_init(&p, &m), 0);
    assert_int_equal(p.params - dense.params, 2 * 96);
    plan_free(&p);
}

/* Phi-3's fused qkv_proj and gate_up_proj (the tiny dense twin, MLP 64): PEFT wraps the
 * fused module, so `q+v` adapts qkv_proj: r x (64 + 64 + 32 + 32) = 8 x 192 a block;
 * litgpt keeps one adapter per enabled part: 8 x ((64 + 64) + (64 + 32)) = 8 x 224. `all`
 * under PEFT: qkv 192 + o 128 + gate_up 64 + 128 + down 64 + 64 = 640, x 8 x 2 blocks. */
static void test_fused_lora(void **state)
{
    (void)state;
    struct model_spec m = dense.spec;
    struct model_plan p;
    model_family_defaults("phi3", &m);
    assert_true(m.fused_qkv && m.fused_gate_up);
    assert_int_equal(plan_init(&p, &m), 0);
    struct train_config c = config();
    c.finetune = FT_LORA, c.lora_r = 8;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    assert_int_equal(plan_lora_targets(&p, &c), TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V));
    assert_int_equal(plan_lora_params_cfg(&p, &c), 8 * 192 * 2);
    c.stack = STACK_LITGPT;
    assert_int_equal(plan_lora_targets(&p, &c), c.lora_targets);
    assert_int_equal(plan_lora_params_cfg(&p, &c), 8 * 224 * 2);
    c.stack = STACK_HF, c.lora_targets = TARGETS_ALL;
    assert_int_equal(plan_lora_params_cfg(&p, &c), 8 * 640 * 2);
    plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_expert_parallel_weights),
        cmocka_unit_test(test_active_flops),
        cmocka_unit_test(test_ep_rules),
        cmocka_unit_test(test_tp_per_stack),
        cmocka_unit_test(test_qk_norm),
        cmocka_unit_test(test_fused_lora),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
