/* html_charts.c: the charts drawn from the ranked rows alone (they work for merged shard
 * reports too): the memory breakdown bar of one configuration, throughput against peak
 * memory with the Pareto front, and the stacked breakdown of the top configurations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "html_escape.h"
#include "html_page.h"
#include "svg_chart.h"

/* Display names of the memory terms, in enum mem_term order, then the remainder. */
static const char *const term_labels[TERM_COUNT + 1] = {
    "base (CUDA context)", "weights", "gradients", "optimizer states", "activations",
    "logits and loss", "communication buffers", "allocator rounding and cache",
};
#define TERM_OTHER TERM_COUNT

/* Segment sizes of a row: the terms, and what the peak holds beyond their sum (the
 * caching allocator's rounding, or a measured rule that binds above the model). */
static void segments(const struct report_row *w, double seg[TERM_COUNT + 1])
{
    double sum = 0;
    for (int t = 0; t < TERM_COUNT; t++) {
        seg[t] = w->term_gib[t] > 0 ? w->term_gib[t] : 0;
        sum += seg[t];
    }
        /* below 5 MiB it would print as 0.00 GiB: leave it out */
    seg[TERM_OTHER] = w->peak_gib - sum >= 0.005 ? w->peak_gib - sum : 0;
}

/* The stacked segments of one row on plot p, in a band [y, y + h]. */
static void stack_bar(FILE *f, const struct svg_plot *p, const struct report_row *w, double y,
                      double h)
{
    double seg[TERM_COUNT + 1], at = 0;
    segments(w, seg);
    for (int t = 0; t <= TERM_COUNT; t++) {
        if (seg[t] <= 0)
            continue;
        double x0 = svg_px(p, at), x1 = svg_px(p, at + seg[t]);
        fprintf(f, "<rect class=\"seg k%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                   "<title>%s: %.3f GiB (%.0f%% of the peak)</title></rect>",
                t, x0, y, x1 - x0 > 0.5 ? x1 - x0 : 0.5, h, term_labels[t], seg[t],
                w->peak_gib > 0 ? 100 * seg[t] / w->peak_gib : 0.0);
        at += seg[t];
    }
    if (w->peak_hi_gib > w->peak_gib) { /* the error band's upper end (README "Error band") */
        double x0 = svg_px(p, w->peak_gib), x1 = svg_px(p, w->peak_hi_gib);
        fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                   "<title>error band: up to %.3f GiB (+%.0f%%)</title></rect>",
                x0, y, x1 - x0, h, w->peak_hi_gib, 100 * (w->peak_hi_gib / w->peak_gib - 1));
    }
    fputc('\n', f);
}

static void budget_line_v(FILE *f, const struct svg_plot *p, double budget, bool label)
{
    double x = svg_px(p, budget);
    fprintf(f, "<line class=\"budget\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x,
            p->top - (label ? 6 : 0), p->h - p->bottom);
    if (label)
        fprintf(f, "<text class=\"budget-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
                   "budget %.2f GiB</text>", x - 4, p->top + 4, budget);
    fputc('\n', f);
}

void html_breakdown(struct html_out *o, const struct report_row *w, double budget_gib)
{
    FILE *f = o->f;
    struct svg_plot p;
    double scale = fmax(fmax(w->peak_gib, w->peak_hi_gib), budget_gib), seg[TERM_COUNT + 1];
    struct svg_axis x = {0, scale > 0 ? scale : 1, false, NULL, 0, "", SVG_NUM_PLAIN};
    struct svg_axis y = {0, 1, false, NULL, 0, "", SVG_NUM_PLAIN};
    const double margins[4] = {0, 0, 0, 0};
    svg_plot_init(&p, 1000, 20, margins, &x, &y);
    /* a fixed-height bar that stretches with the page: no text inside, so scaling the
     * aspect ratio distorts nothing */
    fprintf(f, "<svg class=\"bar\" viewBox=\"0 0 1000 20\" preserveAspectRatio=\"none\" "
               "role=\"img\" aria-label=\"peak memory %.2f GiB of a %.2f GiB budget\">",
            w->peak_gib, budget_gib);
    fprintf(f, "<rect class=\"track\" x=\"0\" y=\"0\" width=\"%.1f\" height=\"20\"/>",
            svg_px(&p, budget_gib));
    stack_bar(f, &p, w, 0, 20);
    budget_line_v(f, &p, budget_gib, false);
    fputs("</svg>\n<ul class=\"legend\">", f);
    segments(w, seg);
    for (int t = 0; t <= TERM_COUNT; t++)
        if (seg[t] > 0)
            fprintf(f, "<li><span class=\"sw k%d\"></span>%s %.2f GiB</li>", t, term_labels[t],
                    seg[t]);
    if (w->peak_hi_gib > w->peak_gib)
        fprintf(f, "<li><span class=\"sw band\"></span>error band up to %.2f GiB</li>",
                w->peak_hi_gib);
    fprintf(f, "<li><span class=\"sw budget\"></span>budget %.2f GiB</li></ul>\n", budget_gib);
}

