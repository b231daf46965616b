/* cmd_diff.c: `llmem-sweep diff OLD.csv NEW.csv [--threshold PCT]`: what changed between two
 * ranked CSVs, for nightly jobs. Per recipe (matched by recipe_id): added or removed, fits
 * gained or lost, the fewest GPUs changed (recipe_min_gpus); per configuration (matched
 * by config_id, stable across runs, catalogs and versions): fits gained or lost, peak or
 * tokens/s moved by more than the threshold, entered or left the ranked rows.
 * Exit 0 when nothing changed, 1 when something did, 2 usage, 3 a bad CSV, 4 I/O. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "commands.h"
#include "options.h"
#include "report.h"

#define DIFF_THRESHOLD_DEFAULT 1.0 /* percent */

struct side {
    const struct report_row *rows; /* of one recipe, ranked */
    size_t n;
};

struct diff {
    double threshold;
    long changes;
    int write_failed;
};

static void say(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct diff *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vprintf(fmt, ap) < 0)
        d->write_failed = 1;
    va_end(ap);
    d->changes++;
}

/* "Qwen/Qwen2.5-0.5B lora r16 all, bf16, adamw, seq 2048" */
static void recipe_label(const struct report_row *w, char *buf, size_t n)
{
    const struct train_config *c = &w->cfg;
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    if (c->finetune == FT_FULL)
        snprintf(buf, n, "%s full, %s, %s, seq %d", w->model, precision_name(c->precision),
                 optimizer_name(c->optimizer), c->seq_len);
    else
        snprintf(buf, n, "%s %s r%d %s%s%s, %s, %s, seq %d", w->model, finetune_name(c->finetune),
                 c->lora_r, targets, c->quant != QUANT_NONE && c->finetune != FT_QLORA ? " base " : "",
                 c->quant != QUANT_NONE && c->finetune != FT_QLORA ? quant_name(c->quant) : "",
                 precision_name(c->precision), optimizer_name(c->optimizer), c->seq_len);
}

static void layout_label(const struct report_row *w, char *buf, size_t n)
{
    const struct train_config *c = &w->cfg;
    snprintf(buf, n, "%s on %d GPU(s) (tp %d x dp %d), micro-batch %d, checkpointing %s",
             method_name(c->method), c->gpus, c->tp, c->dp, c->micro_batch, ckpt_mode_name(c));
}

/* The fewest GPUs the recipe fits on (answer_rank made it the same on all its rows). */
static int fewest_gpus(const struct side *s)
{
    return s->n ? s->rows[0].recipe_min_gpus : 0;
}

static int by_config_id(const void *a, const void *b)
{
    const struct report_row *x = *(const struct report_row *const *)a;
    const struct report_row *y = *(const struct report_row *const *)b;
    return strcmp(x->config_id, y->config_id);
}

/* The rows of one side, sorted by config_id (pointers into the side). */
static const struct report_row **sorted_ids(const struct side *s)
{
    const struct report_row **v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        v[i] = &s->rows[i];
    qsort(v, s->n, sizeof *v, by_config_id);
    return v;
}

static bool moved(double a, double b, double pct)
{
    double base = fabs(a) > 0 ? fabs(a) : 1e-12;
    return fabs(b - a) / base * 100.0 > pct;
}

static void diff_config(struct diff *d, const char *recipe, const struct report_row *a,
                        const struct report_row *b)
{
    char layout[160];
    layout_label(a ? a : b, layout, sizeof layout);
    if (!a) {
        say(d, "config %s entered the ranked rows: %s, %s (%s, %.3f GiB, %.1f tokens/s)\n",
            b->config_id, recipe, layout, b->fits ? "fits" : "does not fit", b->peak_gib,
            b->tokens_per_s);
        return;
    }
    if (!b) {
        say(d, "config %s left the ranked rows: %s, %s\n", a->config_id, recipe, layout);
        return;
    }
    if (a->fits != b->fits)
        say(d, "config %s %s: %s, %s (peak %.3f -> %.3f GiB)\n", a->config_id,
            b->fits ? "fits now" : "no longer fits", recipe, layout, a->peak_gib, b->peak_gib);
    if (moved(a->peak_gib, b->peak_gib, d->threshold))
        say(d, "config %s peak %.3f -> %.3f GiB (%+.1f %%): %s, %s\n", a->config_id, a->peak_gib,
            b->peak_gib, (b->peak_gib - a->peak_gib) / a->peak_gib * 100.0, recipe, layout);
    if (moved(a->tokens_per_s, b->tokens_per_s, d->threshold))
        say(d, "config %s tokens/s %.1f -> %.1f (%+.1f %%): %s, %s\n", a->config_id,
            a->tokens_per_s, b->tokens_per_s,
            a->tokens_per_s > 0 ? (b->tokens_per_s - a->tokens_per_s) / a->tokens_per_s * 100.0 : 0,
            recipe, layout);
}

