/* test_band.c: error bands (engine/inputs/band.c) on hand-worked residuals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "band.h"
#include "units.h"

#define N 40

/* 40 residuals: sources A..D, 10 rows each. hf/lora rows (A, B) have ratios 1.01..1.20,
 * litgpt/full rows (C, D) 0.80..0.99. */
static size_t make(struct band_sample *s)
{
    static const char *const src[4] = {"A", "B", "C", "D"};
    for (int i = 0; i < N; i++) {
        int g = i / 10, hf = g < 2;
        s[i].key = (struct band_key){hf ? STACK_HF : STACK_LITGPT, hf ? FT_LORA : FT_FULL, DATA_VARIABLE};
        s[i].source = src[g];
        /* A: 1.01,1.03,...  B: 1.02,1.04,... ; C, D mirrored below 1 */
        int k = (i % 10) * 2 + (g % 2) + 1; /* 1..20 */
        s[i].ratio = hf ? 1.0 + 0.01 * k : 1.0 - 0.01 * k;
    }
    return N;
}

/* n = 40: k = floor(0.05 x 41) = 2, so the band is [2nd smallest, 2nd largest]. */
static void test_all_rows_rank(void **state)
{
    (void)state;
    struct band_sample s[N];
    make(s);
    struct band b;
    /* colossal has no rows: no finer group, the whole pool (4 sources, 40 rows) */
    band_from_samples(s, N, (struct band_key){STACK_COLOSSAL, FT_FULL, DATA_VARIABLE}, NULL, &b);
    assert_int_equal(b.level, BAND_ALL);
    assert_int_equal(b.rows, 40);
    assert_int_equal(b.sources, 4);
    assert_true(fabs(b.lo - 0.81) < 1e-12); /* 0.80, 0.81, ... */
    assert_true(fabs(b.hi - 1.19) < 1e-12); /* ..., 1.19, 1.20 */
}

/* A group of 20 rows from 2 sources is too few sources: the band falls back to all rows;
 * leaving one source out leaves 30 rows: k = floor(0.05 x 31) = 1 (min and max). */
static void test_fallback_and_leave_out(void **state)
{
    (void)state;
    struct band_sample s[N];
    make(s);
    struct band b;
    struct band_key hf = {STACK_HF, FT_LORA, DATA_VARIABLE};
    band_from_samples(s, N, hf, NULL, &b);
    assert_int_equal(b.level, BAND_ALL);
    band_from_samples(s, N, hf, "A", &b);
    assert_int_equal(b.rows, 30);
    assert_int_equal(b.sources, 3);
    assert_true(fabs(b.lo - 0.80) < 1e-12);
    assert_true(fabs(b.hi - 1.20) < 1e-12); /* B's largest */
    /* without A and B, every residual is below 1: the band still holds the prediction */
    struct band_sample cd[20];
    memcpy(cd, s + 20, sizeof cd);
    cd[0].source = "E"; /* three sources: C, D, E */
    band_from_samples(cd, 20, hf, NULL, &b);
    assert_int_equal(b.level, BAND_ALL);
    assert_true(b.hi == 1.0);
    assert_true(fabs(b.lo - 0.80) < 1e-12); /* k = floor(0.05 x 21) = 1 */
    band_from_samples(cd, 20, hf, "E", &b); /* 19 rows from 2 sources: none */
    assert_int_equal(b.level, -1);
    assert_true(b.lo == 1.0 && b.hi == 1.0);
}

/* A finer group wins when it has enough rows and sources. */
static void test_finest_group(void **state)
{
    (void)state;
    struct band_sample s[N];
    make(s);
    s[0].source = "X"; /* hf/lora: A (9 rows), B, X: three sources, 20 rows */
    struct band b;
    struct train_config c = {.stack = STACK_HF, .finetune = FT_LORA, .data = DATA_VARIABLE};
    band_from_samples(s, N, band_key_of(&c), NULL, &b);
    assert_int_equal(b.level, BAND_STACK_FT_DATA);
    assert_int_equal(b.rows, 20);
    assert_true(fabs(b.lo - 1.0) < 1e-12);  /* 1.01 rounded into the band: lo <= 1 */
    assert_true(fabs(b.hi - 1.20) < 1e-12); /* k = 1 */
    char name[64];
    band_group_name(&b, &c, name, sizeof name);
    assert_string_equal(name, "hf/lora/variable");
}

/* Every source weighs the same: 38 rows of A at 1.00, one of B at 1.30, one of C at 0.70
 * (m = 40, t = 1/41). Unweighted, the ranks ceil(0.95 x 41) = 39 from each end are both
 * 1.00 (a band of width 0); weighted, A's rows carry (40/41)/3/38 each and B, C (40/41)/3:
 * from the smallest, C (0.325) + A (0.650) + B (0.976) first reaches 0.95 at B, so the
 * band is [0.70, 1.30]. Leaving B out (m = 39, two sources) is too few sources. */
