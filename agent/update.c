/* SPDX-License-Identifier: MIT
 * update.c -- parameter copies for exact update norms.  One arena, reused
 * across steps, holds the bytes of every parameter back to back.
 *
 * The copy before the step and the comparison after it are memory-bound
 * passes over every parameter (two on 11M float32 parameters took about 10
 * ms on one thread, 5 on two, on a 2-core machine).  Both run on the
 * process's compute threads (team.h), idle while the hook runs, shared out
 * through one counter (tpa_team_each): the copy in PIECE-byte pieces, the comparison
 * by whole tensors, largest first, so that each tensor's sum of squares is
 * the same chain of additions as on one thread, and the sums are added in
 * the tensors' order: the norm is the same bits whatever the number of
 * threads, and the same as the agent's before the threads (a stored run's
 * `update.norm` is compared exactly, `query diff`).  The GIL stays held:
 * the arena and the lists of tensors and pieces are the process's one set,
 * which another Python thread's optimizer step must not touch while the
 * threads read them. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/flatten.h"
#include "agent/team.h"
#include "agent/update.h"
#include "digest/digest.h"

#define P tpa_py

#define PIECE          ((size_t)1 << 20) /* a multiple of every element size */
#define PARALLEL_BYTES ((size_t)2 << 20) /* below this, one thread */

/* one tensor: its bytes now, where its copy is in the arena, and what the
 * comparison found */
typedef struct span {
    const uint8_t *data;
    size_t off, nb;
    tp_dtype dt;
    PyObject *keep;
    double sq;
    bool differs;
} span;

/* one piece of a tensor, for the copy */
typedef struct piece {
    size_t span, lo, hi;
} piece;

static uint8_t *arena;
static size_t arena_cap, arena_len;
static Py_ssize_t count;
static span *spans;
static size_t spans_cap, nspans;
static size_t *order; /* span indices, the most bytes first */
static size_t order_cap;
static piece *pieces;
static size_t pieces_cap, npieces;

/* dtype_code reads str(t.dtype) into a tp_dtype. */
static tp_dtype dtype_code(PyObject *t)
{
    PyObject *d = P.PyObject_GetAttrString(t, "dtype"), *s;
    Py_ssize_t n;
    const char *u;
    tp_dtype dt = TP_DT_OTHER;
    if (d == NULL) return dt;
    s = P.PyObject_Str(d);
    P.Py_DecRef(d);
    if (s == NULL) return dt;
    u = P.PyUnicode_AsUTF8AndSize(s, &n);
    if (u) dt = tp_dtype_parse(u);
    P.Py_DecRef(s);
    return dt;
}

static void *grow(void *v, size_t *cap, size_t want, size_t size)
{
    size_t c = *cap;
    void *w;
    if (want <= c) return v;
    while (c < want) c = c ? c * 2 : 64;
    if ((w = realloc(v, c * size)) == NULL) return NULL;
    *cap = c;
    return w;
}

static void release(size_t n)
{
    for (size_t i = 0; i < n; i++) P.Py_DecRef(spans[i].keep);
}

/* collect reads where each tensor of params keeps its bytes; for the copy
 * (copy), cuts them into pieces, else reads each one's dtype.  Returns the number of
 * tensors, with a reference to each held in spans (release them), or -1 with
 * a Python exception set. */
static Py_ssize_t collect(PyObject *params, bool copy, size_t *total)
{
    Py_ssize_t n = P.PyList_Size(params);
    size_t off = 0;
    npieces = 0;
    if (n < 0) return -1;
    if ((spans = grow(spans, &spans_cap, (size_t)n + 1, sizeof *spans)) == NULL) goto oom0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = P.PyList_GetItem(params, i), *keep;
        const void *data;
        size_t nb;
        if (tpa_tensor_bytes(t, &keep, &data, &nb) != 0) {
            release((size_t)i);
            return -1;
        }
        spans[i] = (span){data, off, nb, copy ? TP_DT_OTHER : dtype_code(t), keep, 0, false};
        for (size_t lo = 0; copy && lo < nb; lo += PIECE) {
            if ((pieces = grow(pieces, &pieces_cap, npieces + 1, sizeof *pieces)) == NULL) {
                release((size_t)i + 1);
                goto oom0;
            }
            pieces[npieces++] = (piece){(size_t)i, lo, nb - lo < PIECE ? nb : lo + PIECE};
        }
        off += nb;
    }
    *total = off;
    nspans = (size_t)n;
    return n;
oom0:
    P.PyErr_SetString(*P.Exc_RuntimeError, "out of memory for the update copy");
    return -1;
}

/* LANES independent partial sums: a single running sum is one chain of
 * dependent additions the compiler may not reorder (no fast-math); eight
 * chains keep the adders busy.  The lanes are added in a fixed order, so
 * the result is the same on every run. */
#define LANES 8

