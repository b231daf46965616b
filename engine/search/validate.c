/* validate.c: measured rows to configurations and predictions (see validate.h). */
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "measured.h"
#include "mempoint.h"
#include "speed.h"
#include "units.h"

static double metric_bytes(const char *metric, const struct mem_estimate *e,
                           const struct mem_prepared *mp, bool *ok)
{
    *ok = true;
    const int m = rules_metric_parse(metric); /* allocated, reserved, device (nvidia-smi) */
    if (m >= 0)
        return rules_model_metric(m, e);
    if (!strcmp(metric, "reserved-delta")) /* minus the weights resident before step 1 */
        return (double)e->reserved - (double)mp->fixed[PHASE_FORWARD][TERM_PARAMS];
    *ok = false;
    return 0;
}

/* tokens/s per GPU as the sources print it: per rank, b*s tokens per step. Not compared:
 * lengths under a cap (the tokens a step holds are unknown), and throughputs that would
 * need more FLOP/s than the GPU's dense peak for the work the model counts (a row that
 * cannot come from its stated configuration). */
static void predict_speed(struct model_plan *p, const struct train_config *c,
                          const struct gpu_spec *g, bool exact_seq, uint64_t paged_moved,
                          struct validate_row *out)
{
    struct speed_prepared sp;
    struct speed_estimate se;
    if (!exact_seq) {
        out->speed_skip = "sequence length is a cap: tokens per step unknown";
        return;
    }
    speed_prepare(p, c, g, &sp);
    speed_eval(c, &sp, &se);
    speed_add_paging(g, paged_moved, &se);
    double tokens = (double)c->micro_batch * (double)c->seq_len;
    double peak = (c->precision == PREC_FP32 ? g->fp32_tflops
                   : c->precision == PREC_FP8 && g->fp8_tflops > 0 ? g->fp8_tflops /* float8 GEMMs */
                   : g->bf16_tflops > 0 ? g->bf16_tflops : g->fp16_tflops) * 1e12;
    if (out->measured_tps * se.flops / tokens > peak) {
        out->speed_skip = "inconsistent: needs more than the dense peak FLOP/s";
        return;
    }
    out->predicted_tps = se.tokens_per_s / (double)c->dp;
}

/* A measured variable-length run whose step widths the row gives (column `widths`). */
struct row_run {
    uint32_t w[LP_RUN_STEPS];
    size_t n; /* 0: not given, the model's LP_RUN_STEPS-step run */
};

/* The model's estimate of c under mo, over the row's own variable-length run when it has
 * one (Liger's path has no tensors to replay: the model's run stands then). */
static void estimate(struct model_plan *p, const struct train_config *c, const struct mem_options *mo,
                     const struct row_run *run, struct mem_prepared *mp, struct mem_estimate *est)
{
    memmodel_prepare(p, c, mo, mp);
    if (run->n)
        (void)memmodel_replay_run(p, c, run->w, run->n, mp);
    memmodel_eval(p, c, mo, mp, est);
}

/* The model's prediction (with rules when they bind) for the row's metric, in bytes; a
 * row's own variable-length run replaces the model's through the allocator replay.
 * Returns NULL, or why the row cannot be predicted (written into why). */
