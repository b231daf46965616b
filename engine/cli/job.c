/* job.c: from options to a ready sweep (see job.h). */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "model_source.h"
#include "units.h"

/* --gpu NAME; else the local GPU (its catalog entry, and its memory as the budget); else
 * the default entry. */
static int resolve_gpu(struct job *j)
{
    const struct gpu_spec *g = NULL;
    if (j->opt.gpu) {
        g = catalog_find_gpu(&j->cat, j->opt.gpu);
        if (!g) {
            fprintf(stderr, "llmem-sweep: unknown GPU '%s' (see `llmem-sweep gpus`)\n", j->opt.gpu);
            return EXIT_USAGE;
        }
        snprintf(j->gpu_note, sizeof j->gpu_note, "--gpu %s", g->name);
    } else {
        struct device_info dev;
        char note[96];
        if (devices_list(&dev, 1, note, sizeof note) > 0) {
            g = catalog_match_device(&j->cat, dev.name);
            if (!j->opt.budget) {
                j->opt.budget = dev.total_bytes;
                j->budget_from_device = true;
            }
            snprintf(j->gpu_note, sizeof j->gpu_note, "local GPU %.96s", dev.name);
        }
        if (!g)
            g = catalog_find_gpu(&j->cat, CATALOG_DEFAULT_GPU);
        if (!g) {
            fprintf(stderr, "llmem-sweep: %s/gpus.csv has no %s entry\n", j->cat.dir, CATALOG_DEFAULT_GPU);
            return EXIT_BAD_INPUT;
        }
        if (!j->gpu_note[0])
            snprintf(j->gpu_note, sizeof j->gpu_note, "default %.40s (no local GPU: %.96s)", g->name, note);
    }
    j->gpu = *g;
    /* a budget the GPU cannot hold is a typo or a wrong --gpu: say so, never silently */
    if (j->opt.budget > g->memory_bytes && !j->budget_from_device)
        fprintf(stderr, "llmem-sweep: warning: the budget (%.2f GiB) is above the memory of the "
                        "%s (%.2f GiB)\n", units_gib(j->opt.budget), g->name,
                units_gib(g->memory_bytes));
    if (j->opt.axes.gpus_per_node > 0)
        j->gpu.gpus_per_node = j->opt.axes.gpus_per_node;
    /* --precision fp8 on a GPU without float8 tensor cores: a usage error, as any
     * configuration the GPU cannot run (train_gpu_check says why) */
    for (int i = 0; i < j->opt.axes.nprecisions; i++) {
        const struct train_config probe = {.precision = (enum precision)j->opt.axes.precisions[i]};
        const char *why = train_gpu_check(&probe, &j->gpu);
        if (why)
            return usage_error(NULL, "--precision %s on %s: %s", precision_name(probe.precision),
                               g->name, why);
    }
    if (!j->opt.budget)
        j->opt.budget = g->memory_bytes;
    return 0;
}

static int load_models(struct job *j)
{
    struct sweep *s = &j->sweep;
    size_t n = j->opt.nmodels ? (size_t)j->opt.nmodels : j->cat.nmodels;
    s->models = calloc(n ? n : 1, sizeof *s->models);
    s->rule_binding = calloc(n ? n : 1, sizeof *s->rule_binding);
    if (!s->models || !s->rule_binding)
        return EXIT_IO;
    for (size_t i = 0; i < n; i++) {
        struct model_spec m;
        if (j->opt.nmodels) {
            struct input_error e;
            if (model_source_load(&j->cat, j->opt.models[i], &m, &e) != 0) {
                input_error_print(&e);
                return e.code;
            }
        } else {
            m = j->cat.models[i];
        }
        if (plan_init(&s->models[i], &m) != 0)
            return EXIT_IO;
        s->nmodels = i + 1;
        if (memmodel_uses_llmem(j->opt.axes.stack, &s->mem))
            plan_chunk(&s->models[i]);
        s->rule_binding[i] = s->rules ? rules_bind(s->rules, &s->models[i]) : -1;
    }
    return 0;
}

/* The error bands of the data folder (README "Error band"); a folder without band.csv
 * (a private catalog) has none: bands of width 0, and --margin auto is the prediction. */
