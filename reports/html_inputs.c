/* html_inputs.c: "the question" section of the HTML report: models, GPU, budget, stack,
 * the axes of the sweep, the rules, the version, and a command line that asks the same
 * question again. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "html_escape.h"
#include "html_page.h"
#include "units.h"

static const char *name_method(int v) { return method_name((enum method)v); }
static const char *name_precision(int v) { return precision_name((enum precision)v); }
static const char *name_finetune(int v) { return finetune_name((enum finetune)v); }
static const char *name_quant(int v) { return quant_name((enum quant)v); }
static const char *name_optimizer(int v) { return optimizer_name((enum optimizer)v); }

/* "1..4,8": runs of three or more consecutive values print as ranges, as --batch takes */
static void print_ints(FILE *f, const struct int_list *l, const char *sep)
{
    for (int i = 0; i < l->n;) {
        int j = i;
        while (j + 1 < l->n && l->v[j + 1] == l->v[j] + 1)
            j++;
        fputs(i ? sep : "", f);
        if (j - i >= 2)
            fprintf(f, "%d..%d", (int)l->v[i], (int)l->v[j]);
        else if (j == i + 1)
            fprintf(f, "%d%s%d", (int)l->v[i], sep, (int)l->v[j]);
        else
            fprintf(f, "%d", (int)l->v[i]);
        i = j + 1;
    }
}

/* Lists print with sep: "," on the command line, ", " in prose. */
static void print_names(FILE *f, const int *v, int n, const char *(*name)(int), const char *sep)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? sep : "", name(v[i]));
}

static void print_targets(FILE *f, const struct report_inputs *opt, const char *sep)
{
    for (int i = 0; i < opt->axes.ntargets; i++) {
        char t[96];
        targets_format(opt->axes.targets[i], t, sizeof t);
        fprintf(f, "%s%s", i ? sep : "", t);
    }
}

static void print_ckpts(FILE *f, const struct report_inputs *opt, const char *sep)
{
    for (int i = 0; i < opt->axes.nckpts; i++)
        fprintf(f, "%s%s", i ? sep : "", ckpt_name((enum ckpt_mode)opt->axes.ckpts[i]));
}

/* A size as --budget takes it, exactly: the largest binary unit that divides it. */
static void print_size(FILE *f, uint64_t b)
{
    if (b && b % GIB == 0)
        fprintf(f, "%" PRIu64 "GiB", b / GIB);
    else if (b && b % (UINT64_C(1) << 20) == 0)
        fprintf(f, "%" PRIu64 "MiB", b >> 20);
    else
        fprintf(f, "%" PRIu64 "B", b);
}

/* One shell word, quoted when it holds anything but safe characters, then escaped. */
static void print_shell_word(FILE *f, const char *s)
{
    size_t n = strlen(s);
    if (n && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                       "._-/:=,+@%") == n) {
        html_text(f, s);
        return;
    }
    char *q = malloc(4 * n + 3), *w = q;
    if (!q)
        return;
    *w++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else {
            *w++ = *p;
        }
    }
    *w++ = '\'';
    *w = '\0';
    html_text(f, q);
    free(q);
}

static uint64_t budget_bytes(const struct report *r)
{
    if (r->meta.budget_bytes)
        return r->meta.budget_bytes;
    return r->meta.in ? r->meta.in->budget : 0;
}

static void print_axes_args(FILE *f, const struct report_inputs *opt)
{
    fputs(" --methods ", f);
    print_names(f, opt->axes.methods, opt->axes.nmethods, name_method, ",");
    fputs(" --gpus ", f);
    print_ints(f, &opt->axes.gpus, ",");
    if (opt->axes.tp.n) {
        fputs(" --tp ", f);
        print_ints(f, &opt->axes.tp, ",");
    }
    if (opt->axes.pp.n) {
        fputs(" --pp ", f);
        print_ints(f, &opt->axes.pp, ",");
    }
    if (opt->axes.pp_microbatches > 0)
        fprintf(f, " --pp-microbatches %d", opt->axes.pp_microbatches);
    if (opt->axes.offload == OFFLOAD_PARAMS)
        fputs(" --offload params", f);
    if (opt->axes.gpus_per_node > 0)
        fprintf(f, " --gpus-per-node %d", opt->axes.gpus_per_node);
    fputs(" --batch ", f);
    print_ints(f, &opt->axes.batch, ",");
    fputs(" --seq ", f);
    print_ints(f, &opt->axes.seq, ",");
    fputs(" --precision ", f);
    print_names(f, opt->axes.precisions, opt->axes.nprecisions, name_precision, ",");
    fputs(" --finetune ", f);
    print_names(f, opt->axes.finetunes, opt->axes.nfinetunes, name_finetune, ",");
    fputs(" --quant ", f);
    print_names(f, opt->axes.quants, opt->axes.nquants, name_quant, ",");
    fputs(" --lora-r ", f);
    print_ints(f, &opt->axes.lora_r, ",");
    fputs(" --lora-targets ", f);
    print_targets(f, opt, ",");
    fputs(" --grad-ckpt ", f);
    print_ckpts(f, opt, ",");
    fputs(" --optimizer ", f);
    print_names(f, opt->axes.optimizers, opt->axes.noptimizers, name_optimizer, ",");
}

