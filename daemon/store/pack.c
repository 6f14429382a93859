/* SPDX-License-Identifier: MIT
 * pack.c -- packed event bodies (see pack.h).
 *
 * A leaf is split where its values start to change: a tensor ["t", path,
 * dtype, shape, digest, sum, l2, maxabs, nonfinite, device, blob, dkind?]
 * keeps its first four elements and its last two or three in the
 * definition and five values in the event; a value ["v", path, value] one;
 * an opaque digest ["d", path, digest, nitems] two.
 *
 * A leaf in the event is a key, a MessagePack unsigned integer: the id of
 * its definition times four plus two flags, then its values.  Flag 1 says
 * the values are a tensor's in the form the agent writes them (digest as
 * bin 16, sum, l2 and maxabs as float 64, nonfinite as a positive fixint)
 * and are stored without their type bytes: 16 + 8 + 8 + 8 + 1 bytes; flag
 * 2, with flag 1, that maxabs (the largest magnitude of a float32 tensor
 * is a float32) is a float32 exactly and is stored in 4 bytes.  Without
 * flag 1 the values are kept as they came.  A tensor's values take 37
 * bytes (41 when its maxabs is not a float32) after a key of 1 byte (ids
 * below 32), 2 (below 64) or 3 (below 4096): 38 bytes a step for most. */
#include <math.h>
#include <string.h>

#include "daemon/store/pack.h"

bool tpd_body_packed(const uint8_t *p, size_t n)
{
    return n > 0 && p[0] == TPD_PACKED;
}

/* skip_n skips n values of r. */
static tp_err skip_n(tp_mpr *r, unsigned n)
{
    tp_err err;
    for (unsigned i = 0; i < n; i++)
        if ((err = tp_mpr_skip(r)) != TP_OK) return err;
    return TP_OK;
}

/* leaves_field tells whether key (kn bytes) of a body of kind k holds leaves. */
static bool leaves_field(tp_kind k, const char *key, uint32_t kn)
{
    tp_body_id b;
    if (k <= TP_K_NONE || k >= TP_K__COUNT) return false;
    b = tp_kinds[k].body;
    for (unsigned i = 0; i < tp_body_nfields(b); i++) {
        const tp_field_def *f = &tp_fields[tp_bodies[b].first + i];
        if (tp_mp_str_eq(key, kn, f->key)) return (f->types & TP_T_LEAVES) != 0;
    }
    return false;
}

enum { F_TENSOR = 1, F_MAX32 = 2 };
#define TENSOR_VARS 46 /* bin 16 (18), three float 64 (27), a fixint */

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

/* tensor_form tells whether the n value bytes at v are a tensor's in the
 * agent's form, and whether its maxabs is a float32 exactly (*f32, its
 * bits). */
static bool tensor_form(const uint8_t *v, size_t n, bool *max32, uint32_t *f32)
{
    uint64_t bits;
    double d;
    float f;
    if (n != TENSOR_VARS || v[0] != 0xc4 || v[1] != 16 || v[18] != 0xcb || v[27] != 0xcb ||
        v[36] != 0xcb || v[45] > 0x7f)
        return false;
    bits = be64(v + 37);
    memcpy(&d, &bits, sizeof d);
    f = (float)d;
    *max32 = false;
    if (isfinite(d) && fabs(d) <= 3.4028234663852886e38) {
        double back = (double)f;
        uint64_t bb;
        memcpy(&bb, &back, sizeof bb);
        if (bb == bits) {
            *max32 = true;
            memcpy(f32, &f, sizeof *f32);
        }
    }
    return true;
}

bool tpd_leaf_split(char kind, unsigned *nhead, unsigned *nvar)
{
    switch (kind) {
    case 't':
        *nhead = 4, *nvar = 5;
        return true;
    case 'v':
        *nhead = 2, *nvar = 1;
        return true;
    case 'd':
        *nhead = 2, *nvar = 2;
        return true;
    default:
        return false;
    }
}

/* pack_leaf packs the leaf at r into out; TP_ENOENT when it is not one
 * this code splits. */
