/* fit.c: measured rows to fitting data, and the NNLS fit of one peak candidate. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "band.h"
#include "csv_table.h"
#include "catalog.h"
#include "grow.h"
#include "measured.h"
#include "mempoint.h"
#include "nnls.h"

/* --- reading measured rows ----------------------------------------------------------- */

/* LoRA on the token embedding (Salisbury Table I) has no contract name: such rows leave
 * lora_targets empty and say lora_component = embedding. */
static int embedding_targets(const char *s, uint32_t *out)
{
    if (*s)
        return rules_targets_parse(s, out);
    *out = RULES_TARGET_EMBED;
    return 0;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Index of the model's plan, built on first use; -1 when the model cannot be resolved
 * (neither a catalog id nor a config.json beside the CSV), -2 when memory runs out, -3
 * with e filled when the config.json is broken. */
static long model_plan(struct fit_data *d, const char *csv, const char *name,
                       const struct catalog *cat, struct input_error *e)
{
    for (size_t i = 0; i < d->nplans; i++)
        if (strcmp(d->model_names[i], name) == 0)
            return (long)i;
    struct model_spec m;
    int found = measured_row_model(csv, name, cat, &m, e);
    if (found != 0)
        return found < 0 ? -3 : -1;
    if (d->nplans == d->capplans) {
        size_t cap = d->capplans ? 2 * d->capplans : 8;
        struct model_plan *p = realloc(d->plans, cap * sizeof *p);
        if (p)
            d->plans = p;
        char **names = p ? realloc(d->model_names, cap * sizeof *names) : NULL;
        if (!names)
            return -2;
        d->model_names = names;
        d->capplans = cap;
    }
    if (!(d->model_names[d->nplans] = dup_string(name)))
        return -2;
    if (plan_init(&d->plans[d->nplans], &m) != 0) {
        free(d->model_names[d->nplans]);
        return -2;
    }
    return (long)d->nplans++;
}

static int valid_cand_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= FIT_CAND_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* The memory model's prediction of a row for its metric, with the row's GPU's terms (the
 * default GPU's when it names none in the catalog). */
static double model_bytes(struct model_plan *p, const struct train_config *c, int metric,
                          const struct gpu_spec *g, const struct catalog *cat)
{
    if (!g)
        g = catalog_find_gpu(cat, CATALOG_DEFAULT_GPU);
    if (!g)
        return 0.0;
    struct mem_options mo;
    mem_options_for_gpu(g, false, &mo);
    if (metric < 0 || train_config_check(c, &p->spec))
        return 0.0;
    if (memmodel_uses_llmem(c->stack, &mo))
        plan_chunk(p);
    struct mem_prepared mp;
    struct mem_estimate e;
    memmodel_prepare(p, c, &mo, &mp);
    memmodel_eval(p, c, &mo, &mp, &e);
    return rules_model_metric(metric, &e);
}

/* Fills row from table row r. Returns 0 (row ready), 1 (skipped, why set), -1 (error). */
static int read_row(struct fit_data *d, const struct csv_table *t, size_t r,
                    const struct catalog *cat, struct fit_row *row, char *why, size_t n,
                    struct input_error *e)
{
    memset(row, 0, sizeof *row);
    double gib;
    if (csv_get_f64(t, r, csv_table_col(t, "measured_gib"), 1e-9, 1e7, &gib, e) != 0)
        return -1;
    row->y = gib * 1073741824.0;
    row->line = t->lines[r];
    row->metric = rules_metric_parse(measured_cell(t, r, "metric"));
    const char *pt = measured_cell(t, r, "peak_type");
    if (*pt && !valid_cand_name(pt))
        return csv_cell_error(t, r, csv_table_col(t, "peak_type"), e,
                              "'%.60s': a peak type is 1 to %d letters, digits, '.', '_', '-'",
                              pt, FIT_CAND_MAX - 1);
    snprintf(row->cand, sizeof row->cand, "%s", *pt ? pt : "peak");
    bool embedding = !strcmp(measured_cell(t, r, "lora_component"), "embedding");
    int rc = measured_row_config(t, r, embedding ? embedding_targets : rules_targets_parse,
                                 &row->c, why, n, e);
    if (rc != 0)
        return rc;
    long m = model_plan(d, t->path, measured_cell(t, r, "model"), cat, e);
    if (m == -3)
        return -1;
    if (m == -2)
        return input_error_set(e, EXIT_IO, t->path, row->line, NULL, "out of memory");
    if (m < 0) {
        snprintf(why, n, "model '%.80s' is not in the catalog (and no config.json beside the CSV)",
                 measured_cell(t, r, "model"));
        return 1;
    }
    row->model = (size_t)m;
    /* a measurement below what its own configuration must hold cannot be fitted to it
     * (validate marks such rows inconsistent; memmodel_floor) */
    const char *kind = measured_cell(t, r, "seq_kind");
    enum mem_phase at;
    const uint64_t floor = memmodel_floor(&d->plans[m], &row->c, !*kind || !strcmp(kind, "exact"),
                                          measured_row_before_grads(t, r), &at);
    if (row->metric >= 0 && row->y < (double)floor) {
        snprintf(why, n, "inconsistent: below the %.2f GiB its configuration holds",
                 (double)floor / 1073741824.0);
        return 1;
    }
    row->model_bytes = model_bytes(&d->plans[m], &row->c, row->metric,
                                   catalog_find_gpu(cat, measured_cell(t, r, "gpu")), cat);
    return 0;
}

static int push_row(struct fit_data *d, const struct fit_row *row)
{
    struct fit_row *p = grow_array(d->rows, &d->caprows, d->nrows, sizeof *p, 64);
    if (!p)
        return -1;
    d->rows = p;
    d->rows[d->nrows++] = *row;
    return 0;
}

static const char *keep_path(struct fit_data *d, const char *path)
{
    char **files = realloc(d->files, (d->nfiles + 1) * sizeof *files);
    if (!files)
        return NULL;
    d->files = files;
    if (!(files[d->nfiles] = dup_string(path)))
        return NULL;
    return files[d->nfiles++];
}

int fit_data_load(struct fit_data *d, const char *path, const struct catalog *cat,
                  struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = csv_table_require(&t, measured_columns, e);
    const char *file = rc == 0 ? keep_path(d, path) : NULL;
    if (rc == 0 && !file)
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    for (size_t r = 0; rc == 0 && r < t.nrows; r++) {
        struct fit_row row;
        char why[200];
        int got = read_row(d, &t, r, cat, &row, why, sizeof why, e);
        d->read++;
        if (got < 0) {
            rc = -1;
        } else if (got > 0) {
            d->skipped++;
            if (d->on_skip)
                d->on_skip(d->on_skip_data, path, t.lines[r], why);
        } else {
            row.file = file;
            if (push_row(d, &row) != 0)
                rc = input_error_set(e, EXIT_IO, path, row.line, NULL, "out of memory");
        }
    }
    csv_table_free(&t);
    return rc;
}

void fit_data_free(struct fit_data *d)
{
    for (size_t i = 0; i < d->nplans; i++) {
        plan_free(&d->plans[i]);
        free(d->model_names[i]);
    }
    for (size_t i = 0; i < d->nfiles; i++)
        free(d->files[i]);
    free(d->plans);
    free(d->model_names);
    free(d->files);
    free(d->rows);
    memset(d, 0, sizeof *d);
}

/* --- fitting ------------------------------------------------------------------------- */

double fit_feature(const struct fit_data *d, size_t row, int feature)
{
    const struct fit_row *r = &d->rows[row];
    return rules_feature_value(feature, &d->plans[r->model], &r->c);
}

double fit_predict(const struct fit_data *d, size_t row, const int *feat, size_t k,
                   enum fit_kind kind, const double *coef)
{
    double v = kind == FIT_ADD ? d->rows[row].model_bytes : 0.0;
    for (size_t j = 0; j < k; j++)
        v += coef[j] * fit_feature(d, row, feat[j]);
    return v;
}

/* Least squares over the rows idx[i] with use[i] (use NULL: all), in relative error: row i
 * is divided by its measurement y_i, columns are scaled to unit norm, so a coefficient of
 * 1e-9 bytes per token-dimension and one of 3e9 bytes meet on equal terms.
 * FIT_REPLACE: coefficients >= 0 (NNLS: every feature adds memory), target y.
 * FIT_ADD: target y - model; the correction may have either sign (the model errs both
 * ways), so each feature enters NNLS twice, as f and -f, and its coefficient is the
 * difference: NNLS over [A, -A] is unconstrained least squares over A. */
static int solve(const struct fit_data *d, const size_t *idx, size_t n, const bool *use,
                 const int *feat, size_t k, enum fit_kind kind, double *coef)
{
    size_t m = 0, kk = kind == FIT_ADD ? 2 * k : k;
    for (size_t i = 0; i < n; i++)
        m += !use || use[i];
    double *a = malloc((m * kk + m + kk + kk) * sizeof *a);
    if (!a)
        return -1;
    double *b = a + m * kk, *scale = b + m, *x = scale + kk;
    for (size_t i = 0, row = 0; i < n; i++) {
        if (use && !use[i])
            continue;
        const struct fit_row *r = &d->rows[idx[i]];
        for (size_t j = 0; j < k; j++) {
            a[row * kk + j] = fit_feature(d, idx[i], feat[j]) / r->y;
            if (kind == FIT_ADD)
                a[row * kk + k + j] = -a[row * kk + j];
        }
        b[row++] = kind == FIT_ADD ? 1.0 - r->model_bytes / r->y : 1.0;
    }
    for (size_t j = 0; j < kk; j++) {
        double s = 0.0;
        for (size_t i = 0; i < m; i++)
            s += a[i * kk + j] * a[i * kk + j];
        scale[j] = sqrt(s);
        for (size_t i = 0; i < m; i++)
            a[i * kk + j] = scale[j] > 0.0 ? a[i * kk + j] / scale[j] : 0.0;
    }
    int rc = nnls(a, m, kk, b, x, NULL);
    for (size_t j = 0; j < kk; j++)
        x[j] = scale[j] > 0.0 ? x[j] / scale[j] : 0.0;
    for (size_t j = 0; j < k; j++)
        coef[j] = kind == FIT_ADD ? x[j] - x[k + j] : x[j];
    free(a);
    return rc;
}

static double pct_error(const struct fit_data *d, size_t row, double pred)
{
    return 100.0 * (pred - d->rows[row].y) / d->rows[row].y;
}

/* Leave-one-out: each row predicted by a fit on the others; ratio[i] = y / prediction. */
static int leave_one_out(const struct fit_data *d, const size_t *idx, size_t n, const int *feat,
                         size_t k, enum fit_kind kind, bool *use, double *c, double *ratio,
                         struct fit_stats *st)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            use[j] = j != i;
        if (solve(d, idx, n, use, feat, k, kind, c) != 0)
            return -1;
        double pred = fit_predict(d, idx[i], feat, k, kind, c);
        double err = pct_error(d, idx[i], pred);
        ss += err * err;
        st->loo_mean_pct += fabs(err) / (double)n;
        st->loo_max_pct = fmax(st->loo_max_pct, fabs(err));
        ratio[i] = pred > 0 ? d->rows[idx[i]].y / pred : 0.0;
    }
    st->loo_rms_pct = sqrt(ss / (double)n);
    return 0;
}

