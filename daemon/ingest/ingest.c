/* SPDX-License-Identifier: MIT
 * ingest.c -- one decoded batch into rows.
 *
 * Per message: decode and check everything (proto), then SAVEPOINT, make
 * sure the (exec, pid) process row exists, insert each event (a conflict on
 * (exec_id, pid, seq) is a duplicate and skipped with all it implies), then
 * per new event: hello and bye fill the process row, blob bytes go to the
 * blob store (every other body is stored as it came: the one copy, which
 * readers decode); finally the process's nevents and max_seq, and RELEASE.
 * The rows are written by daemon/store/writer.c, whose statements are
 * prepared once and bound straight from the message buffer.
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

#include "daemon/ingest/ingest.h"
#include "daemon/store/blob.h"
#include "daemon/store/secret.h"
#include "daemon/store/writer.h"
#include "proto/control.h"
#include "proto/event.h"

#define EXEC_CACHE 256 /* executions whose run and key are kept; a power of 2 */

typedef struct exec_entry {
    int64_t exec; /* 0: empty (ids start at 1) */
    int64_t run;
    char key[TP_EXEC_KEY_LEN];
} exec_entry;

struct tpd_ingest {
    tpd_store *store;
    tpd_writer *w;
    char *token; /* NULL: none */
    size_t token_len;
    tpd_blobs *blobs;
    tp_buf scratch; /* scratch: rewritten blob bodies */
    exec_entry execs[EXEC_CACHE];
};

tp_err tpd_ingest_create(tpd_ingest **ip, tpd_store *s, const char *token)
{
    tpd_ingest *in;
    char dir[4096];
    tp_err err = TP_ENOMEM;
    if (ip == NULL || s == NULL || tpd_store_readonly(s)) return TP_EINVAL;
    in = calloc(1, sizeof *in);
    if (in == NULL) return TP_ENOMEM;
    in->store = s;
    tp_buf_init(&in->scratch);
    if (token && token[0]) {
        if ((in->token = strdup(token)) == NULL) goto fail;
        in->token_len = strlen(token);
    }
    if ((err = tpd_blobs_dir_for(tpd_store_path(s), dir, sizeof dir)) != TP_OK) goto fail;
    if ((err = tpd_blobs_open(&in->blobs, dir)) != TP_OK) goto fail;
    if ((err = tpd_writer_open(&in->w, s)) != TP_OK) goto fail;
    *ip = in;
    return TP_OK;
fail:
    tpd_ingest_destroy(in);
    return err;
}

void tpd_ingest_destroy(tpd_ingest *in)
{
    if (in == NULL) return;
    tpd_writer_close(in->w);
    tpd_blobs_close(in->blobs);
    tp_buf_free(&in->scratch);
    free(in->token);
    free(in);
}

