/* cmd_fit.c: `llmem-sweep fit`, measured peaks to a rule set (rules/README.md, "Fitting").
 *
 * The --match conditions play two parts: they are written into the rule set, and they
 * select the measured rows it is fitted on, through the same matcher the sweep uses. So a
 * set is never fitted on a row it would not apply to. */
#include <csv.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "commands.h"
#include "csv_table.h"
#include "fit.h"
#include "options.h"
#include "outfile.h"
#include "rules.h"

/* A candidate being fitted: its rows and features. */
struct cand_fit {
    char name[FIT_CAND_MAX];
    size_t *idx, n;
    int feat[32];
    size_t k;
    double coef[32];
    struct fit_stats st;
};

static void usage(FILE *f)
{
    fputs("usage: llmem-sweep fit --measured FILE.csv [--measured FILE.csv]... --out RULES.csv\n"
          "         [--set NAME] [--match KEY=VALUE]... [--metric allocated|reserved|device]\n"
          "         [--features LIST | --features CAND=LIST]... [--with-model yes|no|add]\n"
          "         [--note TEXT]... [--append] [--data DIR] [--verbose]\n"
          "Fits one rule set (rules/README.md): one candidate per peak_type of the rows that\n"
          "match, coefficients by non-negative least squares on relative error.\n"
          "  --with-model add   an additive calibration: memory model + sum of coefficient x\n"
          "                     feature, coefficients of either sign (default features 1,\n"
          "                     b*s*h*L, b*s*v, b*s, as many as rows - 1 allow); the set gets\n"
          "                     an error band from its held-out residuals\n"
          "  --match KEY=VALUE  a set-level rule row (model, family, finetune, quant, stack,\n"
          "                     lora_targets, ..., micro_batch.max, ...): it restricts the set\n"
          "                     and selects the rows it is fitted on\n"
          "  --features LIST    comma list of features (README \"Features\"), for every\n"
          "                     candidate or, as CAND=LIST, for one\n"
          "  --append           keep the other sets of RULES.csv (this set is replaced)\n"
          "Exit codes: 0 ok, 2 usage, 3 bad input (or too few rows), 4 I/O.\n",
          f);
}


/* Returns 0, -1 after --help, or an exit code. */
static int parse_args(int argc, char **argv, struct fit_args *a)
{
    memset(a, 0, sizeof *a);
    a->set = "fitted";
    int rc = options_parse_cmd(CMD_FIT, argc, argv, a, NULL, NULL);
    if (rc < 0)
        usage(stdout);
    if (rc)
        return rc;
    if (!a->nmeasured || !a->out)
        return usage_error("fit", "%s", "--measured and --out are required");
    if (a->metric && rules_metric_parse(a->metric) < 0)
        return usage_error("fit", "--metric takes allocated, reserved or device, not '%s'", a->metric);
    return 0;
}

/* --- feature lists ------------------------------------------------------------------- */

/* Parses "a,b,c" into feat; returns the count, or 0 after a usage message. */
static size_t parse_features(const char *list, int *feat, size_t max)
{
    size_t k = 0;
    char name[64];
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof name) {
            usage_error("fit", "bad feature list '%s'", list);
            return 0;
        }
        memcpy(name, s, len);
        name[len] = '\0';
        int f = rules_feature_parse(name);
        if (f < 0) {
            usage_error("fit", "unknown feature '%s' (rules/README.md lists them)", name);
            return 0;
        }
        for (size_t j = 0; j < k; j++)
            if (feat[j] == f) {
                usage_error("fit", "feature '%s' is listed twice", name);
                return 0;
            }
        if (k == max) {
            usage_error("fit", "too many features in '%s'", list);
            return 0;
        }
        feat[k++] = f;
        s += len + (s[len] == ',');
    }
    if (k == 0)
        usage_error("fit", "empty feature list '%s'", list);
    return k;
}