/* Leave-one-model-out: the rows of each model predicted by a fit on the other models'
 * rows, when those are more than the coefficients. Fills ratio for the rows predicted and
 * returns their count (-1 on failure). */
static long leave_one_model_out(const struct fit_data *d, const size_t *idx, size_t n,
                                const int *feat, size_t k, enum fit_kind kind, bool *use,
                                double *c, double *ratio, size_t *unit, struct fit_stats *st)
{
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        size_t model = d->rows[idx[i]].model, others = 0;
        bool first = true;
        for (size_t j = 0; j < i; j++)
            first &= d->rows[idx[j]].model != model;
        for (size_t j = 0; j < n; j++)
            others += (use[j] = d->rows[idx[j]].model != model);
        if (!first || others <= k)
            continue;
        if (solve(d, idx, n, use, feat, k, kind, c) != 0)
            return -1;
        st->lomo_models++;
        for (size_t j = 0; j < n; j++) {
            if (use[j])
                continue;
            double pred = fit_predict(d, idx[j], feat, k, kind, c);
            double err = fabs(pct_error(d, idx[j], pred));
            st->lomo_mean_pct += err;
            st->lomo_max_pct = fmax(st->lomo_max_pct, err);
            unit[got] = model;
            ratio[got++] = pred > 0 ? d->rows[idx[j]].y / pred : 0.0;
        }
    }
    st->lomo_rows = got;
    if (got)
        st->lomo_mean_pct /= (double)got;
    return (long)got;
}

