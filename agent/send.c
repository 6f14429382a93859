/* SPDX-License-Identifier: MIT
 * send.c -- bounded queue, sender thread, nng push, acknowledgements, spool.
 *
 * A batch nng accepted is not yet stored: it can sit in nng's buffers, in the
 * daemon's receive queue or in its open transaction when the daemon dies.  So
 * the sender thread keeps every batch it sent (the retained list, in seq
 * order) until the daemon's control command `seen` -- the highest contiguous
 * seq of this process stored and committed (daemon/store/gaps.c) -- covers the
 * batch's last event.  It asks every ASK_MS while anything is retained, at
 * once when ASK_BYTES were sent since it last asked, and every ASK_BYE_MS
 * while bye waits.  A retained batch is sent again when the push socket
 * reconnected since it was sent (the daemon restarted: what went to the old
 * one may be lost), or when `seen` has not moved for RESEND_MS and the batch
 * is that old (the daemon commits within 10 ms); the daemon skips events it
 * already has, so sending again is always safe.  Past RETAIN_MAX_BYTES the
 * oldest retained batches go to the spool file, which the tool ingests after
 * the command (duplicates are skipped there too): memory stays bounded and
 * nothing sent is forgotten unacknowledged.
 *
 * nng passes one message at a time from a push socket to the daemon, at
 * some tens of thousands a second, so when batches queue up (the daemon is
 * slower than the training) the sender sends the ones queued behind each
 * other as one message (take, push_merged): their events under the first
 * one's envelope, which is a batch like any other, so any daemon takes it.
 * Everything else stays per batch: each is retained, acknowledged and
 * spooled on its own, and sent again alone, so a batch the daemon refuses
 * (and spool reading skips) takes no other batch with it.
 *
 * When a send times out the daemon is taken as gone: what is retained and
 * everything after goes to the spool.  A seq that never reached the sender (a
 * batch dropped on a full queue or for memory) is a hole `seen` cannot pass,
 * and so is a batch longer than a tcp:// listener takes (it goes to the
 * spool unsent) or one the daemon would not store after MAX_RESENDS sends: the
 * retained batches after it go to the spool and later ones are sent without
 * acknowledgement, as all are when there is no control URL or the daemon
 * refuses `seen`.  At bye, tpa_send_confirm waits for the acknowledgements
 * and spools what is still unacknowledged when time runs out, or as soon as
 * the daemon has been unreachable for a send timeout.
 *
 * In resume's execution I (TRAINPARITY_INTERRUPT_AT) `seen` also carries
 * the end of the execution: once a process of it said bye "interrupt" the
 * daemon answers end, and every process of it ends.  The sender asks every
 * ASK_END_MS there even when nothing is retained, and on end it starts a
 * thread that runs the function tpa_send_on_end registered (the bridge:
 * bye, confirmation, _exit), since it cannot wait for its own confirmation
 * and the training thread may be blocked anywhere.  A process that has
 * handed no batch over yet has no sender thread and is not asked: the
 * daemon does not know it either.
 *
 * Threading: the queue, the counters and the flags below `mu` are under mu;
 * the retained list, the sockets and the spool file belong to the sender
 * thread (tpa_send_stop closes the file after joining it).  The pipe
 * callbacks run on nng's threads and only touch atomics.  The sender and
 * nng's threads run under SCHED_BATCH (batch_policy), so that handing a
 * batch over never takes the training thread's core.  A forked child
 * never touches nng.
 *
 * One file, though it is long: its parts (queue, push, retained list,
 * acknowledgement, resend, spool, end) are one state machine over state the
 * sender thread owns, and each part reads and changes the others' state
 * (an acknowledgement retires, a timeout spools, a reconnect resends).  Apart,
 * that state would be shared across files, and the threading rule above,
 * which this file can state and keep whole, would span them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>

#include "agent/config.h"
#include "agent/log.h"
#include "agent/send.h"
#include "proto/control.h"
#include "proto/event.h"
#include "proto/mp.h"

#define QUEUE_MAX_BYTES  ((size_t)512 << 20)
#define QUEUE_MAX_ITEMS  4096
#define FULL_WAIT_MS     2000
#define RETAIN_MAX_BYTES ((size_t)256 << 20) /* past this the oldest go to the spool */
#define ASK_MS           250                 /* `seen` this often while anything is retained */
#define ASK_BYE_MS       5                   /* ... and this often while bye waits */
#define ASK_BYTES        ((size_t)32 << 20)  /* ... and at once after this many bytes sent */
#define ASK_END_MS       500                 /* ... and this often while I's end may come */
#define RESEND_MS        2000                /* `seen` stuck this long: send again */
#define RESEND_BYE_MS    500                 /* ... while bye waits */
#define MAX_RESENDS      3                   /* a batch sent this often more is not storable */
#define MAX_REFUSALS     3                   /* refused `seen` answers before giving up on them */
#define SPOOL_WAIT_MS    2000                /* confirm's wait for the spool after giving up */
#define MERGE_MAX_BYTES  ((size_t)4 << 20)   /* at most, a message of merged batches */
#define REQ_SEND_MS      250
#define REQ_RECV_MS      1000
#define NO_HOLE          UINT64_MAX