static tp_err pack_leaf(tpd_leafdict *d, tp_mpr *r, tp_buf *out)
{
    const uint8_t *start = r->p, *var;
    unsigned nhead, nvar;
    tpd_leafdef def;
    const char *kind;
    uint32_t n, kn, f32 = 0;
    bool max32 = false;
    int64_t id;
    tp_err err;
    if (tp_mpr_array(r, &n) != TP_OK || tp_mpr_str(r, &kind, &kn) != TP_OK || kn != 1 ||
        !tpd_leaf_split(kind[0], &nhead, &nvar))
        return TP_ENOENT;
    if (n < nhead + nvar || skip_n(r, nhead - 1) != TP_OK) return TP_ENOENT;
    def.nvar = nvar;
    def.head = start;
    def.head_len = (size_t)(r->p - start);
    var = r->p;
    if (skip_n(r, nvar) != TP_OK) return TP_ENOENT;
    def.tail = r->p;
    if (skip_n(r, n - nhead - nvar) != TP_OK) return TP_ENOENT;
    def.tail_len = (size_t)(r->p - def.tail);
    if ((err = tpd_leafdict_intern(d, &def, &id)) != TP_OK) return err;
    if ((uint64_t)id > UINT64_MAX >> 2) return TP_ENOENT;
    if (kind[0] == 't' && tensor_form(var, (size_t)(def.tail - var), &max32, &f32)) {
        uint8_t v[TENSOR_VARS];
        size_t k = 0;
        tp_mp_uint(out, (uint64_t)id << 2 | F_TENSOR | (max32 ? F_MAX32 : 0));
        memcpy(v, var + 2, 16), k += 16;
        memcpy(v + k, var + 19, 8), k += 8;
        memcpy(v + k, var + 28, 8), k += 8;
        if (max32)
            put_be(v + k, f32, 4), k += 4;
        else
            memcpy(v + k, var + 37, 8), k += 8;
        v[k++] = var[45];
        tp_buf_append(out, v, k);
        return TP_OK;
    }
    tp_mp_uint(out, (uint64_t)id << 2);
    tp_buf_append(out, var, (size_t)(def.tail - var));
    return TP_OK;
}

tp_err tpd_body_pack(tpd_leafdict *d, tp_kind k, const uint8_t *body, size_t n, tp_buf *out,
                     bool *packed)
{
    static const uint8_t mark = TPD_PACKED;
    const uint8_t *p;
    uint32_t npairs;
    bool any = false;
    tp_mpr r;
    tp_err err;
    *packed = false;
    tp_buf_reset(out);
    tp_mpr_init(&r, body, n);
    tp_buf_append(out, &mark, 1);
    p = r.p;
    if (tp_mpr_map(&r, &npairs) != TP_OK) return TP_OK;
    tp_buf_append(out, p, (size_t)(r.p - p));
    for (uint32_t i = 0; i < npairs; i++) {
        const char *key;
        uint32_t kn, nleaves;
        tp_mptype t;
        p = r.p;
        if (tp_mpr_str(&r, &key, &kn) != TP_OK) return TP_OK;
        tp_buf_append(out, p, (size_t)(r.p - p));
        p = r.p;
        if (leaves_field(k, key, kn) && tp_mpr_peek(&r, &t) == TP_OK && t == TP_MP_ARRAY) {
            if (tp_mpr_array(&r, &nleaves) != TP_OK) return TP_OK;
            tp_buf_append(out, &mark, 1);
            tp_buf_append(out, p, (size_t)(r.p - p));
            for (uint32_t j = 0; j < nleaves; j++) {
                if ((err = pack_leaf(d, &r, out)) == TP_ENOENT) return TP_OK;
                if (err != TP_OK) return err;
            }
            any = true;
        } else {
            if (tp_mpr_skip(&r) != TP_OK) return TP_OK;
            tp_buf_append(out, p, (size_t)(r.p - p));
        }
    }
    if (r.p != r.end) return TP_OK;
    if (out->oom) return TP_ENOMEM;
    *packed = any;
    return TP_OK;
}

/* unpack_tensor writes the values of a tensor stored without their type
 * bytes (flag F_TENSOR) back in the agent's form. */