static double sq_diff(tp_dtype dt, const void *a, const void *b, size_t nb)
{
    double s[LANES] = {0}, t = 0;
    size_t i = 0, n;
    if (dt == TP_DT_F32) {
        const float *x = a, *y = b;
        n = nb / 4;
        for (; i + LANES <= n; i += LANES)
            for (int k = 0; k < LANES; k++) {
                double d = (double)x[i + k] - (double)y[i + k];
                s[k] += d * d;
            }
        for (; i < n; i++) {
            double d = (double)x[i] - (double)y[i];
            t += d * d;
        }
    } else if (dt == TP_DT_F64) {
        const double *x = a, *y = b;
        n = nb / 8;
        for (; i + LANES <= n; i += LANES)
            for (int k = 0; k < LANES; k++) {
                double d = x[i + k] - y[i + k];
                s[k] += d * d;
            }
        for (; i < n; i++) {
            double d = x[i] - y[i];
            t += d * d;
        }
    } else {
        /* other dtypes: the norm is not defined here; report change only */
        return NAN;
    }
    for (int k = 0; k < LANES; k++) t += s[k];
    return t;
}

/* copy_one is what each thread runs for the k-th piece, compare_one for
 * the k-th tensor, largest first: no Python, no lock; each writes only its
 * own piece of the arena, or its own tensor's results. */
static void copy_one(void *arg, size_t k)
{
    const piece *p = &pieces[k];
    const span *s = &spans[p->span];
    (void)arg;
    memcpy(arena + s->off + p->lo, s->data + p->lo, p->hi - p->lo);
}

static void compare_one(void *arg, size_t k)
{
    const size_t *by = arg; /* the tensors' order, or NULL: their own */
    span *s = &spans[by ? by[k] : k];
    if (s->nb == 0) return;
    /* one pass over both where the step moved the tensor (a positive sum of
     * squares says it did); the bytes compared only where it did not seem
     * to: equal values of other bit patterns (-0 and 0), NaNs, dtypes
     * without a norm */
    s->sq = sq_diff(s->dt, s->data, arena + s->off, s->nb);
    s->differs = s->sq > 0 || memcmp(arena + s->off, s->data, s->nb) != 0;
}

/* larger_first orders span indices by their bytes, most first. */
static int larger_first(const void *a, const void *b)
{
    size_t x = spans[*(const size_t *)a].nb, y = spans[*(const size_t *)b].nb;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void run(bool compare, size_t total)
{
    size_t tasks = compare ? nspans : npieces;
    int threads = 1;
    if (total >= PARALLEL_BYTES && tasks > 1) {
        threads = tpa_team_size();
        if ((size_t)threads > tasks) threads = (int)tasks;
    }
    if (!compare) {
        tpa_team_each(copy_one, NULL, tasks, threads);
        return;
    }
    /* on threads, the largest tensors first, so that none is left alone at
     * the end; on one, the order does not matter */
    if (threads > 1) {
        for (size_t i = 0; i < nspans; i++) order[i] = i;
        qsort(order, nspans, sizeof *order, larger_first);
    }
    tpa_team_each(compare_one, threads > 1 ? order : NULL, tasks, threads);
}

int tpa_update_begin(PyObject *params)
{
    size_t total = 0;
    Py_ssize_t n;
    arena_len = 0;
    count = 0;
    if ((n = collect(params, true, &total)) < 0) return -1;
    if (total > arena_cap) {
        uint8_t *a = realloc(arena, total * 2);
        if (a == NULL) {
            release((size_t)n);
            P.PyErr_SetString(*P.Exc_RuntimeError, "out of memory for the update copy");
            return -1;
        }
        arena = a;
        arena_cap = total * 2;
    }
    run(false, total);
    release((size_t)n);
    arena_len = total;
    count = n;
    return 0;
}

int tpa_update_end(PyObject *params, double *norm, bool *changed)
{
    size_t total = 0;
    Py_ssize_t n = P.PyList_Size(params);
    double s = 0;
    bool ch = false;
    if (n < 0) return -1;
    if (n != count) {
        P.PyErr_SetString(*P.Exc_RuntimeError, "parameter list changed during the step");
        return -1;
    }
    if ((n = collect(params, false, &total)) < 0) return -1;
    if (total != arena_len) {
        release((size_t)n);
        P.PyErr_SetString(*P.Exc_RuntimeError, "parameter sizes changed during the step");
        return -1;
    }
    if ((order = grow(order, &order_cap, nspans + 1, sizeof *order)) == NULL) {
        release((size_t)n);
        P.PyErr_SetString(*P.Exc_RuntimeError, "out of memory for the update copy");
        return -1;
    }
    run(true, total);
    release((size_t)n);
    for (size_t i = 0; i < nspans; i++)
        if (spans[i].differs) {
            ch = true;
            s += spans[i].sq;
        }
    *norm = sqrt(s);
    *changed = ch;
    return 0;
}