static void print_mode_args(FILE *f, const struct report_inputs *opt)
{
    if (opt->axes.stack != STACK_HF && !opt->paper)
        fprintf(f, " --stack %s", stack_name(opt->axes.stack));
    if (opt->axes.liger)
        fputs(" --liger", f);
    if (opt->axes.paged)
        fputs(" --paged", f);
    if (opt->axes.pp_interleaved)
        fputs(" --pp-schedule interleaved", f);
    if (opt->axes.eager)
        fputs(" --attention eager", f);
    else if (opt->axes.flash)
        fputs(" --attention flash", f);
    if (opt->paper)
        fputs(" --paper", f);
    if (opt->llmem_rank)
        fputs(" --rank llmem", f);
    if (opt->base_set) {
        fputs(" --base ", f);
        print_size(f, opt->base);
    }
    if (opt->rules) {
        fputs(" --rules ", f);
        print_shell_word(f, opt->rules);
    }
    if (opt->axes.data != DATA_VARIABLE)
        fprintf(f, " --data %s", data_shape_name(opt->axes.data));
    if (opt->axes.alloc != ALLOC_DEFAULT)
        fprintf(f, " --alloc-conf %s", alloc_conf_name(opt->axes.alloc));
    if (opt->lengths) {
        fputs(" --lengths ", f);
        print_shell_word(f, opt->lengths);
    }
    fprintf(f, " --top %ld", opt->top);
    if (opt->all)
        fputs(" --all", f);
    else if (opt->no_prune)
        fputs(" --no-prune", f);
    if (opt->shard_n)
        fprintf(f, " --shard %d/%d", opt->shard_k, opt->shard_n);
}

/* The command line that asks the same question (axes after defaults, so it is explicit;
 * output paths, --catalog and --threads are left out: they do not change the answer). */
static void write_command(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_inputs *opt = o->r->meta.in;
    const struct report_meta *m = &o->r->meta;
    fputs("<dt>Command</dt><dd><pre class=\"cmd\">llmem-sweep --gpu ", f);
    print_shell_word(f, o->r->meta.gpu);
    /* --gpu makes the catalog memory the default budget: say --budget only when it differs */
    if (!m->budget_bytes || m->budget_bytes != m->gpu_memory_bytes) {
        fputs(" --budget ", f);
        print_size(f, budget_bytes(o->r));
    }
    for (int i = 0; i < opt->nmodels; i++) {
        fputs(" --model ", f);
        print_shell_word(f, opt->models[i]);
    }
    print_axes_args(f, opt);
    print_mode_args(f, opt);
    for (int i = 0; i < opt->nouts; i++) { /* the files this run wrote, beside each other */
        const char *slash = strrchr(opt->outs[i], '/');
        fputs(" --out ", f);
        print_shell_word(f, slash ? slash + 1 : opt->outs[i]);
    }
    if (!opt->nouts)
        fputs(" --format html", f);
    fputs("</pre></dd>\n", f);
}

static void write_models_input(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<dt>Models</dt><dd>", f);
    if (r->nmodels) {
        for (size_t i = 0; i < r->nmodels; i++) {
            fputs(i ? ", " : "", f);
            html_text(f, r->models[i].name);
        }
    } else {
        size_t shown = 0;
        for (size_t i = 0; i < r->nrows; i++) {
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = !strcmp(r->rows[j].model, r->rows[i].model);
            if (!seen) {
                fputs(shown++ ? ", " : "", f);
                html_text(f, r->rows[i].model);
            }
        }
        if (!shown)
            fputs("(none in the ranked rows)", f);
    }
    fputs("</dd>\n", f);
}

