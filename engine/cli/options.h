/* options.h: the command line of the sweep and of `explain` (DESIGN.md section 4).
 *
 * Axis options take comma lists and inclusive ranges (`--batch 1..64`, `--batch 1,2,4`,
 * `--seq 512,1024..1026`). Parsing only checks syntax and names; the sweep checks
 * combinations. */
#ifndef LLMEM_OPTIONS_H
#define LLMEM_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "answer.h"
#include "report.h"
#include "space.h"
#include "train.h"

#define OPT_MODELS_MAX 256
#define OPT_OUTS_MAX 4

enum rank_mode { RANK_SPEED, RANK_LLMEM };

struct options {
    const char *models[OPT_MODELS_MAX];
    int nmodels;
    struct space_axes axes;   /* the sweep's axes (--methods .. --alloc-conf), in the search's own struct */

    const char *gpu;          /* catalog GPU name; NULL = local GPU or H100-SXM-80GB */
    uint64_t budget;          /* 0 = from the GPU */
    uint64_t base;            /* m_base override; 0 = the GPU's context size */
    bool base_set;
    bool paper;
    enum rank_mode rank;
    const char *rules;
    const char *data_dir;     /* --catalog DIR (or --data DIR, the older spelling) */
    double margin_pct;        /* --margin: < 0 = auto (the error band's upper end fits),
                               * else the point prediction + this many % fits; 0 = the point */
    long top;                 /* 0 = all fitting rows */
    bool all, no_prune, quiet, progress, stamp;
    int threads;              /* 0 = all cores */
    int shard_k, shard_n;     /* 1-based K of N; 0/0 = no sharding */
    enum out_format format;
    const char *outs[OPT_OUTS_MAX];
    int nouts;
    int objective;            /* --objective: enum objective (answer.h), default throughput */
    double tokens;            /* --tokens N: training tokens for the time estimates */
    bool all_recipes;         /* --recipes all: the full cross product of the recipe axes */
    const char *command;      /* the command line, for reports (set by the command) */
};

/* Which options a command accepts. */
enum options_mode { OPTIONS_SWEEP, OPTIONS_EXPLAIN };

/* Parses argv[first..argc) into o (defaults first). Returns 0; or prints
 * `llmem-sweep: <what>` to stderr and returns EXIT_USAGE. `--help` returns -1 after
 * printing the usage to stdout. */
int options_parse(int argc, char **argv, int first, enum options_mode mode, struct options *o);

/* Fills the axes not given on the command line with the defaults of DESIGN.md and the
 * README (every model is left to the caller: nmodels == 0 means all). */
void options_default_axes(struct options *o);

/* "1..4,8" -> {1,2,3,4,8}; values in [lo, hi], sorted ascending and deduplicated.
 * Returns 0 or -1 on junk. */
int options_parse_int_list(const char *s, int32_t lo, int32_t hi, struct int_list *out);

void options_usage(enum options_mode mode);

void options_report_inputs(const struct options *o, struct report_inputs *in);

#endif
