/* SPDX-License-Identifier: MIT
 * backlog_test.c -- batches the database could not store (daemon/ingest/backlog.c)
 * and the serve loop that keeps and retries them (daemon/serve/serve.c).
 *
 * The backlog alone: order, the bound, malformed batches, and counting each
 * event once however often it was sent.  The serve loop under a real fault:
 * the test process's own file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored)
 * is lowered to the write-ahead log's size, so SQLite's writes fail with
 * EFBIG as on a full disk; the serve loop runs in a thread, agents and
 * tools are real nng sockets, the database a real file. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ingest/backlog.h"
#include "daemon/serve/serve.h"
#include "daemon/store/store.h"
#include "proto/control.h"
#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"

/* ---- the backlog alone ---- */

/* batch returns a message of process pid of exec with seqs first..last
 * (one backward event each). */
static nng_msg *batch(int64_t exec, int64_t pid, uint64_t first, uint64_t last)
{
    nng_msg *m;
    tb t;
    tb_begin(&t, 1, exec, pid, 0, NULL);
    for (uint64_t s = first; s <= last; s++) tb_backward(&t, s, (int64_t)s, 1.0, 1);
    tb_end(&t);
    ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
    ck_assert_int_eq(nng_msg_append(m, t.buf.data, t.buf.len), 0);
    tb_free(&t);
    return m;
}

/* seqs_of reads the first seq of m's batch. */
static uint64_t first_seq(nng_msg *m)
{
    tp_batch b;
    char why[128];
    uint64_t s;
    ck_assert_int_eq(tp_batch_decode(nng_msg_body(m), nng_msg_len(m), &b, why, sizeof why), TP_OK);
    s = b.ev[0].seq;
    tp_batch_free(&b);
    return s;
}

/* stored_below: the store has every seq below *arg. */
static int64_t stored_below(void *arg, int64_t exec, int64_t pid, int64_t lo, int64_t hi)
{
    int64_t below = *(int64_t *)arg;
    if (hi < below) return hi - lo + 1;
    return lo < below ? below - lo : 0;
}

START_TEST(test_backlog_order_and_bound)
{
    tpd_backlog *b;
    tpd_backlog_info in;
    char why[256];
    nng_msg *m = batch(1, 10, 0, 3);
    size_t one = nng_msg_len(m);
    ck_assert_int_eq(tpd_backlog_create(&b, 2 * one), TP_OK);
    ck_assert_int_eq(tpd_backlog_push(b, m, "database: disk I/O error", why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 4, 7), NULL, why, sizeof why), TP_OK);
    /* full: the third cannot wait and is lost, with the reason */
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 8, 11), NULL, why, sizeof why), TP_EFULL);
    ck_assert_ptr_nonnull(strstr(why, "disk I/O error"));
    ck_assert_uint_eq(tpd_backlog_waiting(b), 2);
    tpd_backlog_exec(b, 1, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting, 8);
    ck_assert_int_eq(in.lost, 4);
    ck_assert_ptr_nonnull(in.why);
    ck_assert_ptr_nonnull(strstr(in.why, "backlog was full"));
    tpd_backlog_exec(b, 2, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting + in.lost, 0);
    ck_assert_ptr_null(in.why);
    /* retried in order: the first taken into a transaction, the second
     * refused for good (lost), then the first commits */
    ck_assert_uint_eq(first_seq(tpd_backlog_next(b)), 0);
    tpd_backlog_take(b);
    ck_assert_uint_eq(first_seq(tpd_backlog_next(b)), 4);
    tpd_backlog_drop(b, true, "database: constraint failed");
    ck_assert_ptr_null(tpd_backlog_next(b));
    ck_assert_uint_eq(tpd_backlog_held(b), 1);
    ck_assert_uint_eq(tpd_backlog_committed(b), 1);
    ck_assert_uint_eq(tpd_backlog_waiting(b), 0);
    ck_assert_uint_eq(tpd_backlog_bytes(b), 0);
    tpd_backlog_exec(b, 1, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting, 0);
    ck_assert_int_eq(in.lost, 8);
    tpd_backlog_destroy(b);
}
END_TEST