tpd_store *tpd_ingest_store(tpd_ingest *in)
{
    return in->store;
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

/* dbfail says "database: <the store's last error>" in why and returns err. */
static tp_err dbfail(tpd_ingest *in, tp_err err, char *why, size_t whylen)
{
    snprintf(why, whylen, "database: %s", tpd_store_errmsg(in->store));
    return err;
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
    tp_err err;
    if (tp_body_digest(e, TPF_blob_digest, d) != TP_OK ||
        tp_body_find(e, TPF_blob_data, &f) != TP_OK || tp_mpr_bin(&f, &data, &size) != TP_OK)
        return TP_EPROTO; /* validated: cannot be */
    if ((err = tpd_blob_put(in->blobs, d, data, size, NULL)) != TP_OK) {
        snprintf(why, whylen, "cannot write a blob file: %s", tp_strerror(err));
        return err;
    }
    if ((err = tpd_writer_blob(in->w, d, size, e, shape_txt)) != TP_OK)
        return dbfail(in, err, why, whylen);
    return TP_OK;
}

/* store_event inserts one event and what it implies; *fresh tells whether it
 * was new. */
static tp_err store_event(tpd_ingest *in, const tp_batch *b, const tp_event *e, bool *fresh,
                          char *why, size_t whylen)
{
    char shape_txt[TP_MAX_DIMS * 24 + 4] = "";
    const void *body = e->body;
    size_t body_len = e->body_len;
    tp_err err;
    *fresh = false;
    if (e->kind == TP_K_BLOB) {
        blob_body(in, e, shape_txt, sizeof shape_txt);
        if (in->scratch.oom) return TP_ENOMEM;
        body = in->scratch.data;
        body_len = in->scratch.len;
    }
    err = tpd_writer_event(in->w, b->hdr.exec, b->hdr.pid, e, body, body_len, fresh);
    if (err != TP_OK) return dbfail(in, err, why, whylen);
    if (!*fresh) return TP_OK; /* duplicate */
    switch (e->kind) {
    case TP_K_HELLO:
        err = tpd_writer_hello(in->w, b->hdr.exec, b->hdr.pid, e);
        break;
    case TP_K_BYE:
        err = tpd_writer_bye(in->w, b->hdr.exec, b->hdr.pid, e);
        break;
    case TP_K_BLOB:
        return store_blob(in, e, shape_txt, why, whylen);
    default:
        break;
    }
    if (err != TP_OK) return dbfail(in, err, why, whylen);
    return TP_OK;
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
    int64_t run;
    char key[TP_EXEC_KEY_LEN];
    tp_err rc;
    *err = TP_OK;
    if (exec <= 0) return NULL;
    if (e->exec == exec) return e;
    rc = tpd_writer_exec_key(in->w, exec, &run, key);
    if (rc == TP_OK) {
        e->exec = exec;
        e->run = run;
        memcpy(e->key, key, TP_EXEC_KEY_LEN);
        return e;
    }
    if (rc != TP_ENOENT) *err = dbfail(in, rc, why, whylen);
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

/* write_batch stores a checked batch inside a savepoint; a batch that would
 * add a process to a finished execution only when late (TPD_FROM_OWNER). */
static tp_err write_batch(tpd_ingest *in, const tp_batch *b, bool late, tpd_ingest_result *res,
                          char *why, size_t whylen)
{
    int64_t max_seq = -1;
    bool added, finished;
    tp_err err;
    if ((err = tpd_writer_savepoint(in->w)) != TP_OK) return dbfail(in, err, why, whylen);
    err = tpd_writer_process(in->w, b->hdr.exec, b->hdr.pid, b->hdr.rank, &added);
    if (err != TP_OK) goto dbundo;
    if (added && !late) { /* a new process: its execution must be running */
        if ((err = tpd_writer_exec_finished(in->w, b->hdr.exec, &finished)) != TP_OK) goto dbundo;
        if (finished) {
            err = refuse(in, why, whylen, "batch from a new process of a finished execution");
            goto undo;
        }
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
    if (res->events > 0 && (err = tpd_writer_counts(in->w, b->hdr.exec, b->hdr.pid,
                                                    (int64_t)res->events, max_seq)) != TP_OK)
        goto dbundo;
    if ((err = tpd_writer_release(in->w)) != TP_OK) goto dbundo;
    return TP_OK;
dbundo:
    dbfail(in, err, why, whylen);
undo:
    tpd_writer_undo(in->w);
    return err;
}

/* ingest_one is tpd_ingest_message inside an open transaction: with the
 * token checked (check_token), and a process new to a finished execution
 * stored (late). */
static tp_err ingest_one(tpd_ingest *in, const void *msg, size_t len, bool check_token, bool late,
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
            err = write_batch(in, &b, late, res, why, whylen);
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
    err = ingest_one(in, msg, len, true, false, &r, why, whylen);
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

tp_err tpd_ingest_local(tpd_ingest *in, const void *msg, size_t len, tpd_from from,
                        tpd_ingest_result *res, char *why, size_t whylen)
{
    tpd_ingest_result r;
    tp_err err;
    if (!tpd_store_in_txn(in->store)) return TP_EINVAL;
    err = ingest_one(in, msg, len, from == TPD_FROM_PEER, from == TPD_FROM_OWNER, &r, why, whylen);
    if (err == TP_OK && res) *res = r;
    return err;
}
