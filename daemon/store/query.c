/* SPDX-License-Identifier: MIT
 * query.c -- views of the database for people and scripts: the runs, a run,
 * its steps, its verdict, as text or as JSON (built with jansson).
 *
 * Everything here reads; gaps are computed from the events at query time,
 * so a run that is still being recorded shows what is known now.  The step
 * table folds a process's backward, step and amp events, read in seq order,
 * into one row per step index.
 *
 * Text tables are built whole before they are printed: each column is as
 * wide as its widest cell (and at least as wide as it always was), counted
 * in characters, and a cell's control characters are escaped, so that every
 * row's columns start at the same offsets whatever the values. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "daemon/base/json.h"
#include "daemon/store/query.h"
#include "proto/event.h"

#define MAX_GAPS_SHOWN 8

static tp_err dbfail(tpd_store *s, int rc, char *why, size_t whylen)
{
    tp_err e = tpd_sqlite_err(rc);
    snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
    return e == TP_OK ? TP_EDB : e;
}

static tp_err oom(char *why, size_t whylen)
{
    snprintf(why, whylen, "out of memory");
    return TP_ENOMEM;
}

static const char *col_text(sqlite3_stmt *st, int i, const char *none)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : none;
}

/* col_json is column i of st's row as JSON: null, an integer, a number or a
 * string (made valid UTF-8). */
static json_t *col_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return tpd_json_int(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return tpd_json_num(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        return tpd_json_str(col_text(st, i, ""));
    default:
        return json_null();
    }
}

/* col_parsed is column i (JSON text: params, argv) parsed, or as a string
 * when it does not parse; null when NULL. */
static json_t *col_parsed(sqlite3_stmt *st, int i)
{
    const char *s = col_text(st, i, NULL);
    json_t *v;
    if (s == NULL) return json_null();
    v = json_loads(s, JSON_DECODE_ANY, NULL);
    return v ? v : tpd_json_str(s);
}

/* num_json is v as JSON; the non-finite as the strings "nan", "inf",
 * "-inf" (as the health report writes them), since JSON has no such
 * numbers. */
static json_t *num_json(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
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

/* put_json dumps v (its reference taken) to out; TP_ENOMEM when v is NULL
 * (a failed build) or the dump fails. */
static tp_err put_json(json_t *v, tpd_str *out, char *why, size_t whylen)
{
    char *s = tpd_json_dump(v);
    if (s == NULL) return oom(why, whylen);
    tpd_str_puts(out, s);
    free(s);
    return TP_OK;
}

/* ---- aligned text tables ---- */

#define MAX_COLS 12

typedef struct tline {
    char kind;  /* 'r' a row of ncols cells, 't' a line printed as it is */
    size_t off; /* its first cell in cells */
} tline;

typedef struct table {
    int ncols;
    size_t width[MAX_COLS];
    unsigned right; /* bit i: column i is aligned right */
    const char *indent;
    tpd_str cells; /* every cell, cleaned, each NUL-terminated */
    tline *lines;
    size_t n, cap;
    bool oom;
} table;

static void table_init(table *t, int ncols, const int *minw, unsigned right, const char *indent)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++) t->width[i] = (size_t)minw[i];
    t->right = right;
    t->indent = indent;
    tpd_str_init(&t->cells);
}

static void table_free(table *t)
{
    tpd_str_free(&t->cells);
    free(t->lines);
}

/* chars counts the characters of UTF-8 text s (n bytes). */
static size_t chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* cell_put appends s to t's cells as one line of valid UTF-8 (control
 * characters escaped, \n and \t as such) and returns its width. */
static size_t cell_put(table *t, const char *s)
{
    size_t start = t->cells.len, n = strlen(s), run = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\n' && s[i] != '\t') continue;
        tpd_str_utf8(&t->cells, s + run, i - run);
        tpd_str_puts(&t->cells, s[i] == '\n' ? "\\n" : "\\t");
        run = i + 1;
    }
    tpd_str_utf8(&t->cells, s + run, n - run);
    n = t->cells.len - start;
    tpd_str_append(&t->cells, "", 1);
    return chars(t->cells.s ? t->cells.s + start : "", t->cells.s ? n : 0);
}

