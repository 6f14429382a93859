/* SPDX-License-Identifier: MIT
 * ranks_bench.c -- what one real daemon process stores from many ranks over
 * tcp://: a trainparity-daemon serving a fresh database on
 * tcp://127.0.0.1 with a token (bench/tcpd.h), fed by 1, 16 and 64 sender
 * processes at once.  Each is a rank with its own pid, its own agent sender
 * (agent/send.c: push socket dialing tcp://, acknowledgements by `seen`,
 * the spool, the agent's default send timeout), and sends one batch per
 * optimizer step, as the agent flushes at each step's end: a DataLoader
 * batch, zero_grad, the start-of-step snapshot, a backward, the step's pre
 * (gradients) and post, a scheduler step: 7 events; hello in the first
 * batch, bye in the last.  The model has PARAMS parameter tensors trained
 * by Adam; two shapes of the same step:
 *   record     the snapshot holds every parameter and Adam's exp_avg,
 *              exp_avg_sq and step of each (4 x PARAMS tensors), the pre
 *              event the PARAMS gradients (every tensor, every step);
 *   induction  the snapshot is light (scalars and RNG states only), the
 *              gradients as in record (resume's mode between boundaries).
 * Every measurement gets the same number of steps in all, split among its
 * ranks; the ranks build their batches first, then are released together.
 * Timed: from the release to the last rank's confirmation that the daemon
 * committed all it sent (tpa_send_confirm, which asks `seen`).  Counted
 * afterwards: the events the daemon stored (exec.finish) and the steps
 * (batches) it stored (its database).  The figures are rates, and their
 * ratio to 1 rank measured in the same round; each configuration runs
 * ROUNDS times, in turn, and the medians are reported.
 *
 * Each measurement runs in a child process of its own, which forks the
 * ranks before it uses nng.  Every wait is bounded (liveness, not timing).
 *
 * usage: ranks_bench [STEPS [DAEMON]]   (steps in all per measurement,
 *        default 3840; DAEMON: the trainparity-daemon to run, default the
 *        one built with it) */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/send.h"
#include "bench/tcpd.h"
#include "daemon/store/store.h"
#include "tests/unit/batches.h"

#define PARAMS          150
#define EVENTS_PER_STEP 7
#define MAX_RANKS       64
#define ROUNDS          3      /* odd: the median is one round's */
#define READY_MS        120000 /* the ranks have built their batches within this */
#define DONE_MS         60000  /* and are confirmed or spooled within this, else late */
#define REAP_MS         30000  /* and have exited within this */

#ifndef TPD_BIN
#define TPD_BIN "trainparity-daemon"
#endif

typedef struct shape {
    const char *name;
    int state; /* tensor leaves in the snapshot */
} shape;

static const shape shapes[] = {{"record", 4 * PARAMS}, {"induction", 0}};
static const int rank_counts[] = {1, 16, 64};
#define NCOUNTS (int)(sizeof rank_counts / sizeof rank_counts[0])

/* what the measuring process tells each rank */
typedef struct rank_cfg {
    int64_t run, exec;
    char key[TP_EXEC_KEY_LEN + 1];
} rank_cfg;

/* what each rank tells it back */
typedef struct rank_out {
    char how; /* 'y' confirmed, 's' spooled, 'n' neither */
    uint64_t bytes;
} rank_out;

typedef struct result {
    double secs;
    int64_t sent, events, processes, batches; /* events sent; events, processes, steps stored */
    uint64_t bytes;
    int spooled, failed; /* ranks that fell back to the spool, or could not */
    int died, sig;       /* ranks that died, and the signal of the last that did */
    int late;            /* ranks neither done nor dead within DONE_MS, then killed */
    int refusals;        /* the daemon logged refusing connections (once per socket) */
    bool complete;
} result;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the measurement under way, for fail() to clean up */
static tcpd g_d;
static pid_t g_ranks[MAX_RANKS];
static int g_nranks;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "ranks_bench: %s: %s\n", what, why);
    for (int i = 0; i < g_nranks; i++)
        if (g_ranks[i]) kill(g_ranks[i], SIGKILL);
    tcpd_stop(&g_d);
    fprintf(stderr, "ranks_bench: the daemon's log and database are in %s\n", g_d.dir);
    exit(1);
}

/* read_all reads n bytes from fd within the deadline (ms, monotonic);
 * returns 0, or -1 at end of file or past the deadline. */
