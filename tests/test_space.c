/* test_space.c: the configuration space (space.h): only valid layouts enter it, its size
 * matches a hand count, and point indices decode to the right (outer, seq, batch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "fixtures.h"
#include "options.h"
#include "plan.h"
#include "space.h"
#include "train.h"


struct fixture {
    struct catalog cat;
    struct model_plan opt125m; /* heads 12, kv 12 */
    struct model_plan qwen;    /* Qwen2.5-0.5B: heads 14, kv 2 */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    fixture_shipped_catalog(&f->cat);
    const struct model_spec *a = catalog_find_model(&f->cat, "facebook/opt-125m");
    const struct model_spec *b = catalog_find_model(&f->cat, "Qwen/Qwen2.5-0.5B");
    if (!a || !b || plan_init(&f->opt125m, a) != 0 || plan_init(&f->qwen, b) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    plan_free(&f->opt125m);
    plan_free(&f->qwen);
    catalog_free(&f->cat);
    free(f);
    return 0;
}

/* options_parse on the space-separated words of line, then the default axes. buf holds
 * the words and must outlive o. */
static void options_from(const char *line, struct options *o, char *buf, size_t len)
{
    static char prog[] = "llmem-sweep";
    char *argv[FIXTURE_ARGS_MAX + 2] = {prog};
    int argc = 1 + fixture_words(line, buf, len, argv + 1);
    assert_int_equal(options_parse(argc, argv, 1, OPTIONS_SWEEP, o), 0);
    options_default_axes(o);
}

#define ALL_METHODS "--methods single,cdp,adp,tp,dp+tp --gpus 1,2,4,8 "
#define ONE_TUNING "--precision bf16 --finetune full --grad-ckpt on --optimizer adamw "

static struct space build(const struct options *o, const struct model_plan *const *plans, size_t n)
{
    struct space s;
    assert_int_equal(space_build(&o->axes, plans, n, &s), 0);
    return s;
}

/* Every outer configuration is a valid layout, checked by hand as well as by
 * train_config_check at a real (micro-batch, seq). */
static void check_valid(const struct space *s, const struct model_plan *const *plans)
{
    for (size_t i = 0; i < s->nouter; i++) {
        const struct space_outer *so = &s->outer[i];
        const struct train_config *c = &so->cfg;
        const struct model_spec *m = &plans[so->model]->spec;
        assert_int_equal(c->dp * c->tp * train_pp(c), c->gpus);
        assert_null(train_tp_check(c, m));
        switch (c->method) {
        case METHOD_SINGLE:
            assert_int_equal(c->gpus, 1);
            break;
        case METHOD_CDP:
        case METHOD_ADP:
            assert_int_equal(c->tp, 1);
            assert_true(c->gpus > 1);
            break;
        case METHOD_TP:
            assert_int_equal(c->dp, 1);
            assert_true(c->gpus > 1);
            break;
        case METHOD_DPTP:
            assert_true(c->dp > 1);
            assert_true(c->tp > 1);
            break;
        case METHOD_ZERO1:
        case METHOD_ZERO2:
            assert_int_equal(c->tp, 1);
            assert_true(c->gpus > 1);
            break;
        case METHOD_PP:
            assert_true(c->pp > 1);
            assert_true(c->pp <= m->layers);
            break;
        case METHOD_OFFLOAD:
            assert_int_equal(c->tp, 1);
            assert_int_not_equal(c->offload, OFFLOAD_NONE);
            break;
        default:
            fail_msg("unknown method %d", (int)c->method);
        }
        struct train_config full;
        space_decode(s, (uint64_t)i * (uint64_t)s->nseq * (uint64_t)s->nbatch, &full);
        const char *why = train_config_check(&full, m);
        if (why)
            fail_msg("outer %zu (%s, %d GPUs, tp %d): %s", i, method_name(c->method), c->gpus,
                     c->tp, why);
    }
}

static size_t count_method(const struct space *s, enum method m)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nouter; i++)
        n += s->outer[i].cfg.method == m;
    return n;
}

