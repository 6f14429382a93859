/* SPDX-License-Identifier: MIT
 * query.c -- text views of the database for people: runs, a run, its steps.
 *
 * Everything here reads; gaps are computed from the events at query time,
 * so a run that is still being recorded shows what is known now.  The step
 * table streams: a process's backward and step events are read in seq order
 * and a row is printed when the step index changes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/store/query.h"
#include "proto/event.h"

#define MAX_GAPS_SHOWN 8

static tp_err dbfail(tpd_store *s, int rc, char *why, size_t whylen)
{
    tp_err e = tpd_sqlite_err(rc);
    snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
    return e == TP_OK ? TP_EDB : e;
}

static const char *col_text(sqlite3_stmt *st, int i, const char *none)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : none;
}

/* fmt_time formats a CLOCK_REALTIME ns value as local time. */
static const char *fmt_time(char *out, size_t n, int64_t ns)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(out, n, "%lld", (long long)ns);
    return out;
}

static tp_err prepare(tpd_store *s, const char *sql, sqlite3_stmt **st, char *why, size_t whylen)
{
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, st, NULL);
    return rc == SQLITE_OK ? TP_OK : dbfail(s, rc, why, whylen);
}

/* ---- runs ---- */

tp_err tpd_query_runs(tpd_store *s, tpd_str *out, char *why, size_t whylen)
{
    static const char sql[] =
        "SELECT r.id, r.name, r.check_kind, r.created_ns,"
        " (SELECT count(*) FROM executions e WHERE e.run_id = r.id),"
        " (SELECT outcome FROM verdicts v WHERE v.run_id = r.id ORDER BY v.id DESC LIMIT 1)"
        " FROM runs r ORDER BY r.id";
    sqlite3_stmt *st = NULL;
    tp_err err = prepare(s, sql, &st, why, whylen);
    int rc, n = 0;
    if (err != TP_OK) return err;
    tpd_str_printf(out, "%-6s %-20s %-10s %-19s %5s  %s\n", "RUN", "NAME", "CHECK", "CREATED",
                   "EXECS", "VERDICT");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char when[64];
        tpd_str_printf(out, "%-6lld %-20s %-10s %-19s %5lld  %s\n",
                       (long long)sqlite3_column_int64(st, 0), col_text(st, 1, "-"),
                       col_text(st, 2, "-"),
                       fmt_time(when, sizeof when, sqlite3_column_int64(st, 3)),
                       (long long)sqlite3_column_int64(st, 4), col_text(st, 5, "-"));
        n++;
    }
    if (rc != SQLITE_DONE)
        err = dbfail(s, rc, why, whylen);
    else if (n == 0)
        tpd_str_puts(out, "(no runs)\n");
    sqlite3_finalize(st);
    return err;
}

/* ---- one run ---- */

typedef struct gap_text {
    tpd_str *out;
    int64_t n;
} gap_text;

static void add_gap(void *arg, int64_t first, int64_t last)
{
    gap_text *g = arg;
    if (g->n < MAX_GAPS_SHOWN) {
        if (first == last)
            tpd_str_printf(g->out, "%s%lld", g->n ? "," : "", (long long)first);
        else
            tpd_str_printf(g->out, "%s%lld-%lld", g->n ? "," : "", (long long)first,
                           (long long)last);
    }
    g->n++;
}