/* The features of candidate cf: CAND=LIST, else --features LIST, else the defaults. */
static int candidate_features(const struct fit_args *a, struct cand_fit *cf)
{
    size_t max = sizeof cf->feat / sizeof cf->feat[0];
    size_t n = strlen(cf->name);
    for (int i = 0; i < a->nfeat_for; i++) {
        if (strncmp(a->feat_for[i], cf->name, n) == 0 && a->feat_for[i][n] == '=') {
            cf->k = parse_features(a->feat_for[i] + n + 1, cf->feat, max);
            return cf->k ? 0 : EXIT_USAGE;
        }
    }
    if (a->feat_all) {
        cf->k = parse_features(a->feat_all, cf->feat, max);
        return cf->k ? 0 : EXIT_USAGE;
    }
    cf->k = a->with_model == RULES_ADD ? fit_default_add_features(cf->n, cf->feat)
                                        : fit_default_features(cf->name, cf->feat);
    return 0;
}

/* --- selecting rows ------------------------------------------------------------------ */

/* A book holding just this set's match rows (and a placeholder candidate), so rows are
 * selected by the matcher the sweep uses. Returns NULL after printing the reason. */
static struct rule_book *selection_book(const struct fit_args *a)
{
    struct input_error e;
    struct rule_book *rb = rules_new();
    if (!rb)
        return NULL;
    int rc = rules_add(rb, a->set, "", "metric", "allocated", "--match", 0, &e);
    if (rc == 0)
        rc = rules_add(rb, a->set, "", "with_model", "no", "--match", 0, &e);
    if (rc == 0)
        rc = rules_add(rb, a->set, "select", "1", "0", "--match", 0, &e);
    for (int i = 0; rc == 0 && i < a->nmatch; i++) {
        char key[64];
        const char *eq = strchr(a->match[i], '=');
        size_t len = eq ? (size_t)(eq - a->match[i]) : 0;
        if (!eq || len == 0 || len >= sizeof key) {
            usage_error("fit", "--match takes KEY=VALUE, not '%s'", a->match[i]);
            rules_free(rb);
            return NULL;
        }
        memcpy(key, a->match[i], len);
        key[len] = '\0';
        rc = rules_add(rb, a->set, "", key, eq + 1, "--match", 0, &e);
    }
    if (rc == 0)
        rc = rules_check(rb, &e);
    if (rc != 0) {
        input_error_print(&e);
        rules_free(rb);
        return NULL;
    }
    return rb;
}

struct selection {
    size_t *idx, n;
    int metric;
    size_t unmatched, other_metric;
};

static int select_rows(const struct fit_args *a, struct fit_data *d, struct rule_book *rb,
                       struct selection *sel)
{
    sel->idx = malloc((d->nrows ? d->nrows : 1) * sizeof *sel->idx);
    if (!sel->idx)
        return EXIT_IO;
    sel->metric = a->metric ? rules_metric_parse(a->metric) : -1;
    size_t first = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct fit_row *r = &d->rows[i];
        if (rules_select(rb, &d->plans[r->model], &r->c) != 0) {
            sel->unmatched++;
            continue;
        }
        if (r->metric < 0 || (a->metric && r->metric != sel->metric)) {
            sel->other_metric++;
            continue;
        }
        if (sel->metric < 0) {
            sel->metric = r->metric;
            first = i;
        } else if (r->metric != sel->metric) {
            fprintf(stderr, "llmem-sweep: %s:%ld: metric %s, but %s:%ld is %s: a rule set "
                    "predicts one metric (choose with --metric)\n", r->file, r->line,
                    rules_metric_name((enum rules_metric)r->metric), d->rows[first].file,
                    d->rows[first].line, rules_metric_name((enum rules_metric)sel->metric));
            return EXIT_BAD_INPUT;
        }
        sel->idx[sel->n++] = i;
    }
    if (sel->n == 0) {
        fprintf(stderr, "llmem-sweep: fit: no measured row matches set '%s' (%zu read, %zu "
                "skipped, %zu not matching, %zu of another metric)\n", a->set, d->read, d->skipped,
                sel->unmatched, sel->other_metric);
        return EXIT_BAD_INPUT;
    }
    return 0;
}

/* Groups the selected rows by candidate, in order of first appearance. */
static int group_rows(const struct fit_data *d, const struct selection *sel,
                      struct cand_fit *cf, size_t *ncf)
{
    *ncf = 0;
    for (size_t i = 0; i < sel->n; i++) {
        const char *name = d->rows[sel->idx[i]].cand;
        size_t c = 0;
        while (c < *ncf && strcmp(cf[c].name, name) != 0)
            c++;
        if (c == *ncf) {
            if (c == RULES_MAX_CANDIDATES) {
                fprintf(stderr, "llmem-sweep: fit: more than %d peak types\n",
                        RULES_MAX_CANDIDATES);
                return EXIT_BAD_INPUT;
            }
            memset(&cf[c], 0, sizeof cf[c]);
            snprintf(cf[c].name, sizeof cf[c].name, "%s", name);
            if (!(cf[c].idx = malloc(sel->n * sizeof *cf[c].idx)))
                return EXIT_IO;
            (*ncf)++;
        }
        cf[c].idx[cf[c].n++] = sel->idx[i];
    }
    return 0;
}

