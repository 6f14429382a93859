/* SPDX-License-Identifier: MIT
 * flatten.c -- the walker from Python objects to leaves (see flatten.h).
 *
 * Canonical digests: every node feeds its parent's XXH3-128 state with a type
 * tag and its contents ('N' None, 'B' bool, 'I' int64, 'L' big int as text,
 * 'F' float64 bits, 'S' text, 'Y' bytes, 'A' tensor digest, 'D' dict,
 * 'T' tuple/list, 'O' other object), so equal Python values give equal
 * digests whatever process computed them. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "agent/blob.h"
#include "agent/config.h"
#include "agent/devjob.h"
#include "agent/digest.h"
#include "agent/flatten.h"
#include "agent/job.h"
#include "proto/event.h"

#define MAX_DEPTH          32
#define SCALAR_RUN         16
#define MAX_STR_VALUE      4096
#define RELEASE_GIL_BYTES  (1u << 20)
#define DEFAULT_MAX_LEAVES 1000000u
#define DEFER_BYTES        (64u * 1024u) /* smaller tensors are hashed at once */

tpa_types tpa_types_reg;

#define P tpa_py

typedef enum kind {
    K_OTHER,
    K_MARKER,
    K_TENSOR,
    K_NDARRAY,
    K_NONE,
    K_BOOL,
    K_INT,
    K_FLOAT,
    K_STR,
    K_BYTES,
    K_DICT,
    K_SEQ,
} kind;

static int isinst(PyObject *o, PyObject *type)
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

static kind classify(PyObject *o)
{
    PyObject *t = P.PyObject_Type(o);
    kind k = K_OTHER;
    P.Py_DecRef(t);
    if (o == P.None) return K_NONE;
    /* exact built-in types first: one pointer compare each */
    if (t == P.Float_Type) return K_FLOAT;
    if (t == P.Long_Type) return K_INT;
    if (t == P.Bool_Type) return K_BOOL;
    if (t == P.Unicode_Type) return K_STR;
    if (t == P.Dict_Type) return K_DICT;
    if (t == P.List_Type || t == P.Tuple_Type) return K_SEQ;
    if (isinst(o, tpa_types_reg.marker))
        k = K_MARKER;
    else if (isinst(o, tpa_types_reg.tensor))
        k = K_TENSOR;
    else if (isinst(o, tpa_types_reg.ndarray))
        k = K_NDARRAY;
    else if (isinst(o, P.Bool_Type))
        k = K_BOOL;
    else if (isinst(o, P.Long_Type))
        k = K_INT;
    else if (isinst(o, P.Float_Type))
        k = K_FLOAT;
    else if (isinst(o, P.Unicode_Type))
        k = K_STR;
    else if (isinst(o, P.Bytes_Type))
        k = K_BYTES;
    else if (isinst(o, P.Dict_Type))
        k = K_DICT;
    else if (isinst(o, P.List_Type) || isinst(o, P.Tuple_Type))
        k = K_SEQ;
    return k;
}

static int is_scalar(kind k)
{
    return k == K_NONE || k == K_BOOL || k == K_INT || k == K_FLOAT || k == K_STR;
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

static const char *leaf_path(tpa_flat *f, size_t *n)
{
    if (f->plen == 0) {
        *n = 1;
        return "$";
    }
    *n = f->plen;
    return f->path;
}

static int room(tpa_flat *f)
{
    return f->out != NULL && f->nleaves < f->max_leaves;
}

/* ---- small helpers ---- */

static const char *utf8(PyObject *s, Py_ssize_t *n)
{
    return P.PyUnicode_AsUTF8AndSize(s, n);
}

static void feed(XXH3_state_t *h, char tag, const void *p, size_t n)
{
    if (h == NULL) return;
    XXH3_128bits_update(h, &tag, 1);
    if (n) XXH3_128bits_update(h, p, n);
}

static void feed_len(XXH3_state_t *h, char tag, uint64_t len)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(len >> (8 * i));
    feed(h, tag, le, 8);
}

