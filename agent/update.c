/* SPDX-License-Identifier: MIT
 * update.c -- parameter copies for exact update norms.  One arena, reused
 * across steps, holds the bytes of every parameter back to back. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/flatten.h"
#include "agent/update.h"
#include "digest/digest.h"

#define P tpa_py

static uint8_t *arena;
static size_t arena_cap, arena_len;
static Py_ssize_t count;

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

int tpa_update_begin(PyObject *params)
{
    Py_ssize_t n = P.PyList_Size(params);
    arena_len = 0;
    count = 0;
    if (n < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *keep;
        const void *data;
        size_t nb;
        if (tpa_tensor_bytes(P.PyList_GetItem(params, i), &keep, &data, &nb) != 0) return -1;
        if (arena_len + nb > arena_cap) {
            size_t cap = (arena_len + nb) * 2;
            uint8_t *a = realloc(arena, cap);
            if (a == NULL) {
                P.Py_DecRef(keep);
                P.PyErr_SetString(*P.Exc_RuntimeError, "out of memory for the update copy");
                return -1;
            }
            arena = a;
            arena_cap = cap;
        }
        if (nb) memcpy(arena + arena_len, data, nb);
        arena_len += nb;
        P.Py_DecRef(keep);
    }
    count = n;
    return 0;
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

int tpa_update_end(PyObject *params, double *norm, bool *changed)
{
    Py_ssize_t n = P.PyList_Size(params);
    size_t off = 0;
    double s = 0;
    bool ch = false;
    if (n < 0) return -1;
    if (n != count) {
        P.PyErr_SetString(*P.Exc_RuntimeError, "parameter list changed during the step");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = P.PyList_GetItem(params, i), *keep;
        const void *data;
        size_t nb;
        if (tpa_tensor_bytes(t, &keep, &data, &nb) != 0) return -1;
        if (off + nb > arena_len) {
            P.Py_DecRef(keep);
            P.PyErr_SetString(*P.Exc_RuntimeError, "parameter sizes changed during the step");
            return -1;
        }
        /* one pass over both copies where the step moved the tensor (a
         * positive sum of squares says it did); the bytes compared only
         * where it did not seem to: equal values of other bit patterns
         * (-0 and 0), NaNs, dtypes without a norm */
        if (nb) {
            double q = sq_diff(dtype_code(t), data, arena + off, nb);
            if (q > 0 || memcmp(arena + off, data, nb) != 0) {
                ch = true;
                s += q;
            }
        }
        off += nb;
        P.Py_DecRef(keep);
    }
    *norm = sqrt(s);
    *changed = ch;
    return 0;
}
