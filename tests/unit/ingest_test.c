/* SPDX-License-Identifier: MIT
 * ingest_test.c -- the daemon end to end on real sockets: the serve loop runs
 * in a thread of the (forked) test, agents are real nng push sockets on
 * ipc:// in a scratch directory, tools are real req sockets on the control
 * URL, and the database is a real file.  Nothing is mocked. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ingest/ingest.h"
#include "daemon/serve/serve.h"
#include "daemon/store/store.h"
#include "proto/control.h"
#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"
#include "tp_version.h"

typedef struct tdaemon {
    char dir[512], db[600], url[700];
    tpd_store *s;
    tpd_serve *sv;
    pthread_t th;
    tp_err rc;
    bool running;
    nng_socket push, req;
} tdaemon;

static void log_quiet(void *arg, const char *line)
{
    (*(int *)arg)++;
    (void)line;
}

static int nlogged;

static void *serve_thread(void *arg)
{
    tdaemon *d = arg;
    d->rc = tpd_serve_run(d->sv, NULL, 0);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* start runs a tdaemon on ipc://<scratch>/ingest.ipc (or url) with token. */
static void start_at(tdaemon *d, const char *url, const char *token, const char *control)
{
    const char *listen[1];
    tpd_serve_opts o;
    char why[512] = "";
    tp_err rc;
    int rv;
    td_make(d->dir, sizeof d->dir);
    td_path(d->db, sizeof d->db, d->dir, "runs.db");
    if (url)
        snprintf(d->url, sizeof d->url, "%s", url);
    else
        snprintf(d->url, sizeof d->url, "ipc://%s/ingest.ipc", d->dir);
    ck_assert_int_eq(tpd_store_open(&d->s, d->db, 0, why, sizeof why), TP_OK);
    listen[0] = d->url;
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    o.token = token;
    o.control = control;
    o.batch_max = 64;
    o.log = log_quiet;
    o.log_arg = &nlogged;
    rc = tpd_serve_open(&d->sv, d->s, &o, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "serve_open: %s: %s", tp_strerror(rc), why);
    ck_assert_int_eq(pthread_create(&d->th, NULL, serve_thread, d), 0);
    d->running = true;
    ck_assert_int_eq(nng_push0_open(&d->push), 0);
    ck_assert_int_eq(nng_socket_set_ms(d->push, NNG_OPT_SENDTIMEO, 5000), 0);
    ck_assert_int_eq(nng_dial(d->push, d->url, NULL, 0), 0);
    ck_assert_int_eq(nng_req0_open(&d->req), 0);
    ck_assert_int_eq(nng_socket_set_ms(d->req, NNG_OPT_SENDTIMEO, 5000), 0);
    ck_assert_int_eq(nng_socket_set_ms(d->req, NNG_OPT_RECVTIMEO, 5000), 0);
    rv = nng_dial(d->req, tpd_serve_control_url(d->sv), NULL, 0);
    ck_assert_msg(rv == 0, "dial %s: %s", tpd_serve_control_url(d->sv), nng_strerror(rv));
}

static void start(tdaemon *d, const char *token)
{
    start_at(d, NULL, token, NULL);
}

/* join waits for the serve loop to return (after stop or shutdown). */
static void join(tdaemon *d)
{
    if (!d->running) return;
    pthread_join(d->th, NULL);
    d->running = false;
    ck_assert_int_eq(d->rc, TP_OK);
}

static void finish(tdaemon *d)
{
    nng_close(d->push);
    nng_close(d->req);
    if (d->running) {
        tpd_serve_stop(d->sv);
        join(d);
    }
    tpd_serve_close(d->sv);
    tpd_store_close(d->s);
    td_remove(d->dir);
}

static void send_raw(tdaemon *d, const void *p, size_t n)
{
    ck_assert_int_eq(nng_send(d->push, (void *)p, n, 0), 0);
}

static void send_tb(tdaemon *d, tb *t)
{
    tb_end(t);
    send_raw(d, t->buf.data, t->buf.len);
    tb_free(t);
}

/* ---- control calls ---- */

/* call sends a request and receives the reply into rep. */
static void call_raw(tdaemon *d, const void *req, size_t n, tp_buf *rep)
{
    void *buf = NULL;
    size_t len = 0;
    int rv;
    ck_assert_int_eq(nng_send(d->req, (void *)req, n, 0), 0);
    rv = nng_recv(d->req, &buf, &len, NNG_FLAG_ALLOC);
    ck_assert_msg(rv == 0, "no reply: %s", nng_strerror(rv));
    tp_buf_reset(rep);
    tp_buf_append(rep, buf, len);
    nng_free(buf, len);
}

static tp_err reply_find(const tp_buf *rep, const char *key, tp_mpr *v)
{
    tp_err rc = tp_mp_map_find(rep->data, rep->len, key, v);
    ck_assert_msg(rc == TP_OK || rc == TP_ENOENT, "the reply is not a map");
    return rc;
}

static bool reply_bool(const tp_buf *rep, const char *key)
{
    tp_mpr v;
    bool b;
    ck_assert_msg(reply_find(rep, key, &v) == TP_OK, "no '%s' in reply", key);
    ck_assert_int_eq(tp_mpr_bool(&v, &b), TP_OK);
    return b;
}

static int64_t reply_int(const tp_buf *rep, const char *key)
{
    tp_mpr v;
    int64_t i;
    ck_assert_msg(reply_find(rep, key, &v) == TP_OK, "no '%s' in reply", key);
    ck_assert_int_eq(tp_mpr_int(&v, &i), TP_OK);
    return i;
}

