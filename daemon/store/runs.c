/* SPDX-License-Identifier: MIT
 * runs.c -- runs, executions and verdicts: the rows the control commands and
 * the verdict engines create, and the state of an execution as exec.finish
 * sees it. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/store.h"

/* dberr maps a failed SQLite call to a tp_err (never TP_OK). */
static tp_err dberr(int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    return e == TP_OK ? TP_EDB : e;
}

/* bind_text binds s, or NULL when s is NULL. */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* run_insert steps an INSERT and returns the new rowid. */
static tp_err run_insert(tpd_store *s, sqlite3_stmt *st, int64_t *id)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) return dberr(rc);
    *id = sqlite3_last_insert_rowid(tpd_store_db(s));
    return TP_OK;
}

tp_err tpd_store_run_create(tpd_store *s, const char *name, const char *check, const char *params,
                            int64_t *run)
{
    return tpd_store_run_create_at(s, name, check, params, tpd_now_ns(), run);
}

tp_err tpd_store_run_create_at(tpd_store *s, const char *name, const char *check,
                               const char *params, int64_t created_ns, int64_t *run)
{
    static const char sql[] =
        "INSERT INTO runs(name, check_kind, params, created_ns) VALUES(?1, ?2, ?3, ?4)";
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    tp_err err;
    int rc;
    if (check == NULL) return TP_EINVAL;
    rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    bind_text(st, 1, name);
    bind_text(st, 2, check);
    bind_text(st, 3, params);
    sqlite3_bind_int64(st, 4, created_ns);
    err = run_insert(s, st, &id);
    sqlite3_finalize(st);
    if (err == TP_OK) *run = id;
    return err;
}

/* dup_col copies column i's text, or leaves *out NULL when it is NULL;
 * false when out of memory. */
static bool dup_col(sqlite3_stmt *st, int i, char **out)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    *out = t != NULL ? strdup(t) : NULL;
    return t == NULL || *out != NULL;
}

tp_err tpd_store_run_find(tpd_store *s, int64_t run, const char *name, const char *check,
                          int64_t *id, char **check_out, char **name_out)
{
    static const char by_id[] = "SELECT id, check_kind, name FROM runs WHERE id = ?1";
    static const char by_name[] = "SELECT id, check_kind, name FROM runs WHERE name = ?1 AND "
                                  "(?2 IS NULL OR check_kind = ?2) ORDER BY id DESC LIMIT 1";
    sqlite3_stmt *st = NULL;
    tp_err err = TP_OK;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), run > 0 ? by_id : by_name, -1, &st, NULL);
    *check_out = *name_out = NULL;
    if (rc == SQLITE_OK && run > 0) rc = sqlite3_bind_int64(st, 1, run);
    if (rc == SQLITE_OK && run <= 0) rc = sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && run <= 0 && check)
        rc = sqlite3_bind_text(st, 2, check, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        if (!dup_col(st, 1, check_out) || !dup_col(st, 2, name_out)) {
            free(*check_out);
            free(*name_out);
            *check_out = *name_out = NULL;
            err = TP_ENOMEM;
        }
    } else {
        err = rc == SQLITE_DONE ? TP_ENOENT : dberr(rc);
    }
    sqlite3_finalize(st);
    return err;
}

int64_t tpd_store_events_in(tpd_store *s, int64_t exec, int64_t pid, int64_t lo, int64_t hi)
{
    static const char sql[] =
        "SELECT count(*) FROM events WHERE exec_id = ?1 AND pid = ?2 AND seq BETWEEN ?3 AND ?4";
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, exec);
        sqlite3_bind_int64(st, 2, pid);
        sqlite3_bind_int64(st, 3, lo);
        sqlite3_bind_int64(st, 4, hi);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

tp_err tpd_store_run_exists(tpd_store *s, int64_t run)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), "SELECT 1 FROM runs WHERE id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) return TP_OK;
    if (rc == SQLITE_DONE) return TP_ENOENT;
    return dberr(rc);
}

tp_err tpd_store_exec_create(tpd_store *s, int64_t run, const char *role, const char *argv_json,
                             int64_t *exec)
{
    static const char sql[] =
        "INSERT INTO executions(run_id, role, argv, created_ns) VALUES(?1, ?2, ?3, ?4)";
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    tp_err err = tpd_store_run_exists(s, run);
    int rc;
    if (err != TP_OK) return err;
    rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, run);
    bind_text(st, 2, role);
    bind_text(st, 3, argv_json);
    sqlite3_bind_int64(st, 4, tpd_now_ns());
    err = run_insert(s, st, &id);
    sqlite3_finalize(st);
    if (err == TP_OK) *exec = id;
    return err;
}

tp_err tpd_store_exec_finish(tpd_store *s, int64_t exec, const int64_t *status,
                             const int64_t *signal)
{
    static const char sql[] = "UPDATE executions SET finished_ns = ?2, exit_status = ?3, "
                              "exit_signal = ?4 WHERE id = ?1 AND finished_ns IS NULL";
    sqlite3_stmt *st = NULL;
    tpd_exec_state es;
    tp_err err = tpd_store_exec_state(s, exec, &es);
    int rc;
    if (err != TP_OK) return err;
    if (es.finished) return TP_OK;
    rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, tpd_now_ns());
    if (status) sqlite3_bind_int64(st, 3, *status);
    if (signal) sqlite3_bind_int64(st, 4, *signal);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? TP_OK : dberr(rc);
}

