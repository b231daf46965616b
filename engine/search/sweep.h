/* sweep.h: evaluate the space in parallel, prune what cannot fit, keep the best points.
 *
 * Per outer configuration the batch-independent parts of the memory and speed models are
 * prepared once; then sequence lengths and micro-batches are walked in ascending order.
 * Both are monotone in memory, so (unless pruning is off) the walk stops at the first
 * micro-batch over budget, a sequence whose smallest micro-batch fails ends the
 * configuration, and a configuration whose smallest point fails ends its rank group
 * (the same configuration at larger LoRA ranks). Each thread keeps its own top-k; the merge sorts under a total order
 * (score desc, peak asc, index asc), so the output is the same for any thread count and,
 * after `merge`, for any shard split. */
#ifndef LLMEM_SWEEP_H
#define LLMEM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "band.h"
#include "gpu.h"
#include "memmodel.h"
#include "options.h"
#include "plan.h"
#include "rules.h"
#include "space.h"
#include "speed.h"

struct sweep_hit {
    double score;     /* tokens/s, or LLMem's Algorithm 1 score */
    uint64_t peak;    /* predicted device bytes */
    uint64_t index;   /* point index in the space */
    bool fits;        /* with --all, non-fitting points follow the fitting ones */
};

/* Best fit and closest miss per (model, method, GPU count): the method comparison. */
struct sweep_cell {
    uint64_t fit_index, miss_index;
    uint64_t fit_peak, miss_peak;
    int32_t fit_batch;
    double fit_score;
    bool has_fit, has_miss;
};

struct sweep {
    const struct options *opt;
    struct model_plan *models;
    int *rule_binding;         /* per model, -1 without rules */
    size_t nmodels;
    const struct gpu_spec *gpu;
    uint64_t budget;
    struct mem_options mem;
    struct rule_book *rules;   /* NULL without --rules */
    const struct band_table *band; /* error bands (datasets/band.csv); NULL: none */
    struct space space;
};

struct sweep_result {
    uint64_t space, evaluated, pruned, fitting;
    struct sweep_hit *hits;    /* best first */
    size_t nhits;
    struct sweep_hit closest;  /* the non-fitting point with the smallest peak */
    bool has_closest;
    struct sweep_cell *cells;  /* nmodels x METHOD_COUNT x ngpus */
    size_t ncells;
};

/* Everything about one point, for reports and explain. */
struct sweep_point {
    uint64_t index;
    uint32_t model;
    struct train_config cfg;
    struct mem_estimate mem;
    struct speed_estimate speed;
    uint64_t peak;             /* the prediction used: rules when they bind, else mem.device */
    struct band band;          /* the configuration's error band (band.h) */
    uint64_t peak_lo, peak_hi; /* peak x band.lo, peak x band.hi */
    uint64_t fit_peak;         /* what must fit the budget under --margin */
    int rule;                  /* rule candidate, -1 none */
    double score;
    bool fits;
};

/* Runs the sweep over s->space (a shard when opt->shard_n > 0). Returns 0, or -1 when
 * memory runs out. */
int sweep_run(const struct sweep *s, struct sweep_result *r);
void sweep_result_free(struct sweep_result *r);

/* Evaluates one point in full. */
void sweep_eval_point(const struct sweep *s, uint64_t index, struct sweep_point *pt);

/* Index of the cell for (model, method, gpu count), or -1 when that count is not an axis. */
long sweep_cell_index(const struct sweep *s, uint32_t model, enum method m, int32_t gpus);

/* Orders hits best first under the total order; usable with qsort. */
int sweep_hit_cmp(const void *a, const void *b);

#endif
