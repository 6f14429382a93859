/* SPDX-License-Identifier: MIT
 * view.h -- what the views of query.h share (internal to daemon/store/):
 * errors into why, SQLite columns as text and as JSON, a run's row and
 * header line, and the views that live in files of their own.
 *
 * Every function here that fails writes why (whylen bytes) and returns the
 * code; the text views append to out, whose oom flag the caller checks. */
#ifndef TP_DAEMON_STORE_VIEW_H
#define TP_DAEMON_STORE_VIEW_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/store/store.h"
#include "proto/tp_err.h"

/* tpd_view_dbfail says "database: <s's last error>" in why and returns
 * rc as a tp_err (TP_EDB when it maps to TP_OK). */
tp_err tpd_view_dbfail(tpd_store *s, int rc, char *why, size_t whylen);

/* tpd_view_oom says "out of memory" in why and returns TP_ENOMEM. */
tp_err tpd_view_oom(char *why, size_t whylen);

/* tpd_view_col_text is column i of st's row as text, none when NULL. */
const char *tpd_view_col_text(sqlite3_stmt *st, int i, const char *none);

/* tpd_view_col_json is column i of st's row as JSON: null, an integer, a
 * number or a string (made valid UTF-8).  NULL when out of memory. */
json_t *tpd_view_col_json(sqlite3_stmt *st, int i);

/* tpd_view_fmt_time formats a CLOCK_REALTIME ns value as local time into
 * out (n bytes), the number itself when it cannot; returns out. */
const char *tpd_view_fmt_time(char *out, size_t n, int64_t ns);

/* tpd_view_prepare prepares sql on s's database into *st. */
tp_err tpd_view_prepare(tpd_store *s, const char *sql, sqlite3_stmt **st, char *why, size_t whylen);

/* tpd_view_put_json dumps v (its reference taken) to out; TP_ENOMEM when v
 * is NULL (a failed build) or the dump fails. */
tp_err tpd_view_put_json(json_t *v, tpd_str *out, char *why, size_t whylen);

/* tpd_view_run_row reads run's row (name, check_kind, params, created_ns)
 * into *st, stepped to it, which the caller finalizes; TP_ENOENT (why says
 * so) for an unknown run, *st then NULL. */
tp_err tpd_view_run_row(tpd_store *s, int64_t run, sqlite3_stmt **st, char *why, size_t whylen);

/* tpd_view_run_header appends the run line (and its params line, if any);
 * TP_ENOENT for an unknown run. */
tp_err tpd_view_run_header(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen);

/* tpd_view_run is the "run" view of query.h (view_run.c), as JSON when js. */
tp_err tpd_view_run(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen);

/* tpd_view_steps is the "steps" view of query.h (view_steps.c), as JSON
 * when js. */
tp_err tpd_view_steps(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen);

#endif
