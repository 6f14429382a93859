/* SPDX-License-Identifier: MIT
 * query.h -- the views of a database: the runs, one run with its executions
 * and processes, a run's per-step table, its verdict; as text (aligned
 * columns) or as JSON.  The same text answers `trainparity-daemon query`
 * and the control command "query".  Read-only: works on a store opened
 * TPD_STORE_READONLY. */
#ifndef TP_DAEMON_STORE_QUERY_H
#define TP_DAEMON_STORE_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/store/store.h"
#include "proto/tp_err.h"

/* tpd_query_runs appends one line per run: id, name, check, created time,
 * number of executions, latest verdict outcome ("-" if none). */
tp_err tpd_query_runs(tpd_store *s, tpd_str *out, char *why, size_t whylen);

/* tpd_query_run appends run id, its executions (role, argv, exit) and per
 * process: pid, rank, role, versions, events, bye, dropped, sequence gaps and
 * counts per event kind.  TP_ENOENT (why says so) for an unknown run. */
tp_err tpd_query_run(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen);

/* tpd_query_steps appends, per execution and process of run that has
 * training steps, one row per optimizer step: step, loss (sum of backward
 * losses), backward count, grad norm, update norm, learning rates, optimizer
 * steps.  TP_ENOENT for an unknown run. */
tp_err tpd_query_steps(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen);

/* tpd_query_saves lists the files an execution saved checkpoints to (the
 * absolute names of its path and file targets), one per line, and its
 * buffer saves as "buffer <content digest, hex> <size>" lines. */
tp_err tpd_query_saves(tpd_store *s, int64_t exec, tpd_str *out, char *why, size_t whylen);

/* What a query shows and of what.  Zeroed: every run, as text. */
typedef struct tpd_query_opts {
    bool json;           /* JSON (one document and a newline) instead of text */
    const char *check;   /* runs: only the runs of this check, or NULL */
    const char *outcome; /* runs: only those whose latest verdict has this outcome
                          * (PASS, FAIL, ABSTAIN, ERROR, any case; "none": without
                          * a verdict), or NULL */
    int64_t limit;       /* runs: only the newest limit of those (by id); 0: all */
} tpd_query_opts;

/* tpd_query_outcome is the outcome s names ("PASS", "FAIL", "ABSTAIN",
 * "ERROR", or "none"), matched in any case; NULL when it names none. */
const char *tpd_query_outcome(const char *s);

/* tpd_query_with appends to out the view what names for run id (ignored for
 * "runs"), as o says (NULL: text, unfiltered):
 *   runs     one row per run: id, name, check, created, executions, the
 *            latest verdict's outcome; JSON {"runs": [{"id", "name", "check",
 *            "created_ns", "executions", "verdict"}]}
 *   run      the run, its latest verdict, its executions and their
 *            processes; JSON {"id", "name", "check", "params", "created_ns",
 *            "verdict", "executions": [{..., "processes": [...]}]}
 *   steps    per process, one row per step; JSON {"run", "processes":
 *            [{"execution", "role", "pid", "rank", "steps": [{"step", "loss",
 *            "backward", "grad_norm", "update_norm", "lr",
 *            "optimizer_steps", "update", "scale"}]}]}, non-finite numbers
 *            as the strings "nan", "inf", "-inf"
 *   verdict  the latest verdict's text report; JSON: its JSON report, byte
 *            for byte as stored (then a newline)
 *   saves    tpd_query_saves (text only)
 * Text tables are aligned whatever the values: each column as wide as its
 * widest cell.  Errors: TP_EINVAL (why says so: another what, a filter for
 * another view, an unknown outcome), TP_ENOENT (no such run, or no verdict
 * or report), TP_ENOMEM, TP_EDB. */
tp_err tpd_query_with(tpd_store *s, const char *what, int64_t id, const tpd_query_opts *o,
                      tpd_str *out, char *why, size_t whylen);

/* tpd_query is tpd_query_with as text, unfiltered. */
tp_err tpd_query(tpd_store *s, const char *what, int64_t id, tpd_str *out, char *why,
                 size_t whylen);

#endif
