/* cmd_validate.c: `llmem-sweep validate`: predict measured rows, print per-row errors and
 * a summary per source (median, mean, max absolute % error, signed bias). */
#include <csv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "outfile.h"
#include "report.h"
#include "validate.h"
#include "validate_band.h"

static void usage(void)
{
    puts("usage: llmem-sweep validate --measured FILE.csv... [--out FILE.csv] [--rules PATH]\n"
         "                            [--summary] [--fail-above PCT] [--paper] [--catalog DIR]\n"
         "                            [--write-band FILE.csv]\n"
         "Predicts each measured row for its metric (allocated, reserved, device,\n"
         "reserved-delta) and prints predicted / measured / error per row and a summary\n"
         "per source. Rows measured below what their own configuration must hold\n"
         "(weights + gradients + optimizer states, or block inputs at the end of forward)\n"
         "are marked inconsistent and left out of the summary. --fail-above exits 1 when\n"
         "the median absolute error exceeds PCT. Each predicted row gets an error band\n"
         "from the other sources' residuals (leave-one-source-out); its coverage and\n"
         "width are printed per source. --write-band writes the band table of all rows\n"
         "(what the sweep reads from datasets/band.csv). Rows with tokens_per_s_gpu\n"
         "(metric none: throughput only) are compared with the speed model: per source\n"
         "the median absolute error and the pairwise ordering agreement in each group.\n"
         "--catalog DIR is the folder of models.csv and gpus.csv (--data DIR also works).");
}

static int parse_args(int argc, char **argv, struct validate_args *a)
{
    memset(a, 0, sizeof *a);
    a->fail_above = -1;
    if (!(a->measured = malloc((size_t)argc * sizeof *a->measured))) {
        fputs("llmem-sweep: out of memory\n", stderr);
        return EXIT_IO;
    }
    int rc = options_parse_cmd(CMD_VALIDATE, argc, argv, a, NULL, NULL);
    if (rc < 0) {
        usage();
        return -1;
    }
    if (!rc && !a->nmeasured)
        return usage_error("validate", "no --measured file given");
    return rc;
}

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

struct stats {
    int n, skipped, inconsistent;
    double median, mean, max, bias;
};

static bool is_inconsistent(const struct validate_row *r) { return !strncmp(r->status, "inconsistent", 12); }

/* Grade A and B rows (A-, B+, ...): the well-documented measurements. */
static bool is_grade_ab(const struct validate_row *r) { return r->grade[0] == 'A' || r->grade[0] == 'B'; }

