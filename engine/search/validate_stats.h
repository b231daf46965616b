/* validate_stats.h: validate's summaries over its predicted rows (README "Validation"): the
 * memory model's error per source, the speed model's error and ordering agreement. Data
 * only; reports/validate_out.c prints them. */
#ifndef LLMEM_VALIDATE_STATS_H
#define LLMEM_VALIDATE_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "validate.h"

/* The memory model over some rows: "ok" rows counted in n, the others as skipped or
 * inconsistent; |error| median, mean and max, signed mean error (bias), all in %. */
struct validate_stats {
    int n, skipped, inconsistent;
    double median, mean, max, bias;
};

/* The speed model over the rows with a predicted throughput: |error| median and max, the
 * signed mean (bias), in %; pairs of one group whose measurements differ and those the
 * model orders as measured. */
struct validate_speed {
    size_t n;
    double median, max, bias;
    int pairs, agree;
};

bool validate_row_inconsistent(const struct validate_row *r);

/* Grade A and B rows (A-, B+, ...): the well-documented measurements. */
bool validate_row_grade_ab(const struct validate_row *r);

/* The row's throughput error in % (predicted_tps > 0). */
double validate_speed_error(const struct validate_row *r);

/* Statistics over the rows of one source (NULL: all) and one metric (NULL: all) that pass
 * filter (NULL: all). */
struct validate_stats validate_summarize(const struct validate_row *rows, size_t n,
                                         const char *source, const char *metric,
                                         bool (*filter)(const struct validate_row *));

/* The speed model over the rows of one source (NULL: all); n is 0 when none has a
 * predicted throughput. */
struct validate_speed validate_speed_stats(const struct validate_row *rows, size_t n,
                                           const char *source);

#endif
