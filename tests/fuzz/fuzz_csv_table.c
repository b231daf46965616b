/* fuzz_csv_table.c: the strict CSV reader behind every input CSV (catalogs, measurements,
 * rules, shards), with the typed cell getters and the measured CSV's `widths` reader on
 * whatever parses. */
#include <stddef.h>
#include <stdint.h>

#include "csv_table.h"
#include "measured.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct csv_table t;
    struct input_error e;
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