static bool table_line(table *t, char kind)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        tline *l = realloc(t->lines, cap * sizeof *l);
        if (l == NULL) {
            t->oom = true;
            return false;
        }
        t->lines = l;
        t->cap = cap;
    }
    t->lines[t->n].kind = kind;
    t->lines[t->n++].off = t->cells.len;
    return true;
}

/* table_text adds a line printed as it is (cleaned) between rows. */
static void table_text(table *t, const char *line)
{
    if (table_line(t, 't')) cell_put(t, line);
}

/* table_row adds a row of t->ncols cells. */
static void table_row(table *t, const char *const *cells)
{
    if (!table_line(t, 'r')) return;
    for (int i = 0; i < t->ncols; i++) {
        size_t w = cell_put(t, cells[i]);
        if (w > t->width[i]) t->width[i] = w;
    }
}

static void pad(tpd_str *out, size_t n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        tpd_str_append(out, spaces, k);
        n -= k;
    }
}

/* table_print appends t to out: one space between columns, the last one
 * not padded on the right. */
static void table_print(const table *t, tpd_str *out)
{
    if (t->cells.oom || t->oom) {
        out->oom = 1;
        return;
    }
    for (size_t l = 0; l < t->n; l++) {
        const char *c = t->cells.s + t->lines[l].off;
        if (t->lines[l].kind == 't') {
            tpd_str_printf(out, "%s\n", c);
            continue;
        }
        tpd_str_puts(out, t->indent);
        for (int i = 0; i < t->ncols; i++) {
            size_t n = strlen(c), w = chars(c, n);
            bool last = i == t->ncols - 1;
            if (t->right & (1u << i)) pad(out, t->width[i] - w);
            tpd_str_append(out, c, n);
            if (!(t->right & (1u << i)) && !last) pad(out, t->width[i] - w);
            if (!last) tpd_str_puts(out, " ");
            c += n + 1;
        }
        tpd_str_puts(out, "\n");
    }
}

/* ---- outcomes ---- */

const char *tpd_query_outcome(const char *s)
{
    static const char *const names[] = {"PASS", "FAIL", "ABSTAIN", "ERROR", "none"};
    if (s == NULL) return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i]) == 0) return names[i];
    return NULL;
}

/* ---- runs ---- */

static tp_err runs_view(tpd_store *s, const tpd_query_opts *o, tpd_str *out, char *why,
                        size_t whylen)
{
    static const char sql[] =
        "SELECT * FROM (SELECT * FROM (SELECT r.id AS id, r.name, r.check_kind, r.created_ns,"
        " (SELECT count(*) FROM executions e WHERE e.run_id = r.id),"
        " (SELECT outcome FROM verdicts v WHERE v.run_id = r.id ORDER BY v.id DESC LIMIT 1)"
        " AS outcome FROM runs r WHERE ?1 IS NULL OR r.check_kind = ?1)"
        " WHERE ?2 IS NULL OR coalesce(outcome, 'none') = ?2 ORDER BY id DESC LIMIT ?3)"
        " ORDER BY id";
    static const int minw[] = {6, 20, 10, 19, 5, 0};
    static const char *const heads[] = {"RUN", "NAME", "CHECK", "CREATED", "EXECS", "VERDICT"};
    const char *outcome = NULL;
    sqlite3_stmt *st = NULL;
    json_t *arr = NULL;
    bool bad = false;
    table t;
    tp_err err;
    int rc, n = 0;
    if (o->outcome && (outcome = tpd_query_outcome(o->outcome)) == NULL) {
        snprintf(why, whylen, "unknown outcome '%s' (PASS, FAIL, ABSTAIN, ERROR, none)",
                 o->outcome);
        return TP_EINVAL;
    }
    if (o->limit < 0) {
        snprintf(why, whylen, "the limit must be positive");
        return TP_EINVAL;
    }
    if ((err = prepare(s, sql, &st, why, whylen)) != TP_OK) return err;
    if (o->check) sqlite3_bind_text(st, 1, o->check, -1, SQLITE_STATIC);
    if (outcome) sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, o->limit > 0 ? o->limit : -1);
    table_init(&t, 6, minw, 1u << 4, "");
    if (o->json)
        arr = json_array();
    else
        table_row(&t, heads);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char id[24], when[64], execs[24];
        n++;
        if (o->json) {
            json_t *r = json_object();
            bad |= !tpd_jset(r, "id", col_json(st, 0));
            bad |= !tpd_jset(r, "name", col_json(st, 1));
            bad |= !tpd_jset(r, "check", col_json(st, 2));
            bad |= !tpd_jset(r, "created_ns", col_json(st, 3));
            bad |= !tpd_jset(r, "executions", col_json(st, 4));
            bad |= !tpd_jset(r, "verdict", col_json(st, 5));
            bad |= !tpd_jpush(arr, r);
            continue;
        }
        snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(st, 0));
        snprintf(execs, sizeof execs, "%lld", (long long)sqlite3_column_int64(st, 4));
        fmt_time(when, sizeof when, sqlite3_column_int64(st, 3));
        table_row(&t, (const char *const[]){id, col_text(st, 1, "-"), col_text(st, 2, "-"), when,
                                            execs, col_text(st, 5, "-")});
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        err = dbfail(s, rc, why, whylen);
    } else if (o->json) {
        json_t *root = json_object();
        bad |= !tpd_jset(root, "runs", arr);
        arr = NULL;
        err = put_json(tpd_jdone(root, bad), out, why, whylen);
    } else {
        table_print(&t, out);
        if (n == 0)
            tpd_str_puts(out,
                         o->check || outcome || o->limit ? "(no runs match)\n" : "(no runs)\n");
    }
    json_decref(arr);
    table_free(&t);
    return err;
}

