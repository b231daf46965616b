/* length_shape.c: does the shape of a dataset's length distribution change what a
 * variable-length run reserves for the loss path? (README "SWB: the caching allocator under
 * variable lengths"; not built or run by ctest.)
 *
 * The model draws sample lengths uniformly from 1 .. cap (engine/model/losspath.c). The SWB
 * rows trained on cls-fudan-news-zh, whose Qwen-tokenizer lengths the ms-swift benchmark
 * gives as mean 3234, standard deviation 2547 (min 91). This replays Qwen v1's loss path and
 * HF's (mixed precision, micro-batch 1, default allocator) over LP_RUN_ORDERS orders of 1000
 * drawn samples, each step padded to its sample, for three length models:
 *   uniform   lengths uniform on 1 .. cap (the model's assumption);
 *   drop      lognormal with that mean and deviation, samples above the cap dropped
 *             (ms-swift's truncation_strategy 'delete', which the SWB rows ran);
 *   truncate  the same lognormal, samples above the cap cut to the cap (a tokenizer's
 *             truncation=True, TRL's max_length), so a share of the steps sits at the cap.
 * It prints the 10th, 50th and 90th percentile over the orders of the reserved bytes per
 * token and vocabulary entry of a cap-long step (the unit of losspath.h), and the median of
 * the most the run could not release (`needed`, what `device` counts).
 *
 * Build and run from the repo root after `cmake --build --preset ci`:
 *   cc -O2 -std=c11 -D_DEFAULT_SOURCE -I engine/model -I engine/base \
 *      tests/research/length_shape.c build/libllmem_model.a build/libllmem_base.a -lm \
 *      -o /tmp/length_shape && /tmp/length_shape */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "losspath.h"

#define SAMPLES 1000
#define MEAN 3234.0
#define SD 2547.0

enum shape { UNIFORM, DROP, TRUNCATE };

/* A lognormal draw with mean MEAN and deviation SD (Box-Muller on erand48's stream). */
static double lognormal(unsigned short x[3])
{
    const double s2 = log(1.0 + SD * SD / (MEAN * MEAN)), mu = log(MEAN) - s2 / 2.0;
    const double u = 1.0 - erand48(x), v = erand48(x);
    return exp(mu + sqrt(s2) * sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
}

/* Fills len[] with one order's steps in 1/LP_LEN_UNIT of the cap. @return the step count. */
static size_t draw_run(enum shape sh, double cap, unsigned order, uint32_t *len)
{
    const uint64_t h = (uint64_t)order * UINT64_C(0x9E3779B97F4A7C15); /* spread the seeds */
    unsigned short x[3] = {(unsigned short)(h >> 16), (unsigned short)(h >> 32), (unsigned short)(h >> 48)};
    size_t n = 0;
    for (int i = 0; i < SAMPLES; i++) {
        double l = sh == UNIFORM ? 1.0 + erand48(x) * (cap - 1.0) : lognormal(x);
        if (l > cap && sh == DROP)
            continue;
        l = l > cap ? cap : l;
        const double u = ceil(l / cap * LP_LEN_UNIT);
        len[n++] = u < 1 ? 1 : (uint32_t)u;
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static const char *const names[] = {"uniform", "drop", "truncate"};
    static const enum loss_path paths[] = {LOSS_QWEN1, LOSS_HF};
    static const double caps[] = {512, 1024, 2048, 4096, 8192};
    static uint32_t len[SAMPLES];
    double r[LP_RUN_ORDERS], need[LP_RUN_ORDERS];
    printf("path     lengths     cap  steps   p10  median   p90  needed  (bytes per token and vocab entry)\n");
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
        for (int sh = UNIFORM; sh <= TRUNCATE; sh++)
            for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
                size_t steps = 0;
                for (unsigned o = 0; o < LP_RUN_ORDERS; o++) {
                    const size_t n = draw_run((enum shape)sh, caps[c], o + 1, len);
                    steps += n;
                    if (losspath_replay(paths[p], LP_MIXED, ALLOC_DEFAULT, 1, len, n, &r[o], &need[o])) {
                        fprintf(stderr, "length_shape: replay failed\n");
                        return 1;
                    }
                }
                qsort(r, LP_RUN_ORDERS, sizeof r[0], cmp_double);
                qsort(need, LP_RUN_ORDERS, sizeof need[0], cmp_double);
                const size_t o = LP_RUN_ORDERS;
                printf("%-8s %-8s %6.0f %6zu %5.1f %7.1f %5.1f %7.1f\n", loss_path_name(paths[p]), names[sh],
                       caps[c], steps / o, r[o / 10], (r[o / 2 - 1] + r[o / 2]) / 2.0, r[o * 9 / 10],
                       (need[o / 2 - 1] + need[o / 2]) / 2.0);
            }
    return 0;
}
