/* band.c: error bands from validation residuals (see band.h). */
#include "band.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csv_table.h"
#include "units.h"

struct band_key band_key_of(const struct train_config *c)
{
    return (struct band_key){(int)c->stack, (int)c->finetune, (int)c->data};
}

/* The key with the fields a level leaves open set to BAND_ANY. */
static struct band_key masked(struct band_key k, int level)
{
    if (level >= BAND_STACK_FT)
        k.data = BAND_ANY;
    if (level >= BAND_STACK)
        k.finetune = BAND_ANY;
    if (level >= BAND_ALL)
        k.stack = BAND_ANY;
    return k;
}

static bool key_eq(struct band_key a, struct band_key b)
{
    return a.stack == b.stack && a.finetune == b.finetune && a.data == b.data;
}

/* One residual of a group and its weight (see group_band). */
struct weighted {
    double ratio, w;
};

static int cmp_weighted(const void *x, const void *y)
{
    double a = ((const struct weighted *)x)->ratio, b = ((const struct weighted *)y)->ratio;
    return (a > b) - (a < b);
}

static bool seen_source(const struct band_sample *s, const size_t *idx, size_t m, const char *src)
{
    for (size_t j = 0; j < m; j++)
        if (!strcmp(s[idx[j]].source, src))
            return true;
    return false;
}

static size_t rows_of_source(const struct band_sample *s, const size_t *idx, size_t m,
                             const char *src)
{
    size_t c = 0;
    for (size_t j = 0; j < m; j++)
        c += !strcmp(s[idx[j]].source, src);
    return c;
}

/* The ratio where the weights summed from one end first reach BAND_COVER: dir +1 sums from
 * the smallest (the band's upper end, the weighted 95 % quantile), -1 from the largest
 * (its lower end, the 5 % quantile). The caller checked that the weights reach it. */
static double weighted_quantile(const struct weighted *v, size_t m, int dir)
{
    double sum = 0.0;
    for (size_t j = 0; j < m; j++) {
        const struct weighted *x = &v[dir > 0 ? j : m - 1 - j];
        sum += x->w;
        if (sum >= BAND_COVER - 1e-12) /* 1e-12: the weights' rounding, not a margin */
            return x->ratio;
    }
    return v[dir > 0 ? m - 1 : 0].ratio;
}

/* lo and hi of m weighted residuals whose weights sum to m/(m+1) (sorts v). */
static void weighted_band(struct weighted *v, size_t m, struct band *b)
{
    qsort(v, m, sizeof *v, cmp_weighted);
    b->lo = fmin(1.0, weighted_quantile(v, m, -1));
    b->hi = fmax(1.0, weighted_quantile(v, m, +1));
}

/* The band of one group (level, key masked to it); false when it is too small. The
 * residuals are weighted so that every source weighs the same, (1 - t) / (S n_s) for a
 * row of a source with n_s rows among S sources, and the new residual gets the mass
 * t = 1/(m+1) at -inf and +inf (split conformal). With one source, or sources of equal
 * size, this is the order statistic of rank ceil(0.95 (m+1)) from each end. */
static bool group_band(const struct band_sample *s, size_t n, struct band_key key, int level,
                       const char *exclude, struct weighted *v, size_t *idx, struct band *b)
{
    struct band_key want = masked(key, level);
    size_t m = 0, sources = 0;
    for (size_t i = 0; i < n; i++) {
        if ((exclude && !strcmp(s[i].source, exclude)) || !key_eq(masked(s[i].key, level), want))
            continue;
        sources += !seen_source(s, idx, m, s[i].source);
        idx[m++] = i;
    }
    if (m < BAND_MIN_ROWS || sources < BAND_MIN_SOURCES)
        return false;
    double t = 1.0 / (double)(m + 1);
    for (size_t j = 0; j < m; j++)
        v[j] = (struct weighted){s[idx[j]].ratio,
                                 (1.0 - t) / ((double)sources *
                                              (double)rows_of_source(s, idx, m, s[idx[j]].source))};
    weighted_band(v, m, b);
    b->level = level;
    b->rows = (int)m;
    b->sources = (int)sources;
    return true;
}

void band_from_samples(const struct band_sample *s, size_t n, struct band_key key,
                       const char *exclude, struct band *b)
{
    *b = (struct band){1.0, 1.0, -1, 0, 0};
    struct weighted *v = malloc((n ? n : 1) * sizeof *v);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    for (int level = 0; v && idx && level < BAND_LEVELS; level++)
        if (group_band(s, n, key, level, exclude, v, idx, b))
            break;
    free(v);
    free(idx);
}

/* One-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (any statistics
 * table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2); beyond 30 the normal's 1.645. */
static double t95(size_t df)
{
    static const double t[30] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
                                 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746,
                                 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
                                 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
    return df >= 1 && df <= 30 ? t[df - 1] : 1.645;
}