tp_err tpd_query_runs(tpd_store *s, tpd_str *out, char *why, size_t whylen)
{
    tpd_query_opts o;
    memset(&o, 0, sizeof o);
    return runs_view(s, &o, out, why, whylen);
}

/* ---- one run ---- */

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
    bad |= !tpd_jset(p, "pid", col_json(st, 0));
    bad |= !tpd_jset(p, "ppid", col_json(st, 12));
    bad |= !tpd_jset(p, "rank", col_json(st, 1));
    bad |= !tpd_jset(p, "world", col_json(st, 2));
    bad |= !tpd_jset(p, "local_rank", col_json(st, 13));
    bad |= !tpd_jset(p, "role", col_json(st, 3));
    bad |= !tpd_jset(p, "agent", col_json(st, 14));
    bad |= !tpd_jset(p, "python", col_json(st, 4));
    bad |= !tpd_jset(p, "torch", col_json(st, 5));
    bad |= !tpd_jset(p, "events", col_json(st, 6));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
        json_decref(bye);
        bye = json_object();
        bad |= !tpd_jset(bye, "reason", col_json(st, 7));
        bad |= !tpd_jset(bye, "code", col_json(st, 8));
        bad |= !tpd_jset(bye, "sent", col_json(st, 10));
        bad |= !tpd_jset(bye, "dropped", col_json(st, 9));
        bad |= !tpd_jset(bye, "errors", col_json(st, 11));
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
        bad |= !tpd_jset(kinds, col_text(ks, 0, "?"), col_json(ks, 1));
    bad |= !tpd_jset(p, "kinds", kinds);
    if (rc != SQLITE_DONE) {
        *err = dbfail(s, rc, why, whylen);
        json_decref(p);
        return NULL;
    }
    if (bad) {
        *err = oom(why, whylen);
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
    tpd_str_printf(out, "  process %lld: rank %s", (long long)pid, col_text(st, 1, "?"));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) tpd_str_printf(out, "/%s", col_text(st, 2, "?"));
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
        tpd_str_printf(out, " %s %lld", col_text(ks, 0, "?"),
                       (long long)sqlite3_column_int64(ks, 1));
    if (rc != SQLITE_DONE) return dbfail(s, rc, why, whylen);
    tpd_str_puts(out, "\n");
    return TP_OK;
}

/* processes prints, or adds to the array procs, the processes of exec. */
static tp_err processes(tpd_store *s, int64_t exec, tpd_str *out, json_t *procs, char *why,
                        size_t whylen)
{
    sqlite3_stmt *st = NULL, *ks = NULL;
    tp_err err = prepare(s, proc_sql, &st, why, whylen);
    int rc = SQLITE_DONE, n = 0;
    if (err == TP_OK) err = prepare(s, kinds_sql, &ks, why, whylen);
    if (err != TP_OK) goto out;
    sqlite3_bind_int64(st, 1, exec);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        if (procs) {
            json_t *p = process_json(s, exec, st, ks, &err, why, whylen);
            if (p == NULL) goto out;
            if (!tpd_jpush(procs, p)) {
                err = oom(why, whylen);
                goto out;
            }
        } else if ((err = process_text(s, exec, st, ks, out, why, whylen)) != TP_OK) {
            goto out;
        }
    }
    if (rc != SQLITE_DONE)
        err = dbfail(s, rc, why, whylen);
    else if (n == 0 && procs == NULL)
        tpd_str_puts(out, "  (no process reported)\n");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ks);
    return err;
}

