/* html_out.c: the self-contained HTML report (DESIGN.md sections 1 and 8): the page
 * frame, the answer, the counts and the footer; the other sections live in html_*.c.
 *
 * One file that opens offline: inline CSS, inline SVG charts drawn in C, and one small
 * script that sorts the ranked table. A Content-Security-Policy forbids every
 * network request, and the script is allowed by its hash rather than 'unsafe-inline', so
 * even a string that escaped our escaping could not run. The page is rendered on the
 * server side (readable with JavaScript off) and is a pure function of the report: no
 * timestamp unless --stamp, numbers in the C locale with fixed precision. */
#include "report.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "html_escape.h"
#include "html_page.h"
#include "units.h"

/* --- small formatters shared by the parts ------------------------------------------ */

void html_grouped(double v, char *buf, size_t n)
{
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", fabs(v) < 1e18 ? fabs(v) : 1e18);
    size_t len = strlen(digits), w = 0;
    if (v <= -0.5 && w + 1 < n)
        buf[w++] = '-';
    for (size_t i = 0; i < len && w + 2 < n; i++) {
        buf[w++] = digits[i];
        if ((len - i - 1) % 3 == 0 && i + 1 < len)
            buf[w++] = ',';
    }
    buf[w] = '\0';
}

void html_layout_text(const struct train_config *c, char *buf, size_t n)
{
    char method[24];
    report_method_text(c, method, sizeof method);
    if (c->method == METHOD_DPTP)
        snprintf(buf, n, "%s, %d GPUs (tp %d \xC3\x97 dp %d)", method, c->gpus, c->tp, c->dp);
    else
        snprintf(buf, n, "%s, %d GPU%s", method, c->gpus, c->gpus == 1 ? "" : "s");
}

/* "full", "lora r16 all", "lora r8 attn (int8 base)" */
static void finetune_text(const struct train_config *c, char *buf, size_t n)
{
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    if (c->finetune == FT_FULL)
        snprintf(buf, n, "full");
    else
        snprintf(buf, n, "%s r%d %s", finetune_name(c->finetune), c->lora_r, targets);
    if (c->quant != QUANT_NONE && c->finetune != FT_QLORA)
        snprintf(buf + strlen(buf), n - strlen(buf), " (%s base)", quant_name(c->quant));
}

void html_recipe_text(const struct train_config *c, char *buf, size_t n)
{
    char ft[160];
    finetune_text(c, ft, sizeof ft);
    snprintf(buf, n, "%s, %s, %s, seq %d", ft, precision_name(c->precision),
             optimizer_name(c->optimizer), c->seq_len);
}

void html_tuning_text(const struct train_config *c, char *buf, size_t n)
{
    char ft[160];
    finetune_text(c, ft, sizeof ft);
    snprintf(buf, n, "%s, %s, ckpt %s, %s", ft, precision_name(c->precision),
             ckpt_mode_name(c), optimizer_name(c->optimizer));
}

/* --- head -------------------------------------------------------------------------- */

static void write_head(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
    fprintf(f, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", html_csp);
    fputs("<meta name=\"referrer\" content=\"no-referrer\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"llmem-sweep\">\n"
          "<link rel=\"icon\" href=\"data:,\">\n<title>llmem-sweep: ", f);
    if (m->gpu[0]) {
        html_text(f, m->gpu);
        fputs(", ", f);
    }
    fprintf(f, "%.2f GiB per GPU</title>\n", m->budget_gib);
    html_style(f);
    fputs("</head>\n<body>\n<main>\n", f);
}

/* --- header: the question and its answer ------------------------------------------- */

static size_t recipes_fitting(const struct report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nrecipes; i++)
        n += r->recipes[i].nby > 0;
    return n;
}

static void write_answer_fit(FILE *f, const struct report *r)
{
    fprintf(f, "<p class=\"answer\"><strong>%zu of %zu recipes fit.</strong> For each recipe "
               "(what is trained: model, fine-tuning, precision, optimizer, sequence length) the "
               "table below gives the fewest GPUs that fit and the best layout (how it runs: "
               "method, GPUs, micro-batch, checkpointing) by %s. Layouts are ranked within a "
               "recipe, never across recipes.</p>\n", recipes_fitting(r), r->nrecipes,
            r->meta.objective == OBJECTIVE_PER_GPU ? "tokens/s per GPU"
            : r->meta.objective == OBJECTIVE_MIN_GPUS ? "the fewest GPUs, then throughput"
                                                      : "throughput");
}