/* process_lines prints the processes of one execution. */
static tp_err process_lines(tpd_store *s, int64_t exec, tpd_str *out, char *why, size_t whylen)
{
    static const char sql[] =
        "SELECT pid, rank, world, role, python, torch, nevents, bye_reason, bye_code, dropped,"
        " sent, errors, ppid FROM processes WHERE exec_id = ?1 ORDER BY pid";
    static const char kinds_sql[] = "SELECT kind, count(*) FROM events WHERE exec_id = ?1 AND"
                                    " pid = ?2 GROUP BY kind ORDER BY min(seq)";
    sqlite3_stmt *st = NULL, *ks = NULL;
    tp_err err = prepare(s, sql, &st, why, whylen);
    int rc, n = 0;
    if (err == TP_OK) err = prepare(s, kinds_sql, &ks, why, whylen);
    if (err != TP_OK) goto out;
    sqlite3_bind_int64(st, 1, exec);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(st, 0), ngaps = 0;
        gap_text g = {out, 0};
        n++;
        tpd_str_printf(out, "  process %lld: rank %s", (long long)pid, col_text(st, 1, "?"));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            tpd_str_printf(out, "/%s", col_text(st, 2, "?"));
        tpd_str_printf(out, ", role %s, python %s, torch %s", col_text(st, 3, "?"),
                       col_text(st, 4, "?"), col_text(st, 5, "-"));
        if (sqlite3_column_type(st, 12) != SQLITE_NULL)
            tpd_str_printf(out, ", parent %s", col_text(st, 12, "?"));
        if (sqlite3_column_type(st, 3) == SQLITE_NULL) tpd_str_puts(out, " (no hello)");
        tpd_str_printf(out, "\n    events %lld, ", (long long)sqlite3_column_int64(st, 6));
        if (sqlite3_column_type(st, 7) == SQLITE_NULL) {
            tpd_str_puts(out, "no bye: incomplete");
        } else {
            tpd_str_printf(out, "bye %s", col_text(st, 7, "?"));
            if (sqlite3_column_type(st, 8) != SQLITE_NULL)
                tpd_str_printf(out, " (code %s)", col_text(st, 8, "?"));
            tpd_str_printf(out, ", sent %s, dropped %s, errors %s", col_text(st, 10, "?"),
                           col_text(st, 9, "?"), col_text(st, 11, "?"));
        }
        tpd_str_puts(out, ", gaps ");
        if ((err = tpd_store_process_gaps(s, exec, pid, add_gap, &g, &ngaps)) != TP_OK) {
            snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
            goto out;
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
            tpd_str_printf(out, " %s %lld", col_text(ks, 0, "?"),
                           (long long)sqlite3_column_int64(ks, 1));
        if (rc != SQLITE_DONE) {
            err = dbfail(s, rc, why, whylen);
            goto out;
        }
        tpd_str_puts(out, "\n");
    }
    if (rc != SQLITE_DONE)
        err = dbfail(s, rc, why, whylen);
    else if (n == 0)
        tpd_str_puts(out, "  (no process reported)\n");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ks);
    return err;
}

/* run_header prints the run line; TP_ENOENT for an unknown run. */
static tp_err run_header(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    static const char sql[] = "SELECT name, check_kind, params, created_ns FROM runs WHERE id = ?1";
    sqlite3_stmt *st = NULL;
    tp_err err = prepare(s, sql, &st, why, whylen);
    char when[64];
    int rc;
    if (err != TP_OK) return err;
    sqlite3_bind_int64(st, 1, run);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        tpd_str_printf(out, "run %lld: name %s, check %s, created %s\n", (long long)run,
                       col_text(st, 0, "-"), col_text(st, 1, "-"),
                       fmt_time(when, sizeof when, sqlite3_column_int64(st, 3)));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            tpd_str_printf(out, "  params %s\n", col_text(st, 2, ""));
    } else if (rc == SQLITE_DONE) {
        snprintf(why, whylen, "no run %lld", (long long)run);
        err = TP_ENOENT;
    } else {
        err = dbfail(s, rc, why, whylen);
    }
    sqlite3_finalize(st);
    return err;
}

