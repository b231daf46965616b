/* csv_table.c: strict CSV reading with libcsv (see csv_table.h). */
#include "csv_table.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reader {
    struct csv_table *t;
    char **row;        /* fields of the row being read */
    size_t nfields, cap;
    long line;         /* line the current row started on */
    long next_line;    /* the line being fed */
    bool mid_row;      /* a row began on an earlier line and has not ended */
    bool ended;        /* a row ended on the line being fed */
    const char *name;
    struct input_error *e;
    int failed;
};

static char *dup_field(const void *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static void free_fields(char **f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i]);
    free(f);
}

static void on_field(void *s, size_t len, void *data)
{
    struct reader *r = data;
    if (r->failed)
        return;
    if (r->nfields == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        char **row = cap < 4096 ? realloc(r->row, cap * sizeof *row) : NULL;
        if (!row) {
            r->failed = input_error_set(r->e, EXIT_BAD_INPUT, r->name, r->line, NULL,
                                        "too many fields in one row");
            return;
        }
        r->row = row;
        r->cap = cap;
    }
    char *f = dup_field(s ? s : "", s ? len : 0);
    if (!f) {
        r->failed = input_error_set(r->e, EXIT_IO, r->name, r->line, NULL, "out of memory");
        return;
    }
    r->row[r->nfields++] = f;
}

static int push_row(struct reader *r)
{
    struct csv_table *t = r->t;
    if (!t->header) {
        t->header = r->row;
        t->ncols = r->nfields;
    } else {
        if (r->nfields != t->ncols)
            return input_error_set(r->e, EXIT_BAD_INPUT, r->name, r->line, NULL,
                                   "%zu fields where the header has %zu", r->nfields, t->ncols);
        char ***cells = realloc(t->cells, (t->nrows + 1) * sizeof *cells);
        long *lines = cells ? realloc(t->lines, (t->nrows + 1) * sizeof *lines) : NULL;
        if (cells)
            t->cells = cells;
        if (!lines)
            return input_error_set(r->e, EXIT_IO, r->name, r->line, NULL, "out of memory");
        t->lines = lines;
        t->cells[t->nrows] = r->row;
        t->lines[t->nrows] = r->line;
        t->nrows++;
    }
    r->row = NULL;
    r->nfields = r->cap = 0;
    return 0;
}

static void on_row(int term, void *data)
{
    struct reader *r = data;
    (void)term;
    if (r->failed)
        return;
    r->ended = true;
    if (push_row(r) != 0)
        r->failed = 1;
}

/* The length of the line at buf[0..len) with its terminator: LF, CR LF, or a lone CR (old
 * Mac files, which libcsv also reads as row ends). */
static size_t line_length(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n')
            return i + 1;
        if (buf[i] == '\r')
            return i + 1 < len && buf[i + 1] == '\n' ? i + 2 : i + 1;
    }
    return len;
}

/* Counts the line ends in buf[0..len) to keep line numbers for the rows. libcsv gives no
 * positions, so rows are numbered by the terminators it reports: the reader feeds the
 * buffer one line at a time. */
int csv_table_parse(const char *buf, size_t len, const char *name, struct csv_table *t,
                    struct input_error *e)
{
    struct csv_parser p;
    struct reader r = {.t = t, .name = name, .e = e, .next_line = 1};
    memset(t, 0, sizeof *t);
    t->path = dup_field(name, strlen(name));
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0 || !t->path)
        return input_error_set(e, EXIT_IO, name, 0, NULL, "out of memory");
    size_t pos = 0;
    while (pos < len && !r.failed) {
        size_t n = line_length(buf + pos, len - pos);
        if (memchr(buf + pos, '\0', n)) {
            r.failed = input_error_set(e, EXIT_BAD_INPUT, name, r.next_line, NULL,
                                       "NUL byte in a CSV file");
            break;
        }
        /* libcsv skips blank lines, so a row starts on the first line fed outside a row */
        if (!r.mid_row)
            r.line = r.next_line;
        r.ended = false;
        bool blank = (n == 1 && (buf[pos] == '\n' || buf[pos] == '\r')) ||
                     (n == 2 && buf[pos] == '\r' && buf[pos + 1] == '\n');
        if (csv_parse(&p, buf + pos, n, on_field, on_row, &r) != n && !r.failed)
            r.failed = input_error_set(e, EXIT_BAD_INPUT, name, r.next_line, NULL,
                                       "malformed CSV: %s", csv_strerror(csv_error(&p)));
        pos += n;
        r.mid_row = !r.ended && (r.mid_row || !blank);
        r.next_line++;
    }
    if (!r.failed && csv_fini(&p, on_field, on_row, &r) != 0 && !r.failed)
        r.failed = input_error_set(e, EXIT_BAD_INPUT, name, r.line, NULL,
                                   "malformed CSV: unterminated quoted field");
    csv_free(&p);
    free_fields(r.row, r.nfields);
    if (!r.failed && !t->header)
        r.failed = input_error_set(e, EXIT_BAD_INPUT, name, 1, NULL, "empty file: no header row");
    if (r.failed) {
        csv_table_free(t);
        return -1;
    }
    return 0;
}

