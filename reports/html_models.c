/* html_models.c: one card per model: its best configuration with the memory breakdown,
 * the method comparison (per method and GPU count: the largest micro-batch that fits, or
 * why nothing does) and peak memory against micro-batch for each parallel layout.
 *
 * The last two need the live sweep: the comparison reads sweep_result.cells, and the
 * chart re-evaluates points of the space with sweep_eval_point (space.h: a point is
 * outer * nseq * nbatch + seq_i * nbatch + batch_i), so every number on the page comes
 * from the same model, rules included, as the ranking. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "html_escape.h"
#include "html_page.h"
#include "svg_chart.h"
#include "units.h"

#define OPEN_MODELS 3    /* cards open on load; the rest are one click away */
#define SERIES_MAX 20    /* parallel layouts drawn per chart */
#define BATCH_POINTS 48  /* micro-batches drawn per layout (evenly picked from the axis) */

/* --- locating points ---------------------------------------------------------------- */

static uint64_t inner_points(const struct sweep *s)
{
    return (uint64_t)s->space.nseq * (uint64_t)s->space.nbatch;
}

static uint32_t point_model(const struct sweep *s, uint64_t index)
{
    return s->space.outer[index / inner_points(s)].model;
}

/* The best ranked fitting row of model m, or NULL. Rows of a live report carry their
 * space index, which names the model exactly (two config.json files may share a name). */
static const struct report_row *best_row(const struct report *r, uint32_t m)
{
    uint64_t points = space_points(&r->sweep->space);
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].fits && r->rows[i].index < points &&
            point_model(r->sweep, r->rows[i].index) == m)
            return &r->rows[i];
    return NULL;
}

static const struct sweep_cell *cell_at(const struct report *r, uint32_t m, int method, int gi)
{
    long c = sweep_cell_index(r->sweep, m, (enum method)method, r->sweep->opt->gpus.v[gi]);
    return c >= 0 && (size_t)c < r->result->ncells ? &r->result->cells[c] : NULL;
}

/* When the model's best point is not among the ranked rows (--top cut it), the fastest
 * cell fit stands in; failing that, the closest miss anchors the chart. */
static bool model_anchor(const struct report *r, uint32_t m, bool fit, uint64_t *index)
{
    const struct options *opt = r->sweep->opt;
    bool found = false;
    double best_score = 0;
    uint64_t best_peak = 0;
    for (int k = 0; k < opt->nmethods; k++)
        for (int gi = 0; gi < opt->gpus.n; gi++) {
            const struct sweep_cell *c = cell_at(r, m, opt->methods[k], gi);
            if (!c)
                continue;
            if (fit && c->has_fit && (!found || c->fit_score > best_score)) {
                best_score = c->fit_score, *index = c->fit_index, found = true;
            } else if (!fit && c->has_miss && (!found || c->miss_peak < best_peak)) {
                best_peak = c->miss_peak, *index = c->miss_index, found = true;
            }
        }
    return found;
}

/* The largest term of the peak phase, the base (CUDA context) aside: it is what a user
 * can act on. */
static int largest_term(const struct mem_estimate *e)
{
    const uint64_t *terms = e->phase[e->peak_phase];
    int big = TERM_PARAMS;
    for (int t = TERM_PARAMS; t < TERM_COUNT; t++)
        if (terms[t] > terms[big])
            big = t;
    return big;
}

/* How far over the budget a peak is, in the unit that shows it (a miss by 4 MiB would
 * otherwise print as "80.00 GiB" against an 80 GiB budget). */
static void print_over(FILE *f, uint64_t peak, uint64_t budget)
{
    double over = units_gib(peak > budget ? peak - budget : 0);
    if (over < 1)
        fprintf(f, "+%.0f MiB", over * 1024 < 1 ? 1.0 : over * 1024);
    else
        fprintf(f, "+%.2f GiB", over);
}

/* "micro-batch 8 × 512 (tuning) needs 81.20 GiB (+1.20 GiB): activations 43.70 GiB
 * during lm_head+loss" */
