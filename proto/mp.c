/* SPDX-License-Identifier: MIT
 * mp.c -- MessagePack writer (msgpack-c's packer into a tp_buf) and the strict
 * reader.  The reader decodes by hand so that it can bound every count by the
 * bytes that remain before anything is trusted or allocated. */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mp.h"

/* ---- output buffer ---- */

void tp_buf_init(tp_buf *b)
{
    memset(b, 0, sizeof *b);
}

void tp_buf_reset(tp_buf *b)
{
    b->len = 0;
    b->oom = 0;
}

void tp_buf_free(tp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int grow(tp_buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 256;
    uint8_t *p;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (p == NULL) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

void tp_buf_append(tp_buf *b, const void *p, size_t n)
{
    if (b->oom || n == 0) return;
    if (b->len + n < b->len || (b->len + n > b->cap && grow(b, b->len + n) != 0)) {
        b->oom = 1;
        return;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

uint8_t *tp_buf_steal(tp_buf *b, size_t *len)
{
    uint8_t *p = b->data;
    *len = b->len;
    memset(b, 0, sizeof *b);
    return p;
}

/* ---- writers ---- */

static int buf_write(void *data, const char *p, size_t n)
{
    tp_buf_append(data, p, n);
    return 0;
}

#define PACKER(b)                                                                                  \
    msgpack_packer pk;                                                                             \
    msgpack_packer_init(&pk, (b), buf_write)

void tp_mp_nil(tp_buf *b)
{
    PACKER(b);
    msgpack_pack_nil(&pk);
}

void tp_mp_bool(tp_buf *b, bool v)
{
    PACKER(b);
    if (v)
        msgpack_pack_true(&pk);
    else
        msgpack_pack_false(&pk);
}

void tp_mp_int(tp_buf *b, int64_t v)
{
    PACKER(b);
    msgpack_pack_int64(&pk, v);
}

void tp_mp_uint(tp_buf *b, uint64_t v)
{
    PACKER(b);
    msgpack_pack_uint64(&pk, v);
}

void tp_mp_f64(tp_buf *b, double v)
{
    PACKER(b);
    msgpack_pack_double(&pk, v);
}

void tp_mp_str(tp_buf *b, const char *s, size_t n)
{
    PACKER(b);
    msgpack_pack_str(&pk, n);
    msgpack_pack_str_body(&pk, s, n);
}

void tp_mp_cstr(tp_buf *b, const char *s)
{
    if (s == NULL)
        tp_mp_nil(b);
    else
        tp_mp_str(b, s, strlen(s));
}

void tp_mp_bin(tp_buf *b, const void *p, size_t n)
{
    PACKER(b);
    msgpack_pack_bin(&pk, n);
    msgpack_pack_bin_body(&pk, p, n);
}

void tp_mp_array(tp_buf *b, uint32_t n)
{
    PACKER(b);
    msgpack_pack_array(&pk, n);
}

void tp_mp_map(tp_buf *b, uint32_t n)
{
    PACKER(b);
    msgpack_pack_map(&pk, n);
}

size_t tp_mp_array32(tp_buf *b)
{
    static const uint8_t hdr[5] = {0xdd, 0, 0, 0, 0};
    size_t off = b->len;
    tp_buf_append(b, hdr, sizeof hdr);
    return off;
}

void tp_mp_patch32(tp_buf *b, size_t off, uint32_t n)
{
    if (b->oom || off + 5 > b->len) return;
    b->data[off + 1] = (uint8_t)(n >> 24);
    b->data[off + 2] = (uint8_t)(n >> 16);
    b->data[off + 3] = (uint8_t)(n >> 8);
    b->data[off + 4] = (uint8_t)n;
}

/* ---- strict reader ---- */

void tp_mpr_init(tp_mpr *r, const void *p, size_t n)
{
    r->p = p;
    r->end = r->p + n;
}

size_t tp_mpr_left(const tp_mpr *r)
{
    return (size_t)(r->end - r->p);
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* need reports whether n more bytes follow the current position + off. */
static int need(const tp_mpr *r, size_t off, uint64_t n)
{
    size_t left = tp_mpr_left(r);
    return off <= left && n <= left - off;
}

tp_err tp_mpr_peek(const tp_mpr *r, tp_mptype *t)
{
    uint8_t c;
    if (!need(r, 0, 1)) return TP_EPROTO;
    c = r->p[0];
    if (c <= 0x7f || c >= 0xe0)
        *t = TP_MP_INT;
    else if (c <= 0x8f)
        *t = TP_MP_MAP;
    else if (c <= 0x9f)
        *t = TP_MP_ARRAY;
    else if (c <= 0xbf)
        *t = TP_MP_STR;
    else if (c == 0xc0)
        *t = TP_MP_NIL;
    else if (c == 0xc2 || c == 0xc3)
        *t = TP_MP_BOOL;
    else if (c >= 0xc4 && c <= 0xc6)
        *t = TP_MP_BIN;
    else if ((c >= 0xc7 && c <= 0xc9) || (c >= 0xd4 && c <= 0xd8))
        *t = TP_MP_EXT;
    else if (c == 0xca || c == 0xcb)
        *t = TP_MP_FLOAT;
    else if (c >= 0xcc && c <= 0xd3)
        *t = TP_MP_INT;
    else if (c >= 0xd9 && c <= 0xdb)
        *t = TP_MP_STR;
    else if (c == 0xdc || c == 0xdd)
        *t = TP_MP_ARRAY;
    else if (c == 0xde || c == 0xdf)
        *t = TP_MP_MAP;
    else
        return TP_EPROTO; /* 0xc1 is never used */
    return TP_OK;
}

tp_err tp_mpr_nil(tp_mpr *r)
{
    if (!need(r, 0, 1) || r->p[0] != 0xc0) return TP_EPROTO;
    r->p++;
    return TP_OK;
}

tp_err tp_mpr_bool(tp_mpr *r, bool *v)
{
    if (!need(r, 0, 1) || (r->p[0] != 0xc2 && r->p[0] != 0xc3)) return TP_EPROTO;
    *v = r->p[0] == 0xc3;
    r->p++;
    return TP_OK;
}

/* read_integer decodes any integer into a sign flag and magnitude. */
static tp_err read_integer(tp_mpr *r, int *neg, uint64_t *mag)
{
    uint8_t c;
    int w;
    if (!need(r, 0, 1)) return TP_EPROTO;
    c = r->p[0];
    if (c <= 0x7f) {
        *neg = 0, *mag = c;
        r->p++;
        return TP_OK;
    }
    if (c >= 0xe0) {
        *neg = 1, *mag = (uint64_t)(-(int64_t)(int8_t)c);
        r->p++;
        return TP_OK;
    }
    switch (c) {
    case 0xcc:
    case 0xd0:
        w = 1;
        break;
    case 0xcd:
    case 0xd1:
        w = 2;
        break;
    case 0xce:
    case 0xd2:
        w = 4;
        break;
    case 0xcf:
    case 0xd3:
        w = 8;
        break;
    default:
        return TP_EPROTO;
    }
    if (!need(r, 1, (uint64_t)w)) return TP_EPROTO;
    uint64_t raw = be(r->p + 1, w);
    if (c >= 0xd0) { /* signed */
        int64_t s;
        switch (w) {
        case 1:
            s = (int8_t)raw;
            break;
        case 2:
            s = (int16_t)raw;
            break;
        case 4:
            s = (int32_t)raw;
            break;
        default:
            s = (int64_t)raw;
            break;
        }
        *neg = s < 0;
        *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    } else {
        *neg = 0, *mag = raw;
    }
    r->p += 1 + w;
    return TP_OK;
}

tp_err tp_mpr_int(tp_mpr *r, int64_t *v)
{
    tp_mpr save = *r;
    int neg;
    uint64_t mag;
    if (read_integer(r, &neg, &mag) != TP_OK) return TP_EPROTO;
    if ((!neg && mag > (uint64_t)INT64_MAX) || (neg && mag > (uint64_t)INT64_MAX + 1)) {
        *r = save;
        return TP_EPROTO;
    }
    *v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return TP_OK;
}

tp_err tp_mpr_uint(tp_mpr *r, uint64_t *v)
{
    tp_mpr save = *r;
    int neg;
    uint64_t mag;
    if (read_integer(r, &neg, &mag) != TP_OK) return TP_EPROTO;
    if (neg && mag != 0) {
        *r = save;
        return TP_EPROTO;
    }
    *v = mag;
    return TP_OK;
}

tp_err tp_mpr_f64(tp_mpr *r, double *v)
{
    if (!need(r, 0, 1)) return TP_EPROTO;
    if (r->p[0] == 0xcb && need(r, 1, 8)) {
        uint64_t raw = be(r->p + 1, 8);
        memcpy(v, &raw, 8);
        r->p += 9;
        return TP_OK;
    }
    if (r->p[0] == 0xca && need(r, 1, 4)) {
        uint32_t raw = (uint32_t)be(r->p + 1, 4);
        float f;
        memcpy(&f, &raw, 4);
        *v = f;
        r->p += 5;
        return TP_OK;
    }
    return TP_EPROTO;
}

/* read_blob reads a str or bin header (by the given first bytes) and body. */
static tp_err read_blob(tp_mpr *r, int is_str, const uint8_t **p, uint32_t *n)
{
    uint8_t c;
    uint64_t len;
    int w;
    if (!need(r, 0, 1)) return TP_EPROTO;
    c = r->p[0];
    if (is_str && c >= 0xa0 && c <= 0xbf) {
        len = c & 0x1f, w = 0;
    } else if ((is_str && c == 0xd9) || (!is_str && c == 0xc4)) {
        w = 1;
    } else if ((is_str && c == 0xda) || (!is_str && c == 0xc5)) {
        w = 2;
    } else if ((is_str && c == 0xdb) || (!is_str && c == 0xc6)) {
        w = 4;
    } else {
        return TP_EPROTO;
    }
    if (w) {
        if (!need(r, 1, (uint64_t)w)) return TP_EPROTO;
        len = be(r->p + 1, w);
    }
    if (!need(r, 1 + (size_t)w, len)) return TP_EPROTO;
    *p = r->p + 1 + w;
    *n = (uint32_t)len;
    r->p += 1 + w + len;
    return TP_OK;
}

tp_err tp_mpr_str(tp_mpr *r, const char **s, uint32_t *n)
{
    const uint8_t *p;
    tp_err rc = read_blob(r, 1, &p, n);
    if (rc == TP_OK) *s = (const char *)p;
    return rc;
}

tp_err tp_mpr_bin(tp_mpr *r, const uint8_t **p, uint32_t *n)
{
    return read_blob(r, 0, p, n);
}

/* read_container reads an array (is_map = 0) or map header. */
static tp_err read_container(tp_mpr *r, int is_map, uint32_t *n)
{
    uint8_t c;
    uint64_t cnt;
    int w = 0;
    if (!need(r, 0, 1)) return TP_EPROTO;
    c = r->p[0];
    if (!is_map && c >= 0x90 && c <= 0x9f)
        cnt = c & 0x0f;
    else if (is_map && c >= 0x80 && c <= 0x8f)
        cnt = c & 0x0f;
    else if ((!is_map && c == 0xdc) || (is_map && c == 0xde))
        w = 2;
    else if ((!is_map && c == 0xdd) || (is_map && c == 0xdf))
        w = 4;
    else
        return TP_EPROTO;
    if (w) {
        if (!need(r, 1, (uint64_t)w)) return TP_EPROTO;
        cnt = be(r->p + 1, w);
    }
    /* every element needs at least one byte */
    if (!need(r, 1 + (size_t)w, cnt * (is_map ? 2 : 1))) return TP_EPROTO;
    *n = (uint32_t)cnt;
    r->p += 1 + w;
    return TP_OK;
}

tp_err tp_mpr_array(tp_mpr *r, uint32_t *n)
{
    return read_container(r, 0, n);
}

tp_err tp_mpr_map(tp_mpr *r, uint32_t *n)
{
    return read_container(r, 1, n);
}

/* skip_head reads the header of the value at p (end: the end of the
 * input): *len receives the bytes of the value when it is not a container,
 * else of its header, and *elems the values the container holds (a map's
 * keys and values both), 0 for any other value.  False for a truncated
 * header or payload, a container that claims more values than bytes
 * remain, an extension type or the reserved byte 0xc1. */
static bool skip_head(const uint8_t *p, const uint8_t *end, uint64_t *len, uint64_t *elems)
{
    uint8_t c = p[0];
    uint64_t w = 0, body = 0, n = 0;
    bool sized = false; /* a str, bin or container whose size follows in w bytes */
    *elems = 0;
    if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
        *len = 1;
    else if (c <= 0x8f)
        *len = 1, *elems = (uint64_t)(c & 0x0f) * 2;
    else if (c <= 0x9f)
        *len = 1, *elems = c & 0x0f;
    else if (c <= 0xbf)
        *len = 1 + (uint64_t)(c & 0x1f);
    else if (c == 0xca || c == 0xcb)
        *len = c == 0xca ? 5 : 9;
    else if (c >= 0xcc && c <= 0xd3)
        *len = 1 + ((uint64_t)1 << ((c - 0xcc) & 3));
    else if (c >= 0xc4 && c <= 0xc6)
        w = (uint64_t)1 << (c - 0xc4), sized = true;
    else if (c >= 0xd9 && c <= 0xdb)
        w = (uint64_t)1 << (c - 0xd9), sized = true;
    else if (c == 0xdc || c == 0xdd || c == 0xde || c == 0xdf)
        w = c == 0xdc || c == 0xde ? 2 : 4, sized = true;
    else
        return false; /* 0xc1, and the extension types the schema never uses */
    if (sized) {
        if ((uint64_t)(end - p) < 1 + w) return false;
        for (uint64_t k = 0; k < w; k++) n = n << 8 | p[1 + k];
        if (c >= 0xdc) {
            *elems = c >= 0xde ? n * 2 : n;
            *len = 1 + w;
        } else {
            body = n;
            *len = 1 + w + body;
        }
    }
    /* every value a container holds needs at least one byte */
    return *len <= (uint64_t)(end - p) && *elems <= (uint64_t)(end - p) - *len;
}

/* tp_mpr_skip walks the value at r without a call per value: a stack of
 * the values left in each open container.  It accepts what the typed
 * readers accept, no deeper than TP_MP_MAX_DEPTH; on an error r is left
 * where it was. */
tp_err tp_mpr_skip(tp_mpr *r)
{
    uint64_t left[TP_MP_MAX_DEPTH + 2];
    const uint8_t *p = r->p;
    int depth = 0; /* containers open; the next value is at this depth */
    left[0] = 1;
    for (;;) {
        uint64_t len, elems;
        while (left[depth] == 0) {
            if (depth == 0) {
                r->p = p;
                return TP_OK;
            }
            depth--;
        }
        if (depth > TP_MP_MAX_DEPTH || p >= r->end || !skip_head(p, r->end, &len, &elems))
            return TP_EPROTO;
        left[depth]--;
        p += len;
        if (elems) {
            if (depth + 1 > TP_MP_MAX_DEPTH + 1) return TP_EPROTO;
            left[++depth] = elems;
        }
    }
}

bool tp_mp_str_eq(const char *s, uint32_t n, const char *key)
{
    return strlen(key) == n && memcmp(s, key, n) == 0;
}

tp_err tp_mp_map_find(const void *buf, size_t len, const char *key, tp_mpr *v)
{
    tp_mpr r;
    uint32_t n;
    tp_err rc;
    tp_mpr_init(&r, buf, len);
    if ((rc = tp_mpr_map(&r, &n)) != TP_OK) return rc;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kn;
        if ((rc = tp_mpr_str(&r, &k, &kn)) != TP_OK) return rc;
        if (tp_mp_str_eq(k, kn, key)) {
            *v = r;
            return TP_OK;
        }
        if ((rc = tp_mpr_skip(&r)) != TP_OK) return rc;
    }
    return TP_ENOENT;
}

tp_err tp_mp_map_value(const void *buf, size_t len, const char *key, tp_mpr *v)
{
    tp_mptype t;
    tp_mpr r;
    tp_err rc = tp_mp_map_find(buf, len, key, &r);
    if (rc != TP_OK) return rc;
    if ((rc = tp_mpr_peek(&r, &t)) != TP_OK) return rc;
    if (t == TP_MP_NIL) return TP_ENOENT;
    *v = r;
    return TP_OK;
}

tp_err tp_mp_map_int(const void *buf, size_t len, const char *key, int64_t *v)
{
    tp_mpr r;
    tp_err rc = tp_mp_map_value(buf, len, key, &r);
    return rc != TP_OK ? rc : tp_mpr_int(&r, v);
}

tp_err tp_mp_map_bool(const void *buf, size_t len, const char *key, bool *v)
{
    tp_mpr r;
    tp_err rc = tp_mp_map_value(buf, len, key, &r);
    return rc != TP_OK ? rc : tp_mpr_bool(&r, v);
}

tp_err tp_mp_map_str(const void *buf, size_t len, const char *key, const char **s, uint32_t *n)
{
    tp_mpr r;
    tp_err rc = tp_mp_map_value(buf, len, key, &r);
    return rc != TP_OK ? rc : tp_mpr_str(&r, s, n);
}
