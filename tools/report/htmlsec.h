/* SPDX-License-Identifier: MIT
 * htmlsec.h -- the sections of the HTML page (tools/report/html.h), each drawn
 * from the verdict's JSON report r (docs/report-schema.md) and appended to
 * the page's body in the order tools/report/html.c calls them.  They are in
 * htmlsec.c (the verdict and the report's generic parts), htmlresume.c
 * (resume's state after loading) and htmlsteps.c (the plots per step).
 * A failure sets pg->bad (tools/report/htmldoc.h); nothing is printed. */
#ifndef TP_TOOLS_REPORT_HTMLSEC_H
#define TP_TOOLS_REPORT_HTMLSEC_H

#include <jansson.h>
#include <libxml/tree.h>
#include <stdint.h>

#include "tools/client/ctl.h"
#include "tools/report/htmldoc.h"
#include "tools/base/opts.h"

/* tpt_html_verdict is the page's header: the outcome, the check, the run,
 * o's command, the comparison, the wall time and version; then the
 * report's reason.  r may be NULL (no JSON report): v's outcome alone. */
void tpt_html_verdict(tpt_htmldoc *pg, xmlNodePtr body, const tpt_opts *o, int64_t run,
                      const tpt_verdict_info *v, const json_t *r);

/* tpt_html_first_divergence lists every member of the report's first
 * divergence in its order: the values of the sides in one line each, under
 * their roles. */
void tpt_html_first_divergence(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r);

/* tpt_html_divergences lists the components that differ at the first
 * divergence's step (the first one first): path, group, each side's value,
 * the errors of captured values.  Nothing without a first divergence. */
void tpt_html_divergences(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r);

/* tpt_html_explanation lists the report's explanation, kind and text. */
void tpt_html_explanation(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r);

/* tpt_html_executions is the table of the executions in the evidence:
 * role, execution, steps, exit, wall time, command.  Nothing without any. */
void tpt_html_executions(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r);

/* tpt_html_state_after_load is the resume evidence's table: per group,
 * whether R's state right after loading equals I's at the save. */
void tpt_html_state_after_load(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r);

/* The run's steps as the caller got them (tpt_html_write's). */
typedef struct tpt_html_steps_in {
    const char *json;    /* the daemon's "steps" view as JSON text; NULL: none */
    const char *why_not; /* when json is NULL: why there is none */
} tpt_html_steps_in;

/* tpt_html_steps draws loss, gradient norm and learning rate per step, one
 * line per execution, the first divergence marked, from the run's steps;
 * when there is none to draw, the section says why. */
void tpt_html_steps(tpt_htmldoc *pg, xmlNodePtr body, const tpt_html_steps_in *steps,
                    const json_t *r);

#endif