/* reply_str copies a string reply field into out. */
static const char *reply_str(const tp_buf *rep, const char *key, char *out, size_t n)
{
    tp_mpr v;
    const char *s;
    uint32_t len;
    ck_assert_msg(reply_find(rep, key, &v) == TP_OK, "no '%s' in reply", key);
    ck_assert_int_eq(tp_mpr_str(&v, &s, &len), TP_OK);
    snprintf(out, n, "%.*s", (int)len, s);
    return out;
}

/* req_begin starts a request map for cmd with nargs more pairs. */
static void req_begin(tp_buf *b, const char *cmd, uint32_t nargs)
{
    tp_buf_reset(b);
    tp_mp_map(b, nargs + 1);
    tp_mp_cstr(b, "cmd");
    tp_mp_cstr(b, cmd);
}

static void call(tdaemon *d, tp_buf *req, tp_buf *rep)
{
    ck_assert(!req->oom);
    call_raw(d, req->data, req->len, rep);
}

static void call_ok(tdaemon *d, tp_buf *req, tp_buf *rep)
{
    char err[512] = "";
    call(d, req, rep);
    if (!reply_bool(rep, "ok")) reply_str(rep, "error", err, sizeof err);
    ck_assert_msg(reply_bool(rep, "ok"), "command failed: %s", err);
}

static void call_fails(tdaemon *d, const void *p, size_t n, tp_buf *rep, const char *want)
{
    char err[512];
    call_raw(d, p, n, rep);
    ck_assert(!reply_bool(rep, "ok"));
    reply_str(rep, "error", err, sizeof err);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
}

/* seen_wait polls seen until (exec, pid) has seq want, at most 10 s. */
static void seen_wait(tdaemon *d, int64_t exec, int64_t pid, int64_t want, tp_buf *req, tp_buf *rep)
{
    double until = now_s() + 10;
    int64_t seq = -2;
    while (now_s() < until) {
        req_begin(req, "seen", 2);
        tp_mp_cstr(req, "exec"), tp_mp_int(req, exec);
        tp_mp_cstr(req, "pid"), tp_mp_int(req, pid);
        call_ok(d, req, rep);
        if ((seq = reply_int(rep, "seq")) == want) return;
        usleep(2000);
    }
    ck_abort_msg("seen: seq %lld, want %lld", (long long)seq, (long long)want);
}

/* finish_call sends exec.finish and returns whether it is pending. */
static bool finish_call(tdaemon *d, int64_t exec, int64_t wait_ms, tp_buf *req, tp_buf *rep)
{
    req_begin(req, "exec.finish", 4);
    tp_mp_cstr(req, "exec"), tp_mp_int(req, exec);
    tp_mp_cstr(req, "status"), tp_mp_int(req, 0);
    tp_mp_cstr(req, "signal"), tp_mp_nil(req);
    tp_mp_cstr(req, "wait_ms"), tp_mp_int(req, wait_ms);
    call_ok(d, req, rep);
    return reply_bool(rep, "pending");
}

/* new_exec creates an execution of *run (first a run when *run is 0) and
 * returns its id; its key goes to key (TP_EXEC_KEY_LEN + 1 bytes). */
static int64_t new_exec(tdaemon *d, int64_t *run, char *key, tp_buf *req, tp_buf *rep)
{
    if (*run == 0) {
        req_begin(req, "run.create", 1);
        tp_mp_cstr(req, "check"), tp_mp_cstr(req, "record");
        call_ok(d, req, rep);
        *run = reply_int(rep, "run");
    }
    req_begin(req, "exec.create", 2);
    tp_mp_cstr(req, "run"), tp_mp_int(req, *run);
    tp_mp_cstr(req, "role"), tp_mp_cstr(req, "main");
    call_ok(d, req, rep);
    reply_str(rep, "key", key, TP_EXEC_KEY_LEN + 1);
    ck_assert_uint_eq(strlen(key), TP_EXEC_KEY_LEN);
    return reply_int(rep, "exec");
}

/* stored_events counts the events stored for exec (read-only, beside the
 * daemon: WAL lets it read what was committed). */
static int64_t stored_events(const tdaemon *d, int64_t exec)
{
    tpd_store *ro = NULL;
    sqlite3_stmt *q = NULL;
    char why[256];
    int64_t n;
    ck_assert_int_eq(tpd_store_open(&ro, d->db, TPD_STORE_READONLY, why, sizeof why), TP_OK);
    sqlite3_prepare_v2(tpd_store_db(ro), "SELECT count(*) FROM events WHERE exec_id = ?1", -1, &q,
                       NULL);
    sqlite3_bind_int64(q, 1, exec);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    tpd_store_close(ro);
    return n;
}

/* frames_of writes the batches of t[0..n) as spool frames into out. */
static void frames_of(tp_buf *out, tb *t, int n)
{
    for (int i = 0; i < n; i++) {
        uint8_t len[4];
        tb_end(&t[i]);
        len[0] = (uint8_t)(t[i].buf.len >> 24), len[1] = (uint8_t)(t[i].buf.len >> 16);
        len[2] = (uint8_t)(t[i].buf.len >> 8), len[3] = (uint8_t)t[i].buf.len;
        tp_buf_append(out, len, 4);
        tp_buf_append(out, t[i].buf.data, t[i].buf.len);
        tb_free(&t[i]);
    }
}

