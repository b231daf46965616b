/* report.c: rows from a sweep, ranking, and atomic writing (see report.h). */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "speed.h"
#include "units.h"

void report_row_from_point(struct report_row *row, const struct sweep *s,
                           const struct sweep_point *pt)
{
    const struct mem_estimate *e = &pt->mem;
    memset(row, 0, sizeof *row);
    snprintf(row->model, sizeof row->model, "%s", s->models[pt->model].spec.name);
    row->cfg = pt->cfg;
    row->global_batch = (int64_t)pt->cfg.micro_batch * pt->cfg.dp * train_microbatches(&pt->cfg);
    row->peak_bytes = pt->peak;
    row->peak_gib = units_gib(pt->peak);
    row->budget_gib = units_gib(s->budget);
    row->headroom_gib = row->budget_gib - row->peak_gib;
    snprintf(row->peak_phase, sizeof row->peak_phase, "%s", mem_phase_name(e->peak_phase));
    for (int t = 0; t < TERM_COUNT; t++)
        row->term_gib[t] = units_gib(e->phase[e->peak_phase][t]);
    if (pt->rule >= 0 && s->rules)
        snprintf(row->rule, sizeof row->rule, "%s", rules_label(s->rules, pt->rule));
    row->step_time_s = pt->speed.step_time_s;
    row->samples_per_s = pt->speed.samples_per_s;
    row->tokens_per_s = pt->speed.tokens_per_s;
    row->fits = pt->fits;
    row->index = pt->index;
    row->score = pt->score;
    row->allocated_gib = units_gib(e->allocated);
    row->reserved_gib = units_gib(e->reserved);
    row->peak_hi_gib = units_gib(pt->peak_hi);
    row->host_gib = units_gib(e->host);
}

static void fill_meta(struct report_meta *m, const struct sweep *s, const char *gpu_note)
{
    const struct options *o = s->opt;
    m->version = LLMEM_VERSION;
    snprintf(m->gpu, sizeof m->gpu, "%s", s->gpu->name);
    snprintf(m->gpu_note, sizeof m->gpu_note, "%s", gpu_note ? gpu_note : "");
    m->budget_gib = units_gib(s->budget);
    snprintf(m->stack, sizeof m->stack, "%s", stack_name(o->stack));
    snprintf(m->rank_mode, sizeof m->rank_mode, "%s", o->rank == RANK_LLMEM ? "llmem" : "speed");
    m->paper = o->paper;
    m->rules = o->rules;
    m->opt = o;
    m->stamp = o->stamp;
}

int report_from_sweep(struct report *r, const struct sweep *s, const struct sweep_result *res,
                      const char *gpu_note)
{
    memset(r, 0, sizeof *r);
    fill_meta(&r->meta, s, gpu_note);
    r->meta.has_counts = true;
    r->meta.space = res->space;
    r->meta.evaluated = res->evaluated;
    r->meta.pruned = res->pruned;
    r->meta.fitting = res->fitting;
    r->sweep = s;
    r->result = res;
    r->rows = calloc(res->nhits ? res->nhits : 1, sizeof *r->rows);
    if (!r->rows)
        return -1;
    for (size_t i = 0; i < res->nhits; i++) {
        struct sweep_point pt;
        sweep_eval_point(s, res->hits[i].index, &pt);
        report_row_from_point(&r->rows[i], s, &pt);
        r->rows[i].rank = (long)i + 1;
    }
    r->nrows = res->nhits;
    report_mark_ties(r);
    return 0;
}

/* Recipe order (model, fine-tuning, rank, targets, base format, precision, optimizer,
 * sequence length) of two rows; 0 for the same recipe. */
static int recipe_cmp(const struct report_row *a, const struct report_row *b)
{
    const struct train_config *x = &a->cfg, *y = &b->cfg;
    int d = strcmp(a->model, b->model);
    const int64_t k[7][2] = {
        {x->finetune, y->finetune},   {x->lora_r, y->lora_r},       {x->lora_targets, y->lora_targets},
        {x->quant, y->quant},         {x->precision, y->precision}, {x->optimizer, y->optimizer},
        {x->seq_len, y->seq_len},
    };
    for (int i = 0; !d && i < 7; i++)
        d = (k[i][0] > k[i][1]) - (k[i][0] < k[i][1]);
    return d;
}

