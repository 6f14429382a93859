/* SPDX-License-Identifier: MIT
 * ingest.c -- one decoded batch into rows.
 *
 * Per message: decode and check everything (proto), then SAVEPOINT, make
 * sure the (exec, pid) process row exists, insert each event (a conflict on
 * (exec_id, pid, seq) is a duplicate and skipped with all it implies), then
 * per new event: hello and bye fill the process row, blob bytes go to the
 * blob store (every other body is stored as it came: the one copy, which
 * readers decode); finally the process's nevents and max_seq, and RELEASE.
 * All statements are prepared once; strings are bound straight from the
 * message buffer (SQLITE_STATIC), which outlives each step.
 *
 * Before any of that a batch must name an execution the daemon created, of
 * the run it names, and carry that execution's key (exec.create made it);
 * the comparison takes the same time wherever a wrong key differs.  The
 * (exec -> run, key) of recently seen executions is cached, direct-mapped by
 * id: an execution's run and key never change once it has a key, so the
 * cost per batch is one probe, and a query only for an execution not seen
 * lately.  An unknown execution is never cached: it may be created next.
 * A batch that would add a process to an execution already finished
 * (exec.finish) is refused too; its known processes may still deliver. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/ingest/ingest.h"
#include "daemon/store/blob.h"
#include "daemon/store/secret.h"
#include "proto/control.h"
#include "proto/event.h"

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

#define EXEC_CACHE 256 /* executions whose run and key are kept; a power of 2 */

typedef struct exec_entry {
    int64_t exec; /* 0: empty (ids start at 1) */
    int64_t run;
    char key[TP_EXEC_KEY_LEN];
} exec_entry;

struct tpd_ingest {
    tpd_store *store;
    sqlite3 *db;
    sqlite3_stmt *st[S__COUNT];
    char *token; /* NULL: none */
    size_t token_len;
    tpd_blobs *blobs;
    tpd_str json;   /* scratch: argv as JSON */
    tp_buf scratch; /* scratch: rewritten blob bodies */
    exec_entry execs[EXEC_CACHE];
};

static tp_err dberr(int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    return e == TP_OK ? TP_EDB : e;
}

tp_err tpd_ingest_create(tpd_ingest **ip, tpd_store *s, const char *token)
{
    tpd_ingest *in;
    char dir[4096];
    tp_err err = TP_ENOMEM;
    if (ip == NULL || s == NULL || tpd_store_readonly(s)) return TP_EINVAL;
    in = calloc(1, sizeof *in);
    if (in == NULL) return TP_ENOMEM;
    in->store = s;
    in->db = tpd_store_db(s);
    tpd_str_init(&in->json);
    tp_buf_init(&in->scratch);
    if (token && token[0]) {
        if ((in->token = strdup(token)) == NULL) goto fail;
        in->token_len = strlen(token);
    }
    if ((err = tpd_blobs_dir_for(tpd_store_path(s), dir, sizeof dir)) != TP_OK) goto fail;
    if ((err = tpd_blobs_open(&in->blobs, dir)) != TP_OK) goto fail;
    for (int i = 0; i < S__COUNT; i++) {
        int rc =
            sqlite3_prepare_v3(in->db, sqls[i], -1, SQLITE_PREPARE_PERSISTENT, &in->st[i], NULL);
        if (rc != SQLITE_OK) {
            err = dberr(rc);
            goto fail;
        }
    }
    *ip = in;
    return TP_OK;
fail:
    tpd_ingest_destroy(in);
    return err;
}

void tpd_ingest_destroy(tpd_ingest *in)
{
    if (in == NULL) return;
    for (int i = 0; i < S__COUNT; i++) sqlite3_finalize(in->st[i]);
    tpd_blobs_close(in->blobs);
    tpd_str_free(&in->json);
    tp_buf_free(&in->scratch);
    free(in->token);
    free(in);
}

tpd_store *tpd_ingest_store(tpd_ingest *in)
{
    return in->store;
}

/* ---- binding helpers ---- */

