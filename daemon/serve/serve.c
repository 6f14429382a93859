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
 * already received is committed.  NNG_OPT_RECVBUF asks nng to queue
 * messages while a transaction commits; nng 1.5.2 accepts it and queues
 * nothing, so there each connection holds one message and the agents' own
 * queues (agent/send.c) wait meanwhile. */
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

#include "daemon/ingest/backlog.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/control.h"
#include "daemon/serve/netguard.h"
#include "daemon/serve/serve.h"
#include "proto/control.h"
#include "proto/event.h"

#define BATCH_DEFAULT   256
#define RECV_QUEUE      1024 /* messages nng may hold for the loop (1.5.2: none) */
#define COMMIT_MS       10   /* an ingest transaction stays open at most this long */
#define RETRY_MS        200  /* messages the database failed are stored again this often */
#define RETRY_BURSTS    64   /* transactions of waiting messages per loop turn */
#define MAX_REASONS     64
#define CONTROL_URL_MAX 4200

/* Network (tcp://) listeners: what peers can make the daemon hold before
 * their token is checked (daemon/serve/netguard.h); ipc:// listeners keep
 * TP_MAX_MESSAGE.  The agent flushes a batch once it holds 8 MiB
 * (agent/emit.c), so a batch is at most 8 MiB plus its last event: every
 * event up to 24 MiB arrives whole over tcp.  A longer message (a tensor of
 * more than ~6M float32 values under --capture values) closes its
 * connection when its length header arrives; the agent never sends one
 * (agent/send.c spools it instead), so its events reach the database only
 * through `trainparity-daemon ingest` on the daemon's host, and until then
 * the execution reports them missing (ERROR); for such values use an
 * ipc:// daemon on the training host.
 * Control requests are small (arguments, paths, an argv; the widest is
 * run.create of coverage --universe-file: ~50k disjoint ranges of ids fit
 * in 1 MiB).
 * The bound: nng's pull and rep read a connection's next message only once
 * the loop took the last one (they keep no queue of their own: nng 1.5.2
 * accepts RECV_QUEUE and leaves it unused), so each socket holds at most
 * one message per connection plus the one the loop handles.  The caps count
 * the connections that have not yet shown the token (a connection whose
 * message carried it stops counting: netguard.h), so for peers without it:
 *   ingest  (NET_CONNS + 1) x NET_INGEST_MAX  = 129 x 32 MiB = 4128 MiB
 *   control (NET_CONNS + 1) x NET_CONTROL_MAX = 129 x 1 MiB  =  129 MiB
 * (and, while the database fails, the waiting batches: TPD_BACKLOG_MAX).
 * The caps are that high because every agent of a job connects at its
 * start, before its first batch shows the token (a host of 8 ranks, their
 * launcher and spawned DataLoader workers: dozens at once), and a refused
 * agent may crash (nng 1.5.2, docs/capacity.md).
 * A connection beyond NET_CONNS, or beyond NET_CONNS_PER_ADDR from one IP
 * address, is closed at once.  One whose message is malformed (a wrong or
 * missing token, no batch at all, a batch refused) is not: the message is
 * dropped and the connection left open (daemon/serve/netguard.c says why). */
#define NET_INGEST_MAX     ((size_t)TP_MAX_NET_MESSAGE)
#define NET_CONTROL_MAX    TP_MAX_NET_REQUEST
#define NET_CONNS          128
#define NET_CONNS_PER_ADDR 64