typedef struct item {
    struct item *next;
    uint8_t *data;
    size_t len;
    size_t events_at; /* where the events array (array32) begins; 0: unknown */
    uint32_t nevents;
    uint64_t first, last; /* seq range */
    int64_t sent_ms;      /* when last sent (CLOCK_MONOTONIC) */
    unsigned gen;         /* pipe generation when last sent */
    unsigned resends;
} item;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_room = PTHREAD_COND_INITIALIZER;
static item *head, *tail;
static size_t q_bytes, q_items;
static int busy;     /* the sender holds an item outside the queue */
static int started;  /* thread created */
static int stopping; /* thread asked to end once the queue is empty */
static int forked;
static pthread_t thread;
static uint64_t dropped;
static int spooling;            /* everything goes to the spool from now on */
static int spooled_any;         /* a frame was written to the spool */
static int noack;               /* batches are sent without acknowledgement */
static int waiters;             /* tpa_send_confirm is waiting */
static size_t r_items;          /* retained batches */
static uint64_t unconfirmed;    /* batches sent that were neither acknowledged nor spooled */
static uint64_t sub_next;       /* the seq the next submitted batch starts at */
static uint64_t hole = NO_HOLE; /* the lowest seq the daemon will never have from us */
static void (*end_fn)(void);    /* what ends the process when the execution is over */

/* the sender thread's */
static item *r_head, *r_tail;
static size_t r_bytes, r_unasked;
static int64_t last_ask_ms, progress_ms;
static int sock_ok, req_ok, refusals;
static int end_started; /* the thread that ends the process was started */
static nng_socket sock, req;
static int spool_fd = -1;

/* pipe events of the push socket */
static atomic_uint pipe_gen;
static atomic_int pipes;
static atomic_llong down_ms; /* when the last pipe went away */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_in(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void free_item(item *it)
{
    free(it->data);
    free(it);
}

/* on_pipe counts the push socket's connections (nng's threads).  nng runs
 * REM_POST for every pipe it ran ADD_PRE for, not always ADD_POST. */
static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)p, (void)arg;
    if (ev == NNG_PIPE_EV_ADD_PRE) {
        atomic_fetch_add(&pipes, 1);
        atomic_fetch_add(&pipe_gen, 1);
    } else if (ev == NNG_PIPE_EV_REM_POST) {
        atomic_store(&down_ms, now_ms());
        atomic_fetch_sub(&pipes, 1);
    }
}

/* daemon_gone: no connection to the daemon for a whole send timeout; mu held. */
static bool daemon_gone(int64_t now)
{
    return sock_ok && atomic_load(&pipes) <= 0 &&
           now - atomic_load(&down_ms) >= tpa_cfg.send_timeout_ms;
}