/* run_row reads run's row into *st (stepped to it); TP_ENOENT (why says so)
 * for an unknown run. */
static tp_err run_row(tpd_store *s, int64_t run, sqlite3_stmt **st, char *why, size_t whylen)
{
    static const char sql[] = "SELECT name, check_kind, params, created_ns FROM runs WHERE id = ?1";
    tp_err err = prepare(s, sql, st, why, whylen);
    int rc;
    if (err != TP_OK) return err;
    sqlite3_bind_int64(*st, 1, run);
    rc = sqlite3_step(*st);
    if (rc == SQLITE_ROW) return TP_OK;
    if (rc == SQLITE_DONE) {
        snprintf(why, whylen, "no run %lld", (long long)run);
        err = TP_ENOENT;
    } else {
        err = dbfail(s, rc, why, whylen);
    }
    sqlite3_finalize(*st);
    *st = NULL;
    return err;
}

/* run_header prints the run line; TP_ENOENT for an unknown run. */
static tp_err run_header(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    char when[64];
    tp_err err = run_row(s, run, &st, why, whylen);
    if (err != TP_OK) return err;
    tpd_str_printf(out, "run %lld: name %s, check %s, created %s\n", (long long)run,
                   col_text(st, 0, "-"), col_text(st, 1, "-"),
                   fmt_time(when, sizeof when, sqlite3_column_int64(st, 3)));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        tpd_str_printf(out, "  params %s\n", col_text(st, 2, ""));
    sqlite3_finalize(st);
    return TP_OK;
}

/* run_json is run's row as a JSON object ("id", "name", "check", "params",
 * "created_ns"), NULL with *err set when it cannot be read. */
static json_t *run_json(tpd_store *s, int64_t run, tp_err *err, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    json_t *o;
    bool bad = false;
    if ((*err = run_row(s, run, &st, why, whylen)) != TP_OK) return NULL;
    o = json_object();
    bad |= !tpd_jset(o, "id", tpd_json_int(run));
    bad |= !tpd_jset(o, "name", col_json(st, 0));
    bad |= !tpd_jset(o, "check", col_json(st, 1));
    bad |= !tpd_jset(o, "params", col_parsed(st, 2));
    bad |= !tpd_jset(o, "created_ns", col_json(st, 3));
    sqlite3_finalize(st);
    if (bad) *err = oom(why, whylen);
    return tpd_jdone(o, bad);
}

static tp_err run_view(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen)
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
        err = run_header(s, run, out, why, whylen);
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
        err = dbfail(s, SQLITE_ERROR, why, whylen);
        goto out;
    }
    if (js) {
        bad |= !tpd_jset(root, "verdict", vj);
        vj = NULL;
        execs = json_array();
    }
    if ((err = prepare(s, sql, &st, why, whylen)) != TP_OK) goto out;
    sqlite3_bind_int64(st, 1, run);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t exec = sqlite3_column_int64(st, 0);
        n++;
        if (js) {
            json_t *e = json_object(), *procs = json_array();
            bad |= !tpd_jset(e, "id", col_json(st, 0));
            bad |= !tpd_jset(e, "role", col_json(st, 1));
            bad |= !tpd_jset(e, "argv", col_parsed(st, 2));
            bad |= !tpd_jset(e, "created_ns", col_json(st, 3));
            bad |= !tpd_jset(e, "finished_ns", col_json(st, 4));
            bad |= !tpd_jset(e, "exit_status", col_json(st, 5));
            bad |= !tpd_jset(e, "exit_signal", col_json(st, 6));
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
                       col_text(st, 1, "-"), col_text(st, 2, "[]"));
        if (sqlite3_column_type(st, 4) == SQLITE_NULL)
            tpd_str_puts(out, "not finished");
        else if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            tpd_str_printf(out, "signal %s", col_text(st, 6, "?"));
        else if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            tpd_str_printf(out, "status %s", col_text(st, 5, "?"));
        else
            tpd_str_puts(out, "unknown");
        tpd_str_puts(out, "\n");
        if ((err = processes(s, exec, out, NULL, why, whylen)) != TP_OK) goto out;
    }
    if (rc != SQLITE_DONE) {
        err = dbfail(s, rc, why, whylen);
    } else if (js) {
        bad |= !tpd_jset(root, "executions", execs);
        execs = NULL;
        err = put_json(tpd_jdone(root, bad), out, why, whylen);
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
    return run_view(s, run, false, out, why, whylen);
}

