/* csv_out.c: the ranked CSV (DESIGN.md section 5), written with libcsv, and read back for
 * `merge`. Numbers are printed in the C locale with fixed precision; strings go through
 * csv_table_put (csv_table.h), quoted. */
#include "report.h"

#include <csv.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "csv_table.h"
#include "numfmt.h"

const char *const report_csv_columns[] = {
    "rank", "model", "method", "gpus", "tp", "dp", "micro_batch", "global_batch", "seq_len",
    "precision", "finetune", "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer",
    "peak_gib", "budget_gib", "headroom_gib", "peak_phase", "base_gib", "params_gib",
    "grads_gib", "optimizer_gib", "activations_gib", "logits_gib", "comm_buffers_gib", "rule",
    "step_time_s", "samples_per_s", "tokens_per_s", "fits",
    /* appended: exact tie-breaks and the other two peak metrics */
    "index", "score", "peak_bytes", "allocated_gib", "reserved_gib",
    /* appended: the upper end of the error band (README "Error band") */
    "peak_hi_gib",
    /* appended: 1 when within the speed model's error of the recipe's fastest */
    "speed_within_error",
    /* appended: the expert-parallel degree (1 for dense models) */
    "ep",
    /* appended: pipeline stages, micro-batches a pipelined step, offload, host memory a GPU */
    "pp", "pp_microbatches", "offload", "host_gib",
    /* appended: the recipe and configuration ids (stable across runs, catalogs and
     * versions: answer.h) and tokens/s per GPU */
    "recipe_id", "config_id", "tokens_per_s_gpu",
    /* appended: the fewest GPUs any layout of the recipe fits on, over the whole space */
    "recipe_min_gpus",
    /* appended: the run's GPU and stack, so `merge` refuses shards of different sweeps */
    "gpu", "stack", NULL,
};

static int field(FILE *f, const char *s, bool last)
{
    if (csv_table_put(f, s, true) != 0)
        return -1;
    return fputc(last ? '\n' : ',', f) == EOF ? -1 : 0;
}

static int write_row(FILE *f, const struct report_meta *m, const struct report_row *r)
{
    char targets[96];
    const struct train_config *c = &r->cfg;
    targets_format(c->lora_targets, targets, sizeof targets);
    int rc = fprintf(f, "%ld,", r->rank) < 0;
    rc |= field(f, r->model, false);
    rc |= field(f, method_name(c->method), false);
    rc |= fprintf(f, "%d,%d,%d,%d,%" PRId64 ",%d,", c->gpus, c->tp, c->dp, c->micro_batch,
                  r->global_batch, c->seq_len) < 0;
    rc |= fprintf(f, "%s,%s,%d,", precision_name(c->precision), finetune_name(c->finetune),
                  c->lora_r) < 0;
    rc |= field(f, targets, false);
    rc |= fprintf(f, "%s,%s,%s,", quant_name(c->quant), ckpt_mode_name(c),
                  optimizer_name(c->optimizer)) < 0;
    rc |= numfmt_put(f, r->peak_gib, 3, ',') | numfmt_put(f, r->budget_gib, 3, ',') |
          numfmt_put(f, r->headroom_gib, 3, ',');
    rc |= field(f, r->peak_phase, false);
    for (int t = 0; t < TERM_COUNT; t++)
        rc |= numfmt_put(f, r->term_gib[t], 3, ',');
    rc |= field(f, r->rule, false);
    rc |= numfmt_put(f, r->step_time_s, 6, ',') | numfmt_put(f, r->samples_per_s, 3, ',') |
          numfmt_put(f, r->tokens_per_s, 1, ',');
    rc |= fprintf(f, "%d,%" PRIu64 ",%.17g,%" PRIu64 ",", r->fits ? 1 : 0, r->index, r->score,
                  r->peak_bytes) < 0;
    rc |= numfmt_put(f, r->allocated_gib, 3, ',') | numfmt_put(f, r->reserved_gib, 3, ',') |
          numfmt_put(f, r->peak_hi_gib, 3, ',');
    rc |= fprintf(f, "%d,%d,", r->speed_tie ? 1 : 0, train_ep(c)) < 0;
    rc |= fprintf(f, "%d,%d,%s,", train_pp(c), train_microbatches(c), offload_name(c->offload)) < 0;
    rc |= numfmt_put(f, r->host_gib, 3, ',');
    rc |= fprintf(f, "%s,%s,", r->recipe_id, r->config_id) < 0;
    rc |= numfmt_put(f, r->tokens_per_s_gpu, 1, ',');
    rc |= fprintf(f, "%d,", (int)r->recipe_min_gpus) < 0;
    rc |= field(f, m->gpu, false);
    rc |= field(f, m->stack, true);
    return rc ? -1 : 0;
}

