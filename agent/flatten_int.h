/* SPDX-License-Identifier: MIT
 * flatten_int.h -- what the walker's three files share, internal to them:
 * flatten.c walks Python state (containers, scalars, other objects),
 * tensorleaf.c makes tensors and NumPy arrays tensor leaves, rngstate.c
 * recognises RNG states and digests their content.  Here: the kinds of
 * node, the canonical digest's feed (flatten.c says the tags), and a walk's
 * leaf path and leaf budget.  All of it with the GIL held. */
#ifndef TP_AGENT_FLATTEN_INT_H
#define TP_AGENT_FLATTEN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#include "agent/flatten.h"
#include "agent/pyapi.h"
#include "digest/digest.h"

#define P tpa_py

typedef enum tpa_kind {
    TPA_K_OTHER,
    TPA_K_MARKER,
    TPA_K_TENSOR,
    TPA_K_NDARRAY,
    TPA_K_NONE,
    TPA_K_BOOL,
    TPA_K_INT,
    TPA_K_FLOAT,
    TPA_K_STR,
    TPA_K_BYTES,
    TPA_K_DICT,
    TPA_K_SEQ,
} tpa_kind;

/* tpa_flat_classify tells which kind of node o is (never fails: TPA_K_OTHER). */
tpa_kind tpa_flat_classify(PyObject *o);

/* tpa_flat_type_name writes "<Name>" for an object's type. */
void tpa_flat_type_name(PyObject *o, char *buf, size_t n);

/* isinst: o is an instance of type (NULL: no); never leaves a Python error. */
static inline int isinst(PyObject *o, PyObject *type)
{
    int r;
    if (type == NULL) return 0;
    r = P.PyObject_IsInstance(o, type);
    if (r < 0) {
        P.PyErr_Clear();
        return 0;
    }
    return r;
}

/* leaf_path is the path of the leaf to emit now ("$" at the root). */
static inline const char *leaf_path(tpa_flat *f, size_t *n)
{
    if (f->plen == 0) {
        *n = 1;
        return "$";
    }
    *n = f->plen;
    return f->path;
}

/* room: the walk emits leaves (not a digest-only walk) and has room for one more. */
static inline int room(tpa_flat *f)
{
    return f->out != NULL && f->nleaves < f->max_leaves;
}

static inline const char *utf8(PyObject *s, Py_ssize_t *n)
{
    return P.PyUnicode_AsUTF8AndSize(s, n);
}

/* The canonical digest's feed: a type tag and the bytes (feed_len: a 64-bit
 * number, little-endian); finish writes the digest.  A NULL h is fed nothing. */
static inline void feed(XXH3_state_t *h, char tag, const void *p, size_t n)
{
    if (h == NULL) return;
    XXH3_128bits_update(h, &tag, 1);
    if (n) XXH3_128bits_update(h, p, n);
}

static inline void feed_len(XXH3_state_t *h, char tag, uint64_t len)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(len >> (8 * i));
    feed(h, tag, le, 8);
}

static inline void finish(XXH3_state_t *h, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    memcpy(out, c.digest, 16);
}

static inline PyObject *seq_item(PyObject *o, Py_ssize_t i, int is_list)
{
    return is_list ? P.PyList_GetItem(o, i) : P.PyTuple_GetItem(o, i);
}

/* int_of_call is o.name() as an integer, or -1 (a Python exception may be set). */
static inline long long int_of_call(PyObject *o, const char *name)
{
    PyObject *v = tpa_py_call0(o, name);
    long long x;
    if (v == NULL) return -1;
    x = P.PyLong_AsLongLong(v);
    P.Py_DecRef(v);
    return x;
}

/* ---- tensor leaves (tensorleaf.c) ---- */

/* tpa_hash_memory digests with the GIL released for large buffers. */
void tpa_hash_memory(const char *dtname, const int64_t *shape, int ndim, const void *data,
                     size_t nbytes, tp_dtype dt, uint8_t d[16], tp_stats *st);

/* tpa_tensor_leaf emits the leaf of torch tensor t and feeds its digest to
 * parent; a tensor it cannot read becomes a value leaf naming its type.
 * Returns 0, or -1 with a Python exception set. */
int tpa_tensor_leaf(tpa_flat *f, PyObject *t, XXH3_state_t *parent);

/* tpa_ndarray_leaf handles NumPy arrays (RNG states in checkpoints) via tobytes.
 * In a manifest, a uint8 vector of a torch RNG state's length also gets the
 * leaf of that state (tpa_torch_rng_leaf). */
int tpa_ndarray_leaf(tpa_flat *f, PyObject *a, XXH3_state_t *parent);

/* ---- RNG states (rngstate.c) ---- */

/* tpa_rng_digest writes the content digest of o when o is an RNG state in
 * one of the shapes rngstate.c recognises and returns 1; 0 otherwise.  It
 * never leaves a Python error. */
int tpa_rng_digest(PyObject *o, uint8_t out[16]);

/* tpa_torch_rng_sized reports whether n bytes are as many as a torch RNG state. */
bool tpa_torch_rng_sized(size_t n);

/* tpa_torch_rng_leaf emits the leaf a torch.uint8 vector of the n bytes at p
 * would have: the snapshot's rng.torch_cpu leaf when they are that state. */
void tpa_torch_rng_leaf(tpa_flat *f, const void *p, size_t n);

/* tpa_torch_rng_seq emits the torch RNG leaf of a list or tuple of n ints
 * 0..255, n the state's length; anything else is left alone. */
void tpa_torch_rng_seq(tpa_flat *f, PyObject *o, int is_list, Py_ssize_t n);

#endif