static tp_err unpack_tensor(tp_mpr *r, unsigned nvar, bool max32, tp_buf *out)
{
    size_t need = 16 + 8 + 8 + (max32 ? 4 : 8) + 1;
    uint8_t v[TENSOR_VARS];
    const uint8_t *p = r->p;
    if (nvar != 5 || tp_mpr_left(r) < need || p[need - 1] > 0x7f) return TP_ECORRUPT;
    v[0] = 0xc4, v[1] = 16;
    memcpy(v + 2, p, 16);
    v[18] = 0xcb;
    memcpy(v + 19, p + 16, 8);
    v[27] = 0xcb;
    memcpy(v + 28, p + 24, 8);
    v[36] = 0xcb;
    if (max32) {
        uint32_t bits =
            (uint32_t)p[32] << 24 | (uint32_t)p[33] << 16 | (uint32_t)p[34] << 8 | p[35];
        float f;
        double dd;
        uint64_t db;
        memcpy(&f, &bits, sizeof f);
        dd = (double)f;
        memcpy(&db, &dd, sizeof db);
        put_be(v + 37, db, 8);
    } else {
        memcpy(v + 37, p + 32, 8);
    }
    v[45] = p[need - 1];
    tp_buf_append(out, v, TENSOR_VARS);
    r->p += need;
    return TP_OK;
}

tp_err tpd_body_unpack(tpd_leafdict *d, const uint8_t *p, size_t n, tp_buf *out)
{
    const uint8_t *s;
    uint32_t npairs;
    tp_mpr r;
    tp_err err;
    tp_buf_reset(out);
    if (!tpd_body_packed(p, n)) return TP_ECORRUPT;
    tp_mpr_init(&r, p + 1, n - 1);
    s = r.p;
    if (tp_mpr_map(&r, &npairs) != TP_OK) return TP_ECORRUPT;
    tp_buf_append(out, s, (size_t)(r.p - s));
    for (uint32_t i = 0; i < npairs; i++) {
        const char *key;
        uint32_t kn, nleaves;
        s = r.p;
        if (tp_mpr_str(&r, &key, &kn) != TP_OK) return TP_ECORRUPT;
        tp_buf_append(out, s, (size_t)(r.p - s));
        if (r.p < r.end && r.p[0] == TPD_PACKED) {
            s = ++r.p;
            if (tp_mpr_array(&r, &nleaves) != TP_OK) return TP_ECORRUPT;
            tp_buf_append(out, s, (size_t)(r.p - s));
            for (uint32_t j = 0; j < nleaves; j++) {
                tpd_leafdef def;
                uint64_t lk;
                if (tp_mpr_uint(&r, &lk) != TP_OK) return TP_ECORRUPT;
                if ((err = tpd_leafdict_get(d, (int64_t)(lk >> 2), &def)) != TP_OK) return err;
                tp_buf_append(out, def.head, def.head_len);
                if (lk & F_TENSOR) {
                    if ((err = unpack_tensor(&r, def.nvar, (lk & F_MAX32) != 0, out)) != TP_OK)
                        return err;
                } else {
                    if (lk & F_MAX32) return TP_ECORRUPT;
                    s = r.p;
                    if (skip_n(&r, def.nvar) != TP_OK) return TP_ECORRUPT;
                    tp_buf_append(out, s, (size_t)(r.p - s));
                }
                tp_buf_append(out, def.tail, def.tail_len);
            }
        } else {
            s = r.p;
            if (tp_mpr_skip(&r) != TP_OK) return TP_ECORRUPT;
            tp_buf_append(out, s, (size_t)(r.p - s));
        }
    }
    if (r.p != r.end) return TP_ECORRUPT;
    return out->oom ? TP_ENOMEM : TP_OK;
}

tp_err tpd_body_stored(tpd_leafdict *d, tp_kind k, const uint8_t *body, size_t n, tp_buf *packed,
                       tp_buf *back, const uint8_t **out, size_t *outlen)
{
    bool ok = false;
    tp_err err = tpd_body_pack(d, k, body, n, packed, &ok);
    if (err != TP_OK) return err;
    *out = body;
    *outlen = n;
    if (ok && packed->len < n && tpd_body_unpack(d, packed->data, packed->len, back) == TP_OK &&
        back->len == n && memcmp(back->data, body, n) == 0) {
        *out = packed->data;
        *outlen = packed->len;
    }
    return TP_OK;
}

tp_err tpd_body_read(tpd_leafdict *d, const uint8_t *p, size_t n, tp_buf *scratch,
                     const uint8_t **body, size_t *len)
{
    tp_err err;
    if (!tpd_body_packed(p, n)) {
        *body = p;
        *len = n;
        return TP_OK;
    }
    if ((err = tpd_body_unpack(d, p, n, scratch)) != TP_OK) return err;
    *body = scratch->data;
    *len = scratch->len;
    return TP_OK;
}
