/* validate.h: predictions for measured rows (DESIGN.md section 5, measured CSV).
 *
 * Each row becomes a configuration of the memory model, predicted for the row's metric
 * (allocated, reserved, device, or reserved-delta: reserved minus what was resident
 * before training). Rows the model cannot represent get a reason instead; rows measured
 * below what their own configuration must hold (memmodel_floor) are marked inconsistent.
 * Rows with metric `none` carry only a throughput (tokens_per_s_gpu): the speed model is
 * compared, the memory model is not (status "skipped: throughput only"). */
#ifndef LLMEM_VALIDATE_H
#define LLMEM_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "band.h"
#include "catalog.h"
#include "csv_table.h"
#include "memmodel.h"
#include "rules.h"

struct validate_row {
    const char *file;
    long line;
    char source[256];  /* the row's source, or its id prefix (LGCH, ...) when it has an id */
    char origin[256];  /* the `source` cell itself (validate_band.c band_sources joins on it) */
    char id[64];
    char model[MODEL_NAME_MAX];
    char metric[16];
    double measured_gib, predicted_gib, error_pct;
    double sweep_gib;  /* what the sweep predicts for the metric: predicted_gib, or where that
                        * came from whole replayed steps (mem_options.whole_steps), the phases'
                        * alone, as the sweep's points have it; the band is a factor on the
                        * sweep's prediction, so its residuals and coverage use this */
    double floor_gib;  /* memmodel_floor for the row's metric, 0 when none applies */
    double measured_tps, predicted_tps; /* tokens/s per GPU (tokens_per_s_gpu), 0 = none */
    const char *speed_skip; /* why a measured throughput is not compared (static), or NULL */
    enum mem_phase floor_phase; /* where that floor is */
    char status[160];  /* "ok", "skipped: <reason>" or "inconsistent: <reason>" */
    char phase[32];
    char grade[8];
    struct band_key key; /* the row's band group (band.h) */
    struct band band;    /* its band, leave-one-source-out (validate_band.h); level -1: none */
    struct band rule_band; /* the band of the rule set that predicted it (--rules), or level -1 */
    char group[160];   /* rows whose throughput is compared pairwise: the `group` cell, else
                        * source + model + gpu */
};

#define VALIDATE_ROW_MAX 4096

struct validate_opts {
    const struct catalog *cat;
    struct rule_book *rules; /* NULL without --rules */
    bool paper;
};

/* Predicts every row of a measured CSV, appending to rows (up to max). Returns the number
 * of rows appended, or -1 with e filled when the file is malformed. */
long validate_file(const char *path, const struct validate_opts *vo, struct validate_row *rows,
                   size_t max, struct input_error *e);

#endif