/* Nothing fits: say what came closest, which term binds it, and what to change. */
static void write_answer_none(FILE *f, const struct report *r)
{
    fputs("<p class=\"answer none\"><strong>No configuration fits the budget.</strong>", f);
    if (r->has_closest) {
        char layout[96], tuning[256];
        html_layout_text(&r->closest.cfg, layout, sizeof layout);
        html_tuning_text(&r->closest.cfg, tuning, sizeof tuning);
        fputs(" Closest: ", f);
        html_text(f, r->closest_model);
        fprintf(f, " \xE2\x80\x94 %s; %s; ", layout, tuning);
        html_why(f, &r->closest, r->meta.budget_gib, false);
        fputc('.', f);
        for (int i = 0; i < r->nclosest_change && i < 3; i++) {
            fputs(i ? "; or " : " To make it fit: ", f);
            html_text(f, r->closest_change[i].what);
            fprintf(f, " (%.2f GiB)", r->closest_change[i].peak_gib);
        }
        if (r->nclosest_change)
            fputc('.', f);
    }
    fputs("</p>\n", f);
}

static void write_header(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    fprintf(f, "<header>\n<h1>How few GPUs, and which layout, for each fine-tuning recipe "
               "within %.2f GiB per GPU?</h1>\n<p class=\"sub\">llmem-sweep ", m->budget_gib);
    html_text(f, m->version ? m->version : "");
    if (m->gpu[0]) {
        fputs(" \xC2\xB7 ", f);
        html_text(f, m->gpu);
    }
    fputs(" \xC2\xB7 predicted peak GPU memory (LLMem model", f);
    if (m->rules)
        fputs(" with measured peak-type rules", f);
    fprintf(f, ") \xC2\xB7 layouts ranked by %s within each recipe \xC2\xB7 GiB = 2<sup>30</sup> "
               "bytes</p>\n", strcmp(m->rank_mode, "llmem") ? "throughput" : "LLMem's Algorithm 1 score");
    if (m->warning[0]) {
        fputs("<p class=\"answer none\"><strong>Warning:</strong> ", f);
        html_text(f, m->warning);
        fputs(".</p>\n", f);
    }
    if (recipes_fitting(o->r))
        write_answer_fit(f, o->r);
    else
        write_answer_none(f, o->r);
    fputs("</header>\n", f);
}

/* --- counts ------------------------------------------------------------------------ */

static void kpi_u64(FILE *f, const char *label, uint64_t v)
{
    char buf[40];
    html_grouped((double)v, buf, sizeof buf);
    fprintf(f, "<div class=\"kpi\"><span>%s</span><b>%s</b></div>\n", label, buf);
}

static void write_counts(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    fputs("<div class=\"kpis\">\n", f);
    fprintf(f, "<div class=\"kpi\"><span>Budget per GPU</span><b>%.2f GiB</b></div>\n",
            m->budget_gib);
    if (m->has_counts) {
        kpi_u64(f, "Configurations", m->space);
        kpi_u64(f, "Evaluated", m->evaluated);
        kpi_u64(f, "Pruned", m->pruned);
        kpi_u64(f, "Fit the budget", m->fitting);
    } else {
        kpi_u64(f, "Ranked rows", o->r->nrows);
    }
    kpi_u64(f, "Recipes", o->r->nrecipes);
    kpi_u64(f, "Recipes that fit", recipes_fitting(o->r));
    fputs("</div>\n", f);
    if (!m->has_counts)
        fputs("<p class=\"note\">This report was merged from shard CSVs: the counts of the "
              "space are not known here.</p>\n", f);
}

/* --- footer, data and script ------------------------------------------------------- */

static void write_footer(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_meta *m = &o->r->meta;
    fputs("<footer>\n<p>Written by llmem-sweep ", f);
    html_text(f, m->version ? m->version : "");
    fputs(". Memory figures are predictions per GPU (the CUDA context and communication "
          "buffers included), not measurements; GiB = 2<sup>30</sup> bytes, throughput is "
          "estimated from FLOPs, the GPU's dense rate and communication volume.", f);
    if (m->stamp) {
        char when[64];
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(f, " Generated %s.", when);
    }
    fputs("</p>\n</footer>\n</main>\n", f);
}

/* The inputs as JSON, for tools that scrape reports; inert (type application/json). */
static void write_data(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<script type=\"application/json\" id=\"llmem-inputs\">{\"tool\":\"llmem-sweep\","
          "\"version\":", f);
    html_json_string(f, r->meta.version ? r->meta.version : "");
    fputs(",\"gpu\":", f);
    html_json_string(f, r->meta.gpu);
    fprintf(f, ",\"budget_gib\":%.3f,\"rows\":%zu,\"models\":[", r->meta.budget_gib, r->nrows);
    for (size_t i = 0; i < r->nmodels; i++) {
        fputs(i ? "," : "", f);
        html_json_string(f, r->models[i].name);
    }
    fputs("]}</script>\n", f);
    html_script(f);
    fputs("</body>\n</html>\n", f);
}

int report_write_html(const struct report *r, FILE *f)
{
    struct html_out o = {f, r, 0};
    write_head(&o);
    write_header(&o);
    write_counts(&o);
    html_recipes(&o);
    html_inputs(&o);
    html_models(&o);
    html_chart_pareto(&o);
    html_chart_top(&o);
    html_table(&o);
    write_footer(&o);
    write_data(&o);
    return ferror(f) ? -1 : 0;
}