tp_err tpd_query_run(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    static const char sql[] = "SELECT id, role, argv, finished_ns, exit_status, exit_signal"
                              " FROM executions WHERE run_id = ?1 ORDER BY id";
    sqlite3_stmt *st = NULL;
    tpd_verdict v;
    tp_err err = run_header(s, run, out, why, whylen);
    int rc, n = 0;
    if (err != TP_OK) return err;
    err = tpd_store_verdict_latest(s, run, &v);
    if (err == TP_OK) {
        tpd_str_printf(out, "  verdict %s", v.outcome);
        if (v.has_step) tpd_str_printf(out, " at step %lld", (long long)v.step);
        if (v.path) tpd_str_printf(out, " (%s)", v.path);
        tpd_str_puts(out, "\n");
        tpd_verdict_clear(&v);
    } else if (err != TP_ENOENT) {
        return dbfail(s, SQLITE_ERROR, why, whylen);
    }
    if ((err = prepare(s, sql, &st, why, whylen)) != TP_OK) return err;
    sqlite3_bind_int64(st, 1, run);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t exec = sqlite3_column_int64(st, 0);
        n++;
        tpd_str_printf(out, "exec %lld [%s]: argv %s\n  exit: ", (long long)exec,
                       col_text(st, 1, "-"), col_text(st, 2, "[]"));
        if (sqlite3_column_type(st, 3) == SQLITE_NULL)
            tpd_str_puts(out, "not finished");
        else if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            tpd_str_printf(out, "signal %s", col_text(st, 5, "?"));
        else if (sqlite3_column_type(st, 4) != SQLITE_NULL)
            tpd_str_printf(out, "status %s", col_text(st, 4, "?"));
        else
            tpd_str_puts(out, "unknown");
        tpd_str_puts(out, "\n");
        if ((err = process_lines(s, exec, out, why, whylen)) != TP_OK) goto out;
    }
    if (rc != SQLITE_DONE)
        err = dbfail(s, rc, why, whylen);
    else if (n == 0)
        tpd_str_puts(out, "(no executions)\n");
out:
    sqlite3_finalize(st);
    return err;
}

/* ---- steps ---- */

typedef struct step_row {
    bool open;
    int64_t step;
    double loss;
    bool has_loss;
    int64_t nback;
    int64_t nopt;
    tpd_str gnorm, unorm, lrs, update;
    bool has_scale;
    double scale;
} step_row;

/* list_num appends v (or "-") to a comma-separated list. */
static void list_num(tpd_str *l, bool has, double v)
{
    char num[32];
    if (l->len) tpd_str_puts(l, ",");
    tpd_str_puts(l, has ? tpd_fmt_g(num, sizeof num, v) : "-");
}

static void row_print(step_row *r, tpd_str *out)
{
    char loss[32], scale[32];
    if (!r->open) return;
    tpd_str_printf(out, "  %-6lld %-12s %-8lld %-12s %-12s %-16s %-9lld %-12s %s\n",
                   (long long)r->step, r->has_loss ? tpd_fmt_g(loss, sizeof loss, r->loss) : "-",
                   (long long)r->nback, r->gnorm.len ? tpd_str_cstr(&r->gnorm) : "-",
                   r->unorm.len ? tpd_str_cstr(&r->unorm) : "-",
                   r->lrs.len ? tpd_str_cstr(&r->lrs) : "-", (long long)r->nopt,
                   r->update.len ? tpd_str_cstr(&r->update) : "-",
                   r->has_scale ? tpd_fmt_g(scale, sizeof scale, r->scale) : "-");
    r->open = false;
}

static void row_start(step_row *r, int64_t step)
{
    r->open = true;
    r->step = step;
    r->loss = 0;
    r->has_loss = false;
    r->nback = r->nopt = 0;
    r->has_scale = false;
    tpd_str_reset(&r->update);
    tpd_str_reset(&r->gnorm);
    tpd_str_reset(&r->unorm);
    tpd_str_reset(&r->lrs);
}

/* list_word appends w to a comma-separated list. */
static void list_word(tpd_str *l, const char *w)
{
    if (l->len) tpd_str_puts(l, ",");
    tpd_str_puts(l, w);
}