/* ---- steps ---- */

/* One value of a step's list: a number (has: measured) or a word. */
typedef struct item {
    bool has;
    double v;
    const char *word; /* static; NULL: "-" */
} item;

typedef struct items {
    item *a;
    size_t n, cap;
    bool oom;
} items;

static void items_add(items *l, bool has, double v, const char *word)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        item *a = realloc(l->a, cap * sizeof *a);
        if (a == NULL) {
            l->oom = true;
            return;
        }
        l->a = a;
        l->cap = cap;
    }
    l->a[l->n++] = (item){has, v, word};
}

typedef struct step_row {
    bool open;
    int64_t step;
    double loss;
    bool has_loss;
    int64_t nback;
    int64_t nopt;
    items gnorm, unorm, lrs, update;
    bool has_scale;
    double scale;
} step_row;

static void row_start(step_row *r, int64_t step)
{
    r->open = true;
    r->step = step;
    r->loss = 0;
    r->has_loss = false;
    r->nback = r->nopt = 0;
    r->has_scale = false;
    r->gnorm.n = r->unorm.n = r->lrs.n = r->update.n = 0;
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
        items_add(&r->gnorm, has, v, NULL);
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
                items_add(&r->lrs, true, v, NULL);
            }
        }
    } else if (tp_mp_str_eq(phase, plen, "post")) {
        bool b;
        has = tp_body_f64(e, TPF_step_unorm, &v) == TP_OK;
        items_add(&r->unorm, has, v, NULL);
        if (tp_body_bool(e, TPF_step_skipped, &b) == TP_OK && b)
            items_add(&r->update, false, 0, "skipped");
        else if (tp_body_bool(e, TPF_step_changed, &b) == TP_OK)
            items_add(&r->update, false, 0, b ? "moved" : "none");
        else
            items_add(&r->update, false, 0, NULL);
    }
}

/* items_text writes l comma-separated into b ("-" when empty). */
static const char *items_text(tpd_str *b, const items *l)
{
    tpd_str_reset(b);
    for (size_t i = 0; i < l->n; i++) {
        char num[32];
        if (i) tpd_str_puts(b, ",");
        if (l->a[i].word)
            tpd_str_puts(b, l->a[i].word);
        else
            tpd_str_puts(b, l->a[i].has ? tpd_fmt_g(num, sizeof num, l->a[i].v) : "-");
    }
    return l->n ? tpd_str_cstr(b) : "-";
}

/* items_json is l as a JSON array: numbers, words, null for "-". */
static json_t *items_json(const items *l)
{
    json_t *a = json_array();
    bool bad = false;
    for (size_t i = 0; i < l->n; i++) {
        if (l->a[i].word)
            bad |= !tpd_jpush(a, json_string(l->a[i].word));
        else
            bad |= !tpd_jpush(a, l->a[i].has ? num_json(l->a[i].v) : json_null());
    }
    return tpd_jdone(a, bad);
}

typedef struct steps_out {
    bool json;
    table t;       /* text */
    json_t *procs; /* JSON: the processes with steps */
    json_t *rows;  /* JSON: the current process's rows */
    tpd_str lists[4];
    bool bad;
} steps_out;

