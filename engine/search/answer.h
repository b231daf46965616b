/* answer.h: the answer of a sweep as data, for the writers in reports/ (DESIGN.md section 1).
 *
 * A recipe is what is trained (model, fine-tuning mode, rank, targets, base format,
 * precision, optimizer, sequence length); a layout is how it runs (method, GPUs, split,
 * micro-batch, checkpointing). The answer holds
 *   - the ranked rows: layouts of one recipe ranked against each other (rank restarts at 1
 *     per recipe), recipes in a stable key order (model name, then the recipe's knobs);
 *   - per recipe: the fewest GPUs that fit, the fastest layout at each GPU count, the time
 *     and GPU-hours for a token count, and when nothing fits the closest miss and the
 *     nearest changes that make it fit;
 *   - per model: the method comparison and the peak-against-micro-batch series of one
 *     recipe (its featured recipe).
 * Built once from a finished sweep (answer_build) or from the rows of shard CSVs
 * (answer_summarize); the writers only read it and never call the model, the rules or the
 * speed model. */
#ifndef LLMEM_ANSWER_H
#define LLMEM_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "space.h"
#include "sweep.h"
#include "train.h"

#define ANSWER_ID_LEN 17     /* 16 hex digits and the NUL */
#define ANSWER_TEXT_MAX 64
#define ANSWER_SUGGEST_MAX 8 /* changes listed per recipe that fits nowhere */
#define ANSWER_SERIES_MAX 20 /* parallel layouts per chart */
#define ANSWER_BATCH_POINTS 48
#define ANSWER_TOKENS_DEFAULT 1e9 /* --tokens: one billion training tokens */

/* The question as asked (the CLI fills it from its options), for the reports' inputs
 * section and reproduce command. */
struct report_inputs {
    struct space_axes axes;          /* after defaults */
    const char *const *models;       /* as given on the command line; 0 = the catalog */
    int nmodels;
    const char *const *outs;         /* the files this run writes */
    int nouts;
    bool format_html;                /* --format html */
    uint64_t budget, base;           /* --budget (after the GPU's default), --base */
    bool base_set;
    long top;
    bool all, no_prune, paper, llmem_rank, stamp;
    int shard_k, shard_n;
    const char *rules;
    const char *lengths;             /* --lengths FILE, or NULL */
    double margin_pct;               /* < 0: auto */
    int objective;                   /* enum objective */
    double tokens;
    const char *command;             /* the command line, NULL when not known */
};

/* What "best" means in the per-recipe summaries (--objective). */
enum objective { OBJECTIVE_THROUGHPUT, OBJECTIVE_PER_GPU, OBJECTIVE_MIN_GPUS, OBJECTIVE_COUNT };
const char *objective_name(enum objective o);
int objective_parse(const char *s);

struct report_row {
    long rank;                   /* position within the row's recipe, from 1 */
    char model[MODEL_NAME_MAX];
    struct train_config cfg;
    int64_t global_batch;
    double peak_gib, budget_gib, headroom_gib;
    char peak_phase[ANSWER_TEXT_MAX];
    double term_gib[TERM_COUNT]; /* base, params, grads, optimizer, activations, logits, comm */
    char rule[ANSWER_TEXT_MAX];
    double step_time_s, samples_per_s, tokens_per_s;
    bool fits;
    /* appended columns (DESIGN.md allows new ones at the end) */
    uint64_t index;              /* position among its recipe's layouts: the last tie-break */
    double score;                /* ranking score, printed exactly (%.17g) */
    uint64_t peak_bytes;         /* the exact peak behind peak_gib */
    double allocated_gib, reserved_gib;
    double peak_hi_gib;          /* upper end of the error band (README "Error band") */
    /* methods beyond LLMem: what offload keeps in host memory, per GPU */
    double host_gib;
    /* the fastest fitting layout of the row's recipe and this one differ by less than the
     * speed model's own error (SPEED_ERROR_PCT): no winner between them */
    bool speed_tie;
    char recipe_id[ANSWER_ID_LEN], config_id[ANSWER_ID_LEN];
    double tokens_per_s_gpu;
    int32_t recipe_min_gpus;     /* the fewest GPUs any layout of the recipe fits on (the
                                  * whole space, not only the ranked rows); 0: none */
};