static void finish(XXH3_state_t *h, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    memcpy(out, c.digest, 16);
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

/* type_name writes "<Name>" for an object's type. */
static void type_name(PyObject *o, char *buf, size_t n)
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

/* ---- tensors ---- */

typedef struct dtcache {
    PyObject *key;
    char name[40];
    tpa_dtype dt;
} dtcache;
static dtcache dtypes[32];

/* dtype_of maps a torch dtype object to its name, caching by identity (torch
 * dtypes are singletons that live as long as torch). */
static const dtcache *dtype_of(PyObject *dt)
{
    PyObject *s;
    Py_ssize_t n;
    const char *u;
    int i;
    for (i = 0; i < 32 && dtypes[i].key; i++)
        if (dtypes[i].key == dt) return &dtypes[i];
    s = P.PyObject_Str(dt);
    if (s == NULL) return NULL;
    u = utf8(s, &n);
    if (u == NULL || n >= 40) {
        P.Py_DecRef(s);
        return NULL;
    }
    static dtcache tmp;
    dtcache *e = i < 32 ? &dtypes[i] : &tmp;
    memcpy(e->name, u, (size_t)n);
    e->name[n] = '\0';
    e->dt = tpa_dtype_parse(e->name);
    P.Py_DecRef(s);
    if (i < 32) {
        P.Py_IncRef(dt);
        e->key = dt;
    }
    return e;
}

static int get_shape(PyObject *t, int64_t *shape, int *ndim)
{
    PyObject *sh = P.PyObject_GetAttrString(t, "shape");
    Py_ssize_t n;
    if (sh == NULL) return -1;
    n = P.PyTuple_Size(sh);
    if (n < 0 || n > TP_MAX_DIMS) {
        P.Py_DecRef(sh);
        if (n < 0) return -1;
        P.PyErr_SetString(*P.Exc_TypeError, "tensor has too many dimensions");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) shape[i] = P.PyLong_AsLongLong(P.PyTuple_GetItem(sh, i));
    P.Py_DecRef(sh);
    *ndim = (int)n;
    return P.PyErr_Occurred() ? -1 : 0;
}

/* cpu_contiguous returns a new reference to t, or to a CPU contiguous copy of
 * it (then *copied is set); *device receives the original device type
 * ("cpu", "cuda", "meta").  With stay, a CUDA tensor stays on its device
 * (made contiguous there), for a device digest. */
static PyObject *cpu_contiguous(PyObject *t, char *device, size_t dn, bool *copied, bool stay)
{
    PyObject *dev = P.PyObject_GetAttrString(t, "device"), *ty, *r, *c;
    Py_ssize_t n;
    const char *s;
    int contig;
    if (dev == NULL) return NULL;
    ty = P.PyObject_GetAttrString(dev, "type");
    P.Py_DecRef(dev);
    if (ty == NULL) return NULL;
    s = utf8(ty, &n);
    snprintf(device, dn, "%.*s", s ? (int)n : 1, s ? s : "?");
    P.Py_DecRef(ty);
    *copied = false;
    if (strcmp(device, "meta") == 0) {
        P.Py_IncRef(t);
        return t;
    }
    r = tpa_py_call0(t, "detach");
    if (r == NULL) return NULL;
    if (strcmp(device, "cpu") != 0 && !(stay && strcmp(device, "cuda") == 0)) {
        *copied = true;
        c = tpa_py_call0(r, "cpu");
        P.Py_DecRef(r);
        if (c == NULL) return NULL;
        r = c;
    }
    c = tpa_py_call0(r, "is_contiguous");
    if (c == NULL) {
        P.Py_DecRef(r);
        return NULL;
    }
    contig = P.PyObject_IsTrue(c);
    P.Py_DecRef(c);
    if (!contig) {
        *copied = true;
        c = tpa_py_call0(r, "contiguous");
        P.Py_DecRef(r);
        r = c;
    }
    return r;
}

static long long int_of_call(PyObject *o, const char *name)
{
    PyObject *v = tpa_py_call0(o, name);
    long long x;
    if (v == NULL) return -1;
    x = P.PyLong_AsLongLong(v);
    P.Py_DecRef(v);
    return x;
}

int tpa_tensor_bytes(PyObject *t, PyObject **keep, const void **data, size_t *nbytes)
{
    char device[32];
    bool copied;
    PyObject *c = cpu_contiguous(t, device, sizeof device, &copied, false);
    long long ptr, numel, es;
    if (c == NULL) return -1;
    if (strcmp(device, "meta") == 0) {
        *keep = c, *data = NULL, *nbytes = 0;
        return 0;
    }
    ptr = int_of_call(c, "data_ptr");
    numel = int_of_call(c, "numel");
    es = int_of_call(c, "element_size");
    if (P.PyErr_Occurred() || numel < 0 || es <= 0) {
        P.Py_DecRef(c);
        if (!P.PyErr_Occurred()) P.PyErr_SetString(*P.Exc_TypeError, "unreadable tensor");
        return -1;
    }
    *keep = c;
    *data = (const void *)(uintptr_t)ptr;
    *nbytes = (size_t)numel * (size_t)es;
    return 0;
}

/* hash_memory digests with the GIL released for large buffers. */
static void hash_memory(const char *dtname, const int64_t *shape, int ndim, const void *data,
                        size_t nbytes, tpa_dtype dt, uint8_t d[16], tp_stats *st)
{
    PyThreadState *ts = NULL;
    if (nbytes >= RELEASE_GIL_BYTES) ts = P.PyEval_SaveThread();
    tpa_digest_tensor(dtname, shape, ndim, data, nbytes, dt, d, st);
    if (ts) P.PyEval_RestoreThread(ts);
}

/* unreadable emits a value leaf for a tensor whose memory cannot be read
 * (sparse, quantized, nested...), keyed by its type so runs still compare. */
static int unreadable(tpa_flat *f, PyObject *t, XXH3_state_t *parent)
{
    char buf[128], name[80];
    size_t n;
    const char *path;
    P.PyErr_Clear();
    type_name(t, name, sizeof name);
    snprintf(buf, sizeof buf, "<unreadable tensor %s>", name);
    feed(parent, 'O', buf, strlen(buf));
    if (room(f)) {
        path = leaf_path(f, &n);
        tp_enc_leaf_value_begin(f->out, path, n);
        tp_mp_cstr(f->out, buf);
        f->nleaves++;
    }
    return 0;
}

/* defer_leaf encodes a tensor leaf whose digest and statistics are left as
 * fixed-width placeholders for the job, which gets the tensor (keep: a
 * reference that passes to the job).  A copy (a GPU tensor's host copy, a
 * strided tensor made contiguous) is hashed now and dropped, so that a
 * snapshot never holds more than one copy; it still joins the job, which
 * patches its results and adds its norm in order. */
static int defer_leaf(tpa_flat *f, PyObject *keep, bool copy, const char *dtype, tpa_dtype dt,
                      const int64_t *shape, int ndim, const void *data, size_t nbytes,
                      const char *device, int slot)
{
    static const uint8_t zero[TP_DIGEST_LEN];
    tpa_deferred d;
    size_t n;
    const char *path = leaf_path(f, &n);
    tp_buf *b = f->out;
    memset(&d, 0, sizeof d);
    tp_mp_array(b, slot >= 0 ? 12 : 11);
    tp_mp_str(b, "t", 1);
    tp_mp_str(b, path, n);
    tp_mp_cstr(b, dtype);
    tp_mp_array(b, (uint32_t)ndim);
    for (int i = 0; i < ndim; i++) tp_mp_int(b, shape[i]);
    d.at_digest = b->len;
    tp_mp_bin(b, zero, TP_DIGEST_LEN);
    d.at_sum = tpa_put_f64_fixed(b, 0);
    d.at_l2 = tpa_put_f64_fixed(b, 0);
    d.at_maxabs = tpa_put_f64_fixed(b, 0);
    d.at_nonfinite = tpa_put_u64_fixed(b, 0);
    tp_mp_cstr(b, device);
    tp_mp_bool(b, false);
    if (slot >= 0) {
        d.at_kind = b->len;
        tp_mp_cstr(b, TP_DKIND_DEV1); /* four bytes, as every kind the job may patch in (job.h) */
    }
    f->nleaves++;
    d.slot = slot;
    d.data = data;
    d.nbytes = nbytes;
    d.dt = dt;
    snprintf(d.dtype, sizeof d.dtype, "%s", dtype);
    memcpy(d.shape, shape, sizeof(int64_t) * (size_t)ndim);
    d.ndim = ndim;
    d.keep = keep;
    if (copy) {
        hash_memory(dtype, shape, ndim, data, nbytes, dt, d.digest, &d.st);
        P.Py_DecRef(keep);
        d.keep = NULL;
        d.done = true;
    }
    if (tpa_job_add(f->job, &d) != 0) {
        P.PyErr_SetString(*P.Exc_RuntimeError, "out of memory for a deferred digest");
        return -1;
    }
    return 0;
}

/* memory_of reads where contiguous tensor c's bytes are and how many: 0,
 * or -1 (unreadable; a Python exception may be set). */
static int memory_of(PyObject *c, const void **data, size_t *nbytes)
{
    long long ptr = int_of_call(c, "data_ptr"), numel = int_of_call(c, "numel"),
              es = int_of_call(c, "element_size");
    if (P.PyErr_Occurred() || numel < 0 || es <= 0 || (ptr == 0 && numel > 0)) return -1;
    *data = (const void *)(uintptr_t)ptr;
    *nbytes = (size_t)numel * (size_t)es;
    return 0;
}

/* device_digest launches the digest of CUDA tensor c (contiguous, nbytes at
 * device address data) on torch's current stream of its device: its slot,
 * or -1 (device digests off, or the launch failed: a host copy instead). */
static int device_digest(tpa_flat *f, PyObject *c, tpa_dtype dt, const void *data, size_t nbytes)
{
    long long dev;
    if (!tpa_dev_ready()) return -1;
    dev = int_of_call(c, "get_device");
    if (P.PyErr_Occurred() || dev < 0 || dev >= TPA_FLAT_DEVICES) {
        P.PyErr_Clear();
        return -1;
    }
    if (!(f->have_stream & (1u << dev))) {
        if (tpa_dev_stream((int)dev, &f->stream[dev]) != 0) {
            P.PyErr_Clear();
            return -1;
        }
        f->have_stream |= 1u << dev;
    }
    return tpa_dev_enqueue(data, nbytes, dt, (int)dev, f->stream[dev]);
}

static int tensor_leaf(tpa_flat *f, PyObject *t, XXH3_state_t *parent)
{
    char device[32];
    PyObject *c, *dto;
    const dtcache *dc;
    int64_t shape[TP_MAX_DIMS];
    int ndim = 0;
    uint8_t d[16];
    tp_stats st;
    const void *data = NULL;
    size_t nbytes = 0;
    bool blob = false, large, copied;
    /* A CUDA tensor met where its digest can wait for the job stays on its
     * device, to be digested there (devjob.h). */
    bool stay = f->job != NULL && !f->manifest && !tpa_cfg.capture_values && room(f);

    c = cpu_contiguous(t, device, sizeof device, &copied, stay);
    if (c == NULL) return unreadable(f, t, parent);
    dto = P.PyObject_GetAttrString(c, "dtype");
    dc = dto ? dtype_of(dto) : NULL;
    if (dto) P.Py_DecRef(dto);
    if (dc == NULL || get_shape(c, shape, &ndim) != 0) {
        P.Py_DecRef(c);
        return unreadable(f, t, parent);
    }
    if (strcmp(device, "meta") != 0 && memory_of(c, &data, &nbytes) != 0) {
        P.Py_DecRef(c);
        return unreadable(f, t, parent);
    }
    if (stay && strcmp(device, "cuda") == 0) {
        int slot = device_digest(f, c, dc->dt, data, nbytes);
        PyObject *h;
        if (slot >= 0)
            return defer_leaf(f, c, false, dc->name, dc->dt, shape, ndim, data, nbytes, device,
                              slot);
        /* not on the device after all: a host copy, as without device digests */
        h = tpa_py_call0(c, "cpu");
        P.Py_DecRef(c);
        if (h == NULL) return unreadable(f, t, parent);
        c = h;
        copied = true;
        if (memory_of(c, &data, &nbytes) != 0) {
            P.Py_DecRef(c);
            return unreadable(f, t, parent);
        }
    }
    large =
        !f->manifest && data != NULL && nbytes >= DEFER_BYTES && !tpa_cfg.capture_values && room(f);
    if (large && f->job != NULL)
        return defer_leaf(f, c, copied, dc->name, dc->dt, shape, ndim, data, nbytes, device, -1);
    hash_memory(dc->name, shape, ndim, data, nbytes, dc->dt, d, &st);
    if (tpa_cfg.capture_values && data != NULL && room(f))
        blob = tpa_blob_ship(d, data, nbytes, dc->name, shape, ndim) == 0;
    P.Py_DecRef(c);
    feed(parent, 'A', d, 16);
    if (!isnan(st.l2)) *(large ? &f->sq_large : &f->sq_sum) += st.l2 * st.l2;
    if (room(f)) {
        size_t n;
        const char *path = leaf_path(f, &n);
        tp_enc_leaf_tensor(f->out, path, n, dc->name, shape, (uint32_t)ndim, d, &st, device, blob);
        f->nleaves++;
    }
    return 0;
}

static void torch_rng_leaf(tpa_flat *f, const void *p, size_t n);
static bool torch_rng_sized(size_t n);

/* ndarray_leaf handles NumPy arrays (RNG states in checkpoints) via tobytes.
 * In a manifest, a uint8 vector of a torch RNG state's length also gets the
 * leaf of that state (torch_rng_leaf). */
static int ndarray_leaf(tpa_flat *f, PyObject *a, XXH3_state_t *parent)
{
    PyObject *dto = P.PyObject_GetAttrString(a, "dtype"), *nm = NULL, *bytes = NULL;
    int64_t shape[TP_MAX_DIMS];
    int ndim = 0;
    char *p;
    Py_ssize_t n, nlen;
    const char *name;
    uint8_t d[16];
    tp_stats st;
    char dtname[40];
    if (dto == NULL || (nm = P.PyObject_GetAttrString(dto, "name")) == NULL) goto bad;
    name = utf8(nm, &nlen);
    if (name == NULL || nlen >= (Py_ssize_t)sizeof dtname) goto bad;
    memcpy(dtname, name, (size_t)nlen);
    dtname[nlen] = '\0';
    if (get_shape(a, shape, &ndim) != 0) goto bad;
    bytes = tpa_py_call0(a, "tobytes");
    if (bytes == NULL || P.PyBytes_AsStringAndSize(bytes, &p, &n) != 0) goto bad;
    hash_memory(dtname, shape, ndim, p, (size_t)n, tpa_dtype_parse(dtname), d, &st);
    feed(parent, 'A', d, 16);
    if (room(f)) {
        size_t pl;
        const char *path = leaf_path(f, &pl);
        tp_enc_leaf_tensor(f->out, path, pl, dtname, shape, (uint32_t)ndim, d, &st, "numpy", false);
        f->nleaves++;
    }
    if (f->manifest && ndim == 1 && !strcmp(dtname, "uint8") && torch_rng_sized((size_t)n))
        torch_rng_leaf(f, p, (size_t)n);
    P.Py_DecRef(bytes);
    P.Py_DecRef(nm);
    P.Py_DecRef(dto);
    return 0;
bad:
    if (bytes) P.Py_DecRef(bytes);
    if (nm) P.Py_DecRef(nm);
    if (dto) P.Py_DecRef(dto);
    return unreadable(f, a, parent);
}

static PyObject *seq_item(PyObject *o, Py_ssize_t i, int is_list)
{
    return is_list ? P.PyList_GetItem(o, i) : P.PyTuple_GetItem(o, i);
}

/* ---- RNG states ----
 *
 * An RNG state is held by a checkpoint whatever container carries it: the
 * tuple np.random.get_state() returns, a dict {"keys": [...], "pos": n}, a
 * list; Python's random.getstate() as a tuple or a list.  rng_digest
 * recognises those exact shapes (a few type and length checks, so other
 * values cost nothing) and digests their content alone: a tag, the MT19937
 * words, the position and the Gaussian cache.  A snapshot's RNG leaf
 * (agent/glue/core.py's Digest) and a manifest's container of that shape carry this
 * digest, so daemon/checks/resume/why.c's manifest_has matches them by content. */

#define MT_WORDS     624
#define RNG_DICT_MAX 8

/* words reads exactly n integers (0 <= v < 2^32, or int32 bits) from a list,
 * tuple, NumPy array or tensor of n elements into w; 0 on success.  Any
 * Python error it meets is cleared. */
static int words(PyObject *o, Py_ssize_t n, uint32_t *w)
{
    kind k = classify(o);
    PyObject *l = NULL;
    int is_list, rc = -1;
    if (k == K_NDARRAY || k == K_TENSOR) {
        long long size = k == K_TENSOR ? int_of_call(o, "numel") : -1;
        if (k == K_NDARRAY) {
            PyObject *sz = P.PyObject_GetAttrString(o, "size");
            size = sz ? P.PyLong_AsLongLong(sz) : -1;
            if (sz) P.Py_DecRef(sz);
        }
        if (size != n || (l = tpa_py_call0(o, "tolist")) == NULL) goto end;
        o = l;
        k = classify(o);
    }
    if (k != K_SEQ) goto end;
    is_list = isinst(o, P.List_Type);
    if ((is_list ? P.PyList_Size(o) : P.PyTuple_Size(o)) != n) goto end;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = seq_item(o, i, is_list);
        kind ik = classify(it);
        long long v;
        /* K_OTHER: NumPy integer scalars (list(ndarray)), read via __index__ */
        if (ik != K_INT && ik != K_OTHER) goto end;
        v = P.PyLong_AsLongLong(it);
        if ((v == -1 && P.PyErr_Occurred()) || v < -2147483648LL || v > 0xffffffffLL) goto end;
        w[i] = (uint32_t)v;
    }
    rc = 0;
end:
    if (P.PyErr_Occurred()) P.PyErr_Clear();
    if (l) P.Py_DecRef(l);
    return rc;
}

