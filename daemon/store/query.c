/* SPDX-License-Identifier: MIT
 * query.c -- views of the database for people and scripts (query.h): which
 * view a query names, the outcomes a filter may name, the list of runs,
 * a run's verdict and an execution's saves.  The "run" view is in
 * view_run.c, the "steps" view in view_steps.c, what they share in view.c
 * and the aligned text tables in table.c.
 *
 * Everything here reads; text and JSON (built with jansson) come from the
 * same rows. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "daemon/store/pack.h"
#include "daemon/store/query.h"
#include "daemon/store/table.h"
#include "daemon/store/view.h"
#include "proto/event.h"

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
    tpd_table t;
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
    if ((err = tpd_view_prepare(s, sql, &st, why, whylen)) != TP_OK) return err;
    if (o->check) sqlite3_bind_text(st, 1, o->check, -1, SQLITE_STATIC);
    if (outcome) sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, o->limit > 0 ? o->limit : -1);
    tpd_table_init(&t, 6, minw, 1u << 4, "");
    if (o->json)
        arr = json_array();
    else
        tpd_table_row(&t, heads);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char id[24], when[64], execs[24];
        n++;
        if (o->json) {
            json_t *r = json_object();
            bad |= !tpd_jset(r, "id", tpd_view_col_json(st, 0));
            bad |= !tpd_jset(r, "name", tpd_view_col_json(st, 1));
            bad |= !tpd_jset(r, "check", tpd_view_col_json(st, 2));
            bad |= !tpd_jset(r, "created_ns", tpd_view_col_json(st, 3));
            bad |= !tpd_jset(r, "executions", tpd_view_col_json(st, 4));
            bad |= !tpd_jset(r, "verdict", tpd_view_col_json(st, 5));
            bad |= !tpd_jpush(arr, r);
            continue;
        }
        snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(st, 0));
        snprintf(execs, sizeof execs, "%lld", (long long)sqlite3_column_int64(st, 4));
        tpd_view_fmt_time(when, sizeof when, sqlite3_column_int64(st, 3));
        tpd_table_row(&t, (const char *const[]){id, tpd_view_col_text(st, 1, "-"),
                                                tpd_view_col_text(st, 2, "-"), when, execs,
                                                tpd_view_col_text(st, 5, "-")});
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        err = tpd_view_dbfail(s, rc, why, whylen);
    } else if (o->json) {
        json_t *root = json_object();
        bad |= !tpd_jset(root, "runs", arr);
        arr = NULL;
        err = tpd_view_put_json(tpd_jdone(root, bad), out, why, whylen);
    } else {
        tpd_table_print(&t, out);
        if (n == 0)
            tpd_str_puts(out,
                         o->check || outcome || o->limit ? "(no runs match)\n" : "(no runs)\n");
    }
    json_decref(arr);
    tpd_table_free(&t);
    return err;
}

tp_err tpd_query_runs(tpd_store *s, tpd_str *out, char *why, size_t whylen)
{
    tpd_query_opts o;
    memset(&o, 0, sizeof o);
    return runs_view(s, &o, out, why, whylen);
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
    if (err != TP_OK) return tpd_view_dbfail(s, SQLITE_ERROR, why, whylen);
    if ((err = tpd_store_verdict_latest(s, run, &v)) == TP_ENOENT) {
        snprintf(why, whylen, "run %lld has no verdict", (long long)run);
        return err;
    }
    if (err != TP_OK)
        return err == TP_ENOMEM ? tpd_view_oom(why, whylen)
                                : tpd_view_dbfail(s, SQLITE_ERROR, why, whylen);
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
    tp_buf scratch; /* a packed body, unpacked */
    tp_err err;
    int rc;
    tp_buf_init(&scratch);
    if ((err = tpd_view_prepare(
             s,
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
        if ((err = tpd_body_read(tpd_store_leafdict(s), sqlite3_column_blob(st, 0),
                                 (size_t)sqlite3_column_bytes(st, 0), &scratch, &e.body,
                                 &e.body_len)) != TP_OK) {
            if (why) snprintf(why, whylen, "a save event's packed body cannot be read");
            break;
        }
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
    if (err == TP_OK && rc != SQLITE_DONE) err = tpd_view_dbfail(s, rc, why, whylen);
    sqlite3_finalize(st);
    tp_buf_free(&scratch);
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
        err = tpd_view_run(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "steps") == 0)
        err = tpd_view_steps(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "verdict") == 0)
        err = verdict_view(s, id, o->json, out, why, whylen);
    else if (strcmp(what, "saves") == 0 && !o->json)
        err = tpd_query_saves(s, id, out, why, whylen);
    else {
        snprintf(why, whylen, "unknown query '%s' (runs, run, steps, verdict)", what);
        return TP_EINVAL;
    }
    if (err == TP_OK && out->oom) err = tpd_view_oom(why, whylen);
    return err;
}

tp_err tpd_query(tpd_store *s, const char *what, int64_t id, tpd_str *out, char *why, size_t whylen)
{
    return tpd_query_with(s, what, id, NULL, out, why, whylen);
}
