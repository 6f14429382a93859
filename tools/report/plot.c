/* SPDX-License-Identifier: MIT
 * plot.c -- line plots of values per optimizer step as inline SVG.
 *
 * A plot is PLOT_W x PLOT_H user units with margins for the tick labels;
 * both axes are widened to "nice" tick spacings (1, 2 or 5 times a power of
 * ten; whole steps on x), about 8 ticks on x and 5 on y.  Only finite
 * points are scaled and drawn: a value left out (NaN) breaks its line, and
 * the note under the plot counts them.  Coordinates are written with one
 * decimal, so the same points give the same bytes. */
#include <libxml/tree.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/report/htmldoc.h"
#include "tools/report/plot.h"

#define MAX_MARKS    40 /* a series with up to this many points marks each */
#define MAX_TICKS    24 /* per axis; axis() makes about 5 to 15 */
#define PLOT_W       520
#define PLOT_H       210
#define PLOT_L       72 /* margins: left (y labels), right, top, bottom (x labels) */
#define PLOT_R       24
#define PLOT_T       18
#define PLOT_B       42
#define DIVERGENCE_C "#b00020"

static const char *const palette[TPT_PLOT_COLORS] = {"#1f6feb", "#e07b00", "#2da44e", "#8250df",
                                                     "#8c564b", "#0598bc", "#d63384", "#6e7781"};

const char *tpt_plot_color(int k)
{
    return palette[k % TPT_PLOT_COLORS];
}

