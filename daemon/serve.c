/* SPDX-License-Identifier: MIT
 * serve.c -- sockets, the poll loop, and the operator log.
 *
 * The loop waits in poll() on the pull socket's and the rep socket's
 * NNG_OPT_RECVFD descriptors and on a self-pipe (tpd_serve_stop, signals);
 * nng raises those descriptors while a message is waiting, so draining with
 * non-blocking receives until NNG_EAGAIN never misses one.  An ingest
 * transaction stays open for at most batch_max messages or COMMIT_MS: with a
 * commit per drained burst, small batches arriving one by one cost a commit
 * each (measured: 5 messages per commit, a third of the direct rate); with
 * the deadline, ~200.  A control request is answered only after everything
 * already received is committed.  NNG_OPT_RECVBUF lets agents keep sending
 * while a transaction commits. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/reqrep0/rep.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/control.h"
#include "daemon/ingest.h"
#include "daemon/serve.h"
#include "proto/control.h"
#include "proto/event.h"

#define BATCH_DEFAULT   256
#define RECV_QUEUE      1024 /* messages nng holds for the loop */
#define COMMIT_MS       10   /* an ingest transaction stays open at most this long */
#define MAX_REASONS     64
#define CONTROL_URL_MAX 4200

struct tpd_serve {
    tpd_store *store;
    tpd_ingest *ingest;
    tpd_control *control;
    nng_socket pull, rep;
    bool pull_open, rep_open;
    int pull_fd, rep_fd;
    int wake[2];
    atomic_int stop;
    unsigned batch_max;
    char control_url[CONTROL_URL_MAX];
    tpd_log_fn log;
    void *log_arg;
    char *reasons[MAX_REASONS]; /* distinct reasons already logged */
    int nreasons;
    bool reasons_full;
    tpd_serve_stats stats;
    tp_buf reply;
    double txn_start;  /* when the open ingest transaction began */
    unsigned txn_msgs; /* messages in it */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void logf_(tpd_serve *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logf_(tpd_serve *sv, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (sv->log == NULL) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    sv->log(sv->log_arg, line);
}

/* log_once logs what + reason the first time reason is seen. */
static void log_once(tpd_serve *sv, const char *what, const char *reason)
{
    for (int i = 0; i < sv->nreasons; i++)
        if (strcmp(sv->reasons[i], reason) == 0) return;
    if (sv->nreasons == MAX_REASONS) {
        if (!sv->reasons_full)
            logf_(sv, "%d distinct reasons logged; further new ones are not", MAX_REASONS);
        sv->reasons_full = true;
        return;
    }
    sv->reasons[sv->nreasons] = strdup(reason);
    if (sv->reasons[sv->nreasons]) sv->nreasons++;
    logf_(sv, "%s: %s (logged once)", what, reason);
}

/* ---- setup ---- */

tp_err tpd_private_dir(const char *dir, char *why, size_t whylen)
{
    char path[PATH_MAX];
    struct stat sb;
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        snprintf(why, whylen, "bad directory name");
        return TP_EIO;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
            return TP_EIO;
        }
        path[i] = i < n ? '/' : '\0';
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(why, whylen, "%s is not a directory", dir);
        return TP_EIO;
    }
    if (sb.st_uid != geteuid() || (sb.st_mode & S_ISVTX)) {
        snprintf(why, whylen, "%s is shared or not ours; use a private directory", dir);
        return TP_EIO;
    }
    if ((sb.st_mode & 07777) != 0700 && chmod(dir, 0700) != 0) {
        snprintf(why, whylen, "cannot chmod %s to 0700: %s", dir, strerror(errno));
        return TP_EIO;
    }
    return TP_OK;
}

static bool is_ipc(const char *url)
{
    return strncmp(url, "ipc://", 6) == 0;
}

static bool is_local(const char *url)
{
    return is_ipc(url) || strncmp(url, "inproc://", 9) == 0;
}