/* write_spool writes the batches of t[0..n) as a spool file. */
static void write_spool(const char *path, tb *t, int n)
{
    tp_buf b;
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    tp_buf_init(&b);
    frames_of(&b, t, n);
    ck_assert_uint_eq(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    tp_buf_free(&b);
}

/* utf8_ok checks s (n bytes) as UTF-8 without control characters other
 * than newline and tab (written here again, not taken from the daemon). */
static bool utf8_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp, len;
        if (c < 0x80)
            len = 1, cp = c;
        else if ((c & 0xe0) == 0xc0)
            len = 2, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            len = 3, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            len = 4, cp = c & 0x07;
        else
            return false;
        if (i + len > n) return false;
        for (unsigned k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f)) return false;
        i += len;
    }
    return true;
}

/* reply_strings_ok checks every string of a reply map with utf8_ok. */
static bool reply_strings_ok(const tp_buf *rep)
{
    tp_mpr r;
    uint32_t n;
    tp_mpr_init(&r, rep->data, rep->len);
    ck_assert_int_eq(tp_mpr_map(&r, &n), TP_OK);
    for (uint32_t i = 0; i < 2 * n; i++) {
        tp_mptype t;
        const char *s;
        uint32_t len;
        ck_assert_int_eq(tp_mpr_peek(&r, &t), TP_OK);
        if (t != TP_MP_STR) {
            ck_assert_int_eq(tp_mpr_skip(&r), TP_OK);
            continue;
        }
        ck_assert_int_eq(tp_mpr_str(&r, &s, &len), TP_OK);
        if (!utf8_ok((const uint8_t *)s, len)) return false;
    }
    return true;
}

