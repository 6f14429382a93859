/* SPDX-License-Identifier: MIT
 * plot.h -- line plots of values per optimizer step as inline SVG, built
 * into a libxml2 tree (tools/report/htmldoc.h): one line per series, axes with
 * tick labels, the first divergence's step as a dashed vertical line, and
 * the legend's swatches for the lines and the marker.  The page's style
 * sheet (tools/report/html.c) gives the classes used here (plot, note, legend,
 * swatch) their look. */
#ifndef TP_TOOLS_REPORT_PLOT_H
#define TP_TOOLS_REPORT_PLOT_H

#include <libxml/tree.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/report/htmldoc.h"

#define TPT_PLOT_COLORS 8 /* distinct line colors (tpt_plot_color) */

/* One line: an execution's values of one metric. */
typedef struct tpt_plot_series {
    const char *role;  /* the execution's role: data-role and, with exec, its title */
    int64_t exec;      /* the execution */
    const char *color; /* its line's color, e.g. tpt_plot_color(k) */
    size_t n;          /* points */
    double *x, *y;     /* step and value; y NaN: a value left out (not finite),
                          where the line breaks.  Owned by the caller. */
} tpt_plot_series;

/* The first divergence, marked on every plot. */
typedef struct tpt_plot_mark {
    int64_t step;      /* drawn at x = step */
    const char *label; /* written beside the marker */
} tpt_plot_mark;

/* tpt_plot_color is the k-th of TPT_PLOT_COLORS line colors (0 <= k). */
const char *tpt_plot_color(int k);

/* tpt_plot_chart appends to parent a figure (id, headed title) that draws
 * the ns series s: axes wide enough for every finite point and the mark
 * (NULL: none), a line per series broken where a value was left out, each
 * point a dot when the series has few, the first series drawn widest so
 * that equal series stay visible under later ones.  Under it a note counts
 * the values left out; multi adds that where a step had several values
 * (optimizers, parameter groups) the first was drawn.  With no finite
 * point, the figure is only a note that there is nothing to plot.  Returns
 * the figure: NULL (and d->bad) when it could not be made. */
xmlNodePtr tpt_plot_chart(tpt_htmldoc *d, xmlNodePtr parent, const char *title, const char *id,
                          const tpt_plot_series *s, int ns, const tpt_plot_mark *mark, bool multi);

/* tpt_plot_legend appends to parent an empty legend list for the items
 * below and returns it. */
xmlNodePtr tpt_plot_legend(tpt_htmldoc *d, xmlNodePtr parent);

/* tpt_plot_legend_line appends to legend an item with a swatch of color's
 * line and returns the item, for the caller's words. */
xmlNodePtr tpt_plot_legend_line(tpt_htmldoc *d, xmlNodePtr legend, const char *color);

/* tpt_plot_legend_mark is tpt_plot_legend_line for the divergence marker
 * (its color, dashed). */
xmlNodePtr tpt_plot_legend_mark(tpt_htmldoc *d, xmlNodePtr legend);

#endif