static int read_all(int fd, void *p, size_t n, double deadline)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd pf = {fd, POLLIN, 0};
        double left = deadline - now_ms();
        ssize_t r;
        if (left <= 0 || poll(&pf, 1, (int)left + 1) < 0) {
            if (left > 0 && errno == EINTR) continue;
            return -1;
        }
        if (!(pf.revents & (POLLIN | POLLHUP))) continue;
        if ((r = read(fd, (char *)p + got, n - got)) < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* a rank's batches, one per step, built before the release */
typedef struct step_batch {
    uint8_t *data;
    size_t len, off;
    uint32_t n;
    uint64_t seq;
} step_batch;

/* build makes the rank's steps: 7 events each, hello first, bye last. */
static step_batch *build(const shape *sh, const rank_cfg *c, int rank, int steps)
{
    step_batch *b = calloc((size_t)steps, sizeof *b);
    int64_t pid = getpid();
    uint64_t seq = 0, total = (uint64_t)steps * EVENTS_PER_STEP + 2;
    if (b == NULL) return NULL;
    for (int s = 0; s < steps; s++) {
        tb t;
        b[s].seq = seq;
        tb_begin_key(&t, c->run, c->exec, pid, rank, g_d.token, c->key);
        if (s == 0) tb_hello(&t, seq++, rank);
        tb_batchev(&t, seq++, s);
        tb_zero_grad(&t, seq++, s);
        tb_snapshot(&t, seq++, s, sh->state);
        tb_backward(&t, seq++, s, 1.0 / (s + 1), 1);
        tb_step(&t, seq++, s, true, PARAMS, 1.5, 0.1);
        tb_step(&t, seq++, s, false, 0, 0.01, 0.1);
        tb_sched(&t, seq++, s);
        if (s == steps - 1) tb_bye(&t, seq++, total, 0);
        tb_end(&t);
        if (t.buf.oom) return NULL;
        b[s].n = t.n;
        b[s].off = t.off;
        b[s].data = tp_buf_steal(&t.buf, &b[s].len);
    }
    return b;
}

static void cfg_set(char *field, size_t n, const char *v)
{
    snprintf(field, n, "%s", v);
}

/* rank_main is a rank: waits for its execution, builds its steps, says
 * ready, waits for the release, hands every step to its agent sender and
 * waits until the daemon confirmed them (or they went to the spool). */
static void rank_main(const shape *sh, int rank, int steps, int cfg_fd, int ready_fd, int go_fd,
                      int done_fd)
{
    rank_cfg c;
    rank_out o = {'n', 0};
    step_batch *b;
    char x;
    if (read_all(cfg_fd, &c, sizeof c, now_ms() + READY_MS) != 0) _exit(1);
    if ((b = build(sh, &c, rank, steps)) == NULL) _exit(1);
    memset(&tpa_cfg, 0, sizeof tpa_cfg);
    tpa_cfg.run = c.run;
    tpa_cfg.exec = c.exec;
    tpa_cfg.send_timeout_ms = 1000; /* the agent's default (agent/config.c) */
    tpa_cfg.debug = getenv("TRAINPARITY_DEBUG") != NULL;
    cfg_set(tpa_cfg.daemon, sizeof tpa_cfg.daemon, g_d.url);
    cfg_set(tpa_cfg.control, sizeof tpa_cfg.control, g_d.control);
    cfg_set(tpa_cfg.spool, sizeof tpa_cfg.spool, g_d.dir);
    cfg_set(tpa_cfg.token, sizeof tpa_cfg.token, g_d.token);
    cfg_set(tpa_cfg.exec_key, sizeof tpa_cfg.exec_key, c.key);
    if (write(ready_fd, "r", 1) != 1) _exit(1);
    if (read_all(go_fd, &x, 1, now_ms() + READY_MS) == 0) _exit(1); /* released: end of file */
    for (int s = 0; s < steps; s++) {
        o.bytes += b[s].len;
        tpa_send_submit(b[s].data, b[s].len, b[s].n, b[s].seq, b[s].off);
    }
    tpa_send_drain(DONE_MS / 2);
    if (tpa_send_confirm(DONE_MS / 2) == 0 && tpa_send_dropped() == 0)
        o.how = tpa_send_spooled() ? 's' : 'y';
    tpa_send_stop();
    free(b);
    _exit(write(done_fd, &o, sizeof o) == (ssize_t)sizeof o ? 0 : 1);
}

/* stored_steps counts the (process, step) pairs of exec in the database:
 * the batches it stored. */
static int64_t stored_steps(int64_t exec)
{
    static const char sql[] =
        "SELECT count(*) FROM (SELECT DISTINCT pid, step FROM events WHERE exec_id = ?1)";
    tpd_store *s = NULL;
    sqlite3_stmt *st = NULL;
    char why[256];
    int64_t n = -1;
    if (tpd_store_open(&s, g_d.db, TPD_STORE_READONLY, why, sizeof why) != TP_OK) fail(g_d.db, why);
    if (sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, exec);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    tpd_store_close(s);
    return n;
}

/* read_log counts the connections the daemon logged it refused (its caps
 * on connections, daemon/serve/serve.c) and prints any other line besides
 * its start and stop. */
static void read_log(result *r)
{
    char path[700], line[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/daemon.log", g_d.dir);
    if ((f = fopen(path, "r")) == NULL) return;
    while (fgets(line, sizeof line, f))
        if (strstr(line, " refused: it would pass the cap"))
            r->refusals++;
        else if (strstr(line, " serving db ") == NULL && strstr(line, " stopped") == NULL)
            printf("    the daemon logged: %s", line);
    fclose(f);
    fflush(stdout); /* the measuring process ends in _exit */
}

/* poll_ranks notes the ranks that exited (only ranks: never the daemon):
 * a death (a signal, a failure) when one did not exit 0, which it does
 * after writing its outcome.  Returns how many are still running. */
static int poll_ranks(result *r)
{
    int left = 0, status;
    for (int i = 0; i < g_nranks; i++) {
        if (g_ranks[i] == 0) continue;
        if (waitpid(g_ranks[i], &status, WNOHANG) != g_ranks[i]) {
            left++;
            continue;
        }
        g_ranks[i] = 0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        r->died++;
        if (WIFSIGNALED(status)) r->sig = WTERMSIG(status);
    }
    return left;
}

/* collect reads the ranks' outcomes until each has written one or died;
 * those neither within DONE_MS of t0 are late. */
static void collect(int fd, double t0, int nranks, result *r)
{
    int outs = 0;
    while (outs + r->died < nranks) {
        struct pollfd pf = {fd, POLLIN, 0};
        rank_out o;
        if (now_ms() - t0 > DONE_MS) {
            r->late = nranks - outs - r->died; /* killed by reap() */
            return;
        }
        if (poll(&pf, 1, 20) > 0 && (pf.revents & POLLIN)) {
            if (read_all(fd, &o, sizeof o, t0 + DONE_MS) != 0) fail("ranks", "torn outcome");
            r->bytes += o.bytes;
            r->spooled += o.how == 's';
            r->failed += o.how == 'n';
            outs++;
        }
        poll_ranks(r);
    }
}

/* reap waits for the ranks to exit, killing those still there at the bound. */
static void reap(result *r)
{
    double end = now_ms() + REAP_MS;
    while (poll_ranks(r) > 0 && now_ms() < end) poll(NULL, 0, 10);
    for (int i = 0; i < g_nranks; i++)
        if (g_ranks[i]) kill(g_ranks[i], SIGKILL), waitpid(g_ranks[i], NULL, 0);
    g_nranks = 0;
}

/* run_ranks starts a daemon and nranks ranks of steps steps each, releases
 * them together and counts what the daemon stored.  In its own process. */
static result run_ranks(const char *bin, const shape *sh, int nranks, int steps)
{
    int cfg[2], ready[2], go[2], done[2];
    char why[512] = "";
    rank_cfg c;
    result r;
    double t0;
    memset(&r, 0, sizeof r);
    if (tcpd_start(&g_d, bin, why, sizeof why) != 0) fail("daemon", why);
    if (pipe(cfg) != 0 || pipe(ready) != 0 || pipe(go) != 0 || pipe(done) != 0)
        fail("pipe", strerror(errno));
    for (int i = 0; i < nranks; i++) {
        pid_t p = fork();
        if (p < 0) fail("fork", strerror(errno));
        if (p == 0) {
            close(cfg[1]), close(ready[0]), close(go[1]), close(done[0]);
            rank_main(sh, i, steps, cfg[0], ready[1], go[0], done[1]);
        }
        g_ranks[g_nranks++] = p;
    }
    close(cfg[0]), close(ready[1]), close(go[0]), close(done[1]);
    /* nng from here on: nothing more is forked */
    memset(&c, 0, sizeof c);
    if (tcpd_exec_new(&g_d, &c.run, &c.exec, c.key, why, sizeof why) != 0) fail("control", why);
    for (int i = 0; i < nranks; i++)
        if (write(cfg[1], &c, sizeof c) != (ssize_t)sizeof c) fail("pipe", strerror(errno));
    for (int i = 0; i < nranks; i++) {
        char x;
        if (read_all(ready[0], &x, 1, now_ms() + READY_MS) != 0) fail("ranks", "not ready");
    }
    t0 = now_ms();
    close(go[1]); /* the release */
    collect(done[0], t0, nranks, &r);
    r.secs = (now_ms() - t0) / 1e3;
    r.sent = (int64_t)nranks * (steps * EVENTS_PER_STEP + 2);
    if (tcpd_finish(&g_d, c.exec, &r.events, &r.processes, &r.complete, why, sizeof why) != 0)
        fail("control", why);
    reap(&r);
    tcpd_stop(&g_d);
    read_log(&r);
    r.batches = stored_steps(c.exec);
    tcpd_remove(&g_d);
    close(cfg[1]), close(ready[0]), close(done[0]);
    return r;
}

/* measure runs run_ranks in a child process and returns its result. */
static result measure(const char *bin, const shape *sh, int nranks, int steps)
{
    int fd[2], status;
    pid_t pid;
    result r;
    ssize_t got;
    fflush(stdout);
    if (pipe(fd) != 0 || (pid = fork()) < 0) {
        fprintf(stderr, "ranks_bench: fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid == 0) {
        close(fd[0]);
        r = run_ranks(bin, sh, nranks, steps);
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    do got = read(fd[0], &r, sizeof r);
    while (got < 0 && errno == EINTR);
    close(fd[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof r) {
        fprintf(stderr, "ranks_bench: the measuring process failed\n");
        exit(1);
    }
    return r;
}

/* batch_bytes is the size of one middle step's batch of shape sh. */
static size_t batch_bytes(const shape *sh)
{
    rank_cfg c = {1, 1, "0123456789abcdef0123456789abcdef"};
    step_batch *b = build(sh, &c, 0, 2);
    size_t n = b ? b[1].len : 0;
    if (b) free(b[0].data), free(b[1].data);
    free(b);
    return n;
}

static double rate(const result *r)
{
    return r->events / r->secs;
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

/* report prints the round of r[] (ROUNDS of nranks ranks) whose rate is
 * the median, the median of the rounds' ratios to 1 rank (ratio; NULL for
 * 1 rank), and what went wrong in any round. */
static void report(int nranks, int steps, const result *r, const double *ratio)
{
    double v[ROUNDS], lo, hi, m;
    int mid = 0, spooled = 0, failed = 0, died = 0, late = 0, sig = 0, refused = 0;
    for (int i = 0; i < ROUNDS; i++) v[i] = rate(&r[i]);
    m = median(v, ROUNDS, &lo, &hi);
    for (int i = 0; i < ROUNDS; i++) {
        if (rate(&r[i]) == m) mid = i;
        spooled += r[i].spooled, failed += r[i].failed, died += r[i].died, late += r[i].late;
        refused += r[i].refusals > 0;
        if (r[i].sig) sig = r[i].sig;
    }
    printf("  %2d ranks x %4d steps: %5.2f s, %5lld of %5lld events stored (%2lld processes, %s),"
           " %5.0f events/s (%.0f-%.0f), %4.0f steps/s, %5.1f MB/s",
           nranks, steps, r[mid].secs, (long long)r[mid].events, (long long)r[mid].sent,
           (long long)r[mid].processes, r[mid].complete ? "complete" : "incomplete", m, lo, hi,
           r[mid].batches / r[mid].secs, r[mid].bytes / 1e6 / r[mid].secs);
    if (ratio) {
        for (int i = 0; i < ROUNDS; i++) v[i] = ratio[i];
        m = median(v, ROUNDS, &lo, &hi);
        printf(", %.2f (%.2f-%.2f) of 1 rank's events/s", m, lo, hi);
    }
    printf("\n");
    if (refused)
        printf("     in %d of %d rounds the daemon refused connections past its cap of 16 from"
               " one address\n",
               refused, ROUNDS);
    if (spooled || failed || died || late)
        printf("     in %d rounds: %d ranks fell back to the spool, %d could not, %d died"
               " (signal %d), %d were not done in %d s\n",
               ROUNDS, spooled, failed, died, sig, late, DONE_MS / 1000);
}

int main(int argc, char **argv)
{
    int total = argc > 1 ? atoi(argv[1]) : 3840;
    const char *bin = argc > 2 ? argv[2] : TPD_BIN;
    if (total < MAX_RANKS || argc > 3) {
        fprintf(stderr, "usage: ranks_bench [STEPS [DAEMON]]   (STEPS at least %d)\n", MAX_RANKS);
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shape *sh = &shapes[s];
        result r[NCOUNTS][ROUNDS];
        printf("%s: %d parameters (Adam); a step is one batch of %d events, %zu bytes: snapshot"
               " of %d state tensors (+6 values), %d gradients; %d steps in all per line, median"
               " of %d rounds\n",
               sh->name, PARAMS, EVENTS_PER_STEP, batch_bytes(sh), sh->state, PARAMS, total,
               ROUNDS);
        for (int i = 0; i < ROUNDS; i++)
            for (int k = 0; k < NCOUNTS; k++)
                r[k][i] = measure(bin, sh, rank_counts[k], total / rank_counts[k]);
        for (int k = 0; k < NCOUNTS; k++) {
            double ratio[ROUNDS];
            for (int i = 0; i < ROUNDS; i++) ratio[i] = rate(&r[k][i]) / rate(&r[0][i]);
            report(rank_counts[k], total / rank_counts[k], r[k], k ? ratio : NULL);
        }
    }
    return 0;
}
