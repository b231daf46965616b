/* cmd_explain.c: `llmem-sweep explain`: one configuration from the command line,
 * explained by the search layer (explanation.h) and written by reports/explain_out.c. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "csv_table.h"
#include "explain_out.h"
#include "explanation.h"
#include "job.h"
#include "measured.h"

/* The most values the command line gave one configuration axis (0: none given). */
static int axis_values(const struct space_axes *a)
{
    const int n[] = {a->nmethods, a->gpus.n, a->batch.n, a->seq.n, a->tp.n, a->ep.n, a->pp.n,
                     a->nprecisions, a->nfinetunes, a->nquants, a->noptimizers, a->nckpts,
                     a->ntargets, a->lora_r.n, a->pp_microbatches ? 1 : 0};
    int most = 0;
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        most = n[i] > most ? n[i] : most;
    return most;
}

/* One value per axis, with the explain defaults where the command line is silent. */
static int single_config(const struct options *o, struct train_config *c)
{
    if (axis_values(&o->axes) > 1) {
        return usage_error("explain", "one value per option (lists are for the sweep)");
    }
    memset(c, 0, sizeof *c);
    c->method = o->axes.nmethods ? (enum method)o->axes.methods[0] : METHOD_SINGLE;
    int multi = c->method != METHOD_SINGLE;
    c->gpus = o->axes.gpus.n ? o->axes.gpus.v[0] : (c->method == METHOD_DPTP ? 4 : multi ? 2 : 1);
    if (c->method == METHOD_OFFLOAD && !o->axes.gpus.n)
        c->gpus = 1; /* ZeRO-Offload runs on one GPU too */
    c->tp = c->method == METHOD_TP ? c->gpus
          : c->method == METHOD_DPTP ? (o->axes.tp.n ? o->axes.tp.v[0] : 2)
          : c->method == METHOD_PP && o->axes.tp.n ? o->axes.tp.v[0] : 1;
    c->pp = c->method == METHOD_PP ? (o->axes.pp.n ? o->axes.pp.v[0] : 2) : 1;
    c->microbatches = c->method == METHOD_PP ? (o->axes.pp_microbatches ? o->axes.pp_microbatches : 4 * c->pp) : 1;
    c->offload = c->method == METHOD_OFFLOAD ? o->axes.offload : OFFLOAD_NONE;
    c->dp = c->gpus % (c->tp * c->pp) == 0 ? c->gpus / c->tp / c->pp : 0;
    c->ep = o->axes.ep.n ? o->axes.ep.v[0] : 1;
    c->micro_batch = o->axes.batch.n ? o->axes.batch.v[0] : 1;
    c->seq_len = o->axes.seq.n ? o->axes.seq.v[0] : 512;
    c->precision = o->axes.nprecisions ? (enum precision)o->axes.precisions[0] : o->paper ? PREC_FP16 : PREC_BF16;
    c->finetune = o->axes.nfinetunes ? (enum finetune)o->axes.finetunes[0] : FT_FULL;
    c->quant = o->axes.nquants ? (enum quant)o->axes.quants[0] : c->finetune == FT_QLORA ? QUANT_NF4 : QUANT_NONE;
    if (c->finetune != FT_FULL) {
        c->lora_r = o->axes.lora_r.n ? o->axes.lora_r.v[0] : 16;
        c->lora_targets = o->axes.ntargets ? o->axes.targets[0] : TARGETS_ALL;
    }
    train_set_ckpt(c, o->axes.nckpts ? o->axes.ckpts[0] : CKPT_ON);
    c->optimizer = o->axes.noptimizers ? (enum optimizer)o->axes.optimizers[0] : OPT_ADAMW;
    c->stack = o->paper ? STACK_COLOSSAL : o->axes.stack;
    c->data = o->axes.data;
    c->alloc = o->axes.alloc;
    c->features = stack_features(c->stack) | space_features(&o->axes);
    if (o->paper && (c->precision != PREC_FP16 || c->finetune != FT_FULL || !c->grad_ckpt ||
                     c->optimizer != OPT_ADAMW)) {
        fputs("llmem-sweep: --paper covers fp16 mixed precision, full fine-tuning, "
              "checkpointing and Adam only\n", stderr);
        return EXIT_USAGE;
    }
    return 0;
}

/* A measured row (explain --measured FILE --id ID), as validate reads it. */
struct row_ref {
    char model[2048], gpu[64], id[32], metric[16];
    long line;
    double gib;
    uint32_t widths[LP_RUN_STEPS]; /* its variable-length run, when the row gives it */
    size_t nwidths;
};


/* Row `id` of o->measured_csv: its configuration into c (stack defaults and the row's
 * features), its model (a catalog id, or a config.json beside the CSV) and GPU into the
 * options. @return 0, or an exit code after printing why. */