static void write_axes_input(FILE *f, const struct report_inputs *opt)
{
    fputs("<dt>Parallel methods</dt><dd>", f);
    print_names(f, opt->axes.methods, opt->axes.nmethods, name_method, ", ");
    fputs(" on ", f);
    print_ints(f, &opt->axes.gpus, ", ");
    fputs(" GPUs", f);
    if (opt->axes.tp.n) {
        fputs("; TP degrees ", f);
        print_ints(f, &opt->axes.tp, ", ");
    }
    fputs("</dd>\n<dt>Micro-batches per GPU</dt><dd>", f);
    print_ints(f, &opt->axes.batch, ", ");
    fputs("</dd>\n<dt>Sequence lengths</dt><dd>", f);
    print_ints(f, &opt->axes.seq, ", ");
    fputs(" tokens</dd>\n<dt>Precision</dt><dd>", f);
    print_names(f, opt->axes.precisions, opt->axes.nprecisions, name_precision, ", ");
    fputs("</dd>\n<dt>Fine-tuning</dt><dd>", f);
    print_names(f, opt->axes.finetunes, opt->axes.nfinetunes, name_finetune, ", ");
    fputs("; LoRA ranks ", f);
    print_ints(f, &opt->axes.lora_r, ", ");
    fputs(" on ", f);
    print_targets(f, opt, ", ");
    fputs("; frozen base ", f);
    print_names(f, opt->axes.quants, opt->axes.nquants, name_quant, ", ");
    fputs("</dd>\n<dt>Checkpointing, optimizer</dt><dd>", f);
    print_ckpts(f, opt, ", ");
    fputs("; ", f);
    print_names(f, opt->axes.optimizers, opt->axes.noptimizers, name_optimizer, ", ");
    fputs("</dd>\n<dt>Data</dt><dd>", f);
    if (opt->axes.data == DATA_PACKED) {
        fputs("packed batches: every step as long as its sequence length", f);
    } else if (opt->lengths) {
        fputs("variable-length batches, each padded to its longest sample; samples drawn from <code>", f);
        html_text(f, opt->lengths);
        fputs("</code>, cut to the sequence length", f);
    } else {
        fputs("variable-length batches, each padded to its longest sample; lengths uniform up to the "
              "sequence length", f);
    }
    fprintf(f, "; caching allocator %s</dd>\n",
            opt->axes.alloc == ALLOC_EXPANDABLE ? "with expandable segments" : "default");
}

static void write_rules_input(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<dt>Rules</dt><dd>", f);
    if (r->meta.rules) {
        fputs("measured peak-type rules from <code>", f);
        html_text(f, r->meta.rules);
        fputs("</code>", f);
    } else {
        fputs("none: the LLMem phase model alone", f);
    }
    size_t shown = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        bool seen = !r->rows[i].rule[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(r->rows[j].rule, r->rows[i].rule);
        if (!seen) {
            fputs(shown++ ? ", " : "; bound ranked rows: ", f);
            html_text(f, r->rows[i].rule);
        }
    }
    fputs("</dd>\n", f);
}

static void write_gpu_input(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    uint64_t bytes = budget_bytes(o->r);
    fputs("<dt>GPU</dt><dd>", f);
    html_text(f, m->gpu[0] ? m->gpu : "not recorded in the shard CSVs");
    if (m->gpu_note[0]) {
        fputs(" <span class=\"note\">(", f);
        html_text(f, m->gpu_note);
        fputs(")</span>", f);
    }
    fprintf(f, "</dd>\n<dt>Budget</dt><dd>%.2f GiB per GPU", m->budget_gib);
    if (bytes) {
        char b[40];
        html_grouped((double)bytes, b, sizeof b);
        fprintf(f, " (%s bytes)", b);
    }
    fputs("</dd>\n", f);
    if (m->host_budget_bytes)
        fprintf(f, "<dt>Host memory</dt><dd>%.2f GiB a node for offloaded states (--host-memory); "
                   "%" PRIu64 " points overfill it</dd>\n", units_gib(m->host_budget_bytes), m->host_over);
    if (m->stack[0]) {
        fputs("<dt>Training stack</dt><dd>", f);
        html_text(f, m->stack);
        fprintf(f, "%s%s</dd>\n", m->in && m->in->axes.eager ? ", eager attention"
                                   : m->in && m->in->axes.flash ? ", flash-attn" : "",
                m->paper ? "; LLMem paper equations (--paper)" : "");
    }
}

void html_inputs(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    /* the axes exist once the sweep has filled in their defaults; a merge's options
     * (if it ever passes them) have none */
    bool axes = m->in && m->in->axes.nmethods > 0;
    fputs("<section class=\"card\" id=\"inputs\">\n<h2>The question</h2>\n<dl class=\"inputs\">\n",
          f);
    write_models_input(o);
    write_gpu_input(o);
    if (axes)
        write_axes_input(f, m->in);
    write_rules_input(o);
    fputs("<dt>Version</dt><dd>llmem-sweep ", f);
    html_text(f, m->version ? m->version : "");
    fputs("</dd>\n", f);
    if (axes)
        write_command(o);
    fputs("</dl>\n</section>\n", f);
}
