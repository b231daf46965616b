/* fuzz_csv_table.c: the strict CSV reader behind every input CSV (catalogs, measurements,
 * rules, shards), with the typed cell getters and the measured CSV's `widths` reader on
 * whatever parses, and the --lengths reader (lengths.h) on the same bytes: what it accepts
 * holds at least one sample, each in 1 .. 2^31 - 1, and `longest` is their maximum. */
#include <stddef.h>
#include <stdint.h>

#include "csv_table.h"
#include "lengths.h"
#include "measured.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The --lengths reader's promises on an input it accepts; a broken one traps. */
static void check_lengths(const uint8_t *data, size_t size)
{
    struct lengths l;
    struct input_error e;
    if (lengths_parse((const char *)data, size, "fuzz.csv", &l, &e) != 0)
        return;
    uint32_t most = 0;
    if (l.n < 1)
        __builtin_trap();
    for (size_t i = 0; i < l.n; i++) {
        if (l.tokens[i] < 1 || l.tokens[i] > INT32_MAX)
            __builtin_trap();
        most = l.tokens[i] > most ? l.tokens[i] : most;
    }
    if (most != l.longest)
        __builtin_trap();
    lengths_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct csv_table t;
    struct input_error e;
    check_lengths(data, size);
    if (csv_table_parse((const char *)data, size, "fuzz.csv", &t, &e) != 0)
        return 0;
    uint32_t w[64];
    for (size_t r = 0; r < t.nrows; r++) {
        (void)measured_row_widths(&t, r, 8192, w, sizeof w / sizeof w[0], &e);
        for (size_t c = 0; c < t.ncols; c++) {
            int64_t i;
            double d;
            int b;
            (void)csv_get_i64(&t, r, (int)c, INT64_MIN, INT64_MAX, &i, &e);
            (void)csv_get_f64(&t, r, (int)c, -1e300, 1e300, &d, &e);
            (void)csv_get_bool(&t, r, (int)c, &b, &e);
        }
    }
    (void)csv_table_col(&t, "model");
    csv_table_free(&t);
    return 0;
}
