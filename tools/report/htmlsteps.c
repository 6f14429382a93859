/* SPDX-License-Identifier: MIT
 * htmlsteps.c -- the HTML page's plots per step: loss, gradient norm and
 * learning rate, from the daemon's "steps" view as JSON
 * (daemon/store/query.h), drawn by tools/report/plot.h.
 *
 * One series per execution, that of its process of the lowest rank; a
 * value that is not finite is left out (NaN: the line breaks there) and
 * counted under the plot; where a step has several values (optimizers,
 * parameter groups) the first is drawn.  For resume, R's steps are drawn
 * on A's numbering. */
#include <jansson.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/errbuf.h"
#include "tools/report/htmldoc.h"
#include "tools/report/htmlsec.h"
#include "tools/report/plot.h"
#include "tools/report/reportval.h"

#define MAX_SERIES TPT_PLOT_COLORS /* executions plotted */

/* Where a series' points come from. */
typedef struct source {
    const json_t *steps; /* its process's rows */
    int64_t shift;       /* added to its step numbers: R's onto A's */
} source;

/* pick_series chooses, per execution, the process the plots follow: its
 * lowest rank (no rank: 0).  The steps document lists the processes by
 * execution, and so do s and src (no points yet). */
static int pick_series(const json_t *doc, tpt_plot_series *s, source *src)
{
    const json_t *procs = json_object_get(doc, "processes"), *p;
    int64_t rank[MAX_SERIES];
    size_t i;
    int n = 0, k;
    json_array_foreach(procs, i, p)
    {
        int64_t exec = json_integer_value(json_object_get(p, "execution"));
        int64_t rk = json_is_integer(json_object_get(p, "rank"))
                         ? json_integer_value(json_object_get(p, "rank"))
                         : 0;
        if (!json_is_array(json_object_get(p, "steps"))) continue;
        for (k = 0; k < n && s[k].exec != exec; k++) {}
        if (k == n) {
            if (n == MAX_SERIES) continue;
            memset(&s[n], 0, sizeof s[n]);
            memset(&src[n], 0, sizeof src[n]);
            s[n].exec = exec;
            s[n].color = tpt_plot_color(n);
            rank[n] = INT64_MAX;
            n++;
        }
        if (rk < rank[k]) {
            rank[k] = rk;
            s[k].role = tpt_jstr(p, "role") ? tpt_jstr(p, "role") : "?";
            src[k].steps = json_object_get(p, "steps");
        }
    }
    return n;
}

/* metric_value reads row's metric (the first of a list): 1 and *y for a
 * finite number, -1 for one that is not ("nan", "inf", "-inf"), 0 when the
 * step has none.  *multi: the row has more than one (optimizers, groups). */
static int metric_value(const json_t *row, const char *metric, double *y, bool *multi)
{
    const json_t *v = json_object_get(row, metric);
    if (json_is_array(v)) {
        if (json_array_size(v) > 1) *multi = true;
        v = json_array_get(v, 0);
    }
    if (json_is_number(v)) {
        *y = json_number_value(v);
        return isfinite(*y) ? 1 : -1;
    }
    if (json_is_string(v)) return -1;
    return 0;
}

/* read_points fills s's points with metric from src's rows, a value that
 * is not finite as NaN; false when out of memory. */
static bool read_points(tpt_plot_series *s, const source *src, const char *metric, bool *multi)
{
    size_t n = json_array_size(src->steps), i;
    const json_t *row;
    free(s->x);
    free(s->y);
    s->x = s->y = NULL;
    s->n = 0;
    if (n == 0) return true;
    s->x = malloc(n * sizeof *s->x);
    s->y = malloc(n * sizeof *s->y);
    if (s->x == NULL || s->y == NULL) return false;
    json_array_foreach(src->steps, i, row)
    {
        double y = 0;
        int got = metric_value(row, metric, &y, multi);
        if (got == 0 || !json_is_integer(json_object_get(row, "step"))) continue;
        s->x[s->n] = (double)(json_integer_value(json_object_get(row, "step")) + src->shift);
        s->y[s->n++] = got > 0 ? y : NAN;
    }
    return true;
}

/* plots draws loss, gradient norm and learning rate per step from the
 * daemon's steps document (NULL: why_not says why there is none). */
