/* report.h: the ranked result of a sweep (or of merged shards) as flat rows, and the
 * writers for each format. A row carries exactly what the ranked CSV holds (DESIGN.md
 * section 5), so a report read back from shard CSVs prints the same bytes. */
#ifndef LLMEM_REPORT_H
#define LLMEM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "model.h"
#include "options.h"
#include "sweep.h"
#include "train.h"

#define REPORT_TEXT_MAX 64

struct report_row {
    long rank;
    char model[MODEL_NAME_MAX];
    struct train_config cfg;
    int64_t global_batch;
    double peak_gib, budget_gib, headroom_gib;
    char peak_phase[REPORT_TEXT_MAX];
    double term_gib[TERM_COUNT]; /* base, params, grads, optimizer, activations, logits, comm */
    char rule[REPORT_TEXT_MAX];
    double step_time_s, samples_per_s, tokens_per_s;
    bool fits;
    /* appended columns (DESIGN.md allows new ones at the end) */
    uint64_t index;              /* position in the space: the last tie-break */
    double score;                /* ranking score, printed exactly (%.17g) */
    uint64_t peak_bytes;         /* the exact peak behind peak_gib */
    double allocated_gib, reserved_gib;
    double peak_hi_gib;          /* upper end of the error band (README "Error band") */
    /* the fastest fitting layout of the row's recipe and this one differ by less than the
     * speed model's own error (SPEED_ERROR_PCT): no winner between them */
    bool speed_tie;
    /* methods beyond LLMem: pipeline stages and micro-batches a step (cfg.pp,
     * cfg.microbatches), what offload keeps in host memory (cfg.offload) and how much */
    double host_gib;
};

struct report_meta {
    const char *version;
    char gpu[GPU_NAME_MAX];
    char gpu_note[200];
    double budget_gib;
    char stack[16];
    char rank_mode[16];
    bool paper;
    const char *rules;           /* path or NULL */
    const struct options *opt;   /* axes, when the report comes from a sweep */
    bool has_counts;
    uint64_t space, evaluated, pruned, fitting;
    bool stamp;
};

struct report {
    struct report_meta meta;
    struct report_row *rows;
    size_t nrows;
    /* live sweep data for the richer HTML sections; NULL for merged shards */
    const struct sweep *sweep;
    const struct sweep_result *result;
};

/* Rows of a finished sweep: each hit evaluated in full, ranked 1..n. Returns 0 or -1. */
int report_from_sweep(struct report *r, const struct sweep *s, const struct sweep_result *res,
                      const char *gpu_note);
void report_free(struct report *r);
/* Sets speed_tie on every row: the fitting rows of one recipe (model, fine-tuning, rank,
 * targets, base format, precision, optimizer, sequence length) whose tokens/s is within
 * SPEED_ERROR_PCT of the recipe's fastest, and that fastest row when another one is.
 * report_from_sweep calls it; after report_rank (merge), call it on the rows kept. */
void report_mark_ties(struct report *r);
/* One point as a row (explain and tests use it too). */
void report_row_from_point(struct report_row *row, const struct sweep *s,
                           const struct sweep_point *pt);

/* The format a path asks for: .csv, .json, .html/.htm; FORMAT_AUTO when unknown. */
enum out_format report_format_for(const char *path);

/* Writes r to path (NULL or "-" = stdout) in format f. Files are written to a temporary
 * file in the same folder and renamed into place, so a crash leaves no half report.
 * Returns 0 or EXIT_IO after printing the reason. */
int report_write(const struct report *r, enum out_format f, const char *path);

/* The writers, each to an open stream; they return 0 or -1 on a write error. */
int report_write_csv(const struct report *r, FILE *f);
int report_write_json(const struct report *r, FILE *f);
int report_write_table(const struct report *r, FILE *f);
int report_write_html(const struct report *r, FILE *f);

/* The ranked-CSV columns, in order (NULL-terminated). */
extern const char *const report_csv_columns[];

/* Reads a ranked CSV written by report_write_csv (a shard) and appends its rows to r.
 * Returns 0, or -1 with e filled. */
int report_read_csv(struct report *r, const char *path, struct input_error *e);

/* Sorts rows by the sweep's total order (fits, score desc, peak asc, index asc) and
 * renumbers them. */
void report_rank(struct report *r);

#endif
