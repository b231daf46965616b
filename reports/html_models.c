/* html_models.c: one card per model, for its featured recipe (answer.h: the first recipe
 * in row order with a layout that fits): the best layout with the memory breakdown, the
 * method comparison (per method and GPU count: the fastest layout that fits, or why
 * nothing does) and peak memory against micro-batch for each parallel layout. Everything
 * is read from the answer; nothing here calls the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "html_escape.h"
#include "html_page.h"
#include "svg_chart.h"
#include "units.h"

#define OPEN_MODELS 3    /* cards open on load; the rest are one click away */

/* How far over the budget a peak is, in the unit that shows it (a miss by 4 MiB would
 * otherwise print as "80.00 GiB" against an 80 GiB budget). */
static void print_over(FILE *f, double peak_gib, double budget_gib)
{
    double over = peak_gib > budget_gib ? peak_gib - budget_gib : 0;
    if (over < 1)
        fprintf(f, "+%.0f MiB", over * 1024 < 1 ? 1.0 : over * 1024);
    else
        fprintf(f, "+%.2f GiB", over);
}

/* "micro-batch 8 × 512 (tuning) needs 81.20 GiB (+1.20 GiB): activations 43.70 GiB
 * during lm_head+loss" */
void html_why(FILE *f, const struct answer_miss *m, double budget_gib, bool tuning)
{
    char text[256];
    fprintf(f, "micro-batch %d \xC3\x97 %d", m->cfg.micro_batch, m->cfg.seq_len);
    if (tuning) {
        html_tuning_text(&m->cfg, text, sizeof text);
        fprintf(f, " (%s)", text);
    }
    fprintf(f, " needs %.2f GiB (<b>", m->peak_gib);
    print_over(f, m->peak_gib, budget_gib);
    fprintf(f, "</b>): largest term %s %.2f GiB during %s", m->term, m->term_gib, m->phase);
    if (m->rule[0]) {
        fputs("; bound by the measured rule ", f);
        html_text(f, m->rule);
    }
}

/* --- best configuration ------------------------------------------------------------- */

static void fact(FILE *f, const char *label, const char *value)
{
    fprintf(f, "<div><span>%s</span><b>", label);
    html_text(f, value);
    fputs("</b></div>", f);
}

static void best_block(struct html_out *o, const struct report_row *w)
{
    FILE *f = o->f;
    char layout[96], tuning[256], v[64];
    html_layout_text(&w->cfg, layout, sizeof layout);
    html_tuning_text(&w->cfg, tuning, sizeof tuning);
    if (w->rank > 0)
        fprintf(f, "<p><b>Best:</b> rank #%ld \xE2\x80\x94 ", w->rank);
    else
        fputs("<p><b>Best:</b> (below the ranked rows' cut-off) \xE2\x80\x94 ", f);
    fprintf(f, "%s; %s; micro-batch %d \xC3\x97 %d tokens (global batch %lld)</p>\n"
               "<div class=\"facts\">", layout, tuning, w->cfg.micro_batch, w->cfg.seq_len,
            (long long)w->global_batch);
    snprintf(v, sizeof v, "%.2f GiB", w->peak_gib);
    fact(f, "Peak per GPU", v);
    snprintf(v, sizeof v, "%.2f GiB", w->headroom_gib);
    fact(f, "Headroom", v);
    fact(f, "Peak phase", w->peak_phase);
    html_grouped(w->tokens_per_s, v, sizeof v);
    snprintf(v + strlen(v), sizeof v - strlen(v), " tokens/s");
    fact(f, "Throughput", v);
    snprintf(v, sizeof v, "%.3f s", w->step_time_s);
    fact(f, "Step time", v);
    if (w->rule[0])
        fact(f, "Bound by rule", w->rule);
    fputs("</div>\n", f);
    html_breakdown(o, w, o->r->meta.budget_gib);
}

/* --- method comparison -------------------------------------------------------------- */