void html_why(FILE *f, const struct sweep *s, uint64_t index, bool tuning)
{
    struct sweep_point pt;
    char text[256];
    sweep_eval_point(s, index, &pt);
    int big = largest_term(&pt.mem);
    fprintf(f, "micro-batch %d \xC3\x97 %d", pt.cfg.micro_batch, pt.cfg.seq_len);
    if (tuning) {
        html_tuning_text(&pt.cfg, text, sizeof text);
        fprintf(f, " (%s)", text);
    }
    fprintf(f, " needs %.2f GiB (<b>", units_gib(pt.peak));
    print_over(f, pt.peak, s->budget);
    fprintf(f, "</b>): largest term %s %.2f GiB during %s", mem_term_name((enum mem_term)big),
            units_gib(pt.mem.phase[pt.mem.peak_phase][big]), mem_phase_name(pt.mem.peak_phase));
    if (pt.rule >= 0 && s->rules) {
        fputs("; bound by the measured rule ", f);
        html_text(f, rules_label(s->rules, pt.rule));
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

static void comparison_fit(FILE *f, const struct sweep *s, const struct sweep_cell *c)
{
    struct sweep_point pt;
    char tok[32], text[256];
    sweep_eval_point(s, c->fit_index, &pt);
    html_grouped(pt.speed.tokens_per_s, tok, sizeof tok);
    html_tuning_text(&pt.cfg, text, sizeof text);
    fprintf(f, "<td class=\"n\">%d</td><td class=\"n\">%.2f</td><td class=\"n\">%s</td>",
            pt.cfg.micro_batch, units_gib(pt.peak), tok);
    fprintf(f, "<td>tp %d \xC3\x97 dp %d, seq %d, %s</td>", pt.cfg.tp, pt.cfg.dp,
            pt.cfg.seq_len, text);
}

/* What limits a layout. With a fit: the next micro-batch of the same configuration (the
 * point after fit_index on the batch axis) and why it does not fit. Without one: the
 * cell's closest miss, whatever its settings. */
static void comparison_limit(FILE *f, const struct sweep *s, const struct sweep_cell *c)
{
    if (!c->has_fit) {
        fputs("closest: ", f);
        html_why(f, s, c->miss_index, true);
        return;
    }
    uint64_t nb = (uint64_t)s->space.nbatch;
    if (c->fit_index % nb == nb - 1) {
        fputs("the largest micro-batch tried fits", f);
        return;
    }
    struct sweep_point next;
    sweep_eval_point(s, c->fit_index + 1, &next);
    if (next.fits) /* cannot happen in a full sweep: fit_batch is the cell's largest */
        fputs("the next micro-batch fits too", f);
    else
        html_why(f, s, c->fit_index + 1, false);
}

static void comparison_row(FILE *f, const struct sweep *s, const struct sweep_cell *c,
                           int method, int32_t gpus)
{
    fprintf(f, "<tr><td>%s</td><td class=\"n\">%d</td>", method_name((enum method)method),
            (int)gpus);
    if (c->has_fit)
        comparison_fit(f, s, c);
    else
        fputs("<td colspan=\"4\" class=\"bad\">does not fit</td>", f);
    fputs("<td class=\"why\">", f);
    comparison_limit(f, s, c);
    fputs("</td></tr>\n", f);
}

static void comparison(struct html_out *o, uint32_t m)
{
    FILE *f = o->f;
    const struct options *opt = o->r->sweep->opt;
    fputs("<h4>Methods compared</h4>\n<div class=\"tablewrap\"><table class=\"data\">"
          "<thead><tr><th>Method</th><th class=\"n\">GPUs</th>"
          "<th class=\"n\">Largest micro-batch that fits</th><th class=\"n\">Peak GiB</th>"
          "<th class=\"n\">Tokens/s</th><th>With</th><th>What stops a larger one</th></tr></thead>"
          "<tbody>\n", f);
    for (int k = 0; k < opt->nmethods; k++)
        for (int gi = 0; gi < opt->gpus.n; gi++) {
            const struct sweep_cell *c = cell_at(o->r, m, opt->methods[k], gi);
            /* neither fit nor miss: not a valid layout (single on 2 GPUs), or another
             * shard's */
            if (c && (c->has_fit || c->has_miss))
                comparison_row(f, o->r->sweep, c, opt->methods[k], opt->gpus.v[gi]);
        }
    fputs("</tbody></table></div>\n", f);
    if (opt->shard_n)
        fputs("<p class=\"note\">This run is one shard: the comparison covers its slice of "
              "the space only.</p>\n", f);
}

/* --- peak memory against micro-batch ------------------------------------------------ */

struct series {
    size_t outer;
    struct train_config cfg;
    int n;
    int32_t batch[BATCH_POINTS];
    double peak[BATCH_POINTS];
    double hi[BATCH_POINTS]; /* the error band's upper end */
    bool fits[BATCH_POINTS];
    int32_t largest_fit; /* 0 = none */
};

struct mb_chart {
    struct series s[SERIES_MAX];
    int ns;
    bool cut;            /* more layouts than SERIES_MAX */
    uint64_t anchor;
    double budget, max_peak;
};

/* Everything but the layout (method, GPUs, tp, dp) and the batch axes is the same. */
static bool same_tuning(const struct train_config *a, const struct train_config *b)
{
    return a->precision == b->precision && a->finetune == b->finetune &&
           a->lora_r == b->lora_r && a->lora_targets == b->lora_targets &&
           a->quant == b->quant && a->grad_ckpt == b->grad_ckpt &&
           a->optimizer == b->optimizer && a->stack == b->stack;
}

static void eval_series(const struct sweep *s, struct series *ser, int seq_i, double *max_peak)
{
    const struct space *sp = &s->space;
    int nb = sp->nbatch, want = nb < BATCH_POINTS ? nb : BATCH_POINTS;
    ser->n = 0;
    ser->largest_fit = 0;
    for (int k = 0; k < want; k++) {
        /* evenly spread over the axis, both ends included */
        int bi = want > 1 ? (int)((int64_t)k * (nb - 1) / (want - 1)) : 0;
        uint64_t idx = (uint64_t)ser->outer * inner_points(s) + (uint64_t)seq_i * (uint64_t)nb +
                       (uint64_t)bi;
        struct sweep_point pt;
        sweep_eval_point(s, idx, &pt);
        ser->batch[ser->n] = pt.cfg.micro_batch;
        ser->peak[ser->n] = units_gib(pt.peak);
        ser->hi[ser->n] = units_gib(pt.peak_hi);
        ser->fits[ser->n] = pt.fits;
        if (pt.fits)
            ser->largest_fit = pt.cfg.micro_batch;
        *max_peak = fmax(*max_peak, ser->peak[ser->n]);
        ser->n++;
    }
}

static void collect_series(const struct sweep *s, uint64_t anchor, struct mb_chart *ch)
{
    const struct space *sp = &s->space;
    const struct space_outer *a = &sp->outer[anchor / inner_points(s)];
    int seq_i = (int)((anchor % inner_points(s)) / (uint64_t)sp->nbatch);
    ch->ns = 0;
    ch->cut = false;
    ch->anchor = anchor;
    ch->budget = units_gib(s->budget);
    ch->max_peak = 0;
    for (size_t oi = 0; oi < sp->nouter; oi++) {
        if (sp->outer[oi].model != a->model || !same_tuning(&sp->outer[oi].cfg, &a->cfg))
            continue;
        if (ch->ns == SERIES_MAX) {
            ch->cut = true;
            break;
        }
        struct series *ser = &ch->s[ch->ns++];
        ser->outer = oi;
        ser->cfg = sp->outer[oi].cfg;
        eval_series(s, ser, seq_i, &ch->max_peak);
    }
}

static void series_marks(FILE *f, const struct svg_plot *p, const struct series *ser, int k,
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

static void anchor_ring(FILE *f, const struct svg_plot *p, const struct sweep *s,
                        const struct mb_chart *ch)
{
    struct sweep_point pt;
    sweep_eval_point(s, ch->anchor, &pt);
    if (units_gib(pt.peak) <= p->y.hi)
        fprintf(f, "<circle class=\"ring\" cx=\"%.1f\" cy=\"%.1f\" r=\"8\"/>\n",
                svg_px(p, pt.cfg.micro_batch), svg_py(p, units_gib(pt.peak)));
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
        fprintf(f, "<li><span class=\"sw line c%d\"></span>%s: ", k % 10, layout);
        if (ch->s[k].largest_fit)
            fprintf(f, "fits up to micro-batch %d</li>", ch->s[k].largest_fit);
        else
            fputs("<span class=\"bad\">no micro-batch fits</span></li>", f);
    }
    fputs("<li><span class=\"sw ring\"></span>the configuration above</li>"
          "<li><span class=\"sw budget\"></span>budget; hollow points are over it</li></ul>\n",
          f);
    if (ch->cut)
        fprintf(f, "<p class=\"note\">Only the first %d parallel layouts are drawn.</p>\n",
                SERIES_MAX);
}

/* The y range: the budget with some room, up to twice it, so a layout that explodes
 * does not flatten the others (its points past the top are drawn as markers). */
static double mb_top(const struct mb_chart *ch)
{
    double top = fmin(ch->max_peak, 2 * ch->budget);
    return svg_nice_ceil(fmax(top, 1.1 * ch->budget), 5);
}

static void mb_chart(struct html_out *o, uint64_t anchor)
{
    FILE *f = o->f;
    const struct sweep *s = o->r->sweep;
    struct mb_chart *ch = malloc(sizeof *ch);
    if (!ch)
        return;
    collect_series(s, anchor, ch);
    const struct space *sp = &s->space;
    double lo = sp->batch[0], hi = sp->batch[sp->nbatch - 1], ticks[OPT_LIST_MAX];
    for (int i = 0; i < sp->nbatch; i++)
        ticks[i] = sp->batch[i];
    struct svg_axis x = {lo / 1.25, hi * 1.25, true, ticks, sp->nbatch,
                         "micro-batch per GPU (log scale)", SVG_NUM_PLAIN};
    struct svg_axis y = {0, mb_top(ch), false, NULL, 0, "predicted peak per GPU (GiB)",
                         SVG_NUM_PLAIN};
    const double margins[4] = {70, 24, 16, 46};
    struct svg_plot p;
    svg_plot_init(&p, 1180, 360, margins, &x, &y);
    char id[32], tuning[256];
    snprintf(id, sizeof id, "mb%d", o->charts++);
    html_tuning_text(&ch->s[0].cfg, tuning, sizeof tuning);
    fprintf(f, "<h4>Peak memory against micro-batch</h4>\n<p class=\"note\">Each parallel "
               "layout with the same settings as above (%s, seq %d).</p>\n", tuning,
            sp->seq[(anchor % inner_points(s)) / (uint64_t)sp->nbatch]);
    svg_begin(f, &p, id, "Peak memory against micro-batch per parallel layout",
              "Lines of predicted peak memory per GPU for each layout, with the budget line.");
    svg_clip(f, &p, id);
    budget_line_h(f, &p, ch->budget);
    for (int k = 0; k < ch->ns; k++)
        series_marks(f, &p, &ch->s[k], k, id);
    anchor_ring(f, &p, s, ch);
    svg_end(f);
    mb_legend(f, ch);
    free(ch);
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

static void model_card(struct html_out *o, uint32_t m, int nth)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    const struct sweep *s = r->sweep;
    const struct report_row *w = best_row(r, m);
    struct report_row stand_in;
    uint64_t anchor = 0;
    bool has_anchor = true;
    if (w) {
        anchor = w->index;
    } else if (model_anchor(r, m, true, &anchor)) {
        struct sweep_point pt;
        sweep_eval_point(s, anchor, &pt);
        report_row_from_point(&stand_in, s, &pt);
        w = &stand_in;
    } else {
        has_anchor = model_anchor(r, m, false, &anchor);
    }
    fprintf(f, "<details class=\"card model\" id=\"model-%u\"%s>\n", (unsigned)m,
            nth < OPEN_MODELS ? " open" : "");
    summary_line(f, w, s->models[m].spec.name);
    if (w) {
        best_block(o, w);
    } else if (has_anchor) {
        fputs("<p class=\"bad\">No configuration of this model fits. Closest: ", f);
        html_why(f, s, anchor, true);
        fputs(".</p>\n", f);
    }
    comparison(o, m);
    if (has_anchor)
        mb_chart(o, anchor);
    fputs("</details>\n", f);
}

/* Models in the order of their best rank; those without a ranked row follow in input
 * order. */
static void model_order(const struct report *r, uint32_t *order)
{
    size_t n = r->sweep->nmodels, k = 0;
    bool *done = calloc(n ? n : 1, sizeof *done);
    if (!done) {
        for (size_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
        return;
    }
    uint64_t points = space_points(&r->sweep->space);
    for (size_t i = 0; i < r->nrows && k < n; i++) {
        if (!r->rows[i].fits || r->rows[i].index >= points)
            continue;
        uint32_t m = point_model(r->sweep, r->rows[i].index);
        if (!done[m])
            done[m] = true, order[k++] = m;
    }
    for (size_t i = 0; i < n; i++)
        if (!done[i])
            order[k++] = (uint32_t)i;
    free(done);
}

/* Merged shards: the best row per model name, without the live sections. */
static void models_from_rows(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    fputs("<p class=\"note\">This report was merged from shard CSVs, so the method comparison "
          "and the peak-against-micro-batch charts, which re-evaluate the space, are left "
          "out.</p>\n", f);
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
    fputs("<section id=\"models\">\n<h2>Best configuration per model</h2>\n", f);
    if (!r->sweep || !r->result) {
        models_from_rows(o);
        fputs("</section>\n", f);
        return;
    }
    fputs("<p class=\"note\">The memory bar shows the terms of the phase where the peak "
          "happens, against the budget.</p>\n", f);
    uint32_t *order = malloc((r->sweep->nmodels ? r->sweep->nmodels : 1) * sizeof *order);
    if (order) {
        model_order(r, order);
        for (size_t i = 0; i < r->sweep->nmodels; i++)
            model_card(o, order[i], (int)i);
        free(order);
    }
    fputs("</section>\n", f);
}