START_TEST(test_ingest_socket_end_to_end)
{
    static tdaemon d;
    tp_buf req, rep;
    int64_t run, exec, exec2, pid = 31337, v;
    char text[8192], spool[700], key[64], key2[64];
    tpd_serve_stats st;
    tb t;
    FILE *f;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);

    req_begin(&req, "ping", 0);
    call_ok(&d, &req, &rep);
    ck_assert_str_eq(reply_str(&rep, "version", text, sizeof text), TP_VERSION);
    ck_assert_str_eq(reply_str(&rep, "db", text, sizeof text), d.db);
    ck_assert_int_eq(reply_int(&rep, "pid"), getpid());

    req_begin(&req, "run.create", 3);
    tp_mp_cstr(&req, "name"), tp_mp_nil(&req);
    tp_mp_cstr(&req, "check"), tp_mp_cstr(&req, "resume");
    tp_mp_cstr(&req, "params"), tp_mp_cstr(&req, "{\"at\":4}");
    call_ok(&d, &req, &rep);
    run = reply_int(&rep, "run");
    req_begin(&req, "exec.create", 3);
    tp_mp_cstr(&req, "run"), tp_mp_int(&req, run);
    tp_mp_cstr(&req, "role"), tp_mp_cstr(&req, "baseline-a");
    tp_mp_cstr(&req, "argv"), tp_mp_array(&req, 2), tp_mp_cstr(&req, "python"),
        tp_mp_cstr(&req, "train.py");
    call_ok(&d, &req, &rep);
    exec = reply_int(&rep, "exec");
    reply_str(&rep, "key", key, sizeof key);
    req_begin(&req, "exec.create", 2);
    tp_mp_cstr(&req, "run"), tp_mp_int(&req, run);
    tp_mp_cstr(&req, "role"), tp_mp_cstr(&req, "baseline-b");
    call_ok(&d, &req, &rep);
    exec2 = reply_int(&rep, "exec");
    reply_str(&rep, "key", key2, sizeof key2);
    ck_assert_str_ne(key, key2);

    /* a good batch, a malformed message, a good batch */
    tb_begin_key(&t, run, exec, pid, 0, NULL, key);
    tb_hello(&t, 0, 0);
    tb_backward(&t, 1, 0, 2.0, 1);
    send_tb(&d, &t);
    send_raw(&d, "\x82\xa1v\x01\xc1", 5);
    tb_begin_key(&t, run, exec, pid, 0, NULL, key);
    tb_step(&t, 2, 0, true, 2, 1.0, 0.1);
    tb_step(&t, 3, 0, false, 0, 0.01, 0.1);
    send_tb(&d, &t);
    seen_wait(&d, exec, pid, 3, &req, &rep);
    ck_assert(!reply_bool(&rep, "bye"));

    /* no bye yet: pending while within wait_ms; then the bye completes it */
    ck_assert(finish_call(&d, exec, 60000, &req, &rep));
    tb_begin_key(&t, run, exec, pid, 0, NULL, key);
    tb_bye(&t, 4, 5, 0);
    send_tb(&d, &t);
    {
        double until = now_s() + 10;
        while (finish_call(&d, exec, 60000, &req, &rep) && now_s() < until) usleep(2000);
    }
    ck_assert(!reply_bool(&rep, "pending"));
    ck_assert(reply_bool(&rep, "complete"));
    ck_assert_int_eq(reply_int(&rep, "processes"), 1);
    ck_assert_int_eq(reply_int(&rep, "events"), 5);
    ck_assert_int_eq(reply_int(&rep, "gaps"), 0);
    ck_assert_int_eq(reply_int(&rep, "dropped"), 0);

    /* a process that never says bye, with a lost event: incomplete after the wait */
    tb_begin_key(&t, run, exec2, pid + 1, 0, NULL, key2);
    tb_hello(&t, 0, 0);
    tb_backward(&t, 2, 0, 1.0, 1);
    send_tb(&d, &t);
    seen_wait(&d, exec2, pid + 1, 0, &req, &rep);
    {
        double until = now_s() + 10;
        while (finish_call(&d, exec2, 50, &req, &rep) && now_s() < until) usleep(5000);
    }
    ck_assert(!reply_bool(&rep, "pending"));
    ck_assert(!reply_bool(&rep, "complete"));
    ck_assert_int_eq(reply_int(&rep, "gaps"), 1);

    /* queries: the same text as the CLI */
    req_begin(&req, "query", 2);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "run");
    tp_mp_cstr(&req, "id"), tp_mp_int(&req, run);
    call_ok(&d, &req, &rep);
    reply_str(&rep, "text", text, sizeof text);
    ck_assert_msg(strstr(text, "process 31337: rank 0/2") && strstr(text, "no bye: incomplete"),
                  "%s", text);
    ck_assert_msg(strstr(text, "gaps 1\n"), "%s", text);
    req_begin(&req, "query", 2);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "steps");
    tp_mp_cstr(&req, "id"), tp_mp_int(&req, run);
    call_ok(&d, &req, &rep);
    reply_str(&rep, "text", text, sizeof text);
    ck_assert_msg(strstr(text, "0.1,0.01"), "%s", text);
    req_begin(&req, "query", 1);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "runs");
    call_ok(&d, &req, &rep);
    req_begin(&req, "query", 2);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "run");
    tp_mp_cstr(&req, "id"), tp_mp_int(&req, 999);
    call_fails(&d, req.data, req.len, &rep, "no run 999");

    /* malformed and failing requests get an error and the tdaemon goes on */
    call_fails(&d, "\xc1", 1, &rep, "malformed request");
    call_fails(&d, "", 0, &rep, "malformed request");
    call_fails(&d,
               "\x81\xa3"
               "cmd\xdb\xff\xff\xff\xff",
               10, &rep, "malformed request");
    req_begin(&req, "nope", 0);
    call_fails(&d, req.data, req.len, &rep, "unknown command");
    tp_buf_reset(&req);
    tp_mp_map(&req, 1), tp_mp_cstr(&req, "cmd"), tp_mp_int(&req, 5);
    call_fails(&d, req.data, req.len, &rep, "'cmd' is not a string");
    req_begin(&req, "seen", 0);
    call_fails(&d, req.data, req.len, &rep, "missing argument 'exec'");
    req_begin(&req, "exec.create", 1);
    tp_mp_cstr(&req, "run"), tp_mp_int(&req, 12345);
    call_fails(&d, req.data, req.len, &rep, "no run 12345");
    req_begin(&req, "exec.finish", 1);
    tp_mp_cstr(&req, "exec"), tp_mp_cstr(&req, "one");
    call_fails(&d, req.data, req.len, &rep, "not an integer");
    req_begin(&req, "ping", 1);
    tp_mp_cstr(&req, "cmd"), tp_mp_cstr(&req, "ping");
    call_fails(&d, req.data, req.len, &rep, "duplicate key");

    /* a spool file through the control command */
    snprintf(text, sizeof text, "%lld-%lld.spool", (long long)exec2, (long long)pid + 1);
    td_path(spool, sizeof spool, d.dir, text);
    f = fopen(spool, "wb");
    tb_begin_key(&t, run, exec2, pid + 1, 0, NULL, key2);
    tb_backward(&t, 1, 0, 1.0, 1);
    tb_end(&t);
    fwrite((uint8_t[]){0, 0, (uint8_t)(t.buf.len >> 8), (uint8_t)t.buf.len}, 1, 4, f);
    fwrite(t.buf.data, 1, t.buf.len, f);
    fwrite("\x00\x00\x01", 1, 3, f); /* torn */
    fclose(f);
    tb_free(&t);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, spool);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "events"), 1);
    ck_assert_int_eq(reply_int(&rep, "bad"), 0);
    ck_assert(reply_bool(&rep, "torn"));
    seen_wait(&d, exec2, pid + 1, 2, &req, &rep);

    req_begin(&req, "ping", 0);
    call_ok(&d, &req, &rep);
    req_begin(&req, "shutdown", 0);
    call_ok(&d, &req, &rep);
    join(&d);
    tpd_serve_get_stats(d.sv, &st);
    ck_assert_int_eq(st.malformed, 1);
    ck_assert_int_eq(st.failed, 0);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "malformed", &v), TP_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "batches", &v), TP_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(nlogged, 1); /* the malformed reason, once */
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_many_batches_few_transactions)
{
    static tdaemon d;
    tp_buf req, rep;
    tpd_serve_stats st;
    const int n = 2000;
    int64_t run = 0, exec;
    char key[64];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    for (int i = 0; i < n; i++) {
        tb t;
        tb_begin_key(&t, run, exec, 77, 0, NULL, key);
        tb_backward(&t, (uint64_t)i, i, 1.0, 1);
        send_tb(&d, &t);
    }
    seen_wait(&d, exec, 77, n - 1, &req, &rep);
    tpd_serve_stop(d.sv);
    join(&d);
    tpd_serve_get_stats(d.sv, &st);
    ck_assert_int_eq(st.stored, n);
    /* the loop commits what is available: a burst shares transactions */
    ck_assert_msg(st.commits < (uint64_t)n / 4, "%llu commits for %d batches",
                  (unsigned long long)st.commits, n);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_stop_commits_what_arrived)
{
    static tdaemon d;
    tpd_serve_stats st;
    tpd_store *ro = NULL;
    sqlite3_stmt *q = NULL;
    char why[256], key[64];
    tp_buf req, rep;
    int64_t run = 0, exec;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    for (int i = 0; i < 300; i++) {
        tb t;
        tb_begin_key(&t, run, exec, 5, 0, NULL, key);
        tb_backward(&t, (uint64_t)i, 0, 1.0, 1);
        send_tb(&d, &t);
    }
    tpd_serve_stop(d.sv);
    join(&d);
    tpd_serve_get_stats(d.sv, &st);
    ck_assert_int_eq(tpd_store_open(&ro, d.db, TPD_STORE_READONLY, why, sizeof why), TP_OK);
    sqlite3_prepare_v2(tpd_store_db(ro), "SELECT count(*) FROM events", -1, &q, NULL);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int64(q, 0), (int64_t)st.stored);
    sqlite3_finalize(q);
    tpd_store_close(ro);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_token)
{
    /* ipc: batches need the token, control does not; a token that differs
     * in its last byte only is as wrong as any other */
    static tdaemon d;
    tp_buf req, rep;
    tb t;
    int64_t v, run = 0, exec;
    char key[64];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, "t0k-s3cret");
    exec = new_exec(&d, &run, key, &req, &rep);
    tb_begin_key(&t, run, exec, 1, 0, NULL, key);
    tb_backward(&t, 0, 0, 1.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 1, 0, "t0k-s3creT", key);
    tb_backward(&t, 0, 0, 1.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 1, 0, "t0k-s3cre", key);
    tb_backward(&t, 0, 0, 1.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 1, 0, "t0k-s3cret", key);
    tb_backward(&t, 1, 0, 1.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 1, 0, "t0k-s3cret", key);
    tb_backward(&t, 0, 0, 1.0, 1);
    send_tb(&d, &t);
    seen_wait(&d, exec, 1, 1, &req, &rep);
    tpd_serve_stop(d.sv);
    join(&d);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "malformed", &v), TP_OK);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(stored_events(&d, exec), 2);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_huge_seq_refused)
{
    /* a seq no agent reaches (2^63-1 would overflow the gap bookkeeping's
     * seq + 1) is malformed; the process's real events are kept */
    static tdaemon d;
    tp_buf req, rep;
    tb t;
    int64_t v, run = 0, exec;
    char key[64];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    tb_begin_key(&t, run, exec, 3, 0, NULL, key);
    tb_backward(&t, (uint64_t)INT64_MAX, 0, 1.0, 1);
    send_tb(&d, &t);
    for (uint64_t q = 0; q < 2; q++) {
        tb_begin_key(&t, run, exec, 3, 0, NULL, key);
        tb_backward(&t, q, 0, 1.0, 1);
        send_tb(&d, &t);
    }
    seen_wait(&d, exec, 3, 1, &req, &rep);
    tpd_serve_stop(d.sv);
    join(&d);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "malformed", &v), TP_OK);
    ck_assert_int_eq(v, 1);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_forged_batches_refused)
{
    /* only an execution the daemon created, of the run named, with its key:
     * a batch for an id not created yet does not attach to the execution
     * that gets that id later (ids are predictable) */
    static tdaemon d;
    tp_buf req, rep;
    tb t;
    int64_t v, run = 0, run2 = 0, exec, other, later;
    char key[64], okey[64], lkey[64], wrong[64];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    other = new_exec(&d, &run2, okey, &req, &rep);
    later = other + 1;
    tb_begin_key(&t, run2, later, 40, 0, NULL, key); /* not created (yet) */
    tb_backward(&t, 0, 0, 9.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, other, 41, 0, NULL, okey); /* another run's, its own key */
    tb_backward(&t, 0, 0, 9.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 42, 0, NULL, NULL); /* no key */
    tb_backward(&t, 0, 0, 9.0, 1);
    send_tb(&d, &t);
    snprintf(wrong, sizeof wrong, "%s", key); /* the last digit changed */
    wrong[TP_EXEC_KEY_LEN - 1] = wrong[TP_EXEC_KEY_LEN - 1] == '0' ? '1' : '0';
    tb_begin_key(&t, run, exec, 43, 0, NULL, wrong);
    tb_backward(&t, 0, 0, 9.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 44, 0, NULL, okey); /* another execution's key */
    tb_backward(&t, 0, 0, 9.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 45, 0, NULL, key); /* the right one */
    tb_hello(&t, 0, 0);
    tb_backward(&t, 1, 0, 1.0, 1);
    send_tb(&d, &t);
    seen_wait(&d, exec, 45, 1, &req, &rep);
    ck_assert_int_eq(new_exec(&d, &run2, lkey, &req, &rep), later);
    seen_wait(&d, later, 40, -1, &req, &rep);
    seen_wait(&d, other, 41, -1, &req, &rep);
    for (int64_t pid = 42; pid <= 44; pid++) seen_wait(&d, exec, pid, -1, &req, &rep);
    ck_assert_int_eq(stored_events(&d, exec), 2);
    ck_assert_int_eq(stored_events(&d, other), 0);
    ck_assert_int_eq(stored_events(&d, later), 0);

    /* a finished execution takes no new process; its own may still deliver */
    ck_assert(finish_call(&d, exec, 0, &req, &rep) == false);
    tb_begin_key(&t, run, exec, 46, 0, NULL, key);
    tb_backward(&t, 0, 0, 1.0, 1);
    send_tb(&d, &t);
    tb_begin_key(&t, run, exec, 45, 0, NULL, key);
    tb_backward(&t, 2, 0, 1.0, 1);
    send_tb(&d, &t);
    seen_wait(&d, exec, 45, 2, &req, &rep);
    seen_wait(&d, exec, 46, -1, &req, &rep);
    tpd_serve_stop(d.sv);
    join(&d);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "malformed", &v), TP_OK);
    ck_assert_int_eq(v, 6);
    ck_assert_int_eq(tpd_store_counter_get(d.s, "refused", &v), TP_OK);
    ck_assert_int_eq(v, 6);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_spool_forged_refused)
{
    /* the same rules for the batches of a spool file */
    static tdaemon d;
    tp_buf req, rep;
    tb t[5];
    int64_t run = 0, run2 = 0, exec, other;
    char key[64], okey[64], wrong[64], name[64], spool[700];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    other = new_exec(&d, &run2, okey, &req, &rep);
    snprintf(wrong, sizeof wrong, "%s", key);
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
    tb_begin_key(&t[0], run, exec + 100, 7, 0, NULL, key);
    tb_begin_key(&t[1], run, other, 7, 0, NULL, okey);
    tb_begin_key(&t[2], run, exec, 7, 0, NULL, NULL);
    tb_begin_key(&t[3], run, exec, 7, 0, NULL, wrong);
    tb_begin_key(&t[4], run, exec, 7, 0, NULL, key);
    for (int i = 0; i < 4; i++) tb_backward(&t[i], 0, 0, 9.0, 1);
    tb_hello(&t[4], 0, 0);
    snprintf(name, sizeof name, "%lld-7.spool", (long long)exec);
    td_path(spool, sizeof spool, d.dir, name);
    write_spool(spool, t, 5);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, spool);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "frames"), 5);
    ck_assert_int_eq(reply_int(&rep, "bad"), 4);
    ck_assert_int_eq(reply_int(&rep, "events"), 1);
    ck_assert_int_eq(stored_events(&d, exec), 1);
    ck_assert_int_eq(stored_events(&d, other), 0);
    ck_assert_int_eq(stored_events(&d, exec + 100), 0);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_control_frames)
{
    /* the frames of a spool file that a tool on another host read: every
     * batch held to the ingest socket's rules, the token included; a new
     * process of a finished execution refused; a torn last frame said */
    static tdaemon d;
    tp_buf req, rep, fr;
    tb t[3];
    int64_t run = 0, exec;
    char key[64];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tp_buf_init(&fr);
    start(&d, "t0k");
    exec = new_exec(&d, &run, key, &req, &rep);
    tb_begin_key(&t[0], run, exec, 9, 0, "t0k", key);
    tb_hello(&t[0], 0, 0);
    tb_backward(&t[0], 1, 0, 1.0, 1);
    tb_begin_key(&t[1], run, exec, 9, 0, NULL, key); /* no token */
    tb_backward(&t[1], 2, 0, 1.0, 2);
    tb_begin_key(&t[2], run, exec, 9, 0, "t0j", key); /* a wrong one */
    tb_backward(&t[2], 3, 0, 1.0, 3);
    frames_of(&fr, t, 3);
    tp_buf_append(&fr, "\x00\x00\x10", 3);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "frames"), tp_mp_bin(&req, fr.data, fr.len);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "frames"), 3);
    ck_assert_int_eq(reply_int(&rep, "bad"), 2);
    ck_assert_int_eq(reply_int(&rep, "events"), 2);
    ck_assert(reply_bool(&rep, "torn"));
    ck_assert_int_eq(stored_events(&d, exec), 2);
    /* the same frames again: stored already */
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "frames"), tp_mp_bin(&req, fr.data, fr.len);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "events"), 0);
    ck_assert_int_eq(reply_int(&rep, "dup"), 2);
    /* once the execution is finished, a process it never had is refused */
    ck_assert(finish_call(&d, exec, 0, &req, &rep) == false);
    tp_buf_reset(&fr);
    tb_begin_key(&t[0], run, exec, 10, 0, "t0k", key);
    tb_hello(&t[0], 0, 0);
    frames_of(&fr, t, 1);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "frames"), tp_mp_bin(&req, fr.data, fr.len);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "bad"), 1);
    ck_assert_int_eq(stored_events(&d, exec), 2);
    /* neither path nor frames */
    req_begin(&req, "ingest", 0);
    call_fails(&d, req.data, req.len, &rep, "missing argument 'path'");
    tp_buf_free(&fr);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_spool_late_process)
{
    /* a process that never reached the daemon before its execution ended:
     * its spool file is refused through the control socket, as a socket
     * batch would be, and stored when the database's owner ingests it
     * (trainparity-daemon ingest) */
    static tdaemon d;
    tp_buf req, rep;
    tb t[2];
    tpd_ingest *in = NULL;
    tpd_spool_result r;
    int64_t run = 0, exec;
    char key[64], name[64], spool[700], why[256];
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    ck_assert(finish_call(&d, exec, 0, &req, &rep) == false);
    tb_begin_key(&t[0], run, exec, 8, 0, NULL, key);
    tb_hello(&t[0], 0, 0);
    tb_begin_key(&t[1], run, exec, 8, 0, NULL, key);
    tb_backward(&t[1], 1, 0, 1.0, 1);
    snprintf(name, sizeof name, "%lld-8.spool", (long long)exec);
    td_path(spool, sizeof spool, d.dir, name);
    write_spool(spool, t, 2);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, spool);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "frames"), 2);
    ck_assert_int_eq(reply_int(&rep, "bad"), 2);
    ck_assert_int_eq(stored_events(&d, exec), 0);
    tpd_serve_stop(d.sv);
    join(&d);
    ck_assert_int_eq(tpd_ingest_create(&in, d.s, NULL), TP_OK);
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert_msg(r.bad == 0, "%s", why);
    ck_assert_uint_eq(r.frames, 2);
    ck_assert_uint_eq(r.events, 2);
    ck_assert_int_eq(stored_events(&d, exec), 2);
    tpd_ingest_destroy(in);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_control_reads_spool_files_only)
{
    /* ingest reads a spool file of the daemon's user and nothing else, says
     * nothing of what another file holds, and nothing at all over tcp */
    static tdaemon d;
    tp_buf req, rep;
    tb t[1];
    int64_t run = 0, exec;
    char key[64], name[64], path[700], good[700], err[512];
    const char *refused[5];
    FILE *f;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    exec = new_exec(&d, &run, key, &req, &rep);
    snprintf(name, sizeof name, "%lld-9.spool", (long long)exec);
    td_path(good, sizeof good, d.dir, name);
    tb_begin_key(&t[0], run, exec, 9, 0, NULL, key);
    tb_hello(&t[0], 0, 0);
    write_spool(good, t, 1);

    td_path(path, sizeof path, d.dir, "secret.txt"); /* 'ABCD' = 1094861636 */
    f = fopen(path, "wb");
    fputs("ABCDEFGH-the-content", f);
    fclose(f);
    refused[0] = strdup(path);
    td_path(path, sizeof path, d.dir, "1-2.spool"); /* a link to a good spool file */
    ck_assert_int_eq(symlink(good, path), 0);
    refused[1] = strdup(path);
    td_path(path, sizeof path, d.dir, "3-4.spool"); /* a directory */
    ck_assert_int_eq(mkdir(path, 0700), 0);
    refused[2] = strdup(path);
    td_path(path, sizeof path, d.dir, "nothing-5.spool"); /* not the agent's name */
    ck_assert_int_eq(link(good, path), 0);
    refused[3] = strdup(path);
    refused[4] = "/etc/passwd";
    for (int i = 0; i < 5; i++) {
        req_begin(&req, "ingest", 1);
        tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, refused[i]);
        call_fails(&d, req.data, req.len, &rep, "not a spool file");
        reply_str(&rep, "error", err, sizeof err);
        ck_assert_msg(strstr(err, "ABCD") == NULL && strstr(err, "1094861636") == NULL &&
                          strstr(err, "root") == NULL,
                      "%s", err);
        if (i < 4) free((char *)refused[i]);
    }
    /* a spool file's content is never quoted either */
    snprintf(name, sizeof name, "%lld-10.spool", (long long)exec);
    td_path(path, sizeof path, d.dir, name);
    f = fopen(path, "wb");
    fputs("ABCDEFGH-the-content", f);
    fclose(f);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, path);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "bad"), 1);
    reply_str(&rep, "reason", err, sizeof err);
    ck_assert_msg(strstr(err, "1094861636") == NULL && strstr(err, "ABCD") == NULL, "%s", err);
    req_begin(&req, "ingest", 1);
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, good);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "events"), 1);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_replies_are_utf8)
{
    /* what a request carries comes back escaped: never invalid UTF-8, never
     * a control character */
    static tdaemon d;
    tp_buf req, rep;
    char text[4096];
    int64_t run;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start(&d, NULL);
    tp_buf_reset(&req);
    tp_mp_map(&req, 1);
    tp_mp_cstr(&req, "cmd"), tp_mp_str(&req, "x\xff\xc3(\x1b[2J\xc2\x9b\xed\xa0\x80", 13);
    call_fails(&d, req.data, req.len, &rep, "unknown command");
    ck_assert(reply_strings_ok(&rep));
    reply_str(&rep, "error", text, sizeof text);
    ck_assert_msg(strstr(text, "x\xef\xbf\xbd\xef\xbf\xbd(\\u001b[2J\\u009b\xef\xbf\xbd"), "%s",
                  text);
    tp_buf_reset(&req);
    tp_mp_map(&req, 3);
    tp_mp_cstr(&req, "cmd"), tp_mp_cstr(&req, "ping");
    tp_mp_str(&req, "\xfe\x07", 2), tp_mp_int(&req, 1);
    tp_mp_str(&req, "\xfe\x07", 2), tp_mp_int(&req, 2);
    call_fails(&d, req.data, req.len, &rep, "duplicate key");
    ck_assert(reply_strings_ok(&rep));
    /* a run's name, stored as given, comes back clean in query text */
    req_begin(&req, "run.create", 2);
    tp_mp_cstr(&req, "name"), tp_mp_str(&req, "n\xff\x1b]0;x\x07", 8);
    tp_mp_cstr(&req, "check"), tp_mp_cstr(&req, "record");
    call_ok(&d, &req, &rep);
    run = reply_int(&rep, "run");
    req_begin(&req, "query", 1);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "runs");
    call_ok(&d, &req, &rep);
    ck_assert(reply_strings_ok(&rep));
    req_begin(&req, "query", 2);
    tp_mp_cstr(&req, "what"), tp_mp_cstr(&req, "run");
    tp_mp_cstr(&req, "id"), tp_mp_int(&req, run);
    call_ok(&d, &req, &rep);
    ck_assert(reply_strings_ok(&rep));
    reply_str(&rep, "text", text, sizeof text);
    ck_assert_msg(strstr(text, "\n"), "%s", text); /* newlines stay */
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_tcp_needs_token)
{
    static tdaemon d;
    char url[64], why[512] = "";
    const char *listen[1] = {url};
    tpd_serve_opts o;
    tpd_serve *sv = NULL;
    tpd_store *s = NULL;
    tp_buf req, rep;
    int port = 20000 + (int)(getpid() % 20000);
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    td_make(d.dir, sizeof d.dir);
    td_path(d.db, sizeof d.db, d.dir, "runs.db");
    ck_assert_int_eq(tpd_store_open(&s, d.db, 0, why, sizeof why), TP_OK);
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    ck_assert_int_eq(tpd_serve_open(&sv, s, &o, why, sizeof why), TP_EINVAL);
    ck_assert_ptr_null(sv);
    ck_assert_msg(strstr(why, "token"), "%s", why);
    tpd_store_close(s);
    td_remove(d.dir);

    /* with a token, the derived tcp control URL demands it too */
    tp_buf_init(&req);
    tp_buf_init(&rep);
    start_at(&d, url, "t0k", NULL);
    req_begin(&req, "ping", 0);
    call_fails(&d, req.data, req.len, &rep, "token");
    req_begin(&req, "ping", 1);
    tp_mp_cstr(&req, "tok"), tp_mp_cstr(&req, "t0j");
    call_fails(&d, req.data, req.len, &rep, "token");
    req_begin(&req, "ping", 1);
    tp_mp_cstr(&req, "tok"), tp_mp_cstr(&req, "t0k");
    call_ok(&d, &req, &rep);
    /* a control socket others can reach reads no file; it takes frames */
    req_begin(&req, "ingest", 2);
    tp_mp_cstr(&req, "tok"), tp_mp_cstr(&req, "t0k");
    tp_mp_cstr(&req, "path"), tp_mp_cstr(&req, "/etc/passwd");
    call_fails(&d, req.data, req.len, &rep, "local control socket only");
    req_begin(&req, "ingest", 2);
    tp_mp_cstr(&req, "tok"), tp_mp_cstr(&req, "t0k");
    tp_mp_cstr(&req, "frames"), tp_mp_bin(&req, "\x00\x00\x00\x01\xc1", 5);
    call_ok(&d, &req, &rep);
    ck_assert_int_eq(reply_int(&rep, "frames"), 1);
    ck_assert_int_eq(reply_int(&rep, "bad"), 1);
    tp_buf_free(&req);
    tp_buf_free(&rep);
    finish(&d);
}
END_TEST