/* int_item reads an int (not a bool, float or str) into *v; 0 on success. */
static int int_item(PyObject *o, long long *v)
{
    if (o == NULL || classify(o) != K_INT) return -1;
    *v = P.PyLong_AsLongLong(o);
    if (*v == -1 && P.PyErr_Occurred()) {
        P.PyErr_Clear();
        return -1;
    }
    return 0;
}

/* float_item reads a float or int into *v; 0 on success. */
static int float_item(PyObject *o, double *v)
{
    kind k = o ? classify(o) : K_OTHER;
    if (k == K_FLOAT) {
        *v = P.PyFloat_AsDouble(o);
    } else if (k == K_INT) {
        long long i;
        if (int_item(o, &i) != 0) return -1;
        *v = (double)i;
    } else {
        return -1;
    }
    if (P.PyErr_Occurred()) {
        P.PyErr_Clear();
        return -1;
    }
    return 0;
}

static int is_text(PyObject *o, const char *s)
{
    Py_ssize_t n;
    const char *u;
    if (o == NULL || classify(o) != K_STR || (u = utf8(o, &n)) == NULL) {
        P.PyErr_Clear();
        return 0;
    }
    return (size_t)n == strlen(s) && !memcmp(u, s, (size_t)n);
}

static void feed_words(XXH3_state_t *h, const uint32_t *w, size_t n)
{
    uint8_t le[4];
    for (size_t i = 0; i < n; i++) {
        for (int b = 0; b < 4; b++) le[b] = (uint8_t)(w[i] >> (8 * b));
        XXH3_128bits_update(h, le, 4);
    }
}