/* ipc_dir makes the directory of an ipc:// socket private. */
static tp_err ipc_dir(const char *url, char *why, size_t whylen)
{
    char dir[PATH_MAX];
    const char *path = url + 6, *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return tpd_private_dir(dir, why, whylen);
}

tp_err tpd_serve_default_listen(const char *db_path, char *out, size_t n)
{
    char dir[PATH_MAX], abs[PATH_MAX];
    const char *slash = strrchr(db_path, '/');
    int w;
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == db_path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - db_path), db_path);
    if (realpath(dir, abs) == NULL) return TP_EIO;
    w = snprintf(out, n, "ipc://%s%singest.ipc", abs, strcmp(abs, "/") == 0 ? "" : "/");
    return w < 0 || (size_t)w >= n ? TP_EINVAL : TP_OK;
}

static tp_err nng_fail(int rv, const char *what, const char *url, char *why, size_t whylen)
{
    snprintf(why, whylen, "%s %s: %s", what, url, nng_strerror(rv));
    return TP_ENET;
}

static tp_err open_sockets(tpd_serve *sv, const tpd_serve_opts *o, char *why, size_t whylen)
{
    int rv;
    if ((rv = nng_pull0_open(&sv->pull)) != 0) return nng_fail(rv, "open", "pull", why, whylen);
    sv->pull_open = true;
    rv = nng_socket_set_size(sv->pull, NNG_OPT_RECVMAXSZ, TP_MAX_MESSAGE);
    if (rv != 0) return nng_fail(rv, "configure", "pull", why, whylen);
    /* a receive queue lets agents send on while a transaction commits */
    rv = nng_socket_set_int(sv->pull, NNG_OPT_RECVBUF, RECV_QUEUE);
    if (rv != 0 && rv != NNG_ENOTSUP) return nng_fail(rv, "configure", "pull", why, whylen);
    for (size_t i = 0; i < o->nlisten; i++)
        if ((rv = nng_listen(sv->pull, o->listen[i], NULL, 0)) != 0)
            return nng_fail(rv, "cannot listen on", o->listen[i], why, whylen);
    if ((rv = nng_rep0_open(&sv->rep)) != 0) return nng_fail(rv, "open", "rep", why, whylen);
    sv->rep_open = true;
    if ((rv = nng_socket_set_ms(sv->rep, NNG_OPT_SENDTIMEO, 1000)) != 0)
        return nng_fail(rv, "configure", "rep", why, whylen);
    if ((rv = nng_listen(sv->rep, sv->control_url, NULL, 0)) != 0)
        return nng_fail(rv, "cannot listen on", sv->control_url, why, whylen);
    if ((rv = nng_socket_get_int(sv->pull, NNG_OPT_RECVFD, &sv->pull_fd)) != 0 ||
        (rv = nng_socket_get_int(sv->rep, NNG_OPT_RECVFD, &sv->rep_fd)) != 0)
        return nng_fail(rv, "poll descriptor of", "socket", why, whylen);
    return TP_OK;
}

/* check_opts validates URLs and prepares ipc directories. */
static tp_err check_opts(tpd_serve *sv, const tpd_serve_opts *o, char *why, size_t whylen)
{
    bool token = o->token && o->token[0];
    tp_err err;
    if (o->nlisten == 0 || o->listen == NULL) {
        snprintf(why, whylen, "no ingest URL");
        return TP_EINVAL;
    }
    if (o->control) {
        if (strlen(o->control) >= sizeof sv->control_url) {
            snprintf(why, whylen, "control URL too long");
            return TP_EINVAL;
        }
        snprintf(sv->control_url, sizeof sv->control_url, "%s", o->control);
    } else if (tp_url_control(o->listen[0], sv->control_url, sizeof sv->control_url) != TP_OK) {
        snprintf(why, whylen, "cannot derive a control URL from %s; give one", o->listen[0]);
        return TP_EINVAL;
    }
    for (size_t i = 0; i <= o->nlisten; i++) {
        const char *url = i < o->nlisten ? o->listen[i] : sv->control_url;
        if (!is_local(url) && !token) {
            snprintf(why, whylen, "%s is reachable from the network: it needs a --token", url);
            return TP_EINVAL;
        }
        if (is_ipc(url) && (err = ipc_dir(url, why, whylen)) != TP_OK) return err;
    }
    return TP_OK;
}

