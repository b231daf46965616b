/* cmd_sweep.c: the main job (sweep, rank, write reports) and `merge` of shard CSVs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "job.h"
#include "outfile.h"
#include "report.h"
#include "units.h"

#define ALL_MAX_POINTS (UINT64_C(4) << 20) /* about 2 GiB of report rows */

/* The format of each output: --format when given, else the file's extension; stdout (no
 * --out, or --out -) gets the table unless --format says otherwise. */
static int output_format(const struct options *o, const char *path, enum out_format *f)
{
    *f = o->format;
    if (outfile_is_stdout(path))
        path = NULL;
    if (*f == FORMAT_AUTO || (o->nouts > 1 && path))
        *f = path ? report_format_for(path) : FORMAT_TABLE;
    if (*f == FORMAT_AUTO) {
        fprintf(stderr, "llmem-sweep: cannot tell the format of '%s': use .csv, .json, .html "
                        "or --format\n", path);
        return EXIT_USAGE;
    }
    if (*f == FORMAT_TEXT)
        *f = FORMAT_TABLE;
    return 0;
}

/* Every output's format, and that it can be written, before the sweep: a nightly job with a
 * missing report folder fails at once, not after its points are evaluated. */
static int check_outputs(const struct options *o)
{
    enum out_format f;
    struct input_error e;
    for (int i = 0; i < o->nouts; i++)
        if (output_format(o, o->outs[i], &f))
            return EXIT_USAGE;
    for (int i = 0; i < o->nouts; i++)
        if (outfile_check(o->outs[i], &e) != 0) {
            input_error_print(&e);
            return e.code;
        }
    return 0;
}

static int write_outputs(const struct report *r, const struct options *o)
{
    enum out_format f;
    struct input_error e;
    for (int i = 0; i < (o->nouts ? o->nouts : 1); i++) {
        const char *path = o->nouts ? o->outs[i] : NULL;
        output_format(o, path, &f);
        if (report_write(r, f, path, &e) != 0) {
            input_error_print(&e);
            return e.code;
        }
    }
    return 0;
}

/* Exit 1's message: the closest miss, the term that binds it, and the nearest changes
 * that make it fit. */
static void explain_miss(const struct report *r, const struct sweep *s, const struct sweep_result *res,
                         const struct options *o)
{
    if (res->host_over)
        fprintf(stderr, "llmem-sweep: %" PRIu64 " points left out: their offload fills more than "
                        "--host-memory %.2f GiB of a node\n", res->host_over, units_gib(s->host_budget));
    fprintf(stderr, "llmem-sweep: no configuration fits %.2f GiB", units_gib(s->budget));
    if (!r->has_closest && res->host_over) { /* every configuration was left out */
        fprintf(stderr, " and --host-memory\n");
        return;
    }
    if (!r->has_closest) {
        char why[1024] = "";
        if (s->space.nouter == 0 && s->nmodels > 0)
            space_why_empty(&o->axes, &s->models[0], why, sizeof why);
        fprintf(stderr, " (the space is empty%s%s%s)\n", *why ? ": " : "", why,
                *why && s->nmodels > 1 ? ", for the first model" : "");
        return;
    }
    const struct answer_miss *m = &r->closest;
    const struct train_config *c = &m->cfg;
    fprintf(stderr, "; closest: %s %s on %d GPU(s), micro-batch %d, seq %d, %s %s needs %.2f GiB "
                    "at %s, bound by %s (%.2f GiB)\n",
            r->closest_model, method_name(c->method), c->gpus, c->micro_batch, c->seq_len,
            precision_name(c->precision), finetune_name(c->finetune), m->peak_gib, m->phase,
            m->term, m->term_gib);
    if (m->peak_gib <= r->meta.budget_gib) /* the margin, not the prediction, rejects it */
        fprintf(stderr, "llmem-sweep: it fits on the point prediction alone (%.2f GiB), not with "
                        "the margin (%.2f GiB%s); --margin 0 accepts it\n",
                m->peak_gib, m->fit_peak_gib,
                r->meta.margin_pct < 0 ? ", the error band's upper end" : "");
    for (int i = 0; i < r->nclosest_change && i < 3; i++)
        fprintf(stderr, "llmem-sweep: %s: %s fits (%.2f GiB)\n", i ? "or" : "to make it fit",
                r->closest_change[i].what, r->closest_change[i].peak_gib);
}

/* The command line, quoted where a word needs it, for the reports' reproduce command. */
static const char *command_line(int argc, char **argv)
{
    static char buf[4096];
    size_t n = 0;
    for (int i = 0; i < argc && n + 1 < sizeof buf; i++) {
        const char *a = i ? argv[i] : "llmem-sweep";
        bool plain = *a && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_./,=:+@%") == strlen(a);
        int w = snprintf(buf + n, sizeof buf - n, plain ? "%s%s" : "%s'%s'", i ? " " : "", a);
        if (w < 0 || (size_t)w >= sizeof buf - n || strchr(a, '\''))
            break;
        n += (size_t)w;
    }
    return buf;
}

