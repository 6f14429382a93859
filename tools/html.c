/* SPDX-License-Identifier: MIT
 * html.c -- a verdict as one self-contained HTML page, built as a libxml2
 * tree (HTMLtree.h, tree.h) and serialized by libxml2's HTML writer, so
 * that escaping and encoding are the library's: no text of the report or
 * the command is ever pasted into markup here.
 *
 * What the page says comes from the verdict's JSON report
 * (docs/report-schema.md), read generically where the checks differ (the
 * members of the first divergence, the sides of the divergences); the
 * plots come from the daemon's "steps" view as JSON (daemon/store/query.h),
 * one series per execution (its lowest rank), drawn as inline SVG: finite
 * points only, a series broken where a value was not finite, and the count
 * of those said under the plot.  The page fetches nothing: the style is
 * inline, there is no script, no image, no font. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <libxml/HTMLtree.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/errbuf.h"
#include "tools/html.h"

#define MAX_SERIES   8  /* executions plotted */
#define MAX_DIVS     40 /* divergences listed */
#define MAX_MARKS    40 /* a series with up to this many points marks each */
#define MAX_TICKS    24 /* per axis; axis() makes about 5 to 15 */
#define PLOT_W       520
#define PLOT_H       210
#define PLOT_L       72 /* margins: left (y labels), right, top, bottom (x labels) */
#define PLOT_R       24
#define PLOT_T       18
#define PLOT_B       42
#define DIVERGENCE_C "#b00020"

static const char style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;"
    "color:#1b1f24;max-width:1080px;margin:20px auto;padding:0 18px;line-height:1.4}"
    "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .5em;"
    "border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{font-size:1em;margin:1em 0 .3em}"
    ".verdict{display:flex;gap:22px;align-items:center;flex-wrap:wrap}"
    ".outcome{font-size:2.4em;font-weight:800;letter-spacing:.04em;color:#fff;"
    "padding:6px 22px;border-radius:8px}"
    ".o-PASS{background:#1a7f37}.o-FAIL{background:#c62828}.o-ABSTAIN{background:#9a6700}"
    ".o-ERROR{background:#6639ba}"
    "table{border-collapse:collapse;margin:.3em 0}"
    "th,td{text-align:left;vertical-align:top;padding:3px 10px 3px 0;"
    "border-bottom:1px solid #eaeef2}th{font-weight:600;white-space:nowrap}"
    "code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
    "font-size:.88em;overflow-wrap:anywhere}"
    "pre{white-space:pre-wrap;background:#f6f8fa;padding:10px;border-radius:6px}"
    ".path{font-weight:700}.first td{background:#fff4f4}"
    ".why li{margin:.35em 0}.why .text{white-space:pre-wrap}figure{margin:0;flex:1 1 "
    "500px;max-width:540px}"
    ".plots{display:flex;flex-wrap:wrap;gap:4px 28px}"
    "td ul{margin:0;padding-left:1.1em}"
    ".kind{font-family:ui-monospace,monospace;font-size:.8em;background:#ddf4ff;"
    "border-radius:4px;padding:0 5px;margin-right:6px}"
    ".eq-true{color:#1a7f37;font-weight:700}.eq-false{color:#c62828;font-weight:700}"
    ".eq-null{color:#6e7781}"
    ".note{color:#57606a;font-size:.9em}"
    ".legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:6px 20px}"
    ".swatch{display:inline-block;width:26px;height:0;border-top-width:4px;"
    "border-top-style:solid;vertical-align:middle;margin-right:6px}"
    "svg.plot{display:block;max-width:100%;height:auto;margin:.2em 0 0}"
    "svg.plot text{font-size:11px;fill:#444}";

/* ---- the tree ---- */

typedef struct page {
    xmlDocPtr doc;
    bool bad; /* an allocation failed: the page is not written */
} page;

/* add_text appends s to n as text (escaped when written).  Bytes that are
 * not UTF-8 (a file name in the command) become '?'. */
static void add_text(page *pg, xmlNodePtr n, const char *s)
{
    xmlNodePtr t;
    char *copy = NULL;
    if (n == NULL || s == NULL) return;
    if (!xmlCheckUTF8(BAD_CAST s)) {
        if ((copy = strdup(s)) == NULL) {
            pg->bad = true;
            return;
        }
        for (unsigned char *p = (unsigned char *)copy; *p; p++)
            if (*p >= 0x80) *p = '?';
        s = copy;
    }
    t = xmlNewDocText(pg->doc, BAD_CAST s);
    if (t == NULL || xmlAddChild(n, t) == NULL) {
        xmlFreeNode(t);
        pg->bad = true;
    }
    free(copy);
}

