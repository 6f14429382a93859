/* SPDX-License-Identifier: MIT
 * ingest_bench.c -- ingest throughput: realistic batches (a snapshot of 200
 * tensor leaves, a backward, a step pre with 200 gradient leaves and a step
 * post, i.e. one optimizer step) stored into a real database, first by
 * calling the ingest code in-process (direct), then through a real ipc://
 * socket into a real serve loop, twice: handed to the agent's own sender
 * (agent/send.c: queue, merging of queued batches, acknowledgements; what a
 * training process does), and pushed one message per batch (what nng costs
 * per message).  The ratios to direct show what the socket costs.
 *
 * A second workload of small batches (a backward, a step pre and post
 * without leaves, a DataLoader batch) shows the per-message cost.
 *
 * Last, CROWD training processes send at once, each through its own agent
 * sender with the agent's default send timeout, as many ranks or jobs on one
 * machine would: throughput, and how many fell back to the spool.
 *
 * Each way runs ROUNDS times, in turn, and the ratios are medians over the
 * rounds.  Each socket measurement runs in a child process of its own: the agent's
 * sender is one per process, as in a training process, and nng is never
 * used before a fork.
 *
 * usage: ingest_bench [BATCHES]   (default 1500 large, 20x as many small;
 *                                  about a minute in all) */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/send.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/serve.h"
#include "daemon/store/store.h"
#include "proto/control.h"
#include "tests/unit/batches.h"

#define LEAVES           200
#define EVENTS_PER_BATCH 4
#define CROWD            32                                 /* training processes sending at once */
#define KEY              "0123456789abcdef0123456789abcdef" /* execution 1's, set below */

#define ROUNDS 5 /* odd: the median is one round's */