int cmd_sweep(int argc, char **argv)
{
    struct options o;
    int rc = options_parse(argc, argv, 1, OPTIONS_SWEEP, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = check_outputs(&o)))
        return rc;
    o.command = command_line(argc, argv);
    static struct job j; /* large; one per process */
    if ((rc = job_init(&j, &o)) || (rc = job_build_space(&j))) {
        job_free(&j);
        return rc;
    }
    /* --all keeps every point as a report row (~0.5 KiB each): refuse what cannot fit */
    if (o.all && space_points(&j.sweep.space) / (o.shard_n ? (uint64_t)o.shard_n : 1) > ALL_MAX_POINTS) {
        fprintf(stderr, "llmem-sweep: --all over %" PRIu64 " points keeps too many rows: narrow "
                        "the axes or split the run with --shard K/N\n", space_points(&j.sweep.space));
        job_free(&j);
        return EXIT_USAGE;
    }
    struct sweep_result res;
    struct report rep = {0};
    static struct report_inputs in; /* large; one per process */
    options_report_inputs(&j.opt, &in);
    if (sweep_run(&j.sweep, &res) != 0 ||
        report_from_sweep(&rep, &j.sweep, &res, &in, j.gpu_note) != 0) {
        fprintf(stderr, "llmem-sweep: out of memory\n");
        rc = EXIT_IO;
    }
    if (!rc && !o.quiet) {
        fprintf(stderr, "llmem-sweep: %" PRIu64 " points, %" PRIu64 " evaluated, %" PRIu64
                        " pruned", res.space, res.evaluated, res.pruned);
        if (res.host_over)
            fprintf(stderr, " (%" PRIu64 " of them over --host-memory)", res.host_over);
        fprintf(stderr, ", %" PRIu64 " fit %.2f GiB on %s\n", res.fitting, units_gib(j.sweep.budget),
                j.gpu.name);
    }
    if (!rc)
        rc = write_outputs(&rep, &j.opt);
    if (!rc && res.fitting == 0) {
        explain_miss(&rep, &j.sweep, &res, &j.opt);
        rc = EXIT_NOTHING_FITS;
    }
    report_free(&rep);
    sweep_result_free(&res);
    job_free(&j);
    return rc;
}

/* The shards' rows are disjoint slices of one space: a configuration (its config_id) met
 * twice means a shard given twice (under two names) or shards of overlapping splits. */
struct shard_row {
    const char *id;
    int shard;
    long line; /* in its shard's file */
};

static int shard_row_cmp(const void *a, const void *b)
{
    const struct shard_row *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : x->shard - y->shard;
}

static int check_disjoint(const struct report *rep, const size_t *first_row, const char **shards,
                          int nshards)
{
    struct shard_row *v = malloc((rep->nrows ? rep->nrows : 1) * sizeof *v);
    if (!v) {
        fputs("llmem-sweep: out of memory\n", stderr);
        return EXIT_IO;
    }
    for (int s = 0; s < nshards; s++)
        for (size_t i = first_row[s]; i < first_row[s + 1]; i++)
            v[i] = (struct shard_row){rep->rows[i].config_id, s, (long)(i - first_row[s]) + 2};
    qsort(v, rep->nrows, sizeof *v, shard_row_cmp);
    int rc = 0;
    for (size_t i = 1; i < rep->nrows && !rc; i++)
        if (!strcmp(v[i].id, v[i - 1].id)) {
            fprintf(stderr, "llmem-sweep: %s:%ld: config_id: configuration %s is also in %s:%ld: "
                            "the same shard twice, or shards of different splits\n",
                    shards[v[i].shard], v[i].line, v[i].id, shards[v[i - 1].shard], v[i - 1].line);
            rc = EXIT_BAD_INPUT;
        }
    free(v);
    return rc;
}

static int parse_merge_args(int argc, char **argv, struct options *o, const char **shards,
                            int *nshards)
{
    int rc = options_parse_cmd(CMD_MERGE, argc, argv, o, shards, nshards);
    if (rc < 0)
        puts("usage: llmem-sweep merge SHARD.csv... [--out FILE]... [--format F] [--top N]\n"
             "Combines the ranked CSVs of `--shard K/N` runs into one report; with the\n"
             "same --top as the shards, the CSV is byte-identical to a single run's.");
    if (!rc && !*nshards)
        return usage_error("merge", "no shard CSV given");
    return rc;
}

int cmd_merge(int argc, char **argv)
{
    struct options o = {0};
    struct report rep = {0};
    int nshards = 0;
    const char **shards = malloc((size_t)argc * sizeof *shards); /* every argument may be one */
    size_t *first_row = malloc(((size_t)argc + 1) * sizeof *first_row);
    int rc = shards && first_row ? parse_merge_args(argc, argv, &o, shards, &nshards) : EXIT_IO;
    if (!rc)
        rc = check_outputs(&o);
    rep.meta.version = LLMEM_VERSION;
    for (int i = 0; !rc && i < nshards; i++) {
        struct input_error e;
        first_row[i] = rep.nrows;
        if (report_read_csv(&rep, shards[i], &e) != 0) {
            input_error_print(&e);
            rc = e.code;
        }
        first_row[i + 1] = rep.nrows;
    }
    if (!rc)
        rc = check_disjoint(&rep, first_row, shards, nshards);
    if (!rc) {
        answer_rank(&rep, o.top);
        answer_mark_ties(&rep); /* among the rows kept, as a single run marks them */
        rep.meta.tokens = ANSWER_TOKENS_DEFAULT;
        if (answer_summarize(&rep) != 0) {
            fputs("llmem-sweep: out of memory\n", stderr);
            rc = EXIT_IO;
        } else {
            rc = write_outputs(&rep, &o);
        }
    }
    report_free(&rep);
    free(shards);
    free(first_row);
    return rc < 0 ? 0 : rc;
}
