/* test_sweep.c: the sweep's guarantees (sweep.h, DESIGN.md section 8): pruning loses no
 * fitting point, the result is the same for any thread count and any shard split, and the
 * hits come out in the total order of sweep_hit_cmp.
 *
 * The space: OPT-125m and Qwen2.5-0.5B, all five methods on 1, 2, 4 GPUs, micro-batch
 * 1..16, seq 512, 1024, 2048, bf16, full and LoRA, checkpointing on and off, AdamW,
 * a 24 GiB budget on an A10G. Built through job.h exactly as the command line does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job.h"
#include "options.h"
#include "sweep.h"
#include "units.h"

#define ARGS_MAX 64
#define SPACE_ARGS                                                                        \
    "--model facebook/opt-125m --model Qwen/Qwen2.5-0.5B --methods single,cdp,adp,tp,dp+tp " \
    "--gpus 1,2,4 --batch 1..16 --seq 512,1024,2048 --precision bf16 --finetune full,lora "  \
    "--grad-ckpt on,off --optimizer adamw --budget 24GiB --gpu A10G-24GB --quiet "

/* A job built from SPACE_ARGS plus extra; the caller frees it with done(). */
struct run {
    char buf[1024];
    struct job job;
};

static struct run *start(const char *extra)
{
    static char prog[] = "llmem-sweep";
    struct run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    char *argv[ARGS_MAX + 1];
    int argc = 0;
    size_t a = strlen(SPACE_ARGS), b = strlen(extra);
    assert_true(a + b < sizeof r->buf);
    memcpy(r->buf, SPACE_ARGS, a);
    memcpy(r->buf + a, extra, b + 1);
    argv[argc++] = prog;
    for (char *p = r->buf; *p && argc < ARGS_MAX;) {
        argv[argc++] = p;
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            *p++ = '\0';
    }
    argv[argc] = NULL;
    struct options o;
    assert_int_equal(options_parse(argc, argv, 1, OPTIONS_SWEEP, &o), 0);
    assert_int_equal(job_init(&r->job, &o), 0);
    assert_int_equal(job_build_space(&r->job), 0);
    return r;
}

static void done(struct run *r)
{
    job_free(&r->job);
    free(r);
}