START_TEST(test_backlog_counts_each_event_once)
{
    tpd_backlog *b;
    tpd_backlog_info in;
    char why[256];
    int64_t below = 0;
    ck_assert_int_eq(tpd_backlog_create(&b, 0), TP_OK);
    /* an agent sends unacknowledged batches again: 0..3 twice, 4..5 once */
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 0, 3), "full", why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 4, 5), NULL, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 0, 3), NULL, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 11, 0, 1), NULL, why, sizeof why), TP_OK);
    tpd_backlog_exec(b, 1, stored_below, &below, &in);
    ck_assert_int_eq(in.waiting, 8);
    ck_assert_int_eq(in.lost, 0);
    ck_assert_str_eq(in.why, "full");
    /* a copy lost while another waits is not lost */
    ck_assert_int_eq(tpd_backlog_lose(b, batch(1, 10, 2, 5), "refused"), TP_OK);
    tpd_backlog_exec(b, 1, stored_below, &below, &in);
    ck_assert_int_eq(in.waiting, 8);
    ck_assert_int_eq(in.lost, 0);
    /* what the store has (seqs below 3, of both processes) is not missing */
    below = 3;
    tpd_backlog_exec(b, 1, stored_below, &below, &in);
    ck_assert_int_eq(in.waiting, 3);
    /* once nothing waits, the lost copy's events the store lacks count */
    ck_assert_uint_eq(tpd_backlog_lose_all(b, "stopped"), 4);
    tpd_backlog_exec(b, 1, stored_below, &below, &in);
    ck_assert_int_eq(in.waiting, 0);
    ck_assert_int_eq(in.lost, 3);
    ck_assert_ptr_nonnull(in.why);
    below = 6;
    tpd_backlog_exec(b, 1, stored_below, &below, &in);
    ck_assert_int_eq(in.lost, 0);
    ck_assert_ptr_null(in.why);
    tpd_backlog_destroy(b);
}
END_TEST

START_TEST(test_backlog_malformed_not_kept)
{
    tpd_backlog *b;
    tpd_backlog_info in;
    char why[256] = "";
    nng_msg *m;
    ck_assert_int_eq(tpd_backlog_create(&b, 0), TP_OK);
    ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
    ck_assert_int_eq(nng_msg_append(m, "\x81\xa1v\x01", 4), 0);
    ck_assert_int_eq(tpd_backlog_push(b, m, "full", why, sizeof why), TP_EPROTO);
    ck_assert(why[0] != '\0');
    ck_assert_uint_eq(tpd_backlog_waiting(b), 0);
    tpd_backlog_exec(b, 1, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting + in.lost, 0);
    tpd_backlog_destroy(b);
}
END_TEST

START_TEST(test_backlog_abandoned_transaction_waits_first)
{
    tpd_backlog *b;
    tpd_backlog_info in;
    char why[256];
    ck_assert_int_eq(tpd_backlog_create(&b, 0), TP_OK);
    /* stored in the open transaction: held, not waiting */
    ck_assert_int_eq(tpd_backlog_reserve(b), TP_OK);
    tpd_backlog_hold(b, batch(1, 10, 0, 1), 1, 10, 2);
    ck_assert_int_eq(tpd_backlog_reserve(b), TP_OK);
    tpd_backlog_hold(b, batch(1, 10, 2, 3), 1, 10, 2);
    ck_assert_uint_eq(tpd_backlog_waiting(b), 0);
    ck_assert_ptr_null(tpd_backlog_next(b));
    /* its commit fails: both wait, first in line, then what came after */
    tpd_backlog_abandoned(b, "database: disk I/O error");
    ck_assert_int_eq(tpd_backlog_push(b, batch(1, 10, 4, 5), NULL, why, sizeof why), TP_OK);
    ck_assert_uint_eq(tpd_backlog_waiting(b), 3);
    tpd_backlog_exec(b, 1, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting, 6);
    ck_assert_str_eq(in.why, "database: disk I/O error");
    ck_assert_uint_eq(first_seq(tpd_backlog_next(b)), 0);
    tpd_backlog_take(b);
    /* a malformed one dropped behind a held one keeps the order */
    ck_assert_uint_eq(first_seq(tpd_backlog_next(b)), 2);
    tpd_backlog_drop(b, false, "refused");
    ck_assert_uint_eq(first_seq(tpd_backlog_next(b)), 4);
    tpd_backlog_take(b);
    ck_assert_uint_eq(tpd_backlog_committed(b), 2);
    tpd_backlog_exec(b, 1, NULL, NULL, &in);
    ck_assert_int_eq(in.waiting + in.lost, 0);
    /* the wait's clock starts at the first question */
    ck_assert(tpd_backlog_waited(b, 1) == 0);
    ck_assert(tpd_backlog_waited(b, 1) >= 0);
    tpd_backlog_destroy(b);
}
END_TEST

