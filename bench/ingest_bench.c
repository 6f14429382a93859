/* SPDX-License-Identifier: MIT
 * ingest_bench.c -- ingest throughput: realistic batches (a snapshot of 200
 * tensor leaves, a backward, a step pre with 200 gradient leaves and a step
 * post, i.e. one optimizer step) stored into a real database, first by
 * calling the ingest code in-process, then pushed through a real ipc://
 * socket into a real serve loop.  The ratio shows what the socket costs.
 *
 * A second workload of small batches (a backward, a step pre and post
 * without leaves, a DataLoader batch) shows the per-message cost.
 *
 * usage: ingest_bench [BATCHES]   (default 1500 large, 20x as many small;
 *                                  about 15 s in all) */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ingest/ingest.h"
#include "daemon/serve/serve.h"
#include "daemon/store/store.h"
#include "tests/unit/batches.h"

#define LEAVES           200
#define EVENTS_PER_BATCH 4
#define PID              4242
#define KEY              "0123456789abcdef0123456789abcdef" /* execution 1's, set below */

typedef struct result {
    double secs;
    uint64_t events, bytes;
    uint64_t commits; /* socket: transactions the serve loop committed */
} result;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "ingest_bench: %s: %s\n", what, why);
    exit(1);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* scratch makes a fresh directory and a database path in it. */
static void scratch(char *dir, size_t dn, char *db, size_t bn)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dn, "%s/tpd-bench-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) die("mkdtemp", dir);
    snprintf(db, bn, "%s/runs.db", dir);
}

/* build encodes n batches of one optimizer step each, seqs consecutive:
 * large ones (leaves) or small ones (no leaves). */
static tb *build(int n, bool large)
{
    tb *b = calloc((size_t)n, sizeof *b);
    for (int i = 0; i < n; i++) {
        uint64_t seq = (uint64_t)i * EVENTS_PER_BATCH;
        tb_begin_key(&b[i], 1, 1, PID, 0, NULL, KEY);
        if (large)
            tb_snapshot(&b[i], seq, i, LEAVES);
        else
            tb_batchev(&b[i], seq, i);
        tb_backward(&b[i], seq + 1, i, 1.0 / (i + 1), 1);
        tb_step(&b[i], seq + 2, i, true, large ? LEAVES : 0, 1.5, 0.1);
        tb_step(&b[i], seq + 3, i, false, 0, 0.01, 0.1);
        tb_end(&b[i]);
        if (b[i].buf.oom) die("build", "out of memory");
    }
    return b;
}

/* open_store opens a fresh database holding run 1 and its execution 1,
 * whose key is KEY (the daemon stores only batches with their execution's
 * key; a fixed one lets the batches be built once). */
static tpd_store *open_store(const char *db)
{
    tpd_store *s = NULL;
    char why[256], key[TP_EXEC_KEY_LEN + 1];
    int64_t run, exec;
    if (tpd_store_open(&s, db, 0, why, sizeof why) != TP_OK) die(db, why);
    if (tpd_store_run_create(s, NULL, "record", NULL, &run) != TP_OK ||
        tpd_store_exec_create_keyed(s, run, "main", NULL, &exec, key) != TP_OK || exec != 1 ||
        sqlite3_exec(tpd_store_db(s), "UPDATE executions SET key = '" KEY "'", NULL, NULL, NULL) !=
            SQLITE_OK)
        die(db, "cannot create execution 1");
    return s;
}

/* direct stores the batches by calling the ingest code, 256 per transaction. */
static result direct(const tb *b, int n)
{
    char dir[512], db[600], why[256];
    tpd_store *s;
    tpd_ingest *in = NULL;
    result r = {0, 0, 0, 0};
    double t0;
    scratch(dir, sizeof dir, db, sizeof db);
    s = open_store(db);
    if (tpd_ingest_create(&in, s, NULL) != TP_OK) die("ingest", "create");
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        tpd_ingest_result res;
        if (i % 256 == 0 && (i == 0 || tpd_store_commit(s) == TP_OK)) tpd_store_begin(s);
        if (tpd_ingest_message(in, b[i].buf.data, b[i].buf.len, &res, why, sizeof why) != TP_OK)
            die("ingest", why);
        r.events += res.events;
        r.bytes += b[i].buf.len;
    }
    if (tpd_store_commit(s) != TP_OK) die("commit", tpd_store_errmsg(s));
    r.secs = now_s() - t0;
    tpd_ingest_destroy(in);
    tpd_store_close(s);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}

static void *serve_thread(void *arg)
{
    tpd_serve_run(arg, NULL, 0);
    return NULL;
}