static void open_socket(void)
{
    int rv;
    if (tpa_cfg.daemon[0] == '\0') {
        pthread_mutex_lock(&mu);
        spooling = 1;
        pthread_mutex_unlock(&mu);
        return;
    }
    if ((rv = nng_push0_open(&sock)) != 0) {
        TPA_LOG("nng_push0_open: %s", nng_strerror(rv));
        pthread_mutex_lock(&mu);
        spooling = 1;
        pthread_mutex_unlock(&mu);
        return;
    }
    nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, tpa_cfg.send_timeout_ms);
    nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 20);
    nng_socket_set_ms(sock, NNG_OPT_RECONNMAXT, 200);
    atomic_store(&down_ms, now_ms());
    nng_pipe_notify(sock, NNG_PIPE_EV_ADD_PRE, on_pipe, NULL);
    nng_pipe_notify(sock, NNG_PIPE_EV_REM_POST, on_pipe, NULL);
    if ((rv = nng_dial(sock, tpa_cfg.daemon, NULL, NNG_FLAG_NONBLOCK)) != 0) {
        TPA_LOG("nng_dial %s: %s", tpa_cfg.daemon, nng_strerror(rv));
        nng_close(sock);
        pthread_mutex_lock(&mu);
        spooling = 1;
        pthread_mutex_unlock(&mu);
        return;
    }
    pthread_mutex_lock(&mu);
    sock_ok = 1;
    pthread_mutex_unlock(&mu);
}