/* OPT-125m (heads 12, kv 12) on GPUs 1, 2, 4, 8, one tuning:
 *   single: 1 GPU only                                   1
 *   cdp, adp: 2, 4, 8 GPUs (tp 1)                        3 + 3
 *   tp: tp = gpus must divide 12: 2 yes, 4 yes, 8 no     2
 *   dp+tp (dp, tp > 1): 4 = 2x2; 8 = 4x2, 2x4 (4 | 12)   3
 *   total                                               12 */
static void test_opt125m_layouts(void **state)
{
    struct fixture *f = *state;
    struct options *o = calloc(1, sizeof *o);
    char buf[256];
    options_from(ALL_METHODS ONE_TUNING "--batch 1,2 --seq 512", o, buf, sizeof buf);
    const struct model_plan *plans[] = {&f->opt125m};
    struct space s = build(o, plans, 1);
    assert_int_equal(s.nouter, 12);
    assert_int_equal(count_method(&s, METHOD_SINGLE), 1);
    assert_int_equal(count_method(&s, METHOD_CDP), 3);
    assert_int_equal(count_method(&s, METHOD_ADP), 3);
    assert_int_equal(count_method(&s, METHOD_TP), 2);
    assert_int_equal(count_method(&s, METHOD_DPTP), 3);
    check_valid(&s, plans);
    assert_int_equal(space_points(&s), 12 * 1 * 2);
    space_free(&s);
    free(o);
}

/* Qwen2.5-0.5B (heads 14, kv 2): tp must divide both.
 *   single 1; cdp 3; adp 3; tp: only 2 (4 and 8 do not divide 2 kv heads) 1;
 *   dp+tp: 4 = 2x2, 8 = 4 dp x 2 tp (2 dp x 4 tp fails) 2; total 10 */
static void test_gqa_layouts(void **state)
{
    struct fixture *f = *state;
    struct options *o = calloc(1, sizeof *o);
    char buf[256];
    options_from(ALL_METHODS ONE_TUNING "--batch 1 --seq 512", o, buf, sizeof buf);
    const struct model_plan *plans[] = {&f->qwen};
    struct space s = build(o, plans, 1);
    assert_int_equal(s.nouter, 10);
    assert_int_equal(count_method(&s, METHOD_TP), 1);
    assert_int_equal(count_method(&s, METHOD_DPTP), 2);
    check_valid(&s, plans);
    space_free(&s);

    /* two models: the spaces add up, model indices follow the plan order */
    const struct model_plan *both[] = {&f->opt125m, &f->qwen};
    s = build(o, both, 2);
    assert_int_equal(s.nouter, 22);
    check_valid(&s, both);
    for (size_t i = 0; i < s.nouter; i++)
        assert_int_equal(s.outer[i].model, i < 12 ? 0 : 1);
    space_free(&s);
    free(o);
}

/* --tp 2 keeps only tp 2 for dp+tp: OPT-125m drops 8 = 2 dp x 4 tp: 12 - 1 = 11 */
static void test_tp_axis(void **state)
{
    struct fixture *f = *state;
    struct options *o = calloc(1, sizeof *o);
    char buf[256];
    options_from(ALL_METHODS ONE_TUNING "--tp 2 --batch 1 --seq 512", o, buf, sizeof buf);
    const struct model_plan *plans[] = {&f->opt125m};
    struct space s = build(o, plans, 1);
    assert_int_equal(s.nouter, 11);
    for (size_t i = 0; i < s.nouter; i++)
        if (s.outer[i].cfg.method == METHOD_DPTP)
            assert_int_equal(s.outer[i].cfg.tp, 2);
    space_free(&s);
    free(o);
}

/* Tuning axes per layout: precision 2 x [full 1 + lora (r 8, 16) x (attn, all) 4
 * + qlora (nf4) 4] = 2 x 9 = 18, x grad-ckpt 2 x optimizer 2 = 72. full + nf4 and
 * lora + nf4 (that is qlora) are not listed. 12 layouts x 72 = 864. */