/* The fastest layout of a recipe at one GPU count. */
struct answer_layout {
    struct train_config cfg;
    double peak_gib, tokens_per_s, tokens_per_s_gpu, step_time_s;
    double hours, gpu_hours;     /* for the answer's token count */
    char config_id[ANSWER_ID_LEN];
};

/* Why a point does not fit: its peak and the largest term (the base aside) of its peak
 * phase. */
struct answer_miss {
    struct train_config cfg;
    double peak_gib, fit_peak_gib; /* fit_peak: what must fit under --margin */
    char term[24];
    double term_gib;
    char phase[32];
    char rule[ANSWER_TEXT_MAX];    /* "" when no measured rule binds */
};

/* One change that makes a recipe fit, with its resulting peak. */
struct answer_change {
    char what[96];               /* "checkpointing on", "qlora", "adp on 4 GPUs", ... */
    struct train_config cfg;
    double peak_gib, fit_peak_gib;
    int cost;                    /* how much it changes: smaller first */
};

struct answer_recipe {
    char model[MODEL_NAME_MAX];
    uint32_t model_index;        /* into answer.models; UINT32_MAX for merged shards */
    struct train_config cfg;     /* the recipe's knobs (layout fields: its first layout) */
    char recipe_id[ANSWER_ID_LEN];
    size_t row0, nrows;          /* its ranked rows */
    int64_t fitting;             /* layouts that fit; -1 when not known (merged shards) */
    int32_t min_gpus;            /* the fewest GPUs that fit; 0: none */
    size_t by0, nby;             /* answer.by_gpus[by0 .. by0 + nby), GPU counts ascending */
    int best;                    /* index into its by_gpus under the objective; -1: none */
    bool has_miss;
    struct answer_miss miss;     /* the closest miss when nothing fits */
    struct answer_change change[ANSWER_SUGGEST_MAX];
    int nchange;
};

/* Per (method, GPU count) of a featured recipe: the fastest layout that fits, else the
 * closest miss. */
struct answer_cell {
    enum method method;
    int32_t gpus;
    bool has_fit, has_miss;
    struct answer_layout fit;
    struct answer_miss miss;
};

/* Peak against micro-batch for one parallel layout of a featured recipe. */
struct answer_series {
    struct train_config cfg;
    int n;
    int32_t batch[ANSWER_BATCH_POINTS];
    double peak[ANSWER_BATCH_POINTS], hi[ANSWER_BATCH_POINTS];
    bool fits[ANSWER_BATCH_POINTS];
    int32_t largest_fit;         /* 0 = none */
};

struct answer_model {
    char name[MODEL_NAME_MAX];
    size_t featured;             /* the recipe its comparison and chart cover; SIZE_MAX: none */
    size_t cell0, ncell;         /* answer.cells */
    size_t series0, nseries;     /* answer.series */
    bool series_cut;             /* more layouts than ANSWER_SERIES_MAX */
    bool anchor_fits;
    int32_t anchor_batch;        /* the featured point on the chart */
    double anchor_peak_gib;
    struct report_row best;      /* the featured recipe's best layout (or its closest miss) */
    bool has_best;
};

