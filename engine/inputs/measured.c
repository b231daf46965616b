/* measured.c: measured-CSV rows as configurations (see measured.h). */
#include "measured.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "losspath.h"
#include "model_source.h"

const char *const measured_columns[] = {
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune", "lora_r",
    "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib", "gpu",
    "framework", "source", NULL,
};

const char *measured_cell(const struct csv_table *t, size_t r, const char *col)
{
    int c = csv_table_col(t, col);
    return c >= 0 ? t->cells[r][c] : "";
}

int measured_row_widths(const struct csv_table *t, size_t r, int32_t seq_len, uint32_t *w,
                        size_t max, struct input_error *e)
{
    const int k = csv_table_col(t, "widths");
    const char *s = k >= 0 ? t->cells[r][k] : "";
    size_t n = 0;
    while (*s) {
        char *end;
        errno = 0;
        const unsigned long v = strtoul(s, &end, 10);
        if (end == s || !isdigit((unsigned char)*s) || errno || v < 1 || v > (unsigned long)seq_len ||
            (*end && *end != '/') || (*end == '/' && !end[1]))
            return csv_cell_error(t, r, k, e, "a width is a whole number of tokens from 1 to "
                                  "seq_len (%d), '/'-separated", (int)seq_len);
        if (n == max)
            return csv_cell_error(t, r, k, e, "more than %zu steps", max);
        w[n++] = (uint32_t)v;
        s = *end ? end + 1 : end;
    }
    return (int)n;
}

int measured_row_run(const struct csv_table *t, size_t r, struct train_config *c, uint32_t *w,
                     size_t max, struct input_error *e)
{
    const int n = measured_row_widths(t, r, c->seq_len, w, max, e);
    if (n <= 0)
        return n;
    if (c->data != DATA_VARIABLE) /* every step of a packed run is seq_len long */
        return csv_cell_error(t, r, csv_table_col(t, "widths"), e,
                              "step widths belong to a variable-length run; this row's data are packed");
    uint32_t longest = 0;
    for (int i = 0; i < n; i++)
        longest = w[i] > longest ? w[i] : longest;
    c->seq_len = (int32_t)longest;
    return n;
}

bool measured_row_before_grads(const struct csv_table *t, size_t r)
{
    const char *pt = measured_cell(t, r, "peak_type");
    return pt[0] && !pt[1] && strchr("BCD", pt[0]) != NULL;
}

/* The `features` column (datasets/measured/README.md): stack behaviours the row adds (or,
 * like no-accum, removes from the stack's defaults).
 * Returns NULL, or why the model cannot represent the row. Flags that only describe the
 * measurement (active, metric-guess, packed, ...) change nothing. */