static void row_emit(step_row *r, steps_out *so)
{
    char step[24], loss[32], nback[24], nopt[24], scale[32];
    if (!r->open) return;
    r->open = false;
    so->bad |= r->gnorm.oom || r->unorm.oom || r->lrs.oom || r->update.oom;
    if (so->json) {
        json_t *o = json_object();
        bool bad = false;
        bad |= !tpd_jset(o, "step", tpd_json_int(r->step));
        bad |= !tpd_jset(o, "loss", r->has_loss ? num_json(r->loss) : json_null());
        bad |= !tpd_jset(o, "backward", tpd_json_int(r->nback));
        bad |= !tpd_jset(o, "grad_norm", items_json(&r->gnorm));
        bad |= !tpd_jset(o, "update_norm", items_json(&r->unorm));
        bad |= !tpd_jset(o, "lr", items_json(&r->lrs));
        bad |= !tpd_jset(o, "optimizer_steps", tpd_json_int(r->nopt));
        bad |= !tpd_jset(o, "update", items_json(&r->update));
        bad |= !tpd_jset(o, "scale", r->has_scale ? num_json(r->scale) : json_null());
        so->bad |= bad || !tpd_jpush(so->rows, o);
        return;
    }
    snprintf(step, sizeof step, "%lld", (long long)r->step);
    snprintf(nback, sizeof nback, "%lld", (long long)r->nback);
    snprintf(nopt, sizeof nopt, "%lld", (long long)r->nopt);
    table_row(&so->t,
              (const char *const[]){
                  step, r->has_loss ? tpd_fmt_g(loss, sizeof loss, r->loss) : "-", nback,
                  items_text(&so->lists[0], &r->gnorm), items_text(&so->lists[1], &r->unorm),
                  items_text(&so->lists[2], &r->lrs), nopt, items_text(&so->lists[3], &r->update),
                  r->has_scale ? tpd_fmt_g(scale, sizeof scale, r->scale) : "-"});
}

/* process_steps adds the step table of one process (a row of ps) to so. */
static tp_err process_steps(tpd_store *s, sqlite3_stmt *ev, sqlite3_stmt *ps, step_row *r,
                            steps_out *so, char *why, size_t whylen)
{
    static const char *const heads[] = {"STEP", "LOSS",      "BACKWARD", "GNORM", "UNORM",
                                        "LR",   "OPT_STEPS", "UPDATE",   "SCALE"};
    int64_t exec = sqlite3_column_int64(ps, 0), pid = sqlite3_column_int64(ps, 2);
    bool header = false;
    int rc;
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
            header = true;
            if (so->json) {
                json_t *p = json_object();
                so->rows = json_array();
                so->bad |= !tpd_jset(p, "execution", tpd_json_int(exec));
                so->bad |= !tpd_jset(p, "role", col_json(ps, 1));
                so->bad |= !tpd_jset(p, "pid", tpd_json_int(pid));
                so->bad |= !tpd_jset(p, "rank", col_json(ps, 3));
                so->bad |= !tpd_jset(p, "steps", json_incref(so->rows));
                so->bad |= !tpd_jpush(so->procs, p);
            } else {
                char line[512];
                snprintf(line, sizeof line, "exec %lld [%s] process %lld rank %s", (long long)exec,
                         col_text(ps, 1, "-"), (long long)pid, col_text(ps, 3, "?"));
                table_text(&so->t, line);
                table_row(&so->t, heads);
            }
        }
        if (r->open && r->step != e.step) row_emit(r, so);
        if (!r->open) row_start(r, e.step);
        row_add(r, &e);
    }
    row_emit(r, so);
    if (so->rows) {
        json_decref(so->rows);
        so->rows = NULL;
    }
    if (rc != SQLITE_DONE) return dbfail(s, rc, why, whylen);
    return TP_OK;
}

