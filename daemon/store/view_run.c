/* SPDX-License-Identifier: MIT
 * view_run.c -- the "run" view of query.h: a run, its latest verdict, its
 * executions and their processes (versions, events, bye, sequence gaps,
 * counts per event kind), as text or as JSON.
 *
 * Gaps are computed from the events at query time, so a run that is still
 * being recorded shows what is known now. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "daemon/store/query.h"
#include "daemon/store/view.h"

#define MAX_GAPS_SHOWN 8

/* col_parsed is column i (JSON text: params, argv) parsed, or as a string
 * when it does not parse; null when NULL. */
static json_t *col_parsed(sqlite3_stmt *st, int i)
{
    const char *s = tpd_view_col_text(st, i, NULL);
    json_t *v;
    if (s == NULL) return json_null();
    v = json_loads(s, JSON_DECODE_ANY, NULL);
    return v ? v : tpd_json_str(s);
}

typedef struct gap_text {
    tpd_str *out;
    json_t *arr; /* JSON: every range as [first, last] */
    int64_t n;
    bool bad;
} gap_text;

static void add_gap(void *arg, int64_t first, int64_t last)
{
    gap_text *g = arg;
    if (g->arr) {
        g->bad |= !tpd_jpush(g->arr, json_pack("[I, I]", (json_int_t)first, (json_int_t)last));
    } else if (g->n < MAX_GAPS_SHOWN) {
        if (first == last)
            tpd_str_printf(g->out, "%s%lld", g->n ? "," : "", (long long)first);
        else
            tpd_str_printf(g->out, "%s%lld-%lld", g->n ? "," : "", (long long)first,
                           (long long)last);
    }
    g->n++;
}

static const char proc_sql[] =
    "SELECT pid, rank, world, role, python, torch, nevents, bye_reason, bye_code, dropped,"
    " sent, errors, ppid, local_rank, agent FROM processes WHERE exec_id = ?1 ORDER BY pid";
static const char kinds_sql[] = "SELECT kind, count(*) FROM events WHERE exec_id = ?1 AND"
                                " pid = ?2 GROUP BY kind ORDER BY min(seq)";

/* process_json is one process row of proc_sql as JSON, with its gaps and
 * event counts per kind. */
static json_t *process_json(tpd_store *s, int64_t exec, sqlite3_stmt *st, sqlite3_stmt *ks,
                            tp_err *err, char *why, size_t whylen)
{
    int64_t pid = sqlite3_column_int64(st, 0);
    json_t *p = json_object(), *bye = json_null(), *kinds = json_object();
    gap_text g = {NULL, json_array(), 0, false};
    bool bad = false;
    int rc;
    bad |= !tpd_jset(p, "pid", tpd_view_col_json(st, 0));
    bad |= !tpd_jset(p, "ppid", tpd_view_col_json(st, 12));
    bad |= !tpd_jset(p, "rank", tpd_view_col_json(st, 1));
    bad |= !tpd_jset(p, "world", tpd_view_col_json(st, 2));
    bad |= !tpd_jset(p, "local_rank", tpd_view_col_json(st, 13));
    bad |= !tpd_jset(p, "role", tpd_view_col_json(st, 3));
    bad |= !tpd_jset(p, "agent", tpd_view_col_json(st, 14));
    bad |= !tpd_jset(p, "python", tpd_view_col_json(st, 4));
    bad |= !tpd_jset(p, "torch", tpd_view_col_json(st, 5));
    bad |= !tpd_jset(p, "events", tpd_view_col_json(st, 6));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
        json_decref(bye);
        bye = json_object();
        bad |= !tpd_jset(bye, "reason", tpd_view_col_json(st, 7));
        bad |= !tpd_jset(bye, "code", tpd_view_col_json(st, 8));
        bad |= !tpd_jset(bye, "sent", tpd_view_col_json(st, 10));
        bad |= !tpd_jset(bye, "dropped", tpd_view_col_json(st, 9));
        bad |= !tpd_jset(bye, "errors", tpd_view_col_json(st, 11));
    }
    bad |= !tpd_jset(p, "bye", bye);
    if ((*err = tpd_store_process_gaps(s, exec, pid, add_gap, &g, NULL)) != TP_OK) {
        snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
        json_decref(g.arr);
        json_decref(kinds);
        json_decref(p);
        return NULL;
    }
    bad |= g.bad || !tpd_jset(p, "gaps", g.arr);
    sqlite3_reset(ks);
    sqlite3_bind_int64(ks, 1, exec);
    sqlite3_bind_int64(ks, 2, pid);
    while ((rc = sqlite3_step(ks)) == SQLITE_ROW)
        bad |= !tpd_jset(kinds, tpd_view_col_text(ks, 0, "?"), tpd_view_col_json(ks, 1));
    bad |= !tpd_jset(p, "kinds", kinds);
    if (rc != SQLITE_DONE) {
        *err = tpd_view_dbfail(s, rc, why, whylen);
        json_decref(p);
        return NULL;
    }
    if (bad) {
        *err = tpd_view_oom(why, whylen);
        json_decref(p);
        return NULL;
    }
    return p;
}