static int load_band(struct job *j, const char *dir)
{
    char path[4096];
    struct input_error e;
    snprintf(path, sizeof path, "%s/band.csv", dir);
    if (access(path, F_OK) != 0)
        return 0;
    if (band_table_read(path, &j->band, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    j->sweep.band = &j->band;
    return 0;
}

/* --lengths FILE: the dataset's sample lengths, for the variable-length replay of the loss
 * path (lengthcost.h). They describe variable-length batches, which --data packed and
 * LLMem's equations (--paper, --stack colossal) do not have. */
static int load_lengths(struct job *j)
{
    const struct options *o = &j->opt;
    struct input_error e;
    if (!o->lengths)
        return 0;
    if (o->paper || o->axes.stack == STACK_COLOSSAL || o->axes.data != DATA_VARIABLE)
        return usage_error(NULL, "--lengths describes variable-length batches: it cannot go with %s",
                           o->paper                        ? "--paper"
                           : o->axes.stack == STACK_COLOSSAL ? "--stack colossal (LLMem's equations)"
                                                             : "--data packed");
    if (lengths_read(o->lengths, &j->lengths, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    if (length_costs_init(&j->lcost, j->lengths.tokens, j->lengths.n, j->lengths.longest) != 0)
        return EXIT_IO;
    j->sweep.lengths = &j->lcost;
    const struct int_list *seq = &o->axes.seq; /* sorted */
    if (seq->n && (uint32_t)seq->v[seq->n - 1] > j->lengths.longest)
        fprintf(stderr, "llmem-sweep: warning: --lengths: the longest sample has %u tokens, fewer "
                        "than --seq %d; steps of %d tokens are still counted\n",
                j->lengths.longest, seq->v[seq->n - 1], seq->v[seq->n - 1]);
    return 0;
}

/* The sweep's progress line on stderr, redrawn in place and cleared at the end. */
static void progress_line(void *data, const struct sweep_progress *p)
{
    (void)data;
    if (p->finished)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r%zu/%ld configuration groups, %.1f M points/s   ", p->done, p->total,
                p->points_per_s / 1e6);
}

int job_init(struct job *j, const struct options *o)
{
    struct input_error e;
    memset(j, 0, sizeof *j);
    j->opt = *o;
    if (j->opt.paper)
        j->opt.axes.stack = STACK_COLOSSAL;
    const char *dir = o->data_dir ? o->data_dir : catalog_default_dir();
    if (catalog_load(dir, &j->cat, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    int rc = resolve_gpu(j);
    if (rc || (rc = load_band(j, dir)) || (rc = load_lengths(j)))
        return rc;
    if (o->rules && rules_load(o->rules, &j->sweep.rules, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    struct sweep *s = &j->sweep;
    s->par = (struct sweep_params){
        .top = o->top, .all = o->all, .no_prune = o->no_prune,
        .progress = !o->quiet && (o->progress || isatty(STDERR_FILENO)) ? progress_line : NULL,
        .llmem_rank = o->rank == RANK_LLMEM, .threads = o->threads,
        .shard_k = o->shard_k, .shard_n = o->shard_n, .margin_pct = o->margin_pct,
    };
    s->gpu = &j->gpu;
    s->budget = j->opt.budget;
    s->host_budget = j->opt.host_memory;
    mem_options_for_gpu(&j->gpu, j->opt.paper, &s->mem);
    if (j->opt.base_set)
        s->mem.base_bytes = j->opt.base;
    return load_models(j);
}

int job_build_space(struct job *j)
{
    options_default_axes(&j->opt);
    const struct model_plan **plans = malloc((j->sweep.nmodels ? j->sweep.nmodels : 1) * sizeof *plans);
    if (!plans)
        return EXIT_IO;
    for (size_t i = 0; i < j->sweep.nmodels; i++)
        plans[i] = &j->sweep.models[i];
    int rc = space_build(&j->opt.axes, plans, j->sweep.nmodels, &j->sweep.space);
    free(plans);
    return rc ? EXIT_IO : 0;
}

void job_free(struct job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->sweep.nmodels; i++)
        plan_free(&j->sweep.models[i]);
    free(j->sweep.models);
    free(j->sweep.rule_binding);
    space_free(&j->sweep.space);
    rules_free(j->sweep.rules);
    band_table_free(&j->band);
    length_costs_free(&j->lcost);
    lengths_free(&j->lengths);
    catalog_free(&j->cat);
}
