/* test_csv_table.c: strict CSV reading (csv_table.h): fields, quoting, line numbers of
 * rows, and errors that name the file, the line and the column. Fixtures: tests/data/csv/. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "csv_table.h"
#include "error.h"

#define CSV_DIR TEST_DATA_DIR "/csv/"

static void read_ok(const char *path, struct csv_table *t)
{
    struct input_error e;
    memset(&e, 0, sizeof e);
    if (csv_table_read(path, t, &e) != 0)
        fail_msg("%s:%ld: %s", e.file, e.line, e.msg);
}

/* Reads a file that must fail; returns the error. */
static struct input_error read_bad(const char *path)
{
    struct csv_table t;
    struct input_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(csv_table_read(path, &t, &e), -1);
    assert_null(t.header); /* nothing half-built is left behind */
    assert_int_equal(t.nrows, 0);
    return e;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_good_file(void **state)
{
    (void)state;
    struct csv_table t;
    read_ok(CSV_DIR "good.csv", &t);
    assert_int_equal(t.ncols, 4);
    assert_string_equal(t.header[0], "name");
    assert_string_equal(t.header[3], "flag");
    assert_int_equal(t.nrows, 3);
    assert_string_equal(t.cells[0][0], "alpha");
    assert_string_equal(t.cells[1][2], "1e3");
    assert_int_equal(t.lines[0], 2);
    assert_int_equal(t.lines[1], 3);
    assert_int_equal(t.lines[2], 4);
    assert_int_equal(csv_table_col(&t, "ratio"), 2);
    assert_int_equal(csv_table_col(&t, "nope"), -1);
    assert_int_equal(csv_table_col(&t, "Name"), -1); /* column names are exact */
    assert_true(ends_with(t.path, "good.csv"));
    csv_table_free(&t);
    assert_null(t.cells);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    struct csv_table t;
    read_ok(CSV_DIR "quoted.csv", &t);
    assert_int_equal(t.nrows, 4);
    /* "a, b" keeps its comma; the note spans lines 2-3 */
    assert_string_equal(t.cells[0][0], "a, b");
    assert_string_equal(t.cells[0][1], "line one\nline two");
    assert_string_equal(t.cells[0][2], "1");
    assert_string_equal(t.cells[1][1], "say \"hi\""); /* "" is an escaped quote */
    assert_string_equal(t.cells[2][0], "multi\nline\nname");
    assert_string_equal(t.cells[3][0], "d");
    /* rows start on lines 2, 4, 5 and 8: later rows count the embedded newlines */
    assert_int_equal(t.lines[0], 2);
    assert_int_equal(t.lines[1], 4);
    assert_int_equal(t.lines[3], 8);
    csv_table_free(&t);
}

/* KNOWN BUG (csv_table.c): a row's line is taken when its first field is reported, which
 * for a quoted first field spanning lines 5-7 is line 7; csv_table.h says `lines` is the
 * line each data row STARTS on (5). */
static void test_quoted_first_field_line(void **state)
{
    (void)state;
    struct csv_table t;
    read_ok(CSV_DIR "quoted.csv", &t);
    assert_int_equal(t.lines[2], 5);
    csv_table_free(&t);
}

static void test_too_many_fields(void **state)
{
    (void)state;
    struct input_error e = read_bad(CSV_DIR "too-many.csv");
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "too-many.csv"));
    assert_int_equal(e.line, 3); /* "4,5,6,7" */
    assert_non_null(strstr(e.msg, "4 fields"));
}

static void test_too_few_fields(void **state)
{
    (void)state;
    struct input_error e = read_bad(CSV_DIR "too-few.csv");
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "too-few.csv"));
    /* row 1 spans lines 2-3, so "4,5" is line 4 */
    assert_int_equal(e.line, 4);
    assert_non_null(strstr(e.msg, "2 fields"));
}

static void test_unterminated_quote(void **state)
{
    (void)state;
    struct input_error e = read_bad(CSV_DIR "unterminated.csv");
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "unterminated.csv"));
    /* the quote opens on line 3; the file ends on line 4 */
    assert_true(e.line == 3 || e.line == 4);
}