static int fit_all(const struct fit_args *a, const struct fit_data *d, struct cand_fit *cf,
                   size_t ncf)
{
    for (size_t c = 0; c < ncf; c++) {
        int rc = candidate_features(a, &cf[c]);
        if (rc)
            return rc;
        if (cf[c].k + 1 > cf[c].n) {
            fprintf(stderr, "llmem-sweep: fit: candidate '%s' has %zu rows: %zu coefficients need "
                    "at least %zu (at most rows - 1 coefficients, so the fit can be judged); give "
                    "fewer --features or more rows\n", cf[c].name, cf[c].n, cf[c].k, cf[c].k + 1);
            return EXIT_BAD_INPUT;
        }
        enum fit_kind kind = a->with_model == RULES_ADD ? FIT_ADD : FIT_REPLACE;
        if (fit_candidate(d, cf[c].idx, cf[c].n, cf[c].feat, cf[c].k, kind, cf[c].coef,
                          &cf[c].st)) {
            fprintf(stderr, "llmem-sweep: fit: candidate '%s': the least-squares solver failed\n",
                    cf[c].name);
            return EXIT_BAD_INPUT;
        }
    }
    return 0;
}

/* --- writing ------------------------------------------------------------------------- */

static void put_row(FILE *f, const char *set, const char *cand, const char *key,
                    const char *value, const char *note)
{
    csv_table_put(f, set, false);
    fputc(',', f);
    csv_table_put(f, cand, false);
    fputc(',', f);
    csv_table_put(f, key, false);
    fputc(',', f);
    csv_table_put(f, value, false);
    fputc(',', f);
    csv_table_put(f, note, false);
    fputc('\n', f);
}

/* A coefficient (10 significant digits, fixed = false) or a statistic (3 decimals). */
static void put_number(FILE *f, const char *set, const char *cand, const char *key, double v,
                       bool fixed, const char *note)
{
    char buf[64];
    if (fixed)
        snprintf(buf, sizeof buf, "%.3f", v);
    else
        snprintf(buf, sizeof buf, "%.10g", v);
    put_row(f, set, cand, key, buf, note);
}

/* The rows of --append's existing file that belong to other sets. */
static void put_kept(FILE *f, const struct csv_table *old, const char *set)
{
    if (!old)
        return;
    int cs = csv_table_col(old, "set"), cc = csv_table_col(old, "candidate");
    int ck = csv_table_col(old, "key"), cv = csv_table_col(old, "value");
    int cn = csv_table_col(old, "note");
    for (size_t r = 0; r < old->nrows; r++) {
        char **row = old->cells[r];
        if (strcmp(row[cs], set) != 0)
            put_row(f, row[cs], row[cc], row[ck], row[cv], cn >= 0 ? row[cn] : "");
    }
}

static const char *with_model_name(int w)
{
    return w == RULES_ADD ? "add" : w == 1 ? "yes" : "no";
}

/* The set's band: the widest over the candidates, lo rounded down and hi up to the 4
 * decimals the file keeps (what fit prints is what the set applies). */
static void set_band(const struct cand_fit *cf, size_t ncf, double *lo, double *hi)
{
    *lo = 1.0, *hi = 1.0;
    for (size_t c = 0; c < ncf; c++) {
        *lo = fmin(*lo, cf[c].st.band_lo);
        *hi = fmax(*hi, cf[c].st.band_hi);
    }
    *lo = floor(*lo * 1e4) / 1e4;
    *hi = ceil(*hi * 1e4) / 1e4;
}

