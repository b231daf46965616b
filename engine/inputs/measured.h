/* measured.h: one row of a measured CSV (DESIGN.md section 5) as a configuration of the
 * memory model. Shared by `validate` and `fit`, so both read the same columns, features
 * and model references the same way. */
#ifndef LLMEM_MEASURED_H
#define LLMEM_MEASURED_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog.h"
#include "csv_table.h"
#include "train.h"

/* The contract columns; extension columns (id, stack, features, ...) are optional. */
extern const char *const measured_columns[];

/* The cell of a named column, "" when the file has no such column. */
const char *measured_cell(const struct csv_table *t, size_t r, const char *col);

/* Fills c from row r (everything but the model). Returns 0; 1 when the model cannot
 * represent the row, with the reason in why (unknown method, offload, DoRA, unknown
 * sequence length, a status other than ok); -1 with e on a malformed cell. LoRA targets go
 * through parse_targets (the rules fitter also accepts "embed"). */
int measured_row_config(const struct csv_table *t, size_t r,
                        int (*parse_targets)(const char *, uint32_t *), struct train_config *c,
                        char *why, size_t n, struct input_error *e);

/* The extension column `widths` (datasets/measured/README.md): the padded width of each
 * step of a variable-length run, in order, '/'-separated whole tokens (1 .. the row's
 * seq_len). @return the number of steps written to w (at most max; 0 when the column is
 * absent or the cell empty), or -1 with e on a malformed cell (not a width, a width above
 * seq_len, more than max steps). */
int measured_row_widths(const struct csv_table *t, size_t r, int32_t seq_len, uint32_t *w,
                        size_t max, struct input_error *e);

/* The row's own variable-length run for c (from measured_row_config): its widths into
 * w[0..max) and its longest step as c->seq_len (every tensor of that step is as long,
 * whatever cap the row names). @return the steps (0 when the row gives none), or -1 with e
 * on a malformed cell or widths on a packed row. */
int measured_row_run(const struct csv_table *t, size_t r, struct train_config *c, uint32_t *w,
                     size_t max, struct input_error *e);

/* Whether the row measures a local peak of the step before any gradient exists: the
 * extension column peak_type (salisbury-table1.csv) names Salisbury's B (forward through
 * the highest block), C or D (the spikes after the forward pass). */
bool measured_row_before_grads(const struct csv_table *t, size_t r);

/* Where a row's model `name` lies as a config.json path: relative to the CSV's folder. */
void measured_model_path(const char *csv_path, const char *name, char *out, size_t n);

/* The row's model: a catalog id, or a config.json path relative to the CSV. Returns 0; 1
 * when neither exists; -1 with e filled when the config.json is there but broken. */
int measured_row_model(const char *csv_path, const char *name, const struct catalog *cat,
                       struct model_spec *m, struct input_error *e);

#endif
