/* lengths.c: a dataset's sample lengths from a CSV column (lengths.h). */
#include "lengths.h"

#include <stdlib.h>
#include <string.h>

#include "csv_table.h"

/* Takes the `tokens` column of t into l. */
static int from_table(const struct csv_table *t, struct lengths *l, struct input_error *e)
{
    static const char *const need[] = {"tokens", NULL};
    memset(l, 0, sizeof *l);
    if (csv_table_require(t, need, e) != 0)
        return -1;
    if (t->nrows == 0)
        return input_error_set(e, EXIT_BAD_INPUT, t->path, 1, "tokens", "no samples");
    if (t->nrows > LENGTHS_MAX_ROWS)
        return input_error_set(e, EXIT_BAD_INPUT, t->path, t->lines[LENGTHS_MAX_ROWS], "tokens",
                               "more than %u samples", LENGTHS_MAX_ROWS);
    const int col = csv_table_col(t, "tokens");
    uint32_t *v = malloc(t->nrows * sizeof *v);
    if (!v)
        return input_error_set(e, EXIT_IO, t->path, 0, "", "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        int64_t x;
        if (csv_get_i64(t, r, col, 1, INT32_MAX, &x, e) != 0) {
            free(v);
            return -1;
        }
        v[r] = (uint32_t)x;
        l->longest = v[r] > l->longest ? v[r] : l->longest;
    }
    l->tokens = v;
    l->n = t->nrows;
    return 0;
}

/* The table a reader returned rc for, taken into l and freed. */
static int take(int rc, struct csv_table *t, struct lengths *l, struct input_error *e)
{
    if (rc != 0)
        return -1;
    rc = from_table(t, l, e);
    csv_table_free(t);
    return rc;
}

int lengths_read(const char *path, struct lengths *l, struct input_error *e)
{
    struct csv_table t;
    memset(l, 0, sizeof *l);
    return take(csv_table_read(path, &t, e), &t, l, e);
}

int lengths_parse(const char *buf, size_t len, const char *name, struct lengths *l,
                  struct input_error *e)
{
    struct csv_table t;
    memset(l, 0, sizeof *l);
    return take(csv_table_parse(buf, len, name, &t, e), &t, l, e);
}

void lengths_free(struct lengths *l)
{
    free(l->tokens);
    memset(l, 0, sizeof *l);
}