int fit_candidate(const struct fit_data *d, const size_t *idx, size_t n, const int *feat,
                  size_t k, enum fit_kind kind, double *coef, struct fit_stats *st)
{
    memset(st, 0, sizeof *st);
    st->rows = n;
    if (n <= k || solve(d, idx, n, NULL, feat, k, kind, coef) != 0)
        return -1;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = pct_error(d, idx[i], fit_predict(d, idx[i], feat, k, kind, coef));
        ss += err * err;
        st->mean_pct += fabs(err) / (double)n;
        st->max_pct = fmax(st->max_pct, fabs(err));
    }
    st->rms_pct = sqrt(ss / (double)n);
    double *c = malloc((k ? k : 1) * sizeof *c);
    double *loo = malloc(2 * n * sizeof *loo), *lomo = loo ? loo + n : NULL;
    size_t *unit = malloc(2 * n * sizeof *unit); /* the model of each held-out residual */
    bool *use = malloc(n * sizeof *use);
    long nlomo = -1;
    int rc = c && loo && unit && use ? leave_one_out(d, idx, n, feat, k, kind, use, c, loo, st) : -1;
    if (!rc && (nlomo = leave_one_model_out(d, idx, n, feat, k, kind, use, c, lomo, unit + n,
                                            st)) < 0)
        rc = -1;
    if (!rc) { /* the band of the held-out residuals: leave-one-model-out when it exists */
        struct band b;
        for (size_t i = 0; i < n; i++)
            unit[i] = d->rows[idx[i]].model;
        if (st->lomo_models >= 2)
            band_from_heldout(lomo, unit + n, (size_t)nlomo, &b);
        else
            band_from_heldout(loo, unit, n, &b);
        st->band_lo = b.lo;
        st->band_hi = b.hi;
    }
    free(c);
    free(loo);
    free(unit);
    free(use);
    return rc;
}