static void test_empty_file(void **state)
{
    (void)state;
    struct input_error e = read_bad(CSV_DIR "empty.csv");
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "empty.csv"));
}

static void test_header_only(void **state)
{
    (void)state;
    struct csv_table t;
    read_ok(CSV_DIR "header-only.csv", &t);
    assert_int_equal(t.ncols, 3);
    assert_int_equal(t.nrows, 0);
    csv_table_free(&t);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct input_error e = read_bad(CSV_DIR "no-such-file.csv");
    assert_int_equal(e.code, EXIT_IO);
    assert_true(ends_with(e.file, "no-such-file.csv"));
}

static void test_nul_byte(void **state)
{
    (void)state;
    static const char buf[] = "a,b\n1,2\n3,\0\n";
    struct csv_table t;
    struct input_error e;
    assert_int_equal(csv_table_parse(buf, sizeof buf - 1, "nul.csv", &t, &e), -1);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_string_equal(e.file, "nul.csv");
    assert_int_equal(e.line, 3);
}

static void test_parse_buffer_variants(void **state)
{
    (void)state;
    struct csv_table t;
    struct input_error e;
    /* CRLF line ends, a blank line between rows, no newline at the end */
    static const char crlf[] = "a,b\r\n1,2\r\n\r\n3,4";
    assert_int_equal(csv_table_parse(crlf, sizeof crlf - 1, "crlf.csv", &t, &e), 0);
    assert_int_equal(t.nrows, 2);
    assert_string_equal(t.cells[0][1], "2");
    assert_string_equal(t.cells[1][1], "4");
    assert_int_equal(t.lines[0], 2);
    assert_int_equal(t.lines[1], 4);
    csv_table_free(&t);

    /* CR-only line ends (old Mac files): each CR ends a line, a quoted CR does not end the row */
    static const char cr[] = "a,b\r1,2\r\r\"x\ry\",4\r5,6,7\r";
    assert_int_equal(csv_table_parse(cr, sizeof cr - 1, "cr.csv", &t, &e), -1);
    assert_int_equal(e.line, 6); /* "5,6,7": after the blank line 3 and the row of lines 4-5 */
    static const char cr_ok[] = "a,b\r1,2\r\r3,4";
    assert_int_equal(csv_table_parse(cr_ok, sizeof cr_ok - 1, "cr.csv", &t, &e), 0);
    assert_int_equal(t.nrows, 2);
    assert_int_equal(t.lines[0], 2);
    assert_int_equal(t.lines[1], 4);
    csv_table_free(&t);

    /* a stray quote inside an unquoted field is malformed under CSV_STRICT */
    static const char stray[] = "a,b\n1,x\"y\n";
    assert_int_equal(csv_table_parse(stray, sizeof stray - 1, "stray.csv", &t, &e), -1);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_int_equal(e.line, 2);
}

/* good.csv row 3 (line 4): gamma,x7,abc,yes - every typed getter fails, naming the column */
static void test_typed_getters(void **state)
{
    (void)state;
    struct csv_table t;
    struct input_error e;
    read_ok(CSV_DIR "good.csv", &t);
    int64_t i = 0;
    double d = 0;
    int b = -1;
    assert_int_equal(csv_get_i64(&t, 0, 1, 0, 10, &i, &e), 0);
    assert_int_equal(i, 1);
    assert_int_equal(csv_get_i64(&t, 1, 1, -5, 5, &i, &e), 0);
    assert_int_equal(i, -2);
    assert_int_equal(csv_get_f64(&t, 0, 2, 0, 1, &d, &e), 0);
    assert_true(d == 0.5);
    assert_int_equal(csv_get_f64(&t, 1, 2, 0, 1e4, &d, &e), 0);
    assert_true(d == 1000.0);
    assert_int_equal(csv_get_bool(&t, 0, 3, &b, &e), 0);
    assert_int_equal(b, 1);
    assert_int_equal(csv_get_bool(&t, 1, 3, &b, &e), 0);
    assert_int_equal(b, 0);

    memset(&e, 0, sizeof e);
    assert_int_equal(csv_get_i64(&t, 2, 1, 0, 10, &i, &e), -1);
    assert_string_equal(e.field, "count");
    assert_int_equal(e.line, 4);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "good.csv"));
    assert_non_null(strstr(e.msg, "x7"));

    memset(&e, 0, sizeof e);
    assert_int_equal(csv_get_f64(&t, 2, 2, 0, 1, &d, &e), -1);
    assert_string_equal(e.field, "ratio");
    assert_int_equal(e.line, 4);

    memset(&e, 0, sizeof e);
    assert_int_equal(csv_get_bool(&t, 2, 3, &b, &e), -1);
    assert_string_equal(e.field, "flag");
    assert_int_equal(e.line, 4);
    csv_table_free(&t);
}

