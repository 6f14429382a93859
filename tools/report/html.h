/* SPDX-License-Identifier: MIT
 * html.h -- a verdict as one self-contained HTML page (--html F): what a
 * reviewer opens from a CI artifact without the tool at hand. */
#ifndef TP_TOOLS_REPORT_HTML_H
#define TP_TOOLS_REPORT_HTML_H

#include <stdint.h>

#include "tools/client/ctl.h"
#include "tools/base/opts.h"

/* tpt_html_write writes run's verdict v, judged for the command of o, to
 * path as one HTML document that needs nothing else (inline style, inline
 * SVG, no script, nothing fetched): the outcome, run and command; the first
 * divergence with both sides' values and the other components that differ
 * at its step; the explanation; for resume, R's state after loading
 * against I's at the save, group by group; and per-step plots of loss,
 * gradient norm and learning rate, one line per execution, the first
 * divergence's step marked, drawn from steps (the daemon's "steps" view as
 * JSON text); steps NULL costs the plots, and the page says why_not
 * instead.  The text report closes it.  It fetches nothing.
 * On failure (out of memory, a file it cannot write) it says so on stderr
 * and returns -1. */
int tpt_html_write(const char *path, const tpt_opts *o, int64_t run, const tpt_verdict_info *v,
                   const char *steps, const char *why_not);

#endif