static void add_textf(page *pg, xmlNodePtr n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_textf(page *pg, xmlNodePtr n, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    add_text(pg, n, buf);
}

/* el appends element name to parent, with text when not NULL.  NULL (and
 * pg->bad) when it could not; every helper takes a NULL parent as a no-op,
 * so a failure surfaces once, at the end. */
static xmlNodePtr el(page *pg, xmlNodePtr parent, const char *name, const char *text)
{
    xmlNodePtr n;
    if (parent == NULL) return NULL;
    if ((n = xmlNewChild(parent, NULL, BAD_CAST name, NULL)) == NULL) {
        pg->bad = true;
        return NULL;
    }
    add_text(pg, n, text);
    return n;
}

static void attr(page *pg, xmlNodePtr n, const char *name, const char *value)
{
    if (n != NULL && xmlNewProp(n, BAD_CAST name, BAD_CAST value) == NULL) pg->bad = true;
}

static void attrf(page *pg, xmlNodePtr n, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void attrf(page *pg, xmlNodePtr n, const char *name, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    attr(pg, n, name, buf);
}

/* elc is el with a class. */
static xmlNodePtr elc(page *pg, xmlNodePtr parent, const char *name, const char *cls,
                      const char *text)
{
    xmlNodePtr n = el(pg, parent, name, text);
    attr(pg, n, "class", cls);
    return n;
}

/* ---- values, as the report gives them ---- */

/* A growing line of text, cut at its size. */
typedef struct line {
    char s[1536];
    size_t n;
} line;

static void lprintf(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lprintf(line *l, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (l->n >= sizeof l->s - 1) return;
    va_start(ap, fmt);
    w = vsnprintf(l->s + l->n, sizeof l->s - l->n, fmt, ap);
    va_end(ap);
    if (w > 0) l->n += (size_t)w;
    if (l->n >= sizeof l->s) l->n = sizeof l->s - 1;
}

/* put_json appends v: a string as it is, a number in full, anything else
 * as compact JSON. */
static void put_json(line *l, const json_t *v)
{
    char *s;
    if (v == NULL) {
        lprintf(l, "-");
    } else if (json_is_string(v)) {
        lprintf(l, "%s", json_string_value(v));
    } else if (json_is_integer(v)) {
        lprintf(l, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        lprintf(l, "%.9g", json_real_value(v));
    } else if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL) {
        lprintf(l, "%s", s);
        free(s);
    }
}

/* put_member appends " key value" when o has key. */
static void put_member(line *l, const json_t *o, const char *key, const char *label)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) return;
    lprintf(l, " %s ", label);
    put_json(l, v);
}

/* put_val appends a value of the report (docs/report-schema.md, Values) in
 * one line: every member it has, in words; "absent" for null. */
static void put_val(line *l, const json_t *v)
{
    const char *kind = json_string_value(json_object_get(v, "kind"));
    if (v == NULL || json_is_null(v)) {
        lprintf(l, "absent");
    } else if (kind && !strcmp(kind, "tensor")) {
        const json_t *shape = json_object_get(v, "shape");
        size_t i;
        const json_t *d;
        lprintf(l, "tensor ");
        put_json(l, json_object_get(v, "dtype"));
        lprintf(l, " [");
        json_array_foreach(shape, i, d)
            lprintf(l, "%s%lld", i ? ", " : "", (long long)json_integer_value(d));
        lprintf(l, "]");
        put_member(l, v, "sum", "sum");
        put_member(l, v, "l2", "l2");
        put_member(l, v, "maxabs", "maxabs");
        put_member(l, v, "nonfinite", "nonfinite");
        put_member(l, v, "digest", "digest");
    } else if (kind && !strcmp(kind, "digest")) {
        lprintf(l, "digest ");
        put_json(l, json_object_get(v, "digest"));
        put_member(l, v, "items", "items");
    } else if (kind && !strcmp(kind, "ids")) {
        lprintf(l, "sample ids:");
        put_member(l, v, "count", "count");
        put_member(l, v, "first", "first");
        put_member(l, v, "digest", "digest");
    } else if (kind && !strcmp(kind, "value")) {
        const json_t *x = json_object_get(v, "value");
        if (json_is_string(x)) {
            char *s = json_dumps(x, JSON_ENCODE_ANY);
            lprintf(l, "%s", s ? s : "?");
            free(s);
        } else {
            put_json(l, x);
        }
    } else {
        put_json(l, v);
    }
}

/* is_val says whether v is a value of the report (or null, an absent side). */
static bool is_val(const json_t *v)
{
    return json_is_null(v) || (json_is_object(v) && json_is_string(json_object_get(v, "kind")));
}

/* role_what describes an execution's role in a few words. */
static const char *role_what(const char *role)
{
    static const struct {
        const char *role, *what;
    } t[] = {{"A", "uninterrupted"},
             {"B", "uninterrupted, again"},
             {"I", "interrupted after its save"},
             {"R", "resumed from I's checkpoint"},
             {"G", "the golden run"},
             {"C", "the command"},
             {"D", "the command, again"},
             {"micro", "accumulating micro-batches"},
             {"full", "full batches"},
             {"health", "the training"}};
    for (size_t i = 0; role && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(role, t[i].role)) return t[i].what;
    return NULL;
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && s[0] ? s : NULL;
}

/* ---- sections ---- */

static xmlNodePtr fact(page *pg, xmlNodePtr table, const char *name, const char *value)
{
    xmlNodePtr tr = el(pg, table, "tr", NULL);
    el(pg, tr, "th", name);
    return el(pg, tr, "td", value);
}

static void verdict(page *pg, xmlNodePtr body, const tpt_opts *o, int64_t run,
                    const tpt_verdict_info *v, const json_t *r)
{
    const char *oc = v->outcome ? v->outcome : "ERROR", *check = jstr(r, "check");
    const json_t *cmp = json_object_get(r, "comparison");
    const json_t *wall = json_object_get(json_object_get(r, "evidence"), "wall_time");
    char cmd[4096], cls[32];
    xmlNodePtr head = elc(pg, body, "header", "verdict", NULL), box, t;
    line l = {.n = 0};
    snprintf(cls, sizeof cls, "outcome o-%s", oc);
    attr(pg, elc(pg, head, "div", cls, oc), "id", "outcome");
    box = el(pg, head, "div", NULL);
    t = el(pg, box, "h1", NULL);
    add_textf(pg, t, "trainparity %s", check ? check : "check");
    t = el(pg, box, "table", NULL);
    attr(pg, t, "class", "facts");
    add_textf(pg, fact(pg, t, "run", NULL), "%lld", (long long)run);
    tpt_argv_join(o->cmd, cmd, sizeof cmd);
    elc(pg, fact(pg, t, "command", NULL), "code", "mono", cmd);
    if (jstr(cmp, "mode") && !strcmp(jstr(cmp, "mode"), "tolerance")) {
        lprintf(&l, "within a tolerance:");
        put_member(&l, cmp, "rtol", "rtol");
        put_member(&l, cmp, "atol", "atol");
        fact(pg, t, "comparison", l.s);
    } else if (jstr(cmp, "mode")) {
        fact(pg, t, "comparison", "exact (equal digests)");
    }
    if (json_is_number(json_object_get(wall, "check_s")))
        add_textf(pg, fact(pg, t, "wall time", NULL), "%.1f s",
                  json_number_value(json_object_get(wall, "check_s")));
    if (jstr(r, "trainparity_version")) fact(pg, t, "trainparity", jstr(r, "trainparity_version"));
    if (jstr(r, "reason")) el(pg, body, "p", jstr(r, "reason"));
}

/* first_divergence lists every member of the report's first divergence in
 * its order: the values of the sides in one line each, under their roles. */
static void first_divergence(page *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *fd = json_object_get(r, "first_divergence"), *v;
    const char *key;
    xmlNodePtr sec = el(pg, body, "section", NULL), t;
    attr(pg, sec, "id", "first-divergence");
    el(pg, sec, "h2", "First divergence");
    if (!json_is_object(fd)) {
        el(pg, sec, "p", "None: the check found no violation to point at.");
        return;
    }
    t = el(pg, sec, "table", NULL);
    json_object_foreach((json_t *)fd, key, v)
    {
        xmlNodePtr tr = el(pg, t, "tr", NULL), th = el(pg, tr, "th", key), td;
        line l = {.n = 0};
        if (is_val(v) && role_what(key)) add_textf(pg, th, " (%s)", role_what(key));
        if (is_val(v))
            put_val(&l, v);
        else
            put_json(&l, v);
        td = el(pg, tr, "td", NULL);
        attr(pg, td, "data-key", key);
        if (!strcmp(key, "path"))
            elc(pg, td, "code", "path", l.s);
        else if (is_val(v))
            elc(pg, td, "code", "mono", l.s);
        else
            add_text(pg, td, l.s);
    }
}

/* divergences lists the components that differ at the first divergence's
 * step (the first one first): path, group, each side's value, the errors
 * of captured values. */
static void divergences(page *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *all = json_object_get(r, "divergences"), *d0 = json_array_get(all, 0), *d, *v;
    const char *sides[4], *key;
    int nsides = 0;
    size_t i;
    xmlNodePtr sec, t, tr;
    if (!json_is_array(all) || !json_is_object(json_object_get(r, "first_divergence"))) return;
    sec = el(pg, body, "section", NULL);
    attr(pg, sec, "id", "divergences");
    el(pg, sec, "h2", "Components that differ at that step");
    if (json_array_size(all) == 0) {
        el(pg, sec, "p", "None.");
        return;
    }
    json_object_foreach((json_t *)d0, key, v)
    {
        if (nsides < 4 && strcmp(key, "path") && strcmp(key, "group") && strcmp(key, "unsure") &&
            strncmp(key, "max_", 4))
            sides[nsides++] = key;
    }
    t = el(pg, sec, "table", NULL);
    tr = el(pg, t, "tr", NULL);
    el(pg, tr, "th", "component");
    el(pg, tr, "th", "group");
    for (int k = 0; k < nsides; k++) el(pg, tr, "th", sides[k]);
    el(pg, tr, "th", "max abs / rel error");
    json_array_foreach(all, i, d)
    {
        line e = {.n = 0};
        if (i == MAX_DIVS) {
            add_textf(pg, el(pg, sec, "p", NULL),
                      "... and %zu more (the JSON report lists them all)",
                      json_array_size(all) - MAX_DIVS);
            break;
        }
        tr = el(pg, t, "tr", NULL);
        if (i == 0) attr(pg, tr, "class", "first");
        elc(pg, el(pg, tr, "td", NULL), "code", "path", jstr(d, "path"));
        el(pg, tr, "td", jstr(d, "group"));
        for (int k = 0; k < nsides; k++) {
            line l = {.n = 0};
            put_val(&l, json_object_get(d, sides[k]));
            elc(pg, el(pg, tr, "td", NULL), "code", "mono", l.s);
        }
        if (json_object_get(d, "max_abs_error")) {
            put_json(&e, json_object_get(d, "max_abs_error"));
            lprintf(&e, " / ");
            put_json(&e, json_object_get(d, "max_rel_error"));
        }
        el(pg, tr, "td", e.s);
    }
}

static void explanation(page *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *why = json_object_get(r, "explanation"), *w;
    size_t i;
    xmlNodePtr sec = el(pg, body, "section", NULL), ol;
    attr(pg, sec, "id", "explanation");
    el(pg, sec, "h2", "Why (from the evidence)");
    if (json_array_size(why) == 0) {
        el(pg, sec, "p", "The report gives no explanation.");
        return;
    }
    ol = elc(pg, sec, "ol", "why", NULL);
    json_array_foreach(why, i, w)
    {
        xmlNodePtr li = el(pg, ol, "li", NULL);
        if (jstr(w, "kind")) elc(pg, li, "span", "kind", jstr(w, "kind"));
        elc(pg, li, "span", "text", jstr(w, "text"));
    }
}

static const char *restored_words(const char *how)
{
    if (how == NULL) return "-";
    if (!strcmp(how, "checkpoint")) return "from the checkpoint";
    if (!strcmp(how, "elsewhere")) return "from a state no file of I's holds";
    if (!strcmp(how, "reseeded")) return "re-seeded";
    if (!strcmp(how, "no")) return "not restored";
    return how;
}

/* state_after_load is the resume evidence's table: per group, whether R's
 * state right after loading equals I's at the save. */
static void state_after_load(page *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *ev = json_object_get(r, "evidence"),
                 *sal = json_object_get(ev, "state_after_load");
    const json_t *g, *ex;
    size_t i, k;
    xmlNodePtr sec = el(pg, body, "section", NULL), t, tr, p;
    attr(pg, sec, "id", "state-after-load");
    el(pg, sec, "h2", "State after loading");
    if (!json_is_array(sal)) {
        el(pg, sec, "p",
           json_is_null(sal) ? "Not compared: the check did not get as far as a load of I's "
                               "checkpoint by R."
                             : "The report does not say (a daemon older than state_after_load).");
        return;
    }
    p = elc(pg, sec, "p", "note", NULL);
    add_textf(pg, p,
              "R's state at its first step after loading the checkpoint (R's step %lld) against "
              "I's at the aligned step %lld, when it saved",
              (long long)json_integer_value(json_object_get(ev, "resumed_from_step")),
              (long long)json_integer_value(json_object_get(ev, "aligned_step")));
    add_text(pg, p, " (I's snapshot at the start of that step; \"at the save\" where noted).");
    t = el(pg, sec, "table", NULL);
    tr = el(pg, t, "tr", NULL);
    el(pg, tr, "th", "group");
    el(pg, tr, "th", "after loading");
    el(pg, tr, "th", "components differing");
    el(pg, tr, "th", "restored after the load");
    el(pg, tr, "th", "examples (after loading / when saved)");
    json_array_foreach(sal, i, g)
    {
        const json_t *eq = json_object_get(g, "equal");
        xmlNodePtr td, ul;
        tr = el(pg, t, "tr", NULL);
        attr(pg, tr, "data-component", jstr(g, "component"));
        el(pg, tr, "th", jstr(g, "component"));
        if (json_is_boolean(eq))
            elc(pg, tr, "td", json_is_true(eq) ? "eq-true" : "eq-false",
                json_is_true(eq) ? "equal" : "differs");
        else
            elc(pg, tr, "td", "eq-null", "not compared");
        td = el(pg, tr, "td", NULL);
        if (json_is_boolean(eq)) {
            add_textf(pg, td, "%lld of %lld",
                      (long long)json_integer_value(json_object_get(g, "differ")),
                      (long long)json_integer_value(json_object_get(g, "compared")));
            if (jstr(g, "reference") && !strcmp(jstr(g, "reference"), "save"))
                add_text(pg, td, " (at the save)");
        } else {
            add_text(pg, td, "I's snapshot holds none");
        }
        td = el(pg, tr, "td", restored_words(jstr(g, "restored")));
        if (jstr(g, "restored_by")) {
            add_text(pg, td, ", by ");
            el(pg, td, "code", jstr(g, "restored_by"));
        }
        td = el(pg, tr, "td", NULL);
        if (json_array_size(json_object_get(g, "examples")) == 0) continue;
        ul = el(pg, td, "ul", NULL);
        json_array_foreach(json_object_get(g, "examples"), k, ex)
        {
            line l = {.n = 0};
            xmlNodePtr li = el(pg, ul, "li", NULL);
            el(pg, li, "code", jstr(ex, "path"));
            put_val(&l, json_object_get(ex, "after_load"));
            lprintf(&l, " / ");
            put_val(&l, json_object_get(ex, "saved"));
            add_text(pg, li, ": ");
            elc(pg, li, "span", "mono", l.s);
        }
    }
}

static void executions(page *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *ev = json_object_get(r, "evidence"), *ex = json_object_get(ev, "executions"), *e;
    size_t i;
    xmlNodePtr sec, t, tr;
    if (json_array_size(ex) == 0) return;
    sec = el(pg, body, "section", NULL);
    attr(pg, sec, "id", "executions");
    el(pg, sec, "h2", "Executions");
    t = el(pg, sec, "table", NULL);
    tr = el(pg, t, "tr", NULL);
    el(pg, tr, "th", "role");
    el(pg, tr, "th", "execution");
    el(pg, tr, "th", "steps");
    el(pg, tr, "th", "exit");
    el(pg, tr, "th", "wall time");
    el(pg, tr, "th", "command");
    json_array_foreach(ex, i, e)
    {
        line l = {.n = 0}, a = {.n = 0};
        const json_t *w;
        size_t k;
        tr = el(pg, t, "tr", NULL);
        if (role_what(jstr(e, "role")))
            lprintf(&l, "%s (%s)", jstr(e, "role"), role_what(jstr(e, "role")));
        else
            put_json(&l, json_object_get(e, "role"));
        el(pg, tr, "td", l.s);
        l.n = 0;
        put_json(&l, json_object_get(e, "execution"));
        el(pg, tr, "td", l.s);
        l.n = 0;
        put_json(&l, json_object_get(e, "steps"));
        el(pg, tr, "td", l.s);
        l.n = 0;
        if (json_is_integer(json_object_get(e, "exit_signal")))
            lprintf(&l, "signal %lld",
                    (long long)json_integer_value(json_object_get(e, "exit_signal")));
        else
            put_json(&l, json_object_get(e, "exit_status"));
        el(pg, tr, "td", l.s);
        l.n = 0;
        if (json_is_number(json_object_get(e, "wall_s")))
            lprintf(&l, "%.1f s", json_number_value(json_object_get(e, "wall_s")));
        el(pg, tr, "td", l.s);
        json_array_foreach(json_object_get(e, "argv"), k, w)
            lprintf(&a, "%s%s", k ? " " : "", json_string_value(w) ? json_string_value(w) : "");
        elc(pg, el(pg, tr, "td", NULL), "code", "mono", a.s);
    }
}

/* ---- plots ---- */

typedef struct series {
    const char *role; /* in the steps document */
    int64_t exec;
    int64_t shift;       /* added to its step numbers: R's onto A's */
    const json_t *steps; /* its rows */
    size_t n;
    double *x, *y; /* y NaN: a value left out, where the line breaks */
    int left_out;  /* values that were not finite */
    int finite;    /* points drawn */
    const char *color;
} series;

static const char *const palette[MAX_SERIES] = {"#1f6feb", "#e07b00", "#2da44e", "#8250df",
                                                "#8c564b", "#0598bc", "#d63384", "#6e7781"};

/* pick_series chooses, per execution, the process the plots follow: its
 * lowest rank (no rank: 0).  The steps document lists the processes by
 * execution, and so does s. */
static int pick_series(const json_t *doc, series *s)
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
            s[n].exec = exec;
            s[n].color = palette[n];
            rank[n] = INT64_MAX;
            n++;
        }
        if (rk < rank[k]) {
            rank[k] = rk;
            s[k].role = jstr(p, "role") ? jstr(p, "role") : "?";
            s[k].steps = json_object_get(p, "steps");
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

/* read_points fills s's points with metric; false when out of memory. */
static bool read_points(series *s, const char *metric, bool *multi)
{
    size_t n = json_array_size(s->steps), i;
    const json_t *row;
    free(s->x);
    free(s->y);
    s->x = s->y = NULL;
    s->n = 0;
    s->left_out = s->finite = 0;
    if (n == 0) return true;
    s->x = malloc(n * sizeof *s->x);
    s->y = malloc(n * sizeof *s->y);
    if (s->x == NULL || s->y == NULL) return false;
    json_array_foreach(s->steps, i, row)
    {
        double y = 0;
        int got = metric_value(row, metric, &y, multi);
        if (got == 0 || !json_is_integer(json_object_get(row, "step"))) continue;
        s->x[s->n] = (double)(json_integer_value(json_object_get(row, "step")) + s->shift);
        s->y[s->n++] = got > 0 ? y : NAN;
        if (got > 0)
            s->finite++;
        else
            s->left_out++;
    }
    return true;
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

static xmlNodePtr svg_line(page *pg, xmlNodePtr g, double x1, double y1, double x2, double y2,
                           const char *stroke)
{
    xmlNodePtr n = el(pg, g, "line", NULL);
    attrf(pg, n, "x1", "%.1f", x1);
    attrf(pg, n, "y1", "%.1f", y1);
    attrf(pg, n, "x2", "%.1f", x2);
    attrf(pg, n, "y2", "%.1f", y2);
    attr(pg, n, "stroke", stroke);
    return n;
}

static xmlNodePtr svg_text(page *pg, xmlNodePtr g, double x, double y, const char *anchor,
                           const char *text)
{
    xmlNodePtr n = el(pg, g, "text", text);
    attrf(pg, n, "x", "%.1f", x);
    attrf(pg, n, "y", "%.1f", y);
    attr(pg, n, "text-anchor", anchor);
    return n;
}

/* polyline draws the points from..to-1 of s (all finite) as one line. */
static void polyline(page *pg, xmlNodePtr g, const frame *f, const series *s, size_t from,
                     size_t to, double width)
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
    n = el(pg, g, "polyline", NULL);
    attr(pg, n, "points", pts);
    attr(pg, n, "fill", "none");
    attr(pg, n, "stroke", s->color);
    attrf(pg, n, "stroke-width", "%.1f", width);
    attr(pg, n, "stroke-linejoin", "round");
    free(pts);
}

/* chart draws one metric for every series: axes with tick labels, a line
 * per series (broken where a value was left out), the first divergence's
 * step as a vertical line. */
static void chart(page *pg, xmlNodePtr sec, const char *title, const char *id, series *s, int ns,
                  bool has_div, int64_t div_step, const char *div_label, bool multi)
{
    frame f = {0, 0, 0, 0};
    bool any = false;
    int left = 0;
    double dx, dy, v;
    char buf[64];
    xmlNodePtr fig = el(pg, sec, "figure", NULL), svg, g, cap;
    attr(pg, fig, "id", id);
    el(pg, fig, "h3", title);
    for (int k = 0; k < ns; k++) {
        left += s[k].left_out;
        for (size_t i = 0; i < s[k].n; i++) {
            if (isnan(s[k].y[i])) continue;
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
        cap = elc(pg, fig, "p", "note", NULL);
        add_textf(pg, cap, "No %s to plot", title);
        if (left)
            add_textf(pg, cap, " (%d non-finite value%s left out)", left, left == 1 ? "" : "s");
        add_text(pg, cap, ".");
        return;
    }
    if (has_div) {
        f.x0 = fmin(f.x0, (double)div_step);
        f.x1 = fmax(f.x1, (double)div_step);
    }
    axis(&f.x0, &f.x1, 8, true, &dx);
    axis(&f.y0, &f.y1, 5, false, &dy);
    svg = el(pg, fig, "svg", NULL);
    attr(pg, svg, "class", "plot");
    attrf(pg, svg, "width", "%d", PLOT_W);
    attrf(pg, svg, "height", "%d", PLOT_H);
    attrf(pg, svg, "viewBox", "0 0 %d %d", PLOT_W, PLOT_H);
    attr(pg, svg, "role", "img");
    attrf(pg, svg, "aria-label", "%s per optimizer step", title);
    el(pg, svg, "title", title);
    g = el(pg, svg, "g", NULL);
    attr(pg, g, "class", "axes");
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
        size_t from = 0;
        g = el(pg, svg, "g", NULL);
        attr(pg, g, "class", "series");
        attr(pg, g, "data-role", s[k].role);
        add_textf(pg, el(pg, g, "title", NULL), "%s (execution %lld)", s[k].role,
                  (long long)s[k].exec);
        for (size_t i = 0; i <= s[k].n; i++) {
            if (i < s[k].n && !isnan(s[k].y[i])) continue;
            if (i > from) polyline(pg, g, &f, &s[k], from, i, width);
            from = i + 1;
        }
        for (size_t i = 0; s[k].finite <= MAX_MARKS && i < s[k].n; i++) {
            xmlNodePtr c;
            if (isnan(s[k].y[i])) continue;
            c = el(pg, g, "circle", NULL);
            attrf(pg, c, "cx", "%.1f", px(&f, s[k].x[i]));
            attrf(pg, c, "cy", "%.1f", py(&f, s[k].y[i]));
            attrf(pg, c, "r", "%.1f", width / 2 + 1);
            attr(pg, c, "fill", s[k].color);
        }
    }
    if (has_div) {
        double x = px(&f, (double)div_step);
        xmlNodePtr mark;
        g = el(pg, svg, "g", NULL);
        attr(pg, g, "class", "divergence");
        mark = svg_line(pg, g, x, PLOT_T, x, PLOT_H - PLOT_B, DIVERGENCE_C);
        attr(pg, mark, "class", "divergence-marker");
        attr(pg, mark, "stroke-width", "1.6");
        attr(pg, mark, "stroke-dasharray", "6 4");
        attr(pg,
             svg_text(pg, g, x + (x > PLOT_W - 160 ? -5 : 5), PLOT_T + 10,
                      x > PLOT_W - 160 ? "end" : "start", div_label),
             "style", "fill:" DIVERGENCE_C);
    }
    cap = elc(pg, fig, "p", "note", NULL);
    add_textf(pg, cap, "%d non-finite value%s (nan, inf) left out", left, left == 1 ? "" : "s");
    if (left) add_text(pg, cap, ": the line breaks where they were");
    if (multi)
        add_text(pg, cap, "; where a step has several (optimizers, parameter groups), the first");
    add_text(pg, cap, ".");
}

/* plots draws loss, gradient norm and learning rate per step from the
 * daemon's steps document (NULL: why_not says why there is none). */
static void plots(page *pg, xmlNodePtr body, const json_t *r, const json_t *doc,
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
    series s[MAX_SERIES];
    char label[128];
    int ns;
    xmlNodePtr sec = el(pg, body, "section", NULL), ul, li, div;
    attr(pg, sec, "id", "plots");
    el(pg, sec, "h2", "Per step");
    if (doc == NULL) {
        elc(pg, sec, "p", "note", why_not);
        return;
    }
    if ((ns = pick_series(doc, s)) == 0) {
        elc(pg, sec, "p", "note", "The daemon stored no training step for this run: no plot.");
        return;
    }
    /* resume: R numbers its steps from the load; drawn on A's numbering */
    if (jstr(r, "check") && !strcmp(jstr(r, "check"), "resume") &&
        json_is_integer(json_object_get(ev, "aligned_step")) &&
        json_is_integer(json_object_get(ev, "resumed_from_step")))
        for (int k = 0; k < ns; k++)
            if (!strcmp(s[k].role, "R"))
                s[k].shift = json_integer_value(json_object_get(ev, "aligned_step")) -
                             json_integer_value(json_object_get(ev, "resumed_from_step"));
    snprintf(label, sizeof label, "first divergence, step %lld", (long long)div_step);
    ul = elc(pg, sec, "ul", "legend", NULL);
    for (int k = 0; k < ns; k++) {
        li = el(pg, ul, "li", NULL);
        attrf(pg, elc(pg, li, "span", "swatch", NULL), "style", "border-top-color:%s", s[k].color);
        if (role_what(s[k].role))
            add_textf(pg, li, "%s (%s), execution %lld", s[k].role, role_what(s[k].role),
                      (long long)s[k].exec);
        else
            add_textf(pg, li, "%s, execution %lld", s[k].role, (long long)s[k].exec);
        if (s[k].shift)
            add_textf(pg, li, "; its step k drawn at A's step k %s %lld",
                      s[k].shift > 0 ? "+" : "-", (long long)llabs(s[k].shift));
    }
    if (has_div) {
        li = el(pg, ul, "li", NULL);
        attr(pg, elc(pg, li, "span", "swatch", NULL), "style",
             "border-top-color:" DIVERGENCE_C ";border-top-style:dashed");
        add_text(pg, li, label);
        if (json_is_integer(json_object_get(fd, "step_other")) && jstr(fd, "between") &&
            strchr(jstr(fd, "between"), '-') != NULL) {
            const char *b = jstr(fd, "between"), *dash = strchr(b, '-');
            add_textf(pg, li, " (in %.*s's numbering; %s's step %lld)", (int)(dash - b), b,
                      dash + 1, (long long)json_integer_value(json_object_get(fd, "step_other")));
        }
    }
    elc(pg, sec, "p", "note",
        "One line per execution (its process of the lowest rank), per optimizer step; the "
        "loss is the sum of the step's backward losses.");
    div = elc(pg, sec, "div", "plots", NULL);
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        bool multi = false;
        for (int i = 0; i < ns; i++)
            if (!read_points(&s[i], m[k].metric, &multi)) pg->bad = true;
        if (!pg->bad) chart(pg, div, m[k].title, m[k].id, s, ns, has_div, div_step, label, multi);
    }
    for (int i = 0; i < ns; i++) {
        free(s[i].x);
        free(s[i].y);
    }
}

