/* options.c: command-line parsing for the sweep and explain (see options.h). */
#include "options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "error.h"
#include "units.h"


static int parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno || v < lo || v > hi)
        return -1;
    *out = (int32_t)v;
    return (int)(end - s);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int options_parse_int_list(const char *s, int32_t lo, int32_t hi, struct int_list *out)
{
    out->n = 0;
    while (*s) {
        int32_t a, b;
        int n = parse_i32(s, lo, hi, &a);
        if (n <= 0)
            return -1;
        s += n;
        b = a;
        if (s[0] == '.' && s[1] == '.') {
            n = parse_i32(s + 2, lo, hi, &b);
            if (n <= 0 || b < a)
                return -1;
            s += 2 + n;
        }
        if ((int64_t)b - a + out->n >= OPT_LIST_MAX)
            return -1;
        for (int32_t v = a; v <= b; v++)
            out->v[out->n++] = v;
        if (*s == ',') {
            if (*++s == '\0')
                return -1;
        } else if (*s) {
            return -1;
        }
    }
    if (out->n == 0)
        return -1;
    qsort(out->v, (size_t)out->n, sizeof out->v[0], cmp_i32);
    int w = 1;
    for (int i = 1; i < out->n; i++)
        if (out->v[i] != out->v[w - 1])
            out->v[w++] = out->v[i];
    out->n = w;
    return 0;
}

/* A comma list of names into values (in command-line order, without repeats). */
static int parse_names(const char *s, int (*parse)(const char *), int *vals, int max, int *n)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        int v = parse(p);
        if (v < 0)
            return -1;
        bool seen = false;
        for (int i = 0; i < *n; i++)
            seen |= vals[i] == v;
        if (!seen) {
            if (*n == max)
                return -1;
            vals[(*n)++] = v;
        }
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int targets_list(const char *s, struct options *o)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    o->axes.ntargets = 0;
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (o->axes.ntargets == 16 || targets_parse(p, &o->axes.targets[o->axes.ntargets]) != 0)
            return -1;
        o->axes.ntargets++;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int parse_format(const char *s, enum out_format *f)
{
    static const char *const names[] = {"auto", "table", "csv", "json", "html", "text"};
    for (int i = 0; i < 6; i++)
        if (strcmp(s, names[i]) == 0) {
            *f = (enum out_format)i;
            return 0;
        }
    return -1;
}

static int parse_shard(const char *s, struct options *o)
{
    int32_t k, n;
    int a = parse_i32(s, 1, 1 << 20, &k);
    if (a <= 0 || s[a] != '/')
        return -1;
    int b = parse_i32(s + a + 1, 1, 1 << 20, &n);
    if (b <= 0 || s[a + 1 + b] || k > n)
        return -1;
    o->shard_k = k;
    o->shard_n = n;
    return 0;
}

/* --margin auto|PCT: auto is -1; PCT a percentage in [0, 1000]. */
static int parse_margin(const char *v, double *pct)
{
    char *end;
    if (!strcmp(v, "auto"))
        return *pct = -1, 0;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0 && x <= 1000))
        return -1;
    *pct = x;
    return 0;
}