/* Statistics over the rows of one source (NULL: all) that pass the filter (NULL: all). */
static struct stats summarize(const struct validate_row *rows, size_t n, const char *source,
                              bool (*filter)(const struct validate_row *))
{
    struct stats s = {0};
    double *abs_err = malloc((n ? n : 1) * sizeof *abs_err);
    for (size_t i = 0; abs_err && i < n; i++) {
        if ((source && strcmp(rows[i].source, source) != 0) || (filter && !filter(&rows[i])))
            continue;
        if (strcmp(rows[i].status, "ok") != 0) {
            *(is_inconsistent(&rows[i]) ? &s.inconsistent : &s.skipped) += 1;
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

static void print_rows(const struct validate_row *rows, size_t n)
{
    printf("%-10s %-44s %-14s %9s %9s %8s  %s\n", "id", "model", "metric", "measured", "predicted",
           "error %", "status / peak phase");
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *r = &rows[i];
        if (!strcmp(r->status, "ok") || is_inconsistent(r))
            printf("%-10s %-44.44s %-14s %9.2f %9.2f %+8.1f  %s\n", r->id[0] ? r->id : "-", r->model,
                   r->metric, r->measured_gib, r->predicted_gib, r->error_pct,
                   is_inconsistent(r) ? r->status : r->phase);
        else
            printf("%-10s %-44.44s %-14s %9.2f %9s %8s  %s\n", r->id[0] ? r->id : "-", r->model,
                   r->metric, r->measured_gib, "-", "-", r->status);
    }
}

static void print_stats(const char *name, struct stats s)
{
    printf("%-24.24s %5d %7d %12d %9.1f %9.1f %9.1f %+9.1f\n", name, s.n, s.skipped, s.inconsistent,
           s.median, s.mean, s.max, s.bias);
}

/* Per source, all rows, then the grade A/B rows, those of them beyond 30 % and those more
 * than 10 % below their measurement. */
static void print_summary(const struct validate_row *rows, size_t n)
{
    printf("\n%-24s %5s %7s %12s %9s %9s %9s %9s\n", "source", "rows", "skipped", "inconsistent",
           "median|%|", "mean|%|", "max|%|", "bias %");
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= strcmp(rows[k].source, rows[i].source) != 0;
        if (first)
            print_stats(rows[i].source, summarize(rows, n, rows[i].source, NULL));
    }
    print_stats("all", summarize(rows, n, NULL, NULL));
    struct stats ab = summarize(rows, n, NULL, is_grade_ab);
    if (!ab.n)
        return;
    print_stats("grade A/B", ab);
    printf("grade A/B rows off by more than 30 %%:");
    int beyond = 0;
    for (size_t i = 0; i < n; i++)
        if (is_grade_ab(&rows[i]) && !strcmp(rows[i].status, "ok") && fabs(rows[i].error_pct) > 30.0)
            printf(" %s (%+.1f %%)", rows[i].id[0] ? rows[i].id : rows[i].model, rows[i].error_pct),
                beyond++;
    puts(beyond ? "" : " none");
    /* under-prediction is what makes a sweep say "fits" for a run that runs out of memory */
    printf("grade A/B rows more than 10 %% below their measurement:");
    int below = 0;
    for (size_t i = 0; i < n; i++)
        if (is_grade_ab(&rows[i]) && !strcmp(rows[i].status, "ok") && rows[i].error_pct < -10.0)
            printf(" %s (%+.1f %%)", rows[i].id[0] ? rows[i].id : rows[i].model, rows[i].error_pct),
                below++;
    printf("%s\n", below ? "" : " none");
    printf("grade A/B rows more than 10 %% below, count: %d\n", below);
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

static double speed_error(const struct validate_row *r)
{
    return 100.0 * (r->predicted_tps - r->measured_tps) / r->measured_tps;
}

/* One summary line of the speed model for a source (NULL: all). */
static void speed_stats(const struct validate_row *rows, size_t n, const char *source)
{
    double err[VALIDATE_ROW_MAX], bias = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].predicted_tps > 0 && (!source || !strcmp(rows[i].source, source))) {
            err[k++] = fabs(speed_error(&rows[i]));
            bias += speed_error(&rows[i]);
        }
    if (!k)
        return;
    int pairs, agree;
    ordering(rows, n, source, &pairs, &agree);
    double median = median_sorted(err, k);
    printf("%-24.24s %5zu %9.1f %9.1f %+9.1f %7d ", source ? source : "all", k, median, err[k - 1],
           bias / (double)k, pairs);
    if (pairs)
        printf("%9.1f\n", 100.0 * agree / pairs);
    else
        printf("%9s\n", "-");
}

/* The speed model against the throughput some sources print (tokens_per_s_gpu): per row,
 * then per source the median |error| and the pairwise ordering agreement. */
static void print_speed(const struct validate_row *rows, size_t n, bool summary_only)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *r = &rows[i];
        if (r->predicted_tps <= 0 && !r->speed_skip)
            continue;
        if (!k++ && !summary_only)
            printf("\n%-10s %-44s %10s %10s %8s\n", "id", "model", "tok/s/GPU", "predicted", "error %");
        if (summary_only)
            continue;
        if (r->speed_skip)
            printf("%-10s %-44.44s %10.0f %10s %8s  %s\n", r->id[0] ? r->id : "-", r->model,
                   r->measured_tps, "-", "-", r->speed_skip);
        else
            printf("%-10s %-44.44s %10.0f %10.0f %+8.1f\n", r->id[0] ? r->id : "-", r->model,
                   r->measured_tps, r->predicted_tps, speed_error(r));
    }
    if (!k)
        return;
    printf("\nspeed (tokens/s per GPU)\n%-24s %5s %9s %9s %9s %7s %9s\n", "source", "rows",
           "median|%|", "max|%|", "bias %", "pairs", "order %");
    for (size_t i = 0; i < n; i++) {
        bool first = rows[i].predicted_tps > 0;
        for (size_t j = 0; first && j < i; j++)
            first = rows[j].predicted_tps <= 0 || strcmp(rows[j].source, rows[i].source) != 0;
        if (first)
            speed_stats(rows, n, rows[i].source);
    }
    speed_stats(rows, n, NULL);
}