tp_err tpd_store_exec_state(tpd_store *s, int64_t exec, tpd_exec_state *out)
{
    static const char sql[] =
        "SELECT e.run_id, e.finished_ns,"
        " (SELECT count(*) FROM processes p WHERE p.exec_id = e.id),"
        " (SELECT count(*) FROM processes p WHERE p.exec_id = e.id AND p.bye_reason IS NOT NULL),"
        " (SELECT coalesce(sum(nevents), 0) FROM processes p WHERE p.exec_id = e.id),"
        " (SELECT coalesce(sum(dropped), 0) FROM processes p WHERE p.exec_id = e.id),"
        " (SELECT count(*) FROM gaps g WHERE g.exec_id = e.id)"
        " FROM executions e WHERE e.id = ?1";
    sqlite3_stmt *st = NULL;
    tpd_exec_state es;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, exec);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(&es, 0, sizeof es);
        es.run = sqlite3_column_int64(st, 0);
        es.finished = sqlite3_column_type(st, 1) != SQLITE_NULL;
        es.finished_ns = sqlite3_column_int64(st, 1);
        es.processes = sqlite3_column_int64(st, 2);
        es.with_bye = sqlite3_column_int64(st, 3);
        es.events = sqlite3_column_int64(st, 4);
        es.dropped = sqlite3_column_int64(st, 5);
        es.gaps = sqlite3_column_int64(st, 6);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) return TP_ENOENT;
    if (rc != SQLITE_ROW) return dberr(rc);
    *out = es;
    return TP_OK;
}

tp_err tpd_store_exec_interrupted(tpd_store *s, int64_t exec, bool *yes)
{
    static const char sql[] = "SELECT EXISTS (SELECT 1 FROM processes"
                              " WHERE exec_id = ?1 AND bye_reason = 'interrupt')";
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    bool v = false;
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, exec);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) v = sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return dberr(rc);
    *yes = v;
    return TP_OK;
}

/* ---- verdicts ---- */

tp_err tpd_store_verdict_insert(tpd_store *s, const tpd_verdict *v, int64_t *id)
{
    static const char sql[] =
        "INSERT INTO verdicts(run_id, check_kind, outcome, step, path, report, text, created_ns)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    sqlite3_stmt *st = NULL;
    int64_t nid = 0;
    tp_err err;
    int rc;
    if (v == NULL || v->check_kind == NULL || v->outcome == NULL) return TP_EINVAL;
    rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, v->run);
    bind_text(st, 2, v->check_kind);
    bind_text(st, 3, v->outcome);
    if (v->has_step) sqlite3_bind_int64(st, 4, v->step);
    bind_text(st, 5, v->path);
    bind_text(st, 6, v->report);
    bind_text(st, 7, v->text);
    sqlite3_bind_int64(st, 8, v->created_ns ? v->created_ns : tpd_now_ns());
    err = run_insert(s, st, &nid);
    sqlite3_finalize(st);
    if (err == TP_OK && id) *id = nid;
    return err;
}

/* col_dup copies a text column, NULL for NULL; *oom is set on failure. */
static char *col_dup(sqlite3_stmt *st, int i, int *oom)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    char *p;
    if (t == NULL) return NULL;
    p = strdup((const char *)t);
    if (p == NULL) *oom = 1;
    return p;
}

/* verdict_read runs a verdict SELECT bound to one id. */
static tp_err verdict_read(tpd_store *s, const char *sql, int64_t key, tpd_verdict *out)
{
    sqlite3_stmt *st = NULL;
    tpd_verdict v;
    int oom = 0;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, key);
    memset(&v, 0, sizeof v);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        v.id = sqlite3_column_int64(st, 0);
        v.run = sqlite3_column_int64(st, 1);
        v.check_kind = col_dup(st, 2, &oom);
        v.outcome = col_dup(st, 3, &oom);
        v.has_step = sqlite3_column_type(st, 4) != SQLITE_NULL;
        v.step = sqlite3_column_int64(st, 4);
        v.path = col_dup(st, 5, &oom);
        v.report = col_dup(st, 6, &oom);
        v.text = col_dup(st, 7, &oom);
        v.created_ns = sqlite3_column_int64(st, 8);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) return TP_ENOENT;
    if (rc != SQLITE_ROW) return dberr(rc);
    if (oom) {
        tpd_verdict_clear(&v);
        return TP_ENOMEM;
    }
    *out = v;
    return TP_OK;
}

#define VERDICT_COLS "id, run_id, check_kind, outcome, step, path, report, text, created_ns"

tp_err tpd_store_verdict_get(tpd_store *s, int64_t id, tpd_verdict *out)
{
    return verdict_read(s, "SELECT " VERDICT_COLS " FROM verdicts WHERE id = ?1", id, out);
}

tp_err tpd_store_verdict_latest(tpd_store *s, int64_t run, tpd_verdict *out)
{
    return verdict_read(
        s, "SELECT " VERDICT_COLS " FROM verdicts WHERE run_id = ?1 ORDER BY id DESC LIMIT 1", run,
        out);
}

void tpd_verdict_clear(tpd_verdict *v)
{
    if (v == NULL) return;
    free(v->check_kind);
    free(v->outcome);
    free(v->path);
    free(v->report);
    free(v->text);
    memset(v, 0, sizeof *v);
}