struct tpd_serve {
    tpd_store *store;
    tpd_ingest *ingest;
    tpd_control *control;
    nng_socket pull, rep;
    tpd_netguard *pull_guard, *rep_guard; /* limits of network listeners */
    bool pull_open, rep_open;
    int pull_fd, rep_fd;
    int wake[2];
    atomic_int stop;
    unsigned batch_max;
    char control_url[CONTROL_URL_MAX];     /* the first control URL */
    char (*control_urls)[CONTROL_URL_MAX]; /* every one: --control, or one per ingest URL */
    size_t ncontrol;
    tpd_log_fn log;
    void *log_arg;
    char *reasons[MAX_REASONS]; /* distinct reasons already logged */
    int nreasons;
    bool reasons_full;
    tpd_serve_stats stats;
    tp_buf reply;
    double txn_start;     /* when the open ingest transaction began */
    unsigned txn_msgs;    /* messages in it */
    tpd_backlog *backlog; /* messages received and not committed (ingest/backlog.h) */
    double retry_at;      /* when the waiting ones are stored again; 0: none wait */
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
    bool made = false;
    if (n == 0 || n >= sizeof path) {
        snprintf(why, whylen, "bad directory name");
        return TP_EIO;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        path[i] = '\0';
        made = mkdir(path, 0700) == 0;
        if (!made && errno != EEXIST) {
            snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
            return TP_EIO;
        }
        /* ours since this instant: 0700 whatever the umask took */
        if (made && chmod(path, 0700) != 0) {
            snprintf(why, whylen, "cannot chmod %s to 0700: %s", path, strerror(errno));
            return TP_EIO;
        }
        path[i] = i < n ? '/' : '\0';
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(why, whylen, "%s is not a directory", dir);
        return TP_EIO;
    }
    /* a directory that was there keeps its mode: it may be a project's, or
     * the working directory; only one others could write into is refused */
    if (!made && (sb.st_uid != geteuid() || (sb.st_mode & (S_ISVTX | S_IWOTH)))) {
        snprintf(why, whylen, "%s is shared or not ours; use a private directory", dir);
        return TP_EIO;
    }
    return TP_OK;
}

