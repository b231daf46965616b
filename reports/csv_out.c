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

/* One row is composed in memory and written with one fwrite: at tens of thousands of rows
 * a report, stdio's per-call locking and format parsing were most of the default sweep's
 * time. Strings are quoted the way csv_table_put quotes them (libcsv's csv_write). */
struct line {
    char s[4096];
    size_t n;
    bool full; /* a field did not fit: the row is not written */
};

static void put_raw(struct line *l, const char *s, size_t n)
{
    if (l->full || n > sizeof l->s - l->n) {
        l->full = true;
        return;
    }
    memcpy(l->s + l->n, s, n);
    l->n += n;
}

static void put_field(struct line *l, const char *s, char sep)
{
    const size_t room = l->full ? 0 : sizeof l->s - l->n;
    const size_t n = csv_write(l->s + l->n, room, s, strlen(s));
    if (n >= room) {
        l->full = true;
        return;
    }
    l->n += n;
    put_raw(l, &sep, 1);
}

static void put_text(struct line *l, const char *s)
{
    put_raw(l, s, strlen(s));
    put_raw(l, ",", 1);
}

static void put_int(struct line *l, int64_t v)
{
    char buf[NUMFMT_UINT_MAX + 2];
    char *at = numfmt_uint(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, buf + sizeof buf - 1);
    buf[sizeof buf - 1] = ',';
    if (v < 0)
        *--at = '-';
    put_raw(l, at, (size_t)(buf + sizeof buf - at));
}

static void put_num(struct line *l, double v, int decimals)
{
    char buf[NUMFMT_MAX];
    put_text(l, numfmt_fixed(v, decimals, buf, sizeof buf));
}

static int write_row(FILE *f, const struct report_meta *m, const struct report_row *r)
{
    char targets[96], score[32];
    const struct train_config *c = &r->cfg;
    struct line l = {.n = 0};
    targets_format(c->lora_targets, targets, sizeof targets);
    put_int(&l, r->rank);
    put_field(&l, r->model, ',');
    put_field(&l, method_name(c->method), ',');
    put_int(&l, c->gpus), put_int(&l, c->tp), put_int(&l, c->dp), put_int(&l, c->micro_batch);
    put_int(&l, r->global_batch), put_int(&l, c->seq_len);
    put_text(&l, precision_name(c->precision)), put_text(&l, finetune_name(c->finetune));
    put_int(&l, c->lora_r);
    put_field(&l, targets, ',');
    put_text(&l, quant_name(c->quant)), put_text(&l, ckpt_mode_name(c));
    put_text(&l, optimizer_name(c->optimizer));
    put_num(&l, r->peak_gib, 3), put_num(&l, r->budget_gib, 3), put_num(&l, r->headroom_gib, 3);
    put_field(&l, r->peak_phase, ',');
    for (int t = 0; t < TERM_COUNT; t++)
        put_num(&l, r->term_gib[t], 3);
    put_field(&l, r->rule, ',');
    put_num(&l, r->step_time_s, 6), put_num(&l, r->samples_per_s, 3), put_num(&l, r->tokens_per_s, 1);
    put_int(&l, r->fits ? 1 : 0);
    put_int(&l, (int64_t)r->index); /* < 2^63: a point index of the space */
    snprintf(score, sizeof score, "%.17g", r->score);
    put_text(&l, score);
    put_int(&l, (int64_t)r->peak_bytes); /* saturates at 2^62 (units.h) */
    put_num(&l, r->allocated_gib, 3), put_num(&l, r->reserved_gib, 3), put_num(&l, r->peak_hi_gib, 3);
    put_int(&l, r->speed_tie ? 1 : 0), put_int(&l, train_ep(c));
    put_int(&l, train_pp(c)), put_int(&l, train_microbatches(c));
    put_text(&l, offload_name(c->offload));
    put_num(&l, r->host_gib, 3);
    put_text(&l, r->recipe_id), put_text(&l, r->config_id);
    put_num(&l, r->tokens_per_s_gpu, 1);
    put_int(&l, r->recipe_min_gpus);
    put_field(&l, m->gpu, ',');
    put_field(&l, m->stack, '\n');
    return l.full || fwrite(l.s, 1, l.n, f) != l.n ? -1 : 0;
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
