/* html_page.h: the parts of the HTML report (html_out.c writes the page and calls them).
 * Internal to reports/: the public entry point is report_write_html() in report.h.
 *
 * Every part prints with fprintf to o->f and leaves error detection to the caller's final
 * ferror(), the way the sister writers do. Numbers use the C locale (main sets it) with
 * fixed precision; GiB is 2^30 bytes throughout. */
#ifndef LLMEM_HTML_PAGE_H
#define LLMEM_HTML_PAGE_H

#include <stdio.h>

#include "report.h"

#define HTML_TOP_BARS 10 /* configurations in the stacked breakdown chart */
#define HTML_TABLE_RANKS 10 /* layouts per recipe in the ranked table (the CSV has all) */

struct html_out {
    FILE *f;
    const struct report *r;
    int charts; /* charts written so far: makes element ids unique and stable */
};

/* The constant assets (html_assets.c): the CSP value, the <style> and <script> elements. */
extern const char html_csp[];
void html_style(FILE *f);
void html_script(FILE *f);

/* Short texts for one configuration (plain ASCII, no escaping needed). */
void html_layout_text(const struct train_config *c, char *buf, size_t n);  /* "cdp, 2 GPUs" */
/* "lora r16 all, bf16, ckpt on, adamw" */
void html_tuning_text(const struct train_config *c, char *buf, size_t n);
void html_grouped(double v, char *buf, size_t n);                          /* 17,825 */

/* A small stacked bar of one configuration's peak-phase terms, scaled to
 * max(budget, peak), with the term values as a legend. */
void html_breakdown(struct html_out *o, const struct report_row *row, double budget_gib);

/* The sections that need no live sweep data: they draw from the ranked rows. */
void html_chart_pareto(struct html_out *o);
void html_chart_top(struct html_out *o);

/* Why a point does not fit: "micro-batch 8 × 512 (tuning) needs 81.20 GiB (+1.20 GiB):
 * largest term activations 43.70 GiB during lm_head+loss" (tuning only when asked). */
void html_why(FILE *f, const struct answer_miss *m, double budget_gib, bool tuning);

/* A recipe's knobs: "full, bf16, adamw, seq 4096" or "qlora r16 all, bf16, adamw, seq 2048". */
void html_recipe_text(const struct train_config *c, char *buf, size_t n);

/* The headline: one row per model and recipe with the fewest GPUs that fit, the best
 * layout under the objective, tokens/s per GPU, and the time for the token count; what
 * to change for recipes that fit nowhere. */
void html_recipes(struct html_out *o);

/* "The question": models, GPU, budget, axes, rules, version, command line. */
void html_inputs(struct html_out *o);

/* The ranked, sortable table and the link to the ranked CSV. */
void html_table(struct html_out *o);

/* Per model, its featured recipe: the best layout, the method comparison and the
 * peak-against-micro-batch chart (live runs). */
void html_models(struct html_out *o);

#endif