/* open_control dials the control socket; without it nothing is retained. */
static void open_control(void)
{
    if (tpa_cfg.control[0] != '\0' && nng_req0_open(&req) == 0) {
        nng_socket_set_ms(req, NNG_OPT_SENDTIMEO, REQ_SEND_MS);
        nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, REQ_RECV_MS);
        nng_socket_set_ms(req, NNG_OPT_REQ_RESENDTIME, REQ_RECV_MS);
        nng_socket_set_ms(req, NNG_OPT_RECONNMINT, 20);
        nng_socket_set_ms(req, NNG_OPT_RECONNMAXT, 200);
        if (nng_dial(req, tpa_cfg.control, NULL, NNG_FLAG_NONBLOCK) == 0)
            req_ok = 1;
        else
            nng_close(req);
    }
    if (!req_ok) {
        TPA_LOG("no control socket: batches are not acknowledged");
        pthread_mutex_lock(&mu);
        noack = 1;
        pthread_mutex_unlock(&mu);
    }
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* spool appends one frame; returns 0 on success. */
static int spool(const item *it)
{
    uint8_t hdr[4] = {(uint8_t)(it->len >> 24), (uint8_t)(it->len >> 16), (uint8_t)(it->len >> 8),
                      (uint8_t)it->len};
    if (spool_fd < 0) {
        char path[1024];
        if (tpa_cfg.spool[0] == '\0') return -1;
        snprintf(path, sizeof path, "%s/%lld-%lld.spool", tpa_cfg.spool, (long long)tpa_cfg.exec,
                 (long long)tpa_pid(getpid()));
        spool_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (spool_fd < 0) {
            TPA_LOG("cannot open spool %s: %s", path, strerror(errno));
            return -1;
        }
        TPA_LOG("spooling to %s", path);
    }
    if (write_all(spool_fd, hdr, 4) != 0 || write_all(spool_fd, it->data, it->len) != 0) return -1;
    pthread_mutex_lock(&mu);
    spooled_any = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* retire ends the retention of a sent batch: it goes to the spool, or, when
 * it cannot, it stays unconfirmed (it was sent, so it is not dropped). */
static void retire(item *it)
{
    if (spool(it) != 0) {
        pthread_mutex_lock(&mu);
        unconfirmed++;
        pthread_mutex_unlock(&mu);
    }
    free_item(it);
}

/* retire_all retires every retained batch. */
static void retire_all(void)
{
    size_t n = 0;
    while (r_head != NULL) {
        item *it = r_head;
        r_head = it->next;
        r_bytes -= it->len;
        retire(it);
        n++;
    }
    r_tail = NULL;
    if (n == 0) return;
    pthread_mutex_lock(&mu);
    r_items -= n;
    pthread_cond_broadcast(&cv_room);
    pthread_mutex_unlock(&mu);
}

/* keep retains a batch nng accepted, or forgets it when no acknowledgement
 * can come for it; past the cap the oldest retained go to the spool. */
static void keep(item *it)
{
    int retain, sp;
    pthread_mutex_lock(&mu);
    sp = spooling;
    retain = !sp && !noack && it->first < hole;
    if (retain) r_items++;
    if (!retain && !sp) unconfirmed++;
    pthread_mutex_unlock(&mu);
    if (sp) {
        retire(it);
        return;
    }
    if (!retain) {
        free_item(it);
        return;
    }
    it->next = NULL;
    if (r_tail)
        r_tail->next = it;
    else
        r_head = it, progress_ms = now_ms();
    r_tail = it;
    r_bytes += it->len;
    r_unasked += it->len;
    while (r_bytes > RETAIN_MAX_BYTES && r_head != r_tail) {
        item *old = r_head;
        r_head = old->next;
        r_bytes -= old->len;
        retire(old);
        progress_ms = now_ms();
        pthread_mutex_lock(&mu);
        r_items--;
        pthread_cond_broadcast(&cv_room);
        pthread_mutex_unlock(&mu);
    }
}

/* push_merged sends the batches first.. (before end) as one batch: the
 * envelope of the first, then every batch's events.  They are one process's,
 * their seqs contiguous and their envelopes equal (take), so the message is
 * a batch like any other. */
static int push_merged(item *first, item *end)
{
    size_t at = first->events_at, len = at + 5;
    uint32_t n = 0;
    uint8_t *p;
    nng_msg *m;
    int rv;
    for (item *it = first; it != end; it = it->next) {
        len += it->len - at - 5;
        n += it->nevents;
    }
    if ((rv = nng_msg_alloc(&m, len)) != 0) return rv;
    p = nng_msg_body(m);
    memcpy(p, first->data, at);
    p += at;
    *p++ = 0xdd; /* array32 */
    *p++ = (uint8_t)(n >> 24), *p++ = (uint8_t)(n >> 16), *p++ = (uint8_t)(n >> 8);
    *p++ = (uint8_t)n;
    for (item *it = first; it != end; it = it->next) {
        memcpy(p, it->data + at + 5, it->len - at - 5);
        p += it->len - at - 5;
    }
    if ((rv = nng_sendmsg(sock, m, 0)) != 0) nng_msg_free(m);
    return rv;
}

/* push sends the batches first.. (before end) on the socket, as one message
 * when there are several (take); 0 when nng took them. */
static int push(item *first, item *end)
{
    bool merged = first->next != end;
    int rv = merged ? push_merged(first, end) : 0;
    int64_t t;
    unsigned g;
    if (!merged || rv == NNG_ENOMEM) /* one message each */
        for (item *it = first; it != end; it = it->next)
            if ((rv = nng_send(sock, it->data, it->len, 0)) != 0) break;
    if (rv != 0) {
        TPA_LOG("send failed (%s); switching to the spool", nng_strerror(rv));
        return rv;
    }
    t = now_ms();
    g = atomic_load(&pipe_gen);
    for (item *it = first; it != end; it = it->next) it->sent_ms = t, it->gen = g;
    return 0;
}

/* go_spool sends everything to the spool from now on, what is retained first. */
static void go_spool(void)
{
    pthread_mutex_lock(&mu);
    spooling = 1;
    pthread_mutex_unlock(&mu);
    retire_all();
}

/* too_big_for_net tells whether a batch is longer than a network (tcp://)
 * listener of the daemon takes (TP_MAX_NET_MESSAGE).  Sent, it would only
 * make nng close the connection, and a push socket of an unpatched nng
 * 1.5.2 whose peer keeps closing can crash, here inside the training
 * process (tools/scripts/nng-patches/push0-closed-pipe.patch). */
static bool too_big_for_net(const item *it)
{
    return it->len > TP_MAX_NET_MESSAGE && !tp_url_local(tpa_cfg.daemon);
}

/* deliver sends a chain of batches (take), or spools them; each sent one
 * is retained (keep) on its own. */
static void deliver(item *chain)
{
    item *next;
    int sp;
    pthread_mutex_lock(&mu);
    sp = spooling;
    if (!sp && too_big_for_net(chain) && chain->first < hole) hole = chain->first;
    pthread_mutex_unlock(&mu);
    if (!sp && too_big_for_net(chain)) {
        /* alone (take merges up to MERGE_MAX_BYTES); a hole `seen` cannot
         * pass: later batches go unacknowledged */
        TPA_LOG("a batch of %zu bytes is over the network limit; spooled", chain->len);
        retire(chain);
        return;
    }
    if (!sp) {
        if (push(chain, NULL) == 0) {
            for (item *it = chain; it != NULL; it = next) {
                next = it->next;
                keep(it);
            }
            return;
        }
        go_spool();
    }
    for (item *it = chain; it != NULL; it = next) {
        next = it->next;
        if (spool(it) != 0) {
            pthread_mutex_lock(&mu);
            dropped += it->nevents;
            pthread_mutex_unlock(&mu);
        }
        free_item(it);
    }
}

/* ask_seen sends one `seen` request.  Returns 0 with *seq and *end (the
 * execution is over) when answered, -1 without an answer, -2 when the daemon
 * refused it. */
static int ask_seen(int64_t *seq, bool *end)
{
    tp_buf b;
    tp_mpr r;
    char *reply = NULL;
    size_t rlen = 0;
    bool ok = true, have = false, over = false;
    tp_err err;
    int64_t v = -1;
    int rc = -1;
    tp_buf_init(&b);
    tp_mp_map(&b, tpa_cfg.token[0] ? 4 : 3);
    tp_mp_cstr(&b, TP_CTL_CMD);
    tp_mp_cstr(&b, TPC_NAME(TPC_seen));
    tp_mp_cstr(&b, TPA_KEY(TPA_seen_exec));
    tp_mp_int(&b, tpa_cfg.exec);
    tp_mp_cstr(&b, TPA_KEY(TPA_seen_pid));
    tp_mp_int(&b, tpa_pid(getpid()));
    if (tpa_cfg.token[0]) {
        tp_mp_cstr(&b, TP_CTL_TOK);
        tp_mp_cstr(&b, tpa_cfg.token);
    }
    if (b.oom || nng_send(req, b.data, b.len, 0) != 0) goto done;
    if (nng_recv(req, &reply, &rlen, NNG_FLAG_ALLOC) != 0) goto done;
    /* a reply that is not a map, or holds a key of the wrong type: no answer */
    err = tp_mp_map_find(reply, rlen, TP_CTL_OK, &r);
    if ((err != TP_OK && err != TP_ENOENT) || (err == TP_OK && tp_mpr_bool(&r, &ok) != TP_OK))
        goto done;
    err = tp_mp_map_find(reply, rlen, TPR_KEY(TPR_seen_seq), &r);
    if (err == TP_OK && tp_mpr_int(&r, &v) != TP_OK) goto done;
    have = err == TP_OK;
    err = tp_mp_map_find(reply, rlen, TPR_KEY(TPR_seen_end), &r); /* a daemon before it: never */
    if (err == TP_OK && tp_mpr_bool(&r, &over) != TP_OK) goto done;
    if (ok && have) {
        *seq = v;
        *end = over;
        rc = 0;
    } else {
        rc = -2;
    }
done:
    if (reply) nng_free(reply, rlen);
    tp_buf_free(&b);
    return rc;
}

/* ack frees the retained batches the daemon has stored (last <= seq). */
static void ack(int64_t seq, int64_t now)
{
    size_t n = 0;
    while (r_head != NULL && seq >= 0 && r_head->last <= (uint64_t)seq) {
        item *it = r_head;
        r_head = it->next;
        r_bytes -= it->len;
        free_item(it);
        n++;
    }
    if (r_head == NULL) r_tail = NULL;
    if (n == 0) return;
    progress_ms = now;
    pthread_mutex_lock(&mu);
    r_items -= n;
    pthread_cond_broadcast(&cv_room);
    pthread_mutex_unlock(&mu);
}

/* resend sends again the retained batches the daemon should have stored by
 * t (asked then, with pipe generation g) and has not: those sent before the
 * push socket reconnected, and, when `seen` has not moved for wait ms, those
 * sent that long before. */
static void resend(int64_t t, unsigned g, int64_t wait)
{
    unsigned n = 0;
    bool stuck = t - progress_ms >= wait;
    if (r_head != NULL && stuck && r_head->resends >= MAX_RESENDS && r_head->sent_ms + wait <= t) {
        /* the daemon will not store it: a hole nothing after can pass */
        TPA_LOG("the daemon does not store seq %llu; not waiting for it",
                (unsigned long long)r_head->first);
        pthread_mutex_lock(&mu);
        if (r_head->first < hole) hole = r_head->first;
        pthread_mutex_unlock(&mu);
        retire_all();
        return;
    }
    for (item *it = r_head; it != NULL; it = it->next) {
        if (it->gen >= g && !(stuck && it->sent_ms + wait <= t)) continue;
        if (push(it, it->next) != 0) { /* alone: a batch the daemon refuses stays alone */
            go_spool();
            return;
        }
        it->resends++;
        n++;
    }
    if (n > 0) TPA_LOG("sent %u batches again that the daemon had not stored", n);
}

/* watch_end: whether the sender asks `seen` for the end of the execution
 * even with nothing retained (ASK_END_MS); mu held. */
static bool watch_end(void)
{
    return tpa_cfg.interrupt_at >= 0 && end_fn != NULL && req_ok && !noack && !spooling &&
           !end_started;
}

/* ask_due: milliseconds until the next `seen`, watch as watch_end said; <= 0
 * when due now. */
static int64_t ask_due(int urgent, bool watch, int64_t now)
{
    if (r_head == NULL) return watch ? last_ask_ms + ASK_END_MS - now : INT64_MAX;
    if (r_unasked >= ASK_BYTES) return 0;
    return last_ask_ms + (urgent ? ASK_BYE_MS : ASK_MS) - now;
}

static void *end_main(void *arg)
{
    void (*fn)(void);
    (void)arg;
    pthread_mutex_lock(&mu);
    fn = end_fn;
    pthread_mutex_unlock(&mu);
    if (fn != NULL) fn();
    return NULL;
}

/* start_end starts the thread that ends the process (tpa_send_on_end),
 * once.  It inherits the sender's mask (no signal of the process's) and
 * its policy. */
static void start_end(void)
{
    pthread_t t;
    pthread_attr_t a;
    if (end_started || pthread_attr_init(&a) != 0) return;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, end_main, NULL) == 0) {
        TPA_LOG("the execution is over (a process of it was interrupted); ending");
        end_started = 1;
    }
    pthread_attr_destroy(&a);
}