static const char *apply_features(const char *list, struct train_config *c)
{
    static const struct {
        const char *name;
        uint64_t set, clear;
        const char *unsupported;
    } table[] = {
        {"chunked-ce", FEAT_CHUNKED_CE, 0, NULL},  {"untied-head", FEAT_UNTIED_HEAD, 0, NULL},
        {"opt-in-bwd", FEAT_OPT_IN_BWD, 0, NULL},  {"paged", FEAT_PAGED_OPT, 0, NULL},
        {"fsdp", FEAT_FSDP, 0, NULL},
        /* FSDP1 (FullyShardedDataParallel, flat parameters) under a stack whose default is
         * FSDP2, e.g. torchtune's recipes before they moved to fully_shard */
        {"fsdp1", FEAT_FSDP_FLAT, 0, NULL},
        /* FSDP2 (fully_shard) under a stack whose default is FSDP1 (the hf stacks): no flat
         * parameters (the measurement harness's adp rows without a MixedPrecisionPolicy) */
        {"fsdp2", FEAT_FSDP, FEAT_FSDP_FLAT, NULL},
        /* FSDP1 units of whole blocks, LoRA's adapters inside (train.h train_mixed_units):
         * no peft fsdp_auto_wrap_policy (our harness before its fsdp1_policy note) */
        {"fsdp1-mixed-units", FEAT_FSDP_MIXED_UNITS, 0, NULL},
        {"fused", FEAT_FUSED_OPT, 0, NULL},        {"unfused-adamw", 0, FEAT_FUSED_OPT, NULL},        {"grad-accum", FEAT_GRAD_ACCUM, 0, NULL},
        {"no-accum", 0, FEAT_GRAD_ACCUM, NULL},    {"compile", FEAT_COMPILE, 0, NULL},
        {"logits-kept", FEAT_LOGITS_KEPT, 0, NULL},
        {"longest-first", FEAT_LONGEST_FIRST, 0, NULL},
        {"bnb-input-kept", FEAT_BNB_INPUT_KEPT, 0, NULL},
        {"seq-parallel", FEAT_SEQ_PARALLEL, 0, NULL},
        {"outputs-kept", FEAT_OUTPUTS_KEPT, 0, NULL},
        {"outputs-until-step", FEAT_OUTPUTS_UNTIL_STEP, 0, NULL},
        /* FSDP1 moved CPU-resident units and its wrap's cache stayed (fsdpwrap.h) */
        {"cpu-init", FEAT_WRAP_CACHE, 0, NULL},
        {"sync-states", FEAT_SYNC_STATES, 0, NULL},
        {"compiled-loss", FEAT_COMPILED_LOSS, 0, NULL},
        {"fsdp-end-units", FEAT_FSDP_END_UNITS, 0, NULL},
        {"empty-cache", FEAT_EMPTY_CACHE, 0, NULL},
        {"empty-cache-10", FEAT_EMPTY_CACHE | FEAT_EMPTY_CACHE_10, 0, NULL},
        {"ds-default-buckets", FEAT_DS_DEFAULT_BUCKETS, 0, NULL},
        {"fsdp-fp32-reduce", FEAT_FSDP_FP32_REDUCE, 0, NULL},
        /* FSDP2's MixedPrecisionPolicy(param_dtype=bf16) instead of autocast: the gathered
         * parameters are the 16-bit copies and no autocast runs (train.h FEAT_FSDP_MP; the
         * measurement harness's adp rows, datasets/measure/measure_worker.py parallelize) */
        {"fsdp-mp", FEAT_FSDP | FEAT_FSDP_MP, 0, NULL},
        {"lora-dropout", FEAT_LORA_DROPOUT, 0, NULL},
        /* one rank of PyTorch's fake process group: no NCCL buffers (train.h FEAT_FAKE_PG) */
        {"fake-pg", FEAT_FAKE_PG, 0, NULL},
        /* PEFT 0.7 (update_layer: self.to(weight.device, dtype=weight.dtype)) keeps the
         * adapters in the base dtype; PEFT's later autocast_adapter_dtype upcasts them */
        {"adapter-bf16", 0, FEAT_ADAPTER_FP32, NULL},
        /* how the script prepared its k-bit base (train.h FEAT_KBIT_PREP, FEAT_KBIT_TRL):
         * PEFT's prepare_model_for_kbit_training, or nothing (TRL >= 0.26, a script that
         * skips it) */
        {"kbit-prep", FEAT_KBIT_PREP, FEAT_KBIT_TRL, NULL},
        /* HF Trainer / TRL use_liger_kernel=True (losspath.c LOSS_LIGER) */
        {"liger", FEAT_LIGER_FLCE, 0, NULL},
        /* torch pipelining's ScheduleInterleaved1F1B (train.h FEAT_PP_INTERLEAVED) */
        {"pp-interleaved", FEAT_PP_INTERLEAVED, 0, NULL},
        {"no-kbit-prep", 0, FEAT_KBIT_PREP | FEAT_KBIT_TRL, NULL},
        /* transformers <= 4.39's per-layer rotary cos/sin tables (train.h FEAT_ROPE_TABLES) */
        {"rope-tables", FEAT_ROPE_TABLES, FEAT_ROPE_TABLES_FP32, NULL},
        {"rope-tables-fp32", FEAT_ROPE_TABLES | FEAT_ROPE_TABLES_FP32, 0, NULL},
        {"act-offload", 0, 0, "activation offloading to CPU is not modelled"},
        {"selective-ac", 0, 0, "selective (per-op) activation checkpointing is not modelled"},
        /* --precision fp8 rows (datasets/measured/README.md): torchao's float8 all-gather
         * and rowwise scaling recipe; MX block scaling is not modelled. A `float8` flag on a
         * row that does not say fp8 in its precision column stays unmodelled. */
        {"fp8-allgather", FEAT_FP8_ALLGATHER, 0, NULL},
        {"fp8-rowwise", FEAT_FP8_ROWWISE, 0, NULL},
        {"mxfp8", 0, 0, "MX (mxfp8 block-scaled) linears are not modelled"},
        {"float8", 0, 0, "float8 linears are not modelled"},
        {"rocm", 0, 0, "AMD GPUs (ROCm's allocator and kernels) are not modelled"},
        {"context-parallel", 0, 0, "context parallelism is not modelled"},
        {"pipeline-parallel", 0, 0, "pipeline parallelism is not modelled"},
        /* CPU offload is method offload (adp-offload rows: row_enums); the flag only
         * describes it */
        {"cpu-offload", 0, 0, NULL},
        {"dora", 0, 0, "DoRA is not modelled"},
    };
    while (*list) {
        size_t len = strcspn(list, "+");
        if (len == 12 && !strncmp(list, "double-quant", len) && c->quant == QUANT_NF4)
            c->quant = QUANT_NF4_DQ;
        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
            if (strlen(table[i].name) != len || strncmp(list, table[i].name, len) != 0)
                continue;
            if (table[i].unsupported)
                return table[i].unsupported;
            c->features = (c->features | table[i].set) & ~table[i].clear;
        }
        list += len + (list[len] == '+');
    }
    return NULL;
}