/* One option with its value; returns 0, 1 when the option is unknown, or EXIT_USAGE. */
static int apply_value(struct options *o, const char *name, const char *v)
{
    int rc = 0, tmp;
    int32_t i32 = 0;
    if (!strcmp(name, "--budget"))
        rc = units_parse_size(v, &o->budget);
    else if (!strcmp(name, "--base")) {
        rc = units_parse_size(v, &o->base);
        o->base_set = rc == 0;
    } else if (!strcmp(name, "--gpu"))
        o->gpu = v;
    else if (!strcmp(name, "--model")) {
        if (o->nmodels == OPT_MODELS_MAX)
            return usage_error(NULL, "too many --model options");
        o->models[o->nmodels++] = v;
    } else if (!strcmp(name, "--methods") || !strcmp(name, "--method"))
        rc = parse_names(v, method_parse, o->axes.methods, METHOD_COUNT, &o->axes.nmethods);
    else if (!strcmp(name, "--gpus"))
        rc = options_parse_int_list(v, 1, 4096, &o->axes.gpus);
    else if (!strcmp(name, "--tp"))
        rc = options_parse_int_list(v, 1, 4096, &o->axes.tp);
    else if (!strcmp(name, "--ep"))
        rc = options_parse_int_list(v, 1, 4096, &o->axes.ep);
    else if (!strcmp(name, "--pp"))
        rc = options_parse_int_list(v, 2, 4096, &o->axes.pp);
    else if (!strcmp(name, "--pp-microbatches")) {
        rc = parse_i32(v, 1, 65536, &i32) > 0 && !v[strspn(v, "0123456789")] ? 0 : -1;
        o->axes.pp_microbatches = i32;
    } else if (!strcmp(name, "--offload")) {
        tmp = offload_parse(v);
        rc = tmp <= OFFLOAD_NONE ? -1 : 0;
        o->axes.offload = tmp <= OFFLOAD_NONE ? o->axes.offload : (enum offload_mode)tmp;
    }
    else if (!strcmp(name, "--batch") || !strcmp(name, "--micro-batch"))
        rc = options_parse_int_list(v, 1, 65536, &o->axes.batch);
    else if (!strcmp(name, "--seq"))
        rc = options_parse_int_list(v, 2, 1 << 20, &o->axes.seq);
    else if (!strcmp(name, "--lora-r"))
        rc = options_parse_int_list(v, 1, 65536, &o->axes.lora_r);
    else if (!strcmp(name, "--precision"))
        rc = parse_names(v, precision_parse, o->axes.precisions, PREC_COUNT, &o->axes.nprecisions);
    else if (!strcmp(name, "--finetune"))
        rc = parse_names(v, finetune_parse, o->axes.finetunes, FT_COUNT, &o->axes.nfinetunes);
    else if (!strcmp(name, "--quant"))
        rc = parse_names(v, quant_parse, o->axes.quants, QUANT_COUNT, &o->axes.nquants);
    else if (!strcmp(name, "--optimizer"))
        rc = parse_names(v, optimizer_parse, o->axes.optimizers, OPT_COUNT, &o->axes.noptimizers);
    else if (!strcmp(name, "--grad-ckpt")) {
        rc = parse_names(v, ckpt_mode_parse, o->axes.ckpts, CKPT_COUNT, &o->axes.nckpts);
    } else if (!strcmp(name, "--lora-targets"))
        rc = targets_list(v, o);
    else if (!strcmp(name, "--stack")) {
        tmp = stack_parse(v);
        rc = tmp < 0 ? -1 : 0;
        o->axes.stack = tmp < 0 ? o->axes.stack : (enum stack)tmp;
    } else if (!strcmp(name, "--attention")) {
        rc = strcmp(v, "sdpa") && strcmp(v, "eager") ? -1 : 0;
        o->axes.eager = !strcmp(v, "eager");
    } else if (!strcmp(name, "--rank")) {
        rc = strcmp(v, "speed") && strcmp(v, "llmem") ? -1 : 0;
        o->rank = !strcmp(v, "llmem") ? RANK_LLMEM : RANK_SPEED;
    } else if (!strcmp(name, "--rules"))
        o->rules = v;
    else if (!strcmp(name, "--data")) {
        /* the data shape; any other value keeps the older meaning, the catalog folder */
        tmp = data_shape_parse(v);
        if (tmp >= 0)
            o->axes.data = (enum data_shape)tmp;
        else
            o->data_dir = v;
    } else if (!strcmp(name, "--catalog"))
        o->data_dir = v;
    else if (!strcmp(name, "--alloc-conf")) {
        tmp = alloc_conf_parse(v);
        rc = tmp < 0 ? -1 : 0;
        o->axes.alloc = tmp < 0 ? o->axes.alloc : (enum alloc_conf)tmp;
    }
    else if (!strcmp(name, "--margin"))
        rc = parse_margin(v, &o->margin_pct);
    else if (!strcmp(name, "--objective")) {
        tmp = objective_parse(v);
        rc = tmp < 0 ? -1 : 0;
        o->objective = tmp < 0 ? o->objective : tmp;
    } else if (!strcmp(name, "--tokens")) {
        char *end;
        double t = strtod(v, &end);
        rc = end == v || *end || !(t >= 1 && t <= 1e18) ? -1 : 0;
        o->tokens = rc ? o->tokens : t;
    } else if (!strcmp(name, "--recipes")) {
        rc = strcmp(v, "default") && strcmp(v, "all") ? -1 : 0;
        o->all_recipes = !strcmp(v, "all");
    }
    else if (!strcmp(name, "--top")) {
        rc = parse_i32(v, 0, INT32_MAX, &i32) > 0 && !v[strspn(v, "0123456789")] ? 0 : -1;
        o->top = i32;
    } else if (!strcmp(name, "--gpus-per-node")) {
        rc = parse_i32(v, 1, 4096, &i32) > 0 && !v[strspn(v, "0123456789")] ? 0 : -1;
        o->axes.gpus_per_node = i32;
    } else if (!strcmp(name, "--threads")) {
        rc = parse_i32(v, 1, 4096, &i32) > 0 && !v[strspn(v, "0123456789")] ? 0 : -1;
        o->threads = i32;
    } else if (!strcmp(name, "--shard"))
        rc = parse_shard(v, o);
    else if (!strcmp(name, "--format"))
        rc = parse_format(v, &o->format);
    else if (!strcmp(name, "--out")) {
        if (o->nouts == OPT_OUTS_MAX)
            return usage_error(NULL, "at most 4 --out files");
        o->outs[o->nouts++] = v;
    } else
        return 1;
    return rc ? usage_error(NULL, "invalid value '%s' for %s", v, name) : 0;
}