static void ask_and_settle(int urgent)
{
    int64_t seq = -1, t = now_ms();
    unsigned g = atomic_load(&pipe_gen);
    bool end = false;
    int rc;
    r_unasked = 0;
    rc = ask_seen(&seq, &end);
    last_ask_ms = now_ms();
    if (rc == -2 && ++refusals >= MAX_REFUSALS) {
        TPA_LOG("the daemon refuses `seen`: batches are not acknowledged");
        pthread_mutex_lock(&mu);
        noack = 1;
        pthread_mutex_unlock(&mu);
        retire_all();
        return;
    }
    if (rc != 0) return;
    refusals = 0;
    if (end && tpa_cfg.interrupt_at >= 0) start_end(); /* A, B and R never end so */
    ack(seq, last_ask_ms);
    resend(t, g, urgent ? RESEND_BYE_MS : RESEND_MS);
}

/* mergeable: whether cand, queued right behind last, can travel in one
 * message with the chain first..last of len bytes: the same process and
 * envelope (the rank can change between batches), contiguous seqs (a hole
 * stays a message boundary) and the merged message within MERGE_MAX_BYTES. */
static bool mergeable(const item *first, const item *last, const item *cand, size_t len)
{
    size_t at = first->events_at;
    return at != 0 && cand->events_at == at && last->nevents > 0 && cand->nevents > 0 &&
           cand->first == last->last + 1 && len + (cand->len - at - 5) <= MERGE_MAX_BYTES &&
           memcmp(first->data, cand->data, at) == 0;
}

