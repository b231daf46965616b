/* svg_chart.c: chart frames for the HTML report (see svg_chart.h). */
#include "svg_chart.h"

#include <math.h>
#include <string.h>

#include "html_escape.h"

#define COORD_MAX 1e6

double svg_clamp(double v)
{
    if (!(v == v)) /* NaN */
        return 0;
    return v > COORD_MAX ? COORD_MAX : v < -COORD_MAX ? -COORD_MAX : v;
}

/* A step from the 1-2-2.5-5 x 10^k series close to range / target. */
static double nice_step(double range, int target)
{
    double raw = range / (target > 0 ? target : 1);
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return nice * mag;
}

double svg_nice_ceil(double v, int target)
{
    if (!(v > 0) || !isfinite(v))
        return 1;
    double step = nice_step(v, target);
    return ceil(v / step - 1e-9) * step;
}

int svg_nice_ticks(double lo, double hi, int target, double *out, int max)
{
    double step = nice_step(hi - lo, target);
    double start = ceil(lo / step - 1e-9) * step;
    int n = 0;
    /* multiply rather than accumulate, so 0.1-steps do not drift */
    for (int k = 0; n < max; k++) {
        double t = start + k * step;
        if (t > hi + step * 1e-9)
            break;
        out[n++] = fabs(t) < step * 1e-9 ? 0 : t;
    }
    return n;
}

/* Decimals that show a step exactly (2.5 needs one, 0.25 two), at most 3. */
static int decimals_for(double step)
{
    int d = 0;
    double s = fabs(step);
    while (d < 3 && fabs(s - round(s)) > 1e-6 * (s > 1 ? s : 1)) {
        s *= 10;
        d++;
    }
    return d;
}

void svg_format(char *buf, size_t n, double v, double step, enum svg_num num)
{
    const char *suffix = "";
    double scale = 1;
    if (num == SVG_NUM_SI && fabs(v) >= 1e6) {
        suffix = "M", scale = 1e6;
    } else if (num == SVG_NUM_SI && fabs(v) >= 1e3) {
        suffix = "k", scale = 1e3;
    }
    snprintf(buf, n, "%.*f%s", decimals_for(step / scale), v / scale, suffix);
}

/* Ticks for a log2 axis: the given values when few, else the powers of two in range. */
static int log_ticks(const struct svg_axis *a, double *out)
{
    int n = 0;
    if (a->ticks && a->nticks <= 12) {
        for (int i = 0; i < a->nticks && n < SVG_TICKS_MAX; i++)
            out[n++] = a->ticks[i];
        return n;
    }
    for (double t = 1; t <= a->hi && n < SVG_TICKS_MAX; t *= 2)
        if (t >= a->lo)
            out[n++] = t;
    return n;
}

static int resolve_ticks(const struct svg_axis *a, double *out)
{
    if (a->log2)
        return log_ticks(a, out);
    if (a->ticks) {
        int n = a->nticks < SVG_TICKS_MAX ? a->nticks : SVG_TICKS_MAX;
        memcpy(out, a->ticks, (size_t)n * sizeof *out);
        return n;
    }
    return svg_nice_ticks(a->lo, a->hi, 5, out, SVG_TICKS_MAX);
}

void svg_plot_init(struct svg_plot *p, double w, double h, const double margins[4],
                   const struct svg_axis *x, const struct svg_axis *y)
{
    memset(p, 0, sizeof *p);
    p->w = w, p->h = h;
    p->left = margins[0], p->right = margins[1], p->top = margins[2], p->bottom = margins[3];
    p->x = *x, p->y = *y;
    p->nxt = resolve_ticks(&p->x, p->xt);
    p->nyt = resolve_ticks(&p->y, p->yt);
}

/* Position of v in [0, 1] along an axis. */
static double unit(const struct svg_axis *a, double v)
{
    double lo = a->lo, hi = a->hi;
    if (a->log2) {
        if (!(v > 0) || !(lo > 0))
            return 0;
        lo = log2(lo), hi = log2(hi), v = log2(v);
    }
    return hi > lo ? (v - lo) / (hi - lo) : 0.5;
}

double svg_px(const struct svg_plot *p, double v)
{
    return svg_clamp(p->left + unit(&p->x, v) * (p->w - p->left - p->right));
}

double svg_py(const struct svg_plot *p, double v)
{
    return svg_clamp(p->h - p->bottom - unit(&p->y, v) * (p->h - p->top - p->bottom));
}

static double axis_step(const double *t, int n)
{
    return n > 1 ? t[1] - t[0] : (n == 1 && t[0] != 0 ? fabs(t[0]) : 1);
}

static void draw_y(FILE *f, const struct svg_plot *p)
{
    double step = axis_step(p->yt, p->nyt);
    for (int i = 0; i < p->nyt; i++) {
        char label[32];
        double y = svg_py(p, p->yt[i]);
        svg_format(label, sizeof label, p->yt[i], step, p->y.num);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                p->left, p->w - p->right, y, y);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                p->left - 6, y + 4, label);
    }
    double cy = (p->top + p->h - p->bottom) / 2;
    fprintf(f, "<text class=\"axis-title\" transform=\"translate(14 %.1f) rotate(-90)\" "
               "text-anchor=\"middle\">", cy);
    html_text(f, p->y.title);
    fputs("</text>\n", f);
}

static void draw_x(FILE *f, const struct svg_plot *p)
{
    double step = axis_step(p->xt, p->nxt), base = p->h - p->bottom;
    for (int i = 0; i < p->nxt; i++) {
        char label[32];
        double x = svg_px(p, p->xt[i]);
        svg_format(label, sizeof label, p->xt[i], p->x.log2 ? 1 : step, p->x.num);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x,
                p->top, base);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, base + 16, label);
    }
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", p->left,
            p->w - p->right, base, base);
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", p->left,
            p->left, p->top, base);
    fprintf(f, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
            (p->left + p->w - p->right) / 2, p->h - 6);
    html_text(f, p->x.title);
    fputs("</text>\n", f);
}

int svg_begin(FILE *f, const struct svg_plot *p, const char *id, const char *title,
              const char *desc)
{
    /* no xmlns: inline SVG in HTML needs none, and the page carries no URLs at all */
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-labelledby=\"",
            p->w, p->h);
    html_attr(f, id);
    fputs("-t ", f);
    html_attr(f, id);
    fputs("-d\">\n<title id=\"", f);
    html_attr(f, id);
    fputs("-t\">", f);
    html_text(f, title);
    fputs("</title><desc id=\"", f);
    html_attr(f, id);
    fputs("-d\">", f);
    html_text(f, desc);
    fputs("</desc>\n", f);
    if (p->nyt)
        draw_y(f, p);
    draw_x(f, p);
    return ferror(f) ? -1 : 0;
}

int svg_clip(FILE *f, const struct svg_plot *p, const char *id)
{
    fputs("<clipPath id=\"", f);
    html_attr(f, id);
    fprintf(f, "-clip\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
            p->left, p->top - 1, p->w - p->left - p->right, p->h - p->top - p->bottom + 1);
    return ferror(f) ? -1 : 0;
}

int svg_end(FILE *f)
{
    return fputs("</svg>\n", f) < 0 || ferror(f) ? -1 : 0;
}