START_TEST(test_ingest_ipc_directory_private)
{
    static tdaemon d;
    char base[512], sub[700], url[800], why[512] = "";
    const char *listen[1] = {url};
    struct stat sb;
    tpd_serve_opts o;
    tpd_serve *sv = NULL;
    tpd_store *s = NULL;
    mode_t mode;
    td_make(base, sizeof base);
    td_path(d.db, sizeof d.db, base, "runs.db");
    ck_assert_int_eq(tpd_store_open(&s, d.db, 0, why, sizeof why), TP_OK);
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    /* a missing directory is created 0700 */
    td_path(sub, sizeof sub, base, "a/b");
    snprintf(url, sizeof url, "ipc://%s/ingest.ipc", sub);
    ck_assert_int_eq(tpd_serve_open(&sv, s, &o, why, sizeof why), TP_OK);
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0700);
    tpd_serve_close(sv);
    /* an existing one keeps its mode, and so do its parents */
    chmod(sub, 0755);
    ck_assert_int_eq(stat(base, &sb), 0);
    mode = sb.st_mode & 07777;
    ck_assert_int_eq(tpd_serve_open(&sv, s, &o, why, sizeof why), TP_OK);
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0755);
    ck_assert_int_eq(stat(base, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, mode);
    tpd_serve_close(sv);
    /* one anybody may write into is refused, and left as it is */
    chmod(sub, 0777);
    sv = NULL;
    ck_assert_int_eq(tpd_serve_open(&sv, s, &o, why, sizeof why), TP_EIO);
    ck_assert_ptr_null(sv);
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0777);
    /* a shared (sticky) one is refused */
    chmod(sub, 01777);
    sv = NULL;
    ck_assert_int_eq(tpd_serve_open(&sv, s, &o, why, sizeof why), TP_EIO);
    ck_assert_ptr_null(sv);
    ck_assert_msg(strstr(why, "shared"), "%s", why);
    tpd_store_close(s);
    td_remove(base);
}
END_TEST

