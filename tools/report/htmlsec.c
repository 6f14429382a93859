/* SPDX-License-Identifier: MIT
 * htmlsec.c -- the sections of the HTML page that every check has: the
 * verdict, the first divergence, the components that differ at its step,
 * the explanation and the executions.  The report is read generically where
 * the checks differ (the members of the first divergence, the sides of the
 * divergences), its values in words by tools/report/reportval.h. */
#include <jansson.h>
#include <libxml/tree.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/report/htmldoc.h"
#include "tools/report/htmlsec.h"
#include "tools/report/reportval.h"

#define MAX_DIVS 40 /* divergences listed */

/* fact appends a row "name value" to table and returns its cell. */
static xmlNodePtr fact(tpt_htmldoc *pg, xmlNodePtr table, const char *name, const char *value)
{
    xmlNodePtr tr = tpt_el(pg, table, "tr", NULL);
    tpt_el(pg, tr, "th", name);
    return tpt_el(pg, tr, "td", value);
}

void tpt_html_verdict(tpt_htmldoc *pg, xmlNodePtr body, const tpt_opts *o, int64_t run,
                      const tpt_verdict_info *v, const json_t *r)
{
    const char *oc = v->outcome ? v->outcome : "ERROR", *check = tpt_jstr(r, "check");
    const json_t *cmp = json_object_get(r, "comparison");
    const json_t *wall = json_object_get(json_object_get(r, "evidence"), "wall_time");
    char cmd[4096], cls[32];
    xmlNodePtr head = tpt_elc(pg, body, "header", "verdict", NULL), box, t;
    tpt_line l = {.n = 0};
    snprintf(cls, sizeof cls, "outcome o-%s", oc);
    tpt_attr(pg, tpt_elc(pg, head, "div", cls, oc), "id", "outcome");
    box = tpt_el(pg, head, "div", NULL);
    t = tpt_el(pg, box, "h1", NULL);
    tpt_textf(pg, t, "trainparity %s", check ? check : "check");
    t = tpt_el(pg, box, "table", NULL);
    tpt_attr(pg, t, "class", "facts");
    tpt_textf(pg, fact(pg, t, "run", NULL), "%lld", (long long)run);
    tpt_argv_join(o->cmd, cmd, sizeof cmd);
    tpt_elc(pg, fact(pg, t, "command", NULL), "code", "mono", cmd);
    if (tpt_jstr(cmp, "mode") && !strcmp(tpt_jstr(cmp, "mode"), "tolerance")) {
        tpt_lprintf(&l, "within a tolerance:");
        tpt_put_member(&l, cmp, "rtol", "rtol");
        tpt_put_member(&l, cmp, "atol", "atol");
        fact(pg, t, "comparison", l.s);
    } else if (tpt_jstr(cmp, "mode")) {
        fact(pg, t, "comparison", "exact (equal digests)");
    }
    if (json_is_number(json_object_get(wall, "check_s")))
        tpt_textf(pg, fact(pg, t, "wall time", NULL), "%.1f s",
                  json_number_value(json_object_get(wall, "check_s")));
    if (tpt_jstr(r, "trainparity_version"))
        fact(pg, t, "trainparity", tpt_jstr(r, "trainparity_version"));
    if (tpt_jstr(r, "reason")) tpt_el(pg, body, "p", tpt_jstr(r, "reason"));
}

void tpt_html_first_divergence(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *fd = json_object_get(r, "first_divergence"), *v;
    const char *key;
    xmlNodePtr sec = tpt_el(pg, body, "section", NULL), t;
    tpt_attr(pg, sec, "id", "first-divergence");
    tpt_el(pg, sec, "h2", "First divergence");
    if (!json_is_object(fd)) {
        tpt_el(pg, sec, "p", "None: the check found no violation to point at.");
        return;
    }
    t = tpt_el(pg, sec, "table", NULL);
    json_object_foreach((json_t *)fd, key, v)
    {
        xmlNodePtr tr = tpt_el(pg, t, "tr", NULL), th = tpt_el(pg, tr, "th", key), td;
        tpt_line l = {.n = 0};
        if (tpt_is_val(v) && tpt_role_what(key)) tpt_textf(pg, th, " (%s)", tpt_role_what(key));
        if (tpt_is_val(v))
            tpt_put_val(&l, v);
        else
            tpt_put_json(&l, v);
        td = tpt_el(pg, tr, "td", NULL);
        tpt_attr(pg, td, "data-key", key);
        if (!strcmp(key, "path"))
            tpt_elc(pg, td, "code", "path", l.s);
        else if (tpt_is_val(v))
            tpt_elc(pg, td, "code", "mono", l.s);
        else
            tpt_text(pg, td, l.s);
    }
}