/* take detaches the oldest queued batch and, unless everything goes to the
 * spool, the batches queued behind it that can go in one message with it:
 * when the daemon takes messages more slowly than the training makes them,
 * the next message carries everything queued meanwhile, and one message
 * costs nng about what one batch did.  Retention, resends and the spool
 * stay per batch.  mu held. */
static item *take(void)
{
    item *first = head, *last = head;
    size_t len = head->len;
    head = head->next;
    q_bytes -= first->len;
    q_items--;
    while (!spooling && head != NULL && mergeable(first, last, head, len)) {
        item *it = head;
        head = it->next;
        q_bytes -= it->len;
        q_items--;
        len += it->len - it->events_at - 5;
        last->next = it;
        last = it;
    }
    last->next = NULL;
    if (head == NULL) tail = NULL;
    return first;
}

/* batch_policy puts the sender thread, and the nng threads it starts (they
 * inherit it), under SCHED_BATCH: a full share of the CPU, but a wakeup
 * never preempts the thread running.  Under the default policy the batch a
 * step hands over woke the sender onto the core of the training thread,
 * which waited meanwhile: 0.25-0.36 ms of the MLP's 75 ms step (bench/,
 * agent_step.py) in tpa_emit_flush, 0.01 ms under SCHED_BATCH.  Where the
 * policy is refused nothing changes. */
