/* validate_out.h: validate's writers over its finished rows (engine/search/validate.h) and
 * their summaries (validate_stats.h, validate_band.h): the text report, the validation CSV
 * (DESIGN.md's columns plus the throughput and the band) and the band table. */
#ifndef LLMEM_VALIDATE_OUT_H
#define LLMEM_VALIDATE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "validate.h"

/* The text report on f: per row (unless summary_only), the memory model per source, the
 * speed model, the error band's coverage. Returns 0, or -1 without memory. A write error
 * is left on f for the caller's check (ferror, outfile_stdout_done). */
int validate_out_text(FILE *f, const struct validate_row *rows, size_t n, bool summary_only);

/* The validation CSV at path, whole or not at all (outfile.h). Returns 0, or -1 with e. */
int validate_out_csv(const char *path, const struct validate_row *rows, size_t n,
                     struct input_error *e);

/* The band table of all "ok" rows at path (datasets/band.csv's format), whole or not at
 * all. Returns 0, or -1 with e. */
int validate_out_band(const char *path, const struct validate_row *rows, size_t n,
                      struct input_error *e);

#endif
