/* test_numfmt.c: one rounding for every report (numfmt.h): the JSON number is the one the
 * CSV prints, ties included. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "numfmt.h"

static void test_ties_round_alike(void **state)
{
    (void)state;
    char buf[NUMFMT_MAX];
    /* 35.0625 is exact in binary: printf rounds the tie to even; round() went away from zero */
    assert_string_equal(numfmt_fixed(35.0625, 3, buf, sizeof buf), "35.062");
    assert_true(numfmt_value(35.0625, 3) == 35.062);
    assert_string_equal(numfmt_fixed(35.0635, 3, buf, sizeof buf), "35.063"); /* not a tie */
    assert_true(numfmt_value(35.0635, 3) == 35.063);
    assert_string_equal(numfmt_fixed(0.5, 0, buf, sizeof buf), "0");
    assert_string_equal(numfmt_fixed(1.5, 0, buf, sizeof buf), "2");
    assert_string_equal(numfmt_fixed(12.25, 1, buf, sizeof buf), "12.2");
    assert_true(numfmt_value(12.25, 1) == 12.2);
    assert_true(numfmt_value(1e300, 6) == 1e300);
}

/* numfmt_fixed's fast path prints what printf prints: random magnitudes and fractions, exact
 * ties (k / 2^j), values a hair off a tie, negatives that round to zero, and the edges. */
static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static void check(double v, int d)
{
    char got[NUMFMT_MAX], want[NUMFMT_MAX];
    snprintf(want, sizeof want, "%.*f", d, v);
    numfmt_fixed(v, d, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%.17g with %d decimals: %s, printf %s", v, d, got, want);
}

static void test_fast_path_matches_printf(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 300000; i++) {
        const int d = (int)(next(&x) % 8);
        const double mag = ldexp(1.0, (int)(next(&x) % 70) - 20);
        const double u = (double)(next(&x) >> 11) * 0x1p-53;
        double v = (next(&x) & 1 ? -1 : 1) * u * mag;
        check(v, d);
        check((double)(int64_t)(next(&x) % 100000000) / (double)(1u << (next(&x) % 12)), d); /* ties */
        check(nextafter(v, 0), d);
        check(nextafter(v, 2 * v + 1), d);
    }
    const double edges[] = {0.0, -0.0, -1e-9, 0.0005, 0.0015, 2.5, 1e15, 4503599627370495.5,
                            9007199254740993.0, 1e300, -1e300, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        for (int d = 0; d <= 10; d++)
            check(edges[i], d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_round_alike),
        cmocka_unit_test(test_fast_path_matches_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
