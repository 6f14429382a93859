/* SPDX-License-Identifier: MIT
 * tensorleaf.c -- tensors and NumPy arrays to tensor leaves (see
 * flatten_int.h): a tensor's memory, read in place when it is on the CPU and
 * contiguous, else from a contiguous copy, is digested with its statistics
 * in one pass (digest/digest.h).  In a walk with a job (job.h), large
 * tensors are left to the job and CUDA tensors digested on their device
 * (devjob.h).  A tensor whose memory cannot be read becomes a value leaf
 * that names its type. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "agent/blob.h"
#include "agent/config.h"
#include "agent/devjob.h"
#include "agent/emit.h"
#include "agent/flatten_int.h"
#include "agent/job.h"
#include "digest/digest.h"
#include "proto/event.h"

#define RELEASE_GIL_BYTES (1u << 20)
#define DEFER_BYTES       (64u * 1024u) /* smaller tensors are hashed at once */

typedef struct dtcache {
    PyObject *key;
    char name[40];
    tp_dtype dt;
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
    e->dt = tp_dtype_parse(e->name);
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

void tpa_hash_memory(const char *dtname, const int64_t *shape, int ndim, const void *data,
                     size_t nbytes, tp_dtype dt, uint8_t d[16], tp_stats *st)
{
    PyThreadState *ts = NULL;
    if (nbytes >= RELEASE_GIL_BYTES) ts = P.PyEval_SaveThread();
    tp_digest_tensor(dtname, shape, ndim, data, nbytes, dt, d, st);
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
    tpa_flat_type_name(t, name, sizeof name);
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
static int defer_leaf(tpa_flat *f, PyObject *keep, bool copy, const char *dtype, tp_dtype dt,
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
        tpa_hash_memory(dtype, shape, ndim, data, nbytes, dt, d.digest, &d.st);
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
static int device_digest(tpa_flat *f, PyObject *c, tp_dtype dt, const void *data, size_t nbytes)
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

/* capturing says whether the values of the tensors met now are shipped:
 * TRAINPARITY_CAPTURE=values, up to step TRAINPARITY_CAPTURE_UNTIL when set
 * (accum compares its first updates only).  Hashed where they are met,
 * as a value is shipped from the same read. */
static bool capturing(void)
{
    return tpa_cfg.capture_values &&
           (tpa_cfg.capture_until < 0 || tpa_emit_step() <= tpa_cfg.capture_until);
}

int tpa_tensor_leaf(tpa_flat *f, PyObject *t, XXH3_state_t *parent)
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
    bool blob = false, large, copied, cap = capturing();
    /* A CUDA tensor met where its digest can wait for the job stays on its
     * device, to be digested there (devjob.h). */
    bool stay = f->job != NULL && !f->manifest && !cap && room(f);

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
    large = !f->manifest && data != NULL && nbytes >= DEFER_BYTES && !cap && room(f);
    if (large && f->job != NULL)
        return defer_leaf(f, c, copied, dc->name, dc->dt, shape, ndim, data, nbytes, device, -1);
    tpa_hash_memory(dc->name, shape, ndim, data, nbytes, dc->dt, d, &st);
    if (cap && data != NULL && room(f))
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

int tpa_ndarray_leaf(tpa_flat *f, PyObject *a, XXH3_state_t *parent)
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
    tpa_hash_memory(dtname, shape, ndim, p, (size_t)n, tp_dtype_parse(dtname), d, &st);
    feed(parent, 'A', d, 16);
    if (room(f)) {
        size_t pl;
        const char *path = leaf_path(f, &pl);
        tp_enc_leaf_tensor(f->out, path, pl, dtname, shape, (uint32_t)ndim, d, &st, "numpy", false);
        f->nleaves++;
    }
    if (f->manifest && ndim == 1 && !strcmp(dtname, "uint8") && tpa_torch_rng_sized((size_t)n))
        tpa_torch_rng_leaf(f, p, (size_t)n);
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
