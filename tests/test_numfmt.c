/* test_numfmt.c: one rounding for every report (numfmt.h): the JSON number is the one the
 * CSV prints, ties included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_round_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
