/* SPDX-License-Identifier: MIT
 * async.c -- the hashing thread and its jobs (see async.h).  Jobs form a FIFO
 * protected by one mutex; the thread hashes the head job's tensors, marks it
 * done, and goes on.  Only tpa_async_wait, on the thread that holds the GIL,
 * commits events and releases tensors. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/async.h"
#include "agent/config.h"
#include "agent/emit.h"

struct tpa_job {
    struct tpa_job *next;
    tp_kind kind;
    int64_t step;
    tp_buf body;
    tpa_deferred *items;
    size_t n, cap;
    bool has_gnorm;
    size_t at_gnorm;
    double sync_sq;
    int done;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static tpa_job *head, *tail;
static int started, failed, forked;

bool tpa_async_enabled(void)
{
    return tpa_cfg.async_hash && !forked && !failed;
}

tpa_job *tpa_job_create(tp_kind k, int64_t step)
{
    tpa_job *j = calloc(1, sizeof *j);
    if (j == NULL) return NULL;
    j->kind = k;
    j->step = step;
    tp_buf_init(&j->body);
    return j;
}

int tpa_job_add(tpa_job *j, const tpa_deferred *d)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 16;
        tpa_deferred *v = realloc(j->items, cap * sizeof *v);
        if (v == NULL) return -1;
        j->items = v;
        j->cap = cap;
    }
    j->items[j->n++] = *d;
    return 0;
}

size_t tpa_job_count(const tpa_job *j)
{
    return j->n;
}

void tpa_job_gnorm(tpa_job *j, size_t at, double sync_sq)
{
    j->has_gnorm = true;
    j->at_gnorm = at;
    j->sync_sq = sync_sq;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static void patch_f64(tp_buf *b, size_t at, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    if (!b->oom && at + 9 <= b->len) put_be64(b->data + at + 1, bits);
}

size_t tpa_put_f64_fixed(tp_buf *b, double v)
{
    size_t at = b->len;
    tp_mp_f64(b, v); /* msgpack-c always writes a float64 as 0xcb + 8 bytes */
    return at;
}

size_t tpa_put_u64_fixed(tp_buf *b, uint64_t v)
{
    uint8_t raw[9] = {0xcf};
    size_t at = b->len;
    put_be64(raw + 1, v);
    tp_buf_append(b, raw, sizeof raw);
    return at;
}

/* run hashes a job's tensors and patches its body.  No Python, no lock. */
static void run(tpa_job *j)
{
    double sq = 0; /* the large leaves' sum, then the others': as flatten.c adds them */
    for (size_t i = 0; i < j->n; i++) {
        tpa_deferred *d = &j->items[i];
        uint8_t dig[TP_DIGEST_LEN];
        tp_stats st;
        tpa_digest_tensor_serial(d->dtype, d->shape, d->ndim, d->data, d->nbytes, d->dt, dig, &st);
        if (!j->body.oom && d->at_digest + 2 + TP_DIGEST_LEN <= j->body.len)
            memcpy(j->body.data + d->at_digest + 2, dig, TP_DIGEST_LEN);
        patch_f64(&j->body, d->at_sum, st.sum);
        patch_f64(&j->body, d->at_l2, st.l2);
        patch_f64(&j->body, d->at_maxabs, st.maxabs);
        if (!j->body.oom && d->at_nonfinite + 9 <= j->body.len)
            put_be64(j->body.data + d->at_nonfinite + 1, st.nonfinite);
        if (!isnan(st.l2)) sq += st.l2 * st.l2;
    }
    if (j->has_gnorm) patch_f64(&j->body, j->at_gnorm, sqrt(j->sync_sq + sq));
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        tpa_job *j = head;
        while (j != NULL && j->done) j = j->next;
        if (j == NULL) {
            pthread_cond_wait(&cv, &mu);
            continue;
        }
        pthread_mutex_unlock(&mu);
        run(j);
        pthread_mutex_lock(&mu);
        j->done = 1;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

static void release(tpa_job *j, bool gil)
{
    for (size_t i = 0; i < j->n; i++)
        if (gil && j->items[i].keep) tpa_py.Py_DecRef(j->items[i].keep);
    free(j->items);
    tp_buf_free(&j->body);
    free(j);
}

void tpa_job_discard(tpa_job *j)
{
    if (j) release(j, true);
}

void tpa_job_submit(tpa_job *j, tp_buf *body)
{
    j->body = *body;
    tp_buf_init(body);
    pthread_mutex_lock(&mu);
    if (!started && !failed) {
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&t, NULL, thread_main, NULL) == 0) {
            pthread_detach(t);
            started = 1;
        } else {
            failed = 1;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!started) {
        /* no thread: hash here, as the synchronous path would */
        pthread_mutex_unlock(&mu);
        run(j);
        j->done = 1;
        pthread_mutex_lock(&mu);
    }
    if (tail)
        tail->next = j;
    else
        head = j;
    tail = j;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void tpa_async_wait(bool gil)
{
    PyThreadState *ts = NULL;
    tpa_job *list;
    pthread_mutex_lock(&mu);
    if (head == NULL) {
        pthread_mutex_unlock(&mu);
        return;
    }
    pthread_mutex_unlock(&mu);
    if (gil) ts = tpa_py.PyEval_SaveThread();
    pthread_mutex_lock(&mu);
    for (;;) {
        tpa_job *j = head;
        while (j != NULL && j->done) j = j->next;
        if (j == NULL) break;
        pthread_cond_wait(&cv, &mu);
    }
    list = head;
    head = tail = NULL;
    pthread_mutex_unlock(&mu);
    if (gil) tpa_py.PyEval_RestoreThread(ts);
    while (list != NULL) {
        tpa_job *next = list->next;
        tpa_emit_commit_at(list->kind, &list->body, list->step);
        release(list, gil);
        list = next;
    }
}

void tpa_async_atfork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv, NULL);
    head = tail = NULL; /* the parent's jobs; never committed here */
    started = 0;
    forked = 1;
}