static void comparison_row(FILE *f, const struct answer_cell *c, double budget_gib)
{
    fprintf(f, "<tr><td>%s</td><td class=\"n\">%d</td>", method_name(c->method), (int)c->gpus);
    if (c->has_fit) {
        const struct answer_layout *l = &c->fit;
        char tok[32], tokg[32];
        html_grouped(l->tokens_per_s, tok, sizeof tok);
        html_grouped(l->tokens_per_s_gpu, tokg, sizeof tokg);
        fprintf(f, "<td class=\"n\">%d</td><td class=\"n\">%.2f</td><td class=\"n\">%s</td>"
                   "<td class=\"n\">%s</td><td>tp %d \xC3\x97 dp %d, checkpointing %s</td>",
                l->cfg.micro_batch, l->peak_gib, tok, tokg, l->cfg.tp, l->cfg.dp,
                ckpt_mode_name(&l->cfg));
    } else {
        fputs("<td colspan=\"5\" class=\"bad\">does not fit</td>", f);
    }
    fputs("<td class=\"why\">", f);
    if (c->has_miss) {
        fputs(c->has_fit ? "" : "closest: ", f);
        html_why(f, &c->miss, budget_gib, false);
    }
    fputs("</td></tr>\n", f);
}

static void comparison(struct html_out *o, const struct answer_model *am)
{
    FILE *f = o->f;
    const struct answer_recipe *k = &o->r->recipes[am->featured];
    char recipe[256];
    html_recipe_text(&k->cfg, recipe, sizeof recipe);
    fputs("<h4>Methods compared for one recipe: ", f);
    html_text(f, recipe);
    fputs("</h4>\n<div class=\"tablewrap\"><table class=\"data\">"
          "<thead><tr><th>Method</th><th class=\"n\">GPUs</th>"
          "<th class=\"n\">Micro-batch</th><th class=\"n\">Peak GiB</th>"
          "<th class=\"n\">Tokens/s</th><th class=\"n\">Tokens/s per GPU</th><th>Layout</th>"
          "<th>Closest miss (the smallest peak that does not fit)</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < am->ncell; i++)
        comparison_row(f, &o->r->cells[am->cell0 + i], o->r->meta.budget_gib);
    fputs("</tbody></table></div>\n", f);
    if (o->r->meta.in && o->r->meta.in->shard_n)
        fputs("<p class=\"note\">This run is one shard: the comparison covers its slice of "
              "the space only.</p>\n", f);
}

/* --- peak memory against micro-batch ------------------------------------------------ */

struct mb_chart {
    const struct answer_series *s;
    int ns;
    bool cut;
    double budget, max_peak;
};

static void series_marks(FILE *f, const struct svg_plot *p, const struct answer_series *ser, int k,
                         const char *id)
{
    char layout[96];
    html_layout_text(&ser->cfg, layout, sizeof layout);
    fprintf(f, "<polyline class=\"ln c%d%s\" clip-path=\"url(#%s-clip)\" points=\"", k % 10,
            k >= 10 ? " dash" : "", id);
    for (int i = 0; i < ser->n; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", svg_px(p, ser->batch[i]),
                svg_py(p, ser->peak[i]));
    fputs("\"/>\n", f);
    for (int i = 0; i < ser->n; i++) {
        double x = svg_px(p, ser->batch[i]);
        if (ser->hi[i] > ser->peak[i] && ser->peak[i] <= p->y.hi) /* the error band */
            fprintf(f, "<line class=\"whisker c%d\" clip-path=\"url(#%s-clip)\" x1=\"%.1f\" "
                       "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", k % 10, id, x, x,
                    svg_py(p, ser->peak[i]), svg_py(p, ser->hi[i]));
        if (ser->peak[i] > p->y.hi) /* off the scale: a marker on the top edge */
            fprintf(f, "<path class=\"off c%d\" d=\"M%.1f %.1fl-5 8h10z\">", k % 10, x, p->top);
        else
            fprintf(f, "<circle class=\"pt c%d%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\">", k % 10,
                    ser->fits[i] ? "" : " miss", x, svg_py(p, ser->peak[i]));
        fprintf(f, "<title>%s: micro-batch %d needs %.2f GiB (band up to %.2f)%s</title>%s\n",
                layout, ser->batch[i], ser->peak[i], fmax(ser->peak[i], ser->hi[i]),
                ser->fits[i] ? "" : " (over budget)",
                ser->peak[i] > p->y.hi ? "</path>" : "</circle>");
    }
}

/* The label sits at the left end: peaks grow with the micro-batch, so the lines cross
 * the budget on the right. */
static void budget_line_h(FILE *f, const struct svg_plot *p, double budget)
{
    double y = svg_py(p, budget);
    fprintf(f, "<line class=\"budget\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
               "<text class=\"budget-label\" x=\"%.1f\" y=\"%.1f\">budget %.2f GiB</text>\n",
            p->left, p->w - p->right, y, y, p->left + 6, y - 5, budget);
}

static void mb_legend(FILE *f, const struct mb_chart *ch)
{
    fputs("<ul class=\"legend\">", f);
    for (int k = 0; k < ch->ns; k++) {
        char layout[96];
        html_layout_text(&ch->s[k].cfg, layout, sizeof layout);
        fprintf(f, "<li><span class=\"sw line c%d\"></span>%s, checkpointing %s: ", k % 10, layout,
                ckpt_mode_name(&ch->s[k].cfg));
        if (ch->s[k].largest_fit)
            fprintf(f, "fits up to micro-batch %d</li>", ch->s[k].largest_fit);
        else
            fputs("<span class=\"bad\">no micro-batch fits</span></li>", f);
    }
    fputs("<li><span class=\"sw ring\"></span>the layout above</li>"
          "<li><span class=\"sw budget\"></span>budget; hollow points are over it</li></ul>\n",
          f);
    if (ch->cut)
        fprintf(f, "<p class=\"note\">Only the first %d parallel layouts are drawn.</p>\n",
                ANSWER_SERIES_MAX);
}

/* The y range: the budget with some room, up to twice it, so a layout that explodes
 * does not flatten the others (its points past the top are drawn as markers). */
static double mb_top(const struct mb_chart *ch)
{
    double top = fmin(ch->max_peak, 2 * ch->budget);
    return svg_nice_ceil(fmax(top, 1.1 * ch->budget), 5);
}

static void mb_chart(struct html_out *o, const struct answer_model *am)
{
    FILE *f = o->f;
    struct mb_chart ch = {o->r->series + am->series0, (int)am->nseries, am->series_cut,
                          o->r->meta.budget_gib, 0};
    if (!ch.ns || !ch.s[0].n)
        return;
    double lo = ch.s[0].batch[0], hi = ch.s[0].batch[ch.s[0].n - 1];
    double ticks[ANSWER_BATCH_POINTS];
    for (int i = 0; i < ch.s[0].n; i++)
        ticks[i] = ch.s[0].batch[i];
    for (int k = 0; k < ch.ns; k++)
        for (int i = 0; i < ch.s[k].n; i++)
            ch.max_peak = fmax(ch.max_peak, ch.s[k].peak[i]);
    struct svg_axis x = {lo / 1.25, hi * 1.25, true, ticks, ch.s[0].n,
                         "micro-batch per GPU (log scale)", SVG_NUM_PLAIN};
    struct svg_axis y = {0, mb_top(&ch), false, NULL, 0, "predicted peak per GPU (GiB)",
                         SVG_NUM_PLAIN};
    const double margins[4] = {70, 24, 16, 46};
    struct svg_plot p;
    svg_plot_init(&p, 1180, 360, margins, &x, &y);
    char id[32];
    snprintf(id, sizeof id, "mb%d", o->charts++);
    fputs("<h4>Peak memory against micro-batch</h4>\n<p class=\"note\">Each parallel layout "
          "of the same recipe.</p>\n", f);
    svg_begin(f, &p, id, "Peak memory against micro-batch per parallel layout",
              "Lines of predicted peak memory per GPU for each layout, with the budget line.");
    svg_clip(f, &p, id);
    budget_line_h(f, &p, ch.budget);
    for (int k = 0; k < ch.ns; k++)
        series_marks(f, &p, &ch.s[k], k, id);
    if (am->anchor_peak_gib <= p.y.hi)
        fprintf(f, "<circle class=\"ring\" cx=\"%.1f\" cy=\"%.1f\" r=\"8\"/>\n",
                svg_px(&p, am->anchor_batch), svg_py(&p, am->anchor_peak_gib));
    svg_end(f);
    mb_legend(f, &ch);
}

/* --- one card per model --------------------------------------------------------------- */

static void summary_line(FILE *f, const struct report_row *w, const char *name)
{
    fputs("<summary><h3>", f);
    html_text(f, name);
    fputs("</h3><span class=\"badge\">", f);
    if (w) {
        char layout[96], tok[32];
        html_layout_text(&w->cfg, layout, sizeof layout);
        html_grouped(w->tokens_per_s, tok, sizeof tok);
        fprintf(f, "%s tokens/s \xC2\xB7 %s \xC2\xB7 %.2f GiB", tok, layout, w->peak_gib);
    } else {
        fputs("<span class=\"bad\">nothing fits</span>", f);
    }
    fputs("</span></summary>\n", f);
}

static void model_card(struct html_out *o, const struct answer_model *am, size_t m, int nth)
{
    FILE *f = o->f;
    const struct report_row *w = am->has_best && am->best.fits ? &am->best : NULL;
    fprintf(f, "<details class=\"card model\" id=\"model-%zu\"%s>\n", m,
            nth < OPEN_MODELS ? " open" : "");
    summary_line(f, w, am->name);
    if (am->featured == SIZE_MAX) {
        fputs("<p class=\"note\">No recipe of this model was evaluated in this run.</p>\n", f);
    } else {
        const struct answer_recipe *k = &o->r->recipes[am->featured];
        if (w) {
            best_block(o, w);
        } else if (k->has_miss) {
            fputs("<p class=\"bad\">No recipe of this model fits. Closest: ", f);
            html_why(f, &k->miss, o->r->meta.budget_gib, true);
            fputs(".</p>\n", f);
        }
        comparison(o, am);
        mb_chart(o, am);
    }
    fputs("</details>\n", f);
}

/* Merged shards: the best row per model name, without the live sections. */
static void models_from_rows(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<p class=\"note\">This report was merged from shard CSVs, so the method comparison "
          "and the peak-against-micro-batch charts are left out.</p>\n", f);
    int nth = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        bool seen = !r->rows[i].fits;
        for (size_t j = 0; j < i && !seen; j++)
            seen = r->rows[j].fits && !strcmp(r->rows[j].model, r->rows[i].model);
        if (seen)
            continue;
        fprintf(f, "<details class=\"card model\"%s>\n", nth < OPEN_MODELS ? " open" : "");
        summary_line(f, &r->rows[i], r->rows[i].model);
        best_block(o, &r->rows[i]);
        fputs("</details>\n", f);
        nth++;
    }
}

void html_models(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<section id=\"models\">\n<h2>Per model: one recipe in detail</h2>\n", f);
    if (!r->nmodels) {
        models_from_rows(o);
        fputs("</section>\n", f);
        return;
    }
    fputs("<p class=\"note\">Each card covers one recipe of the model (the first in the table "
          "above with a layout that fits): its fastest layout, the memory terms of the phase "
          "where its peak happens, the methods compared, and peak memory against "
          "micro-batch.</p>\n", f);
    for (size_t i = 0; i < r->nmodels; i++)
        model_card(o, &r->models[i], i, (int)i);
    fputs("</section>\n", f);
}
