/* validate_band.c: bands, coverage and the band table from validate's rows (see
 * validate_band.h). */
#include "validate_band.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static bool is_ok(const struct validate_row *r) { return !strcmp(r->status, "ok"); }
static bool is_predicted(const struct validate_row *r)
{
    return is_ok(r) || !strncmp(r->status, "inconsistent", 12);
}

/* Union-find over the rows (band_sources): the root of row i's set, halving the path. */
static size_t root_of(size_t *up, size_t i)
{
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

/* DESIGN.md 6.3: a row's band never comes from its own source. validate names a row's
 * source by its id's prefix (row_identity), but prefixes whose rows share a `source` cell
 * came from one place: our own grids (smoke, gpu-25min, gpu-fsdp1, ...: one harness, one
 * stack version, one way of reading the peak) are one source to the band, not six. So a
 * band source is a set of prefixes joined by shared cells; each row gets the prefix of its
 * set's first row as the set's name (names are only compared, so which member names it does
 * not matter). Returns the names (NULL without memory; the caller frees the array, the
 * names are the rows'). */
static const char **band_sources(const struct validate_row *rows, size_t n)
{
    size_t *up = malloc((n ? n : 1) * sizeof *up);
    const char **name = malloc((n ? n : 1) * sizeof *name);
    if (!up || !name) {
        free(up);
        free(name);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        up[i] = i;
        for (size_t j = 0; j < i; j++) {
            const bool same = !strcmp(rows[i].source, rows[j].source) ||
                              (rows[i].origin[0] && !strcmp(rows[i].origin, rows[j].origin));
            size_t a = root_of(up, i), b = root_of(up, j);
            if (same && a != b)
                up[a > b ? a : b] = a < b ? a : b;
        }
    }
    for (size_t i = 0; i < n; i++)
        name[i] = rows[root_of(up, i)].source;
    free(up);
    return name;
}

/* The residuals of the "ok" rows under their band sources; returns their count (samples
 * has room for n). */
static size_t samples_of(const struct validate_row *rows, size_t n, const char **src,
                         struct band_sample *s)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (is_ok(&rows[i]) && rows[i].sweep_gib > 0)
            s[m++] = (struct band_sample){rows[i].key, src[i], rows[i].measured_gib / rows[i].sweep_gib};
    return m;
}

int validate_band_rows(struct validate_row *rows, size_t n)
{
    struct band_sample *s = malloc((n ? n : 1) * sizeof *s);
    const char **src = band_sources(rows, n);
    if (!s || !src) {
        free(s);
        free(src);
        return -1;
    }
    size_t m = samples_of(rows, n, src, s);
    for (size_t i = 0; i < n; i++) {
        rows[i].band = (struct band){1.0, 1.0, -1, 0, 0};
        if (is_predicted(&rows[i]) && rows[i].rule_band.level >= 0)
            rows[i].band = rows[i].rule_band; /* a calibrated prediction: its own band */
        else if (is_predicted(&rows[i]))
            band_from_samples(s, m, rows[i].key, src[i], &rows[i].band);
    }
    free(s);
    free(src);
    return 0;
}

static bool inside(const struct validate_row *r)
{
    return r->measured_gib >= r->sweep_gib * r->band.lo &&
           r->measured_gib <= r->sweep_gib * r->band.hi;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int validate_band_coverage(const struct validate_row *rows, size_t n, const char *source,
                           struct band_coverage *c)
{
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return -1;
    *c = (struct band_coverage){0};
    for (size_t i = 0; i < n; i++) {
        if (!is_ok(&rows[i]) || (source && strcmp(rows[i].source, source)))
            continue;
        if (rows[i].band.level < 0) {
            c->none++;
            continue;
        }
        c->inside += inside(&rows[i]);
        w[c->banded++] = 100.0 * (rows[i].band.hi - rows[i].band.lo);
    }
    size_t b = c->banded;
    if (b) {
        qsort(w, b, sizeof *w, cmp_double);
        c->median_width_pct = b % 2 ? w[b / 2] : 0.5 * (w[b / 2 - 1] + w[b / 2]);
        c->coverage_pct = 100.0 * (double)c->inside / (double)b;
    }
    free(w);
    return 0;
}

int validate_band_table(const struct validate_row *rows, size_t n, struct band_table *t)
{
    struct band_sample *s = malloc((n ? n : 1) * sizeof *s);
    const char **src = band_sources(rows, n);
    int rc = !s || !src || band_table_build(s, samples_of(rows, n, src, s), t) != 0 ? -1 : 0;
    free(s);
    free(src);
    return rc;
}