/* row_add folds one backward, step or GradScaler event into the row. */
static void row_add(step_row *r, const tp_event *e)
{
    const char *phase;
    uint32_t plen;
    double v = 0;
    bool has;
    tp_mpr f;
    uint32_t n;
    if (e->kind == TP_K_AMP) {
        if (tp_body_f64(e, TPF_amp_scale, &v) == TP_OK) {
            r->scale = v;
            r->has_scale = true;
        }
        return;
    }
    if (e->kind == TP_K_BACKWARD) {
        r->nback++;
        if (tp_body_f64(e, TPF_backward_loss, &v) == TP_OK) {
            r->loss += v;
            r->has_loss = true;
        }
        return;
    }
    if (tp_body_str(e, TPF_step_phase, &phase, &plen) != TP_OK) return;
    if (tp_mp_str_eq(phase, plen, "pre")) {
        r->nopt++;
        has = tp_body_f64(e, TPF_step_gnorm, &v) == TP_OK;
        list_num(&r->gnorm, has, v);
        if (tp_body_find(e, TPF_step_lrs, &f) == TP_OK && tp_mpr_array(&f, &n) == TP_OK) {
            for (uint32_t i = 0; i < n; i++) {
                tp_mptype t;
                int64_t iv;
                if (tp_mpr_peek(&f, &t) != TP_OK) break;
                if (t == TP_MP_INT) {
                    if (tp_mpr_int(&f, &iv) != TP_OK) break;
                    v = (double)iv;
                } else if (tp_mpr_f64(&f, &v) != TP_OK) {
                    break;
                }
                list_num(&r->lrs, true, v);
            }
        }
    } else if (tp_mp_str_eq(phase, plen, "post")) {
        bool b;
        has = tp_body_f64(e, TPF_step_unorm, &v) == TP_OK;
        list_num(&r->unorm, has, v);
        if (tp_body_bool(e, TPF_step_skipped, &b) == TP_OK && b)
            list_word(&r->update, "skipped");
        else if (tp_body_bool(e, TPF_step_changed, &b) == TP_OK)
            list_word(&r->update, b ? "moved" : "none");
        else
            list_word(&r->update, "-");
    }
}

/* process_steps prints the step table of one process; *any is set if it
 * had rows. */
static tp_err process_steps(tpd_store *s, sqlite3_stmt *ev, int64_t exec, const char *role,
                            int64_t pid, const char *rank, step_row *r, tpd_str *out, bool *any,
                            char *why, size_t whylen)
{
    int rc;
    bool header = false;
    sqlite3_reset(ev);
    sqlite3_bind_int64(ev, 1, exec);
    sqlite3_bind_int64(ev, 2, pid);
    r->open = false;
    while ((rc = sqlite3_step(ev)) == SQLITE_ROW) {
        tp_event e;
        const char *k = col_text(ev, 1, "");
        memset(&e, 0, sizeof e);
        e.step = sqlite3_column_int64(ev, 0);
        e.kind = tp_kind_parse(k, strlen(k));
        e.body = sqlite3_column_blob(ev, 2);
        e.body_len = (size_t)sqlite3_column_bytes(ev, 2);
        if (e.body == NULL) continue;
        if (!header) {
            tpd_str_printf(out, "exec %lld [%s] process %lld rank %s\n", (long long)exec, role,
                           (long long)pid, rank);
            tpd_str_printf(out, "  %-6s %-12s %-8s %-12s %-12s %-16s %-9s %-12s %s\n", "STEP",
                           "LOSS", "BACKWARD", "GNORM", "UNORM", "LR", "OPT_STEPS", "UPDATE",
                           "SCALE");
            header = true;
            *any = true;
        }
        if (r->open && r->step != e.step) row_print(r, out);
        if (!r->open) row_start(r, e.step);
        row_add(r, &e);
    }
    row_print(r, out);
    if (rc != SQLITE_DONE) return dbfail(s, rc, why, whylen);
    return TP_OK;
}