void tpt_html_divergences(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *all = json_object_get(r, "divergences"), *d0 = json_array_get(all, 0), *d, *v;
    const char *sides[4], *key;
    int nsides = 0;
    size_t i;
    xmlNodePtr sec, t, tr;
    if (!json_is_array(all) || !json_is_object(json_object_get(r, "first_divergence"))) return;
    sec = tpt_el(pg, body, "section", NULL);
    tpt_attr(pg, sec, "id", "divergences");
    tpt_el(pg, sec, "h2", "Components that differ at that step");
    if (json_array_size(all) == 0) {
        tpt_el(pg, sec, "p", "None.");
        return;
    }
    json_object_foreach((json_t *)d0, key, v)
    {
        if (nsides < 4 && strcmp(key, "path") && strcmp(key, "group") && strcmp(key, "unsure") &&
            strncmp(key, "max_", 4))
            sides[nsides++] = key;
    }
    t = tpt_el(pg, sec, "table", NULL);
    tr = tpt_el(pg, t, "tr", NULL);
    tpt_el(pg, tr, "th", "component");
    tpt_el(pg, tr, "th", "group");
    for (int k = 0; k < nsides; k++) tpt_el(pg, tr, "th", sides[k]);
    tpt_el(pg, tr, "th", "max abs / rel error");
    json_array_foreach(all, i, d)
    {
        tpt_line e = {.n = 0};
        if (i == MAX_DIVS) {
            tpt_textf(pg, tpt_el(pg, sec, "p", NULL),
                      "... and %zu more (the JSON report lists them all)",
                      json_array_size(all) - MAX_DIVS);
            break;
        }
        tr = tpt_el(pg, t, "tr", NULL);
        if (i == 0) tpt_attr(pg, tr, "class", "first");
        tpt_elc(pg, tpt_el(pg, tr, "td", NULL), "code", "path", tpt_jstr(d, "path"));
        tpt_el(pg, tr, "td", tpt_jstr(d, "group"));
        for (int k = 0; k < nsides; k++) {
            tpt_line l = {.n = 0};
            tpt_put_val(&l, json_object_get(d, sides[k]));
            tpt_elc(pg, tpt_el(pg, tr, "td", NULL), "code", "mono", l.s);
        }
        if (json_object_get(d, "max_abs_error")) {
            tpt_put_json(&e, json_object_get(d, "max_abs_error"));
            tpt_lprintf(&e, " / ");
            tpt_put_json(&e, json_object_get(d, "max_rel_error"));
        }
        tpt_el(pg, tr, "td", e.s);
    }
}

void tpt_html_explanation(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *why = json_object_get(r, "explanation"), *w;
    size_t i;
    xmlNodePtr sec = tpt_el(pg, body, "section", NULL), ol;
    tpt_attr(pg, sec, "id", "explanation");
    tpt_el(pg, sec, "h2", "Why (from the evidence)");
    if (json_array_size(why) == 0) {
        tpt_el(pg, sec, "p", "The report gives no explanation.");
        return;
    }
    ol = tpt_elc(pg, sec, "ol", "why", NULL);
    json_array_foreach(why, i, w)
    {
        xmlNodePtr li = tpt_el(pg, ol, "li", NULL);
        if (tpt_jstr(w, "kind")) tpt_elc(pg, li, "span", "kind", tpt_jstr(w, "kind"));
        tpt_elc(pg, li, "span", "text", tpt_jstr(w, "text"));
    }
}

void tpt_html_executions(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *ev = json_object_get(r, "evidence"), *ex = json_object_get(ev, "executions"), *e;
    size_t i;
    xmlNodePtr sec, t, tr;
    if (json_array_size(ex) == 0) return;
    sec = tpt_el(pg, body, "section", NULL);
    tpt_attr(pg, sec, "id", "executions");
    tpt_el(pg, sec, "h2", "Executions");
    t = tpt_el(pg, sec, "table", NULL);
    tr = tpt_el(pg, t, "tr", NULL);
    tpt_el(pg, tr, "th", "role");
    tpt_el(pg, tr, "th", "execution");
    tpt_el(pg, tr, "th", "steps");
    tpt_el(pg, tr, "th", "exit");
    tpt_el(pg, tr, "th", "wall time");
    tpt_el(pg, tr, "th", "command");
    json_array_foreach(ex, i, e)
    {
        tpt_line l = {.n = 0}, a = {.n = 0};
        const json_t *w;
        size_t k;
        tr = tpt_el(pg, t, "tr", NULL);
        if (tpt_role_what(tpt_jstr(e, "role")))
            tpt_lprintf(&l, "%s (%s)", tpt_jstr(e, "role"), tpt_role_what(tpt_jstr(e, "role")));
        else
            tpt_put_json(&l, json_object_get(e, "role"));
        tpt_el(pg, tr, "td", l.s);
        l.n = 0;
        tpt_put_json(&l, json_object_get(e, "execution"));
        tpt_el(pg, tr, "td", l.s);
        l.n = 0;
        tpt_put_json(&l, json_object_get(e, "steps"));
        tpt_el(pg, tr, "td", l.s);
        l.n = 0;
        if (json_is_integer(json_object_get(e, "exit_signal")))
            tpt_lprintf(&l, "signal %lld",
                        (long long)json_integer_value(json_object_get(e, "exit_signal")));
        else
            tpt_put_json(&l, json_object_get(e, "exit_status"));
        tpt_el(pg, tr, "td", l.s);
        l.n = 0;
        if (json_is_number(json_object_get(e, "wall_s")))
            tpt_lprintf(&l, "%.1f s", json_number_value(json_object_get(e, "wall_s")));
        tpt_el(pg, tr, "td", l.s);
        json_array_foreach(json_object_get(e, "argv"), k, w)
            tpt_lprintf(&a, "%s%s", k ? " " : "", json_string_value(w) ? json_string_value(w) : "");
        tpt_elc(pg, tpt_el(pg, tr, "td", NULL), "code", "mono", a.s);
    }
}
