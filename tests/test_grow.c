/* test_grow.c: grow_array doubles from its first size, keeps the array when there is room,
 * and refuses a size that would overflow (grow.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "grow.h"

static void test_doubling(void **state)
{
    (void)state;
    size_t cap = 0;
    int *v = NULL;
    for (size_t n = 0; n < 100; n++) {
        int *w = grow_array(v, &cap, n, sizeof *v, 8);
        assert_non_null(w);
        v = w;
        v[n] = (int)n;
        assert_true(cap > n);
    }
    assert_int_equal(cap, 128); /* 8, 16, 32, 64, 128 */
    for (size_t n = 0; n < 100; n++)
        assert_int_equal(v[n], (int)n);
    assert_ptr_equal(grow_array(v, &cap, 50, sizeof *v, 8), v); /* room: unchanged */
    size_t huge = SIZE_MAX / 2;
    assert_null(grow_array(v, &huge, huge, sizeof *v, 8)); /* would overflow */
    assert_true(huge == SIZE_MAX / 2);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