static int diff_recipe(struct diff *d, const struct side *a, const struct side *b)
{
    char recipe[MODEL_NAME_MAX + 160];
    const struct report_row *any = a->n ? &a->rows[0] : &b->rows[0];
    recipe_label(any, recipe, sizeof recipe);
    if (!a->n || !b->n) {
        say(d, "recipe %s %s: %s\n", any->recipe_id,
            a->n ? "has no ranked row now (fits nowhere, or left the run)"
                 : "has ranked rows now (fits now, or joined the run)", recipe);
        return 0;
    }
    int ga = fewest_gpus(a), gb = fewest_gpus(b);
    if (!ga != !gb)
        say(d, "recipe %s %s: %s\n", any->recipe_id, gb ? "fits now" : "fits nowhere now", recipe);
    else if (ga != gb)
        say(d, "recipe %s fewest GPUs %d -> %d: %s\n", any->recipe_id, ga, gb, recipe);
    const struct report_row **x = sorted_ids(a), **y = sorted_ids(b);
    if (!x || !y) {
        free(x);
        free(y);
        return -1;
    }
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(x[i]->config_id, y[j]->config_id);
        diff_config(d, recipe, c <= 0 ? x[i] : NULL, c >= 0 ? y[j] : NULL);
        i += c <= 0;
        j += c >= 0;
    }
    free(x);
    free(y);
    return 0;
}

/* The next recipe's rows starting at *at (rows ranked by answer_rank). */
static struct side next_side(const struct report *r, size_t *at)
{
    struct side s = {r->rows + *at, 0};
    while (*at + s.n < r->nrows &&
           !strcmp(r->rows[*at + s.n].recipe_id, r->rows[*at].recipe_id))
        s.n++;
    *at += s.n;
    return s;
}

static int run_diff(struct diff *d, struct report *old, struct report *new)
{
    answer_rank(old, 0);
    answer_rank(new, 0);
    size_t i = 0, j = 0;
    while (i < old->nrows || j < new->nrows) {
        int c = i == old->nrows ? 1 : j == new->nrows ? -1
              : answer_recipe_cmp(&old->rows[i], &new->rows[j]);
        struct side a = c <= 0 ? next_side(old, &i) : (struct side){NULL, 0};
        struct side b = c >= 0 ? next_side(new, &j) : (struct side){NULL, 0};
        if (diff_recipe(d, &a, &b))
            return -1;
    }
    return 0;
}

static int usage(void)
{
    puts("usage: llmem-sweep diff OLD.csv NEW.csv [--threshold PCT]\n"
         "What changed between two ranked CSVs (a nightly job's yesterday and today):\n"
         "recipes with ranked rows gained or lost, fits gained or lost, the fewest GPUs\n"
         "that fit changed; per configuration (config_id): fits gained or lost, peak or tokens/s\n"
         "moved by more than PCT percent (default 1), rows that entered or left the ranking.\n"
         "Exit codes: 0 nothing changed, 1 something changed, 2 usage, 3 bad input file,\n"
         "4 I/O error.");
    return 0;
}

int cmd_diff(int argc, char **argv)
{
    struct diff d = {DIFF_THRESHOLD_DEFAULT, 0, 0};
    const char **files = malloc((size_t)argc * sizeof *files); /* every argument may be one */
    int nfiles = 0;
    int rc = files ? options_parse_cmd(CMD_DIFF, argc, argv, &d.threshold, files, &nfiles) : EXIT_IO;
    if (!rc && nfiles != 2)
        rc = usage_error("diff", "takes two CSV files, OLD and NEW");
    if (rc) {
        free(files);
        return rc < 0 ? usage() : rc;
    }
    struct report r[2];
    memset(r, 0, sizeof r);
    for (int k = 0; k < 2 && !rc; k++) {
        struct input_error e;
        if (report_read_csv(&r[k], files[k], &e) != 0) {
            input_error_print(&e);
            rc = e.code;
        }
    }
    if (!rc && run_diff(&d, &r[0], &r[1]) != 0) {
        fputs("llmem-sweep: out of memory\n", stderr);
        rc = EXIT_IO;
    }
    if (!rc && (d.write_failed || fflush(stdout) != 0)) {
        fputs("llmem-sweep: writing to stdout failed\n", stderr);
        rc = EXIT_IO;
    }
    report_free(&r[0]);
    report_free(&r[1]);
    free(files);
    return rc ? rc : d.changes ? 1 : EXIT_OK; /* 1: something changed */
}
