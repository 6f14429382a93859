/* SPDX-License-Identifier: MIT
 * writer.c -- the rows an agent batch becomes (see writer.h).
 *
 * One statement per row kind, prepared once; each use resets it, binds and
 * steps it, and resets it again, so that no statement stays active between
 * uses. */
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/store/pack.h"
#include "daemon/store/writer.h"

enum {
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    S_PROC,
    S_PROC_COUNT,
    S_EVENT,
    S_HELLO,
    S_BYE,
    S_BLOB,
    S_EXEC,
    S_FINISHED,
    S__COUNT
};

static const char *const sqls[S__COUNT] = {
    [S_SAVEPOINT] = "SAVEPOINT ingest",
    [S_RELEASE] = "RELEASE ingest",
    [S_ROLLBACK_TO] = "ROLLBACK TO ingest",
    [S_PROC] = "INSERT INTO processes(exec_id, pid, rank) VALUES(?1, ?2, ?3)"
               " ON CONFLICT(exec_id, pid) DO NOTHING",
    [S_PROC_COUNT] = "UPDATE processes SET nevents = nevents + ?3,"
                     " max_seq = max(coalesce(max_seq, -1), ?4)"
                     " WHERE exec_id = ?1 AND pid = ?2",
    [S_EVENT] = "INSERT INTO events(exec_id, pid, seq, time_ns, step, kind, body)"
                " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(exec_id, pid, seq) DO NOTHING",
    [S_HELLO] = "UPDATE processes SET ppid = ?3, rank = ?4, world = ?5, local_rank = ?6,"
                " role = ?7, agent = ?8, python = ?9, torch = ?10, numpy = ?11, argv = ?12,"
                " cwd = ?13, exe = ?14, capture = ?15, cxx = ?16, interrupt_at = ?17,"
                " hello_ns = ?18 WHERE exec_id = ?1 AND pid = ?2",
    [S_BYE] = "UPDATE processes SET bye_reason = ?3, bye_code = ?4, sent = ?5, dropped = ?6,"
              " errors = ?7, spooled = ?8, bye_exc = ?9, bye_ns = ?10"
              " WHERE exec_id = ?1 AND pid = ?2",
    [S_BLOB] = "INSERT INTO blobs(digest, size, dtype, shape) VALUES(?1, ?2, ?3, ?4)"
               " ON CONFLICT(digest) DO NOTHING",
    [S_EXEC] = "SELECT run_id, key FROM executions WHERE id = ?1",
    [S_FINISHED] = "SELECT finished_ns IS NOT NULL FROM executions WHERE id = ?1",
};

struct tpd_writer {
    sqlite3 *db;
    sqlite3_stmt *st[S__COUNT];
    tpd_str json; /* scratch: a hello's argv as JSON */
    tpd_leafdict *leaves;
    size_t mark;         /* leaves' mark at the batch's savepoint */
    tp_buf packed, back; /* scratch: a body packed, and unpacked again */
};

static tp_err dberr(int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    return e == TP_OK ? TP_EDB : e;
}

tp_err tpd_writer_open(tpd_writer **wp, tpd_store *s)
{
    tpd_writer *w;
    if (wp == NULL || s == NULL || tpd_store_readonly(s)) return TP_EINVAL;
    if ((w = calloc(1, sizeof *w)) == NULL) return TP_ENOMEM;
    w->db = tpd_store_db(s);
    w->leaves = tpd_store_leafdict(s);
    tpd_str_init(&w->json);
    tp_buf_init(&w->packed);
    tp_buf_init(&w->back);
    for (int i = 0; i < S__COUNT; i++) {
        int rc = sqlite3_prepare_v3(w->db, sqls[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL);
        if (rc != SQLITE_OK) {
            tpd_writer_close(w);
            return dberr(rc);
        }
    }
    *wp = w;
    return TP_OK;
}

void tpd_writer_close(tpd_writer *w)
{
    if (w == NULL) return;
    for (int i = 0; i < S__COUNT; i++) sqlite3_finalize(w->st[i]);
    tpd_str_free(&w->json);
    tp_buf_free(&w->packed);
    tp_buf_free(&w->back);
    free(w);
}

/* ---- binding helpers ---- */

/* stmt resets statement i for a new use. */
static sqlite3_stmt *stmt(tpd_writer *w, int i)
{
    sqlite3_reset(w->st[i]);
    return w->st[i];
}

/* step runs a statement that returns no rows. */
static tp_err step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? TP_OK : dberr(rc);
}