/* ---- the serve loop under a full disk ---- */

typedef struct tdaemon {
    char dir[512], db[600], url[700];
    tpd_store *s;
    tpd_serve *sv;
    pthread_t th;
    nng_socket push, req;
    tp_buf q, r;
} tdaemon;

static void log_quiet(void *arg, const char *line)
{
    (void)arg, (void)line;
}

static void *serve_thread(void *arg)
{
    tdaemon *d = arg;
    tpd_serve_run(d->sv, NULL, 0);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void start(tdaemon *d)
{
    const char *listen[1];
    tpd_serve_opts o;
    char why[512] = "";
    td_make(d->dir, sizeof d->dir);
    td_path(d->db, sizeof d->db, d->dir, "runs.db");
    snprintf(d->url, sizeof d->url, "ipc://%s/ingest.ipc", d->dir);
    ck_assert_int_eq(tpd_store_open(&d->s, d->db, 0, why, sizeof why), TP_OK);
    listen[0] = d->url;
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    o.log = log_quiet;
    ck_assert_int_eq(tpd_serve_open(&d->sv, d->s, &o, why, sizeof why), TP_OK);
    ck_assert_int_eq(pthread_create(&d->th, NULL, serve_thread, d), 0);
    ck_assert_int_eq(nng_push0_open(&d->push), 0);
    ck_assert_int_eq(nng_socket_set_ms(d->push, NNG_OPT_SENDTIMEO, 5000), 0);
    ck_assert_int_eq(nng_dial(d->push, d->url, NULL, 0), 0);
    ck_assert_int_eq(nng_req0_open(&d->req), 0);
    ck_assert_int_eq(nng_socket_set_ms(d->req, NNG_OPT_RECVTIMEO, 5000), 0);
    ck_assert_int_eq(nng_dial(d->req, tpd_serve_control_url(d->sv), NULL, 0), 0);
    tp_buf_init(&d->q);
    tp_buf_init(&d->r);
}

/* finish stops the daemon and returns its counters. */
static void finish(tdaemon *d, tpd_serve_stats *st)
{
    nng_close(d->push);
    nng_close(d->req);
    tpd_serve_stop(d->sv);
    pthread_join(d->th, NULL);
    tpd_serve_get_stats(d->sv, st);
    tpd_serve_close(d->sv);
    tpd_store_close(d->s);
    tp_buf_free(&d->q);
    tp_buf_free(&d->r);
    td_remove(d->dir);
}

/* req starts a request for cmd with nargs more pairs. */
static tp_buf *req(tdaemon *d, const char *cmd, uint32_t nargs)
{
    tp_buf_reset(&d->q);
    tp_mp_map(&d->q, nargs + 1);
    tp_mp_cstr(&d->q, "cmd");
    tp_mp_cstr(&d->q, cmd);
    return &d->q;
}

/* field finds key in the reply; false when absent. */
static bool field(tdaemon *d, const char *key, tp_mpr *v)
{
    tp_err rc = tp_mp_map_find(d->r.data, d->r.len, key, v);
    ck_assert_msg(rc == TP_OK || rc == TP_ENOENT, "the reply is not a map");
    return rc == TP_OK;
}

static int64_t get_int(tdaemon *d, const char *key)
{
    tp_mpr v;
    int64_t i;
    ck_assert_msg(field(d, key, &v), "no '%s' in the reply", key);
    ck_assert_int_eq(tp_mpr_int(&v, &i), TP_OK);
    return i;
}

static bool get_bool(tdaemon *d, const char *key)
{
    tp_mpr v;
    bool b;
    ck_assert_msg(field(d, key, &v), "no '%s' in the reply", key);
    ck_assert_int_eq(tp_mpr_bool(&v, &b), TP_OK);
    return b;
}

static void get_str(tdaemon *d, const char *key, char *out, size_t n)
{
    tp_mpr v;
    const char *s;
    uint32_t len;
    ck_assert_msg(field(d, key, &v), "no '%s' in the reply", key);
    ck_assert_int_eq(tp_mpr_str(&v, &s, &len), TP_OK);
    snprintf(out, n, "%.*s", (int)len, s);
}

/* call sends the request and checks that the command succeeded. */
static void call(tdaemon *d)
{
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    ck_assert(!d->q.oom);
    ck_assert_int_eq(nng_send(d->req, d->q.data, d->q.len, 0), 0);
    ck_assert_int_eq(nng_recv(d->req, &buf, &len, NNG_FLAG_ALLOC), 0);
    tp_buf_reset(&d->r);
    tp_buf_append(&d->r, buf, len);
    nng_free(buf, len);
    if (!get_bool(d, "ok")) get_str(d, "error", err, sizeof err);
    ck_assert_msg(get_bool(d, "ok"), "command failed: %s", err);
}

/* new_exec creates a run and an execution; its key goes to key. */
static int64_t new_exec(tdaemon *d, int64_t *run, char key[TP_EXEC_KEY_LEN + 1])
{
    tp_buf *q = req(d, "run.create", 1);
    tp_mp_cstr(q, "check"), tp_mp_cstr(q, "record");
    call(d);
    *run = get_int(d, "run");
    q = req(d, "exec.create", 2);
    tp_mp_cstr(q, "run"), tp_mp_int(q, *run);
    tp_mp_cstr(q, "role"), tp_mp_cstr(q, "main");
    call(d);
    get_str(d, "key", key, TP_EXEC_KEY_LEN + 1);
    return get_int(d, "exec");
}

/* send_steps sends batches of process pid: seqs from *seq on, each batch a
 * snapshot of 64 leaves and a backward. */
static void send_steps(tdaemon *d, int64_t run, int64_t exec, const char *key, int64_t pid,
                       uint64_t *seq, int nbatches)
{
    for (int i = 0; i < nbatches; i++) {
        tb t;
        tb_begin_key(&t, run, exec, pid, 0, NULL, key);
        if (*seq == 0) tb_hello(&t, (*seq)++, 0);
        tb_snapshot(&t, *seq, (int64_t)*seq, 64);
        (*seq)++;
        tb_backward(&t, *seq, (int64_t)*seq, 1.0, 1);
        (*seq)++;
        tb_end(&t);
        ck_assert_int_eq(nng_send(d->push, t.buf.data, t.buf.len, 0), 0);
        tb_free(&t);
    }
}

static int64_t seen(tdaemon *d, int64_t exec, int64_t pid)
{
    tp_buf *q = req(d, "seen", 2);
    tp_mp_cstr(q, "exec"), tp_mp_int(q, exec);
    tp_mp_cstr(q, "pid"), tp_mp_int(q, pid);
    call(d);
    return get_int(d, "seq");
}

/* seen_wait waits (at most 10 s) until seen says want. */
static void seen_wait(tdaemon *d, int64_t exec, int64_t pid, int64_t want)
{
    double until = now_s() + 10;
    int64_t got = -2;
    while (now_s() < until && (got = seen(d, exec, pid)) != want) usleep(5000);
    ck_assert_msg(got == want, "seen: seq %lld, want %lld", (long long)got, (long long)want);
}

/* exec_finish asks exec.finish once; returns pending. */
static bool exec_finish(tdaemon *d, int64_t exec, int64_t wait_ms)
{
    tp_buf *q = req(d, "exec.finish", 3);
    tp_mp_cstr(q, "exec"), tp_mp_int(q, exec);
    tp_mp_cstr(q, "status"), tp_mp_int(q, 0);
    tp_mp_cstr(q, "wait_ms"), tp_mp_int(q, wait_ms);
    call(d);
    return get_bool(d, "pending");
}

/* cap lets this process write no file past the write-ahead log's end:
 * every commit fails as on a full disk, until uncap. */
static void cap(const tdaemon *d)
{
    char wal[700];
    struct stat sb;
    struct rlimit rl;
    snprintf(wal, sizeof wal, "%s-wal", d->db);
    ck_assert_int_eq(stat(wal, &sb), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
    rl.rlim_cur = (rlim_t)sb.st_size;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static void uncap(void)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

START_TEST(test_backlog_serve_disk_full)
{
    tdaemon d;
    tpd_serve_stats st;
    char key[TP_EXEC_KEY_LEN + 1], why[512];
    int64_t run, exec, before;
    uint64_t seq = 0;
    double t0;
    signal(SIGXFSZ, SIG_IGN);
    start(&d);
    exec = new_exec(&d, &run, key);
    send_steps(&d, run, exec, key, 100, &seq, 20); /* the log grows past 64 KiB */
    seen_wait(&d, exec, 100, (int64_t)seq - 1);
    before = (int64_t)seq - 1;

    /* the disk fills: the batches wait, unacknowledged, and exec.finish
     * waits for them */
    cap(&d);
    send_steps(&d, run, exec, key, 100, &seq, 10);
    send_steps(&d, run, exec, key, 101, &(uint64_t){0}, 5); /* a process not stored at all */
    usleep(500 * 1000);
    ck_assert_int_eq(seen(&d, exec, 100), before);
    ck_assert_int_eq(seen(&d, exec, 101), -1);
    ck_assert(exec_finish(&d, exec, 60000));

    /* it frees: everything is stored, in order, and nothing was lost */
    uncap();
    seen_wait(&d, exec, 100, (int64_t)seq - 1);
    seen_wait(&d, exec, 101, 10);
    /* (no wait for byes: these processes send none) */
    ck_assert(!exec_finish(&d, exec, 0));
    ck_assert_int_eq(get_int(&d, "unstored"), 0);
    ck_assert(!field(&d, "unstored_why", &(tp_mpr){0}));
    ck_assert_int_eq(get_int(&d, "processes"), 2);
    ck_assert_int_eq(get_int(&d, "events"), (int64_t)seq + 11);

    /* full for good: the wait ends with the events named, and the reason */
    exec = new_exec(&d, &run, key);
    seq = 0;
    send_steps(&d, run, exec, key, 200, &seq, 20);
    seen_wait(&d, exec, 200, (int64_t)seq - 1);
    cap(&d);
    send_steps(&d, run, exec, key, 200, &seq, 3);
    usleep(300 * 1000);
    t0 = now_s();
    while (exec_finish(&d, exec, 500)) {
        ck_assert(now_s() - t0 < 10);
        usleep(20 * 1000);
    }
    ck_assert(now_s() - t0 >= 0.4);
    ck_assert(!get_bool(&d, "complete"));
    ck_assert_int_eq(get_int(&d, "unstored"), 6);
    get_str(&d, "unstored_why", why, sizeof why);
    ck_assert_msg(strstr(why, "disk I/O error") != NULL, "reason: %s", why);
    /* the daemon serves on, and stores them once it can */
    req(&d, "ping", 0);
    call(&d);
    uncap();
    seen_wait(&d, exec, 200, (int64_t)seq - 1);
    finish(&d, &st);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert_uint_eq(st.waiting, 0);
    ck_assert_uint_eq(st.stored, st.messages);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backlog");
    TCase *tc = tcase_create("backlog");
    SRunner *sr;
    int failed;
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_backlog_order_and_bound);
    tcase_add_test(tc, test_backlog_counts_each_event_once);
    tcase_add_test(tc, test_backlog_malformed_not_kept);
    tcase_add_test(tc, test_backlog_abandoned_transaction_waits_first);
    tcase_add_test(tc, test_backlog_serve_disk_full);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