static int apply_flag(struct options *o, const char *name)
{
    if (!strcmp(name, "--all"))
        o->all = true;
    else if (!strcmp(name, "--no-prune"))
        o->no_prune = true;
    else if (!strcmp(name, "--quiet"))
        o->quiet = true;
    else if (!strcmp(name, "--progress"))
        o->progress = true;
    else if (!strcmp(name, "--paper"))
        o->paper = true;
    else if (!strcmp(name, "--stamp"))
        o->stamp = true;
    else
        return 1;
    return 0;
}

int options_parse(int argc, char **argv, int first, enum options_mode mode, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->top = 50;
    o->axes.stack = STACK_HF;
    o->margin_pct = -1; /* auto */
    o->axes.offload = OFFLOAD_OPTIMIZER;
    o->tokens = ANSWER_TOKENS_DEFAULT;
    for (int i = first; i < argc; i++) {
        char name[64];
        const char *arg = argv[i], *eq = strchr(arg, '='), *val = NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            options_usage(mode);
            return -1;
        }
        if (strncmp(arg, "--", 2) != 0)
            return usage_error(NULL, "unexpected argument '%s'", arg);
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            return usage_error(NULL, "unknown option '%s'", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        if (!eq && apply_flag(o, name) == 0)
            continue;
        val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val)
            return usage_error(NULL, "option %s needs a value", name);
        int rc = apply_value(o, name, val);
        if (rc == 1)
            return usage_error(NULL, "unknown option '%s'", name);
        if (rc)
            return rc;
    }
    if ((o->shard_n > 0) + (mode == OPTIONS_EXPLAIN) > 1)
        return usage_error(NULL, "explain takes no --shard");
    return 0;
}

/* The recipes people run (README "Default recipes"): bf16 mixed precision with AdamW, full
 * fine-tuning, LoRA and QLoRA (r16 on every linear layer, NF4 base for QLoRA) at today's
 * SFT sequence lengths. --recipes all is the full cross product of the recipe axes. */
static void default_recipe_axes(struct options *o)
{
    if (!o->axes.seq.n)
        options_parse_int_list(o->all_recipes ? "512,1024,2048,4096" : "2048,4096,8192", 2,
                               1 << 20, &o->axes.seq);
    if (!o->axes.nprecisions) {
        for (int p = 0; p < PREC_COUNT; p++)
            if (o->all_recipes || p == PREC_BF16)
                o->axes.precisions[o->axes.nprecisions++] = p;
    }
    if (!o->axes.nfinetunes)
        for (int f = 0; f < FT_COUNT; f++)
            o->axes.finetunes[o->axes.nfinetunes++] = f;
    if (!o->axes.nquants) {
        o->axes.quants[o->axes.nquants++] = QUANT_NONE;
        o->axes.quants[o->axes.nquants++] = QUANT_NF4;
    }
    if (!o->axes.noptimizers)
        for (int p = 0; p < OPT_COUNT; p++)
            if (o->all_recipes || p == OPT_ADAMW)
                o->axes.optimizers[o->axes.noptimizers++] = p;
}