static void plots(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r, const json_t *doc,
                  const char *why_not)
{
    static const struct {
        const char *metric, *title, *id;
    } m[] = {{"loss", "loss", "plot-loss"},
             {"grad_norm", "gradient norm", "plot-grad-norm"},
             {"lr", "learning rate", "plot-lr"}};
    const json_t *fd = json_object_get(r, "first_divergence"), *ev = json_object_get(r, "evidence");
    bool has_div = json_is_integer(json_object_get(fd, "step"));
    int64_t div_step = has_div ? json_integer_value(json_object_get(fd, "step")) : 0;
    tpt_plot_series s[MAX_SERIES];
    source src[MAX_SERIES];
    char label[128];
    tpt_plot_mark mark = {div_step, label};
    int ns;
    xmlNodePtr sec = tpt_el(pg, body, "section", NULL), ul, li, div;
    tpt_attr(pg, sec, "id", "plots");
    tpt_el(pg, sec, "h2", "Per step");
    if (doc == NULL) {
        tpt_elc(pg, sec, "p", "note", why_not);
        return;
    }
    if ((ns = pick_series(doc, s, src)) == 0) {
        tpt_elc(pg, sec, "p", "note", "The daemon stored no training step for this run: no plot.");
        return;
    }
    /* resume: R numbers its steps from the load; drawn on A's numbering */
    if (tpt_jstr(r, "check") && !strcmp(tpt_jstr(r, "check"), "resume") &&
        json_is_integer(json_object_get(ev, "aligned_step")) &&
        json_is_integer(json_object_get(ev, "resumed_from_step")))
        for (int k = 0; k < ns; k++)
            if (!strcmp(s[k].role, "R"))
                src[k].shift = json_integer_value(json_object_get(ev, "aligned_step")) -
                               json_integer_value(json_object_get(ev, "resumed_from_step"));
    snprintf(label, sizeof label, "first divergence, step %lld", (long long)div_step);
    ul = tpt_plot_legend(pg, sec);
    for (int k = 0; k < ns; k++) {
        li = tpt_plot_legend_line(pg, ul, s[k].color);
        if (tpt_role_what(s[k].role))
            tpt_textf(pg, li, "%s (%s), execution %lld", s[k].role, tpt_role_what(s[k].role),
                      (long long)s[k].exec);
        else
            tpt_textf(pg, li, "%s, execution %lld", s[k].role, (long long)s[k].exec);
        if (src[k].shift)
            tpt_textf(pg, li, "; its step k drawn at A's step k %s %lld",
                      src[k].shift > 0 ? "+" : "-", (long long)llabs(src[k].shift));
    }
    if (has_div) {
        li = tpt_plot_legend_mark(pg, ul);
        tpt_text(pg, li, label);
        if (json_is_integer(json_object_get(fd, "step_other")) && tpt_jstr(fd, "between") &&
            strchr(tpt_jstr(fd, "between"), '-') != NULL) {
            const char *b = tpt_jstr(fd, "between"), *dash = strchr(b, '-');
            tpt_textf(pg, li, " (in %.*s's numbering; %s's step %lld)", (int)(dash - b), b,
                      dash + 1, (long long)json_integer_value(json_object_get(fd, "step_other")));
        }
    }
    tpt_elc(pg, sec, "p", "note",
            "One line per execution (its process of the lowest rank), per optimizer step; the "
            "loss is the sum of the step's backward losses.");
    div = tpt_elc(pg, sec, "div", "plots", NULL);
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        bool multi = false;
        for (int i = 0; i < ns; i++)
            if (!read_points(&s[i], &src[i], m[k].metric, &multi)) pg->bad = true;
        if (!pg->bad)
            tpt_plot_chart(pg, div, m[k].title, m[k].id, s, ns, has_div ? &mark : NULL, multi);
    }
    for (int i = 0; i < ns; i++) {
        free(s[i].x);
        free(s[i].y);
    }
}

/* steps_doc parses the run's steps; NULL with why said in why (n bytes)
 * when there are none to draw. */
static json_t *steps_doc(const tpt_html_steps_in *in, const json_t *r, char *why, size_t n)
{
    json_t *doc;
    const char *check = tpt_jstr(r, "check");
    if (check && !strcmp(check, "coverage")) {
        snprintf(why, n,
                 "No plot: the coverage check judges which sample ids each epoch delivered to "
                 "each rank, not values per optimizer step.");
        return NULL;
    }
    if (in->json == NULL) {
        snprintf(why, n, "%s",
                 in->why_not && in->why_not[0] ? in->why_not : "No plot: no steps were given.");
        return NULL;
    }
    doc = json_loads(in->json, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(why, n,
                 "No plot: the daemon's steps were not JSON (a daemon older than the "
                 "tool?).");
        return NULL;
    }
    return doc;
}

void tpt_html_steps(tpt_htmldoc *pg, xmlNodePtr body, const tpt_html_steps_in *steps,
                    const json_t *r)
{
    char why[512] = "";
    json_t *doc = steps_doc(steps, r, why, sizeof why);
    plots(pg, body, r, doc, why);
    json_decref(doc);
}
