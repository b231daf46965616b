/* validate_out.c: validate's text report, validation CSV and band table (see
 * validate_out.h). */
#include "validate_out.h"

#include <math.h>
#include <string.h>

#include "band.h"
#include "csv_table.h"
#include "outfile.h"
#include "validate_band.h"
#include "validate_stats.h"

static void print_rows(FILE *f, const struct validate_row *rows, size_t n)
{
    fprintf(f, "%-10s %-44s %-14s %9s %9s %8s  %s\n", "id", "model", "metric", "measured",
            "predicted", "error %", "status / peak phase");
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *r = &rows[i];
        bool inconsistent = validate_row_inconsistent(r);
        if (!strcmp(r->status, "ok") || inconsistent)
            fprintf(f, "%-10s %-44.44s %-14s %9.2f %9.2f %+8.1f  %s\n", r->id[0] ? r->id : "-",
                    r->model, r->metric, r->measured_gib, r->predicted_gib, r->error_pct,
                    inconsistent ? r->status : r->phase);
        else
            fprintf(f, "%-10s %-44.44s %-14s %9.2f %9s %8s  %s\n", r->id[0] ? r->id : "-",
                    r->model, r->metric, r->measured_gib, "-", "-", r->status);
    }
}

static void print_stats(FILE *f, const char *name, struct validate_stats s)
{
    fprintf(f, "%-24.24s %5d %7d %12d %9.1f %9.1f %9.1f %+9.1f\n", name, s.n, s.skipped,
            s.inconsistent, s.median, s.mean, s.max, s.bias);
}

/* Whether rows[i] is the first row of its source (among the rows that pass keep). */
static bool first_of_source(const struct validate_row *rows, size_t i,
                            bool (*keep)(const struct validate_row *))
{
    if (keep && !keep(&rows[i]))
        return false;
    for (size_t k = 0; k < i; k++)
        if ((!keep || keep(&rows[k])) && !strcmp(rows[k].source, rows[i].source))
            return false;
    return true;
}

/* The grade A/B "ok" rows that pass off, listed after label ("none" when there are none);
 * returns their count. */
static int list_ab(FILE *f, const struct validate_row *rows, size_t n, const char *label,
                   bool (*off)(const struct validate_row *))
{
    int k = 0;
    fputs(label, f);
    for (size_t i = 0; i < n; i++)
        if (validate_row_grade_ab(&rows[i]) && !strcmp(rows[i].status, "ok") && off(&rows[i]))
            fprintf(f, " %s (%+.1f %%)", rows[i].id[0] ? rows[i].id : rows[i].model,
                    rows[i].error_pct),
                k++;
    fprintf(f, "%s\n", k ? "" : " none");
    return k;
}

static bool beyond_30(const struct validate_row *r) { return fabs(r->error_pct) > 30.0; }
static bool below_10(const struct validate_row *r) { return r->error_pct < -10.0; }

/* Per source, all rows and per metric (what tensors hold, what the allocator reserves, what
 * the GPU shows: the errors differ in kind), then the grade A/B rows, those of them beyond
 * 30 % and those more than 10 % below their measurement. */
static void print_summary(FILE *f, const struct validate_row *rows, size_t n)
{
    static const char *const metrics[] = {"allocated", "reserved", "device", "reserved-delta"};
    fprintf(f, "\n%-24s %5s %7s %12s %9s %9s %9s %9s\n", "source", "rows", "skipped",
            "inconsistent", "median|%|", "mean|%|", "max|%|", "bias %");
    for (size_t i = 0; i < n; i++)
        if (first_of_source(rows, i, NULL))
            print_stats(f, rows[i].source, validate_summarize(rows, n, rows[i].source, NULL, NULL));
    print_stats(f, "all", validate_summarize(rows, n, NULL, NULL, NULL));
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
        struct validate_stats s = validate_summarize(rows, n, NULL, metrics[m], NULL);
        char label[32];
        snprintf(label, sizeof label, "metric %s", metrics[m]);
        if (s.n)
            print_stats(f, label, s);
    }
    struct validate_stats ab = validate_summarize(rows, n, NULL, NULL, validate_row_grade_ab);
    if (!ab.n)
        return;
    print_stats(f, "grade A/B", ab);
    list_ab(f, rows, n, "grade A/B rows off by more than 30 %:", beyond_30);
    /* under-prediction is what makes a sweep say "fits" for a run that runs out of memory */
    int below = list_ab(f, rows, n, "grade A/B rows more than 10 % below their measurement:",
                        below_10);
    fprintf(f, "grade A/B rows more than 10 %% below, count: %d\n", below);
}

/* One summary line of the speed model for a source (NULL: all). */
static void print_speed_stats(FILE *f, const struct validate_row *rows, size_t n,
                              const char *source)
{
    struct validate_speed s = validate_speed_stats(rows, n, source);
    if (!s.n)
        return;
    fprintf(f, "%-24.24s %5zu %9.1f %9.1f %+9.1f %7d ", source ? source : "all", s.n, s.median,
            s.max, s.bias, s.pairs);
    if (s.pairs)
        fprintf(f, "%9.1f\n", 100.0 * s.agree / s.pairs);
    else
        fprintf(f, "%9s\n", "-");
}

static bool has_speed(const struct validate_row *r) { return r->predicted_tps > 0; }