static int measured_config(struct options *o, struct train_config *c, struct row_ref *ref)
{
    if (!o->measured_csv || !o->measured_id)
        return usage_error("explain", "--measured FILE and --id ID go together");
    if (o->nmodels || axis_values(&o->axes) > 0 || o->paper || o->lengths)
        return usage_error("explain", "--measured takes the model and the configuration from the row: "
                           "drop --model, --paper, --lengths and the configuration options");
    /* the row sets these too (its stack and features, data and alloc_conf columns); only a
     * value other than the default shows that one was given */
    if (o->axes.stack != STACK_HF || o->axes.data != DATA_VARIABLE || o->axes.alloc != ALLOC_DEFAULT ||
        space_features(&o->axes))
        return usage_error("explain", "--measured takes the stack, features, data shape and allocator from "
                           "the row: drop --stack, --attention, --liger, --paged, --rope-tables, --fsdp-end-units, "
                           "--data and --alloc-conf");
    struct csv_table t;
    struct input_error e;
    if (csv_table_read(o->measured_csv, &t, &e) != 0 || csv_table_require(&t, measured_columns, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    size_t r = 0;
    while (r < t.nrows && strcmp(measured_cell(&t, r, "id"), o->measured_id) != 0)
        r++;
    int rc = 0;
    char why[160];
    if (r == t.nrows) {
        rc = usage_error("explain", "%s has no row with id '%s'", o->measured_csv, o->measured_id);
    } else if ((rc = measured_row_config(&t, r, targets_parse, c, why, sizeof why, &e)) != 0) {
        if (rc > 0)
            input_error_set(&e, EXIT_BAD_INPUT, t.path, t.lines[r], NULL, "row %s cannot be explained: %s",
                            o->measured_id, why);
        input_error_print(&e);
        rc = e.code;
    } else if ((rc = measured_row_run(&t, r, c, ref->widths, LP_RUN_STEPS, &e)) < 0) {
        input_error_print(&e);
        rc = e.code;
    } else {
        ref->nwidths = (size_t)rc;
        rc = 0;
        const char *name = measured_cell(&t, r, "model");
        measured_model_path(t.path, name, ref->model, sizeof ref->model);
        if (access(ref->model, F_OK) != 0) /* a catalog id */
            snprintf(ref->model, sizeof ref->model, "%s", name);
        snprintf(ref->gpu, sizeof ref->gpu, "%s", measured_cell(&t, r, "gpu"));
        snprintf(ref->id, sizeof ref->id, "%s", o->measured_id);
        snprintf(ref->metric, sizeof ref->metric, "%s", measured_cell(&t, r, "metric"));
        ref->line = t.lines[r];
        const char *v = measured_cell(&t, r, "measured_gib");
        ref->gib = -1;
        if (*v && csv_get_f64(&t, r, csv_table_col(&t, "measured_gib"), 1e-6, 1e6, &ref->gib, &e) != 0) {
            input_error_print(&e);
            rc = e.code;
        }
        o->models[0] = ref->model;
        o->nmodels = 1;
        if (!o->gpu && ref->gpu[0]) /* else validate's default GPU */
            o->gpu = ref->gpu;
    }
    csv_table_free(&t);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    struct options o;
    struct train_config c;
    static struct row_ref row;
    int rc = options_parse(argc, argv, 1, OPTIONS_EXPLAIN, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    const bool measured = o.measured_csv || o.measured_id;
    if (measured && (rc = measured_config(&o, &c, &row)))
        return rc;
    if (o.nmodels != 1) {
        return usage_error("explain", "needs exactly one --model");
    }
    if (!measured && (rc = single_config(&o, &c)))
        return rc;
    if (o.format != FORMAT_AUTO && o.format != FORMAT_TEXT && o.format != FORMAT_JSON) {
        return usage_error("explain", "--format is text or json");
    }
    static struct job j;
    if ((rc = job_init(&j, &o))) {
        job_free(&j);
        return rc;
    }
    /* one configuration: its whole steps replayed; not under measured rules, which were fitted
     * to the phases' reserve as the sweep computes it (rules/fit.c model_bytes) */
    j.sweep.mem.whole_steps = !j.sweep.rules;
    struct model_plan *p = &j.sweep.models[0];
    const char *bad = train_config_check(&c, &p->spec);
    if (bad) {
        fprintf(stderr, "llmem-sweep: invalid configuration: %s\n", bad);
        job_free(&j);
        return EXIT_USAGE;
    }
    static struct explanation x;
    const struct explain_params par = {.paper = j.opt.paper, .detail = j.opt.detail,
                                       .margin_pct = j.opt.margin_pct,
                                       .widths = measured ? row.widths : NULL,
                                       .nwidths = measured ? row.nwidths : 0};
    explanation_build(&x, &j.sweep, 0, &c, &par);
    if (measured && row.gib > 0)
        explanation_set_measured(&x, o.measured_csv, row.line, row.id, row.metric, row.gib);
    if (o.format == FORMAT_JSON) {
        if (explain_write_json(&x, stdout) != 0 && !ferror(stdout)) { /* a write error: main() says so */
            fputs("llmem-sweep: out of memory\n", stderr);
            rc = EXIT_IO;
        }
    } else
        explain_write_text(&x, stdout);
    job_free(&j);
    return rc; /* main() checks stdout */
}