static bool feature_listed(const char *list, const char *name);

/* The named fields of the row; returns NULL or the reason written into why. */
static const char *row_enums(const struct csv_table *t, size_t r, struct train_config *c,
                             char *why, size_t n)
{
    static const struct {
        const char *col;
        int (*parse)(const char *);
    } fields[] = {
        {"method", method_parse},   {"precision", precision_parse}, {"finetune", finetune_parse},
        {"quant", quant_parse},     {"optimizer", optimizer_parse}, {"grad_ckpt", ckpt_mode_parse},
    };
    int v[6];
    /* `adp-offload` (the collections' name for ZeRO-3 / FSDP with CPU offload of the
     * parameters and the optimizer) is method offload with --offload params */
    const bool adp_offload = !strcmp(measured_cell(t, r, "method"), "adp-offload");
    for (size_t i = 0; i < 6; i++)
        if (i == 0 && adp_offload)
            v[0] = METHOD_OFFLOAD;
        else if ((v[i] = fields[i].parse(measured_cell(t, r, fields[i].col))) < 0)
            return snprintf(why, n, "%s '%.60s' is not modelled", fields[i].col,
                            measured_cell(t, r, fields[i].col)), why;
    const char *stack = measured_cell(t, r, "stack");
    int st = *stack ? stack_parse(stack) : (int)STACK_HF;
    c->method = (enum method)v[0];
    c->offload = adp_offload ? OFFLOAD_PARAMS : c->method == METHOD_OFFLOAD ? OFFLOAD_OPTIMIZER : OFFLOAD_NONE;
    c->precision = (enum precision)v[1];
    c->finetune = (enum finetune)v[2];
    c->quant = (enum quant)v[3];
    c->optimizer = (enum optimizer)v[4];
    train_set_ckpt(c, v[5]);
    c->stack = st < 0 ? STACK_HF : (enum stack)st;
    c->features = stack_features(c->stack);
    if (!strcmp(measured_cell(t, r, "attention"), "eager"))
        c->features |= FEAT_EAGER_ATTN;
    else if (!strcmp(measured_cell(t, r, "attention"), "triton"))
        c->features |= FEAT_TRITON_ATTN;
    else if (!strcmp(measured_cell(t, r, "attention"), "flash"))
        c->features |= FEAT_FLASH_ATTN;
    /* a technique the model lacks says more than the name of a stack it does not know */
    const char *fr = apply_features(measured_cell(t, r, "features"), c);
    if (fr)
        return snprintf(why, n, "%s", fr), why;
    /* offload's gathers follow FSDP's units; DeepSpeed ZeRO-3 gathers by its own prefetch
     * and persistence thresholds (stage3_prefetch_bucket_size, stage3_max_live_parameters,
     * stage3_param_persistence_threshold) */
    if (adp_offload && feature_listed(measured_cell(t, r, "features"), "deepspeed"))
        return snprintf(why, n, "DeepSpeed ZeRO-3 offload's parameter prefetch is not modelled"), why;
    if (st < 0)
        return snprintf(why, n, "stack '%.60s' is unknown", stack), why;
    /* `outputs` is a transformers model's: TRL's compute_loss and the other stacks' loops
     * hold other logits-sized tensors (losspath.c kept_of) */
    const uint64_t kept = c->features & (FEAT_OUTPUTS_KEPT | FEAT_OUTPUTS_UNTIL_STEP);
    if (kept && !losspath_outputs_kept(c->stack))
        return snprintf(why, n, "%s is modelled on the transformers stacks without TRL (hf, hf-4.xx) "
                        "only, not '%.60s'", kept & FEAT_OUTPUTS_KEPT ? "outputs-kept" : "outputs-until-step",
                        stack), why;
    return NULL;
}