/* The speed model against the throughput some sources print (tokens_per_s_gpu): per row,
 * then per source the median |error| and the pairwise ordering agreement. */
static void print_speed(FILE *f, const struct validate_row *rows, size_t n, bool summary_only)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *r = &rows[i];
        if (r->predicted_tps <= 0 && !r->speed_skip)
            continue;
        if (!k++ && !summary_only)
            fprintf(f, "\n%-10s %-44s %10s %10s %8s\n", "id", "model", "tok/s/GPU", "predicted",
                    "error %");
        if (summary_only)
            continue;
        if (r->speed_skip)
            fprintf(f, "%-10s %-44.44s %10.0f %10s %8s  %s\n", r->id[0] ? r->id : "-", r->model,
                    r->measured_tps, "-", "-", r->speed_skip);
        else
            fprintf(f, "%-10s %-44.44s %10.0f %10.0f %+8.1f\n", r->id[0] ? r->id : "-", r->model,
                    r->measured_tps, r->predicted_tps, validate_speed_error(r));
    }
    if (!k)
        return;
    fprintf(f, "\nspeed (tokens/s per GPU)\n%-24s %5s %9s %9s %9s %7s %9s\n", "source", "rows",
            "median|%|", "max|%|", "bias %", "pairs", "order %");
    for (size_t i = 0; i < n; i++)
        if (first_of_source(rows, i, has_speed))
            print_speed_stats(f, rows, n, rows[i].source);
    print_speed_stats(f, rows, n, NULL);
}

/* One line: rows with a band, inside, coverage %, median width % (source NULL: all). */
static int print_band_source(FILE *f, const struct validate_row *rows, size_t n,
                             const char *source)
{
    struct band_coverage c;
    if (validate_band_coverage(rows, n, source, &c) != 0)
        return -1;
    const char *name = source ? source : "all";
    if (!c.banded) /* nothing predicted: no coverage to state */
        fprintf(f, "%-24.24s %5zu %7zu %7zu %10s %13s\n", name, c.banded, c.none, c.inside, "-",
                "-");
    else
        fprintf(f, "%-24.24s %5zu %7zu %7zu %10.1f %13.1f\n", name, c.banded, c.none, c.inside,
                c.coverage_pct, c.median_width_pct);
    return 0;
}

static int print_band(FILE *f, const struct validate_row *rows, size_t n)
{
    fprintf(f, "\nerror band (leave-one-source-out, nominal 90 %%):\n%-24s %5s %7s %7s %10s %13s\n",
            "source", "rows", "no band", "inside", "coverage %", "median width %");
    for (size_t i = 0; i < n; i++)
        if (first_of_source(rows, i, NULL) && print_band_source(f, rows, n, rows[i].source) != 0)
            return -1;
    return print_band_source(f, rows, n, NULL);
}

int validate_out_text(FILE *f, const struct validate_row *rows, size_t n, bool summary_only)
{
    if (!summary_only)
        print_rows(f, rows, n);
    print_summary(f, rows, n);
    print_speed(f, rows, n, summary_only);
    return print_band(f, rows, n);
}

static void csv_row(FILE *f, const struct validate_row *r)
{
    bool ok = !strcmp(r->status, "ok") || validate_row_inconsistent(r);
    csv_table_put(f, r->file, true);
    fprintf(f, ",%ld,", r->line);
    csv_table_put(f, r->source, true);
    fputc(',', f);
    csv_table_put(f, r->model, true);
    fprintf(f, ",%s,%.3f,", r->metric, r->measured_gib);
    if (ok)
        fprintf(f, "%.3f,%.2f,", r->predicted_gib, r->error_pct);
    else
        fputs(",,", f);
    csv_table_put(f, r->status, true);
    if (r->predicted_tps > 0)
        fprintf(f, ",%.0f,%.0f", r->measured_tps, r->predicted_tps);
    else
        fputs(",,", f);
    if (ok && r->band.level >= 0) /* the band (validate_band.h), a factor on the sweep's value */
        fprintf(f, ",%.3f,%.3f", r->sweep_gib * r->band.lo, r->sweep_gib * r->band.hi);
    else
        fputs(",,", f);
    if (ok)
        fprintf(f, ",%.3f\n", r->sweep_gib);
    else
        fputs(",\n", f);
}

int validate_out_csv(const char *path, const struct validate_row *rows, size_t n,
                     struct input_error *e)
{
    struct outfile out;
    if (outfile_open(&out, path, e) != 0)
        return -1;
    /* DESIGN.md's columns, then the throughput and the sweep's prediction (extensions: README) */
    fputs("file,line,source,model,metric,measured_gib,predicted_gib,error_pct,status,"
          "measured_tokens_s_gpu,predicted_tokens_s_gpu,predicted_lo_gib,predicted_hi_gib,"
          "sweep_gib\n",
          out.f);
    for (size_t i = 0; i < n; i++)
        csv_row(out.f, &rows[i]);
    return outfile_commit(&out, e);
}

int validate_out_band(const char *path, const struct validate_row *rows, size_t n,
                      struct input_error *e)
{
    struct band_table t = {0};
    struct outfile out;
    int rc = 0;
    if (validate_band_table(rows, n, &t) != 0) {
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
    return rc;
}