static void test_getter_ranges(void **state)
{
    (void)state;
    struct csv_table t;
    struct input_error e;
    read_ok(CSV_DIR "good.csv", &t);
    int64_t i;
    double d;
    /* -2 (line 3) outside [0, 10] */
    memset(&e, 0, sizeof e);
    assert_int_equal(csv_get_i64(&t, 1, 1, 0, 10, &i, &e), -1);
    assert_string_equal(e.field, "count");
    assert_int_equal(e.line, 3);
    /* 1e3 (line 3) outside [0, 1] */
    memset(&e, 0, sizeof e);
    assert_int_equal(csv_get_f64(&t, 1, 2, 0, 1, &d, &e), -1);
    assert_string_equal(e.field, "ratio");
    assert_int_equal(e.line, 3);
    /* a name is not a number */
    assert_int_equal(csv_get_i64(&t, 0, 0, 0, 10, &i, &e), -1);
    assert_string_equal(e.field, "name");
    csv_table_free(&t);
}

static void test_require(void **state)
{
    (void)state;
    struct csv_table t;
    struct input_error e;
    read_ok(CSV_DIR "good.csv", &t);
    static const char *const ok[] = {"name", "flag", NULL};
    assert_int_equal(csv_table_require(&t, ok, &e), 0);
    static const char *const missing[] = {"name", "weight", "flag", NULL};
    memset(&e, 0, sizeof e);
    assert_int_equal(csv_table_require(&t, missing, &e), -1);
    assert_string_equal(e.field, "weight");
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "good.csv"));
    csv_table_free(&t);
}

static void test_cell_error_format(void **state)
{
    (void)state;
    struct csv_table t;
    struct input_error e;
    read_ok(CSV_DIR "quoted.csv", &t);
    memset(&e, 0, sizeof e);
    assert_int_equal(csv_cell_error(&t, 3, 1, &e, "bad %s %d", "thing", 7), -1);
    assert_string_equal(e.msg, "bad thing 7");
    assert_string_equal(e.field, "note");
    assert_int_equal(e.line, 8);
    csv_table_free(&t);
}

/* csv_table_put: plain when safe, quoted when asked or when strict reading needs it. */
static void test_put(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        bool quote;
        const char *want;
    } cases[] = {
        {"plain", false, "plain"},      {"plain", true, "\"plain\""}, {"a,b", false, "\"a,b\""},
        {"say \"hi\"", false, "\"say \"\"hi\"\"\""}, {" edge", false, "\" edge\""},
        {"two\nlines", false, "\"two\nlines\""}, {"", false, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64] = "";
        FILE *f = tmpfile();
        assert_non_null(f);
        assert_int_equal(csv_table_put(f, cases[i].in, cases[i].quote), 0);
        rewind(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        assert_string_equal(buf, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_quoted_first_field_line),
        cmocka_unit_test(test_too_many_fields),
        cmocka_unit_test(test_too_few_fields),
        cmocka_unit_test(test_unterminated_quote),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_header_only),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_parse_buffer_variants),
        cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_getter_ranges),
        cmocka_unit_test(test_require),
        cmocka_unit_test(test_cell_error_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