/* Physically motivated defaults (README "Default features"): a constant for everything the
 * configuration fixes (weights, quantization constants, workspaces), the trainable
 * parameters (adapters or weights, their gradients and optimizer states), and the
 * activation term of the peak's phase (Salisbury's peak types): checkpointed block inputs
 * while the forward pass reaches the top block (B), the logits and loss tensors of the
 * central spikes after the forward pass (C, D), the MLP-wide temporaries of a block's
 * backward pass (E to H). A (quantization) depends on the weights only; I (embedding
 * LoRA at the end of the step) on the adapters. */
size_t fit_default_features(const char *cand, int *feat)
{
    static const struct {
        const char *cand;
        const char *features[3];
    } table[] = {
        {"A", {"1", "params", NULL}},         {"B", {"1", "trainable", "b*s*h*L"}},
        {"C", {"1", "trainable", "b*s*v"}},   {"D", {"1", "trainable", "b*s*v"}},
        {"E", {"1", "trainable", "b*s*i"}},   {"F", {"1", "trainable", "b*s*i"}},
        {"G", {"1", "trainable", "b*s*i"}},   {"H", {"1", "trainable", "b*s*i"}},
        {"I", {"1", "trainable", NULL}},
    };
    static const char *const other[3] = {"1", "trainable", "b*s*h*L"};
    const char *const *names = other;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].cand, cand) == 0)
            names = table[i].features;
    size_t k = 0;
    for (size_t i = 0; i < 3 && names[i]; i++)
        feat[k++] = rules_feature_parse(names[i]);
    return k;
}

size_t fit_default_add_features(size_t rows, int *feat)
{
    static const char *const names[] = {"1", "b*s*h*L", "b*s*v", "b*s"};
    size_t k = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && k + 1 < rows; i++)
        feat[k++] = rules_feature_parse(names[i]);
    return k;
}