/* process_text prints one process row of proc_sql. */
static tp_err process_text(tpd_store *s, int64_t exec, sqlite3_stmt *st, sqlite3_stmt *ks,
                           tpd_str *out, char *why, size_t whylen)
{
    int64_t pid = sqlite3_column_int64(st, 0), ngaps = 0;
    gap_text g = {out, NULL, 0, false};
    tp_err err;
    int rc;
    tpd_str_printf(out, "  process %lld: rank %s", (long long)pid, tpd_view_col_text(st, 1, "?"));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        tpd_str_printf(out, "/%s", tpd_view_col_text(st, 2, "?"));
    tpd_str_printf(out, ", role %s, python %s, torch %s", tpd_view_col_text(st, 3, "?"),
                   tpd_view_col_text(st, 4, "?"), tpd_view_col_text(st, 5, "-"));
    if (sqlite3_column_type(st, 12) != SQLITE_NULL)
        tpd_str_printf(out, ", parent %s", tpd_view_col_text(st, 12, "?"));
    if (sqlite3_column_type(st, 3) == SQLITE_NULL) tpd_str_puts(out, " (no hello)");
    tpd_str_printf(out, "\n    events %lld, ", (long long)sqlite3_column_int64(st, 6));
    if (sqlite3_column_type(st, 7) == SQLITE_NULL) {
        tpd_str_puts(out, "no bye: incomplete");
    } else {
        tpd_str_printf(out, "bye %s", tpd_view_col_text(st, 7, "?"));
        if (sqlite3_column_type(st, 8) != SQLITE_NULL)
            tpd_str_printf(out, " (code %s)", tpd_view_col_text(st, 8, "?"));
        tpd_str_printf(out, ", sent %s, dropped %s, errors %s", tpd_view_col_text(st, 10, "?"),
                       tpd_view_col_text(st, 9, "?"), tpd_view_col_text(st, 11, "?"));
    }
    tpd_str_puts(out, ", gaps ");
    if ((err = tpd_store_process_gaps(s, exec, pid, add_gap, &g, &ngaps)) != TP_OK) {
        snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
        return err;
    }
    if (ngaps == 0)
        tpd_str_puts(out, "none");
    else if (ngaps > MAX_GAPS_SHOWN)
        tpd_str_printf(out, ",... (%lld ranges)", (long long)ngaps);
    tpd_str_puts(out, "\n    kinds:");
    sqlite3_reset(ks);
    sqlite3_bind_int64(ks, 1, exec);
    sqlite3_bind_int64(ks, 2, pid);
    while ((rc = sqlite3_step(ks)) == SQLITE_ROW)
        tpd_str_printf(out, " %s %lld", tpd_view_col_text(ks, 0, "?"),
                       (long long)sqlite3_column_int64(ks, 1));
    if (rc != SQLITE_DONE) return tpd_view_dbfail(s, rc, why, whylen);
    tpd_str_puts(out, "\n");
    return TP_OK;
}

/* processes prints, or adds to the array procs, the processes of exec. */
static tp_err processes(tpd_store *s, int64_t exec, tpd_str *out, json_t *procs, char *why,
                        size_t whylen)
{
    sqlite3_stmt *st = NULL, *ks = NULL;
    tp_err err = tpd_view_prepare(s, proc_sql, &st, why, whylen);
    int rc = SQLITE_DONE, n = 0;
    if (err == TP_OK) err = tpd_view_prepare(s, kinds_sql, &ks, why, whylen);
    if (err != TP_OK) goto out;
    sqlite3_bind_int64(st, 1, exec);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        if (procs) {
            json_t *p = process_json(s, exec, st, ks, &err, why, whylen);
            if (p == NULL) goto out;
            if (!tpd_jpush(procs, p)) {
                err = tpd_view_oom(why, whylen);
                goto out;
            }
        } else if ((err = process_text(s, exec, st, ks, out, why, whylen)) != TP_OK) {
            goto out;
        }
    }
    if (rc != SQLITE_DONE)
        err = tpd_view_dbfail(s, rc, why, whylen);
    else if (n == 0 && procs == NULL)
        tpd_str_puts(out, "  (no process reported)\n");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ks);
    return err;
}

/* run_json is run's row as a JSON object ("id", "name", "check", "params",
 * "created_ns"), NULL with *err set when it cannot be read. */
