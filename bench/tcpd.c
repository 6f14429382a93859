/* SPDX-License-Identifier: MIT
 * tcpd.c -- a real trainparity-daemon process on tcp://127.0.0.1 for the
 * benchmarks, and its control requests (tcpd.h). */
#define _XOPEN_SOURCE 700
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/tcpd.h"
#include "proto/mp.h"

#define PING_MS  20000 /* the daemon answers ping within this */
#define REPLY_MS 30000 /* a control reply comes within this */
#define STOP_MS  10000 /* the daemon stops within this of SIGTERM */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* bind_port binds a TCP socket to 127.0.0.1:port (0: any); returns it and
 * the port bound, or -1. */
static int bind_port(int port, int *bound)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

/* free_pair finds a port P such that P and P + 1 (the control URL the
 * daemon derives) are free now. */
static int free_pair(void)
{
    for (int i = 0; i < 100; i++) {
        int p = 0, q = 0, a = bind_port(0, &p), b = a >= 0 && p < 65535 ? bind_port(p + 1, &q) : -1;
        if (a >= 0) close(a);
        if (b >= 0) close(b);
        if (b >= 0) return p;
    }
    return -1;
}

/* write_token makes a random token and writes it to dir/token, mode 0600. */
static int write_token(tcpd *d, char *path, size_t pn)
{
    unsigned char r[16];
    int fd, ok;
    FILE *u = fopen("/dev/urandom", "rb");
    if (u == NULL || fread(r, 1, sizeof r, u) != sizeof r) {
        if (u) fclose(u);
        return -1;
    }
    fclose(u);
    for (size_t i = 0; i < sizeof r; i++) snprintf(d->token + 2 * i, 3, "%02x", r[i]);
    snprintf(path, pn, "%s/token", d->dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    ok = write(fd, d->token, strlen(d->token)) == (ssize_t)strlen(d->token);
    return close(fd) == 0 && ok ? 0 : -1;
}

int tcpd_start(tcpd *d, const char *bin, char *why, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    char tokfile[600], log[600];
    int port;
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s/tpd-ranks-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(d->dir) == NULL) {
        snprintf(why, n, "mkdtemp %s: %s", d->dir, strerror(errno));
        return -1;
    }
    snprintf(d->db, sizeof d->db, "%s/runs.db", d->dir);
    snprintf(log, sizeof log, "%s/daemon.log", d->dir);
    if (write_token(d, tokfile, sizeof tokfile) != 0) {
        snprintf(why, n, "cannot write a token file in %s", d->dir);
        return -1;
    }
    if ((port = free_pair()) < 0) {
        snprintf(why, n, "no two free consecutive ports on 127.0.0.1");
        return -1;
    }
    snprintf(d->url, sizeof d->url, "tcp://127.0.0.1:%d", port);
    snprintf(d->control, sizeof d->control, "tcp://127.0.0.1:%d", port + 1);
    fflush(NULL);
    if ((d->pid = fork()) < 0) {
        snprintf(why, n, "fork: %s", strerror(errno));
        d->pid = 0;
        return -1;
    }
    if (d->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) dup2(fd, 2);
        execl(bin, bin, "serve", "--db", d->db, "--listen", d->url, "--token-file", tokfile,
              (char *)NULL);
        fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    return 0;
}

/* req_begin starts request cmd with nargs arguments (and the token). */
static void req_begin(const tcpd *d, tp_buf *q, const char *cmd, uint32_t nargs)
{
    tp_buf_init(q);
    tp_mp_map(q, nargs + 2);
    tp_mp_cstr(q, "tok"), tp_mp_cstr(q, d->token);
    tp_mp_cstr(q, "cmd"), tp_mp_cstr(q, cmd);
}

/* find points r at the value of key in the reply map (rep, len). */
static int find(const void *rep, size_t len, const char *key, tp_mpr *r)
{
    uint32_t n;
    tp_mpr_init(r, rep, len);
    if (tp_mpr_map(r, &n) != TP_OK) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kl;
        if (tp_mpr_str(r, &k, &kl) != TP_OK) return -1;
        if (tp_mp_str_eq(k, kl, key)) return 0;
        if (tp_mpr_skip(r) != TP_OK) return -1;
    }
    return -1;
}

static int reply_int(const void *rep, size_t len, const char *key, int64_t *v)
{
    tp_mpr r;
    return find(rep, len, key, &r) == 0 && tp_mpr_int(&r, v) == TP_OK ? 0 : -1;
}

static int reply_bool(const void *rep, size_t len, const char *key, bool *v)
{
    tp_mpr r;
    return find(rep, len, key, &r) == 0 && tp_mpr_bool(&r, v) == TP_OK ? 0 : -1;
}

/* call sends q (freed) on a connection of its own and leaves an ok reply
 * in *rep (nng_free it).  Returns 0, or -1 with why set. */
