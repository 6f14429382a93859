/* SPDX-License-Identifier: MIT
 * flatten.c -- the walker from Python objects to leaves (see flatten.h):
 * containers, scalars and other objects here; tensors and NumPy arrays in
 * tensorleaf.c, RNG states in rngstate.c (flatten_int.h).
 *
 * Canonical digests: every node feeds its parent's XXH3-128 state with a type
 * tag and its contents ('N' None, 'B' bool, 'I' int64, 'L' big int as text,
 * 'F' float64 bits, 'S' text, 'Y' bytes, 'A' tensor digest, 'D' dict,
 * 'T' tuple/list, 'O' other object), so equal Python values give equal
 * digests whatever process computed them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "agent/flatten_int.h"
#include "digest/digest.h"
#include "proto/event.h"

#define MAX_DEPTH          32
#define SCALAR_RUN         16
#define MAX_STR_VALUE      4096
#define DEFAULT_MAX_LEAVES 1000000u

tpa_types tpa_types_reg;

tpa_kind tpa_flat_classify(PyObject *o)
{
    PyObject *t = P.PyObject_Type(o);
    tpa_kind k = TPA_K_OTHER;
    P.Py_DecRef(t);
    if (o == P.None) return TPA_K_NONE;
    /* exact built-in types first: one pointer compare each */
    if (t == P.Float_Type) return TPA_K_FLOAT;
    if (t == P.Long_Type) return TPA_K_INT;
    if (t == P.Bool_Type) return TPA_K_BOOL;
    if (t == P.Unicode_Type) return TPA_K_STR;
    if (t == P.Dict_Type) return TPA_K_DICT;
    if (t == P.List_Type || t == P.Tuple_Type) return TPA_K_SEQ;
    if (isinst(o, tpa_types_reg.marker))
        k = TPA_K_MARKER;
    else if (isinst(o, tpa_types_reg.tensor))
        k = TPA_K_TENSOR;
    else if (isinst(o, tpa_types_reg.ndarray))
        k = TPA_K_NDARRAY;
    else if (isinst(o, P.Bool_Type))
        k = TPA_K_BOOL;
    else if (isinst(o, P.Long_Type))
        k = TPA_K_INT;
    else if (isinst(o, P.Float_Type))
        k = TPA_K_FLOAT;
    else if (isinst(o, P.Unicode_Type))
        k = TPA_K_STR;
    else if (isinst(o, P.Bytes_Type))
        k = TPA_K_BYTES;
    else if (isinst(o, P.Dict_Type))
        k = TPA_K_DICT;
    else if (isinst(o, P.List_Type) || isinst(o, P.Tuple_Type))
        k = TPA_K_SEQ;
    return k;
}

static int is_scalar(tpa_kind k)
{
    return k == TPA_K_NONE || k == TPA_K_BOOL || k == TPA_K_INT || k == TPA_K_FLOAT ||
           k == TPA_K_STR;
}

/* ---- path ---- */

static size_t push_key(tpa_flat *f, const char *s, size_t n)
{
    size_t old = f->plen;
    if (f->plen + n + 2 >= TPA_PATH_MAX) n = 0;
    if (f->plen > 0) f->path[f->plen++] = '.';
    memcpy(f->path + f->plen, s, n);
    f->plen += n;
    f->path[f->plen] = '\0';
    return old;
}

static size_t push_index(tpa_flat *f, Py_ssize_t i)
{
    size_t old = f->plen;
    int w = snprintf(f->path + f->plen, TPA_PATH_MAX - f->plen, "[%zd]", i);
    if (w > 0 && f->plen + (size_t)w < TPA_PATH_MAX) f->plen += (size_t)w;
    f->path[f->plen] = '\0';
    return old;
}

static void pop(tpa_flat *f, size_t old)
{
    f->plen = old;
    f->path[old] = '\0';
}