static int recipe_ptr_cmp(const void *a, const void *b)
{
    const struct report_row *x = *(const struct report_row *const *)a;
    const struct report_row *y = *(const struct report_row *const *)b;
    int d = recipe_cmp(x, y);
    return d ? d : (x > y) - (x < y);
}

/* tokens/s as the ranked CSV prints it (%.1f): a merge of shard CSVs sees only that, so
 * a single run compares the same numbers and marks the same ties. */
static double csv_tokens(const struct report_row *r)
{
    return round(r->tokens_per_s * 10.0) / 10.0;
}

/* The fitting rows sorted by recipe, then each recipe's fastest against the others. */
void report_mark_ties(struct report *r)
{
    const double keep = 1.0 - SPEED_ERROR_PCT / 100.0;
    struct report_row **fit = malloc((r->nrows ? r->nrows : 1) * sizeof *fit);
    size_t n = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        r->rows[i].speed_tie = false;
        if (fit && r->rows[i].fits)
            fit[n++] = &r->rows[i];
    }
    if (!fit)
        return;
    qsort(fit, n, sizeof *fit, recipe_ptr_cmp);
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        struct report_row *best = fit[lo];
        for (hi = lo + 1; hi < n && !recipe_cmp(fit[hi], fit[lo]); hi++)
            if (csv_tokens(fit[hi]) > csv_tokens(best))
                best = fit[hi];
        for (size_t k = lo; k < hi; k++)
            if (fit[k] != best && csv_tokens(fit[k]) >= csv_tokens(best) * keep)
                fit[k]->speed_tie = best->speed_tie = true;
    }
    free(fit);
}

void report_free(struct report *r)
{
    if (r) {
        free(r->rows);
        r->rows = NULL;
        r->nrows = 0;
    }
}

static int row_cmp(const void *a, const void *b)
{
    const struct report_row *x = a, *y = b;
    struct sweep_hit hx = {x->score, x->peak_bytes, x->index, x->fits};
    struct sweep_hit hy = {y->score, y->peak_bytes, y->index, y->fits};
    return sweep_hit_cmp(&hx, &hy);
}

void report_rank(struct report *r)
{
    qsort(r->rows, r->nrows, sizeof *r->rows, row_cmp);
    for (size_t i = 0; i < r->nrows; i++)
        r->rows[i].rank = (long)i + 1;
}

enum out_format report_format_for(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot)
        return FORMAT_AUTO;
    if (!strcmp(dot, ".csv"))
        return FORMAT_CSV;
    if (!strcmp(dot, ".json"))
        return FORMAT_JSON;
    if (!strcmp(dot, ".html") || !strcmp(dot, ".htm"))
        return FORMAT_HTML;
    if (!strcmp(dot, ".txt"))
        return FORMAT_TABLE;
    return FORMAT_AUTO;
}

static int write_to(const struct report *r, enum out_format f, FILE *out)
{
    switch (f) {
    case FORMAT_CSV:
        return report_write_csv(r, out);
    case FORMAT_JSON:
        return report_write_json(r, out);
    case FORMAT_HTML:
        return report_write_html(r, out);
    default:
        return report_write_table(r, out);
    }
}

int report_write(const struct report *r, enum out_format f, const char *path)
{
    if (!path || !strcmp(path, "-")) {
        if (write_to(r, f, stdout) != 0 || fflush(stdout) != 0) {
            fprintf(stderr, "llmem-sweep: writing to stdout failed\n");
            return EXIT_IO;
        }
        return EXIT_OK;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        fprintf(stderr, "llmem-sweep: %s: path too long\n", path);
        return EXIT_IO;
    }
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        fprintf(stderr, "llmem-sweep: %s: cannot create: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return EXIT_IO;
    }
    int rc = write_to(r, f, out);
    /* mkstemp makes the file 0600; reports are ordinary files */
    if (fchmod(fileno(out), 0644) != 0)
        rc = -1;
    if (fclose(out) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        fprintf(stderr, "llmem-sweep: %s: write failed: %s\n", path, strerror(errno));
        unlink(tmp);
        return EXIT_IO;
    }
    return EXIT_OK;
}
