/* validate_band.h: validate's error bands (README "Error band"): each measured row's band
 * from the other sources' residuals (leave-one-source-out), its coverage and width per
 * source, and the band table the sweep reads (datasets/band.csv), built from every row. */
#ifndef LLMEM_VALIDATE_BAND_H
#define LLMEM_VALIDATE_BAND_H

#include <stddef.h>

#include "validate.h"

/* Fills rows[i].band for every predicted row ("ok" or inconsistent) from the residuals of
 * the "ok" rows of other sources. Returns 0, or -1 without memory. */
int validate_band_rows(struct validate_row *rows, size_t n);

/* The band of "ok" rows of one source (NULL: all): rows with a band, without one, and
 * those whose measurement lies inside their band; coverage (% inside) and the median
 * band width (hi - lo, % of the prediction), both 0 when no row has a band. */
struct band_coverage {
    size_t banded, none, inside;
    double coverage_pct, median_width_pct;
};

/* Fills c for the rows of source (NULL: all). Returns 0, or -1 without memory. */
int validate_band_coverage(const struct validate_row *rows, size_t n, const char *source,
                           struct band_coverage *c);

/* Builds the band table of all "ok" rows (what the sweep reads from datasets/band.csv) into
 * t (band_table_free frees it). Returns 0, or -1 without memory. */
int validate_band_table(const struct validate_row *rows, size_t n, struct band_table *t);

#endif
