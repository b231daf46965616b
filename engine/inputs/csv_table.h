/* csv_table.h: a whole CSV file read strictly with libcsv, as rows of strings.
 *
 * Every input CSV of the tool (catalogs, measurements, rules, shards) goes through here,
 * so all of them get the same strictness (CSV_STRICT | CSV_STRICT_FINI), the same limits,
 * and messages that name the file, the line and the column. */
#ifndef LLMEM_CSV_TABLE_H
#define LLMEM_CSV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define CSV_TABLE_MAX_BYTES (64u << 20)

struct csv_table {
    char *path;
    size_t ncols;      /* columns of the header */
    char **header;     /* ncols names */
    size_t nrows;      /* data rows (header excluded) */
    char ***cells;     /* nrows x ncols */
    long *lines;       /* the file line each data row starts on */
};

/* Reads path. Every row must have the header's column count: a row with another count is
 * an error naming its line. Returns 0, or -1 with e filled
 * (EXIT_IO when the file cannot be read, EXIT_BAD_INPUT when it is malformed). */
int csv_table_read(const char *path, struct csv_table *t, struct input_error *e);
/* Same over a buffer; name is used in messages. */
int csv_table_parse(const char *buf, size_t len, const char *name, struct csv_table *t,
                    struct input_error *e);
void csv_table_free(struct csv_table *t);

/* Index of a header column, or -1. */
int csv_table_col(const struct csv_table *t, const char *name);

/* Requires the named columns; returns 0 or -1 naming the first missing one. */
int csv_table_require(const struct csv_table *t, const char *const *names, struct input_error *e);

/* Typed cell access with messages naming file, line and column. Each returns 0 or -1. */
int csv_get_i64(const struct csv_table *t, size_t row, int col, int64_t lo, int64_t hi,
                int64_t *out, struct input_error *e);
int csv_get_f64(const struct csv_table *t, size_t row, int col, double lo, double hi,
                double *out, struct input_error *e);
int csv_get_bool(const struct csv_table *t, size_t row, int col, int *out, struct input_error *e);
/* Errors about a cell, formatted like the others. */
int csv_cell_error(const struct csv_table *t, size_t row, int col, struct input_error *e,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The one CSV text-field writer (every CSV the tool writes): quoted by libcsv's csv_fwrite
 * when quote is set or the text needs it (separators, quotes, line ends, or edge blanks
 * that strict reading would trim), else written as it is. Returns 0, or -1 on a write
 * error. */
int csv_table_put(FILE *f, const char *s, bool quote);

#endif
