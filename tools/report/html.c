/* SPDX-License-Identifier: MIT
 * html.c -- a verdict as one self-contained HTML page, built as a libxml2
 * tree (HTMLtree.h, tools/report/htmldoc.h) and serialized by libxml2's HTML
 * writer, so that escaping and encoding are the library's: no text of the
 * report or the command is ever pasted into markup.
 *
 * This file is the page: its head, its style sheet, the order of its
 * sections and the text report that closes it.  The sections are drawn from
 * the verdict's JSON report (docs/report-schema.md) by tools/report/htmlsec.h:
 * htmlsec.c (verdict, first divergence, divergences, explanation,
 * executions), htmlresume.c (state after loading) and htmlsteps.c (the
 * plots per step, from the daemon's "steps" view, drawn by tools/report/plot.h).
 * The page fetches nothing: the style is inline, the plots are inline SVG,
 * there is no script, no image, no font. */
#include <jansson.h>
#include <libxml/HTMLtree.h>
#include <libxml/tree.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/report/html.h"
#include "tools/report/htmldoc.h"
#include "tools/report/htmlsec.h"
#include "tools/report/reportval.h"

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

/* build makes the page for v in pg (r: its JSON report, or NULL): the head,
 * the sections in their order, the text report last. */
static xmlDocPtr build(tpt_htmldoc *pg, const tpt_html_steps_in *steps, const tpt_opts *o,
                       int64_t run, const tpt_verdict_info *v, const json_t *r)
{
    const char *oc = v->outcome ? v->outcome : "ERROR", *check = tpt_jstr(r, "check");
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
    tpt_attr(pg, html, "lang", "en");
    head = tpt_el(pg, html, "head", NULL);
    tpt_attr(pg, tpt_el(pg, head, "meta", NULL), "charset", "utf-8");
    n = tpt_el(pg, head, "meta", NULL);
    tpt_attr(pg, n, "name", "viewport");
    tpt_attr(pg, n, "content", "width=device-width, initial-scale=1");
    n = tpt_el(pg, head, "title", NULL);
    tpt_textf(pg, n, "trainparity %s run %lld: %s", check ? check : "check", (long long)run, oc);
    tpt_el(pg, head, "style", style);
    body = tpt_el(pg, html, "body", NULL);
    tpt_html_verdict(pg, body, o, run, v, r);
    if (r == NULL)
        tpt_elc(pg, body, "p", "note", "The daemon gave no JSON report: the text follows.");
    if (r != NULL) {
        tpt_html_first_divergence(pg, body, r);
        tpt_html_divergences(pg, body, r);
        tpt_html_explanation(pg, body, r);
        if (check && !strcmp(check, "resume")) tpt_html_state_after_load(pg, body, r);
        tpt_html_steps(pg, body, steps, r);
        tpt_html_executions(pg, body, r);
    }
    n = tpt_el(pg, body, "details", NULL);
    /* open where the page has said little: an ERROR's reason is its text */
    if (r == NULL || !strcmp(oc, "ERROR") ||
        json_array_size(json_object_get(r, "explanation")) == 0)
        tpt_attr(pg, n, "open", "open");
    tpt_el(pg, n, "summary", "Text report");
    tpt_el(pg, n, "pre", v->text ? v->text : "");
    return pg->doc;
}

int tpt_html_write(const char *path, const tpt_opts *o, int64_t run, const tpt_verdict_info *v,
                   const char *steps, const char *why_not)
{
    tpt_html_steps_in in = {steps, why_not};
    json_t *r = v->json ? json_loads(v->json, 0, NULL) : NULL;
    tpt_htmldoc pg = {NULL, false};
    xmlChar *mem = NULL;
    int size = 0, rc = -1;
    build(&pg, &in, o, run, v, json_is_object(r) ? r : NULL);
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
