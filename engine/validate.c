/* validate.c: measured rows to configurations and predictions (see validate.h). */
#include "validate.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "memmodel.h"
#include "units.h"

static const char *const required[] = {
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune", "lora_r",
    "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib", "gpu",
    "framework", "source", NULL,
};

static const char *cell(const struct csv_table *t, size_t r, const char *col)
{
    int c = csv_table_col(t, col);
    return c >= 0 ? t->cells[r][c] : "";
}

/* The stack features a measured row names (datasets/measured/README.md). Returns NULL, or
 * the reason the model cannot represent the row. */
static const char *apply_features(const char *list, struct train_config *c)
{
    static const struct {
        const char *name;
        uint32_t set;
        const char *unsupported;
    } table[] = {
        {"chunked-ce", FEAT_CHUNKED_CE, NULL},
        {"untied-head", FEAT_UNTIED_HEAD, NULL},
        {"opt-in-bwd", FEAT_OPT_IN_BWD, NULL},
        {"paged", FEAT_PAGED_OPT, NULL},
        {"fsdp", FEAT_FSDP, NULL},
        {"full-init", FEAT_FULL_INIT, NULL},
        {"fused", FEAT_FUSED_OPT, NULL},
        {"grad-accum", FEAT_GRAD_ACCUM, NULL},
        {"compile", FEAT_COMPILE, NULL},
        {"act-offload", 0, "activation offloading to CPU is not modelled"},
        {"cpu-offload", 0, "CPU offload of parameters/optimizer is not modelled"},
        {"dora", 0, "DoRA is not modelled"},
    };
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *p = buf; p && *p;) {
        char *plus = strchr(p, '+');
        if (plus)
            *plus = '\0';
        if (!strcmp(p, "double-quant") && c->quant == QUANT_NF4)
            c->quant = QUANT_NF4_DQ;
        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
            if (strcmp(p, table[i].name) != 0)
                continue;
            if (table[i].unsupported)
                return table[i].unsupported;
            c->features |= table[i].set;
        }
        p = plus ? plus + 1 : NULL;
    }
    return NULL;
}

static const char *enum_field(const char *s, int (*parse)(const char *), int *out)
{
    *out = parse(s);
    return *out < 0 ? s : NULL;
}

/* Fills c from the row; returns NULL or a skip reason written into why. */
static const char *row_config(const struct csv_table *t, size_t r, struct train_config *c,
                              char *why, size_t n)
{
    int v;
    const char *bad;
    memset(c, 0, sizeof *c);
    if ((bad = enum_field(cell(t, r, "method"), method_parse, &v)))
        return snprintf(why, n, "method '%s' is not modelled", bad), why;
    c->method = (enum method)v;
    const char *stack = cell(t, r, "stack");
    v = *stack ? stack_parse(stack) : STACK_HF;
    if (v < 0)
        return snprintf(why, n, "stack '%s' is unknown", stack), why;
    c->stack = (enum stack)v;
    c->features = stack_features(c->stack);
    if ((bad = enum_field(cell(t, r, "precision"), precision_parse, &v)))
        return snprintf(why, n, "precision '%s' is unknown", bad), why;
    c->precision = (enum precision)v;
    if ((bad = enum_field(cell(t, r, "finetune"), finetune_parse, &v)))
        return snprintf(why, n, "finetune '%s' is unknown", bad), why;
    c->finetune = (enum finetune)v;
    if ((bad = enum_field(cell(t, r, "quant"), quant_parse, &v)))
        return snprintf(why, n, "quant '%s' is unknown", bad), why;
    c->quant = (enum quant)v;
    if ((bad = enum_field(cell(t, r, "optimizer"), optimizer_parse, &v)))
        return snprintf(why, n, "optimizer '%s' is not modelled", bad), why;
    c->optimizer = (enum optimizer)v;
    const char *ck = cell(t, r, "grad_ckpt");
    if (strcmp(ck, "on") && strcmp(ck, "off"))
        return snprintf(why, n, "grad_ckpt '%s' is not on/off", ck), why;
    c->grad_ckpt = !strcmp(ck, "on");
    if (!strcmp(cell(t, r, "attention"), "eager"))
        c->features |= FEAT_EAGER_ATTN;
    const char *fr = apply_features(cell(t, r, "features"), c);
    if (fr)
        return snprintf(why, n, "%s", fr), why;
    return NULL;
}

static const char *row_numbers(const struct csv_table *t, size_t r, struct train_config *c,
                               char *why, size_t n)
{
    struct input_error e;
    int64_t g, tp, b, s, lr;
    if (!*cell(t, r, "seq_len"))
        return snprintf(why, n, "sequence length unknown"), why;
    if (csv_get_i64(t, r, csv_table_col(t, "gpus"), 1, 4096, &g, &e) ||
        csv_get_i64(t, r, csv_table_col(t, "tp"), 1, 4096, &tp, &e) ||
        csv_get_i64(t, r, csv_table_col(t, "micro_batch"), 1, 65536, &b, &e) ||
        csv_get_i64(t, r, csv_table_col(t, "seq_len"), 2, 1 << 20, &s, &e))
        return snprintf(why, n, "%.40s: %.100s", e.field, e.msg), why;
    c->gpus = (int32_t)g;
    c->tp = (int32_t)tp;
    c->dp = (int32_t)(g / tp);
    c->micro_batch = (int32_t)b;
    c->seq_len = (int32_t)s;
    if (c->finetune != FT_FULL) {
        if (csv_get_i64(t, r, csv_table_col(t, "lora_r"), 1, 65536, &lr, &e))
            return snprintf(why, n, "lora_r: %.100s", e.msg), why;
        c->lora_r = (int32_t)lr;
        if (targets_parse(cell(t, r, "lora_targets"), &c->lora_targets) != 0)
            return snprintf(why, n, "lora_targets '%s' is unknown", cell(t, r, "lora_targets")), why;
    }
    return NULL;
}