static int row_choice(const struct csv_table *t, size_t r, const char *col,
                      int (*parse)(const char *), int dflt, int *out, struct input_error *e);

/* Integers of the row: a malformed cell is an error (-1), an empty sequence length a skip. */
static int row_numbers(const struct csv_table *t, size_t r, struct train_config *c, char *why,
                       size_t n, struct input_error *e)
{
    int64_t g, tp, b, s, lr = 0;
    if (!*measured_cell(t, r, "seq_len")) {
        snprintf(why, n, "sequence length unknown");
        return 1;
    }
    if (csv_get_i64(t, r, csv_table_col(t, "gpus"), 1, 4096, &g, e) ||
        csv_get_i64(t, r, csv_table_col(t, "tp"), 1, 4096, &tp, e) ||
        csv_get_i64(t, r, csv_table_col(t, "micro_batch"), 1, 65536, &b, e) ||
        csv_get_i64(t, r, csv_table_col(t, "seq_len"), 2, 1 << 20, &s, e))
        return -1;
    if (c->finetune != FT_FULL && csv_get_i64(t, r, csv_table_col(t, "lora_r"), 1, 65536, &lr, e))
        return -1;
    /* extension columns: pp (pipeline stages, default 1) and pp_microbatches (default
     * 4 x pp, the command line's), offload (optimizer | params) for method offload */
    int64_t pp = 1, pm = 0;
    int k = csv_table_col(t, "pp");
    if (k >= 0 && *t->cells[r][k] && csv_get_i64(t, r, k, 1, 4096, &pp, e))
        return -1;
    k = csv_table_col(t, "pp_microbatches");
    if (k >= 0 && *t->cells[r][k] && csv_get_i64(t, r, k, 1, 65536, &pm, e))
        return -1;
    int off;
    if (c->method == METHOD_OFFLOAD &&
        row_choice(t, r, "offload", offload_parse, (int)c->offload, &off, e))
        return -1;
    if (c->method == METHOD_OFFLOAD)
        c->offload = (enum offload_mode)off;
    c->gpus = (int32_t)g;
    c->tp = (int32_t)tp;
    c->pp = (int32_t)pp;
    c->microbatches = pp > 1 ? (int32_t)(pm ? pm : 4 * pp) : 1;
    c->dp = (int32_t)(g / tp / pp);
    c->micro_batch = (int32_t)b;
    c->seq_len = (int32_t)s;
    c->lora_r = (int32_t)lr;
    return 0;
}

