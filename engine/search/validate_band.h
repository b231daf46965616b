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

/* Coverage (share of "ok" rows whose measurement lies inside their band) and median band
 * width (hi - lo, % of the prediction), per source and overall, on stdout. */
void validate_band_print(const struct validate_row *rows, size_t n);

/* Writes the band table of all "ok" rows to path, whole or not at all (outfile.h). Returns
 * 0, or -1 with e filled (EXIT_IO); prints nothing. */
int validate_band_write(const struct validate_row *rows, size_t n, const char *path,
                        struct input_error *e);

#endif