int csv_table_read(const char *path, struct csv_table *t, struct input_error *e)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "cannot open: %s", strerror(errno));
    char *buf = malloc(CSV_TABLE_MAX_BYTES + 1);
    size_t len = buf ? fread(buf, 1, CSV_TABLE_MAX_BYTES + 1, f) : 0;
    int rc = 0;
    if (!buf)
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    else if (ferror(f))
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "read error");
    else if (len > CSV_TABLE_MAX_BYTES)
        rc = input_error_set(e, EXIT_BAD_INPUT, path, 0, NULL, "larger than %u MiB",
                             CSV_TABLE_MAX_BYTES >> 20);
    fclose(f);
    if (rc == 0)
        rc = csv_table_parse(buf, len, path, t, e);
    free(buf);
    return rc;
}

void csv_table_free(struct csv_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows; i++)
        free_fields(t->cells[i], t->ncols);
    free(t->cells);
    free(t->lines);
    free_fields(t->header, t->ncols);
    free(t->path);
    memset(t, 0, sizeof *t);
}

int csv_table_col(const struct csv_table *t, const char *name)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0)
            return (int)i;
    return -1;
}

int csv_table_require(const struct csv_table *t, const char *const *names, struct input_error *e)
{
    for (size_t i = 0; names[i]; i++)
        if (csv_table_col(t, names[i]) < 0)
            return input_error_set(e, EXIT_BAD_INPUT, t->path, 1, names[i], "missing column");
    return 0;
}

int csv_cell_error(const struct csv_table *t, size_t row, int col, struct input_error *e,
                   const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return input_error_set(e, EXIT_BAD_INPUT, t->path, t->lines[row],
                           col >= 0 ? t->header[col] : NULL, "%s", msg);
}

int csv_get_i64(const struct csv_table *t, size_t row, int col, int64_t lo, int64_t hi,
                int64_t *out, struct input_error *e)
{
    const char *s = t->cells[row][col];
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno)
        return csv_cell_error(t, row, col, e, "'%s' is not an integer", s);
    if (v < lo || v > hi)
        return csv_cell_error(t, row, col, e, "%lld is out of range [%lld, %lld]", v,
                              (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int csv_get_f64(const struct csv_table *t, size_t row, int col, double lo, double hi,
                double *out, struct input_error *e)
{
    const char *s = t->cells[row][col];
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v))
        return csv_cell_error(t, row, col, e, "'%s' is not a number", s);
    if (v < lo || v > hi)
        return csv_cell_error(t, row, col, e, "%g is out of range [%g, %g]", v, lo, hi);
    *out = v;
    return 0;
}

int csv_get_bool(const struct csv_table *t, size_t row, int col, int *out, struct input_error *e)
{
    const char *s = t->cells[row][col];
    if (strcmp(s, "1") == 0 || strcmp(s, "true") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(s, "0") == 0 || strcmp(s, "false") == 0) {
        *out = 0;
        return 0;
    }
    return csv_cell_error(t, row, col, e, "'%s' is not 0/1", s);
}

int csv_table_put(FILE *f, const char *s, bool quote)
{
    size_t n = strlen(s);
    quote |= strpbrk(s, ",\"\r\n") != NULL ||
             (n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'));
    return (quote ? csv_fwrite(f, s, n) : fputs(s, f)) < 0 ? -1 : 0;
}