/* numpy_digest digests a NumPy MT19937 state; the Gaussian cache a
 * container leaves out is 0, as np.random.set_state sets it then. */
static void numpy_digest(const uint32_t *key, long long pos, long long has_gauss, double gauss,
                         uint8_t out[16])
{
    XXH3_state_t h;
    uint64_t bits;
    if (!has_gauss) gauss = 0.0;
    memcpy(&bits, &gauss, 8);
    XXH3_128bits_reset(&h);
    feed(&h, 'R', "numpy.MT19937", 13);
    feed_words(&h, key, MT_WORDS);
    feed_len(&h, 'I', (uint64_t)pos);
    feed_len(&h, 'B', (uint64_t)(has_gauss != 0));
    feed_len(&h, 'F', bits);
    finish(&h, out);
}

/* rng_seq recognises ("MT19937", key, pos[, has_gauss, gauss]) and
 * (3, 625 words, gauss_next) as a tuple or list. */
static int rng_seq(PyObject *o, uint8_t out[16])
{
    uint32_t w[MT_WORDS + 1];
    int is_list = isinst(o, P.List_Type);
    Py_ssize_t n = is_list ? P.PyList_Size(o) : P.PyTuple_Size(o);
    long long pos, has_gauss = 0;
    double gauss = 0.0;
    if (n != 3 && n != 5) return 0;
    if (is_text(seq_item(o, 0, is_list), "MT19937")) {
        if (words(seq_item(o, 1, is_list), MT_WORDS, w) != 0 ||
            int_item(seq_item(o, 2, is_list), &pos) != 0 || pos < 0 || pos > MT_WORDS)
            return 0;
        if (n == 5 && (int_item(seq_item(o, 3, is_list), &has_gauss) != 0 ||
                       float_item(seq_item(o, 4, is_list), &gauss) != 0))
            return 0;
        numpy_digest(w, pos, has_gauss, gauss, out);
        return 1;
    }
    if (n == 3 && int_item(seq_item(o, 0, is_list), &pos) == 0 && pos == 3) {
        PyObject *g = seq_item(o, 2, is_list);
        XXH3_state_t h;
        uint64_t bits = 0;
        bool none = g == P.None;
        if (words(seq_item(o, 1, is_list), MT_WORDS + 1, w) != 0 || w[MT_WORDS] > MT_WORDS ||
            (!none && float_item(g, &gauss) != 0))
            return 0;
        memcpy(&bits, &gauss, 8);
        XXH3_128bits_reset(&h);
        feed(&h, 'R', "python.MT19937", 14);
        feed_words(&h, w, MT_WORDS + 1);
        if (none)
            feed(&h, 'N', NULL, 0);
        else
            feed_len(&h, 'F', bits);
        finish(&h, out);
        return 1;
    }
    return 0;
}