/* wrap_digest gives the digest a digest leaf carries for a node whose
 * canonical feed is ('T', d): the same value tpa_value_digest computes for
 * that node on its own, so a state in a checkpoint matches a snapshot leaf. */
static void wrap_digest(const uint8_t d[16], uint8_t e[16])
{
    XXH3_state_t h;
    XXH3_128bits_reset(&h);
    feed(&h, 'T', d, 16);
    finish(&h, e);
}

void tpa_flat_type_name(PyObject *o, char *buf, size_t n)
{
    PyObject *t = P.PyObject_Type(o), *nm = t ? P.PyObject_GetAttrString(t, "__name__") : NULL;
    Py_ssize_t len = 0;
    const char *s = nm ? utf8(nm, &len) : NULL;
    if (s == NULL) {
        P.PyErr_Clear();
        s = "?", len = 1;
    }
    snprintf(buf, n, "<%.*s>", (int)len, s);
    if (nm) P.Py_DecRef(nm);
    if (t) P.Py_DecRef(t);
}

/* ---- the walk ---- */

static int walk(tpa_flat *f, PyObject *o, int depth, XXH3_state_t *parent);

static void digest_leaf(tpa_flat *f, const uint8_t d[16], uint64_t nitems)
{
    if (room(f)) {
        size_t n;
        const char *path = leaf_path(f, &n);
        tp_enc_leaf_digest(f->out, path, n, d, nitems);
        f->nleaves++;
    }
}

static int scalar(tpa_flat *f, PyObject *o, tpa_kind k, XXH3_state_t *parent)
{
    size_t pn;
    const char *path = leaf_path(f, &pn);
    int emit = room(f);
    if (k == TPA_K_NONE) {
        feed(parent, 'N', NULL, 0);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_nil(f->out);
    } else if (k == TPA_K_BOOL) {
        uint8_t b = (uint8_t)(o == P.True);
        feed(parent, 'B', &b, 1);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_bool(f->out, b);
    } else if (k == TPA_K_INT) {
        int overflow = 0;
        long long v = P.PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && P.PyErr_Occurred()) return -1;
        if (overflow) {
            PyObject *s = P.PyObject_Str(o);
            Py_ssize_t n;
            const char *u = s ? utf8(s, &n) : NULL;
            if (u == NULL) {
                if (s) P.Py_DecRef(s);
                return -1;
            }
            feed(parent, 'L', u, (size_t)n);
            if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_str(f->out, u, (size_t)n);
            P.Py_DecRef(s);
        } else {
            feed_len(parent, 'I', (uint64_t)v);
            if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_int(f->out, v);
        }
    } else if (k == TPA_K_FLOAT) {
        double v = P.PyFloat_AsDouble(o);
        uint64_t bits;
        if (v == -1.0 && P.PyErr_Occurred()) return -1;
        memcpy(&bits, &v, 8);
        feed_len(parent, 'F', bits);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_f64(f->out, v);
    } else { /* TPA_K_STR */
        Py_ssize_t n;
        const char *u = utf8(o, &n);
        if (u == NULL) return -1;
        feed(parent, 'S', u, (size_t)n);
        if (emit && n <= MAX_STR_VALUE) {
            tp_enc_leaf_value_begin(f->out, path, pn);
            tp_mp_str(f->out, u, (size_t)n);
        } else if (emit) {
            uint8_t d[16];
            tp_digest_bytes(u, (size_t)n, d);
            tp_enc_leaf_digest(f->out, path, pn, d, (uint64_t)n);
        }
    }
    if (emit) f->nleaves++;
    return 0;
}