/* Whether name is one of the '+'-joined flags of list. */
static bool feature_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    while (*list) {
        size_t len = strcspn(list, "+");
        if (len == n && !strncmp(list, name, n))
            return true;
        list += len + (list[len] == '+');
    }
    return false;
}

/* A named extension column parsed by parse into *out; an absent column or empty cell gives
 * dflt. A value parse does not know is malformed input (file, line, column). */
static int row_choice(const struct csv_table *t, size_t r, const char *col,
                      int (*parse)(const char *), int dflt, int *out, struct input_error *e)
{
    int k = csv_table_col(t, col);
    const char *v = k >= 0 ? t->cells[r][k] : "";
    *out = *v ? parse(v) : dflt;
    if (*out < 0)
        return csv_cell_error(t, r, k, e, "unknown value '%.60s'", v);
    return 0;
}

/* The `data` and `alloc_conf` columns (datasets/measured/README.md). Without a `data`
 * column, a row whose every batch had seq_len tokens (seq_kind exact, or the `packed`
 * feature) is `packed`, any other `variable`; without `alloc_conf`, PyTorch's default. */
static int row_shape(const struct csv_table *t, size_t r, struct train_config *c,
                     struct input_error *e)
{
    bool fixed = feature_listed(measured_cell(t, r, "features"), "packed") ||
                 !strcmp(measured_cell(t, r, "seq_kind"), "exact");
    int d, a;
    if (row_choice(t, r, "data", data_shape_parse, fixed ? DATA_PACKED : DATA_VARIABLE, &d, e) ||
        row_choice(t, r, "alloc_conf", alloc_conf_parse, ALLOC_DEFAULT, &a, e))
        return -1;
    c->data = (enum data_shape)d;
    c->alloc = (enum alloc_conf)a;
    return 0;
}

int measured_row_config(const struct csv_table *t, size_t r,
                        int (*parse_targets)(const char *, uint32_t *), struct train_config *c,
                        char *why, size_t n, struct input_error *e)
{
    memset(c, 0, sizeof *c);
    if (row_shape(t, r, c, e) != 0)
        return -1;
    const char *status = measured_cell(t, r, "status");
    if (*status && strcmp(status, "ok") != 0)
        return snprintf(why, n, "measurement status '%.60s'", status), 1;
    if (row_enums(t, r, c, why, n))
        return 1;
    if (c->finetune != FT_FULL) {
        const char *tg = measured_cell(t, r, "lora_targets");
        if (parse_targets(tg, &c->lora_targets) != 0)
            return snprintf(why, n, "lora_targets '%.60s' is unknown", tg), 1;
    }
    return row_numbers(t, r, c, why, n, e);
}

void measured_model_path(const char *csv_path, const char *name, char *out, size_t n)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", csv_path);
    snprintf(out, n, "%s/%s", dirname(dir), name);
}

int measured_row_model(const char *csv_path, const char *name, const struct catalog *cat,
                       struct model_spec *m, struct input_error *e)
{
    const struct model_spec *c = catalog_find_model(cat, name);
    if (c) {
        *m = *c;
        return 0;
    }
    char path[2048];
    measured_model_path(csv_path, name, path, sizeof path);
    if (access(path, F_OK) != 0)
        return 1;
    return model_source_load(cat, path, m, e); /* there, but broken: exit 3, not a skipped row */
}
