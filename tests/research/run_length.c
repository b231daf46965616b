/* run_length.c: how much a variable-length run reserves for the loss path after n steps
 * (README "Ground truth of our own"; not built or run by ctest).
 *
 * The model's variable-length cost is the median over LP_RUN_ORDERS data orders of a run of
 * LP_RUN_STEPS steps (engine/model/losspath.c); the measurement harness runs 30 (6 in its
 * smoke grid). This prints, for the stock HF path under autocast and micro-batches 1, 2 and
 * 4, the 10th, 50th and 90th percentile over the orders of the reserved bytes per token and
 * vocabulary entry of the longest step, for runs of 6, 30 and LP_RUN_STEPS steps.
 *
 * Build and run from the repo root after `cmake --build --preset ci`:
 *   cc -O2 -I engine/model -I engine/base tests/research/run_length.c build/libllmem_model.a \
 *      build/libllmem_base.a -lm -fopenmp -o /tmp/run_length && /tmp/run_length */
#include <stdio.h>

#include "losspath.h"

int main(void)
{
    static const unsigned batches[] = {1, 2, 4};
    static const size_t steps[] = {6, 30, LP_RUN_STEPS};
    double r[LP_RUN_ORDERS], n[LP_RUN_ORDERS];
    printf("micro-batch  steps   p10  median   p90  (reserved bytes per token and vocab entry)\n");
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            if (losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, batches[b], steps[s], r, n) != 0) {
                fprintf(stderr, "run_length: replay failed\n");
                return 1;
            }
            const size_t o = LP_RUN_ORDERS;
            printf("%11u %6zu %5.1f %7.1f %5.1f\n", batches[b], steps[s], r[o / 10],
                   (r[o / 2 - 1] + r[o / 2]) / 2.0, r[o * 9 / 10]);
        }
    return 0;
}