static tp_err steps_view(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen)
{
    static const char procs_sql[] = "SELECT e.id, e.role, p.pid, p.rank"
                                    " FROM executions e JOIN processes p ON p.exec_id = e.id"
                                    " WHERE e.run_id = ?1 ORDER BY e.id, p.pid";
    static const char ev_sql[] =
        "SELECT step, kind, body FROM events WHERE exec_id = ?1 AND pid = ?2"
        " AND kind IN ('backward', 'step', 'amp') ORDER BY seq";
    static const int minw[] = {6, 12, 8, 12, 12, 16, 9, 12, 0};
    sqlite3_stmt *ps = NULL, *ev = NULL;
    step_row r;
    steps_out so;
    tpd_str head;
    tp_err err;
    int rc;
    tpd_str_init(&head);
    memset(&r, 0, sizeof r);
    memset(&so, 0, sizeof so);
    so.json = js;
    table_init(&so.t, 9, minw, 0, "  ");
    for (int i = 0; i < 4; i++) tpd_str_init(&so.lists[i]);
    if (js) {
        so.procs = json_array();
        err = run_row(s, run, &ps, why, whylen); /* only to say "no run" */
        sqlite3_finalize(ps);
        ps = NULL;
    } else {
        err = run_header(s, run, &head, why, whylen);
    }
    if (err != TP_OK) goto out;
    if ((err = prepare(s, procs_sql, &ps, why, whylen)) != TP_OK) goto out;
    if ((err = prepare(s, ev_sql, &ev, why, whylen)) != TP_OK) goto out;
    sqlite3_bind_int64(ps, 1, run);
    while ((rc = sqlite3_step(ps)) == SQLITE_ROW)
        if ((err = process_steps(s, ev, ps, &r, &so, why, whylen)) != TP_OK) goto out;
    if (rc != SQLITE_DONE) {
        err = dbfail(s, rc, why, whylen);
    } else if (js) {
        json_t *root = json_pack("{s:I, s:O}", "run", (json_int_t)run, "processes", so.procs);
        err = put_json(tpd_jdone(root, so.bad), out, why, whylen);
    } else {
        tpd_str_append(out, head.s ? head.s : "", head.len);
        table_print(&so.t, out);
        if (so.t.n == 0) tpd_str_puts(out, "(no steps recorded)\n");
    }
out:
    tpd_str_free(&head);
    for (int i = 0; i < 4; i++) tpd_str_free(&so.lists[i]);
    table_free(&so.t);
    json_decref(so.procs);
    json_decref(so.rows);
    free(r.gnorm.a);
    free(r.unorm.a);
    free(r.lrs.a);
    free(r.update.a);
    sqlite3_finalize(ps);
    sqlite3_finalize(ev);
    return err;
}

tp_err tpd_query_steps(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    return steps_view(s, run, false, out, why, whylen);
}

/* ---- a verdict ---- */

static tp_err verdict_view(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why,
                           size_t whylen)
{
    tpd_verdict v;
    const char *body;
    tp_err err = tpd_store_run_exists(s, run);
    if (err == TP_ENOENT) {
        snprintf(why, whylen, "no run %lld", (long long)run);
        return err;
    }
    if (err != TP_OK) return dbfail(s, SQLITE_ERROR, why, whylen);
    if ((err = tpd_store_verdict_latest(s, run, &v)) == TP_ENOENT) {
        snprintf(why, whylen, "run %lld has no verdict", (long long)run);
        return err;
    }
    if (err != TP_OK)
        return err == TP_ENOMEM ? oom(why, whylen) : dbfail(s, SQLITE_ERROR, why, whylen);
    body = js ? v.report : v.text;
    if (body == NULL) {
        snprintf(why, whylen, "the verdict of run %lld has no %s report", (long long)run,
                 js ? "JSON" : "text");
        err = TP_ENOENT;
    } else {
        size_t n = strlen(body);
        tpd_str_append(out, body, n);
        if (n == 0 || body[n - 1] != '\n') tpd_str_puts(out, "\n");
    }
    tpd_verdict_clear(&v);
    return err;
}

/* ---- saves (for trainparity-run resume) ---- */

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

/* ---- dispatch ---- */

tp_err tpd_query_with(tpd_store *s, const char *what, int64_t id, const tpd_query_opts *o,
                      tpd_str *out, char *why, size_t whylen)
{
    tpd_query_opts none;
    tp_err err;
    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    if (strcmp(what, "runs") != 0 && (o->check || o->outcome || o->limit)) {
        snprintf(why, whylen, "--check, --outcome and --limit filter 'runs' only");
        return TP_EINVAL;
    }
    if (strcmp(what, "runs") == 0)
        err = runs_view(s, o, out, why, whylen);
    else if (strcmp(what, "run") == 0)
        err = run_view(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "steps") == 0)
        err = steps_view(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "verdict") == 0)
        err = verdict_view(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "saves") == 0 && !o->json)
        err = tpd_query_saves(s, id, out, why, whylen);
    else {
        snprintf(why, whylen, "unknown query '%s' (runs, run, steps, verdict)", what);
        return TP_EINVAL;
    }
    if (err == TP_OK && out->oom) err = oom(why, whylen);
    return err;
}

tp_err tpd_query(tpd_store *s, const char *what, int64_t id, tpd_str *out, char *why, size_t whylen)
{
    return tpd_query_with(s, what, id, NULL, out, why, whylen);
}