/* stmt resets statement i for a new use. */
static sqlite3_stmt *stmt(tpd_ingest *in, int i)
{
    sqlite3_reset(in->st[i]);
    return in->st[i];
}

/* step runs a statement that returns no rows. */
static int step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
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

/* shape_text writes "[3,4]" into out (at least TP_MAX_DIMS * 21 + 3 bytes). */
static const char *shape_text(char *out, size_t n, const int64_t *shape, uint32_t ndim)
{
    char *p = out;
    (void)n;
    *p++ = '[';
    for (uint32_t i = 0; i < ndim && i < TP_MAX_DIMS; i++) {
        char digits[24];
        int k = 0;
        uint64_t v = shape[i] < 0 ? (uint64_t)0 - (uint64_t)shape[i] : (uint64_t)shape[i];
        if (i) *p++ = ',';
        if (shape[i] < 0) *p++ = '-';
        do digits[k++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        while (k) *p++ = digits[--k];
    }
    *p++ = ']';
    *p = '\0';
    return out;
}

/* ---- per-kind work ---- */

static int store_hello(tpd_ingest *in, const tp_batch *b, const tp_event *e)
{
    sqlite3_stmt *st = stmt(in, S_HELLO);
    tp_mpr f;
    sqlite3_bind_int64(st, 1, b->hdr.exec);
    sqlite3_bind_int64(st, 2, b->hdr.pid);
    bind_body_int(st, 3, e, TPF_hello_ppid);
    bind_body_int(st, 4, e, TPF_hello_rank);
    bind_body_int(st, 5, e, TPF_hello_world);
    bind_body_int(st, 6, e, TPF_hello_local_rank);
    bind_body_str(st, 7, e, TPF_hello_role);
    bind_body_str(st, 8, e, TPF_hello_agent);
    bind_body_str(st, 9, e, TPF_hello_python);
    bind_body_str(st, 10, e, TPF_hello_torch);
    bind_body_str(st, 11, e, TPF_hello_numpy);
    tpd_str_reset(&in->json);
    if (tp_body_find(e, TPF_hello_argv, &f) == TP_OK && tpd_json_strs(&in->json, &f) == TP_OK &&
        !in->json.oom)
        sqlite3_bind_text(st, 12, tpd_str_cstr(&in->json), (int)in->json.len, SQLITE_STATIC);
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

static int store_bye(tpd_ingest *in, const tp_batch *b, const tp_event *e)
{
    sqlite3_stmt *st = stmt(in, S_BYE);
    sqlite3_bind_int64(st, 1, b->hdr.exec);
    sqlite3_bind_int64(st, 2, b->hdr.pid);
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

/* blob_body rewrites a blob event's body without its bytes:
 * {"digest", "size", ["dtype"], ["shape"]}; *shape_txt gets the shape. */
static void blob_body(tpd_ingest *in, const tp_event *e, char *shape_txt, size_t n)
{
    uint8_t d[TP_DIGEST_LEN] = {0};
    const uint8_t *data = NULL;
    uint32_t size = 0, ndim = 0, klen = 0;
    const char *dtype = NULL;
    int64_t shape[TP_MAX_DIMS];
    tp_mpr f;
    bool has_shape = false;
    tp_body_digest(e, TPF_blob_digest, d);
    if (tp_body_find(e, TPF_blob_data, &f) == TP_OK) tp_mpr_bin(&f, &data, &size);
    if (tp_body_str(e, TPF_blob_dtype, &dtype, &klen) != TP_OK) dtype = NULL;
    shape_txt[0] = '\0';
    if (tp_body_find(e, TPF_blob_shape, &f) == TP_OK && tp_mpr_array(&f, &ndim) == TP_OK) {
        uint32_t k = 0;
        for (; k < ndim && k < TP_MAX_DIMS; k++)
            if (tp_mpr_int(&f, &shape[k]) != TP_OK) break;
        has_shape = k == ndim;
        if (has_shape) shape_text(shape_txt, n, shape, ndim);
    }
    tp_buf_reset(&in->scratch);
    tp_mp_map(&in->scratch, 2 + (dtype != NULL) + has_shape);
    tp_mp_cstr(&in->scratch, "digest");
    tp_mp_bin(&in->scratch, d, sizeof d);
    tp_mp_cstr(&in->scratch, "size");
    tp_mp_uint(&in->scratch, size);
    if (dtype) {
        tp_mp_cstr(&in->scratch, "dtype");
        tp_mp_str(&in->scratch, dtype, klen);
    }
    if (has_shape) {
        tp_mp_cstr(&in->scratch, "shape");
        tp_mp_array(&in->scratch, ndim);
        for (uint32_t k = 0; k < ndim; k++) tp_mp_int(&in->scratch, shape[k]);
    }
}

/* store_blob writes a blob event's bytes and its blobs row. */
static tp_err store_blob(tpd_ingest *in, const tp_event *e, const char *shape_txt, char *why,
                         size_t whylen)
{
    uint8_t d[TP_DIGEST_LEN];
    const uint8_t *data = NULL;
    uint32_t size = 0;
    tp_mpr f;
    sqlite3_stmt *st;
    tp_err err;
    int rc;
    if (tp_body_digest(e, TPF_blob_digest, d) != TP_OK ||
        tp_body_find(e, TPF_blob_data, &f) != TP_OK || tp_mpr_bin(&f, &data, &size) != TP_OK)
        return TP_EPROTO; /* validated: cannot be */
    if ((err = tpd_blob_put(in->blobs, d, data, size, NULL)) != TP_OK) {
        snprintf(why, whylen, "cannot write a blob file: %s", tp_strerror(err));
        return err;
    }
    st = stmt(in, S_BLOB);
    sqlite3_bind_blob(st, 1, d, sizeof d, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, size);
    bind_body_str(st, 3, e, TPF_blob_dtype);
    if (shape_txt[0])
        sqlite3_bind_text(st, 4, shape_txt, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 4);
    if ((rc = step(st)) != SQLITE_OK) {
        snprintf(why, whylen, "database: %s", sqlite3_errmsg(in->db));
        return dberr(rc);
    }
    return TP_OK;
}

/* store_event inserts one event and what it implies; *fresh tells whether it
 * was new. */
static tp_err store_event(tpd_ingest *in, const tp_batch *b, const tp_event *e, bool *fresh,
                          char *why, size_t whylen)
{
    sqlite3_stmt *st = stmt(in, S_EVENT);
    const char *kname = tp_kind_name(e->kind);
    char shape_txt[TP_MAX_DIMS * 24 + 4] = "";
    int rc = SQLITE_OK;
    *fresh = false;
    sqlite3_bind_int64(st, 1, b->hdr.exec);
    sqlite3_bind_int64(st, 2, b->hdr.pid);
    sqlite3_bind_int64(st, 3, (int64_t)e->seq);
    sqlite3_bind_int64(st, 4, (int64_t)e->time_ns);
    sqlite3_bind_int64(st, 5, e->step);
    sqlite3_bind_text(st, 6, kname, -1, SQLITE_STATIC);
    if (e->kind == TP_K_BLOB) {
        blob_body(in, e, shape_txt, sizeof shape_txt);
        if (in->scratch.oom) return TP_ENOMEM;
        sqlite3_bind_blob(st, 7, in->scratch.data, (int)in->scratch.len, SQLITE_STATIC);
    } else {
        sqlite3_bind_blob64(st, 7, e->body, e->body_len, SQLITE_STATIC);
    }
    if ((rc = step(st)) != SQLITE_OK) goto dbfail;
    if (sqlite3_changes(in->db) == 0) return TP_OK; /* duplicate */
    *fresh = true;
    switch (e->kind) {
    case TP_K_HELLO:
        rc = store_hello(in, b, e);
        break;
    case TP_K_BYE:
        rc = store_bye(in, b, e);
        break;
    case TP_K_BLOB:
        return store_blob(in, e, shape_txt, why, whylen);
    default:
        break;
    }
    if (rc != SQLITE_OK) goto dbfail;
    return TP_OK;
dbfail:
    snprintf(why, whylen, "database: %s", sqlite3_errmsg(in->db));
    return dberr(rc);
}

#define SEQ_LIMIT ((uint64_t)1 << 62)

/* refuse words why for a batch refused for who sent it and counts it. */
static tp_err refuse(tpd_ingest *in, char *why, size_t whylen, const char *reason)
{
    snprintf(why, whylen, "%s", reason);
    tpd_store_counter_add(in->store, "refused", 1);
    return TP_EPROTO;
}

/* find_exec returns exec's cache entry, read from the store on a miss;
 * NULL when it does not exist or has no key.  *err is set on a database
 * error. */
static const exec_entry *find_exec(tpd_ingest *in, int64_t exec, tp_err *err, char *why,
                                   size_t whylen)
{
    exec_entry *e = &in->execs[(uint64_t)exec & (EXEC_CACHE - 1)];
    sqlite3_stmt *st;
    int rc;
    *err = TP_OK;
    if (exec <= 0) return NULL;
    if (e->exec == exec) return e;
    st = stmt(in, S_EXEC);
    sqlite3_bind_int64(st, 1, exec);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 1) == TP_EXEC_KEY_LEN &&
        sqlite3_column_type(st, 1) == SQLITE_TEXT) {
        e->exec = exec;
        e->run = sqlite3_column_int64(st, 0);
        memcpy(e->key, sqlite3_column_text(st, 1), TP_EXEC_KEY_LEN);
        sqlite3_reset(st);
        return e;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(why, whylen, "database: %s", sqlite3_errmsg(in->db));
        *err = dberr(rc);
    }
    return NULL;
}

/* check_batch holds a decoded batch to what the store can keep: the token
 * (socket batches), an execution of the daemon's with its key, sane seqs. */
static tp_err check_batch(tpd_ingest *in, const tp_batch *b, bool check_token, char *why,
                          size_t whylen)
{
    const exec_entry *e;
    tp_err err;
    if (check_token && in->token &&
        !tpd_secret_eq(b->hdr.tok, b->hdr.tok_len, in->token, in->token_len))
        return refuse(in, why, whylen, b->hdr.tok ? "wrong token" : "missing token");
    if ((e = find_exec(in, b->hdr.exec, &err, why, whylen)) == NULL) {
        if (err != TP_OK) return err;
        return refuse(in, why, whylen, "batch for an execution the daemon did not create");
    }
    if (e->run != b->hdr.run) return refuse(in, why, whylen, "batch for another run's execution");
    if (b->hdr.key == NULL) return refuse(in, why, whylen, "batch without its execution's key");
    if (!tpd_secret_eq(b->hdr.key, b->hdr.key_len, e->key, TP_EXEC_KEY_LEN))
        return refuse(in, why, whylen, "batch with a wrong execution key");
    for (size_t i = 0; i < b->n; i++) {
        /* seqs count a process's events from 0: one at 2^62 is no agent's,
         * and the bookkeeping (store/gaps.c: seq + 1) must never overflow */
        if (b->ev[i].seq >= SEQ_LIMIT || b->ev[i].time_ns > INT64_MAX) {
            snprintf(why, whylen, "events[%zu]: seq or time out of range", i);
            return TP_EPROTO;
        }
    }
    return TP_OK;
}

/* write_batch stores a checked batch inside a savepoint. */
static tp_err write_batch(tpd_ingest *in, const tp_batch *b, tpd_ingest_result *res, char *why,
                          size_t whylen)
{
    sqlite3_stmt *st;
    int64_t max_seq = -1;
    tp_err err = TP_OK;
    int rc;
    if ((rc = step(stmt(in, S_SAVEPOINT))) != SQLITE_OK) goto dbfail;
    st = stmt(in, S_PROC);
    sqlite3_bind_int64(st, 1, b->hdr.exec);
    sqlite3_bind_int64(st, 2, b->hdr.pid);
    sqlite3_bind_int64(st, 3, b->hdr.rank);
    if ((rc = step(st)) != SQLITE_OK) goto dbundo;
    if (sqlite3_changes(in->db) > 0) { /* a new process: its execution must be running */
        st = stmt(in, S_FINISHED);
        sqlite3_bind_int64(st, 1, b->hdr.exec);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_int(st, 0)) {
            sqlite3_reset(st);
            err = refuse(in, why, whylen, "batch from a new process of a finished execution");
            goto undo;
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) goto dbundo;
    }
    for (size_t i = 0; i < b->n; i++) {
        bool fresh;
        if ((err = store_event(in, b, &b->ev[i], &fresh, why, whylen)) != TP_OK) goto undo;
        if (fresh) {
            res->events++;
            if ((int64_t)b->ev[i].seq > max_seq) max_seq = (int64_t)b->ev[i].seq;
        } else {
            res->dup++;
        }
    }
    if (res->events > 0) {
        st = stmt(in, S_PROC_COUNT);
        sqlite3_bind_int64(st, 1, b->hdr.exec);
        sqlite3_bind_int64(st, 2, b->hdr.pid);
        sqlite3_bind_int64(st, 3, (int64_t)res->events);
        sqlite3_bind_int64(st, 4, max_seq);
        if ((rc = step(st)) != SQLITE_OK) goto dbundo;
    }
    if ((rc = step(stmt(in, S_RELEASE))) != SQLITE_OK) goto dbundo;
    return TP_OK;
dbundo:
    snprintf(why, whylen, "database: %s", sqlite3_errmsg(in->db));
    err = dberr(rc);
undo:
    step(stmt(in, S_ROLLBACK_TO));
    step(stmt(in, S_RELEASE));
    return err;
dbfail:
    snprintf(why, whylen, "database: %s", sqlite3_errmsg(in->db));
    return dberr(rc);
}

