/* validate_stats.c: validate's summaries (see validate_stats.h). */
#include "validate_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Sorts v (n > 0) and returns its median. */
static double median_sorted(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool validate_row_inconsistent(const struct validate_row *r)
{
    return !strncmp(r->status, "inconsistent", 12);
}

bool validate_row_grade_ab(const struct validate_row *r)
{
    return r->grade[0] == 'A' || r->grade[0] == 'B';
}

double validate_speed_error(const struct validate_row *r)
{
    return 100.0 * (r->predicted_tps - r->measured_tps) / r->measured_tps;
}

struct validate_stats validate_summarize(const struct validate_row *rows, size_t n,
                                         const char *source, const char *metric,
                                         bool (*filter)(const struct validate_row *))
{
    struct validate_stats s = {0};
    double *abs_err = malloc((n ? n : 1) * sizeof *abs_err);
    for (size_t i = 0; abs_err && i < n; i++) {
        if ((source && strcmp(rows[i].source, source) != 0) ||
            (metric && strcmp(rows[i].metric, metric) != 0) || (filter && !filter(&rows[i])))
            continue;
        if (strcmp(rows[i].status, "ok") != 0) {
            *(validate_row_inconsistent(&rows[i]) ? &s.inconsistent : &s.skipped) += 1;
            continue;
        }
        abs_err[s.n++] = fabs(rows[i].error_pct);
        s.mean += fabs(rows[i].error_pct);
        s.bias += rows[i].error_pct;
        s.max = fmax(s.max, fabs(rows[i].error_pct));
    }
    if (s.n) {
        s.median = median_sorted(abs_err, (size_t)s.n);
        s.mean /= s.n;
        s.bias /= s.n;
    }
    free(abs_err);
    return s;
}

/* Pairwise ordering agreement of the rows of one source (NULL: all): over the pairs of
 * one group (same table, same model) whose measurements differ, the pairs the model
 * orders as measured. */
static void ordering(const struct validate_row *rows, size_t n, const char *source, int *pairs,
                     int *agree)
{
    *pairs = *agree = 0;
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *a = &rows[i];
        if (a->predicted_tps <= 0 || (source && strcmp(a->source, source) != 0))
            continue;
        for (size_t j = i + 1; j < n; j++) {
            const struct validate_row *b = &rows[j];
            if (b->predicted_tps <= 0 || strcmp(a->group, b->group) != 0 ||
                a->measured_tps == b->measured_tps)
                continue;
            *pairs += 1;
            *agree += (a->measured_tps > b->measured_tps) == (a->predicted_tps > b->predicted_tps);
        }
    }
}

struct validate_speed validate_speed_stats(const struct validate_row *rows, size_t n,
                                           const char *source)
{
    double err[VALIDATE_ROW_MAX];
    struct validate_speed s = {0};
    for (size_t i = 0; i < n && s.n < VALIDATE_ROW_MAX; i++)
        if (rows[i].predicted_tps > 0 && (!source || !strcmp(rows[i].source, source))) {
            err[s.n++] = fabs(validate_speed_error(&rows[i]));
            s.bias += validate_speed_error(&rows[i]);
        }
    if (!s.n)
        return s;
    s.median = median_sorted(err, s.n);
    s.max = err[s.n - 1];
    s.bias /= (double)s.n;
    ordering(rows, n, source, &s.pairs, &s.agree);
    return s;
}
