/* SPDX-License-Identifier: MIT
 * rows.h -- a run's stored rows, read in order on a connection: the run,
 * its executions, their processes and each process's events.  The reader of
 * daemon/obs/obs.c, which builds a run's observations from them.
 *
 * Each function hands its rows one at a time to a callback; what a row
 * points into (strings, an event's body) is SQLite's and lives until the
 * callback returns, so nothing is copied per row.  A callback that returns
 * anything but TP_OK stops the scan, and the function returns that code
 * without touching why.  Database failures return TP_EDB with SQLite's
 * message in why (when why is not NULL). */
#ifndef TP_DAEMON_STORE_ROWS_H
#define TP_DAEMON_STORE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/store.h"
#include "proto/event.h"
#include "proto/tp_err.h"

/* A runs row.  NULL strings are NULL columns. */
typedef struct tpd_run_row {
    const char *name, *check, *params;
    int64_t created_ns;
} tpd_run_row;

/* An executions row. */
typedef struct tpd_exec_row {
    int64_t id;
    const char *role, *argv_json;
    int64_t created_ns;
    bool finished; /* finished_ns is not NULL */
    int64_t finished_ns;
    bool has_status, has_signal;
    int64_t status, signal;
} tpd_exec_row;

/* A processes row (what the observations need of it). */
typedef struct tpd_proc_row {
    int64_t pid, ppid;
    int64_t rank; /* -1 when NULL */
    int64_t world;
    const char *role, *python, *torch;
    int64_t nevents;
    int64_t max_seq; /* -1 when NULL */
} tpd_proc_row;

typedef tp_err (*tpd_run_row_fn)(void *arg, const tpd_run_row *r);
typedef tp_err (*tpd_exec_row_fn)(void *arg, const tpd_exec_row *e);
typedef tp_err (*tpd_proc_row_fn)(void *arg, const tpd_proc_row *p);
/* An event row: kind parsed from its name (TP_K_NONE when unknown), body
 * its stored bytes (NULL when the column is NULL). */
typedef tp_err (*tpd_event_row_fn)(void *arg, const tp_event *e);

/* tpd_rows_run calls fn once with run's row.  Errors: TP_ENOENT (no such
 * run; why untouched), TP_EDB, fn's. */
tp_err tpd_rows_run(tpd_store *s, int64_t run, tpd_run_row_fn fn, void *arg, char *why,
                    size_t whylen);
/* tpd_rows_execs calls fn with each execution of run, by id.
 * Errors: TP_EDB, fn's. */
tp_err tpd_rows_execs(tpd_store *s, int64_t run, tpd_exec_row_fn fn, void *arg, char *why,
                      size_t whylen);
/* tpd_rows_procs calls fn with each process of exec, in the order they were
 * first stored.  Errors: TP_EDB, fn's. */
tp_err tpd_rows_procs(tpd_store *s, int64_t exec, tpd_proc_row_fn fn, void *arg, char *why,
                      size_t whylen);
/* tpd_rows_events calls fn with each event of process (exec, pid), by seq:
 * seq, time_ns, step, kind and body are set, the rest of the event zero.
 * Errors: TP_EDB, fn's. */
tp_err tpd_rows_events(tpd_store *s, int64_t exec, int64_t pid, tpd_event_row_fn fn, void *arg,
                       char *why, size_t whylen);

#endif