static void test_tuning_axes(void **state)
{
    struct fixture *f = *state;
    struct options *o = calloc(1, sizeof *o);
    char buf[512];
    options_from(ALL_METHODS "--precision fp16,bf16 --finetune full,lora,qlora --quant none,nf4 "
                             "--lora-r 8,16 --lora-targets attn,all --grad-ckpt on,off "
                             "--optimizer adamw,sgd --batch 1 --seq 512",
                 o, buf, sizeof buf);
    const struct model_plan *plans[] = {&f->opt125m};
    struct space s = build(o, plans, 1);
    assert_int_equal(s.nouter, 12 * 72);
    check_valid(&s, plans);
    size_t full = 0, lora = 0, qlora = 0;
    for (size_t i = 0; i < s.nouter; i++) {
        const struct train_config *c = &s.outer[i].cfg;
        switch (c->finetune) {
        case FT_FULL:
            full++;
            assert_int_equal(c->quant, QUANT_NONE);
            assert_int_equal(c->lora_r, 0);
            assert_int_equal(c->lora_targets, 0);
            break;
        case FT_LORA:
            lora++;
            assert_int_equal(c->quant, QUANT_NONE);
            assert_true(c->lora_r == 8 || c->lora_r == 16);
            assert_true(c->lora_targets == TARGETS_ATTN || c->lora_targets == TARGETS_ALL);
            break;
        case FT_QLORA:
            qlora++;
            assert_int_equal(c->quant, QUANT_NF4);
            break;
        default:
            fail();
        }
    }
    /* per layout: full 2 x 2 x 2 = 8; lora and qlora 2 x 4 x 2 x 2 = 32 each */
    assert_int_equal(full, 12 * 8);
    assert_int_equal(lora, 12 * 32);
    assert_int_equal(qlora, 12 * 32);
    space_free(&s);
    free(o);
}

/* index = outer * (nseq * nbatch) + seq_i * nbatch + batch_i, for every point */
static void test_decode_round_trip(void **state)
{
    struct fixture *f = *state;
    struct options *o = calloc(1, sizeof *o);
    char buf[256];
    options_from(ALL_METHODS ONE_TUNING "--batch 1..3,8 --seq 512,1024,2048", o, buf, sizeof buf);
    const struct model_plan *plans[] = {&f->opt125m, &f->qwen};
    struct space s = build(o, plans, 2);
    assert_int_equal(s.nbatch, 4);
    assert_int_equal(s.nseq, 3);
    assert_int_equal(space_points(&s), (uint64_t)22 * 3 * 4);
    for (uint64_t idx = 0; idx < space_points(&s); idx++) {
        struct train_config c;
        const struct space_outer *so = space_decode(&s, idx, &c);
        size_t outer = (size_t)(so - s.outer);
        int si = -1, bi = -1;
        for (int k = 0; k < s.nseq; k++)
            if (s.seq[k] == c.seq_len)
                si = k;
        for (int k = 0; k < s.nbatch; k++)
            if (s.batch[k] == c.micro_batch)
                bi = k;
        assert_true(si >= 0 && bi >= 0);
        assert_int_equal((uint64_t)outer * 12 + (uint64_t)si * 4 + (uint64_t)bi, idx);
        /* the rest of the configuration is the outer entry's */
        assert_int_equal(c.method, so->cfg.method);
        assert_int_equal(c.gpus, so->cfg.gpus);
        assert_int_equal(c.tp, so->cfg.tp);
    }
    /* spot checks: index 0 is the first outer at seq 512, batch 1; the last is the last
     * outer at seq 2048, batch 8; 4 * 1 + 2 = 6 is seq 1024, batch 3 */
    struct train_config c;
    assert_ptr_equal(space_decode(&s, 0, &c), &s.outer[0]);
    assert_int_equal(c.seq_len, 512);
    assert_int_equal(c.micro_batch, 1);
    assert_ptr_equal(space_decode(&s, space_points(&s) - 1, &c), &s.outer[s.nouter - 1]);
    assert_int_equal(c.seq_len, 2048);
    assert_int_equal(c.micro_batch, 8);
    space_decode(&s, 6, &c);
    assert_int_equal(c.seq_len, 1024);
    assert_int_equal(c.micro_batch, 3);
    space_free(&s);
    free(o);
}