int report_write_csv(const struct report *r, FILE *f)
{
    for (size_t i = 0; report_csv_columns[i]; i++)
        if (fprintf(f, "%s%c", report_csv_columns[i], report_csv_columns[i + 1] ? ',' : '\n') < 0)
            return -1;
    for (size_t i = 0; i < r->nrows; i++)
        if (write_row(f, &r->meta, &r->rows[i]) != 0)
            return -1;
    return ferror(f) ? -1 : 0;
}

/* --- reading shards back ----------------------------------------------------------- */

struct cursor {
    const struct csv_table *t;
    size_t row;
    int col;
    struct input_error *e;
    int failed;
};

static const char *text(struct cursor *c)
{
    return c->t->cells[c->row][c->col++];
}

static int64_t integer(struct cursor *c, int64_t lo, int64_t hi)
{
    int64_t v = 0;
    if (!c->failed && csv_get_i64(c->t, c->row, c->col, lo, hi, &v, c->e))
        c->failed = 1;
    c->col++;
    return v;
}

static double number(struct cursor *c)
{
    double v = 0;
    if (!c->failed && csv_get_f64(c->t, c->row, c->col, -1e300, 1e300, &v, c->e))
        c->failed = 1;
    c->col++;
    return v;
}

static int named(struct cursor *c, int (*parse)(const char *))
{
    const char *s = text(c);
    int v = parse(s);
    if (v < 0 && !c->failed) {
        c->failed = 1;
        csv_cell_error(c->t, c->row, c->col - 1, c->e, "unknown value '%s'", s);
    }
    return v < 0 ? 0 : v;
}

static void copy_text(struct cursor *c, char *dst, size_t n)
{
    const char *s = text(c);
    if (strlen(s) >= n && !c->failed) {
        c->failed = 1;
        csv_cell_error(c->t, c->row, c->col - 1, c->e, "too long");
    }
    snprintf(dst, n, "%s", s);
}