/* ingest_one is tpd_ingest_message inside an open transaction. */
static tp_err ingest_one(tpd_ingest *in, const void *msg, size_t len, bool check_token,
                         tpd_ingest_result *res, char *why, size_t whylen)
{
    tp_batch b;
    tp_err err = tp_batch_decode(msg, len, &b, why, whylen);
    memset(res, 0, sizeof *res);
    if (err == TP_OK) {
        err = check_batch(in, &b, check_token, why, whylen);
        if (err == TP_OK) {
            res->exec = b.hdr.exec;
            res->pid = b.hdr.pid;
            err = write_batch(in, &b, res, why, whylen);
        }
        tp_batch_free(&b);
    }
    if (err == TP_EPROTO || err == TP_EVERSION) {
        tpd_store_counter_add(in->store, "malformed", 1);
    } else if (err == TP_OK) {
        tpd_store_counter_add(in->store, "batches", 1);
        tpd_store_counter_add(in->store, "events", (int64_t)res->events);
        if (res->dup) tpd_store_counter_add(in->store, "duplicates", (int64_t)res->dup);
    }
    return err;
}

tp_err tpd_ingest_message(tpd_ingest *in, const void *msg, size_t len, tpd_ingest_result *res,
                          char *why, size_t whylen)
{
    tpd_ingest_result r;
    char dummy[8];
    bool own = !tpd_store_in_txn(in->store);
    tp_err err;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if (own && (err = tpd_store_begin(in->store)) != TP_OK) {
        snprintf(why, whylen, "database: %s", tpd_store_errmsg(in->store));
        return err;
    }
    err = ingest_one(in, msg, len, true, &r, why, whylen);
    if (own) {
        tp_err cerr = tpd_store_commit(in->store);
        if (cerr != TP_OK && err == TP_OK) {
            snprintf(why, whylen, "database: %s", tpd_store_errmsg(in->store));
            err = cerr;
        }
    }
    if (err == TP_OK && res) *res = r;
    return err;
}

tp_err tpd_ingest_local(tpd_ingest *in, const void *msg, size_t len, tpd_ingest_result *res,
                        char *why, size_t whylen)
{
    tpd_ingest_result r;
    tp_err err;
    if (!tpd_store_in_txn(in->store)) return TP_EINVAL;
    err = ingest_one(in, msg, len, false, &r, why, whylen);
    if (err == TP_OK && res) *res = r;
    return err;
}