void options_default_axes(struct options *o)
{
    static const char *const batch = "1,2,4,8,16,32,64,128,256,512,1024";
    if (!o->axes.nmethods) /* --paper: LLMem's five methods, the ones its equations cover */
        for (int m = 0; m < (o->paper ? METHOD_ZERO1 : METHOD_COUNT); m++)
            o->axes.methods[o->axes.nmethods++] = m;
    if (!o->axes.gpus.n)
        options_parse_int_list("1,2,4,8,16,32,64", 1, 4096, &o->axes.gpus);
    if (!o->axes.batch.n)
        options_parse_int_list(batch, 1, 65536, &o->axes.batch);
    if (!o->axes.lora_r.n)
        options_parse_int_list("16", 1, 65536, &o->axes.lora_r);
    default_recipe_axes(o);
    if (!o->axes.nckpts) {
        o->axes.ckpts[o->axes.nckpts++] = CKPT_ON;
        o->axes.ckpts[o->axes.nckpts++] = CKPT_OFF;
    }
    if (!o->axes.ntargets)
        o->axes.targets[o->axes.ntargets++] = TARGETS_ALL;
    if (o->paper) { /* the paper's regime: fp16 mixed, full, checkpointing, Adam */
        o->axes.nprecisions = o->axes.nfinetunes = o->axes.nckpts = o->axes.noptimizers = 1;
        o->axes.precisions[0] = PREC_FP16;
        o->axes.finetunes[0] = FT_FULL;
        o->axes.ckpts[0] = CKPT_ON;
        o->axes.optimizers[0] = OPT_ADAMW;
        o->axes.stack = STACK_COLOSSAL;
    }
}