static int read_row(struct cursor *c, struct report_row *r)
{
    struct train_config *k = &r->cfg;
    memset(r, 0, sizeof *r);
    r->rank = (long)integer(c, 1, INT64_MAX);
    copy_text(c, r->model, sizeof r->model);
    k->method = (enum method)named(c, method_parse);
    k->gpus = (int32_t)integer(c, 1, 4096);
    k->tp = (int32_t)integer(c, 1, 4096);
    k->dp = (int32_t)integer(c, 1, 4096);
    k->micro_batch = (int32_t)integer(c, 1, 65536);
    r->global_batch = integer(c, 1, INT64_C(1) << 40);
    k->seq_len = (int32_t)integer(c, 1, 1 << 20);
    k->precision = (enum precision)named(c, precision_parse);
    k->finetune = (enum finetune)named(c, finetune_parse);
    k->lora_r = (int32_t)integer(c, 0, 65536);
    const char *targets = text(c);
    if (*targets && targets_parse(targets, &k->lora_targets) != 0 && !c->failed) {
        c->failed = 1;
        csv_cell_error(c->t, c->row, c->col - 1, c->e, "unknown targets '%s'", targets);
    }
    k->quant = (enum quant)named(c, quant_parse);
    train_set_ckpt(k, named(c, ckpt_mode_parse));
    k->optimizer = (enum optimizer)named(c, optimizer_parse);
    r->peak_gib = number(c);
    r->budget_gib = number(c);
    r->headroom_gib = number(c);
    copy_text(c, r->peak_phase, sizeof r->peak_phase);
    for (int t = 0; t < TERM_COUNT; t++)
        r->term_gib[t] = number(c);
    copy_text(c, r->rule, sizeof r->rule);
    r->step_time_s = number(c);
    r->samples_per_s = number(c);
    r->tokens_per_s = number(c);
    r->fits = integer(c, 0, 1) == 1;
    r->index = (uint64_t)integer(c, 0, INT64_MAX);
    r->score = number(c);
    r->peak_bytes = (uint64_t)integer(c, 0, INT64_MAX);
    r->allocated_gib = number(c);
    r->reserved_gib = number(c);
    r->peak_hi_gib = number(c);
    r->speed_tie = integer(c, 0, 1) == 1;
    k->ep = (int32_t)integer(c, 1, 4096);
    k->pp = (int32_t)integer(c, 1, 4096);
    k->microbatches = (int32_t)integer(c, 1, 65536);
    k->offload = (enum offload_mode)named(c, offload_parse);
    r->host_gib = number(c);
    /* the ids are a function of the knobs: recomputed, so a row always carries its own */
    text(c);
    text(c);
    r->tokens_per_s_gpu = number(c);
    r->recipe_min_gpus = (int32_t)integer(c, 0, 4096);
    answer_recipe_id(r->model, k, r->recipe_id);
    answer_config_id(r->model, k, r->config_id);
    return c->failed ? -1 : 0;
}

/* The run a row comes from must be the run of every row read before it: one GPU, one
 * budget, one stack (the first row read sets them). */
static int same_run(struct cursor *c, struct report_meta *m, const struct report_row *row)
{
    const char *gpu = text(c), *stack = text(c);
    if (!m->gpu[0]) {
        snprintf(m->gpu, sizeof m->gpu, "%s", gpu);
        snprintf(m->stack, sizeof m->stack, "%s", stack);
        m->budget_gib = row->budget_gib;
        return 0;
    }
    const char *what = strcmp(gpu, m->gpu) ? "gpu" : strcmp(stack, m->stack) ? "stack"
                     : row->budget_gib != m->budget_gib ? "budget_gib" : NULL;
    if (!what)
        return 0;
    char was[GPU_NAME_MAX + 8], is[GPU_NAME_MAX + 8];
    if (!strcmp(what, "budget_gib")) {
        snprintf(was, sizeof was, "%.3f", m->budget_gib);
        snprintf(is, sizeof is, "%.3f", row->budget_gib);
    } else {
        snprintf(was, sizeof was, "%s", what[0] == 'g' ? m->gpu : m->stack);
        snprintf(is, sizeof is, "%s", what[0] == 'g' ? gpu : stack);
    }
    int col = csv_table_col(c->t, what);
    return csv_cell_error(c->t, c->row, col, c->e, "'%s' differs from '%s' of the rows read "
                          "before: shards of one sweep share GPU, budget and stack", is, was);
}

int report_read_csv(struct report *r, const char *path, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; report_csv_columns[i] && !rc; i++)
        if (i >= t.ncols || strcmp(t.header[i], report_csv_columns[i]) != 0)
            rc = input_error_set(e, EXIT_BAD_INPUT, path, 1, report_csv_columns[i],
                                 "not a llmem-sweep ranked CSV: expected column '%s'",
                                 report_csv_columns[i]);
    struct report_row *rows = rc ? NULL : realloc(r->rows, (r->nrows + t.nrows + 1) * sizeof *rows);
    if (!rc && !rows)
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    if (rows)
        r->rows = rows;
    for (size_t i = 0; !rc && i < t.nrows; i++) {
        struct cursor c = {&t, i, 0, e, 0};
        if (read_row(&c, &r->rows[r->nrows]) != 0 || same_run(&c, &r->meta, &r->rows[r->nrows]) != 0)
            rc = -1;
        if (!rc)
            r->nrows++;
    }
    csv_table_free(&t);
    return rc;
}