/* --- throughput against peak memory ------------------------------------------------ */

/* A row's place on the front: peak ascending, then throughput descending, then rank. */
struct front_key {
    double peak, tok;
    long rank;
    size_t row;
    bool fits;
};

static int by_peak(const void *a, const void *b)
{
    const struct front_key *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    if (x->tok != y->tok)
        return x->tok > y->tok ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Marks the Pareto-optimal fitting rows (no other row is faster at no more memory) and
 * returns the rows ordered by peak; NULL when memory runs out. */
static struct front_key *pareto(const struct report *r, bool *front)
{
    struct front_key *order = malloc((r->nrows ? r->nrows : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (size_t i = 0; i < r->nrows; i++) {
        const struct report_row *w = &r->rows[i];
        order[i] = (struct front_key){w->peak_gib, w->tokens_per_s, w->rank, i, w->fits};
        front[i] = false;
    }
    qsort(order, r->nrows, sizeof *order, by_peak);
    double best = -1;
    for (size_t k = 0; k < r->nrows; k++) {
        if (order[k].fits && order[k].tok > best) {
            front[order[k].row] = true;
            best = order[k].tok;
        }
    }
    return order;
}

static void point_title(FILE *f, const struct report_row *w)
{
    char layout[96], tuning[256], tok[32];
    html_layout_text(&w->cfg, layout, sizeof layout);
    html_tuning_text(&w->cfg, tuning, sizeof tuning);
    html_grouped(w->tokens_per_s, tok, sizeof tok);
    fprintf(f, "<title>#%ld ", w->rank);
    html_text(f, w->model);
    fprintf(f, "\n%s; %s; micro-batch %d, seq %d\n%.2f GiB peak (band up to %.2f), %s tokens/s%s"
               "</title>", layout, tuning, w->cfg.micro_batch, w->cfg.seq_len, w->peak_gib,
            fmax(w->peak_gib, w->peak_hi_gib), tok, w->fits ? "" : " (does not fit)");
}

/* The staircase "best throughput at this much memory or less", to the budget. */
static void front_path(FILE *f, const struct svg_plot *p, const struct report *r,
                       const struct front_key *order, const bool *front, double budget)
{
    bool started = false;
    for (size_t k = 0; k < r->nrows; k++) {
        if (!front[order[k].row])
            continue;
        double x = svg_px(p, order[k].peak), y = svg_py(p, order[k].tok);
        if (started)
            fprintf(f, "H%.1fV%.1f", x, y);
        else
            fprintf(f, "<path class=\"front\" d=\"M%.1f %.1f", x, y);
        started = true;
    }
    if (started)
        fprintf(f, "H%.1f\"/>\n", svg_px(p, budget));
}

/* The scatter draws at most this many points: a point with its tooltip is about 300
 * bytes, and the default sweep ranks some 30,000 layouts (9 MB of SVG no one can read).
 * The CSV and JSON keep every row. */
#define SCATTER_MAX 2000

/* Marks the rows the scatter draws: every point of the front, then the best K layouts of
 * each recipe (rank restarts per recipe) for the largest K that keeps the total within
 * SCATTER_MAX. Returns how many are marked and sets *k (0: every row). */
static size_t scatter_rows(const struct report *r, const bool *front, bool *shown, long *k)
{
    size_t nfront = 0, left;
    long top = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        nfront += front[i];
        top = r->rows[i].rank > top ? r->rows[i].rank : top;
    }
    *k = 0;
    if (r->nrows <= SCATTER_MAX) {
        for (size_t i = 0; i < r->nrows; i++)
            shown[i] = true;
        return r->nrows;
    }
    left = SCATTER_MAX > nfront ? SCATTER_MAX - nfront : 0;
    /* rows off the front by rank; ranks above SCATTER_MAX never fit, so counting stops there */
    size_t at_rank[SCATTER_MAX + 2] = {0}, sum = 0;
    for (size_t i = 0; i < r->nrows; i++)
        if (!front[i] && r->rows[i].rank >= 1)
            at_rank[r->rows[i].rank <= SCATTER_MAX ? r->rows[i].rank : SCATTER_MAX + 1]++;
    for (long cand = 1; cand <= top && cand <= SCATTER_MAX; cand++) {
        sum += at_rank[cand];
        if (sum > left)
            break;
        *k = cand;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        shown[i] = front[i] || (r->rows[i].rank >= 1 && r->rows[i].rank <= *k);
        n += shown[i];
    }
    return n;
}

static void pareto_points(FILE *f, const struct svg_plot *p, const struct report *r,
                          const bool *front, const bool *shown, bool on_front)
{
    for (size_t i = 0; i < r->nrows; i++) {
        const struct report_row *w = &r->rows[i];
        if (front[i] != on_front || !shown[i])
            continue;
        if (w->peak_hi_gib > w->peak_gib) /* the error band's upper end */
            fprintf(f, "<line class=\"whisker c%d\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                    (int)w->cfg.method, svg_px(p, w->peak_gib), svg_px(p, w->peak_hi_gib),
                    svg_py(p, w->tokens_per_s), svg_py(p, w->tokens_per_s));
        fprintf(f, "<circle class=\"pt c%d%s%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\">",
                (int)w->cfg.method, on_front ? " front-pt" : "", w->fits ? "" : " miss",
                svg_px(p, w->peak_gib), svg_py(p, w->tokens_per_s), on_front ? 5.5 : 4.0);
        point_title(f, w);
        fputs("</circle>\n", f);
    }
}

static void method_legend(FILE *f, const struct report *r)
{
    bool seen[METHOD_COUNT] = {false};
    for (size_t i = 0; i < r->nrows; i++)
        if ((unsigned)r->rows[i].cfg.method < METHOD_COUNT)
            seen[r->rows[i].cfg.method] = true;
    fputs("<ul class=\"legend\">", f);
    for (int m = 0; m < METHOD_COUNT; m++)
        if (seen[m])
            fprintf(f, "<li><span class=\"sw c%d\"></span>%s</li>", m,
                    method_name((enum method)m));
    fputs("<li><span class=\"sw ring\"></span>Pareto front: fastest for its memory</li>"
          "<li><span class=\"sw budget\"></span>budget</li></ul>\n", f);
}

void html_chart_pareto(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    double budget = r->meta.budget_gib, max_peak = budget, max_tok = 0;
    if (!r->nrows)
        return;
    bool *front = calloc(2 * r->nrows, sizeof *front), *shown = front ? front + r->nrows : NULL;
    struct front_key *order = front ? pareto(r, front) : NULL;
    long k = 0;
    const size_t nshown = order ? scatter_rows(r, front, shown, &k) : 0;
    for (size_t i = 0; i < r->nrows; i++) {
        max_peak = fmax(max_peak, fmax(r->rows[i].peak_gib, r->rows[i].peak_hi_gib));
        max_tok = fmax(max_tok, r->rows[i].tokens_per_s);
    }
    struct svg_axis x = {0, svg_nice_ceil(max_peak, 8), false, NULL, 0,
                         "predicted peak memory per GPU (GiB)", SVG_NUM_PLAIN};
    struct svg_axis y = {0, svg_nice_ceil(max_tok * 1.05, 5), false, NULL, 0,
                         "throughput (tokens/s, whole job)", SVG_NUM_SI};
    const double margins[4] = {70, 24, 22, 46};
    struct svg_plot p;
    svg_plot_init(&p, 1180, 420, margins, &x, &y);
    fputs("<section class=\"card\" id=\"tradeoff\">\n<h2>Throughput against memory</h2>\n"
          "<p class=\"note\">", f);
    if (k > 0 || nshown < r->nrows)
        fprintf(f, "%zu of the %zu ranked layouts: the Pareto front and the best %ld of each "
                   "recipe (the CSV and JSON have them all)", nshown, r->nrows, k);
    else
        fputs("Every ranked configuration", f);
    fputs("; the dashed staircase is the Pareto front, the best throughput available for a "
          "given peak or less. Hover a point for its configuration.</p>\n", f);
    if (order) {
        svg_begin(f, &p, "pareto", "Throughput against predicted peak memory",
                  "Scatter of the ranked configurations with the Pareto front highlighted.");
        budget_line_v(f, &p, budget, true);
        front_path(f, &p, r, order, front, budget);
        pareto_points(f, &p, r, front, shown, false);
        pareto_points(f, &p, r, front, shown, true);
        svg_end(f);
        method_legend(f, r);
    }
    fputs("</section>\n", f);
    free(order);
    free(front);
}

/* --- stacked breakdown of the top configurations ----------------------------------- */

static void top_label(FILE *f, const struct report_row *w, double y, bool many_models)
{
    char layout[96], tuning[256];
    html_layout_text(&w->cfg, layout, sizeof layout);
    html_tuning_text(&w->cfg, tuning, sizeof tuning);
    fprintf(f, "<text class=\"lbl\" x=\"8\" y=\"%.1f\">#%ld ", y + 2, w->rank);
    if (many_models) {
        html_text_max(f, w->model, 34);
        fputs("<title>", f);
        html_text(f, w->model);
        fputs("</title>", f);
    } else {
        fputs(layout, f);
    }
    fprintf(f, "</text><text class=\"lbl2\" x=\"8\" y=\"%.1f\">", y + 16);
    if (many_models)
        fprintf(f, "%s \xC2\xB7 ", layout);
    fprintf(f, "%s \xC2\xB7 mb %d \xC3\x97 %d</text>\n", tuning, w->cfg.micro_batch,
            w->cfg.seq_len);
}

static bool several_models(const struct report *r)
{
    for (size_t i = 1; i < r->nrows; i++)
        if (strcmp(r->rows[i].model, r->rows[0].model))
            return true;
    return false;
}

/* The terms that appear in the first n rows. */
static void top_legend(FILE *f, const struct report *r, size_t n)
{
    bool used[TERM_COUNT + 1] = {false};
    for (size_t i = 0; i < n; i++) {
        double seg[TERM_COUNT + 1];
        segments(&r->rows[i], seg);
        for (int t = 0; t <= TERM_COUNT; t++)
            used[t] |= seg[t] > 0;
    }
    fputs("<ul class=\"legend\">", f);
    for (int t = 0; t <= TERM_COUNT; t++)
        if (used[t])
            fprintf(f, "<li><span class=\"sw k%d\"></span>%s</li>", t, term_labels[t]);
    fputs("<li><span class=\"sw budget\"></span>budget</li></ul>\n", f);
}

void html_chart_top(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    size_t n = r->nrows < HTML_TOP_BARS ? r->nrows : HTML_TOP_BARS;
    double budget = r->meta.budget_gib, max_peak = budget, row_h = 40;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++)
        max_peak = fmax(max_peak, fmax(r->rows[i].peak_gib, r->rows[i].peak_hi_gib));
    struct svg_axis x = {0, svg_nice_ceil(max_peak, 6), false, NULL, 0,
                         "peak-phase memory per GPU (GiB)", SVG_NUM_PLAIN};
    struct svg_axis y = {0, 1, false, NULL, 0, "", SVG_NUM_PLAIN};
    const double margins[4] = {330, 70, 24, 46};
    struct svg_plot p;
    svg_plot_init(&p, 1180, 24 + 46 + row_h * (double)n, margins, &x, &y);
    p.nyt = 0; /* bands, not a value axis */
    bool many = several_models(r);
    fprintf(f, "<section class=\"card\" id=\"top\">\n<h2>Where the memory goes: top %zu</h2>\n"
               "<p class=\"note\">Terms of the phase where each configuration peaks, stacked; "
               "the bar ends at the predicted peak, the dashed box at the upper end of its "
               "error band.</p>\n", n);
    svg_begin(f, &p, "top", "Memory breakdown of the top configurations",
              "Stacked horizontal bars of the peak-phase memory terms per configuration.");
    for (size_t i = 0; i < n; i++) {
        const struct report_row *w = &r->rows[i];
        double y0 = p.top + row_h * (double)i;
        top_label(f, w, y0 + 12, many);
        stack_bar(f, &p, w, y0 + 6, 22);
        fprintf(f, "<text class=\"lbl2\" x=\"%.1f\" y=\"%.1f\">%.2f GiB</text>\n",
                svg_px(&p, fmax(w->peak_gib, w->peak_hi_gib)) + 6, y0 + 21, w->peak_gib);
    }
    budget_line_v(f, &p, budget, true);
    svg_end(f);
    top_legend(f, r, n);
    fputs("</section>\n", f);
}