/* Runs a sweep with SPACE_ARGS plus extra. */
static struct sweep_result sweep_with(const char *extra)
{
    struct run *r = start(extra);
    struct sweep_result res;
    assert_int_equal(sweep_run(&r->job.sweep, &res), 0);
    done(r);
    return res;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The sorted point indices of the hits. */
static uint64_t *sorted_indices(const struct sweep_result *r)
{
    uint64_t *v = malloc((r->nhits ? r->nhits : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < r->nhits; i++)
        v[i] = r->hits[i].index;
    qsort(v, r->nhits, sizeof *v, cmp_u64);
    return v;
}

/* Recipe id first, then the sweep's order: how a result lays out its hits. */
static const struct space *recipe_space;

static int recipe_hit_cmp(const void *a, const void *b)
{
    const struct sweep_hit *x = a, *y = b;
    uint32_t rx = space_recipe_of(recipe_space, x->index), ry = space_recipe_of(recipe_space, y->index);
    return rx != ry ? (rx > ry) - (rx < ry) : sweep_hit_cmp(a, b);
}

static void assert_same_hits(const struct sweep_result *a, const struct sweep_result *b)
{
    assert_int_equal(a->nhits, b->nhits);
    for (size_t i = 0; i < a->nhits; i++) {
        const struct sweep_hit *x = &a->hits[i], *y = &b->hits[i];
        if (x->index != y->index || x->peak != y->peak || x->score != y->score ||
            x->fits != y->fits)
            fail_msg("hit %zu differs: index %llu/%llu peak %llu/%llu score %.17g/%.17g", i,
                     (unsigned long long)x->index, (unsigned long long)y->index,
                     (unsigned long long)x->peak, (unsigned long long)y->peak, x->score, y->score);
    }
}

static void test_space_size(void **state)
{
    (void)state;
    struct run *r = start("--top 0");
    /* layouts: OPT-125m (12 heads) single 1, cdp 2, adp 2, tp 2 (2, 4 | 12), dp+tp 1 (2x2)
     * = 8; Qwen2.5-0.5B (14 heads, 2 kv) the same but tp only on 2 GPUs = 7.
     * Tuning: bf16 x (full + lora r16 all) x ckpt 2 x adamw = 4. Outer: 15 x 4 = 60;
     * points: 60 x 3 seq x 16 batch = 2880. */
    assert_int_equal(r->job.sweep.space.nouter, 60);
    assert_int_equal(space_points(&r->job.sweep.space), 2880);
    assert_int_equal(r->job.sweep.budget, UINT64_C(24) * GIB);
    assert_string_equal(r->job.gpu.name, "A10G-24GB");
    done(r);
}

/* (1) Pruning loses nothing: with --no-prune every point is evaluated, and the fitting
 * points (all kept: --top 0) are exactly the pruned run's. */
static void test_pruning_loses_nothing(void **state)
{
    (void)state;
    struct sweep_result pruned = sweep_with("--top 0 --threads 1");
    struct sweep_result full = sweep_with("--top 0 --threads 1 --no-prune");
    assert_int_equal(full.space, 2880);
    assert_int_equal(full.evaluated, full.space);
    assert_int_equal(full.pruned, 0);
    assert_true(pruned.evaluated < full.evaluated); /* pruning did prune */
    assert_int_equal(pruned.pruned, pruned.space - pruned.evaluated);
    assert_true(pruned.fitting > 0);
    assert_true(pruned.fitting < full.space); /* the budget bites somewhere */
    assert_int_equal(pruned.fitting, full.fitting);
    assert_int_equal(pruned.nhits, pruned.fitting);
    assert_int_equal(full.nhits, full.fitting);
    uint64_t *a = sorted_indices(&pruned), *b = sorted_indices(&full);
    for (size_t i = 0; i < pruned.nhits; i++)
        if (a[i] != b[i])
            fail_msg("fitting sets differ at %zu: %llu vs %llu", i, (unsigned long long)a[i],
                     (unsigned long long)b[i]);
    free(a);
    free(b);
    assert_same_hits(&pruned, &full);
    print_message("space %llu, fitting %llu, evaluated %llu pruned / %llu full\n",
                  (unsigned long long)full.space, (unsigned long long)full.fitting,
                  (unsigned long long)pruned.evaluated, (unsigned long long)full.evaluated);
    sweep_result_free(&pruned);
    sweep_result_free(&full);
}

/* (2) Threads 1, 2 and 3 give identical hits (score, peak, index) and counts. */
static void test_threads_identical(void **state)
{
    (void)state;
    struct sweep_result one = sweep_with("--top 0 --threads 1");
    struct sweep_result two = sweep_with("--top 0 --threads 2");
    struct sweep_result three = sweep_with("--top 25 --threads 3");
    assert_same_hits(&one, &two);
    assert_int_equal(one.evaluated, two.evaluated);
    assert_int_equal(one.fitting, two.fitting);
    assert_int_equal(one.closest.index, two.closest.index);
    /* a bounded top-k per recipe is the prefix of that recipe's full order, whatever the
     * threads */
    assert_int_equal(three.nrecipes, one.nrecipes);
    size_t cut = 0;
    for (size_t k = 0; k < one.nrecipes; k++) {
        const struct sweep_recipe *a = &three.recipes[k], *b = &one.recipes[k];
        assert_int_equal(a->n, b->n < 25 ? b->n : 25);
        cut += b->n > 25;
        assert_int_equal(a->fitting, b->fitting);
        for (size_t i = 0; i < a->n; i++) {
            const struct sweep_hit *x = &three.hits[a->off + i], *y = &one.hits[b->off + i];
            assert_int_equal(x->index, y->index);
            assert_int_equal(x->peak, y->peak);
            assert_true(x->score == y->score);
        }
    }
    assert_true(cut > 0); /* the limit did cut some recipe */
    sweep_result_free(&one);
    sweep_result_free(&two);
    sweep_result_free(&three);
}

/* (3) Shards 1/3, 2/3 and 3/3 together give one run's fitting hits. */
static void test_shards_cover(void **state)
{
    (void)state;
    struct run *r = start("--top 0 --threads 2");
    struct sweep_result whole;
    assert_int_equal(sweep_run(&r->job.sweep, &whole), 0);
    recipe_space = &r->job.sweep.space;
    struct sweep_result merged = {0};
    uint64_t space = 0, fitting = 0;
    static const char *const shards[] = {"--top 0 --shard 1/3", "--top 0 --shard 2/3",
                                         "--top 0 --shard 3/3 --threads 2"};
    merged.hits = malloc((whole.nhits ? whole.nhits : 1) * sizeof *merged.hits);
    assert_non_null(merged.hits);
    for (size_t k = 0; k < 3; k++) {
        struct sweep_result part = sweep_with(shards[k]);
        assert_true(part.space > 0 && part.space < whole.space);
        space += part.space;
        fitting += part.fitting;
        assert_true(merged.nhits + part.nhits <= whole.nhits);
        memcpy(merged.hits + merged.nhits, part.hits, part.nhits * sizeof *part.hits);
        merged.nhits += part.nhits;
        sweep_result_free(&part);
    }
    assert_int_equal(space, whole.space);
    assert_int_equal(fitting, whole.fitting);
    /* per recipe, in recipe order like the whole run */
    qsort(merged.hits, merged.nhits, sizeof *merged.hits, recipe_hit_cmp);
    assert_same_hits(&merged, &whole);
    free(merged.hits);
    sweep_result_free(&whole);
    done(r);
}

/* (4) Hits are sorted by sweep_hit_cmp (strictly: indices are unique), all fit the budget,
 * and each matches a full evaluation of its point. */
static void test_hits_sorted_and_consistent(void **state)
{
    (void)state;
    struct run *r = start("--top 0 --threads 2");
    struct sweep_result res;
    assert_int_equal(sweep_run(&r->job.sweep, &res), 0);
    assert_true(res.nhits > 1);
    recipe_space = &r->job.sweep.space;
    for (size_t i = 0; i + 1 < res.nhits; i++)
        if (recipe_hit_cmp(&res.hits[i], &res.hits[i + 1]) >= 0)
            fail_msg("hits %zu and %zu out of order", i, i + 1);
    for (size_t k = 0; k < res.nrecipes; k++) /* each recipe's hits are its own */
        for (size_t i = 0; i < res.recipes[k].n; i++)
            assert_int_equal(space_recipe_of(recipe_space, res.hits[res.recipes[k].off + i].index), k);
    for (size_t i = 0; i < res.nhits; i++) {
        const struct sweep_hit *h = &res.hits[i];
        assert_true(h->fits);
        assert_true(h->peak <= r->job.sweep.budget);
        assert_true(h->index < space_points(&r->job.sweep.space));
        if (i % 37 == 0) { /* a sample: the point evaluated alone agrees */
            struct sweep_point pt;
            sweep_eval_point(&r->job.sweep, h->index, &pt);
            assert_int_equal(pt.peak, h->peak);
            assert_true(pt.score == h->score);
            assert_true(pt.fits);
        }
    }
    assert_true(res.has_closest);
    struct sweep_point miss; /* it misses on the margin (--margin auto: the band's upper end) */
    sweep_eval_point(&r->job.sweep, res.closest.index, &miss);
    assert_true(miss.fit_peak > r->job.sweep.budget);
    assert_true(miss.fit_peak >= miss.peak);
    assert_false(res.closest.fits);
    sweep_result_free(&res);
    done(r);
}

/* (5) --margin: what fits under the band's upper end (auto) fits under a fixed margin no
 * larger than the band, and that under the point prediction (0); pruning stays exact with
 * each margin. The shipped bands are wider than 1 % for every group, so auto is strictly
 * tighter than --margin 1 here. */
static void test_margin_nested(void **state)
{
    (void)state;
    struct sweep_result a = sweep_with("--top 0 --threads 1");
    struct sweep_result one = sweep_with("--top 0 --threads 1 --margin 1");
    struct sweep_result zero = sweep_with("--top 0 --threads 1 --margin 0");
    struct sweep_result zero_full = sweep_with("--top 0 --threads 1 --margin 0 --no-prune");
    struct sweep_result one_full = sweep_with("--top 0 --threads 1 --margin 1 --no-prune");
    assert_true(a.fitting < one.fitting);
    assert_true(one.fitting <= zero.fitting);
    assert_int_equal(zero.fitting, zero_full.fitting);
    assert_int_equal(one.fitting, one_full.fitting);
    uint64_t *za = sorted_indices(&zero), *aa = sorted_indices(&a);
    for (size_t i = 0, k = 0; i < a.nhits; i++) { /* every auto hit is a zero-margin hit */
        while (k < zero.nhits && za[k] < aa[i])
            k++;
        assert_true(k < zero.nhits && za[k] == aa[i]);
    }
    free(za);
    free(aa);
    sweep_result_free(&a);
    sweep_result_free(&one);
    sweep_result_free(&zero);
    sweep_result_free(&zero_full);
    sweep_result_free(&one_full);
}

static void test_hit_cmp_order(void **state)
{
    (void)state;
    /* fits first, then score desc, then peak asc, then index asc */
    struct sweep_hit a = {100.0, 10, 5, true}, b = {90.0, 1, 1, true};
    assert_true(sweep_hit_cmp(&a, &b) < 0);
    b.score = 100.0;
    assert_true(sweep_hit_cmp(&a, &b) > 0); /* same score: lower peak first */
    b.peak = 10;
    assert_true(sweep_hit_cmp(&a, &b) > 0); /* same peak: lower index first */
    b.index = 5;
    assert_int_equal(sweep_hit_cmp(&a, &b), 0);
    struct sweep_hit miss = {1e9, 0, 0, false};
    assert_true(sweep_hit_cmp(&a, &miss) < 0);
    assert_true(sweep_hit_cmp(&miss, &a) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_size),
        cmocka_unit_test(test_pruning_loses_nothing),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_shards_cover),
        cmocka_unit_test(test_hits_sorted_and_consistent),
        cmocka_unit_test(test_hit_cmp_order),
        cmocka_unit_test(test_margin_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
