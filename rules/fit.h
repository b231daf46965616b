/* fit.h: measured rows as fitting data, and the per-candidate fit (rules/README.md, "Fitting").
 *
 * A measured CSV (DESIGN.md section 5) becomes rows of (model plan, configuration, measured
 * bytes, peak candidate). The fit of one candidate is a non-negative least-squares problem
 * in relative error: row i weighs 1 / y_i, so every row counts by its percentage error. */
#ifndef LLMEM_FIT_H
#define LLMEM_FIT_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog.h"
#include "plan.h"
#include "rules.h"
#include "train.h"

#define FIT_CAND_MAX 32

struct fit_row {
    const char *file;        /* owned by the fit_data */
    long line;
    size_t model;            /* index into fit_data.plans */
    struct train_config c;
    int metric;              /* enum rules_metric; -1: a metric rules cannot fit */
    double y;                /* measured bytes */
    double model_bytes;      /* the memory model's prediction for the row's metric, bytes */
    char cand[FIT_CAND_MAX]; /* extension column peak_type, or "peak" */
};

struct fit_data {
    struct fit_row *rows;
    size_t nrows, caprows;
    struct model_plan *plans;
    char **model_names;      /* the measured CSV's model cell of each plan */
    size_t nplans, capplans;
    char **files;
    size_t nfiles;
    size_t read, skipped;    /* data rows seen, rows that could not become configurations */
    /* Told of each skipped row and why (the library prints nothing); NULL: quiet. */
    void (*on_skip)(void *data, const char *path, long line, const char *why);
    void *on_skip_data;
};

/* Appends the rows of one measured CSV. Rows the tool cannot represent (unknown model,
 * unknown sequence length, an unsupported setting) are skipped and counted; a malformed
 * file or cell fails. Returns 0, or -1 with e filled. */
int fit_data_load(struct fit_data *d, const char *path, const struct catalog *cat,
                  struct input_error *e);
void fit_data_free(struct fit_data *d);

struct fit_stats {
    size_t rows;
    double mean_pct, rms_pct, max_pct;              /* in-sample |relative error| */
    double loo_mean_pct, loo_rms_pct, loo_max_pct;  /* leave-one-out: each row predicted by a
                                                     * fit on the others */
    size_t lomo_models, lomo_rows;                  /* leave-one-model-out: the rows of each
                                                     * model predicted by a fit on the other
                                                     * models' rows (models whose others hold
                                                     * too few rows are not counted) */
    double lomo_mean_pct, lomo_max_pct;
    double band_lo, band_hi;                        /* error band from the held-out residuals
                                                     * (leave-one-model-out when >= 2 models
                                                     * were held out, else leave-one-out) */
};

/* How a candidate predicts: its formula alone, or the memory model plus the formula
 * (with_model add: coefficients of either sign). */
enum fit_kind { FIT_REPLACE, FIT_ADD };

/* Feature value of a row. */
double fit_feature(const struct fit_data *d, size_t row, int feature);

/* Fits coefficients (bytes per feature unit) of features feat[0..k) over the rows
 * idx[0..n), n > k, by NNLS on unit-norm scaled columns. Returns 0, or -1 when memory
 * runs out or NNLS does not converge. */
int fit_candidate(const struct fit_data *d, const size_t *idx, size_t n, const int *feat,
                  size_t k, enum fit_kind kind, double *coef, struct fit_stats *st);

/* Prediction of a row from fitted coefficients (plus the model's for FIT_ADD). */
double fit_predict(const struct fit_data *d, size_t row, const int *feat, size_t k,
                   enum fit_kind kind, const double *coef);

/* The default features of an additive calibration (README "Calibrating to your stack"):
 * 1, b*s*h*L, b*s*v, b*s, as many as rows - 1 allows, in that order. */
size_t fit_default_add_features(size_t rows, int *feat);

/* The default features of a candidate, by its name (README "Default features"); returns
 * their count and fills feat (room for rules_feature_count() entries). */
size_t fit_default_features(const char *cand, int *feat);

#endif