void options_usage(enum options_mode mode)
{
    if (mode == OPTIONS_EXPLAIN) {
        fputs("usage: llmem-sweep explain --model NAME|PATH [options]\n"
              "Every memory term, the peak phase and the step time of one configuration.\n"
              "  --method M         single|cdp|adp|tp|dp+tp|zero1|zero2|pp|offload (default single)\n"
              "  --gpus N           GPU count (default 1; 2 for multi-GPU methods)\n"
              "  --tp N             TP degree for dp+tp (default 2; tp = gpus for tp; 1 for pp)\n"
              "  --pp N             pipeline stages for pp (default 2)\n"
              "  --micro-batch N    per-GPU micro-batch (default 1)\n"
              "  --seq N            sequence length (default 512)\n", stdout);
    } else {
        fputs("usage: llmem-sweep [options] [--out FILE]...\n"
              "       llmem-sweep COMMAND [options]   (COMMAND --help for its options)\n"
              "Sweeps fine-tuning recipes (what is trained) and, per recipe, ranks the layouts\n"
              "(how it runs) that fit the budget, fastest first.\n"
              "Commands:\n"
              "  explain            one configuration: every memory term, the peak, the time\n"
              "  validate           predict measured rows; error per row and summary\n"
              "  fit                fit peak-type rules from measurements\n"
              "  models | gpus      list the catalogs\n"
              "  devices            GPUs seen through the CUDA runtime\n"
              "  merge              combine --shard CSVs into one report\n"
              "  diff OLD NEW       what changed between two ranked CSVs (nightly jobs)\n"
              "Options:\n"
              "  --methods LIST     single,cdp,adp,tp,dp+tp,zero1,zero2,pp,offload (default all)\n"
              "  --gpus LIST        GPU counts (default 1,2,4,8,16,32,64)\n"
              "  --tp LIST          TP degrees of dp+tp and pp (default every divisor)\n"
              "  --pp LIST          pipeline stages of pp (default every divisor >= 2)\n"
              "  --batch LIST       per-GPU micro-batches (default powers of 2 up to 1024)\n"
              "  --seq LIST         sequence lengths (default 2048,4096,8192)\n"
              "  --recipes R        default (bf16 mixed, AdamW; full, LoRA and QLoRA r16 on\n"
              "                     all linear layers; seq 2048,4096,8192) or all (every\n"
              "                     precision and optimizer, seq 512,1024,2048,4096); the\n"
              "                     recipe options below override either\n"
              "  --top N            layouts ranked per recipe (default 50; 0 = all fitting)\n"
              "  --objective O      best layout in the per-recipe summaries: throughput\n"
              "                     (default: tokens/s of the job), per-gpu (tokens/s per GPU)\n"
              "                     or min-gpus (the fewest GPUs, then the fastest)\n"
              "  --tokens N         training tokens for the time and GPU-hour estimates\n"
              "                     (default 1e9)\n"
              "  --all              also keep non-fitting points (implies --no-prune)\n"
              "  --no-prune         evaluate every point (same fitting set, slower)\n"
              "  --threads N        worker threads (default: all cores)\n"
              "  --gpus-per-node N  GPUs per node (default 8); collectives beyond a node use\n"
              "                     the inter-node link (gpus.csv internode_gbs)\n"
              "  --shard K/N        evaluate the K-th of N slices; combine with `merge`\n"
              "  --rank speed|llmem rank by throughput (default) or LLMem's Algorithm 1\n"
              "  --format F         table|csv|json|html (default from --out's extension)\n"
              "  --out FILE         write the report (repeatable: one file per format)\n"
              "  --quiet, --progress  progress line on stderr (default: only on a terminal)\n",
              stdout);
    }
    fputs("  --model NAME|PATH  catalog HF id or config.json (file or folder); repeatable\n"
          "  --budget SIZE      per-GPU memory: 80GiB, 81920MiB, 85.9GB, 16384MB\n"
          "                     (MB = 10^6 bytes, MiB = 2^20; default: the GPU's memory)\n"
          "  --gpu NAME         datasets/gpus.csv entry (default: local GPU, else H100-SXM-80GB)\n"
          "  --base SIZE        m_base: CUDA context and workspaces (default: the GPU's)\n"
          "  --precision LIST   fp32,fp16,bf16,bf16-pure (sweep default bf16)\n"
          "  --finetune LIST    full,lora,qlora\n"
          "  --quant LIST       none,int8,nf4,nf4-dq (frozen base; qlora implies nf4)\n"
          "  --lora-r LIST      LoRA ranks (default 16)\n"
          "  --lora-targets L   attn,mlp,all or modules joined by '+' (q+k+v+o+gate+up+down+head)\n"
          "  --grad-ckpt LIST   on,off,selective (selective: op-level SAC, as torchtitan)\n"
          "  --optimizer LIST   adamw,adamw8bit,sgd (sweep default adamw)\n"
          "  --ep LIST          expert-parallel degrees for MoE models (default 1): experts\n"
          "                     sharded over ep ranks of the data-parallel group\n"
          "  --offload WHAT     method offload keeps in host memory: optimizer (default; fp32\n"
          "                     master weights, states, gradients) or params (also the weights)\n"
          "  --pp-microbatches N  micro-batches of one pipelined step (default 4 x pp)\n"
          "  --stack NAME       hf (default; transformers >= 4.49), hf-4.46 (4.46-4.48),\n"
          "                     hf-4.31 (4.31-4.45), litgpt, torchtune, torchtitan, colossal\n"
          "  --attention A      sdpa (default) or eager\n"
          "  --paper            LLMem's equations exactly (fp16, full, checkpointing, Adam)\n"
          "  --rules PATH       measured peak-type rules (a rules CSV or a folder of them)\n"
          "  --data SHAPE       variable (default: unpacked batches padded to their longest\n"
          "                     sample, lengths up to --seq) or packed (every batch --seq long)\n"
          "  --alloc-conf A     default or expandable (PYTORCH_CUDA_ALLOC_CONF=\n"
          "                     expandable_segments:True)\n"
          "  --catalog DIR      folder with models.csv, gpus.csv and band.csv (--data DIR also works)\n"
          "  --margin M         what fits: auto (default: the error band's upper end fits the\n"
          "                     budget), PCT (the prediction + PCT %), 0 (the prediction alone)\n"
          "Exit codes: 0 ok, 1 nothing fits, 2 usage, 3 bad input file, 4 I/O error.\n",
          stdout);
}

void options_report_inputs(const struct options *o, struct report_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->axes = o->axes;
    in->models = o->models;
    in->nmodels = o->nmodels;
    in->outs = o->outs;
    in->nouts = o->nouts;
    in->format_html = o->format == FORMAT_HTML;
    in->budget = o->budget;
    in->base = o->base;
    in->base_set = o->base_set;
    in->top = o->top;
    in->all = o->all;
    in->no_prune = o->no_prune;
    in->paper = o->paper;
    in->llmem_rank = o->rank == RANK_LLMEM;
    in->stamp = o->stamp;
    in->shard_k = o->shard_k;
    in->shard_n = o->shard_n;
    in->rules = o->rules;
    in->margin_pct = o->margin_pct;
    in->objective = (enum objective)o->objective;
    in->tokens = o->tokens;
    in->command = o->command;
}
