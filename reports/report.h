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
#include "answer.h"
#include "sweep.h"
#include "train.h"

/* The rows, per-recipe summaries and per-model sections live in answer.h (the search
 * layer's answer as data); the writers here only read them. */

/* Rows, summaries and sections of a finished sweep (answer_build) with the report's
 * metadata: the GPU, budget, stack, margin, objective and token count. Returns 0 or -1. */
int report_from_sweep(struct report *r, const struct sweep *s, const struct sweep_result *res,
                      const struct report_inputs *o, const char *gpu_note);
void report_free(struct report *r);

enum out_format { FORMAT_AUTO, FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON, FORMAT_HTML, FORMAT_TEXT };

/* The format a path asks for: .csv, .json, .html/.htm; FORMAT_AUTO when unknown. */
enum out_format report_format_for(const char *path);

/* Writes r to path (NULL or "-" = stdout) in format f, whole or not at all (outfile.h).
 * Returns 0, or -1 with e filled (EXIT_IO). */
int report_write(const struct report *r, enum out_format f, const char *path, struct input_error *e);

/* The writers, each to an open stream; they return 0 or -1 on a write error. */
/* The method as a layout names it: "adp", "pp4" (pipeline stages), "cdp ep8" (expert
 * parallelism); the CSV and JSON keep method, pp and ep in their own fields. */
void report_method_text(const struct train_config *c, char *buf, size_t n);

/* One suggestion as JSON: {"change", "peak_gib", "fit_peak_gib", "config"} (the sweep's
 * `suggestions` and explain's). */
struct json_t;
struct json_t *report_change_json(const struct answer_change *ch);

int report_write_csv(const struct report *r, FILE *f);
int report_write_json(const struct report *r, FILE *f);
int report_write_table(const struct report *r, FILE *f);
int report_write_html(const struct report *r, FILE *f);

/* The ranked-CSV columns, in order (NULL-terminated). */
extern const char *const report_csv_columns[];

/* Reads a ranked CSV written by report_write_csv (a shard) and appends its rows to r.
 * Returns 0, or -1 with e filled. */
int report_read_csv(struct report *r, const char *path, struct input_error *e);


#endif
