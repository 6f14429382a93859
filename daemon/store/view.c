/* SPDX-License-Identifier: MIT
 * view.c -- what the views of query.h share (view.h): errors into why,
 * SQLite columns as text and as JSON, a run's row and its header line,
 * which both the run and the steps views start with. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/store/view.h"

tp_err tpd_view_dbfail(tpd_store *s, int rc, char *why, size_t whylen)
{
    tp_err e = tpd_sqlite_err(rc);
    snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
    return e == TP_OK ? TP_EDB : e;
}

tp_err tpd_view_oom(char *why, size_t whylen)
{
    snprintf(why, whylen, "out of memory");
    return TP_ENOMEM;
}

const char *tpd_view_col_text(sqlite3_stmt *st, int i, const char *none)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : none;
}

json_t *tpd_view_col_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return tpd_json_int(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return tpd_json_num(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        return tpd_json_str(tpd_view_col_text(st, i, ""));
    default:
        return json_null();
    }
}

const char *tpd_view_fmt_time(char *out, size_t n, int64_t ns)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(out, n, "%lld", (long long)ns);
    return out;
}

tp_err tpd_view_prepare(tpd_store *s, const char *sql, sqlite3_stmt **st, char *why, size_t whylen)
{
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, st, NULL);
    return rc == SQLITE_OK ? TP_OK : tpd_view_dbfail(s, rc, why, whylen);
}

tp_err tpd_view_put_json(json_t *v, tpd_str *out, char *why, size_t whylen)
{
    char *s = tpd_json_dump(v);
    if (s == NULL) return tpd_view_oom(why, whylen);
    tpd_str_puts(out, s);
    free(s);
    return TP_OK;
}

tp_err tpd_view_run_row(tpd_store *s, int64_t run, sqlite3_stmt **st, char *why, size_t whylen)
{
    static const char sql[] = "SELECT name, check_kind, params, created_ns FROM runs WHERE id = ?1";
    tp_err err = tpd_view_prepare(s, sql, st, why, whylen);
    int rc;
    if (err != TP_OK) return err;
    sqlite3_bind_int64(*st, 1, run);
    rc = sqlite3_step(*st);
    if (rc == SQLITE_ROW) return TP_OK;
    if (rc == SQLITE_DONE) {
        snprintf(why, whylen, "no run %lld", (long long)run);
        err = TP_ENOENT;
    } else {
        err = tpd_view_dbfail(s, rc, why, whylen);
    }
    sqlite3_finalize(*st);
    *st = NULL;
    return err;
}

tp_err tpd_view_run_header(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    char when[64];
    tp_err err = tpd_view_run_row(s, run, &st, why, whylen);
    if (err != TP_OK) return err;
    tpd_str_printf(out, "run %lld: name %s, check %s, created %s\n", (long long)run,
                   tpd_view_col_text(st, 0, "-"), tpd_view_col_text(st, 1, "-"),
                   tpd_view_fmt_time(when, sizeof when, sqlite3_column_int64(st, 3)));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        tpd_str_printf(out, "  params %s\n", tpd_view_col_text(st, 2, ""));
    sqlite3_finalize(st);
    return TP_OK;
}