static int call(const tcpd *d, tp_buf *q, int timeout_ms, void **rep, size_t *len, char *why,
                size_t n)
{
    nng_socket req;
    tp_mpr r;
    const char *e = "";
    uint32_t el = 0;
    bool ok = false;
    int rv;
    *rep = NULL;
    if ((rv = nng_req0_open(&req)) != 0) {
        tp_buf_free(q);
        snprintf(why, n, "req: %s", nng_strerror(rv));
        return -1;
    }
    nng_socket_set_ms(req, NNG_OPT_SENDTIMEO, timeout_ms);
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, timeout_ms);
    if ((rv = nng_dial(req, d->control, NULL, NNG_FLAG_NONBLOCK)) != 0 ||
        (rv = nng_send(req, q->data, q->len, 0)) != 0 ||
        (rv = nng_recv(req, rep, len, NNG_FLAG_ALLOC)) != 0) {
        snprintf(why, n, "%s: %s", d->control, nng_strerror(rv));
        *rep = NULL;
    }
    tp_buf_free(q);
    nng_close(req);
    if (*rep == NULL) return -1;
    if (reply_bool(*rep, *len, "ok", &ok) == 0 && ok) return 0;
    if (find(*rep, *len, "error", &r) == 0) tp_mpr_str(&r, &e, &el);
    snprintf(why, n, "the daemon refused: %.*s", (int)el, e);
    nng_free(*rep, *len);
    *rep = NULL;
    return -1;
}

/* wait_ping waits until the daemon answers ping. */
static int wait_ping(const tcpd *d, char *why, size_t n)
{
    double end = now_ms() + PING_MS;
    while (now_ms() < end) {
        void *rep;
        size_t len;
        tp_buf q;
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            snprintf(why, n, "the daemon exited; see %s/daemon.log", d->dir);
            return -1;
        }
        req_begin(d, &q, "ping", 0);
        if (call(d, &q, 1000, &rep, &len, why, n) == 0) {
            nng_free(rep, len);
            return 0;
        }
        nap_ms(50);
    }
    return -1;
}

int tcpd_exec_new(const tcpd *d, int64_t *run, int64_t *exec, char key[TP_EXEC_KEY_LEN + 1],
                  char *why, size_t n)
{
    void *rep;
    size_t len;
    tp_buf q;
    tp_mpr r;
    const char *k;
    uint32_t kl;
    int64_t id;
    int rc = -1, got;
    if (wait_ping(d, why, n) != 0) return -1;
    req_begin(d, &q, "run.create", 2);
    tp_mp_cstr(&q, "name"), tp_mp_cstr(&q, "ranks_bench");
    tp_mp_cstr(&q, "check"), tp_mp_cstr(&q, "record");
    if (call(d, &q, REPLY_MS, &rep, &len, why, n) != 0) return -1;
    if (!(got = reply_int(rep, len, "run", run) == 0)) snprintf(why, n, "run.create: no run");
    nng_free(rep, len);
    if (!got) return -1;
    req_begin(d, &q, "exec.create", 3);
    tp_mp_cstr(&q, "run"), tp_mp_int(&q, *run);
    tp_mp_cstr(&q, "role"), tp_mp_cstr(&q, "main");
    tp_mp_cstr(&q, "argv"), tp_mp_array(&q, 0);
    if (call(d, &q, REPLY_MS, &rep, &len, why, n) != 0) return -1;
    if (reply_int(rep, len, "exec", &id) == 0 && find(rep, len, "key", &r) == 0 &&
        tp_mpr_str(&r, &k, &kl) == TP_OK && kl == TP_EXEC_KEY_LEN) {
        memcpy(key, k, kl);
        key[kl] = '\0';
        *exec = id;
        rc = 0;
    } else
        snprintf(why, n, "exec.create: no exec or key");
    nng_free(rep, len);
    return rc;
}

int tcpd_finish(const tcpd *d, int64_t exec, int64_t *events, int64_t *processes, bool *complete,
                char *why, size_t n)
{
    void *rep;
    size_t len;
    tp_buf q;
    int rc = -1;
    req_begin(d, &q, "exec.finish", 3);
    tp_mp_cstr(&q, "exec"), tp_mp_int(&q, exec);
    tp_mp_cstr(&q, "status"), tp_mp_int(&q, 0);
    tp_mp_cstr(&q, "wait_ms"), tp_mp_int(&q, 0);
    if (call(d, &q, REPLY_MS, &rep, &len, why, n) != 0) return -1;
    if (reply_int(rep, len, "events", events) == 0 &&
        reply_int(rep, len, "processes", processes) == 0 &&
        reply_bool(rep, len, "complete", complete) == 0)
        rc = 0;
    else
        snprintf(why, n, "exec.finish: no counts (still pending?)");
    nng_free(rep, len);
    return rc;
}

void tcpd_stop(tcpd *d)
{
    double end = now_ms() + STOP_MS;
    if (d->pid <= 0) return;
    kill(d->pid, SIGTERM);
    while (waitpid(d->pid, NULL, WNOHANG) == 0) {
        if (now_ms() > end) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, NULL, 0);
            break;
        }
        nap_ms(10);
    }
    d->pid = 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void tcpd_remove(tcpd *d)
{
    if (d->dir[0]) nftw(d->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