/* How many of the positive ratios belong to unit[i] (every one when unit is NULL). */
static size_t unit_rows(const double *ratio, const size_t *unit, size_t n, size_t i)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += ratio[k] > 0.0 && (!unit || unit[k] == unit[i]);
    return c;
}

/* The split-conformal band of the m positive ratios, every unit weighing the same (as
 * group_band weighs sources: a unit with c rows among U weighs (1 - t) / (U c)); false
 * without memory. */
static bool heldout_ranks(const double *ratio, const size_t *unit, size_t n, size_t m,
                          struct band *b)
{
    struct weighted *v = malloc(m * sizeof *v);
    if (!v)
        return false;
    double units = 0.0; /* sum over the rows of 1/c: one per unit */
    for (size_t i = 0; i < n; i++)
        if (ratio[i] > 0.0)
            units += 1.0 / (double)unit_rows(ratio, unit, n, i);
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (ratio[i] > 0.0)
            v[j++] = (struct weighted){ratio[i], (1.0 - 1.0 / (double)(m + 1)) /
                                                     (units * (double)unit_rows(ratio, unit, n, i))};
    weighted_band(v, m, b);
    free(v);
    return true;
}

void band_from_heldout(const double *ratio, const size_t *unit, size_t n, struct band *b)
{
    *b = (struct band){1.0, 1.0, -1, 0, 1};
    double sum = 0.0, ss = 0.0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ratio[i] > 0.0) {
            sum += log(ratio[i]);
            m++;
        }
    if (m < 3)
        return;
    if (m >= BAND_MIN_ROWS) {
        if (!heldout_ranks(ratio, unit, n, m, b))
            return;
    } else {
        double mean = sum / (double)m;
        for (size_t i = 0; i < n; i++)
            if (ratio[i] > 0.0)
                ss += (log(ratio[i]) - mean) * (log(ratio[i]) - mean);
        double half = t95(m - 1) * sqrt(ss / (double)(m - 1)) * sqrt(1.0 + 1.0 / (double)m);
        b->lo = fmin(1.0, exp(mean - half));
        b->hi = fmax(1.0, exp(mean + half));
    }
    b->level = BAND_CALIBRATION;
    b->rows = (int)m;
}

/* --- the table ---------------------------------------------------------------------- */

static bool table_has(const struct band_table *t, struct band_key k, int level)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->bands[i].level == level && key_eq(t->keys[i], k))
            return true;
    return false;
}

static int key_cmp(const struct band_key *a, int la, const struct band_key *b, int lb)
{
    if (la != lb)
        return la - lb;
    if (a->stack != b->stack)
        return a->stack - b->stack;
    if (a->finetune != b->finetune)
        return a->finetune - b->finetune;
    return a->data - b->data;
}

/* Insertion sort by (level, key): a stable, documented order for the file. */
static void table_sort(struct band_table *t)
{
    for (size_t i = 1; i < t->n; i++)
        for (size_t j = i; j > 0 && key_cmp(&t->keys[j], t->bands[j].level, &t->keys[j - 1],
                                            t->bands[j - 1].level) < 0; j--) {
            struct band_key k = t->keys[j];
            struct band b = t->bands[j];
            t->keys[j] = t->keys[j - 1], t->bands[j] = t->bands[j - 1];
            t->keys[j - 1] = k, t->bands[j - 1] = b;
        }
}

int band_table_build(const struct band_sample *s, size_t n, struct band_table *t)
{
    memset(t, 0, sizeof *t);
    size_t cap = n * BAND_LEVELS + 1;
    t->keys = malloc(cap * sizeof *t->keys);
    t->bands = malloc(cap * sizeof *t->bands);
    struct weighted *v = malloc((n ? n : 1) * sizeof *v);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    int rc = t->keys && t->bands && v && idx ? 0 : -1;
    for (size_t i = 0; !rc && i < n; i++)
        for (int level = 0; level < BAND_LEVELS; level++) {
            struct band_key k = masked(s[i].key, level);
            struct band b;
            if (!table_has(t, k, level) && group_band(s, n, k, level, NULL, v, idx, &b)) {
                t->keys[t->n] = k;
                t->bands[t->n++] = b;
            }
        }
    free(v);
    free(idx);
    if (rc)
        band_table_free(t);
    else
        table_sort(t);
    return rc;
}

void band_table_free(struct band_table *t)
{
    free(t->keys);
    free(t->bands);
    memset(t, 0, sizeof *t);
}

struct band band_lookup(const struct band_table *t, const struct train_config *c)
{
    struct band_key k = band_key_of(c);
    for (int level = 0; t && level < BAND_LEVELS; level++)
        for (size_t i = 0; i < t->n; i++)
            if (t->bands[i].level == level && key_eq(t->keys[i], masked(k, level)))
                return t->bands[i];
    return (struct band){1.0, 1.0, -1, 0, 0};
}

