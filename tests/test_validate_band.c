/* Unit tests for validate_band.c: which rows count as one source to the band. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "validate_band.h"

#define PER 10
#define ROWS (5 * PER)

/* Five id prefixes of 10 rows each, one band group (hf, full, packed). own-a and own-b
 * share a `source` cell (two grids of one harness) and measure half their prediction;
 * P measures 1.00 .. 1.09 of it; Q and R have no source cell and measure 1.10 .. 1.19 and
 * 1.20 .. 1.29. */
static void make(struct validate_row *r)
{
    static const char *const prefix[5] = {"own-a", "own-b", "P", "Q", "R"};
    static const char *const origin[5] = {"datasets/measure H200", "datasets/measure H200", "p.md", "", ""};
    memset(r, 0, ROWS * sizeof *r);
    for (int i = 0; i < ROWS; i++) {
        const int g = i / PER;
        snprintf(r[i].source, sizeof r[i].source, "%s", prefix[g]);
        snprintf(r[i].origin, sizeof r[i].origin, "%s", origin[g]);
        snprintf(r[i].status, sizeof r[i].status, "ok");
        r[i].key = (struct band_key){STACK_HF, FT_FULL, DATA_PACKED};
        r[i].rule_band.level = -1;
        r[i].sweep_gib = 10.0;
        r[i].measured_gib = g < 2 ? 5.0 : 10.0 * (1.0 + 0.1 * (g - 2) + 0.01 * (i % PER));
    }
}

/* An own-a row's band leaves out own-b too (the same cell): P, Q and R remain, 30 rows from
 * 3 sources, all at or above the prediction, so the band's lower end is 1 (the band holds
 * the prediction); counted as a source of its own, own-b's 0.5 would have been the lower
 * end. Q and R, without a cell, stay two sources. */
static void test_shared_cell_is_one_source(void **state)
{
    (void)state;
    struct validate_row r[ROWS];
    make(r);
    assert_int_equal(validate_band_rows(r, ROWS), 0);
    assert_int_equal(r[0].band.rows, 30);
    assert_int_equal(r[0].band.sources, 3);
    assert_true(r[0].band.lo == 1.0);
    /* a P row: own (20 rows, one source), Q and R, each source weighing a third: own's
     * 0.5 holds the lowest third of the mass, so it is the lower end */
    assert_int_equal(r[2 * PER].band.rows, 40);
    assert_int_equal(r[2 * PER].band.sources, 3);
    assert_true(fabs(r[2 * PER].band.lo - 0.5) < 1e-12);
}

/* The table the sweep reads: 50 rows from 4 sources, not 5. */
static void test_table_counts_joined_sources(void **state)
{
    (void)state;
    struct validate_row r[ROWS];
    make(r);
    struct band_table t;
    assert_int_equal(validate_band_table(r, ROWS, &t), 0);
    assert_true(t.n > 0);
    for (size_t i = 0; i < t.n; i++) {
        assert_int_equal(t.bands[i].rows, ROWS);
        assert_int_equal(t.bands[i].sources, 4);
    }
    band_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_cell_is_one_source),
        cmocka_unit_test(test_table_counts_joined_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