static void test_sources_weigh_the_same(void **state)
{
    (void)state;
    struct band_sample s[40];
    for (int i = 0; i < 40; i++)
        s[i] = (struct band_sample){{STACK_HF, FT_LORA, DATA_VARIABLE}, "A", 1.0};
    s[10].source = "B", s[10].ratio = 1.30;
    s[30].source = "C", s[30].ratio = 0.70;
    struct band b;
    band_from_samples(s, 40, s[0].key, NULL, &b);
    assert_int_equal(b.level, BAND_STACK_FT_DATA);
    assert_int_equal(b.sources, 3);
    assert_true(fabs(b.lo - 0.70) < 1e-12);
    assert_true(fabs(b.hi - 1.30) < 1e-12);
    band_from_samples(s, 40, s[0].key, "B", &b);
    assert_int_equal(b.level, -1);
    /* an interior quantile: A 40 rows at 1.00, B 10 rows at 1.01 .. 1.10, C 10 rows at
     * 0.91 .. 1.00 (m = 60, t = 1/61, a source (60/61)/3 = 0.32787, a row of B or C
     * 0.032787). From the smallest: C + A = 0.65574, then B's k-th row adds up to 0.95082
     * at k = 9 (1.09; k = 8 gives 0.91803): hi = 1.09, where the unweighted rank
     * ceil(0.95 x 61) = 58 is 1.08. From the largest, the same at C's 9th largest, 0.92. */
    struct band_sample t[60];
    for (int i = 0; i < 60; i++) {
        int g = i < 40 ? 0 : i < 50 ? 1 : 2, j = i % 10 + 1;
        t[i] = (struct band_sample){s[0].key, g == 0 ? "A" : g == 1 ? "B" : "C",
                                    g == 0 ? 1.0 : g == 1 ? 1.0 + 0.01 * j : 0.9 + 0.01 * j};
    }
    band_from_samples(t, 60, s[0].key, NULL, &b);
    assert_int_equal(b.rows, 60);
    assert_true(fabs(b.hi - 1.09) < 1e-12);
    assert_true(fabs(b.lo - 0.92) < 1e-12);
}

/* A calibration's band. Three held-out log ratios -0.1, 0, 0.1: mean 0, sd 0.1, so
 * half-width t(0.95, 2) 0.1 sqrt(4/3) = 2.920 x 0.11547 = 0.33717: x0.71379 .. x1.40098.
 * Forty: ranks, every model weighing the same: model 0 has 38 ratios at 1.00, model 1 two,
 * 1.20 and 1.30 (t = 1/41; a model (40/41)/2 = 0.4878, model 1's rows 0.2439 each): from the
 * smallest 0.4878, 0.7317, 0.9756 reaches 0.95 at 1.30; from the largest model 1 gives 0.4878
 * and model 0's 37th row (0.012837 each) reaches it at 1.00. Unweighted (no units), rank
 * ceil(0.95 x 41) = 39 of 40 is 1.20. */
static void test_heldout(void **state)
{
    (void)state;
    double r3[3] = {exp(-0.1), 1.0, exp(0.1)};
    struct band b;
    band_from_heldout(r3, NULL, 3, &b);
    assert_int_equal(b.level, BAND_CALIBRATION);
    assert_int_equal(b.rows, 3);
    assert_true(fabs(b.lo - exp(-2.920 * 0.1 * sqrt(4.0 / 3.0))) < 1e-12);
    assert_true(fabs(b.hi - 1.40098) < 1e-5);
    double r40[40];
    size_t unit[40];
    for (int i = 0; i < 40; i++)
        r40[i] = 1.0, unit[i] = 0;
    r40[5] = 1.30, unit[5] = 1;
    r40[25] = 1.20, unit[25] = 1;
    band_from_heldout(r40, unit, 40, &b);
    assert_int_equal(b.rows, 40);
    assert_true(b.hi == 1.30 && b.lo == 1.0);
    band_from_heldout(r40, NULL, 40, &b);
    assert_true(b.hi == 1.20 && b.lo == 1.0);
    r40[0] = r40[1] = 0.0; /* unpredicted rows (ratio 0) stay out: 38 left */
    band_from_heldout(r40, unit, 40, &b);
    assert_int_equal(b.rows, 38);
    double two[2] = {0.9, 1.1}; /* fewer than 3: no band */
    band_from_heldout(two, NULL, 2, &b);
    assert_int_equal(b.level, -1);
}

/* The table lists each supported group once; written and read back it gives the same
 * lookups (factors rounded outward to 4 decimals). */
static void test_table_round_trip(void **state)
{
    (void)state;
    struct band_sample s[N];
    make(s);
    s[0].source = "X";
    struct band_table t, back;
    assert_int_equal(band_table_build(s, N, &t), 0);
    assert_int_equal(t.n, 4); /* hf/lora/variable, hf/lora/any, hf/any/any, all */
    char path[] = "/tmp/test_band_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_int_equal(band_table_write(&t, f), 0);
    fclose(f);
    struct input_error e;
    assert_int_equal(band_table_read(path, &back, &e), 0);
    remove(path);
    assert_int_equal(back.n, t.n);
    struct train_config hf = {.stack = STACK_HF, .finetune = FT_LORA, .data = DATA_PACKED};
    struct train_config lit = {.stack = STACK_LITGPT, .finetune = FT_FULL};
    struct band a = band_lookup(&back, &hf), z = band_lookup(&back, &lit);
    assert_int_equal(a.level, BAND_STACK_FT); /* packed has no rows: hf/lora/any */
    assert_int_equal(z.level, BAND_ALL);      /* litgpt: 2 sources only */
    assert_true(fabs(a.hi - 1.20) < 1e-9);
    assert_int_equal(band_lookup(NULL, &hf).level, -1);
    assert_int_equal(band_scale(1000, 1.2981), 1299);
    assert_true(band_scale(UINT64_MAX, 2.0) == BYTES_SAT); /* saturating (units.h) */
    assert_true(band_scale(BYTES_SAT / 2, 1.5) < BYTES_SAT);
    band_table_free(&t);
    band_table_free(&back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_rows_rank),
        cmocka_unit_test(test_fallback_and_leave_out),
        cmocka_unit_test(test_finest_group),
        cmocka_unit_test(test_sources_weigh_the_same),
        cmocka_unit_test(test_heldout),
        cmocka_unit_test(test_table_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