tp_err tpd_query_steps(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    static const char procs_sql[] =
        "SELECT e.id, coalesce(e.role, '-'), p.pid, coalesce(p.rank, '?')"
        " FROM executions e JOIN processes p ON p.exec_id = e.id"
        " WHERE e.run_id = ?1 ORDER BY e.id, p.pid";
    static const char ev_sql[] =
        "SELECT step, kind, body FROM events WHERE exec_id = ?1 AND pid = ?2"
        " AND kind IN ('backward', 'step', 'amp') ORDER BY seq";
    sqlite3_stmt *ps = NULL, *ev = NULL;
    step_row r;
    bool any = false;
    tpd_str head;
    tp_err err;
    int rc;
    tpd_str_init(&head);
    memset(&r, 0, sizeof r);
    if ((err = run_header(s, run, &head, why, whylen)) != TP_OK) goto out;
    tpd_str_append(out, head.s, head.len);
    if ((err = prepare(s, procs_sql, &ps, why, whylen)) != TP_OK) goto out;
    if ((err = prepare(s, ev_sql, &ev, why, whylen)) != TP_OK) goto out;
    sqlite3_bind_int64(ps, 1, run);
    while ((rc = sqlite3_step(ps)) == SQLITE_ROW) {
        err = process_steps(s, ev, sqlite3_column_int64(ps, 0), col_text(ps, 1, "-"),
                            sqlite3_column_int64(ps, 2), col_text(ps, 3, "?"), &r, out, &any, why,
                            whylen);
        if (err != TP_OK) goto out;
    }
    if (rc != SQLITE_DONE)
        err = dbfail(s, rc, why, whylen);
    else if (!any)
        tpd_str_puts(out, "(no steps recorded)\n");
out:
    tpd_str_free(&head);
    tpd_str_free(&r.gnorm);
    tpd_str_free(&r.unorm);
    tpd_str_free(&r.lrs);
    tpd_str_free(&r.update);
    sqlite3_finalize(ps);
    sqlite3_finalize(ev);
    return err;
}

tp_err tpd_query_saves(tpd_store *s, int64_t exec, tpd_str *out, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    tp_err err;
    int rc;
    if ((err = prepare(s,
                       "SELECT body FROM events WHERE exec_id = ? AND kind = 'save' ORDER BY "
                       "pid, seq",
                       &st, why, whylen)) != TP_OK)
        return err;
    sqlite3_bind_int64(st, 1, exec);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tp_event e;
        const char *name, *target, *error;
        uint32_t nlen, tlen, elen;
        uint8_t d[16];
        int64_t size;
        memset(&e, 0, sizeof e);
        e.kind = TP_K_SAVE;
        e.body = sqlite3_column_blob(st, 0);
        e.body_len = (size_t)sqlite3_column_bytes(st, 0);
        if (e.body == NULL || tp_body_str(&e, TPF_saveload_target, &target, &tlen) != TP_OK)
            continue;
        /* A buffer's bytes end up in a file the agent never sees (Lightning
         * writes them through fsspec): "buffer <digest> <size>" lets the tool
         * find that file by its content. */
        if (tlen == 6 && memcmp(target, "buffer", 6) == 0) {
            if (tp_body_str(&e, TPF_saveload_error, &error, &elen) == TP_OK ||
                tp_body_digest(&e, TPF_saveload_digest, d) != TP_OK ||
                tp_body_int(&e, TPF_saveload_bytes, &size) != TP_OK || size <= 0)
                continue;
            tpd_str_puts(out, "buffer ");
            for (int i = 0; i < 16; i++) tpd_str_printf(out, "%02x", d[i]);
            tpd_str_printf(out, " %lld\n", (long long)size);
            continue;
        }
        if (tp_body_str(&e, TPF_saveload_name, &name, &nlen) != TP_OK) continue;
        if (nlen == 0 || name[0] != '/' || memchr(name, '\n', nlen) != NULL) continue;
        tpd_str_append(out, name, nlen);
        tpd_str_puts(out, "\n");
    }
    err = rc == SQLITE_DONE ? TP_OK : dbfail(s, rc, why, whylen);
    sqlite3_finalize(st);
    return err;
}

tp_err tpd_query(tpd_store *s, const char *what, int64_t id, tpd_str *out, char *why, size_t whylen)
{
    if (strcmp(what, "runs") == 0) return tpd_query_runs(s, out, why, whylen);
    if (strcmp(what, "run") == 0) return tpd_query_run(s, id, out, why, whylen);
    if (strcmp(what, "steps") == 0) return tpd_query_steps(s, id, out, why, whylen);
    if (strcmp(what, "saves") == 0) return tpd_query_saves(s, id, out, why, whylen);
    snprintf(why, whylen, "unknown query '%s' (runs, run, steps, saves)", what);
    return TP_EINVAL;
}