/* rng_dict recognises {"keys"|"key": 624 words, "pos"|"position": n} with
 * optional "has_gauss", "cached_gaussian"|"cached_gauss"|"gauss" and
 * "bit_generator"|"algorithm": "MT19937" (each field of get_state()'s tuple
 * under its own name, the words as a list: what a checkpoint kept free of
 * arrays holds), and NumPy's own dict form, whose "state" holds key and pos. */
static int rng_dict(PyObject *o, uint8_t out[16], int depth)
{
    uint32_t w[MT_WORDS];
    Py_ssize_t at = 0, n = P.PyDict_Size(o);
    PyObject *k, *v, *key = NULL, *posv = NULL, *hg = NULL, *g = NULL, *state = NULL;
    long long pos, has_gauss = 0;
    double gauss = 0.0;
    if (n < 2 || n > RNG_DICT_MAX) return 0;
    while (P.PyDict_Next(o, &at, &k, &v)) {
        if (is_text(k, "keys") || is_text(k, "key"))
            key = v;
        else if (is_text(k, "pos") || is_text(k, "position"))
            posv = v;
        else if (is_text(k, "has_gauss"))
            hg = v;
        else if (is_text(k, "cached_gaussian") || is_text(k, "cached_gauss") || is_text(k, "gauss"))
            g = v;
        else if (is_text(k, "state") && depth == 0 && classify(v) == K_DICT)
            state = v;
        else if ((is_text(k, "bit_generator") || is_text(k, "algorithm")) && !is_text(v, "MT19937"))
            return 0;
    }
    if (state != NULL && key == NULL && posv == NULL) {
        Py_ssize_t at2 = 0;
        while (P.PyDict_Next(state, &at2, &k, &v)) {
            if (is_text(k, "key") || is_text(k, "keys"))
                key = v;
            else if (is_text(k, "pos"))
                posv = v;
        }
    }
    if (key == NULL || posv == NULL || words(key, MT_WORDS, w) != 0 || int_item(posv, &pos) != 0 ||
        pos < 0 || pos > MT_WORDS)
        return 0;
    if ((hg != NULL && int_item(hg, &has_gauss) != 0) || (g != NULL && float_item(g, &gauss) != 0))
        return 0;
    numpy_digest(w, pos, has_gauss, gauss, out);
    return 1;
}

