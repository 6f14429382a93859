/* SPDX-License-Identifier: MIT
 * job.c -- deferred tensors and their parallel hashing (see job.h).  The
 * threads share the tensors out through one counter (tpa_team_each), largest first so
 * that no thread is left with a large one at the end; each writes only its
 * own tensors' results, and the patching and the gradient norm are done
 * afterwards on the calling thread, in the order the tensors were met. */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agent/devjob.h"
#include "agent/job.h"
#include "agent/team.h"

#define PARALLEL_BYTES    ((size_t)2 << 20) /* below this, one thread */
#define RELEASE_GIL_BYTES ((size_t)1 << 20)

#define P tpa_py

struct tpa_job {
    tpa_deferred *items;
    size_t n, cap;
    int slots; /* device slots enqueued: the highest slot + 1 */
    bool has_gnorm;
    size_t at_gnorm;
    double sync_sq;
};

tpa_job *tpa_job_create(void)
{
    return calloc(1, sizeof(tpa_job));
}

int tpa_job_add(tpa_job *j, const tpa_deferred *d)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 16;
        tpa_deferred *v = realloc(j->items, cap * sizeof *v);
        if (v == NULL) {
            P.Py_DecRef(d->keep);
            return -1;
        }
        j->items = v;
        j->cap = cap;
    }
    j->items[j->n++] = *d;
    if (d->slot >= 0 && d->slot + 1 > j->slots) j->slots = d->slot + 1;
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

typedef struct run_ctx {
    tpa_deferred *items;
    const size_t *order; /* NULL: the items' own order */
} run_ctx;

/* hash_one is what each thread runs for the k-th tensor: no Python, no lock. */
static void hash_one(void *arg, size_t k)
{
    run_ctx *c = arg;
    tpa_deferred *d = &c->items[c->order ? c->order[k] : k];
    if (!d->done)
        tp_digest_tensor(d->dtype, d->shape, d->ndim, d->data, d->nbytes, d->dt, d->digest, &d->st);
}

/* larger_first orders item indices by the bytes left to hash, most first. */
static int larger_first(const void *a, const void *b, void *items)
{
    const tpa_deferred *v = items, *p = &v[*(const size_t *)a], *q = &v[*(const size_t *)b];
    size_t x = p->done ? 0 : p->nbytes, y = q->done ? 0 : q->nbytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* host_fallback digests a host copy of device item d, whose device digest
 * was lost, and patches its leaf's kind; "none" when no copy can be made. */
static void host_fallback(tpa_deferred *d, tp_buf *body)
{
    PyObject *h = tpa_py_call0(d->keep, "cpu");
    const char *kind = TP_DKIND_XXH3;
    long long ptr = 0;
    if (h != NULL) {
        PyObject *v = tpa_py_call0(h, "data_ptr");
        ptr = v ? P.PyLong_AsLongLong(v) : 0;
        if (v) P.Py_DecRef(v);
    }
    if (h == NULL || P.PyErr_Occurred() || (ptr == 0 && d->nbytes > 0)) {
        P.PyErr_Clear();
        memset(d->digest, 0, sizeof d->digest);
        d->st.sum = d->st.l2 = d->st.maxabs = NAN;
        d->st.nonfinite = 0;
        kind = TP_DKIND_NONE;
    } else {
        tp_digest_tensor(d->dtype, d->shape, d->ndim, (const void *)(uintptr_t)ptr, d->nbytes,
                         d->dt, d->digest, &d->st);
    }
    if (h) P.Py_DecRef(h);
    if (!body->oom && d->at_kind + 5 <= body->len) memcpy(body->data + d->at_kind + 1, kind, 4);
}

/* collect_device fills in the results of j's device digests; the wait for
 * the GPU is made with the GIL released. */
static void collect_device(tpa_job *j, tp_buf *body)
{
    tpa_dev1_part *r = calloc((size_t)j->slots, sizeof *r);
    PyThreadState *ts = P.PyEval_SaveThread();
    bool ok = r != NULL && tpa_dev_collect(r, (size_t)j->slots) == 0;
    if (r == NULL) tpa_dev_collect(NULL, 0);
    P.PyEval_RestoreThread(ts);
    for (size_t i = 0; i < j->n; i++) {
        tpa_deferred *d = &j->items[i];
        if (d->slot < 0) continue;
        if (ok)
            tpa_dev_finish(d->dtype, d->shape, d->ndim, d->nbytes, d->dt, &r[d->slot], d->digest,
                           &d->st);
        else
            host_fallback(d, body);
        d->done = true;
    }
    free(r);
    j->slots = 0;
}

void tpa_job_run(tpa_job *j, tp_buf *body)
{
    run_ctx c;
    size_t total = 0, pending = 0, *order = NULL;
    double sq = 0; /* the deferred leaves' squared norms, in the order they were met */
    int threads = 1;
    PyThreadState *ts = NULL;

    if (j->n == 0) return;
    if (j->slots > 0) collect_device(j, body);
    /* copies were hashed when met (tensorleaf.c); only the rest counts here */
    for (size_t i = 0; i < j->n; i++)
        if (!j->items[i].done) total += j->items[i].nbytes, pending++;
    if (total >= PARALLEL_BYTES && pending > 1) {
        threads = tpa_team_size();
        if ((size_t)threads > pending) threads = (int)pending;
    }
    if (threads > 1 && (order = malloc(j->n * sizeof *order)) != NULL) {
        for (size_t i = 0; i < j->n; i++) order[i] = i;
        qsort_r(order, j->n, sizeof *order, larger_first, j->items);
    }
    c.items = j->items;
    c.order = order;
    if (total >= RELEASE_GIL_BYTES) ts = P.PyEval_SaveThread();
    tpa_team_each(hash_one, &c, j->n, threads);
    if (ts) P.PyEval_RestoreThread(ts);
    free(order);

    for (size_t i = 0; i < j->n; i++) {
        const tpa_deferred *d = &j->items[i];
        if (!body->oom && d->at_digest + 2 + TP_DIGEST_LEN <= body->len)
            memcpy(body->data + d->at_digest + 2, d->digest, TP_DIGEST_LEN);
        patch_f64(body, d->at_sum, d->st.sum);
        patch_f64(body, d->at_l2, d->st.l2);
        patch_f64(body, d->at_maxabs, d->st.maxabs);
        if (!body->oom && d->at_nonfinite + 9 <= body->len)
            put_be64(body->data + d->at_nonfinite + 1, d->st.nonfinite);
        if (!isnan(d->st.l2)) sq += d->st.l2 * d->st.l2;
    }
    if (j->has_gnorm) patch_f64(body, j->at_gnorm, sqrt(j->sync_sq + sq));
}

void tpa_job_destroy(tpa_job *j)
{
    if (j == NULL) return;
    if (j->slots > 0) { /* launched, never run: wait for them */
        PyThreadState *ts = P.PyEval_SaveThread();
        tpa_dev_collect(NULL, 0);
        P.PyEval_RestoreThread(ts);
    }
    for (size_t i = 0; i < j->n; i++)
        if (j->items[i].keep) P.Py_DecRef(j->items[i].keep);
    free(j->items);
    free(j);
}
