/* SPDX-License-Identifier: MIT
 * rows.c -- a run's stored rows, read in order (see rows.h).
 *
 * One statement per call, stepped row by row into the callback: the events
 * of a process are the bulk of a verdict's reading, and their bodies go to
 * the callback straight from SQLite's row. */
#include <stdio.h>
#include <string.h>

#include "daemon/store/pack.h"
#include "daemon/store/rows.h"
#include "daemon/store/store.h"

/* dbfail says SQLite's message in why and returns TP_EDB. */
static tp_err dbfail(sqlite3 *db, char *why, size_t whylen)
{
    if (why) snprintf(why, whylen, "%s", sqlite3_errmsg(db));
    return TP_EDB;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* col_int_or is column i, or none when it is NULL. */
static int64_t col_int_or(sqlite3_stmt *st, int i, int64_t none)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? none : sqlite3_column_int64(st, i);
}

/* scan_end finalizes st after a scan that stopped with rc (fn's, or TP_OK
 * when the rows ran out with src). */
static tp_err scan_end(sqlite3 *db, sqlite3_stmt *st, tp_err rc, int src, char *why, size_t whylen)
{
    if (rc == TP_OK && src != SQLITE_DONE) rc = dbfail(db, why, whylen);
    sqlite3_finalize(st);
    return rc;
}

/* scan_begin prepares sql on db with its parameters ?1 = a and, when
 * nparams is 2, ?2 = b. */
static tp_err scan_begin(sqlite3 *db, const char *sql, int nparams, int64_t a, int64_t b,
                         sqlite3_stmt **st, char *why, size_t whylen)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) return dbfail(db, why, whylen);
    sqlite3_bind_int64(*st, 1, a);
    if (nparams == 2) sqlite3_bind_int64(*st, 2, b);
    return TP_OK;
}

tp_err tpd_rows_run(tpd_store *s, int64_t run, tpd_run_row_fn fn, void *arg, char *why,
                    size_t whylen)
{
    sqlite3 *db = tpd_store_db(s);
    sqlite3_stmt *st = NULL;
    tpd_run_row r;
    tp_err rc;
    int src;
    if ((rc = scan_begin(db, "SELECT name, check_kind, params, created_ns FROM runs WHERE id = ?",
                         1, run, 0, &st, why, whylen)) != TP_OK)
        return rc;
    src = sqlite3_step(st);
    if (src != SQLITE_ROW) {
        rc = src == SQLITE_DONE ? TP_ENOENT : dbfail(db, why, whylen);
        sqlite3_finalize(st);
        return rc;
    }
    r.name = col_text(st, 0);
    r.check = col_text(st, 1);
    r.params = col_text(st, 2);
    r.created_ns = sqlite3_column_int64(st, 3);
    rc = fn(arg, &r);
    sqlite3_finalize(st);
    return rc;
}

tp_err tpd_rows_execs(tpd_store *s, int64_t run, tpd_exec_row_fn fn, void *arg, char *why,
                      size_t whylen)
{
    sqlite3 *db = tpd_store_db(s);
    sqlite3_stmt *st = NULL;
    tp_err rc = TP_OK;
    int src;
    if ((rc = scan_begin(db,
                         "SELECT id, role, argv, created_ns, finished_ns, exit_status,"
                         " exit_signal FROM executions WHERE run_id = ? ORDER BY id",
                         1, run, 0, &st, why, whylen)) != TP_OK)
        return rc;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        tpd_exec_row e;
        e.id = sqlite3_column_int64(st, 0);
        e.role = col_text(st, 1);
        e.argv_json = col_text(st, 2);
        e.created_ns = sqlite3_column_int64(st, 3);
        e.finished = sqlite3_column_type(st, 4) != SQLITE_NULL;
        e.finished_ns = sqlite3_column_int64(st, 4);
        e.has_status = sqlite3_column_type(st, 5) != SQLITE_NULL;
        e.status = sqlite3_column_int64(st, 5);
        e.has_signal = sqlite3_column_type(st, 6) != SQLITE_NULL;
        e.signal = sqlite3_column_int64(st, 6);
        if ((rc = fn(arg, &e)) != TP_OK) break;
    }
    return scan_end(db, st, rc, src, why, whylen);
}

tp_err tpd_rows_procs(tpd_store *s, int64_t exec, tpd_proc_row_fn fn, void *arg, char *why,
                      size_t whylen)
{
    sqlite3 *db = tpd_store_db(s);
    sqlite3_stmt *st = NULL;
    tp_err rc = TP_OK;
    int src;
    if ((rc = scan_begin(db,
                         "SELECT pid, ppid, rank, world, role, python, torch, nevents, max_seq "
                         "FROM processes WHERE exec_id = ? ORDER BY id",
                         1, exec, 0, &st, why, whylen)) != TP_OK)
        return rc;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        tpd_proc_row p;
        p.pid = sqlite3_column_int64(st, 0);
        p.ppid = sqlite3_column_int64(st, 1);
        p.rank = col_int_or(st, 2, -1);
        p.world = sqlite3_column_int64(st, 3);
        p.role = col_text(st, 4);
        p.python = col_text(st, 5);
        p.torch = col_text(st, 6);
        p.nevents = sqlite3_column_int64(st, 7);
        p.max_seq = col_int_or(st, 8, -1);
        if ((rc = fn(arg, &p)) != TP_OK) break;
    }
    return scan_end(db, st, rc, src, why, whylen);
}

tp_err tpd_rows_events(tpd_store *s, int64_t exec, int64_t pid, tpd_event_row_fn fn, void *arg,
                       char *why, size_t whylen)
{
    sqlite3 *db = tpd_store_db(s);
    sqlite3_stmt *st = NULL;
    tp_buf scratch; /* a packed body, unpacked */
    tp_body_ix ix;  /* where its keys are: the reader asks for several */
    tp_err rc = TP_OK;
    int src;
    tp_buf_init(&scratch);
    if ((rc = scan_begin(db,
                         "SELECT seq, time_ns, step, kind, body FROM events "
                         "WHERE exec_id = ? AND pid = ? ORDER BY seq",
                         2, exec, pid, &st, why, whylen)) != TP_OK)
        return rc;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        tp_event e;
        const char *k = col_text(st, 3);
        memset(&e, 0, sizeof e);
        e.seq = (uint64_t)sqlite3_column_int64(st, 0);
        e.time_ns = (uint64_t)sqlite3_column_int64(st, 1);
        e.step = sqlite3_column_int64(st, 2);
        e.kind = k ? tp_kind_parse(k, strlen(k)) : TP_K_NONE;
        if ((rc = tpd_body_read(tpd_store_leafdict(s), sqlite3_column_blob(st, 4),
                                (size_t)sqlite3_column_bytes(st, 4), &scratch, &e.body,
                                &e.body_len)) != TP_OK) {
            if (why)
                snprintf(why, whylen, "event %lld of process %lld: a packed body that %s",
                         (long long)e.seq, (long long)pid,
                         rc == TP_ECORRUPT ? "is damaged or names no stored leaf definition"
                                           : "cannot be read");
            break;
        }
        if (e.kind != TP_K_NONE && tp_body_index(&e, &ix) == TP_OK) e.ix = &ix;
        if ((rc = fn(arg, &e)) != TP_OK) break;
    }
    tp_buf_free(&scratch);
    return scan_end(db, st, rc, src, why, whylen);
}
