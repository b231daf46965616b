/* options.h: the command line of the sweep and of `explain` (DESIGN.md section 4).
 *
 * Axis options take comma lists and inclusive ranges (`--batch 1..64`, `--batch 1,2,4`,
 * `--seq 512,1024..1026`). Parsing only checks syntax and names; the sweep checks
 * combinations. */
#ifndef LLMEM_OPTIONS_H
#define LLMEM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
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
    uint64_t host_memory;     /* --host-memory: a node's host memory for offload; 0 = unchecked */
    uint64_t base;            /* m_base override; 0 = the GPU's context size */
    bool base_set;
    bool paper;
    bool detail;              /* explain --detail: the tensors behind each term */
    const char *measured_csv; /* explain --measured FILE --id ID: a measured row's */
    const char *measured_id;  /*   configuration, model and GPU */
    enum rank_mode rank;
    const char *rules;
    const char *lengths;      /* --lengths FILE: the dataset's sample lengths (lengths.h) */
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

/* The commands, as bits: a row of the option table (options.c) names those that accept it. */
enum opt_cmd {
    CMD_SWEEP = 1 << 0,
    CMD_EXPLAIN = 1 << 1,
    CMD_VALIDATE = 1 << 2,
    CMD_FIT = 1 << 3,
    CMD_MERGE = 1 << 4,   /* into struct options: --out, --format, --top */
    CMD_CATALOG = 1 << 5, /* models and gpus: into a const char * (the catalog folder) */
    CMD_DEVICES = 1 << 6, /* into an int: 0 text, 1 json */
    CMD_PROBE = 1 << 7,   /* into an int: the device index */
    CMD_DIFF = 1 << 8,    /* into a double: the threshold in % */
};

/* `validate`'s arguments. */
struct validate_args {
    const char **measured;    /* argc entries: every argument may be one, none is dropped */
    int nmeasured;
    const char *out, *rules, *data, *write_band;
    bool paper, summary_only;
    double fail_above;        /* median |error| bound in %, < 0 = none */
};

#define FIT_ARGS_MAX 64

/* `fit`'s arguments. */
struct fit_args {
    const char *measured[FIT_ARGS_MAX], *match[FIT_ARGS_MAX], *notes[FIT_ARGS_MAX];
    int nmeasured, nmatch, nnotes;
    const char *feat_all;                /* --features LIST */
    const char *feat_for[FIT_ARGS_MAX];  /* --features CAND=LIST */
    int nfeat_for;
    const char *out, *set, *metric, *data;
    int with_model;                      /* 0 no, 1 yes, RULES_ADD */
    bool append, verbose;
};

/* Parses the options of command cmd in argv[1..argc) into dst: the command's argument
 * struct (struct options for the sweep, explain and merge; struct validate_args; struct
 * fit_args) or, for the one-option commands, that option's field (see enum opt_cmd). Each
 * option is looked up in one sorted table (name, the commands that take it, how its value
 * is parsed and where it is stored), as curl's src/tool_getparam.c does. Arguments that are
 * not options go to pos (argc entries; *npos counts them), or are a usage error when pos
 * is NULL. Both `--name value` and `--name=value` are read. Returns 0; -1 on --help or -h
 * (nothing printed: the caller prints its usage); or EXIT_USAGE after the one message
 * `llmem-sweep: [cmd: ]<what> (see ... --help)` on stderr. Only the options given are
 * written: the caller sets the defaults first. */
int options_parse_cmd(enum opt_cmd cmd, int argc, char **argv, void *dst, const char **pos,
                      int *npos);

/* NULL when the option table is sound (sorted by name for the lookup; no two rows of one
 * name for the same command; every row for some command), else what is wrong with it. */
const char *options_table_problem(void);

/* Row i of the option table: its name and (in *cmds) the commands that take it; NULL past
 * the last row. For the check that every command's --help names each of its options. */
const char *options_table_row(size_t i, unsigned *cmds);

/* Which options a command accepts. */
enum options_mode { OPTIONS_SWEEP, OPTIONS_EXPLAIN };

/* Parses argv[first..argc) into o (defaults first) through options_parse_cmd. Returns 0; or
 * prints `llmem-sweep: <what>` to stderr and returns EXIT_USAGE. `--help` returns -1 after
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