/* rng_digest writes the content digest of o when o is an RNG state of a
 * shape above and returns 1; 0 otherwise.  It never leaves a Python error. */
static int rng_digest(PyObject *o, uint8_t out[16])
{
    kind k = classify(o);
    int r = 0;
    if (k == K_SEQ)
        r = rng_seq(o, out);
    else if (k == K_DICT)
        r = rng_dict(o, out, 0);
    if (P.PyErr_Occurred()) P.PyErr_Clear();
    return r;
}

/* ---- torch RNG states ----
 *
 * torch's own RNG state is a uint8 tensor (torch.get_rng_state()), and the
 * snapshot's rng.torch_cpu leaf and a set_rng_state restore's manifest carry
 * that tensor's digest.  A checkpoint may hold the state as the tensor (the
 * same leaf), or as its bytes in another container: a list or tuple of ints
 * 0..255 (tolist()), a NumPy uint8 vector (numpy()) or bytes.  In a manifest
 * such a container, when its length is exactly the state's, gets one more
 * leaf at its path: the tensor leaf of those bytes as a torch.uint8 vector,
 * so daemon/checks/resume/why.c's manifest_has and daemon/checks/resume/provenance.c match it by
 * content.  The length check comes first, so other values cost nothing; the
 * length is asked of torch once. */

