/* sweep.h: evaluate the space in parallel, prune what cannot fit, keep the best points.
 *
 * Per outer configuration the batch-independent parts of the memory and speed models are
 * prepared once; then sequence lengths and micro-batches are walked in ascending order.
 * Both are monotone in memory, so (unless pruning is off) the walk stops at the first
 * micro-batch over budget, a sequence whose smallest micro-batch fails ends the
 * configuration, and a configuration whose smallest point fails ends its rank group
 * (the same configuration at larger LoRA ranks). Ranking compares layouts of one recipe
 * (DESIGN.md section 1): each thread keeps a top-k per recipe; the merge sorts under a
 * total order (score desc, peak asc, index asc), so the output is the same for any thread
 * count and, after `merge`, for any shard split. */
#ifndef LLMEM_SWEEP_H
#define LLMEM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "band.h"
#include "gpu.h"
#include "lengthcost.h"
#include "memmodel.h"
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

/* The best layout that fits (under sweep_hit_cmp) and the closest miss of one recipe at one
 * (method, GPU count): the method comparison. */
struct sweep_cell {
    struct sweep_hit fit, miss;
    bool has_fit, has_miss;
};

/* How far a running sweep is: configuration groups done of total, points evaluated per
 * second so far; finished on the last call. */
struct sweep_progress {
    size_t done;
    long total;
    double points_per_s;
    bool finished;
};

/* The caller's progress report (jq's jq_set_msg_cb style: the search never prints). Called
 * from one worker thread at most every 0.2 s while the sweep runs, and once with finished
 * set after it. */
typedef void (*sweep_progress_fn)(void *data, const struct sweep_progress *p);

/* What the search needs from the command line (the CLI fills it; the search never sees
 * the CLI's options). */
struct sweep_params {
    long top;           /* layouts kept per recipe (ranks 1..top); 0 = all */
    bool all;           /* keep non-fitting points too (no pruning) */
    bool no_prune;
    sweep_progress_fn progress; /* NULL: no progress reports */
    void *progress_data;
    bool llmem_rank;    /* rank by LLMem's Algorithm 1 score instead of tokens/s */
    int threads;        /* 0 = all cores */
    int shard_k, shard_n; /* 1-based K of N; 0/0 = no sharding */
    double margin_pct;  /* < 0: the error band's upper end must fit; else peak + this % */
};

struct sweep {
    struct sweep_params par;
    struct model_plan *models;
    int *rule_binding;         /* per model, -1 without rules */
    size_t nmodels;
    const struct gpu_spec *gpu;
    uint64_t budget;
    uint64_t host_budget;      /* a node's host memory for offloaded states; 0 = unchecked */
    struct mem_options mem;
    struct rule_book *rules;   /* NULL without --rules */
    const struct band_table *band; /* error bands (datasets/band.csv); NULL: none */
    struct length_costs *lengths;  /* the loss path on the user's data (--lengths); NULL:
                                      lengths uniform up to the cap (losspath.c) */
    struct space space;
};

/* One recipe's result: its kept layouts, best first (hits[off .. off + n) of the result),
 * how many layouts fit, and its closest miss. */
struct sweep_recipe {
    size_t off, n;
    uint64_t fitting;
    struct sweep_hit closest;
    bool has_closest;
};

struct sweep_result {
    uint64_t space, evaluated, pruned, fitting;
    uint64_t host_over;        /* of the pruned: points whose offload overfills --host-memory */
    struct sweep_hit *hits;    /* per recipe, best first (see sweep_recipe) */
    size_t nhits;
    struct sweep_recipe *recipes; /* space_recipes(&space) of them, by recipe id */
    size_t nrecipes;
    struct sweep_hit closest;  /* the non-fitting point with the smallest peak */
    bool has_closest;
    /* per (recipe, GPU count): the best layout that fits (under sweep_hit_cmp); fits is
     * false where none does. Index recipe * space.ngpus + GPU index. */
    struct sweep_hit *by_gpu;
    size_t nby_gpu;
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
    uint64_t host_node;        /* host memory its offload fills on one node (0: none) */
    bool host_over;            /* host_node exceeds --host-memory: it does not fit */
    bool fits;
};

/* Runs the sweep over s->space (a shard when par.shard_n > 0). Returns 0, or -1 when
 * memory runs out. */
/* The threads a sweep evaluates with: --threads, or OpenMP's default (1 without OpenMP).
 * answer_build evaluates its kept points on as many. */
int sweep_threads(const struct sweep *s);

int sweep_run(const struct sweep *s, struct sweep_result *r);
void sweep_result_free(struct sweep_result *r);

/* Evaluates one point in full. */
void sweep_eval_point(const struct sweep *s, uint64_t index, struct sweep_point *pt);

/* Evaluates a configuration outside the space (explain's suggestions): the peak that must
 * fit and whether it does. The model's plan and the configuration's band are used as in
 * the sweep. */
void sweep_eval_config(const struct sweep *s, uint32_t model, const struct train_config *c,
                       struct sweep_point *pt);
/* The same for a measured variable-length run whose step widths w[0..n) are known (c's
 * seq_len its longest; explain --measured, as validate reads the row): the loss path's
 * reserve is that run's allocator replay (memmodel_replay_run). n 0: sweep_eval_config. */
void sweep_eval_run(const struct sweep *s, uint32_t model, const struct train_config *c,
                    const uint32_t *w, size_t n, struct sweep_point *pt);

/* With --lengths (s->lengths), the loss path's reserved and needed bytes of configuration c's
 * variable-length batches at its sequence length, replayed on the user's data
 * (lengthcost.h), into mp's micro-batch buckets of `buckets` (bit b: bucket b).
 * @return 0 when they were set; -1 without --lengths, for packed data, or for a path with
 *         nothing to replay: mp keeps the compiled-in table's values. */
int sweep_use_lengths(const struct sweep *s, const struct model_plan *p, const struct train_config *c,
                      unsigned buckets, struct mem_prepared *mp);

/* Every point of recipe `recipe` evaluated (no pruning), folded per (method, GPU count):
 * cells[method * space.ngpus + GPU index]; cells must hold METHOD_COUNT x ngpus. For one
 * recipe at a time (the reports' method comparison), not for the whole space. */
void sweep_recipe_cells(const struct sweep *s, size_t recipe, struct sweep_cell *cells);

/* The closer of two misses: the smaller peak, then the lower index. */
bool sweep_hit_closer(const struct sweep_hit *a, const struct sweep_hit *b);

/* Orders hits best first under the total order; usable with qsort. */
int sweep_hit_cmp(const void *a, const void *b);

#endif