static void batch_policy(void)
{
#ifdef SCHED_BATCH
    struct sched_param sp = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
#endif
}

static void *sender_main(void *arg)
{
    (void)arg;
    batch_policy();
    open_socket();
    if (sock_ok) open_control();
    pthread_mutex_lock(&mu);
    for (;;) {
        item *it = NULL;
        int sp, urgent;
        bool watch;
        while (head == NULL && !stopping && !(spooling && r_head != NULL)) {
            struct timespec dl;
            int64_t wait = ask_due(waiters, watch_end(), now_ms());
            if (wait <= 0) break;
            if (wait == INT64_MAX) {
                pthread_cond_wait(&cv_work, &mu);
                continue;
            }
            deadline_in(&dl, wait);
            pthread_cond_timedwait(&cv_work, &mu, &dl);
        }
        if (head != NULL) {
            it = take();
            busy = 1;
            pthread_cond_broadcast(&cv_room);
        }
        pthread_mutex_unlock(&mu);
        if (it != NULL) deliver(it);
        pthread_mutex_lock(&mu);
        if (it != NULL) {
            busy = 0;
            pthread_cond_broadcast(&cv_room);
        }
        sp = spooling, urgent = waiters, watch = watch_end();
        pthread_mutex_unlock(&mu);
        if (sp && r_head != NULL)
            retire_all();
        else if (ask_due(urgent, watch, now_ms()) <= 0)
            ask_and_settle(urgent);
        pthread_mutex_lock(&mu);
        if (head == NULL && stopping) break;
    }
    pthread_mutex_unlock(&mu);
    /* stopped without confirmation: what is unacknowledged goes to the spool */
    retire_all();
    return NULL;
}

void tpa_send_submit(uint8_t *data, size_t len, uint32_t nevents, uint64_t first_seq,
                     size_t events_at)
{
    item *it;
    struct timespec dl;
    if (forked) {
        free(data);
        return;
    }
    it = malloc(sizeof *it);
    pthread_mutex_lock(&mu);
    /* a seq that never reaches us is a hole the daemon's `seen` cannot pass */
    if (first_seq > sub_next && sub_next < hole) hole = sub_next;
    sub_next = first_seq + nevents;
    if (it == NULL) {
        if (first_seq < hole) hole = first_seq;
        dropped += nevents;
        pthread_mutex_unlock(&mu);
        free(data);
        return;
    }
    memset(it, 0, sizeof *it);
    it->data = data, it->len = len, it->nevents = nevents;
    if (events_at > 0 && events_at + 5 <= len && data[events_at] == 0xdd)
        it->events_at = events_at; /* else never merged */
    it->first = first_seq;
    it->last = first_seq + (nevents > 0 ? nevents - 1 : 0);
    if (!started) {
        sigset_t all, old;
        sigfillset(&all);
        /* the sender thread never takes the process's signals */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&thread, NULL, sender_main, NULL) == 0) started = 1;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    deadline_in(&dl, FULL_WAIT_MS);
    /* an empty queue always takes a batch, however large */
    while (started && !stopping && q_items > 0 &&
           (q_bytes + len > QUEUE_MAX_BYTES || q_items >= QUEUE_MAX_ITEMS))
        if (pthread_cond_timedwait(&cv_room, &mu, &dl) == ETIMEDOUT) break;
    if (!started || stopping ||
        (q_items > 0 && (q_bytes + len > QUEUE_MAX_BYTES || q_items >= QUEUE_MAX_ITEMS))) {
        if (first_seq < hole) hole = first_seq;
        dropped += nevents;
        pthread_mutex_unlock(&mu);
        free_item(it);
        return;
    }
    if (tail)
        tail->next = it;
    else
        head = it;
    tail = it;
    q_bytes += len;
    q_items++;
    pthread_cond_signal(&cv_work);
    pthread_mutex_unlock(&mu);
}

