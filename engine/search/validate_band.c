/* validate_band.c: bands, coverage and the band table from validate's rows (see
 * validate_band.h). */
#include "validate_band.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"

static bool is_ok(const struct validate_row *r) { return !strcmp(r->status, "ok"); }
static bool is_predicted(const struct validate_row *r)
{
    return is_ok(r) || !strncmp(r->status, "inconsistent", 12);
}

/* The residuals of the "ok" rows; returns their count (samples has room for n). */
static size_t samples_of(const struct validate_row *rows, size_t n, struct band_sample *s)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (is_ok(&rows[i]) && rows[i].predicted_gib > 0)
            s[m++] = (struct band_sample){rows[i].key, rows[i].source,
                                          rows[i].measured_gib / rows[i].predicted_gib};
    return m;
}

int validate_band_rows(struct validate_row *rows, size_t n)
{
    struct band_sample *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return -1;
    size_t m = samples_of(rows, n, s);
    for (size_t i = 0; i < n; i++) {
        rows[i].band = (struct band){1.0, 1.0, -1, 0, 0};
        if (is_predicted(&rows[i]) && rows[i].rule_band.level >= 0)
            rows[i].band = rows[i].rule_band; /* a calibrated prediction: its own band */
        else if (is_predicted(&rows[i]))
            band_from_samples(s, m, rows[i].key, rows[i].source, &rows[i].band);
    }
    free(s);
    return 0;
}

static bool inside(const struct validate_row *r)
{
    return r->measured_gib >= r->predicted_gib * r->band.lo &&
           r->measured_gib <= r->predicted_gib * r->band.hi;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* One line: rows with a band, inside, coverage %, median width % (source NULL: all). */
static void print_source(const struct validate_row *rows, size_t n, const char *source, double *w)
{
    size_t banded = 0, in = 0, none = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_ok(&rows[i]) || (source && strcmp(rows[i].source, source)))
            continue;
        if (rows[i].band.level < 0) {
            none++;
            continue;
        }
        in += inside(&rows[i]);
        w[banded++] = 100.0 * (rows[i].band.hi - rows[i].band.lo);
    }
    double median = 0;
    if (banded) {
        qsort(w, banded, sizeof *w, cmp_double);
        median = banded % 2 ? w[banded / 2] : 0.5 * (w[banded / 2 - 1] + w[banded / 2]);
    }
    if (!banded) { /* nothing predicted: no coverage to state */
        printf("%-24.24s %5zu %7zu %7zu %10s %13s\n", source ? source : "all", banded, none, in,
               "-", "-");
        return;
    }
    printf("%-24.24s %5zu %7zu %7zu %10.1f %13.1f\n", source ? source : "all", banded, none, in,
           100.0 * (double)in / (double)banded, median);
}

void validate_band_print(const struct validate_row *rows, size_t n)
{
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return;
    printf("\nerror band (leave-one-source-out, nominal 90 %%):\n%-24s %5s %7s %7s %10s %13s\n",
           "source", "rows", "no band", "inside", "coverage %", "median width %");
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= strcmp(rows[k].source, rows[i].source) != 0;
        if (first)
            print_source(rows, n, rows[i].source, w);
    }
    print_source(rows, n, NULL, w);
    free(w);
}

int validate_band_write(const struct validate_row *rows, size_t n, const char *path,
                        struct input_error *e)
{
    struct band_sample *s = malloc((n ? n : 1) * sizeof *s);
    struct band_table t = {0};
    int rc = 0;
    struct outfile out;
    if (!s || band_table_build(s, samples_of(rows, n, s), &t) != 0) {
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    } else if (outfile_open(&out, path, e) != 0) {
        rc = -1;
    } else if (band_table_write(&t, out.f) != 0) {
        outfile_abort(&out);
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "write failed");
    } else {
        rc = outfile_commit(&out, e);
    }
    band_table_free(&t);
    free(s);
    return rc;
}