static int walk_dict(tpa_flat *f, PyObject *o, int depth, XXH3_state_t *h)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    feed_len(h, 'D', (uint64_t)P.PyDict_Size(o));
    while (P.PyDict_Next(o, &pos, &k, &v)) {
        Py_ssize_t n;
        const char *key;
        PyObject *s = NULL;
        size_t old;
        int rc;
        P.Py_IncRef(k);
        P.Py_IncRef(v);
        if (tpa_flat_classify(k) == TPA_K_STR) {
            key = utf8(k, &n);
        } else {
            s = P.PyObject_Str(k);
            key = s ? utf8(s, &n) : NULL;
        }
        if (key == NULL)
            rc = -1;
        else {
            feed(h, 'K', key, (size_t)n);
            old = push_key(f, key, (size_t)n);
            rc = walk(f, v, depth + 1, h);
            pop(f, old);
        }
        if (s) P.Py_DecRef(s);
        P.Py_DecRef(k);
        P.Py_DecRef(v);
        if (rc != 0) return -1;
    }
    return 0;
}

static int walk_seq(tpa_flat *f, PyObject *o, int depth, XXH3_state_t *parent)
{
    int is_list = isinst(o, P.List_Type);
    Py_ssize_t n = is_list ? P.PyList_Size(o) : P.PyTuple_Size(o);
    int all_scalar = n > SCALAR_RUN;
    XXH3_state_t h;
    uint8_t d[16], e[16];
    tpa_flat quiet;
    if (n < 0) return -1;
    for (Py_ssize_t i = 0; all_scalar && i < n; i++)
        all_scalar = is_scalar(tpa_flat_classify(seq_item(o, i, is_list)));
    XXH3_128bits_reset(&h);
    feed_len(&h, 'T', (uint64_t)n);
    if (all_scalar) {
        /* a long run of numbers (an RNG state, a loss history): one leaf */
        memset(&quiet, 0, sizeof quiet);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = seq_item(o, i, is_list);
            if (scalar(&quiet, it, tpa_flat_classify(it), &h) != 0) return -1;
        }
        finish(&h, d);
        wrap_digest(d, e);
        digest_leaf(f, e, (uint64_t)n);
        if (f->manifest) tpa_torch_rng_seq(f, o, is_list, n); /* a torch RNG state as ints */
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = seq_item(o, i, is_list);
            size_t old;
            int rc;
            P.Py_IncRef(it);
            old = push_index(f, i);
            rc = walk(f, it, depth + 1, &h);
            pop(f, old);
            P.Py_DecRef(it);
            if (rc != 0) return -1;
        }
        finish(&h, d);
        wrap_digest(d, e);
        if (f->manifest && tpa_rng_digest(o, e))
            digest_leaf(f, e, (uint64_t)n); /* an RNG state, in a tuple or a list */
        else if (f->manifest && !is_list)
            digest_leaf(f, e, (uint64_t)n);
    }
    feed(parent, 'T', d, 16);
    return 0;
}

/* walk_object flattens a plain object through its __dict__ (argparse
 * namespaces, dataclasses, whole modules saved with torch.save). */
static int walk_object(tpa_flat *f, PyObject *o, int depth, XXH3_state_t *parent)
{
    char name[80];
    PyObject *dict = NULL;
    XXH3_state_t h;
    uint8_t d[16];
    size_t pn;
    const char *path;
    tpa_flat_type_name(o, name, sizeof name);
    if (P.PyObject_HasAttrString(o, "__dict__")) dict = P.PyObject_GetAttrString(o, "__dict__");
    if (dict == NULL) P.PyErr_Clear();
    if (dict != NULL && tpa_flat_classify(dict) != TPA_K_DICT) {
        P.Py_DecRef(dict);
        dict = NULL;
    }
    if (dict == NULL || P.PyDict_Size(dict) == 0) {
        feed(parent, 'O', name, strlen(name));
        if (room(f)) {
            path = leaf_path(f, &pn);
            tp_enc_leaf_value_begin(f->out, path, pn);
            tp_mp_cstr(f->out, name);
            f->nleaves++;
        }
        if (dict) P.Py_DecRef(dict);
        return 0;
    }
    XXH3_128bits_reset(&h);
    feed(&h, 'O', name, strlen(name));
    if (walk_dict(f, dict, depth, &h) != 0) {
        P.Py_DecRef(dict);
        return -1;
    }
    P.Py_DecRef(dict);
    finish(&h, d);
    feed(parent, 'O', d, 16);
    return 0;
}