static void bind_str(sqlite3_stmt *st, int i, const char *s, uint32_t n)
{
    if (s)
        sqlite3_bind_text(st, i, s, (int)n, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_body_str(sqlite3_stmt *st, int i, const tp_event *e, tp_field key)
{
    const char *s = NULL;
    uint32_t n = 0;
    if (tp_body_str(e, key, &s, &n) != TP_OK) s = NULL;
    bind_str(st, i, s, n);
}

static void bind_body_int(sqlite3_stmt *st, int i, const tp_event *e, tp_field key)
{
    int64_t v;
    if (tp_body_int(e, key, &v) == TP_OK)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* bind_body_uint binds an unsigned field, clamped to INT64_MAX. */
static void bind_body_uint(sqlite3_stmt *st, int i, const tp_event *e, tp_field key)
{
    tp_mpr f;
    uint64_t v;
    if (tp_body_find(e, key, &f) == TP_OK && tp_mpr_uint(&f, &v) == TP_OK)
        sqlite3_bind_int64(st, i, v > INT64_MAX ? INT64_MAX : (int64_t)v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_body_bool(sqlite3_stmt *st, int i, const tp_event *e, tp_field key)
{
    bool v;
    if (tp_body_bool(e, key, &v) == TP_OK)
        sqlite3_bind_int(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* ---- admission ---- */

tp_err tpd_writer_exec_key(tpd_writer *w, int64_t exec, int64_t *run, char key[TP_EXEC_KEY_LEN])
{
    sqlite3_stmt *st = stmt(w, S_EXEC);
    int rc;
    sqlite3_bind_int64(st, 1, exec);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 1) == TP_EXEC_KEY_LEN &&
        sqlite3_column_type(st, 1) == SQLITE_TEXT) {
        *run = sqlite3_column_int64(st, 0);
        memcpy(key, sqlite3_column_text(st, 1), TP_EXEC_KEY_LEN);
        sqlite3_reset(st);
        return TP_OK;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? TP_ENOENT : dberr(rc);
}

tp_err tpd_writer_exec_finished(tpd_writer *w, int64_t exec, bool *finished)
{
    sqlite3_stmt *st = stmt(w, S_FINISHED);
    int rc;
    sqlite3_bind_int64(st, 1, exec);
    rc = sqlite3_step(st);
    *finished = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? TP_OK : dberr(rc);
}

/* ---- one batch ---- */

tp_err tpd_writer_savepoint(tpd_writer *w)
{
    w->mark = tpd_leafdict_mark(w->leaves);
    return step(stmt(w, S_SAVEPOINT));
}

tp_err tpd_writer_release(tpd_writer *w)
{
    tp_err err = step(stmt(w, S_RELEASE));
    /* released outside a transaction, the savepoint was one: committed */
    if (err == TP_OK && sqlite3_get_autocommit(w->db)) tpd_leafdict_committed(w->leaves);
    return err;
}

void tpd_writer_undo(tpd_writer *w)
{
    step(stmt(w, S_ROLLBACK_TO));
    step(stmt(w, S_RELEASE));
    tpd_leafdict_undo(w->leaves, w->mark); /* their rows are gone with the batch */
}

tp_err tpd_writer_process(tpd_writer *w, int64_t exec, int64_t pid, int64_t rank, bool *added)
{
    sqlite3_stmt *st = stmt(w, S_PROC);
    tp_err err;
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, rank);
    if ((err = step(st)) != TP_OK) return err;
    *added = sqlite3_changes(w->db) > 0;
    return TP_OK;
}

tp_err tpd_writer_event(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e,
                        const void *body, size_t body_len, bool *fresh)
{
    sqlite3_stmt *st = stmt(w, S_EVENT);
    const uint8_t *stored;
    size_t stored_len;
    tp_err err;
    if ((err = tpd_body_stored(w->leaves, e->kind, body, body_len, &w->packed, &w->back, &stored,
                               &stored_len)) != TP_OK)
        return err;
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, (int64_t)e->seq);
    sqlite3_bind_int64(st, 4, (int64_t)e->time_ns);
    sqlite3_bind_int64(st, 5, e->step);
    sqlite3_bind_text(st, 6, tp_kind_name(e->kind), -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 7, stored, stored_len, SQLITE_STATIC);
    if ((err = step(st)) != TP_OK) return err;
    *fresh = sqlite3_changes(w->db) != 0;
    return TP_OK;
}

tp_err tpd_writer_hello(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e)
{
    sqlite3_stmt *st = stmt(w, S_HELLO);
    tp_mpr f;
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    bind_body_int(st, 3, e, TPF_hello_ppid);
    bind_body_int(st, 4, e, TPF_hello_rank);
    bind_body_int(st, 5, e, TPF_hello_world);
    bind_body_int(st, 6, e, TPF_hello_local_rank);
    bind_body_str(st, 7, e, TPF_hello_role);
    bind_body_str(st, 8, e, TPF_hello_agent);
    bind_body_str(st, 9, e, TPF_hello_python);
    bind_body_str(st, 10, e, TPF_hello_torch);
    bind_body_str(st, 11, e, TPF_hello_numpy);
    tpd_str_reset(&w->json);
    if (tp_body_find(e, TPF_hello_argv, &f) == TP_OK && tpd_json_strs(&w->json, &f) == TP_OK &&
        !w->json.oom)
        sqlite3_bind_text(st, 12, tpd_str_cstr(&w->json), (int)w->json.len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 12);
    bind_body_str(st, 13, e, TPF_hello_cwd);
    bind_body_str(st, 14, e, TPF_hello_exe);
    bind_body_str(st, 15, e, TPF_hello_capture);
    bind_body_str(st, 16, e, TPF_hello_cxx);
    bind_body_int(st, 17, e, TPF_hello_interrupt_at);
    sqlite3_bind_int64(st, 18, (int64_t)e->time_ns);
    return step(st);
}

tp_err tpd_writer_bye(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e)
{
    sqlite3_stmt *st = stmt(w, S_BYE);
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    bind_body_str(st, 3, e, TPF_bye_reason);
    bind_body_int(st, 4, e, TPF_bye_code);
    bind_body_uint(st, 5, e, TPF_bye_sent);
    bind_body_uint(st, 6, e, TPF_bye_dropped);
    bind_body_uint(st, 7, e, TPF_bye_errors);
    bind_body_bool(st, 8, e, TPF_bye_spooled);
    bind_body_str(st, 9, e, TPF_bye_exc);
    sqlite3_bind_int64(st, 10, (int64_t)e->time_ns);
    return step(st);
}

tp_err tpd_writer_blob(tpd_writer *w, const uint8_t digest[TP_DIGEST_LEN], uint32_t size,
                       const tp_event *e, const char *shape_txt)
{
    sqlite3_stmt *st = stmt(w, S_BLOB);
    sqlite3_bind_blob(st, 1, digest, TP_DIGEST_LEN, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, size);
    bind_body_str(st, 3, e, TPF_blob_dtype);
    if (shape_txt && shape_txt[0])
        sqlite3_bind_text(st, 4, shape_txt, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 4);
    return step(st);
}

tp_err tpd_writer_counts(tpd_writer *w, int64_t exec, int64_t pid, int64_t events, int64_t max_seq)
{
    sqlite3_stmt *st = stmt(w, S_PROC_COUNT);
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, events);
    sqlite3_bind_int64(st, 4, max_seq);
    return step(st);
}
