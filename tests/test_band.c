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
        cmocka_unit_test(test_table_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