void band_group_name(const struct band *b, const struct train_config *c, char *buf, size_t n)
{
    if (b->level < 0 || b->level == BAND_CALIBRATION) {
        snprintf(buf, n, "%s", b->level < 0 ? "none" : "calibration");
        return;
    }
    struct band_key k = masked(band_key_of(c), b->level);
    snprintf(buf, n, "%s/%s/%s", k.stack == BAND_ANY ? "*" : stack_name(c->stack),
             k.finetune == BAND_ANY ? "*" : finetune_name(c->finetune),
             k.data == BAND_ANY ? "*" : data_shape_name(c->data));
}

/* --- the file ----------------------------------------------------------------------- */

static const char *const band_columns[] = {"stack", "finetune", "data", "rows", "sources", "lo",
                                           "hi", NULL};

static void put_name(FILE *f, int v, const char *(*name)(int))
{
    fprintf(f, "%s,", v == BAND_ANY ? "*" : name(v));
}

static const char *stack_n(int v) { return stack_name((enum stack)v); }
static const char *finetune_n(int v) { return finetune_name((enum finetune)v); }
static const char *data_n(int v) { return data_shape_name((enum data_shape)v); }

int band_table_write(const struct band_table *t, FILE *f)
{
    fputs("stack,finetune,data,rows,sources,lo,hi\n", f);
    for (size_t i = 0; i < t->n; i++) {
        const struct band *b = &t->bands[i];
        put_name(f, t->keys[i].stack, stack_n);
        put_name(f, t->keys[i].finetune, finetune_n);
        put_name(f, t->keys[i].data, data_n);
        /* lo rounded down and hi up to 4 decimals, so the file's band does not narrow the
         * computed one (by more than the 1e-7 that keeps 1.2 from printing as 1.2001) */
        fprintf(f, "%d,%d,%.4f,%.4f\n", b->rows, b->sources, floor(b->lo * 1e4 + 1e-7) / 1e4,
                ceil(b->hi * 1e4 - 1e-7) / 1e4);
    }
    return ferror(f) ? -1 : 0;
}

/* A key cell: "*" or a name parse() knows. */
static int key_cell(const struct csv_table *ct, size_t r, const char *col, int (*parse)(const char *),
                    int *out, struct input_error *e)
{
    int c = csv_table_col(ct, col);
    const char *v = ct->cells[r][c];
    *out = !strcmp(v, "*") ? BAND_ANY : parse(v);
    return *out == -1 && strcmp(v, "*") ? csv_cell_error(ct, r, c, e, "unknown %s '%s'", col, v) : 0;
}

/* The level a key stands for: the first open field from the coarsest down. */
static int key_level(struct band_key k)
{
    return k.stack == BAND_ANY      ? BAND_ALL
           : k.finetune == BAND_ANY ? BAND_STACK
           : k.data == BAND_ANY     ? BAND_STACK_FT
                                    : BAND_STACK_FT_DATA;
}

static int read_row(const struct csv_table *ct, size_t r, struct band_key *k, struct band *b,
                    struct input_error *e)
{
    int64_t rows, sources;
    if (key_cell(ct, r, "stack", stack_parse, &k->stack, e) ||
        key_cell(ct, r, "finetune", finetune_parse, &k->finetune, e) ||
        key_cell(ct, r, "data", data_shape_parse, &k->data, e) ||
        csv_get_i64(ct, r, csv_table_col(ct, "rows"), 1, 1000000, &rows, e) ||
        csv_get_i64(ct, r, csv_table_col(ct, "sources"), 1, 1000000, &sources, e) ||
        csv_get_f64(ct, r, csv_table_col(ct, "lo"), 1e-3, 1.0, &b->lo, e) ||
        csv_get_f64(ct, r, csv_table_col(ct, "hi"), 1.0, 1e3, &b->hi, e))
        return -1;
    b->rows = (int)rows;
    b->sources = (int)sources;
    b->level = key_level(*k);
    if (!key_eq(masked(*k, b->level), *k))
        return csv_cell_error(ct, r, csv_table_col(ct, "stack"), e,
                              "a group leaves open the fields after the first '*'");
    return 0;
}

int band_table_read(const char *path, struct band_table *t, struct input_error *e)
{
    struct csv_table ct;
    memset(t, 0, sizeof *t);
    if (csv_table_read(path, &ct, e) != 0)
        return -1;
    int rc = csv_table_require(&ct, band_columns, e);
    t->keys = malloc((ct.nrows + 1) * sizeof *t->keys);
    t->bands = malloc((ct.nrows + 1) * sizeof *t->bands);
    if (!rc && (!t->keys || !t->bands))
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    for (size_t r = 0; !rc && r < ct.nrows; r++, t->n++)
        rc = read_row(&ct, r, &t->keys[t->n], &t->bands[t->n], e);
    csv_table_free(&ct);
    if (rc)
        band_table_free(t);
    return rc;
}