static int write_csv(const char *path, const struct validate_row *rows, size_t n)
{
    struct outfile out;
    struct input_error e;
    if (outfile_open(&out, path, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    FILE *f = out.f;
    /* DESIGN.md's columns, then the throughput (an extension: README) */
    fputs("file,line,source,model,metric,measured_gib,predicted_gib,error_pct,status,"
          "measured_tokens_s_gpu,predicted_tokens_s_gpu,predicted_lo_gib,predicted_hi_gib\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct validate_row *r = &rows[i];
        bool ok = !strcmp(r->status, "ok") || is_inconsistent(r);
        csv_fwrite(f, r->file, strlen(r->file));
        fprintf(f, ",%ld,", r->line);
        csv_fwrite(f, r->source, strlen(r->source));
        fputc(',', f);
        csv_fwrite(f, r->model, strlen(r->model));
        fprintf(f, ",%s,%.3f,", r->metric, r->measured_gib);
        if (ok)
            fprintf(f, "%.3f,%.2f,", r->predicted_gib, r->error_pct);
        else
            fputs(",,", f);
        csv_fwrite(f, r->status, strlen(r->status));
        if (r->predicted_tps > 0)
            fprintf(f, ",%.0f,%.0f", r->measured_tps, r->predicted_tps);
        else
            fputs(",,", f);
        if (ok && r->band.level >= 0) /* the band (validate_band.h) */
            fprintf(f, ",%.3f,%.3f\n", r->predicted_gib * r->band.lo, r->predicted_gib * r->band.hi);
        else
            fputs(",,\n", f);
    }
    if (outfile_commit(&out, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    return 0;
}

int cmd_validate(int argc, char **argv)
{
    struct validate_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free(a.measured);
        return rc < 0 ? 0 : rc;
    }
    struct catalog cat;
    struct input_error e;
    struct validate_opts vo = {.cat = &cat, .paper = a.paper};
    if (catalog_load(a.data ? a.data : catalog_default_dir(), &cat, &e) != 0 ||
        (a.rules && rules_load(a.rules, &vo.rules, &e) != 0)) {
        input_error_print(&e);
        catalog_free(&cat);
        free(a.measured);
        return e.code;
    }
    struct validate_row *rows = calloc(VALIDATE_ROW_MAX, sizeof *rows);
    size_t n = 0;
    for (int i = 0; rows && i < a.nmeasured && !rc; i++) {
        long got = validate_file(a.measured[i], &vo, rows + n, VALIDATE_ROW_MAX - n, &e);
        if (got < 0) {
            input_error_print(&e);
            rc = e.code;
        } else {
            n += (size_t)got;
        }
    }
    if (!rows || (!rc && validate_band_rows(rows, n) != 0))
        rc = EXIT_IO;
    if (!rc) {
        if (!a.summary_only)
            print_rows(rows, n);
        print_summary(rows, n);
        print_speed(rows, n, a.summary_only);
        validate_band_print(rows, n);
        if (a.out)
            rc = write_csv(a.out, rows, n);
        if (!rc && a.write_band)
            if (validate_band_write(rows, n, a.write_band, &e) != 0) {
                input_error_print(&e);
                rc = e.code;
            }
    }
    if (!rc && a.fail_above >= 0) {
        struct stats s = summarize(rows, n, NULL, NULL);
        if (s.median > a.fail_above) {
            fprintf(stderr, "llmem-sweep: validate: median absolute error %.1f %% is above %.1f %%\n",
                    s.median, a.fail_above);
            rc = 1;
        }
    }
    free(rows);
    free(a.measured);
    rules_free(vo.rules);
    catalog_free(&cat);
    return rc;
}