static int walk(tpa_flat *f, PyObject *o, int depth, XXH3_state_t *parent)
{
    tpa_kind k;
    if (depth > MAX_DEPTH) {
        feed(parent, 'O', "<deep>", 6);
        return 0;
    }
    k = tpa_flat_classify(o);
    switch (k) {
    case TPA_K_MARKER: {
        PyObject *v = P.PyObject_GetAttrString(o, "value");
        uint8_t d[16];
        if (v == NULL) return -1;
        if (!tpa_rng_digest(v, d) && tpa_value_digest(v, d) != 0) {
            P.Py_DecRef(v);
            return -1;
        }
        P.Py_DecRef(v);
        digest_leaf(f, d, 1);
        feed(parent, 'M', d, 16);
        return 0;
    }
    case TPA_K_TENSOR:
        return tpa_tensor_leaf(f, o, parent);
    case TPA_K_NDARRAY:
        return tpa_ndarray_leaf(f, o, parent);
    case TPA_K_NONE:
    case TPA_K_BOOL:
    case TPA_K_INT:
    case TPA_K_FLOAT:
    case TPA_K_STR:
        return scalar(f, o, k, parent);
    case TPA_K_BYTES: {
        char *p;
        Py_ssize_t n;
        uint8_t d[16];
        if (P.PyBytes_AsStringAndSize(o, &p, &n) != 0) return -1;
        feed(parent, 'Y', p, (size_t)n);
        tp_digest_bytes(p, (size_t)n, d);
        digest_leaf(f, d, (uint64_t)n);
        if (f->manifest && tpa_torch_rng_sized((size_t)n)) tpa_torch_rng_leaf(f, p, (size_t)n);
        return 0;
    }
    case TPA_K_DICT: {
        XXH3_state_t h;
        uint8_t d[16];
        XXH3_128bits_reset(&h);
        if (walk_dict(f, o, depth, &h) != 0) return -1;
        finish(&h, d);
        feed(parent, 'D', d, 16);
        if (f->manifest && tpa_rng_digest(o, d)) digest_leaf(f, d, 1); /* an RNG state in a dict */
        return 0;
    }
    case TPA_K_SEQ:
        return walk_seq(f, o, depth, parent);
    case TPA_K_OTHER:
        return walk_object(f, o, depth, parent);
    }
    return 0;
}

void tpa_flat_begin(tpa_flat *f, tp_buf *out, bool manifest)
{
    memset(f, 0, sizeof *f);
    f->out = out;
    f->manifest = manifest;
    f->max_leaves = DEFAULT_MAX_LEAVES;
    f->count_off = tp_mp_array32(out);
}

int tpa_flat_add(tpa_flat *f, const char *prefix, PyObject *obj)
{
    XXH3_state_t h;
    size_t n = strlen(prefix);
    if (n >= TPA_PATH_MAX) n = TPA_PATH_MAX - 1;
    memcpy(f->path, prefix, n);
    f->path[n] = '\0';
    f->plen = n;
    XXH3_128bits_reset(&h);
    return walk(f, obj, 0, &h);
}

void tpa_flat_end(tpa_flat *f)
{
    tp_mp_patch32(f->out, f->count_off, f->nleaves);
}

int tpa_value_digest(PyObject *obj, uint8_t out[16])
{
    tpa_flat quiet;
    XXH3_state_t h;
    memset(&quiet, 0, sizeof quiet);
    XXH3_128bits_reset(&h);
    if (walk(&quiet, obj, 0, &h) != 0) return -1;
    finish(&h, out);
    return 0;
}