static const char *predict_bytes(struct model_plan *p, const struct train_config *c,
                                 const struct validate_opts *vo, const struct gpu_spec *g,
                                 const struct row_run *run, bool exact_seq, bool before_grads,
                                 struct validate_row *out, char *why, size_t n)
{
    const char *bad = train_config_check(c, &p->spec);
    if (!bad)
        bad = train_gpu_check(c, g);
    if (bad)
        return snprintf(why, n, "invalid configuration: %s", bad), why;
    struct mem_options mo;
    mem_options_for_gpu(g, vo->paper, &mo);
    mo.whole_steps = !vo->rules; /* rules were fitted to the phases' reserve (rules/fit.c) */
    if (memmodel_uses_llmem(c->stack, &mo))
        plan_chunk(p);
    struct mem_prepared mp;
    struct mem_estimate est;
    estimate(p, c, &mo, run, &mp, &est);
    if (out->measured_tps > 0 && g)
        predict_speed(p, c, g, exact_seq, est.paged_moved, out);
    if (!strcmp(out->metric, "none"))
        return snprintf(why, n, "throughput only (metric none)"), why;
    bool ok;
    double bytes = metric_bytes(out->metric, &est, &mp, &ok);
    if (!ok)
        return snprintf(why, n, "metric '%s' is unknown", out->metric), why;
    int bind = vo->rules ? rules_bind(vo->rules, p) : -1;
    int set = bind >= 0 ? rules_prepare(vo->rules, bind, p, c) : -1;
    uint64_t rp;
    int cand;
    if (set >= 0 && rules_eval(vo->rules, set, p, c, &est, &rp, &cand)) {
        bytes = (double)rp - ((double)est.device - bytes); /* back to the row's metric */
        if (rules_set_band(vo->rules, set, &out->rule_band.lo, &out->rule_band.hi))
            out->rule_band.level = BAND_CALIBRATION; /* a calibration's own band */
    }
    snprintf(out->phase, sizeof out->phase, "%s", mem_phase_name(est.peak_phase));
    out->predicted_gib = bytes / (double)GIB;
    out->sweep_gib = out->predicted_gib;
    if (est.replayed_steps) { /* the sweep's points are not replayed: theirs is the phases'
                                  (over the row's own widths: its data, not the model's) */
        mo.whole_steps = false;
        estimate(p, c, &mo, run, &mp, &est);
        out->sweep_gib = metric_bytes(out->metric, &est, &mp, &ok) / (double)GIB;
    }
    if (strcmp(out->metric, "reserved-delta") != 0) { /* allocated <= reserved <= device */
        enum mem_phase at;
        out->floor_gib = (double)memmodel_floor(p, c, exact_seq, before_grads, &at) / (double)GIB;
        out->floor_phase = at;
    }
    return NULL;
}

/* A measurement below what its own configuration must hold (memmodel_floor) cannot come
 * from that configuration: the row is reported, with its prediction, but kept out of the
 * error statistics. */
static bool below_floor(struct validate_row *out)
{
    if (out->floor_gib <= 0 || out->measured_gib >= out->floor_gib)
        return false;
    snprintf(out->status, sizeof out->status,
             "inconsistent: below the %.2f GiB the stated configuration holds at %s",
             out->floor_gib,
             out->floor_phase == PHASE_OPTIMIZER ? "the optimizer step (weights+grads+states)"
                                                 : "the end of forward (weights+states+block inputs)");
    return true;
}

/* Predicts row r into out; returns 0, or -1 with e on a malformed cell. */
static int predict_row(const struct csv_table *t, size_t r, const struct validate_opts *vo,
                       struct validate_row *out, struct input_error *e)
{
    struct train_config c;
    struct model_spec m;
    struct model_plan p;
    char why[160];
    const char *skip = NULL;
    struct row_run run = {.n = 0};
    int rc = measured_row_config(t, r, targets_parse, &c, why, sizeof why, e);
    int steps = rc == 0 ? measured_row_run(t, r, &c, run.w, LP_RUN_STEPS, e) : 0;
    if (rc < 0 || steps < 0)
        return -1;
    run.n = (size_t)steps;
    if (rc > 0)
        skip = why;
    out->key = band_key_of(&c);
    if (!skip && out->measured_gib <= 0 && (strcmp(out->metric, "none") != 0 || out->measured_tps <= 0))
        skip = "no measured value";
    int found = skip ? 0 : measured_row_model(t->path, out->model, vo->cat, &m, e);
    if (found < 0)
        return -1; /* a config.json beside the CSV that does not read: exit 3 */
    if (found > 0)
        skip = "model not in the catalog and no config.json beside the CSV";
    if (!skip && plan_init(&p, &m) != 0)
        skip = "out of memory";
    else if (!skip) {
        const struct gpu_spec *g = catalog_find_gpu(vo->cat, measured_cell(t, r, "gpu"));
        if (!g) /* the default GPU's context for the memory; no speed without the real GPU */
            out->measured_tps = 0;
        /* seq_kind (datasets/measured/README.md): a cap or unknown length sets no floor */
        const char *kind = measured_cell(t, r, "seq_kind");
        bool exact = !*kind || !strcmp(kind, "exact");
        skip = predict_bytes(&p, &c, vo, g ? g : catalog_find_gpu(vo->cat, CATALOG_DEFAULT_GPU), &run, exact,
                             measured_row_before_grads(t, r), out, why, sizeof why);
        plan_free(&p);
    }
    if (skip) { /* a reason may quote a cell */
        char shown[141];
        snprintf(out->status, sizeof out->status, "skipped: %s", text_printable(skip, shown, sizeof shown));
        return 0;
    }
    out->error_pct = 100.0 * (out->predicted_gib - out->measured_gib) / out->measured_gib;
    if (!below_floor(out))
        snprintf(out->status, sizeof out->status, "ok");
    return 0;
}