static json_t *run_json(tpd_store *s, int64_t run, tp_err *err, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    json_t *o;
    bool bad = false;
    if ((*err = tpd_view_run_row(s, run, &st, why, whylen)) != TP_OK) return NULL;
    o = json_object();
    bad |= !tpd_jset(o, "id", tpd_json_int(run));
    bad |= !tpd_jset(o, "name", tpd_view_col_json(st, 0));
    bad |= !tpd_jset(o, "check", tpd_view_col_json(st, 1));
    bad |= !tpd_jset(o, "params", col_parsed(st, 2));
    bad |= !tpd_jset(o, "created_ns", tpd_view_col_json(st, 3));
    sqlite3_finalize(st);
    if (bad) *err = tpd_view_oom(why, whylen);
    return tpd_jdone(o, bad);
}

tp_err tpd_view_run(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen)
{
    static const char sql[] = "SELECT id, role, argv, created_ns, finished_ns, exit_status,"
                              " exit_signal FROM executions WHERE run_id = ?1 ORDER BY id";
    sqlite3_stmt *st = NULL;
    json_t *root = NULL, *execs = NULL, *vj = json_null();
    tpd_verdict v;
    bool bad = false;
    tp_err err;
    int rc, n = 0;
    if (js)
        root = run_json(s, run, &err, why, whylen);
    else
        err = tpd_view_run_header(s, run, out, why, whylen);
    if (err != TP_OK) goto out;
    err = tpd_store_verdict_latest(s, run, &v);
    if (err == TP_OK) {
        if (js) {
            json_decref(vj);
            vj = json_pack("{s:I, s:s, s:o, s:o, s:I}", "id", (json_int_t)v.id, "outcome",
                           v.outcome, "step", v.has_step ? tpd_json_int(v.step) : json_null(),
                           "path", tpd_json_str(v.path), "created_ns", (json_int_t)v.created_ns);
        } else {
            tpd_str_printf(out, "  verdict %s", v.outcome);
            if (v.has_step) tpd_str_printf(out, " at step %lld", (long long)v.step);
            if (v.path) tpd_str_printf(out, " (%s)", v.path);
            tpd_str_puts(out, "\n");
        }
        tpd_verdict_clear(&v);
    } else if (err != TP_ENOENT) {
        err = tpd_view_dbfail(s, SQLITE_ERROR, why, whylen);
        goto out;
    }
    if (js) {
        bad |= !tpd_jset(root, "verdict", vj);
        vj = NULL;
        execs = json_array();
    }
    if ((err = tpd_view_prepare(s, sql, &st, why, whylen)) != TP_OK) goto out;
    sqlite3_bind_int64(st, 1, run);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t exec = sqlite3_column_int64(st, 0);
        n++;
        if (js) {
            json_t *e = json_object(), *procs = json_array();
            bad |= !tpd_jset(e, "id", tpd_view_col_json(st, 0));
            bad |= !tpd_jset(e, "role", tpd_view_col_json(st, 1));
            bad |= !tpd_jset(e, "argv", col_parsed(st, 2));
            bad |= !tpd_jset(e, "created_ns", tpd_view_col_json(st, 3));
            bad |= !tpd_jset(e, "finished_ns", tpd_view_col_json(st, 4));
            bad |= !tpd_jset(e, "exit_status", tpd_view_col_json(st, 5));
            bad |= !tpd_jset(e, "exit_signal", tpd_view_col_json(st, 6));
            if ((err = processes(s, exec, NULL, procs, why, whylen)) != TP_OK) {
                json_decref(procs);
                json_decref(e);
                goto out;
            }
            bad |= !tpd_jset(e, "processes", procs);
            bad |= !tpd_jpush(execs, e);
            continue;
        }
        tpd_str_printf(out, "exec %lld [%s]: argv %s\n  exit: ", (long long)exec,
                       tpd_view_col_text(st, 1, "-"), tpd_view_col_text(st, 2, "[]"));
        if (sqlite3_column_type(st, 4) == SQLITE_NULL)
            tpd_str_puts(out, "not finished");
        else if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            tpd_str_printf(out, "signal %s", tpd_view_col_text(st, 6, "?"));
        else if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            tpd_str_printf(out, "status %s", tpd_view_col_text(st, 5, "?"));
        else
            tpd_str_puts(out, "unknown");
        tpd_str_puts(out, "\n");
        if ((err = processes(s, exec, out, NULL, why, whylen)) != TP_OK) goto out;
    }
    if (rc != SQLITE_DONE) {
        err = tpd_view_dbfail(s, rc, why, whylen);
    } else if (js) {
        bad |= !tpd_jset(root, "executions", execs);
        execs = NULL;
        err = tpd_view_put_json(tpd_jdone(root, bad), out, why, whylen);
        root = NULL;
    } else if (n == 0) {
        tpd_str_puts(out, "(no executions)\n");
    }
out:
    sqlite3_finalize(st);
    json_decref(vj);
    json_decref(execs);
    json_decref(root);
    return err;
}

tp_err tpd_query_run(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    return tpd_view_run(s, run, false, out, why, whylen);
}
