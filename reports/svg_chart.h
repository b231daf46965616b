/* svg_chart.h: the frame of an inline SVG chart (scales, grid, ticks, axis titles),
 * written with fprintf so the report needs no JavaScript to draw and stays diffable.
 *
 * Coordinates are printed in the C locale with one decimal and clamped, so a NaN or a
 * huge value can never produce "nan" or "inf" in the page. Colours come from CSS classes
 * of the page (light and dark themes), never from style attributes. */
#ifndef LLMEM_SVG_CHART_H
#define LLMEM_SVG_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SVG_TICKS_MAX 24

/* How tick labels print. */
enum svg_num {
    SVG_NUM_PLAIN, /* as many decimals as the tick step needs */
    SVG_NUM_SI,    /* 1.5k, 20k, 1.2M: for throughputs */
};

struct svg_axis {
    double lo, hi;        /* domain; lo > 0 for a log scale */
    bool log2;            /* log2 scale (micro-batches double) */
    const double *ticks;  /* explicit ticks, or NULL for round ones */
    int nticks;
    const char *title;    /* axis title, with its unit */
    enum svg_num num;
};

struct svg_plot {
    double w, h;                     /* viewBox size */
    double left, right, top, bottom; /* margins around the plot area */
    struct svg_axis x, y;
    double xt[SVG_TICKS_MAX], yt[SVG_TICKS_MAX];
    int nxt, nyt;
};

/* Sets up a w x h chart with margins {left, right, top, bottom}; resolves the ticks. */
void svg_plot_init(struct svg_plot *p, double w, double h, const double margins[4],
                   const struct svg_axis *x, const struct svg_axis *y);

/* Domain value to viewBox coordinate. */
double svg_px(const struct svg_plot *p, double v);
double svg_py(const struct svg_plot *p, double v);

/* A finite coordinate for printing: NaN becomes 0, magnitudes are capped. */
double svg_clamp(double v);

/* Opens <svg> with role="img", a <title> (id "<id>-t") and a <desc> for screen
 * readers, then draws the grid, ticks and axis titles. title/desc are escaped. */
int svg_begin(FILE *f, const struct svg_plot *p, const char *id, const char *title,
              const char *desc);
int svg_end(FILE *f);

/* A clipPath named "<id>-clip" covering the plot area (for lines that leave it). */
int svg_clip(FILE *f, const struct svg_plot *p, const char *id);

/* Round numbers: the smallest multiple >= v of a 1-2-2.5-5 x 10^k step that splits v in
 * about `target` parts (1 when v is not positive), and up to `max` such ticks covering
 * [lo, hi]. */
double svg_nice_ceil(double v, int target);
int svg_nice_ticks(double lo, double hi, int target, double *out, int max);

/* A tick label for v, given the step between ticks. */
void svg_format(char *buf, size_t n, double v, double step, enum svg_num num);

#endif
