/* SPDX-License-Identifier: MIT
 * send.c -- bounded queue, sender thread, nng push, spool file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>

#include "agent/config.h"
#include "agent/log.h"
#include "agent/send.h"
#include "proto/mp.h"

#define QUEUE_MAX_BYTES ((size_t)512 << 20)
#define QUEUE_MAX_ITEMS 4096
#define FULL_WAIT_MS    2000

typedef struct item {
    struct item *next;
    uint8_t *data;
    size_t len;
    uint32_t nevents;
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
static int spooling;
static int sock_ok;
static nng_socket sock;
static int spool_fd = -1;

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void open_socket(void)
{
    int rv;
    if (tpa_cfg.daemon[0] == '\0') {
        spooling = 1;
        return;
    }
    if ((rv = nng_push0_open(&sock)) != 0) {
        TPA_LOG("nng_push0_open: %s", nng_strerror(rv));
        spooling = 1;
        return;
    }
    nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, tpa_cfg.send_timeout_ms);
    nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 20);
    nng_socket_set_ms(sock, NNG_OPT_RECONNMAXT, 200);
    if ((rv = nng_dial(sock, tpa_cfg.daemon, NULL, NNG_FLAG_NONBLOCK)) != 0) {
        TPA_LOG("nng_dial %s: %s", tpa_cfg.daemon, nng_strerror(rv));
        nng_close(sock);
        spooling = 1;
        return;
    }
    sock_ok = 1;
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
        snprintf(path, sizeof path, "%s/%lld-%d.spool", tpa_cfg.spool, (long long)tpa_cfg.exec,
                 (int)getpid());
        spool_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (spool_fd < 0) {
            TPA_LOG("cannot open spool %s: %s", path, strerror(errno));
            return -1;
        }
        TPA_LOG("daemon unreachable; spooling to %s", path);
    }
    if (write_all(spool_fd, hdr, 4) != 0 || write_all(spool_fd, it->data, it->len) != 0) return -1;
    return 0;
}

static void deliver(item *it)
{
    int rv;
    if (!spooling) {
        rv = nng_send(sock, it->data, it->len, 0);
        if (rv == 0) return;
        TPA_LOG("send failed (%s); switching to the spool", nng_strerror(rv));
        spooling = 1;
    }
    if (spool(it) != 0) {
        pthread_mutex_lock(&mu);
        dropped += it->nevents;
        pthread_mutex_unlock(&mu);
    }
}

static void *sender_main(void *arg)
{
    (void)arg;
    open_socket();
    pthread_mutex_lock(&mu);
    for (;;) {
        item *it;
        while (head == NULL && !stopping) pthread_cond_wait(&cv_work, &mu);
        if (head == NULL) break;
        it = head;
        head = it->next;
        if (head == NULL) tail = NULL;
        q_bytes -= it->len;
        q_items--;
        busy = 1;
        pthread_cond_broadcast(&cv_room);
        pthread_mutex_unlock(&mu);
        deliver(it);
        free(it->data);
        free(it);
        pthread_mutex_lock(&mu);
        busy = 0;
        pthread_cond_broadcast(&cv_room);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void tpa_send_submit(uint8_t *data, size_t len, uint32_t nevents)
{
    item *it;
    struct timespec dl;
    if (forked) {
        free(data);
        return;
    }
    it = malloc(sizeof *it);
    if (it == NULL) {
        free(data);
        pthread_mutex_lock(&mu);
        dropped += nevents;
        pthread_mutex_unlock(&mu);
        return;
    }
    it->next = NULL, it->data = data, it->len = len, it->nevents = nevents;
    pthread_mutex_lock(&mu);
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
        dropped += nevents;
        pthread_mutex_unlock(&mu);
        free(data);
        free(it);
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
    if (spool_fd >= 0) {
        fsync(spool_fd);
        close(spool_fd);
        spool_fd = -1;
    }
}

/* ask_seen sends one `seen` request; returns the reported seq or -2. */
static int64_t ask_seen(nng_socket req)
{
    tp_buf b;
    tp_mpr r;
    char *reply = NULL;
    size_t rlen = 0;
    uint32_t n;
    int64_t seq = -2;
    tp_buf_init(&b);
    tp_mp_map(&b, 3);
    tp_mp_cstr(&b, "cmd");
    tp_mp_cstr(&b, "seen");
    tp_mp_cstr(&b, "exec");
    tp_mp_int(&b, tpa_cfg.exec);
    tp_mp_cstr(&b, "pid");
    tp_mp_int(&b, getpid());
    if (b.oom || nng_send(req, b.data, b.len, 0) != 0) goto done;
    if (nng_recv(req, &reply, &rlen, NNG_FLAG_ALLOC) != 0) goto done;
    tp_mpr_init(&r, reply, rlen);
    if (tp_mpr_map(&r, &n) != TP_OK) goto done;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kl;
        if (tp_mpr_str(&r, &k, &kl) != TP_OK) break;
        if (tp_mp_str_eq(k, kl, "seq")) {
            int64_t v;
            if (tp_mpr_int(&r, &v) == TP_OK) seq = v;
            break;
        }
        if (tp_mpr_skip(&r) != TP_OK) break;
    }
done:
    if (reply) nng_free(reply, rlen);
    tp_buf_free(&b);
    return seq;
}

int tpa_send_confirm(uint64_t last_seq, int timeout_ms)
{
    nng_socket req;
    struct timespec t0, t;
    int rc = -1;
    if (forked || !started) return 0;
    if (spooling || tpa_cfg.control[0] == '\0') return spooling ? 0 : -1;
    if (nng_req0_open(&req) != 0) return -1;
    nng_socket_set_ms(req, NNG_OPT_SENDTIMEO, 500);
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 1000);
    nng_socket_set_ms(req, NNG_OPT_REQ_RESENDTIME, 1000);
    if (nng_dial(req, tpa_cfg.control, NULL, NNG_FLAG_NONBLOCK) != 0) goto done;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int64_t seq = ask_seen(req);
        if (seq >= 0 && (uint64_t)seq >= last_seq) {
            rc = 0;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms) break;
        nng_msleep(5);
    }
done:
    nng_close(req);
    return rc;
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
    return spooling != 0;
}

void tpa_send_atfork_child(void)
{
    /* the sender thread does not exist here and nng must not be touched */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv_work, NULL);
    pthread_cond_init(&cv_room, NULL);
    forked = 1;
    head = tail = NULL;
    q_bytes = q_items = 0;
    busy = 0;
    started = 0;
    spool_fd = -1;
}