/* seen asks the daemon for the highest contiguous seq of the process. */
static int64_t seen(nng_socket req)
{
    tp_buf q;
    void *rep = NULL;
    size_t len = 0;
    tp_mpr r;
    uint32_t n;
    int64_t seq = -1;
    tp_buf_init(&q);
    tp_mp_map(&q, 3);
    tp_mp_cstr(&q, "cmd"), tp_mp_cstr(&q, "seen");
    tp_mp_cstr(&q, "exec"), tp_mp_int(&q, 1);
    tp_mp_cstr(&q, "pid"), tp_mp_int(&q, PID);
    if (nng_send(req, q.data, q.len, 0) != 0 || nng_recv(req, &rep, &len, NNG_FLAG_ALLOC) != 0)
        die("control", "no reply");
    tp_mpr_init(&r, rep, len);
    if (tp_mpr_map(&r, &n) == TP_OK) {
        for (uint32_t i = 0; i < n; i++) {
            const char *k;
            uint32_t kl;
            if (tp_mpr_str(&r, &k, &kl) != TP_OK) break;
            if (tp_mp_str_eq(k, kl, "seq"))
                tp_mpr_int(&r, &seq);
            else
                tp_mpr_skip(&r);
        }
    }
    nng_free(rep, len);
    tp_buf_free(&q);
    return seq;
}

/* socket_run pushes the batches through ipc:// into a serve loop and waits
 * until the daemon reports the last seq stored. */
static result socket_run(const tb *b, int n)
{
    char dir[512], db[600], url[700], why[512];
    const char *listen[1] = {url};
    tpd_serve_opts o;
    tpd_serve *sv = NULL;
    tpd_store *s;
    pthread_t th;
    nng_socket push, req;
    tpd_serve_stats st;
    result r = {0, 0, 0, 0};
    int64_t last = (int64_t)n * EVENTS_PER_BATCH - 1;
    double t0;
    scratch(dir, sizeof dir, db, sizeof db);
    snprintf(url, sizeof url, "ipc://%s/ingest.ipc", dir);
    s = open_store(db);
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    if (tpd_serve_open(&sv, s, &o, why, sizeof why) != TP_OK) die("serve", why);
    pthread_create(&th, NULL, serve_thread, sv);
    if (nng_push0_open(&push) != 0 || nng_dial(push, url, NULL, 0) != 0) die("push", url);
    nng_socket_set_ms(push, NNG_OPT_SENDTIMEO, 10000);
    nng_socket_set_int(push, NNG_OPT_SENDBUF, 1024);
    if (nng_req0_open(&req) != 0 || nng_dial(req, tpd_serve_control_url(sv), NULL, 0) != 0)
        die("req", tpd_serve_control_url(sv));
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 10000);
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (nng_send(push, b[i].buf.data, b[i].buf.len, 0) != 0) die("send", "timed out");
        r.bytes += b[i].buf.len;
    }
    while (seen(req) != last) {
        struct timespec ts = {0, 20000000}; /* 20 ms: each request commits */
        nanosleep(&ts, NULL);
    }
    r.secs = now_s() - t0;
    r.events = (uint64_t)n * EVENTS_PER_BATCH;
    nng_close(push);
    nng_close(req);
    tpd_serve_stop(sv);
    pthread_join(th, NULL);
    tpd_serve_get_stats(sv, &st);
    r.commits = st.commits;
    tpd_serve_close(sv);
    tpd_store_close(s);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}

static void report(const char *name, result r, int n, int leaves)
{
    printf("  %-7s %6d batches %7.1f MB in %5.2f s: %8.0f batches/s %9.0f events/s"
           " %9.0f leaves/s %6.1f MB/s",
           name, n, r.bytes / 1e6, r.secs, n / r.secs, r.events / r.secs,
           (double)n * leaves / r.secs, r.bytes / 1e6 / r.secs);
    if (r.commits) printf(", %.1f batches/commit", (double)n / r.commits);
    printf("\n");
}

/* workload measures n batches both ways and prints the ratio. */
static void workload(int n, bool large)
{
    tb *b = build(n, large);
    int leaves = large ? 2 * LEAVES + 6 : 0;
    result d, s;
    if (large)
        printf("large batches: snapshot of %d tensor leaves (+6 value/digest leaves), backward,"
               " step pre with %d grads, step post; %zu bytes each\n",
               LEAVES, LEAVES, b[0].buf.len);
    else
        printf("small batches: DataLoader batch, backward, step pre and post without leaves;"
               " %zu bytes each\n",
               b[0].buf.len);
    d = direct(b, n);
    report("direct", d, n, leaves);
    s = socket_run(b, n);
    report("socket", s, n, leaves);
    printf("  socket/direct throughput: %.2f\n", (s.events / s.secs) / (d.events / d.secs));
    for (int i = 0; i < n; i++) tb_free(&b[i]);
    free(b);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1500;
    if (n <= 0) {
        fprintf(stderr, "usage: ingest_bench [BATCHES]\n");
        return 64;
    }
    workload(n, true);
    workload(20 * n, false);
    return 0;
}