START_TEST(test_ingest_default_listen)
{
    char out[1024], dir[512], db[600], want[1200];
    td_make(dir, sizeof dir);
    td_path(db, sizeof db, dir, "runs.db");
    ck_assert_int_eq(tpd_serve_default_listen(db, out, sizeof out), TP_OK);
    snprintf(want, sizeof want, "ipc://%s/ingest.ipc", dir);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(tpd_serve_default_listen("/nonexistent/x/runs.db", out, sizeof out), TP_EIO);
    td_remove(dir);
}
END_TEST

static Suite *ingest_suite(void)
{
    Suite *s = suite_create("ingest");
    TCase *tc = tcase_create("socket");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_ingest_socket_end_to_end);
    tcase_add_test(tc, test_ingest_many_batches_few_transactions);
    tcase_add_test(tc, test_ingest_stop_commits_what_arrived);
    tcase_add_test(tc, test_ingest_token);
    tcase_add_test(tc, test_ingest_huge_seq_refused);
    tcase_add_test(tc, test_ingest_forged_batches_refused);
    tcase_add_test(tc, test_ingest_spool_forged_refused);
    tcase_add_test(tc, test_ingest_spool_late_process);
    tcase_add_test(tc, test_ingest_control_frames);
    tcase_add_test(tc, test_ingest_control_reads_spool_files_only);
    tcase_add_test(tc, test_ingest_replies_are_utf8);
    tcase_add_test(tc, test_ingest_tcp_needs_token);
    tcase_add_test(tc, test_ingest_ipc_directory_private);
    tcase_add_test(tc, test_ingest_default_listen);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ingest_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
