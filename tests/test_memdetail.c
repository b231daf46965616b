/* test_memdetail.c: the tensors of `explain --detail` add up to the terms they explain.
 *
 * Hand-worked rows on the tiny model (tiny_model.h; test_memmodel.c derives its counts),
 * then, for catalog models of every kind (dense, tied and untied, fused q/k/v and gate/up,
 * MoE) under every method, fine-tuning mode (full, LoRA, QLoRA, int8), stack, checkpointing
 * mode, precision and optimizer: at every phase the prediction has, the rows of each term
 * sum to the term memmodel prints, and no row is left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "fixtures.h"
#include "memdetail.h"
#include "mempoint.h"
#include "plan.h"
#include "tiny_model.h"

static const struct mem_detail_row *find_row(const struct mem_detail *d, enum mem_term t, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].term == t && !strcmp(d->rows[i].name, name))
            return &d->rows[i];
    return NULL;
}

static struct train_config tiny_config(void)
{
    struct train_config c = {
        .method = METHOD_SINGLE, .gpus = 1, .tp = 1, .dp = 1, .pp = 1, .microbatches = 1, .ep = 1,
        .micro_batch = 2, .seq_len = 8, .precision = PREC_BF16, .finetune = FT_QLORA, .quant = QUANT_NF4,
        .lora_r = 4, .lora_targets = TARGETS_ATTN | TARGETS_MLP, .optimizer = OPT_ADAMW, .stack = STACK_HF,
    };
    train_set_ckpt(&c, CKPT_ON);
    c.features = stack_features(c.stack);
    return c;
}

/* The detail of QLoRA r4 on the tiny model (tiny_config) at phase ph. */
static void tiny_detail(enum mem_phase ph, struct mem_estimate *e, struct mem_detail *d)
{
    struct model_plan p;
    assert_int_equal(tiny_model_plan(&p), 0);
    struct train_config c = tiny_config();
    struct mem_options o = {.base_bytes = 1 << 20};
    memmodel_predict(&p, &c, &o, e);
    memdetail_build(&p, &c, &o, e, ph, d);
    plan_free(&p);
}

/* QLoRA r4 on the tiny model at its optimizer step (hand-worked):
 *   q weight 64 x 64 in NF4: 4096 x (0.5 + 4/64) = 2304 bytes a layer, 4608 for two;
 *   lora on q: r x (in + out) = 4 x 128 = 512 fp32 elements a layer: 4096 bytes for two,
 *   their AdamW states 2 x 4096 and gradients 4096. */
static void test_tiny_qlora_rows(void **state)
{
    (void)state;
    struct mem_estimate e;
    static struct mem_detail d;
    tiny_detail(PHASE_OPTIMIZER, &e, &d);
    const struct mem_detail_row *q = find_row(&d, TERM_PARAMS, "q weight");
    assert_non_null(q);
    assert_int_equal(q->bytes, 4608);
    assert_string_equal(q->shape, "64 x 64");
    assert_string_equal(q->count, "1 x 2 layers");
    assert_string_equal(q->dtype, "nf4");
    const struct mem_detail_row *a = find_row(&d, TERM_PARAMS, "lora_A + lora_B on q");
    assert_non_null(a);
    assert_int_equal(a->bytes, 4096);
    assert_string_equal(a->dtype, "fp32");
    a = find_row(&d, TERM_OPTIMIZER, "lora_A + lora_B on q optimizer states");
    assert_non_null(a);
    assert_int_equal(a->bytes, 8192);
    a = find_row(&d, TERM_GRADS, "lora_A + lora_B on q gradient");
    assert_non_null(a);
    assert_int_equal(a->bytes, 4096);
    /* the base term: the context and two cuBLAS workspaces (none given here) */
    assert_int_equal(memdetail_term_sum(&d, TERM_BASE), e.phase[PHASE_OPTIMIZER][TERM_BASE]);
}

/* Checkpointed activations at the forward's end: every block keeps its input, micro-batch
 * 2 x 8 tokens x 64: in fp32 under HF's prepared k-bit base (activations.c act_fp32_norms),
 * 4096 bytes a block; in bf16 when nothing prepared it (stack trl), 2048. */
static void test_tiny_checkpoint_rows(void **state)
{
    (void)state;
    struct mem_estimate e;
    static struct mem_detail d;
    tiny_detail(PHASE_FORWARD, &e, &d);
    const struct mem_detail_row *r = find_row(&d, TERM_ACTIVATIONS, "block inputs (checkpoints)");
    assert_non_null(r);
    assert_int_equal(r->bytes, 2 * 4096);
    assert_string_equal(r->shape, "2 x 8 x 64");
    assert_string_equal(r->count, "2 blocks");
    struct model_plan p;
    assert_int_equal(tiny_model_plan(&p), 0);
    struct train_config c = tiny_config();
    c.stack = STACK_TRL, c.features = stack_features(STACK_TRL);
    struct mem_options o = {.base_bytes = 1 << 20};
    memmodel_predict(&p, &c, &o, &e);
    memdetail_build(&p, &c, &o, &e, PHASE_FORWARD, &d);
    plan_free(&p);
    r = find_row(&d, TERM_ACTIVATIONS, "block inputs (checkpoints)");
    assert_non_null(r);
    assert_int_equal(r->bytes, 2 * 2048);
}

