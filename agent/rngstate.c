/* SPDX-License-Identifier: MIT
 * rngstate.c -- RNG states in checkpoints and snapshots, recognised
 * whatever container carries them and digested by their content (see
 * flatten_int.h): NumPy's and Python's MT19937 states, and torch's own. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "agent/flatten_int.h"
#include "digest/digest.h"
#include "proto/event.h"

/* ---- RNG states ----
 *
 * An RNG state is held by a checkpoint whatever container carries it: the
 * tuple np.random.get_state() returns, a dict {"keys": [...], "pos": n}, a
 * list; Python's random.getstate() as a tuple or a list.  tpa_rng_digest
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
    tpa_kind k = tpa_flat_classify(o);
    PyObject *l = NULL;
    int is_list, rc = -1;
    if (k == TPA_K_NDARRAY || k == TPA_K_TENSOR) {
        long long size = k == TPA_K_TENSOR ? int_of_call(o, "numel") : -1;
        if (k == TPA_K_NDARRAY) {
            PyObject *sz = P.PyObject_GetAttrString(o, "size");
            size = sz ? P.PyLong_AsLongLong(sz) : -1;
            if (sz) P.Py_DecRef(sz);
        }
        if (size != n || (l = tpa_py_call0(o, "tolist")) == NULL) goto end;
        o = l;
        k = tpa_flat_classify(o);
    }
    if (k != TPA_K_SEQ) goto end;
    is_list = isinst(o, P.List_Type);
    if ((is_list ? P.PyList_Size(o) : P.PyTuple_Size(o)) != n) goto end;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = seq_item(o, i, is_list);
        tpa_kind ik = tpa_flat_classify(it);
        long long v;
        /* TPA_K_OTHER: NumPy integer scalars (list(ndarray)), read via __index__ */
        if (ik != TPA_K_INT && ik != TPA_K_OTHER) goto end;
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
    if (o == NULL || tpa_flat_classify(o) != TPA_K_INT) return -1;
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
    tpa_kind k = o ? tpa_flat_classify(o) : TPA_K_OTHER;
    if (k == TPA_K_FLOAT) {
        *v = P.PyFloat_AsDouble(o);
    } else if (k == TPA_K_INT) {
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
    if (o == NULL || tpa_flat_classify(o) != TPA_K_STR || (u = utf8(o, &n)) == NULL) {
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
        else if (is_text(k, "state") && depth == 0 && tpa_flat_classify(v) == TPA_K_DICT)
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

int tpa_rng_digest(PyObject *o, uint8_t out[16])
{
    tpa_kind k = tpa_flat_classify(o);
    int r = 0;
    if (k == TPA_K_SEQ)
        r = rng_seq(o, out);
    else if (k == TPA_K_DICT)
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

bool tpa_torch_rng_sized(size_t n)
{
    return n > 0 && n == torch_rng_len();
}

void tpa_torch_rng_leaf(tpa_flat *f, const void *p, size_t n)
{
    static const char dtname[] = "torch.uint8";
    int64_t shape[1] = {(int64_t)n};
    uint8_t d[16];
    tp_stats st;
    size_t pl;
    const char *path;
    if (!room(f)) return;
    tpa_hash_memory(dtname, shape, 1, p, n, tp_dtype_parse(dtname), d, &st);
    path = leaf_path(f, &pl);
    tp_enc_leaf_tensor(f->out, path, pl, dtname, shape, 1, d, &st, "cpu", false);
    f->nleaves++;
}

void tpa_torch_rng_seq(tpa_flat *f, PyObject *o, int is_list, Py_ssize_t n)
{
    uint8_t *b;
    if (!tpa_torch_rng_sized((size_t)n) || (b = malloc((size_t)n)) == NULL) return;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = seq_item(o, i, is_list);
        long long v;
        if (tpa_flat_classify(it) != TPA_K_INT || (v = P.PyLong_AsLongLong(it)) < 0 || v > 255) {
            if (P.PyErr_Occurred()) P.PyErr_Clear();
            free(b);
            return;
        }
        b[i] = (uint8_t)v;
    }
    tpa_torch_rng_leaf(f, b, (size_t)n);
    free(b);
}