/* torch_rng_len is the length in bytes of torch's CPU RNG state, asked of
 * torch.default_generator once torch is registered; 0 while it cannot tell
 * (then no container is examined).  Never leaves a Python error. */
static size_t torch_rng_len(void)
{
    static long long len = -1;
    PyObject *mods, *k, *v, *torch = NULL, *gen, *st;
    Py_ssize_t at = 0;
    if (len >= 0) return (size_t)len;
    if (tpa_types_reg.tensor == NULL || (mods = P.PyImport_GetModuleDict()) == NULL) return 0;
    while (P.PyDict_Next(mods, &at, &k, &v))
        if (is_text(k, "torch")) {
            torch = v;
            break;
        }
    len = 0; /* torch registered: one answer, whatever it is */
    if (torch == NULL || (gen = P.PyObject_GetAttrString(torch, "default_generator")) == NULL)
        goto end;
    st = tpa_py_call0(gen, "get_state");
    P.Py_DecRef(gen);
    if (st == NULL) goto end;
    len = int_of_call(st, "numel");
    P.Py_DecRef(st);
    if (len < 0) len = 0;
end:
    if (P.PyErr_Occurred()) P.PyErr_Clear();
    return (size_t)len;
}

/* torch_rng_sized reports whether n bytes are as many as a torch RNG state. */
static bool torch_rng_sized(size_t n)
{
    return n > 0 && n == torch_rng_len();
}

/* torch_rng_leaf emits the leaf a torch.uint8 vector of the n bytes at p
 * would have: the snapshot's rng.torch_cpu leaf when they are that state. */
static void torch_rng_leaf(tpa_flat *f, const void *p, size_t n)
{
    static const char dtname[] = "torch.uint8";
    int64_t shape[1] = {(int64_t)n};
    uint8_t d[16];
    tp_stats st;
    size_t pl;
    const char *path;
    if (!room(f)) return;
    hash_memory(dtname, shape, 1, p, n, tpa_dtype_parse(dtname), d, &st);
    path = leaf_path(f, &pl);
    tp_enc_leaf_tensor(f->out, path, pl, dtname, shape, 1, d, &st, "cpu", false);
    f->nleaves++;
}

/* torch_rng_seq emits the torch RNG leaf of a list or tuple of n ints
 * 0..255, n the state's length; anything else is left alone. */