/* --- every kind of configuration on catalog models ----------------------------------- */

static struct catalog cat;
static long checked, phases_checked;

static int load_catalog(void **state)
{
    (void)state;
    fixture_shipped_catalog(&cat);
    return 0;
}

static int free_catalog(void **state)
{
    (void)state;
    catalog_free(&cat);
    return 0;
}

struct layout {
    enum method method;
    int gpus, tp, pp, ep;
};

static bool make_config(const struct model_plan *p, const struct layout *l, enum finetune ft, enum quant q,
                        enum stack stack, int ckpt, enum precision prec, enum optimizer opt,
                        struct train_config *c)
{
    memset(c, 0, sizeof *c);
    c->method = l->method;
    c->gpus = l->gpus;
    c->tp = l->tp;
    c->pp = l->pp;
    c->ep = l->ep;
    c->microbatches = l->method == METHOD_PP ? 4 * l->pp : 1;
    c->dp = l->gpus / l->tp / l->pp;
    c->offload = l->method == METHOD_OFFLOAD ? OFFLOAD_OPTIMIZER : OFFLOAD_NONE;
    c->micro_batch = 2;
    c->seq_len = 1024;
    c->precision = prec;
    c->finetune = ft;
    c->quant = q;
    if (ft != FT_FULL) {
        c->lora_r = 16;
        c->lora_targets = TARGETS_ATTN | TARGETS_MLP;
    }
    train_set_ckpt(c, ckpt);
    c->optimizer = opt;
    c->stack = stack;
    c->features = stack_features(stack);
    return train_config_check(c, &p->spec) == NULL;
}

/* Every phase the prediction has: each term equals the sum of its rows. */
static void check_config(struct model_plan *p, const struct train_config *c)
{
    struct mem_options o;
    struct mem_estimate e;
    static struct mem_detail d;
    mem_options_for_gpu(catalog_find_gpu(&cat, "H100-SXM-80GB"), false, &o);
    if (memmodel_uses_llmem(c->stack, &o))
        plan_chunk(p);
    memmodel_predict(p, c, &o, &e);
    /* the sweep's point loop decides "fits" on memmodel_peak: the same bytes */
    struct mem_prepared mp;
    struct mem_seq ms;
    memmodel_prepare(p, c, &o, &mp);
    memmodel_seq(&mp, c->seq_len, &ms);
    assert_int_equal(memmodel_peak(p, c, &o, &mp, &ms), e.device);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (!e.phase_reserved[ph])
            continue;
        memdetail_build(p, c, &o, &e, (enum mem_phase)ph, &d);
        assert_false(d.truncated);
        for (int k = 0; k < TERM_COUNT; k++) {
            const uint64_t want = e.phase[d.phase][k], got = memdetail_term_sum(&d, (enum mem_term)k);
            if (want != got)
                fail_msg("%s %s %s %s ckpt %s stack %s, %s: %s is %llu, its rows %llu", p->spec.name,
                         method_name(c->method), finetune_name(c->finetune), quant_name(c->quant),
                         ckpt_mode_name(c), stack_name(c->stack), mem_phase_name(d.phase),
                         mem_term_name((enum mem_term)k), (unsigned long long)want, (unsigned long long)got);
        }
        phases_checked++;
    }
    checked++;
}