/* The methods beyond LLMem on Qwen2.5-0.5B (24 layers, heads 14, kv 2), GPUs 1, 2, 8, 16:
 *   zero1, zero2: 2, 8, 16 GPUs (tp 1)                             3 + 3
 *   offload: every count (ZeRO-Offload runs on one GPU)            4
 *   pp on 2: pp 2 x tp 1                                           1
 *   pp on 8: pp 2 (tp 1, 2; 4 does not divide kv 2), 4 (tp 1, 2),
 *            8 (tp 1)                                              5
 *   pp on 16: pp 2 (tp 1, 2), 4 (tp 1, 2), 8 (tp 1, 2), 16 (tp 1)  7
 *   total                                                         23
 * with 4 x pp micro-batches a step unless --pp-microbatches says. */
static void test_beyond_llmem_layouts(void **state)
{
    struct fixture *f = *state;
    struct options o;
    char buf[512];
    const struct model_plan *plans[] = {&f->qwen};
    options_from("--methods zero1,zero2,pp,offload --gpus 1,2,8,16 " ONE_TUNING, &o, buf, sizeof buf);
    struct space s = build(&o, plans, 1);
    check_valid(&s, plans);
    assert_int_equal(count_method(&s, METHOD_ZERO1), 3);
    assert_int_equal(count_method(&s, METHOD_ZERO2), 3);
    assert_int_equal(count_method(&s, METHOD_OFFLOAD), 4);
    assert_int_equal(count_method(&s, METHOD_PP), 13);
    assert_int_equal(s.nouter, 23);
    for (size_t i = 0; i < s.nouter; i++)
        if (s.outer[i].cfg.method == METHOD_PP)
            assert_int_equal(s.outer[i].cfg.microbatches, 4 * s.outer[i].cfg.pp);
    space_free(&s);
    /* --pp and --tp narrow the grid; --pp-microbatches sets m */
    options_from("--methods pp --gpus 16 --pp 4 --tp 2 --pp-microbatches 6 " ONE_TUNING, &o, buf, sizeof buf);
    s = build(&o, plans, 1);
    assert_int_equal(s.nouter, 1);
    assert_int_equal(s.outer[0].cfg.pp, 4);
    assert_int_equal(s.outer[0].cfg.tp, 2);
    assert_int_equal(s.outer[0].cfg.dp, 2);
    assert_int_equal(s.outer[0].cfg.microbatches, 6);
    space_free(&s);
}

/* An empty space says why, per method and GPU count. */
static void test_empty_reason(void **state)
{
    struct fixture *f = *state;
    struct options o;
    char buf[512], why[512];
    const struct model_plan *plans[] = {&f->qwen};
    options_from("--methods tp,pp --gpus 16 --pp 32 " ONE_TUNING, &o, buf, sizeof buf);
    struct space s = build(&o, plans, 1);
    assert_int_equal(s.nouter, 0);
    space_why_empty(&o.axes, &f->qwen, why, sizeof why);
    assert_string_equal(why, "tp on 16 GPU(s): tp must divide the attention heads and the KV heads "
                             "(Megatron-style TP splits heads; only --stack colossal splits weights "
                             "without regard to heads); pp on 16 GPU(s): pp exceeds the layer count");
    space_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt125m_layouts),
        cmocka_unit_test(test_gqa_layouts),
        cmocka_unit_test(test_tp_axis),
        cmocka_unit_test(test_tuning_axes),
        cmocka_unit_test(test_decode_round_trip),
        cmocka_unit_test(test_beyond_llmem_layouts),
        cmocka_unit_test(test_empty_reason),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