struct report_meta {
    const char *version;
    char gpu[GPU_NAME_MAX];
    char gpu_note[200];
    double budget_gib;
    double gpu_memory_gib;       /* the selected GPU's memory */
    uint64_t budget_bytes, gpu_memory_bytes; /* the same in bytes (0: not known, merged) */
    uint64_t host_budget_bytes;  /* --host-memory, a node's (0: unchecked or not known) */
    uint64_t host_over;          /* points left out by it (with the counts) */
    char warning[240];           /* e.g. a budget above the GPU's memory; "" when none */
    char stack[64];              /* the stack + "+liger", "+paged", "+interleaved", "+rope-tables[-fp32]",
                                    "+end-units" as asked */
    char rank_mode[16];
    bool paper;
    const char *rules;           /* path or NULL */
    const struct report_inputs *in; /* the question as asked; NULL for merged shards */
    const char *command;         /* the command line, NULL when not known */
    bool has_counts;
    uint64_t space, evaluated, pruned, fitting;
    bool stamp;
    double margin_pct;           /* < 0: auto */
    enum objective objective;
    double tokens;               /* training tokens for the time and GPU-hour estimates */
};

struct report {
    struct report_meta meta;
    struct report_row *rows;
    size_t nrows;
    struct answer_recipe *recipes; /* in row order */
    size_t nrecipes;
    struct answer_layout *by_gpus;
    size_t nby;
    struct answer_model *models;   /* in input order; none for merged shards */
    size_t nmodels;
    struct answer_cell *cells;
    size_t ncells;
    struct answer_series *series;
    size_t nseries;
    bool has_closest;              /* the run's closest miss, when nothing fits anywhere */
    struct answer_miss closest;
    char closest_model[MODEL_NAME_MAX];
    struct answer_change closest_change[ANSWER_SUGGEST_MAX]; /* what makes the closest fit */
    int nclosest_change;
};

/* The answer of a finished sweep: rows ranked per recipe, summaries, changes for recipes
 * that fit nowhere, and the featured recipe's comparison and chart per model. meta must
 * already hold objective and tokens. Returns 0 or -1 when memory runs out. */
int answer_build(struct report *r, const struct sweep *s, const struct sweep_result *res);

/* Per-recipe summaries from the rows alone (merged shards): rows must be ranked
 * (answer_rank). Returns 0 or -1. */
int answer_summarize(struct report *r);

/* Sorts rows by recipe key, then the sweep's total order (fits, score desc, peak asc,
 * layout index asc), numbers ranks per recipe and keeps ranks 1..top (0 = all). Rows of one
 * recipe get the smallest nonzero recipe_min_gpus among them (shards each saw a part). */
void answer_rank(struct report *r, long top);

/* Recipe order of two rows (model name, fine-tuning, rank, targets, base format, precision,
 * optimizer, sequence length); 0 for the same recipe. */
int answer_recipe_cmp(const struct report_row *a, const struct report_row *b);

/* Sets speed_tie on every row: the fitting rows of one recipe whose tokens/s is within
 * SPEED_ERROR_PCT of the recipe's fastest, and that fastest row when another one is. */
void answer_mark_ties(struct report *r);

/* One point as a row (explain and tests use it too). */
void answer_row_from_point(struct report_row *row, const struct sweep *s,
                           const struct sweep_point *pt);

/* Stable ids: FNV-1a 64 of the knob values' canonical text (never of indexes), so the same
 * configuration keeps its id across runs, catalogs and versions. */
void answer_recipe_id(const char *model, const struct train_config *c, char out[ANSWER_ID_LEN]);
void answer_config_id(const char *model, const struct train_config *c, char out[ANSWER_ID_LEN]);

/* The nearest changes that make configuration c of model `model` fit, fewest changed
 * first (more GPUs, another method incl. a pipeline and CPU offload, checkpointing, a
 * smaller micro-batch, an 8-bit optimizer, LoRA, QLoRA, a shorter sequence); without
 * checkpointing, when no single change fits, each of them with checkpointing on. Returns how
 * many were written. */
int answer_suggest(const struct sweep *s, uint32_t model, const struct train_config *c,
                   struct answer_change *out, int max);

/* Why point pt does not fit. */
void answer_miss_from_point(struct answer_miss *m, const struct sweep *s,
                            const struct sweep_point *pt);

void answer_free(struct report *r);

#endif
