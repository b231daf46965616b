/* band.h: the known error of a prediction (DESIGN.md section 6.3): a band [lo, hi] around
 * every predicted peak, as factors of the prediction, from validate's residuals on measured
 * data (README "Error band").
 *
 * A residual is the ratio measured / predicted of one measured row. Rows are grouped by
 * what the configuration fixes before any micro-batch or sequence is chosen (stack,
 * fine-tuning mode, data shape), from the finest group to all rows; a group is used when
 * it holds at least BAND_MIN_ROWS residuals from at least BAND_MIN_SOURCES sources. Its
 * band is a split-conformal 90 % prediction interval (alpha = 0.10, 0.05 in each tail) for
 * one more residual, with the residuals weighted so that every source weighs the same: a
 * new configuration's error is drawn from a stack or harness the group has not seen, so
 * the sources, not the rows, are the units ("CDF pooling", Dunn, Wasserman & Ramdas, JASA
 * 2023, doi:10.1080/01621459.2022.2060112, arXiv:1809.07441). lo and hi are the weighted 5 %
 * and 95 % quantiles with the new residual's mass 1/(m+1) at -inf and +inf; with sources of
 * equal size, the order statistics of rank ceil(0.95 (m+1)) from each end. Widened to
 * contain 1 (the point prediction). CDF pooling's coverage is asymptotic; a finite-sample
 * guarantee between sources (one residual per source) would need 19 sources in a group
 * for a finite 90 % band, and the repo has 12 in all: the leave-one-source-out coverage
 * that validate prints is the evidence.
 * Because a group's factors do not depend on micro-batch or sequence, the band's upper end
 * is monotone in the peak wherever the peak is, and the sweep's pruning stays exact. */
#ifndef LLMEM_BAND_H
#define LLMEM_BAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "units.h"
#include "train.h"

#define BAND_COVER 0.95    /* 1 - alpha/2: each end of the band, alpha = 0.10 */
#define BAND_MIN_ROWS 19   /* the smallest m whose residuals' mass m/(m+1) reaches BAND_COVER */
#define BAND_MIN_SOURCES 3 /* the spread to cover is between sources: one or two is no sample */
#define BAND_ANY (-1)      /* a key field that the group leaves open */

/* Levels, finest first: stack+finetune+data, stack+finetune, stack, all. */
enum band_level { BAND_STACK_FT_DATA, BAND_STACK_FT, BAND_STACK, BAND_ALL, BAND_LEVELS };

struct band_key {
    int stack, finetune, data; /* enum stack, enum finetune, enum data_shape, or BAND_ANY */
};

/* One residual of validate: a measured row's ratio and where it came from. */
struct band_sample {
    struct band_key key;
    const char *source; /* the row's source (validate's id prefix) */
    double ratio;       /* measured / predicted, > 0 */
};

struct band {
    double lo, hi;      /* factors of the prediction, lo <= 1 <= hi */
    int level;          /* enum band_level of the group used; -1: no band */
    int rows, sources;  /* the group's size */
};

/* The key of a configuration. */
struct band_key band_key_of(const struct train_config *c);

/* The band of key from samples[0..n), leaving out every sample whose source is exclude
 * (NULL: none). b->level is -1 when no group holds enough samples. */
void band_from_samples(const struct band_sample *s, size_t n, struct band_key key,
                       const char *exclude, struct band *b);

/* A calibration's band (a rule set's band.lo, band.hi) from its n held-out ratios
 * measured / predicted (ratios <= 0 are left out). With at least BAND_MIN_ROWS of them, the
 * split-conformal band of the table's groups, each held-out unit (unit[i], the model a
 * residual was held out with; NULL: all one unit) weighing the same. With fewer, too few
 * for order statistics: a 90 % prediction interval for one more log ratio under a normal
 * model, mean +- t(0.95, n-1) sd sqrt(1 + 1/n) (Student; the t quantile widens it for
 * small n). Widened to contain 1. Level BAND_CALIBRATION; -1 (factors 1) when fewer than
 * 3 ratios are positive. */
#define BAND_CALIBRATION 9
void band_from_heldout(const double *ratio, const size_t *unit, size_t n, struct band *b);

/* The band table: every group, at every level, that the samples support. */
struct band_table {
    struct band_key *keys;
    struct band *bands;
    size_t n;
};

/* Builds the table from all samples (no source left out). Returns 0, or -1 without memory. */
int band_table_build(const struct band_sample *s, size_t n, struct band_table *t);
void band_table_free(struct band_table *t);
/* Writes the table as CSV (`stack,finetune,data,rows,sources,lo,hi`; `*` leaves a field open,
 * and the first `*` gives the level); 0 or -1. */
int band_table_write(const struct band_table *t, FILE *f);
/* Reads a band CSV written by band_table_write. Returns 0, or -1 with e. */
int band_table_read(const char *path, struct band_table *t, struct input_error *e);

/* Per configuration (never per point): the band of the finest group that matches c; a
 * band with level -1 and factors 1 when the table has none (or t is NULL). */
struct band band_lookup(const struct band_table *t, const struct train_config *c);

/* The group of band b for configuration c as "stack/finetune/data" with '*' for what the
 * group leaves open (stack hf alone: "hf", then two stars), or "none". */
void band_group_name(const struct band *b, const struct train_config *c, char *buf, size_t n);

/* peak x factor, rounded up to whole bytes (saturating). */
static inline uint64_t band_scale(uint64_t peak, double factor)
{
    /* inline and without ceil(): the sweep calls it for every point */
    double v = (double)peak * factor;
    if (!(v < (double)BYTES_SAT)) /* saturating (units.h) */
        return BYTES_SAT;
    uint64_t u = (uint64_t)v;
    return (double)u < v ? u + 1 : u; /* ceil for v >= 0 */
}

#endif