static void put_set(FILE *f, const struct fit_args *a, const struct fit_data *d,
                    const struct selection *sel, const struct cand_fit *cf, size_t ncf)
{
    const char *s = a->set;
    put_row(f, s, "", "metric", rules_metric_name((enum rules_metric)sel->metric), "");
    put_row(f, s, "", "with_model", with_model_name(a->with_model), "");
    if (a->with_model == RULES_ADD) {
        double lo, hi;
        set_band(cf, ncf, &lo, &hi);
        put_number(f, s, "", "band.lo", lo, false,
                   "error band: held-out residuals (leave-one-model-out when it exists)");
        put_number(f, s, "", "band.hi", hi, false, "");
    }
    for (int i = 0; i < a->nmatch; i++) {
        char key[64];
        const char *eq = strchr(a->match[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - a->match[i]), a->match[i]);
        put_row(f, s, "", key, eq + 1, "");
    }
    char note[1024];
    int w = snprintf(note, sizeof note, "fitted by llmem-sweep fit on %zu rows of", sel->n);
    for (size_t i = 0; i < d->nfiles && w > 0 && (size_t)w < sizeof note; i++)
        w += snprintf(note + w, sizeof note - (size_t)w, "%s %s", i ? "," : "", d->files[i]);
    put_row(f, s, "", "note", note, "");
    for (int i = 0; i < a->nnotes; i++)
        put_row(f, s, "", "note", a->notes[i], "");
    for (size_t c = 0; c < ncf; c++) {
        const char *n = cf[c].name;
        for (size_t j = 0; j < cf[c].k; j++)
            put_number(f, s, n, rules_feature_name(cf[c].feat[j]), cf[c].coef[j], false,
                       j == 0 ? "bytes per feature unit" : "");
        put_number(f, s, n, "fit.rows", (double)cf[c].st.rows, false, "");
        put_number(f, s, n, "fit.mean_pct", cf[c].st.mean_pct, true, "in-sample");
        put_number(f, s, n, "fit.rms_pct", cf[c].st.rms_pct, true, "in-sample");
        put_number(f, s, n, "fit.max_pct", cf[c].st.max_pct, true, "in-sample");
        put_number(f, s, n, "fit.loo_mean_pct", cf[c].st.loo_mean_pct, true, "leave-one-out");
        put_number(f, s, n, "fit.loo_rms_pct", cf[c].st.loo_rms_pct, true, "leave-one-out");
        put_number(f, s, n, "fit.loo_max_pct", cf[c].st.loo_max_pct, true, "leave-one-out");
        put_number(f, s, n, "fit.lomo_models", (double)cf[c].st.lomo_models, false,
                   "leave-one-model-out");
        put_number(f, s, n, "fit.lomo_rows", (double)cf[c].st.lomo_rows, false, "");
        put_number(f, s, n, "fit.lomo_mean_pct", cf[c].st.lomo_mean_pct, true, "");
        put_number(f, s, n, "fit.lomo_max_pct", cf[c].st.lomo_max_pct, true, "");
    }
}