/* The catalog model, or a config.json path relative to the CSV. */
static int row_model(const char *csv, const char *name, const struct catalog *cat,
                     struct model_spec *m)
{
    const struct model_spec *c = catalog_find_model(cat, name);
    if (c) {
        *m = *c;
        return 0;
    }
    char dir[1024], path[2048];
    snprintf(dir, sizeof dir, "%s", csv);
    snprintf(path, sizeof path, "%s/%s", dirname(dir), name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    fclose(f);
    return job_resolve_model(cat, path, m) == 0 ? 0 : -1;
}

static double metric_bytes(const char *metric, const struct mem_estimate *e,
                           const struct mem_prepared *mp, bool *ok)
{
    *ok = true;
    if (!strcmp(metric, "allocated"))
        return (double)e->allocated;
    if (!strcmp(metric, "reserved"))
        return (double)e->reserved;
    if (!strcmp(metric, "device"))
        return (double)e->device;
    if (!strcmp(metric, "reserved-delta")) /* minus the weights resident before step 1 */
        return (double)e->reserved - (double)mp->fixed[PHASE_FORWARD][TERM_PARAMS];
    *ok = false;
    return 0;
}

static void predict_row(const struct csv_table *t, size_t r, const struct validate_opts *vo,
                        struct validate_row *out)
{
    struct train_config c;
    struct model_spec m;
    char why[160];
    const char *skip = row_config(t, r, &c, why, sizeof why);
    if (!skip)
        skip = row_numbers(t, r, &c, why, sizeof why);
    if (!skip && row_model(t->path, out->model, vo->cat, &m) != 0)
        skip = "model not in the catalog and no config.json beside the CSV";
    struct model_plan p;
    if (!skip && plan_init(&p, &m) != 0)
        skip = "out of memory";
    else if (!skip) {
        const char *bad = train_config_check(&c, m.heads, m.kv_heads);
        const struct gpu_spec *g = catalog_find_gpu(vo->cat, cell(t, r, "gpu"));
        if (!g)
            g = catalog_find_gpu(vo->cat, JOB_DEFAULT_GPU);
        struct mem_options mo = {vo->paper, g ? g->context_bytes : 0};
        if (bad) {
            snprintf(why, sizeof why, "invalid configuration: %s", bad);
            skip = why;
        } else {
            if (mo.paper || c.stack == STACK_COLOSSAL)
                plan_chunk(&p);
            struct mem_prepared mp;
            struct mem_estimate e;
            memmodel_prepare(&p, &c, &mo, &mp);
            memmodel_eval(&p, &c, &mo, &mp, &e);
            bool ok;
            double bytes = metric_bytes(out->metric, &e, &mp, &ok);
            int bind = vo->rules ? rules_bind(vo->rules, &p) : -1;
            int set = bind >= 0 ? rules_prepare(vo->rules, bind, &p, &c) : -1;
            uint64_t rp;
            int cand;
            if (ok && set >= 0 && rules_eval(vo->rules, set, &p, &c, &e, &rp, &cand))
                bytes = (double)rp - ((double)e.device - bytes); /* back to the row's metric */
            snprintf(out->phase, sizeof out->phase, "%s", mem_phase_name(e.peak_phase));
            if (!ok) {
                snprintf(why, sizeof why, "metric '%s' is unknown", out->metric);
                skip = why;
            }
            out->predicted_gib = bytes / (double)GIB;
        }
        plan_free(&p);
    }
    if (skip) {
        snprintf(out->status, sizeof out->status, "skipped: %.140s", skip);
        return;
    }
    out->error_pct = 100.0 * (out->predicted_gib - out->measured_gib) / out->measured_gib;
    snprintf(out->status, sizeof out->status, "ok");
}

static void row_identity(const struct csv_table *t, size_t r, struct validate_row *out)
{
    memset(out, 0, sizeof *out);
    out->file = t->path;
    out->line = t->lines[r];
    snprintf(out->id, sizeof out->id, "%s", cell(t, r, "id"));
    snprintf(out->model, sizeof out->model, "%s", cell(t, r, "model"));
    snprintf(out->metric, sizeof out->metric, "%s", cell(t, r, "metric"));
    snprintf(out->grade, sizeof out->grade, "%s", cell(t, r, "grade"));
    /* group rows by the id's prefix (LGCH-01 -> LGCH) when ids exist, else by source */
    const char *dash = strrchr(out->id, '-');
    if (out->id[0] && dash)
        snprintf(out->source, sizeof out->source, "%.*s", (int)(dash - out->id), out->id);
    else
        snprintf(out->source, sizeof out->source, "%s", cell(t, r, "source"));
}

long validate_file(const char *path, const struct validate_opts *vo, struct validate_row *rows,
                   size_t max, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    if (csv_table_require(&t, required, e) != 0) {
        csv_table_free(&t);
        return -1;
    }
    size_t n = 0;
    for (size_t r = 0; r < t.nrows && n < max; r++) {
        struct validate_row *out = &rows[n];
        row_identity(&t, r, out);
        out->file = path;
        const char *status = cell(&t, r, "status");
        if (*status && strcmp(status, "ok") != 0) {
            snprintf(out->status, sizeof out->status, "skipped: measurement status '%.100s'", status);
        } else if (csv_get_f64(&t, r, csv_table_col(&t, "measured_gib"), 1e-6, 1e6,
                               &out->measured_gib, e) != 0) {
            csv_table_free(&t);
            return -1;
        } else {
            predict_row(&t, r, vo, out);
        }
        n++;
    }
    csv_table_free(&t);
    return (long)n;
}