static void torch_rng_seq(tpa_flat *f, PyObject *o, int is_list, Py_ssize_t n)
{
    uint8_t *b;
    if (!torch_rng_sized((size_t)n) || (b = malloc((size_t)n)) == NULL) return;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = seq_item(o, i, is_list);
        long long v;
        if (classify(it) != K_INT || (v = P.PyLong_AsLongLong(it)) < 0 || v > 255) {
            if (P.PyErr_Occurred()) P.PyErr_Clear();
            free(b);
            return;
        }
        b[i] = (uint8_t)v;
    }
    torch_rng_leaf(f, b, (size_t)n);
    free(b);
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

static int scalar(tpa_flat *f, PyObject *o, kind k, XXH3_state_t *parent)
{
    size_t pn;
    const char *path = leaf_path(f, &pn);
    int emit = room(f);
    if (k == K_NONE) {
        feed(parent, 'N', NULL, 0);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_nil(f->out);
    } else if (k == K_BOOL) {
        uint8_t b = (uint8_t)(o == P.True);
        feed(parent, 'B', &b, 1);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_bool(f->out, b);
    } else if (k == K_INT) {
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
    } else if (k == K_FLOAT) {
        double v = P.PyFloat_AsDouble(o);
        uint64_t bits;
        if (v == -1.0 && P.PyErr_Occurred()) return -1;
        memcpy(&bits, &v, 8);
        feed_len(parent, 'F', bits);
        if (emit) tp_enc_leaf_value_begin(f->out, path, pn), tp_mp_f64(f->out, v);
    } else { /* K_STR */
        Py_ssize_t n;
        const char *u = utf8(o, &n);
        if (u == NULL) return -1;
        feed(parent, 'S', u, (size_t)n);
        if (emit && n <= MAX_STR_VALUE) {
            tp_enc_leaf_value_begin(f->out, path, pn);
            tp_mp_str(f->out, u, (size_t)n);
        } else if (emit) {
            uint8_t d[16];
            tpa_digest_bytes(u, (size_t)n, d);
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
        if (classify(k) == K_STR) {
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
        all_scalar = is_scalar(classify(seq_item(o, i, is_list)));
    XXH3_128bits_reset(&h);
    feed_len(&h, 'T', (uint64_t)n);
    if (all_scalar) {
        /* a long run of numbers (an RNG state, a loss history): one leaf */
        memset(&quiet, 0, sizeof quiet);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = seq_item(o, i, is_list);
            if (scalar(&quiet, it, classify(it), &h) != 0) return -1;
        }
        finish(&h, d);
        wrap_digest(d, e);
        digest_leaf(f, e, (uint64_t)n);
        if (f->manifest) torch_rng_seq(f, o, is_list, n); /* a torch RNG state as ints */
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
        if (f->manifest && rng_digest(o, e))
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
    type_name(o, name, sizeof name);
    if (P.PyObject_HasAttrString(o, "__dict__")) dict = P.PyObject_GetAttrString(o, "__dict__");
    if (dict == NULL) P.PyErr_Clear();
    if (dict != NULL && classify(dict) != K_DICT) {
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
    kind k;
    if (depth > MAX_DEPTH) {
        feed(parent, 'O', "<deep>", 6);
        return 0;
    }
    k = classify(o);
    switch (k) {
    case K_MARKER: {
        PyObject *v = P.PyObject_GetAttrString(o, "value");
        uint8_t d[16];
        if (v == NULL) return -1;
        if (!rng_digest(v, d) && tpa_value_digest(v, d) != 0) {
            P.Py_DecRef(v);
            return -1;
        }
        P.Py_DecRef(v);
        digest_leaf(f, d, 1);
        feed(parent, 'M', d, 16);
        return 0;
    }
    case K_TENSOR:
        return tensor_leaf(f, o, parent);
    case K_NDARRAY:
        return ndarray_leaf(f, o, parent);
    case K_NONE:
    case K_BOOL:
    case K_INT:
    case K_FLOAT:
    case K_STR:
        return scalar(f, o, k, parent);
    case K_BYTES: {
        char *p;
        Py_ssize_t n;
        uint8_t d[16];
        if (P.PyBytes_AsStringAndSize(o, &p, &n) != 0) return -1;
        feed(parent, 'Y', p, (size_t)n);
        tpa_digest_bytes(p, (size_t)n, d);
        digest_leaf(f, d, (uint64_t)n);
        if (f->manifest && torch_rng_sized((size_t)n)) torch_rng_leaf(f, p, (size_t)n);
        return 0;
    }
    case K_DICT: {
        XXH3_state_t h;
        uint8_t d[16];
        XXH3_128bits_reset(&h);
        if (walk_dict(f, o, depth, &h) != 0) return -1;
        finish(&h, d);
        feed(parent, 'D', d, 16);
        if (f->manifest && rng_digest(o, d)) digest_leaf(f, d, 1); /* an RNG state in a dict */
        return 0;
    }
    case K_SEQ:
        return walk_seq(f, o, depth, parent);
    case K_OTHER:
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
