/* SPDX-License-Identifier: MIT
 * verdict.h -- the tail every check's subcommand shares: the run's verdict
 * asked of the daemon, printed, and written as the reports the options ask
 * for, each renderer (tools/report/) handed what it draws. */
#ifndef TP_TOOLS_CMD_VERDICT_H
#define TP_TOOLS_CMD_VERDICT_H

#include <stdint.h>

#include "tools/base/opts.h"
#include "tools/client/ctl.h"

/* tpt_report prints "run N" and v's text report on stdout, writes the
 * reports o asks for (--json: the JSON report; --junit: JUnit XML,
 * tools/report/junit.h; --html: an HTML page, tools/report/html.h, with the
 * run's steps asked of c for its plots), frees v and returns the exit status
 * that goes with it: the outcome's, or TPT_EXIT_ERROR (said on stderr) when
 * a report cannot be written. */
int tpt_report(tpt_client *c, int64_t run, tpt_verdict_info *v, const tpt_opts *o);

/* tpt_judge asks the daemon for run's verdict under tol (NULL: exact) and
 * reports it as tpt_report does; TPT_EXIT_ERROR when it cannot judge. */
int tpt_judge(tpt_client *c, int64_t run, const tpt_tolerance *tol, const tpt_opts *o);

/* tpt_plan asks for run's verdict under tol as a check that can run more
 * executions does (tpt_verdict_plan: a narrowing, or --once's second
 * baseline, asked for instead of a stored verdict).  Returns 0 with *v
 * filled (free it, or hand it to tpt_report), or -1 after saying why. */
int tpt_plan(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *v);

/* tpt_report_planned reports v, the last of a check's planned verdicts
 * (tpt_plan), as tpt_report does; one that still asks for more (nothing was
 * stored) is freed and the run judged as it stands (tpt_judge). */
int tpt_report_planned(tpt_client *c, int64_t run, tpt_verdict_info *v, const tpt_tolerance *tol,
                       const tpt_opts *o);

#endif