static double nice_num(double x, bool round_it)
{
    double e = floor(log10(x)), f = x / pow(10, e), nf;
    if (round_it)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

/* axis widens [lo, hi] to tick marks about want apart and gives their
 * spacing; integer: ticks on whole numbers (steps). */
static void axis(double *lo, double *hi, int want, bool integer, double *d)
{
    double span;
    if (!(*hi > *lo)) {
        double pad = *lo != 0 ? fabs(*lo) * 0.1 : 1;
        *lo -= pad;
        *hi += pad;
    }
    span = nice_num(*hi - *lo, false);
    *d = nice_num(span / (want - 1), true);
    if (integer && *d < 1) *d = 1;
    *lo = floor(*lo / *d) * *d;
    *hi = ceil(*hi / *d) * *d;
}

/* tick_label writes tick value v (ticks d apart) short: plain digits
 * unless it is very large or very small. */
static void tick_label(char *buf, size_t n, double v, double d)
{
    if (fabs(v) < d * 1e-9) v = 0;
    if (v != 0 && (fabs(v) >= 1e7 || fabs(v) < 1e-4))
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.7g", v);
}

typedef struct frame {
    double x0, x1, y0, y1;
} frame;

static double px(const frame *f, double x)
{
    return PLOT_L + (x - f->x0) / (f->x1 - f->x0) * (PLOT_W - PLOT_L - PLOT_R);
}

static double py(const frame *f, double y)
{
    return PLOT_T + (f->y1 - y) / (f->y1 - f->y0) * (PLOT_H - PLOT_T - PLOT_B);
}

static xmlNodePtr svg_line(tpt_htmldoc *pg, xmlNodePtr g, double x1, double y1, double x2,
                           double y2, const char *stroke)
{
    xmlNodePtr n = tpt_el(pg, g, "line", NULL);
    tpt_attrf(pg, n, "x1", "%.1f", x1);
    tpt_attrf(pg, n, "y1", "%.1f", y1);
    tpt_attrf(pg, n, "x2", "%.1f", x2);
    tpt_attrf(pg, n, "y2", "%.1f", y2);
    tpt_attr(pg, n, "stroke", stroke);
    return n;
}

static xmlNodePtr svg_text(tpt_htmldoc *pg, xmlNodePtr g, double x, double y, const char *anchor,
                           const char *text)
{
    xmlNodePtr n = tpt_el(pg, g, "text", text);
    tpt_attrf(pg, n, "x", "%.1f", x);
    tpt_attrf(pg, n, "y", "%.1f", y);
    tpt_attr(pg, n, "text-anchor", anchor);
    return n;
}

/* polyline draws the points from..to-1 of s (all finite) as one line. */
static void polyline(tpt_htmldoc *pg, xmlNodePtr g, const frame *f, const tpt_plot_series *s,
                     size_t from, size_t to, double width)
{
    size_t cap = (to - from) * 24 + 1, w = 0;
    char *pts = malloc(cap);
    xmlNodePtr n;
    if (pts == NULL) {
        pg->bad = true;
        return;
    }
    pts[0] = '\0';
    for (size_t i = from; i < to && w < cap; i++)
        w += (size_t)snprintf(pts + w, cap - w, "%s%.1f,%.1f", i > from ? " " : "", px(f, s->x[i]),
                              py(f, s->y[i]));
    n = tpt_el(pg, g, "polyline", NULL);
    tpt_attr(pg, n, "points", pts);
    tpt_attr(pg, n, "fill", "none");
    tpt_attr(pg, n, "stroke", s->color);
    tpt_attrf(pg, n, "stroke-width", "%.1f", width);
    tpt_attr(pg, n, "stroke-linejoin", "round");
    free(pts);
}

xmlNodePtr tpt_plot_chart(tpt_htmldoc *pg, xmlNodePtr parent, const char *title, const char *id,
                          const tpt_plot_series *s, int ns, const tpt_plot_mark *mark, bool multi)
{
    frame f = {0, 0, 0, 0};
    bool any = false;
    int left = 0;
    double dx, dy, v;
    char buf[64];
    xmlNodePtr fig = tpt_el(pg, parent, "figure", NULL), svg, g, cap;
    tpt_attr(pg, fig, "id", id);
    tpt_el(pg, fig, "h3", title);
    for (int k = 0; k < ns; k++) {
        for (size_t i = 0; i < s[k].n; i++) {
            if (isnan(s[k].y[i])) {
                left++;
                continue;
            }
            if (!any) {
                f.x0 = f.x1 = s[k].x[i];
                f.y0 = f.y1 = s[k].y[i];
                any = true;
            }
            f.x0 = fmin(f.x0, s[k].x[i]);
            f.x1 = fmax(f.x1, s[k].x[i]);
            f.y0 = fmin(f.y0, s[k].y[i]);
            f.y1 = fmax(f.y1, s[k].y[i]);
        }
    }
    if (!any || !isfinite(f.y1 - f.y0)) { /* a span too wide for a double: nothing to scale */
        cap = tpt_elc(pg, fig, "p", "note", NULL);
        tpt_textf(pg, cap, "No %s to plot", title);
        if (left)
            tpt_textf(pg, cap, " (%d non-finite value%s left out)", left, left == 1 ? "" : "s");
        tpt_text(pg, cap, ".");
        return fig;
    }
    if (mark != NULL) {
        f.x0 = fmin(f.x0, (double)mark->step);
        f.x1 = fmax(f.x1, (double)mark->step);
    }
    axis(&f.x0, &f.x1, 8, true, &dx);
    axis(&f.y0, &f.y1, 5, false, &dy);
    svg = tpt_el(pg, fig, "svg", NULL);
    tpt_attr(pg, svg, "class", "plot");
    tpt_attrf(pg, svg, "width", "%d", PLOT_W);
    tpt_attrf(pg, svg, "height", "%d", PLOT_H);
    tpt_attrf(pg, svg, "viewBox", "0 0 %d %d", PLOT_W, PLOT_H);
    tpt_attr(pg, svg, "role", "img");
    tpt_attrf(pg, svg, "aria-label", "%s per optimizer step", title);
    tpt_el(pg, svg, "title", title);
    g = tpt_el(pg, svg, "g", NULL);
    tpt_attr(pg, g, "class", "axes");
    for (int i = 0; i < MAX_TICKS && (v = f.y0 + i * dy) <= f.y1 + dy * 1e-6; i++) {
        svg_line(pg, g, PLOT_L, py(&f, v), PLOT_W - PLOT_R, py(&f, v), "#eaeef2");
        tick_label(buf, sizeof buf, v, dy);
        svg_text(pg, g, PLOT_L - 6, py(&f, v) + 4, "end", buf);
    }
    for (int i = 0; i < MAX_TICKS && (v = f.x0 + i * dx) <= f.x1 + dx * 1e-6; i++) {
        svg_line(pg, g, px(&f, v), PLOT_H - PLOT_B, px(&f, v), PLOT_H - PLOT_B + 5, "#57606a");
        tick_label(buf, sizeof buf, v, dx);
        svg_text(pg, g, px(&f, v), PLOT_H - PLOT_B + 18, "middle", buf);
    }
    svg_line(pg, g, PLOT_L, PLOT_H - PLOT_B, PLOT_W - PLOT_R, PLOT_H - PLOT_B, "#57606a");
    svg_line(pg, g, PLOT_L, PLOT_T, PLOT_L, PLOT_H - PLOT_B, "#57606a");
    svg_text(pg, g, (PLOT_L + PLOT_W - PLOT_R) / 2.0, PLOT_H - 6, "middle", "optimizer step");
    for (int k = 0; k < ns; k++) {
        /* the first lines wider, so that equal series stay visible under later ones */
        double width = 2.2 + 1.5 * fmax(0, (ns < 4 ? ns : 4) - 1 - k);
        size_t from = 0, finite = 0;
        g = tpt_el(pg, svg, "g", NULL);
        tpt_attr(pg, g, "class", "series");
        tpt_attr(pg, g, "data-role", s[k].role);
        tpt_textf(pg, tpt_el(pg, g, "title", NULL), "%s (execution %lld)", s[k].role,
                  (long long)s[k].exec);
        for (size_t i = 0; i <= s[k].n; i++) {
            if (i < s[k].n && !isnan(s[k].y[i])) {
                finite++;
                continue;
            }
            if (i > from) polyline(pg, g, &f, &s[k], from, i, width);
            from = i + 1;
        }
        for (size_t i = 0; finite <= MAX_MARKS && i < s[k].n; i++) {
            xmlNodePtr c;
            if (isnan(s[k].y[i])) continue;
            c = tpt_el(pg, g, "circle", NULL);
            tpt_attrf(pg, c, "cx", "%.1f", px(&f, s[k].x[i]));
            tpt_attrf(pg, c, "cy", "%.1f", py(&f, s[k].y[i]));
            tpt_attrf(pg, c, "r", "%.1f", width / 2 + 1);
            tpt_attr(pg, c, "fill", s[k].color);
        }
    }
    if (mark != NULL) {
        double x = px(&f, (double)mark->step);
        xmlNodePtr line;
        g = tpt_el(pg, svg, "g", NULL);
        tpt_attr(pg, g, "class", "divergence");
        line = svg_line(pg, g, x, PLOT_T, x, PLOT_H - PLOT_B, DIVERGENCE_C);
        tpt_attr(pg, line, "class", "divergence-marker");
        tpt_attr(pg, line, "stroke-width", "1.6");
        tpt_attr(pg, line, "stroke-dasharray", "6 4");
        tpt_attr(pg,
                 svg_text(pg, g, x + (x > PLOT_W - 160 ? -5 : 5), PLOT_T + 10,
                          x > PLOT_W - 160 ? "end" : "start", mark->label),
                 "style", "fill:" DIVERGENCE_C);
    }
    cap = tpt_elc(pg, fig, "p", "note", NULL);
    tpt_textf(pg, cap, "%d non-finite value%s (nan, inf) left out", left, left == 1 ? "" : "s");
    if (left) tpt_text(pg, cap, ": the line breaks where they were");
    if (multi)
        tpt_text(pg, cap, "; where a step has several (optimizers, parameter groups), the first");
    tpt_text(pg, cap, ".");
    return fig;
}

xmlNodePtr tpt_plot_legend(tpt_htmldoc *pg, xmlNodePtr parent)
{
    return tpt_elc(pg, parent, "ul", "legend", NULL);
}

xmlNodePtr tpt_plot_legend_line(tpt_htmldoc *pg, xmlNodePtr legend, const char *color)
{
    xmlNodePtr li = tpt_el(pg, legend, "li", NULL);
    tpt_attrf(pg, tpt_elc(pg, li, "span", "swatch", NULL), "style", "border-top-color:%s", color);
    return li;
}

xmlNodePtr tpt_plot_legend_mark(tpt_htmldoc *pg, xmlNodePtr legend)
{
    xmlNodePtr li = tpt_el(pg, legend, "li", NULL);
    tpt_attr(pg, tpt_elc(pg, li, "span", "swatch", NULL), "style",
             "border-top-color:" DIVERGENCE_C ";border-top-style:dashed");
    return li;
}