/* Reads the existing file for --append: NULL table when it does not exist yet. */
static int read_existing(const char *path, struct csv_table *t, bool *have)
{
    struct input_error e;
    struct rule_book *rb;
    *have = false;
    if (access(path, F_OK) != 0)
        return 0;
    if (rules_load(path, &rb, &e) != 0 || csv_table_read(path, t, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    rules_free(rb);
    *have = true;
    return 0;
}

/* Writes to a temporary file beside the target (outfile.h), checks that it loads as
 * rules, then renames it into place, so the target is never half-written. */
static int write_rules(const struct fit_args *a, const struct fit_data *d,
                       const struct selection *sel, const struct cand_fit *cf, size_t ncf,
                       const struct csv_table *old)
{
    struct outfile out;
    struct input_error e;
    if (outfile_open(&out, a->out, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    fputs("set,candidate,key,value,note\n", out.f);
    put_kept(out.f, old, a->set);
    put_set(out.f, a, d, sel, cf, ncf);
    int bad = fflush(out.f) != 0 || ferror(out.f);
    struct rule_book *rb = NULL;
    if (bad) {
        outfile_abort(&out);
        input_error_set(&e, EXIT_IO, a->out, 0, NULL, "write failed");
    } else if (out.tmp[0] && rules_load(out.tmp, &rb, &e) != 0) {
        outfile_abort(&out); /* cannot happen: the writer and the reader disagree */
        bad = 1;
    } else {
        bad = outfile_commit(&out, &e) != 0;
    }
    rules_free(rb);
    if (bad)
        input_error_print(&e);
    return bad ? EXIT_IO : 0;
}

/* --- report -------------------------------------------------------------------------- */

static void report(const struct fit_args *a, const struct fit_data *d, const struct selection *sel,
                   const struct cand_fit *cf, size_t ncf)
{
    printf("set %s: metric %s, with_model %s; %zu rows used of %zu read (%zu skipped, %zu not "
           "matching, %zu of another metric)\n", a->set,
           rules_metric_name((enum rules_metric)sel->metric), with_model_name(a->with_model),
           sel->n, d->read, d->skipped, sel->unmatched, sel->other_metric);
    printf("%-10s %5s %7s %7s %7s %9s %9s %9s %11s %10s %10s  coefficients (bytes per unit)\n",
           "candidate", "rows", "mean%", "rms%", "max%", "loo_mean%", "loo_rms%", "loo_max%",
           "lomo_models", "lomo_mean%", "lomo_max%");
    for (size_t c = 0; c < ncf; c++) {
        const struct fit_stats *st = &cf[c].st;
        printf("%-10s %5zu %7.3f %7.3f %7.3f %9.3f %9.3f %9.3f %11zu %10.3f %10.3f ", cf[c].name,
               st->rows, st->mean_pct, st->rms_pct, st->max_pct, st->loo_mean_pct,
               st->loo_rms_pct, st->loo_max_pct, st->lomo_models, st->lomo_mean_pct,
               st->lomo_max_pct);
        for (size_t j = 0; j < cf[c].k; j++)
            printf(" %s=%.6g", rules_feature_name(cf[c].feat[j]), cf[c].coef[j]);
        putchar('\n');
    }
    if (a->with_model == RULES_ADD) {
        double lo, hi;
        set_band(cf, ncf, &lo, &hi);
        printf("error band of the calibrated prediction: x%.4f .. x%.4f (from %s residuals)\n",
               lo, hi, cf[0].st.lomo_models >= 2 ? "leave-one-model-out" : "leave-one-out");
    }
    printf("wrote %s\n", a->out);
}

static int run(const struct fit_args *a, struct fit_data *d, struct rule_book *rb)
{
    struct selection sel = {0};
    struct cand_fit cf[RULES_MAX_CANDIDATES];
    size_t ncf = 0;
    struct csv_table old;
    bool have_old = false;
    int rc = select_rows(a, d, rb, &sel);
    if (!rc)
        rc = group_rows(d, &sel, cf, &ncf);
    if (!rc)
        rc = fit_all(a, d, cf, ncf);
    if (!rc && a->append)
        rc = read_existing(a->out, &old, &have_old);
    if (!rc)
        rc = write_rules(a, d, &sel, cf, ncf, have_old ? &old : NULL);
    if (!rc)
        report(a, d, &sel, cf, ncf);
    if (have_old)
        csv_table_free(&old);
    for (size_t c = 0; c < ncf; c++)
        free(cf[c].idx);
    free(sel.idx);
    return rc;
}

/* --verbose: each measured row fit cannot use, and why. */
static void say_skipped(void *data, const char *path, long line, const char *why)
{
    (void)data;
    char p[4 * 512], w[4 * 200]; /* cells of the CSV reach the terminal escaped */
    fprintf(stderr, "llmem-sweep: %s:%ld: skipped: %s\n", text_printable(path, p, sizeof p), line,
            text_printable(why, w, sizeof w));
}

int cmd_fit(int argc, char **argv)
{
    struct fit_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct input_error e;
    if (outfile_check(a.out, &e) != 0) { /* writable before the fit, as every output */
        input_error_print(&e);
        return e.code;
    }
    struct rule_book *rb = selection_book(&a);
    if (!rb)
        return EXIT_USAGE;
    struct catalog cat;
    if (catalog_load(a.data ? a.data : catalog_default_dir(), &cat, &e) != 0) {
        input_error_print(&e);
        rules_free(rb);
        return e.code;
    }
    struct fit_data d = {.on_skip = a.verbose ? say_skipped : NULL};
    for (int i = 0; rc == 0 && i < a.nmeasured; i++) {
        if (fit_data_load(&d, a.measured[i], &cat, &e) != 0) {
            input_error_print(&e);
            rc = e.code;
        }
    }
    if (rc == 0)
        rc = run(&a, &d, rb);
    fit_data_free(&d);
    catalog_free(&cat);
    rules_free(rb);
    return rc;
}