/* steps_doc asks the daemon for run's steps as JSON; NULL with why said
 * in why (n bytes) when it has none to give. */
static json_t *steps_doc(tpt_client *c, int64_t run, const json_t *r, char *why, size_t n)
{
    char err[TPT_ERR_LEN], *text = NULL;
    json_t *doc;
    const char *check = jstr(r, "check");
    if (check && !strcmp(check, "coverage")) {
        snprintf(why, n,
                 "No plot: the coverage check judges which sample ids each epoch delivered to "
                 "each rank, not values per optimizer step.");
        return NULL;
    }
    if (c == NULL) {
        snprintf(why, n, "No plot: no daemon to ask for the steps.");
        return NULL;
    }
    if (tpt_query_json(c, "steps", run, &text, err) != TP_OK) {
        snprintf(why, n, "No plot: the daemon did not give this run's steps (%.400s).", err);
        return NULL;
    }
    doc = json_loads(text, 0, NULL);
    free(text);
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(why, n,
                 "No plot: the daemon's steps were not JSON (a daemon older than the "
                 "tool?).");
        return NULL;
    }
    return doc;
}

static xmlDocPtr build(page *pg, tpt_client *c, const tpt_opts *o, int64_t run,
                       const tpt_verdict_info *v, const json_t *r)
{
    const char *oc = v->outcome ? v->outcome : "ERROR", *check = jstr(r, "check");
    char why[512] = "";
    json_t *doc;
    xmlNodePtr html, head, body, n;
    pg->doc = htmlNewDocNoDtD(NULL, NULL);
    if (pg->doc == NULL || xmlCreateIntSubset(pg->doc, BAD_CAST "html", NULL, NULL) == NULL) {
        pg->bad = true;
        return pg->doc;
    }
    if ((html = xmlNewDocNode(pg->doc, NULL, BAD_CAST "html", NULL)) == NULL) {
        pg->bad = true;
        return pg->doc;
    }
    xmlDocSetRootElement(pg->doc, html);
    attr(pg, html, "lang", "en");
    head = el(pg, html, "head", NULL);
    attr(pg, el(pg, head, "meta", NULL), "charset", "utf-8");
    n = el(pg, head, "meta", NULL);
    attr(pg, n, "name", "viewport");
    attr(pg, n, "content", "width=device-width, initial-scale=1");
    n = el(pg, head, "title", NULL);
    add_textf(pg, n, "trainparity %s run %lld: %s", check ? check : "check", (long long)run, oc);
    el(pg, head, "style", style);
    body = el(pg, html, "body", NULL);
    verdict(pg, body, o, run, v, r);
    if (r == NULL) elc(pg, body, "p", "note", "The daemon gave no JSON report: the text follows.");
    if (r != NULL) {
        first_divergence(pg, body, r);
        divergences(pg, body, r);
        explanation(pg, body, r);
        if (check && !strcmp(check, "resume")) state_after_load(pg, body, r);
        doc = steps_doc(c, run, r, why, sizeof why);
        plots(pg, body, r, doc, why);
        json_decref(doc);
        executions(pg, body, r);
    }
    n = el(pg, body, "details", NULL);
    /* open where the page has said little: an ERROR's reason is its text */
    if (r == NULL || !strcmp(oc, "ERROR") ||
        json_array_size(json_object_get(r, "explanation")) == 0)
        attr(pg, n, "open", "open");
    el(pg, n, "summary", "Text report");
    el(pg, n, "pre", v->text ? v->text : "");
    return pg->doc;
}

int tpt_html_write(const char *path, tpt_client *c, const tpt_opts *o, int64_t run,
                   const tpt_verdict_info *v)
{
    json_t *r = v->json ? json_loads(v->json, 0, NULL) : NULL;
    page pg = {NULL, false};
    xmlChar *mem = NULL;
    int size = 0, rc = -1;
    build(&pg, c, o, run, v, json_is_object(r) ? r : NULL);
    if (!pg.bad) htmlDocDumpMemoryFormat(pg.doc, &mem, &size, 1);
    if (mem != NULL)
        rc = tpt_write_report(path, (const char *)mem); /* says why it failed */
    else
        tpt_error("cannot write %s: out of memory", path);
    xmlFree(mem);
    xmlFreeDoc(pg.doc);
    json_decref(r);
    return rc;
}
