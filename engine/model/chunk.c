/* chunk.c: Gemini's chunk-size search (see chunk.h). */
#include "chunk.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Parameter sizes as Gemini sees them: one entry per nn.Parameter, so a fused QKV
 * weight is one size and its bias another. Returns the count written to sizes. */
static size_t param_sizes(const struct tensor_list *l, int64_t *sizes)
{
    size_t n = 0, fused_w = SIZE_MAX, fused_b = SIZE_MAX;
    int32_t fuse = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct tensor *t = &l->t[i];
        size_t *slot = t->bias ? &fused_b : &fused_w;
        if (t->fuse && t->fuse == fuse && *slot != SIZE_MAX) {
            sizes[*slot] += tensor_numel(t); /* a later part of the same fused Parameter */
            continue;
        }
        if (t->fuse != fuse) {
            fuse = t->fuse;
            fused_w = fused_b = SIZE_MAX;
        }
        if (fuse)
            *slot = n;
        sizes[n++] = tensor_numel(t);
    }
    return n;
}

/* Waste of greedy in-order packing into chunks of cs elements; tensors above cs are
 * skipped here because Gemini gives them chunks of their own. */
static int64_t packing_waste(const int64_t *sizes, size_t n, int64_t cs)
{
    int64_t waste = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        if (sizes[i] > cs)
            continue;
        if (sizes[i] > left) {
            waste += left;
            left = cs;
        }
        left -= sizes[i];
    }
    return waste + left;
}

int64_t chunk_search(const struct tensor_list *l)
{
    int64_t *sizes = malloc((l->n ? l->n : 1) * sizeof *sizes);
    if (!sizes)
        return CHUNK_MIN_ELEMS;
    size_t n = param_sizes(l, sizes);

    /* Gemini decides "one gathered chunk" on the whole group, before dropping outliers */
    int64_t group = 0;
    for (size_t i = 0; i < n; i++)
        group += sizes[i];
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += (double)sizes[i];
    mean /= (double)(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        var += ((double)sizes[i] - mean) * ((double)sizes[i] - mean);
    double limit = mean + 3.0 * sqrt(var / (double)(n ? n : 1));

    /* drop outliers (> mean + 3 sigma): embeddings, mostly */
    size_t kept = 0;
    int64_t largest = 0;
    for (size_t i = 0; i < n; i++) {
        if ((double)sizes[i] > limit)
            continue;
        sizes[kept++] = sizes[i];
        if (sizes[i] > largest)
            largest = sizes[i];
    }
    int64_t best = CHUNK_MIN_ELEMS;
    if (group >= CHUNK_MIN_ELEMS) { /* smaller groups become one gathered chunk */
        int64_t start = largest > CHUNK_MIN_ELEMS ? largest : CHUNK_MIN_ELEMS;
        start = (start + CHUNK_INTERVAL - 1) / CHUNK_INTERVAL * CHUNK_INTERVAL;
        int64_t best_waste = INT64_MAX;
        for (int64_t cs = start; cs <= start + CHUNK_SEARCH_RANGE; cs += CHUNK_INTERVAL) {
            int64_t w = packing_waste(sizes, kept, cs);
            if (w < best_waste) {
                best_waste = w;
                best = cs;
            }
        }
    } else {
        best = group > 0 ? group : CHUNK_MIN_ELEMS;
    }
    free(sizes);
    return best;
}

int64_t chunk_for_dp(int64_t searched, int dp)
{
    if (dp < 1)
        dp = 1;
    if (searched < 1) /* not searched: no chunk rounding rather than a division by zero */
        return 1;
    return (searched + dp - 1) / dp * dp;
}