typedef struct result {
    double secs;
    uint64_t events, bytes;
    uint64_t commits;  /* socket: transactions the serve loop committed */
    uint64_t messages; /* socket: messages the serve loop received */
    uint64_t spooled;  /* crowd: processes that fell back to the spool */
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

/* build encodes n batches of process pid, one optimizer step each, seqs
 * consecutive: large ones (leaves) or small ones (no leaves). */
static tb *build(int n, bool large, int64_t pid)
{
    tb *b = calloc((size_t)n, sizeof *b);
    for (int i = 0; i < n; i++) {
        uint64_t seq = (uint64_t)i * EVENTS_PER_BATCH;
        tb_begin_key(&b[i], 1, 1, pid, 0, NULL, KEY);
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
    result r = {0, 0, 0, 0, 0, 0};
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

/* a daemon of a socket measurement: a fresh database served on ipc:// by a
 * serve loop in a thread */
typedef struct bdaemon {
    char dir[512], db[600], url[700];
    tpd_store *s;
    tpd_serve *sv;
    pthread_t th;
} bdaemon;

/* daemon_paths picks the daemon's directory, database and URL. */
static void daemon_paths(bdaemon *d)
{
    scratch(d->dir, sizeof d->dir, d->db, sizeof d->db);
    snprintf(d->url, sizeof d->url, "ipc://%s/ingest.ipc", d->dir);
}

/* daemon_start opens the database (open_store) and serves it. */
static void daemon_start(bdaemon *d)
{
    const char *listen[1] = {d->url};
    tpd_serve_opts o;
    char why[512];
    d->s = open_store(d->db);
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    if (tpd_serve_open(&d->sv, d->s, &o, why, sizeof why) != TP_OK) die("serve", why);
    pthread_create(&d->th, NULL, serve_thread, d->sv);
}

/* daemon_stop stops the daemon, counts its messages and commits into *r and
 * removes its directory. */
static void daemon_stop(bdaemon *d, result *r)
{
    tpd_serve_stats st;
    tpd_serve_stop(d->sv);
    pthread_join(d->th, NULL);
    tpd_serve_get_stats(d->sv, &st);
    r->commits = st.commits;
    r->messages = st.messages;
    tpd_serve_close(d->sv);
    tpd_store_close(d->s);
    nftw(d->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* seen asks the daemon for the highest contiguous seq of the process. */
static int64_t seen(nng_socket req, int64_t pid)
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
    tp_mp_cstr(&q, "pid"), tp_mp_int(&q, pid);
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

/* push_raw sends each batch as one message on a push socket of its own,
 * left open for the caller to close once they are stored (closing drops
 * what nng still queues). */
static void push_raw(nng_socket *pushp, const char *url, const tb *b, int n)
{
    nng_socket push;
    if (nng_push0_open(&push) != 0 || nng_dial(push, url, NULL, 0) != 0) die("push", url);
    nng_socket_set_ms(push, NNG_OPT_SENDTIMEO, 10000);
    nng_socket_set_int(push, NNG_OPT_SENDBUF, 1024);
    for (int i = 0; i < n; i++)
        if (nng_send(push, b[i].buf.data, b[i].buf.len, 0) != 0) die("send", "timed out");
    *pushp = push;
}

/* cfg_set copies a URL or path into a field of tpa_cfg. */
static void cfg_set(char *field, size_t n, const char *v)
{
    size_t len = strlen(v);
    if (len >= n) die("too long", v);
    memcpy(field, v, len + 1);
}

/* agent_cfg points the agent's sender at a daemon, with the agent's
 * default send timeout (agent/config.c). */
static void agent_cfg(const char *url, const char *control, const char *dir)
{
    memset(&tpa_cfg, 0, sizeof tpa_cfg);
    tpa_cfg.run = tpa_cfg.exec = 1;
    tpa_cfg.send_timeout_ms = 1000;
    tpa_cfg.debug = getenv("TRAINPARITY_DEBUG") != NULL;
    cfg_set(tpa_cfg.daemon, sizeof tpa_cfg.daemon, url);
    cfg_set(tpa_cfg.control, sizeof tpa_cfg.control, control);
    cfg_set(tpa_cfg.spool, sizeof tpa_cfg.spool, dir);
}

/* copy_all makes the batches' malloc'ed copies the sender takes. */
static uint8_t **copy_all(const tb *b, int n)
{
    uint8_t **copies = calloc((size_t)n, sizeof *copies);
    if (copies == NULL) die("copies", "out of memory");
    for (int i = 0; i < n; i++) {
        if ((copies[i] = malloc(b[i].buf.len)) == NULL) die("copies", "out of memory");
        memcpy(copies[i], b[i].buf.data, b[i].buf.len);
    }
    return copies;
}

/* push_agent hands each batch to the agent's sender (agent/send.c), as
 * agent/emit.c does, and waits for its acknowledgements (agent_cfg first).
 * Returns 0 when every batch was acknowledged, none dropped or spooled. */
static int push_agent(uint8_t **copies, const tb *b, int n)
{
    int rc;
    for (int i = 0; i < n; i++)
        tpa_send_submit(copies[i], b[i].buf.len, b[i].n, (uint64_t)i * EVENTS_PER_BATCH, b[i].off);
    rc = tpa_send_confirm(60000);
    if (tpa_send_dropped() != 0 || tpa_send_spooled()) rc = -1;
    tpa_send_stop();
    return rc;
}

/* socket_run sends the batches through ipc:// into a serve loop, by the
 * agent's sender or one message per batch, and waits until the daemon
 * reports the last seq stored.  Runs in a child process (measure). */
static result socket_run(int n, bool large, bool agent)
{
    bdaemon d;
    nng_socket req, push = NNG_SOCKET_INITIALIZER;
    result r = {0, 0, 0, 0, 0, 0};
    int64_t last = (int64_t)n * EVENTS_PER_BATCH - 1;
    uint8_t **copies = NULL;
    tb *b = build(n, large, getpid()); /* the sender asks `seen` for its own pid */
    double t0;
    daemon_paths(&d);
    daemon_start(&d);
    if (nng_req0_open(&req) != 0 || nng_dial(req, tpd_serve_control_url(d.sv), NULL, 0) != 0)
        die("req", tpd_serve_control_url(d.sv));
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 10000);
    if (agent) {
        copies = copy_all(b, n);
        agent_cfg(d.url, tpd_serve_control_url(d.sv), d.dir);
    }
    t0 = now_s();
    if (agent) {
        if (push_agent(copies, b, n) != 0) die("agent sender", "dropped or spooled batches");
    } else
        push_raw(&push, d.url, b, n);
    while (seen(req, getpid()) != last) {
        struct timespec ts = {0, 20000000}; /* 20 ms: each request commits */
        nanosleep(&ts, NULL);
    }
    r.secs = now_s() - t0;
    r.events = (uint64_t)n * EVENTS_PER_BATCH;
    for (int i = 0; i < n; i++) r.bytes += b[i].buf.len;
    free(copies);
    for (int i = 0; i < n; i++) tb_free(&b[i]);
    free(b);
    if (!agent) nng_close(push);
    nng_close(req);
    daemon_stop(&d, &r);
    return r;
}

/* crowd_run starts nproc training processes that send n batches each at
 * once through the agent's sender, then the daemon, and measures from when
 * they are all ready to go until the last is acknowledged.  r.spooled counts
 * the processes that fell back to the spool.  Runs in a child process
 * (measure): the senders are forked before nng is used. */
static result crowd_run(int nproc, int n, bool large)
{
    bdaemon d;
    char control[760];
    int ready[2], go[2], done[2];
    result r = {0, 0, 0, 0, 0, 0};
    double t0;
    char c;
    daemon_paths(&d);
    if (tp_url_control(d.url, control, sizeof control) != TP_OK) die("control url", d.url);
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(done) != 0) die("pipe", strerror(errno));
    for (int p = 0; p < nproc; p++) {
        pid_t pid = fork();
        if (pid < 0) die("fork", strerror(errno));
        if (pid == 0) {
            tb *b = build(n, large, getpid());
            uint8_t **copies = copy_all(b, n);
            char ok;
            close(go[1]);
            agent_cfg(d.url, control, d.dir);
            if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 0) _exit(1);
            ok = push_agent(copies, b, n) == 0 ? 'y' : 'n';
            _exit(write(done[1], &ok, 1) == 1 ? 0 : 1);
        }
    }
    close(go[0]);
    daemon_start(&d);
    for (int p = 0; p < nproc; p++)
        if (read(ready[0], &c, 1) != 1) die("crowd", "a process did not start");
    t0 = now_s();
    close(go[1]); /* go */
    for (int p = 0; p < nproc; p++) {
        if (read(done[0], &c, 1) != 1) die("crowd", "a process failed");
        if (c != 'y') r.spooled++;
    }
    r.secs = now_s() - t0;
    while (wait(NULL) > 0) continue;
    r.events = (uint64_t)nproc * n * EVENTS_PER_BATCH;
    daemon_stop(&d, &r);
    return r;
}

/* measure runs socket_run (nproc 0) or crowd_run in a child process and
 * returns its result. */
static result measure(int n, bool large, bool agent, int nproc)
{
    int fd[2], status;
    pid_t pid;
    result r;
    ssize_t got;
    fflush(stdout);
    if (pipe(fd) != 0 || (pid = fork()) < 0) die("fork", strerror(errno));
    if (pid == 0) {
        close(fd[0]);
        r = nproc > 0 ? crowd_run(nproc, n, large) : socket_run(n, large, agent);
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    do got = read(fd[0], &r, sizeof r);
    while (got < 0 && errno == EINTR);
    close(fd[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof r)
        die("socket", "the measuring child failed");
    return r;
}

static void report(const char *name, result r, int n, int leaves)
{
    printf("  %-7s %6d batches %7.1f MB in %5.2f s: %8.0f batches/s %9.0f events/s"
           " %9.0f leaves/s %6.1f MB/s",
           name, n, r.bytes / 1e6, r.secs, n / r.secs, r.events / r.secs,
           (double)n * leaves / r.secs, r.bytes / 1e6 / r.secs);
    if (r.messages) printf(", %.1f batches/message", (double)n / r.messages);
    if (r.commits) printf(", %.1f batches/commit", (double)n / r.commits);
    printf("\n");
}

static double rate(result r)
{
    return r.events / r.secs;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of the n values at v (sorted in place); *lo, *hi: their range. */
static double median(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    *lo = v[0], *hi = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* workload measures n batches every way, ROUNDS times in turn (direct, the
 * agent's sender, one message per batch), so that a slow moment of the
 * machine falls on every arm alike; the ratios are each round's, and their
 * median is reported, with the round whose ratio it is. */
static void workload(int n, bool large)
{
    tb *b = build(n, large, 4242);
    int leaves = large ? 2 * LEAVES + 6 : 0, mid = 0;
    result d[ROUNDS], a[ROUNDS], s[ROUNDS], c;
    double ra[ROUNDS], rs[ROUNDS], sorted[ROUNDS], ma, ms, alo, ahi, slo, shi;
    if (large)
        printf("large batches: snapshot of %d tensor leaves (+6 value/digest leaves), backward,"
               " step pre with %d grads, step post; %zu bytes each\n",
               LEAVES, LEAVES, b[0].buf.len);
    else
        printf("small batches: DataLoader batch, backward, step pre and post without leaves;"
               " %zu bytes each\n",
               b[0].buf.len);
    for (int r = 0; r < ROUNDS; r++) {
        d[r] = direct(b, n);
        a[r] = measure(n, large, true, 0);
        s[r] = measure(n, large, false, 0);
        ra[r] = sorted[r] = rate(a[r]) / rate(d[r]);
        rs[r] = rate(s[r]) / rate(d[r]);
    }
    ms = median(rs, ROUNDS, &slo, &shi);
    ma = median(sorted, ROUNDS, &alo, &ahi);
    for (int r = 0; r < ROUNDS; r++)
        if (ra[r] == ma) mid = r;
    printf("  (the round with the median ratio, of %d)\n", ROUNDS);
    report("direct", d[mid], n, leaves);
    report("agent", a[mid], n, leaves);
    report("1/msg", s[mid], n, leaves);
    printf("  socket/direct throughput, median of %d rounds: %.2f (%.2f-%.2f) through the agent's"
           " sender, %.2f (%.2f-%.2f) at one message per batch\n",
           ROUNDS, ma, alo, ahi, ms, slo, shi);
    c = measure(n / CROWD > 0 ? n / CROWD : 1, large, true, CROWD);
    printf("  %d processes at once through their agents' senders, %d batches each: %.2f s,"
           " %.0f events/s, %.2f of direct, %.1f batches/message; %llu fell back to the spool\n",
           CROWD, n / CROWD > 0 ? n / CROWD : 1, c.secs, c.events / c.secs, rate(c) / rate(d[mid]),
           (double)c.events / EVENTS_PER_BATCH / (c.messages ? c.messages : 1),
           (unsigned long long)c.spooled);
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