static void row_identity(const struct csv_table *t, size_t r, struct validate_row *out)
{
    memset(out, 0, sizeof *out);
    out->rule_band.level = -1;
    out->file = t->path;
    out->line = t->lines[r];
    /* the rows are printed to a terminal: control characters of the cells as \xNN */
    text_printable(measured_cell(t, r, "id"), out->id, sizeof out->id);
    text_printable(measured_cell(t, r, "model"), out->model, sizeof out->model);
    text_printable(measured_cell(t, r, "metric"), out->metric, sizeof out->metric);
    text_printable(measured_cell(t, r, "grade"), out->grade, sizeof out->grade);
    /* group rows by the id's prefix (LGCH-01 -> LGCH) when ids exist, else by source */
    const char *dash = strrchr(out->id, '-');
    if (out->id[0] && dash)
        snprintf(out->source, sizeof out->source, "%.*s", (int)(dash - out->id), out->id);
    else
        text_printable(measured_cell(t, r, "source"), out->source, sizeof out->source);
    text_printable(measured_cell(t, r, "source"), out->origin, sizeof out->origin);
    const char *group = measured_cell(t, r, "group");
    if (*group)
        text_printable(group, out->group, sizeof out->group);
    else
        snprintf(out->group, sizeof out->group, "%.60s|%.60s|%.30s", out->source, out->model,
                 measured_cell(t, r, "gpu"));
}

long validate_file(const char *path, const struct validate_opts *vo, struct validate_row *rows,
                   size_t max, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    if (csv_table_require(&t, measured_columns, e) != 0) {
        csv_table_free(&t);
        return -1;
    }
    size_t n = 0;
    int rc = 0;
    if (t.nrows > max) /* never dropped silently */
        rc = input_error_set(e, EXIT_BAD_INPUT, path, t.lines[max], NULL, "more than %d measured "
                             "rows in all: validate fewer files at once", VALIDATE_ROW_MAX);
    for (size_t r = 0; !rc && r < t.nrows; r++) {
        struct validate_row *out = &rows[n];
        row_identity(&t, r, out);
        out->file = path;
        /* an empty value goes with a failed measurement (status); a malformed one is an error */
        if (*measured_cell(&t, r, "measured_gib") &&
            csv_get_f64(&t, r, csv_table_col(&t, "measured_gib"), 1e-6, 1e6, &out->measured_gib, e))
            rc = -1;
        else if (*measured_cell(&t, r, "tokens_per_s_gpu") &&
                 csv_get_f64(&t, r, csv_table_col(&t, "tokens_per_s_gpu"), 1e-3, 1e9,
                             &out->measured_tps, e))
            rc = -1;
        else
            rc = predict_row(&t, r, vo, out, e);
        n++;
    }
    csv_table_free(&t);
    return rc ? -1 : (long)n;
}