static void test_rows_add_up(void **state)
{
    (void)state;
    static const char *const models[] = {
        "meta-llama/Llama-3.1-8B",          /* dense, GQA, untied */
        "gpt2",                             /* tied, LayerNorm, biases, fused c_attn */
        "microsoft/Phi-3-mini-4k-instruct", /* fused qkv_proj and gate_up_proj */
        "mistralai/Mixtral-8x7B-v0.1",      /* MoE */
        "Qwen/Qwen3-30B-A3B",               /* MoE, q/k norms */
        "facebook/opt-350m",                /* project_in / project_out */
    };
    static const struct layout layouts[] = {
        {METHOD_SINGLE, 1, 1, 1, 1}, {METHOD_CDP, 4, 1, 1, 1},    {METHOD_CDP, 8, 1, 1, 2},
        {METHOD_ADP, 8, 1, 1, 1},    {METHOD_ADP, 8, 1, 1, 4},    {METHOD_TP, 4, 4, 1, 1},
        {METHOD_DPTP, 8, 2, 1, 1},   {METHOD_ZERO1, 8, 1, 1, 1},  {METHOD_ZERO2, 8, 1, 1, 1},
        {METHOD_PP, 8, 2, 4, 1},     {METHOD_OFFLOAD, 4, 1, 1, 1},
    };
    static const struct { enum finetune ft; enum quant q; } modes[] = {
        {FT_FULL, QUANT_NONE}, {FT_LORA, QUANT_NONE}, {FT_QLORA, QUANT_NF4}, {FT_LORA, QUANT_INT8},
        {FT_QLORA, QUANT_NF4_DQ},
    };
    static const enum stack stacks[] = {STACK_HF, STACK_LITGPT, STACK_TORCHTUNE, STACK_TORCHTITAN, STACK_COLOSSAL};
    static const int ckpts[] = {CKPT_ON, CKPT_OFF, CKPT_SELECTIVE};
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        const struct model_spec *m = catalog_find_model(&cat, models[mi]);
        assert_non_null(m);
        struct model_plan p;
        assert_int_equal(plan_init(&p, m), 0);
        for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
            for (size_t fi = 0; fi < sizeof modes / sizeof modes[0]; fi++)
                for (size_t si = 0; si < sizeof stacks / sizeof stacks[0]; si++)
                    for (size_t ki = 0; ki < sizeof ckpts / sizeof ckpts[0]; ki++) {
                        struct train_config c;
                        if (make_config(&p, &layouts[li], modes[fi].ft, modes[fi].q, stacks[si], ckpts[ki],
                                        PREC_BF16, OPT_ADAMW, &c))
                            check_config(&p, &c);
                    }
        /* precisions and optimizers on one layout each */
        static const enum precision precs[] = {PREC_FP32, PREC_FP16, PREC_BF16_PURE};
        static const enum optimizer opts[] = {OPT_ADAMW8BIT, OPT_SGD};
        for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
            for (size_t fi = 0; fi < sizeof modes / sizeof modes[0]; fi++) {
                struct train_config c;
                for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++)
                    if (make_config(&p, &layouts[li], modes[fi].ft, modes[fi].q, STACK_HF, CKPT_ON, precs[k],
                                    OPT_ADAMW, &c))
                        check_config(&p, &c);
                for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
                    if (make_config(&p, &layouts[li], modes[fi].ft, modes[fi].q, STACK_HF, CKPT_ON, PREC_BF16,
                                    opts[k], &c))
                        check_config(&p, &c);
                /* transformers <= 4.39's rotary tables, in either dtype (resident.c
                 * resident_rope_table): whole on every rank, a pipeline stage's blocks' */
                for (int k = 0; k < 2; k++)
                    if (make_config(&p, &layouts[li], modes[fi].ft, modes[fi].q, STACK_HF, CKPT_ON, PREC_BF16,
                                    OPT_ADAMW, &c)) {
                        c.features |= FEAT_ROPE_TABLES | (k ? FEAT_ROPE_TABLES_FP32 : 0);
                        check_config(&p, &c);
                    }
                /* bitsandbytes' paged AdamW and AdamW8bit (resident.c bnb_paged_states) */
                for (int k = 0; k < 2; k++)
                    if (make_config(&p, &layouts[li], modes[fi].ft, modes[fi].q, STACK_HF, CKPT_ON, PREC_BF16,
                                    k ? OPT_ADAMW8BIT : OPT_ADAMW, &c)) {
                        c.features |= FEAT_PAGED_OPT;
                        check_config(&p, &c);
                    }
            }
        /* --precision fp8 (full training only): every stack and checkpointing mode, with
         * the float8 all-gather and rowwise recipes and torch.compile */
        static const uint32_t fp8_feats[] = {0, FEAT_FP8_ALLGATHER, FEAT_FP8_ROWWISE, FEAT_COMPILE};
        for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
            for (size_t si = 0; si < sizeof stacks / sizeof stacks[0]; si++)
                for (size_t ki = 0; ki < sizeof ckpts / sizeof ckpts[0]; ki++)
                    for (size_t k = 0; k < sizeof fp8_feats / sizeof fp8_feats[0]; k++) {
                        struct train_config c;
                        if (!make_config(&p, &layouts[li], FT_FULL, QUANT_NONE, stacks[si], ckpts[ki], PREC_FP8,
                                         OPT_ADAMW, &c))
                            continue;
                        c.features |= fp8_feats[k] | (fp8_feats[k] == FEAT_FP8_ALLGATHER ? FEAT_FSDP : 0);
                        if (train_config_check(&c, &p.spec) == NULL)
                            check_config(&p, &c);
                    }
        plan_free(&p);
    }
    /* the loops above reach every kind: a change that makes most configurations invalid
     * must not pass silently */
    assert_true(checked > 2000);
    assert_true(phases_checked > 4 * checked);
    print_message("%ld configurations, %ld phases\n", checked, phases_checked);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_qlora_rows),
        cmocka_unit_test(test_tiny_checkpoint_rows),
        cmocka_unit_test_setup_teardown(test_rows_add_up, load_catalog, free_catalog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
