/* SPDX-License-Identifier: MIT
 * query.h -- the text views of a database: the runs, one run with its
 * executions and processes, and a run's per-step table.  The same text
 * answers `trainparity-daemon query` and the control command "query".
 * Read-only: works on a store opened TPD_STORE_READONLY. */
#ifndef TP_DAEMON_STORE_QUERY_H
#define TP_DAEMON_STORE_QUERY_H

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

/* tpd_query dispatches on what ("runs", "run", "steps"); id is ignored for
 * runs.  TP_EINVAL (why says so) for another what. */
tp_err tpd_query(tpd_store *s, const char *what, int64_t id, tpd_str *out, char *why,
                 size_t whylen);

#endif