int tpa_send_drain(int timeout_ms)
{
    struct timespec dl;
    int rc = 0;
    if (forked) return 0;
    deadline_in(&dl, timeout_ms);
    pthread_mutex_lock(&mu);
    while (started && (head != NULL || busy))
        if (pthread_cond_timedwait(&cv_room, &mu, &dl) == ETIMEDOUT) {
            rc = -1;
            break;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}

int tpa_send_confirm(int timeout_ms)
{
    int64_t t0 = now_ms(), gave_up = -1;
    /* time to spool what is left stays within timeout_ms */
    int64_t wait = timeout_ms > 2 * SPOOL_WAIT_MS ? timeout_ms - SPOOL_WAIT_MS : timeout_ms / 2;
    int rc;
    if (forked) return 0;
    pthread_mutex_lock(&mu);
    if (!started) {
        pthread_mutex_unlock(&mu);
        return 0;
    }
    waiters++;
    pthread_cond_signal(&cv_work);
    for (;;) {
        struct timespec dl;
        int64_t now = now_ms();
        if (head == NULL && !busy && r_items == 0) break;
        if (gave_up < 0 && (now - t0 >= wait || daemon_gone(now))) {
            /* whatever is still unacknowledged reaches the daemon through the spool */
            TPA_LOG("%zu batches unacknowledged; spooling them", r_items + q_items);
            spooling = 1;
            gave_up = now;
            pthread_cond_signal(&cv_work);
        }
        if (gave_up >= 0 && now - gave_up >= timeout_ms - wait) break;
        deadline_in(&dl, 20);
        pthread_cond_timedwait(&cv_room, &mu, &dl);
    }
    waiters--;
    rc = head == NULL && !busy && r_items == 0 && unconfirmed == 0 ? 0 : -1;
    pthread_mutex_unlock(&mu);
    return rc;
}

void tpa_send_stop(void)
{
    int join;
    if (forked) return;
    pthread_mutex_lock(&mu);
    join = started && !stopping && head == NULL && !busy;
    stopping = 1;
    pthread_cond_broadcast(&cv_work);
    pthread_mutex_unlock(&mu);
    if (join) pthread_join(thread, NULL);
    /* a sender that did not end may still write to the spool: leave it open */
    if (spool_fd >= 0) {
        fsync(spool_fd);
        if (join) {
            close(spool_fd);
            spool_fd = -1;
        }
    }
}

uint64_t tpa_send_dropped(void)
{
    uint64_t d;
    pthread_mutex_lock(&mu);
    d = dropped;
    pthread_mutex_unlock(&mu);
    return d;
}

bool tpa_send_spooled(void)
{
    bool s;
    pthread_mutex_lock(&mu);
    s = spooling || spooled_any;
    pthread_mutex_unlock(&mu);
    return s;
}

void tpa_send_on_end(void (*fn)(void))
{
    pthread_mutex_lock(&mu);
    end_fn = fn;
    pthread_mutex_unlock(&mu);
}

void tpa_send_atfork_child(void)
{
    /* the sender thread does not exist here and nng must not be touched;
     * the parent's queued and retained batches are the parent's */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv_work, NULL);
    pthread_cond_init(&cv_room, NULL);
    forked = 1;
    head = tail = NULL;
    q_bytes = q_items = 0;
    r_head = r_tail = NULL;
    r_bytes = r_items = 0;
    busy = 0;
    started = 0;
    waiters = 0;
    spool_fd = -1;
    end_fn = NULL; /* a forked child is never asked to end: it has no sender */
}