static bool is_ipc(const char *url)
{
    return strncmp(url, "ipc://", 6) == 0;
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

/* open_sockets opens the pull socket on every ingest URL and the rep socket
 * on the control URL, each behind a guard that limits its network
 * listeners (the bound is stated above NET_INGEST_MAX). */
static tp_err open_sockets(tpd_serve *sv, const tpd_serve_opts *o, char *why, size_t whylen)
{
    tp_err err;
    int rv;
    if ((rv = nng_pull0_open(&sv->pull)) != 0) return nng_fail(rv, "open", "pull", why, whylen);
    sv->pull_open = true;
    rv = nng_socket_set_size(sv->pull, NNG_OPT_RECVMAXSZ, TP_MAX_MESSAGE);
    if (rv != 0) return nng_fail(rv, "configure", "pull", why, whylen);
    /* a receive queue lets agents send on while a transaction commits */
    rv = nng_socket_set_int(sv->pull, NNG_OPT_RECVBUF, RECV_QUEUE);
    if (rv != 0 && rv != NNG_ENOTSUP) return nng_fail(rv, "configure", "pull", why, whylen);
    err = tpd_netguard_create(&sv->pull_guard, sv->pull, NET_CONNS, NET_CONNS_PER_ADDR, sv->log,
                              sv->log_arg);
    if (err != TP_OK) {
        snprintf(why, whylen, "cannot guard the ingest socket: %s", tp_strerror(err));
        return err;
    }
    for (size_t i = 0; i < o->nlisten; i++) {
        const char *url = o->listen[i];
        err = tpd_netguard_listen(sv->pull_guard, url, tp_url_local(url) ? 0 : NET_INGEST_MAX, why,
                                  whylen);
        if (err != TP_OK) return err;
    }
    if ((rv = nng_rep0_open(&sv->rep)) != 0) return nng_fail(rv, "open", "rep", why, whylen);
    sv->rep_open = true;
    if ((rv = nng_socket_set_ms(sv->rep, NNG_OPT_SENDTIMEO, 1000)) != 0)
        return nng_fail(rv, "configure", "rep", why, whylen);
    err = tpd_netguard_create(&sv->rep_guard, sv->rep, NET_CONNS, NET_CONNS_PER_ADDR, sv->log,
                              sv->log_arg);
    if (err != TP_OK) {
        snprintf(why, whylen, "cannot guard the control socket: %s", tp_strerror(err));
        return err;
    }
    for (size_t i = 0; i < sv->ncontrol; i++) {
        const char *url = sv->control_urls[i];
        err = tpd_netguard_listen(sv->rep_guard, url, tp_url_local(url) ? 0 : NET_CONTROL_MAX, why,
                                  whylen);
        if (err != TP_OK) return err;
    }
    if ((rv = nng_socket_get_int(sv->pull, NNG_OPT_RECVFD, &sv->pull_fd)) != 0 ||
        (rv = nng_socket_get_int(sv->rep, NNG_OPT_RECVFD, &sv->rep_fd)) != 0)
        return nng_fail(rv, "poll descriptor of", "socket", why, whylen);
    return TP_OK;
}

/* check_opts validates URLs, derives the control URLs and prepares ipc
 * directories.  Without o->control, every ingest URL gets its own control
 * URL beside it (tp_url_control): the agents on other hosts ask the network
 * one, and the local tools the ipc:// one. */
static tp_err check_opts(tpd_serve *sv, const tpd_serve_opts *o, char *why, size_t whylen)
{
    bool token = o->token && o->token[0];
    size_t n = o->control ? 1 : o->nlisten;
    tp_err err;
    if (o->nlisten == 0 || o->listen == NULL) {
        snprintf(why, whylen, "no ingest URL");
        return TP_EINVAL;
    }
    if ((sv->control_urls = calloc(n, sizeof *sv->control_urls)) == NULL) return TP_ENOMEM;
    sv->ncontrol = n;
    for (size_t i = 0; i < n; i++) {
        char *out = sv->control_urls[i];
        if (o->control) {
            if (strlen(o->control) >= CONTROL_URL_MAX) {
                snprintf(why, whylen, "control URL too long");
                return TP_EINVAL;
            }
            snprintf(out, CONTROL_URL_MAX, "%s", o->control);
        } else if (tp_url_control(o->listen[i], out, CONTROL_URL_MAX) != TP_OK) {
            snprintf(why, whylen, "cannot derive a control URL from %s; give one", o->listen[i]);
            return TP_EINVAL;
        }
    }
    snprintf(sv->control_url, sizeof sv->control_url, "%s", sv->control_urls[0]);
    for (size_t i = 0; i < o->nlisten + n; i++) {
        const char *url = i < o->nlisten ? o->listen[i] : sv->control_urls[i - o->nlisten];
        if (!tp_url_local(url) && !token) {
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
    err = tpd_control_create(&sv->control, s, sv->ingest, o->token);
    if (err != TP_OK) goto fail;
    if ((err = tpd_backlog_create(&sv->backlog, 0)) != TP_OK) goto fail;
    tpd_control_set_backlog(sv->control, sv->backlog);
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
    /* after the sockets: nng_close returns once their pipe callbacks ran */
    tpd_netguard_destroy(sv->rep_guard);
    tpd_netguard_destroy(sv->pull_guard);
    tpd_control_destroy(sv->control);
    tpd_backlog_destroy(sv->backlog);
    tpd_ingest_destroy(sv->ingest);
    if (sv->wake[0] >= 0) close(sv->wake[0]);
    if (sv->wake[1] >= 0) close(sv->wake[1]);
    for (int i = 0; i < sv->nreasons; i++) free(sv->reasons[i]);
    tp_buf_free(&sv->reply);
    free(sv->control_urls);
    free(sv);
}

const char *tpd_serve_control_url(const tpd_serve *sv)
{
    return sv->control_url;
}

void tpd_serve_get_stats(const tpd_serve *sv, tpd_serve_stats *st)
{
    *st = sv->stats;
    st->waiting = sv->backlog ? tpd_backlog_waiting(sv->backlog) : 0;
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

/* db_reason words the database's reason for a failed call that returned
 * err: SQLite's own message, unless a rollback since has cleared it. */
static void db_reason(tpd_serve *sv, tp_err err, char *why, size_t whylen)
{
    const char *last = tpd_store_lasterr(sv->store);
    snprintf(why, whylen, "database: %s", last ? last : tp_strerror(err));
}

/* settle ends a transaction SQLite still has open while the store has none
 * (a failed rollback), so that the next begin can succeed. */
static void settle(tpd_serve *sv)
{
    if (tpd_store_settle(sv->store) != TP_OK)
        log_once(sv, "cannot roll back", tpd_store_errmsg(sv->store));
}

/* abandon rolls the open transaction back, whatever state the failure left
 * it in, and has its messages wait first in line for a retry (why). */
static void abandon(tpd_serve *sv, const char *why)
{
    tpd_store_rollback(sv->store);
    settle(sv);
    sv->txn_msgs = 0;
    tpd_backlog_abandoned(sv->backlog, why);
    if (tpd_backlog_waiting(sv->backlog) > 0) sv->retry_at = now_ms() + RETRY_MS;
    log_once(sv, "batches not stored yet, kept in memory and retried", why);
}

/* commit ends the ingest transaction, if one is open; its messages are
 * freed, or wait for a retry when it fails.  Returns false on a failure. */
static bool commit(tpd_serve *sv)
{
    char why[512];
    tp_err err;
    sv->txn_msgs = 0;
    if (!tpd_store_in_txn(sv->store)) return true;
    if ((err = tpd_store_commit(sv->store)) != TP_OK) {
        db_reason(sv, err, why, sizeof why);
        abandon(sv, why);
        return false;
    }
    sv->stats.commits++;
    sv->stats.stored += tpd_backlog_committed(sv->backlog);
    return true;
}

/* begin opens an ingest transaction unless one is open; false (why says
 * so) when it cannot. */
static bool begin(tpd_serve *sv, char *why, size_t whylen)
{
    tp_err err;
    if (tpd_store_in_txn(sv->store)) return true;
    settle(sv);
    if ((err = tpd_store_begin(sv->store)) != TP_OK) {
        db_reason(sv, err, why, whylen);
        return false;
    }
    sv->txn_start = now_ms();
    return true;
}

/* curable: a store failure a retry can cure (the disk, memory, the write
 * lock) rather than one of the message itself. */
static bool curable(tp_err err, const char *why)
{
    if (err == TP_EIO || err == TP_ENOMEM) return true;
    return err == TP_EDB && tpd_store_busy(why);
}

/* keep has m wait behind every message received before it; reason: why
 * (NULL: the backlog's current one).  Takes m. */
static tp_err keep(tpd_serve *sv, nng_msg *m, const char *reason, char *why, size_t whylen)
{
    tp_err err = tpd_backlog_push(sv->backlog, m, reason, why, whylen);
    if (err == TP_OK && sv->retry_at == 0) sv->retry_at = now_ms() + RETRY_MS;
    return err;
}

/* store stores m in the open (or a new) transaction and holds it until
 * that commits.  A failure a retry can cure rolls the transaction back and
 * has its messages and m wait; m alone is lost when the store refuses it
 * for another reason (counted for its execution; the transaction goes on).
 * Takes m; returns TP_OK when m is stored or waits, else ingest's error
 * (why says so). */
static tp_err store(tpd_serve *sv, nng_msg *m, char *why, size_t whylen)
{
    tpd_ingest_result res;
    tp_err err;
    if (tpd_backlog_reserve(sv->backlog) != TP_OK) {
        snprintf(why, whylen, "no memory to hold a batch until its commit");
        if (tpd_backlog_lose(sv->backlog, m, why) != TP_OK) return TP_EPROTO;
        return TP_ENOMEM;
    }
    if (!begin(sv, why, whylen)) {
        log_once(sv, "cannot begin a transaction; batches kept in memory and retried", why);
        return keep(sv, m, why, why, whylen);
    }
    sv->txn_msgs++;
    err = tpd_ingest_message(sv->ingest, nng_msg_body(m), nng_msg_len(m), &res, why, whylen);
    if (err == TP_OK) {
        tpd_netguard_proven(sv->pull_guard, m); /* it carried the token */
        tpd_backlog_hold(sv->backlog, m, res.exec, res.pid, res.events + res.dup);
        return TP_OK;
    }
    if (err == TP_EPROTO || err == TP_EVERSION) {
        nng_msg_free(m);
        return err;
    }
    if (curable(err, why)) {
        abandon(sv, why);
        return keep(sv, m, why, why, whylen);
    }
    return tpd_backlog_lose(sv->backlog, m, why) == TP_OK ? err : TP_EPROTO;
}

/* retry stores the waiting messages, oldest first, once RETRY_MS has
 * passed since the last failure (any time when now): a transaction of at
 * most batch_max at a time, at most RETRY_BURSTS of them.  A failure a retry
 * can cure has them wait RETRY_MS more. */
static void retry(tpd_serve *sv, bool now)
{
    char why[512];
    if (tpd_backlog_waiting(sv->backlog) == 0) {
        sv->retry_at = 0;
        return;
    }
    if (!now && now_ms() < sv->retry_at) return;
    if (!commit(sv)) return; /* none is open while messages wait; never mind */
    for (unsigned burst = 0; burst < RETRY_BURSTS && tpd_backlog_waiting(sv->backlog) > 0;
         burst++) {
        nng_msg *m;
        if (!begin(sv, why, sizeof why)) {
            sv->retry_at = now_ms() + RETRY_MS;
            tpd_backlog_abandoned(sv->backlog, why);
            log_once(sv, "cannot begin a transaction; batches kept in memory and retried", why);
            return;
        }
        for (unsigned k = 0; k < sv->batch_max && (m = tpd_backlog_next(sv->backlog)) != NULL;
             k++) {
            tpd_ingest_result res;
            tp_err err = tpd_ingest_message(sv->ingest, nng_msg_body(m), nng_msg_len(m), &res, why,
                                            sizeof why);
            if (err == TP_OK) {
                tpd_backlog_take(sv->backlog);
            } else if (err == TP_EPROTO || err == TP_EVERSION) {
                tpd_backlog_drop(sv->backlog, false, why);
                sv->stats.malformed++;
                log_once(sv, "malformed message dropped", why);
            } else if (curable(err, why)) {
                abandon(sv, why);
                return;
            } else {
                tpd_backlog_drop(sv->backlog, true, why);
                sv->stats.failed++;
                log_once(sv, "message lost", why);
            }
        }
        if (!commit(sv)) return;
    }
    sv->retry_at = tpd_backlog_waiting(sv->backlog) > 0 ? now_ms() : 0;
}

/* ingest_some receives up to max messages: each is stored in the open (or
 * a new) transaction, or, while messages wait for a retry, waits behind
 * them, so that a process's batches are stored in the order they came.
 * Returns how many it received. */
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
        if (tpd_backlog_waiting(sv->backlog) > 0)
            err = keep(sv, m, NULL, why, sizeof why);
        else
            err = store(sv, m, why, sizeof why);
        if (err == TP_OK) {
            continue;
        } else if (err == TP_EPROTO || err == TP_EVERSION) {
            sv->stats.malformed++;
            log_once(sv, "malformed message dropped", why);
        } else {
            sv->stats.failed++;
            log_once(sv, "message lost", why);
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

/* drain is the last word at exit: what has arrived is stored, the waiting
 * messages get one more try, and what still waits is lost (logged). */
static void drain(tpd_serve *sv)
{
    size_t n;
    char why[512];
    ingest_waiting(sv, 64);
    retry(sv, true);
    commit(sv);
    if (tpd_backlog_waiting(sv->backlog) == 0) return;
    snprintf(why, sizeof why, "%s; the daemon stopped", tpd_backlog_reason(sv->backlog));
    n = tpd_backlog_lose_all(sv->backlog, why);
    sv->stats.failed += n;
    logf_(sv, "%zu batches not stored: %s", n, why);
}

/* answer serves every waiting control request. */
static void answer(tpd_serve *sv)
{
    nng_msg *m;
    while (!tpd_control_shutdown(sv->control) && nng_recvmsg(sv->rep, &m, NNG_FLAG_NONBLOCK) == 0) {
        nng_msg *out = NULL;
        int rv;
        ingest_waiting(sv, 64);
        bool proven = false;
        tpd_control_handle(sv->control, nng_msg_body(m), nng_msg_len(m),
                           tpd_netguard_local(sv->rep_guard, m), &proven, &sv->reply);
        if (proven) tpd_netguard_proven(sv->rep_guard, m);
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
        if (tpd_backlog_waiting(sv->backlog) > 0) {
            double left = sv->retry_at - now_ms();
            int t = left > 0 ? (int)left + 1 : 0;
            if (t < timeout) timeout = t;
        }
        for (int i = 0; i < 3; i++) fds[i].events = POLLIN, fds[i].revents = 0;
        n = poll(fds, 3, timeout);
        if (n < 0 && errno != EINTR) {
            snprintf(why, whylen, "poll: %s", strerror(errno));
            drain(sv);
            return TP_EIO;
        }
        while (read(sv->wake[0], junk, sizeof junk) > 0) {}
        if (atomic_load(&sv->stop)) break;
        /* what waits for a retry goes first; then a batch at a time, then
         * control: a flood never starves requests; the transaction is
         * committed when full or COMMIT_MS old */
        retry(sv, false);
        ingest_some(sv, sv->batch_max - sv->txn_msgs);
        if (sv->txn_msgs >= sv->batch_max || now_ms() - sv->txn_start >= COMMIT_MS) commit(sv);
        answer(sv);
        tpd_control_tick(sv->control); /* the lease: holders gone, an owned daemon unheld */
    }
    drain(sv);
    if (tpd_control_shutdown(sv->control)) {
        /* nng has no linger: give the shutdown reply time to leave */
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
    }
    return TP_OK;
}