tp_err tpd_serve_open(tpd_serve **sp, tpd_store *s, const tpd_serve_opts *o, char *why,
                      size_t whylen)
{
    tpd_serve *sv;
    char dummy[8];
    tp_err err;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if (sp == NULL || s == NULL || o == NULL) return TP_EINVAL;
    if ((sv = calloc(1, sizeof *sv)) == NULL) return TP_ENOMEM;
    sv->store = s;
    sv->wake[0] = sv->wake[1] = -1;
    sv->batch_max = o->batch_max ? o->batch_max : BATCH_DEFAULT;
    sv->log = o->log;
    sv->log_arg = o->log_arg;
    atomic_init(&sv->stop, 0);
    tp_buf_init(&sv->reply);
    if ((err = check_opts(sv, o, why, whylen)) != TP_OK) goto fail;
    if (pipe(sv->wake) != 0 || fcntl(sv->wake[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(sv->wake[1], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(sv->wake[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(sv->wake[1], F_SETFD, FD_CLOEXEC) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        err = TP_EIO;
        goto fail;
    }
    if ((err = tpd_ingest_create(&sv->ingest, s, o->token)) != TP_OK) {
        snprintf(why, whylen, "cannot prepare ingest: %s", tp_strerror(err));
        goto fail;
    }
    err = tpd_control_create(&sv->control, s, sv->ingest,
                             is_local(sv->control_url) ? NULL : o->token);
    if (err != TP_OK) goto fail;
    if ((err = open_sockets(sv, o, why, whylen)) != TP_OK) goto fail;
    *sp = sv;
    return TP_OK;
fail:
    tpd_serve_close(sv);
    return err;
}

void tpd_serve_close(tpd_serve *sv)
{
    if (sv == NULL) return;
    if (sv->rep_open) nng_close(sv->rep);
    if (sv->pull_open) nng_close(sv->pull);
    tpd_control_destroy(sv->control);
    tpd_ingest_destroy(sv->ingest);
    if (sv->wake[0] >= 0) close(sv->wake[0]);
    if (sv->wake[1] >= 0) close(sv->wake[1]);
    for (int i = 0; i < sv->nreasons; i++) free(sv->reasons[i]);
    tp_buf_free(&sv->reply);
    free(sv);
}

const char *tpd_serve_control_url(const tpd_serve *sv)
{
    return sv->control_url;
}

void tpd_serve_get_stats(const tpd_serve *sv, tpd_serve_stats *st)
{
    *st = sv->stats;
}

void tpd_serve_stop(tpd_serve *sv)
{
    int saved = errno;
    ssize_t w;
    atomic_store(&sv->stop, 1);
    w = write(sv->wake[1], "x", 1); /* full pipe: a wake-up is pending anyway */
    (void)w;
    errno = saved;
}

/* ---- the loop ---- */

/* commit ends the ingest transaction, if one is open. */
static void commit(tpd_serve *sv)
{
    tp_err err;
    sv->txn_msgs = 0;
    if (!tpd_store_in_txn(sv->store)) return;
    if ((err = tpd_store_commit(sv->store)) != TP_OK)
        log_once(sv, "commit failed, batches lost", tpd_store_errmsg(sv->store));
    else
        sv->stats.commits++;
}

/* ingest_some stores up to max waiting messages in the open (or a new)
 * transaction; returns how many it received. */
static unsigned ingest_some(tpd_serve *sv, unsigned max)
{
    unsigned n = 0;
    char why[512];
    while (n < max) {
        nng_msg *m;
        tp_err err;
        if (nng_recvmsg(sv->pull, &m, NNG_FLAG_NONBLOCK) != 0) break;
        n++;
        sv->stats.messages++;
        if (!tpd_store_in_txn(sv->store)) {
            if ((err = tpd_store_begin(sv->store)) != TP_OK) {
                log_once(sv, "cannot begin a transaction", tpd_store_errmsg(sv->store));
                sv->stats.failed++;
                nng_msg_free(m);
                continue;
            }
            sv->txn_start = now_ms();
        }
        sv->txn_msgs++;
        err =
            tpd_ingest_message(sv->ingest, nng_msg_body(m), nng_msg_len(m), NULL, why, sizeof why);
        nng_msg_free(m);
        if (err == TP_OK) {
            sv->stats.stored++;
        } else if (err == TP_EPROTO || err == TP_EVERSION) {
            sv->stats.malformed++;
            log_once(sv, "malformed message dropped", why);
        } else {
            sv->stats.failed++;
            log_once(sv, "message not stored", why);
        }
    }
    return n;
}

/* ingest_waiting stores and commits what has arrived, batch by batch;
 * limit bounds the batches so that a flood cannot starve control. */
static void ingest_waiting(tpd_serve *sv, unsigned limit)
{
    for (unsigned i = 0; i < limit; i++) {
        unsigned n = ingest_some(sv, sv->batch_max);
        commit(sv);
        if (n < sv->batch_max) break;
    }
}

/* answer serves every waiting control request. */
static void answer(tpd_serve *sv)
{
    nng_msg *m;
    while (!tpd_control_shutdown(sv->control) && nng_recvmsg(sv->rep, &m, NNG_FLAG_NONBLOCK) == 0) {
        nng_msg *out = NULL;
        int rv;
        ingest_waiting(sv, 64);
        tpd_control_handle(sv->control, nng_msg_body(m), nng_msg_len(m), &sv->reply);
        nng_msg_free(m);
        sv->stats.requests++;
        if (sv->reply.oom || nng_msg_alloc(&out, 0) != 0 ||
            nng_msg_append(out, sv->reply.data, sv->reply.len) != 0) {
            log_once(sv, "control", "out of memory for a reply");
            if (out) nng_msg_free(out);
            continue;
        }
        if ((rv = nng_sendmsg(sv->rep, out, 0)) != 0) {
            nng_msg_free(out);
            log_once(sv, "control reply not sent", nng_strerror(rv));
        }
    }
}

tp_err tpd_serve_run(tpd_serve *sv, char *why, size_t whylen)
{
    struct pollfd fds[3];
    char dummy[8], junk[64];
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    fds[0].fd = sv->pull_fd;
    fds[1].fd = sv->rep_fd;
    fds[2].fd = sv->wake[0];
    while (!atomic_load(&sv->stop) && !tpd_control_shutdown(sv->control)) {
        int n, timeout = 1000;
        if (tpd_store_in_txn(sv->store)) {
            double left = sv->txn_start + COMMIT_MS - now_ms();
            timeout = left > 0 ? (int)left + 1 : 0;
        }
        for (int i = 0; i < 3; i++) fds[i].events = POLLIN, fds[i].revents = 0;
        n = poll(fds, 3, timeout);
        if (n < 0 && errno != EINTR) {
            snprintf(why, whylen, "poll: %s", strerror(errno));
            commit(sv);
            return TP_EIO;
        }
        while (read(sv->wake[0], junk, sizeof junk) > 0) {}
        if (atomic_load(&sv->stop)) break;
        /* a batch at a time, then control: a flood never starves requests;
         * the transaction is committed when full or COMMIT_MS old */
        ingest_some(sv, sv->batch_max - sv->txn_msgs);
        if (sv->txn_msgs >= sv->batch_max || now_ms() - sv->txn_start >= COMMIT_MS) commit(sv);
        answer(sv);
    }
    ingest_waiting(sv, 64);
    if (tpd_control_shutdown(sv->control)) {
        /* nng has no linger: give the shutdown reply time to leave */
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
    }
    return TP_OK;
}
