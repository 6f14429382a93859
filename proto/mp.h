/* SPDX-License-Identifier: MIT
 * mp.h -- MessagePack primitives: a growable output buffer with writers (over
 * msgpack-c's packer) and a strict, allocation-free reader.
 *
 * The reader never trusts its input: every length and count is checked
 * against the bytes that remain, nesting is bounded (TP_MP_MAX_DEPTH), and a
 * type mismatch, truncation or oversized value returns TP_EPROTO.  It never
 * reads past the end it was given and never allocates. */
#ifndef TP_PROTO_MP_H
#define TP_PROTO_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

#define TP_MP_MAX_DEPTH 32

/* ---- output buffer ---- */

typedef struct tp_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    int oom; /* sticky: set when a grow failed; later writes are dropped */
} tp_buf;

/* tp_buf_init makes b empty.  No allocation until the first write. */
void tp_buf_init(tp_buf *b);
/* tp_buf_reset empties b, keeping its memory. */
void tp_buf_reset(tp_buf *b);
/* tp_buf_free releases b's memory; b may then be reused after tp_buf_init. */
void tp_buf_free(tp_buf *b);
/* tp_buf_append appends n bytes; on allocation failure sets b->oom. */
void tp_buf_append(tp_buf *b, const void *p, size_t n);
/* tp_buf_steal hands b's memory to the caller (free() it) and empties b. */
uint8_t *tp_buf_steal(tp_buf *b, size_t *len);

/* Writers.  Each appends one MessagePack value (or a container header) to b. */
void tp_mp_nil(tp_buf *b);
void tp_mp_bool(tp_buf *b, bool v);
void tp_mp_int(tp_buf *b, int64_t v);
void tp_mp_uint(tp_buf *b, uint64_t v);
void tp_mp_f64(tp_buf *b, double v);
void tp_mp_str(tp_buf *b, const char *s, size_t n);
void tp_mp_cstr(tp_buf *b, const char *s); /* NULL writes nil */
void tp_mp_bin(tp_buf *b, const void *p, size_t n);
void tp_mp_array(tp_buf *b, uint32_t n);
void tp_mp_map(tp_buf *b, uint32_t n);
/* tp_mp_array32 writes a 5-byte array header whose count is patched later
 * with tp_mp_patch32(b, offset, n); returns the header's offset. */
size_t tp_mp_array32(tp_buf *b);
void tp_mp_patch32(tp_buf *b, size_t offset, uint32_t n);

/* ---- strict reader ---- */

typedef enum tp_mptype {
    TP_MP_NIL = 1,
    TP_MP_BOOL,
    TP_MP_INT, /* any integer; read with tp_mpr_int or tp_mpr_uint */
    TP_MP_FLOAT,
    TP_MP_STR,
    TP_MP_BIN,
    TP_MP_ARRAY,
    TP_MP_MAP,
    TP_MP_EXT,
} tp_mptype;

typedef struct tp_mpr {
    const uint8_t *p;
    const uint8_t *end;
} tp_mpr;

/* tp_mpr_init points r at n bytes.  r does not own them. */
void tp_mpr_init(tp_mpr *r, const void *p, size_t n);
/* tp_mpr_left is the number of unread bytes. */
size_t tp_mpr_left(const tp_mpr *r);
/* tp_mpr_peek reports the type of the next value without consuming it.
 * TP_EPROTO at the end of input or on a reserved byte. */
tp_err tp_mpr_peek(const tp_mpr *r, tp_mptype *t);

/* Readers consume one value of the stated type; on TP_EPROTO r is unchanged
 * and output parameters are untouched. */
tp_err tp_mpr_nil(tp_mpr *r);
tp_err tp_mpr_bool(tp_mpr *r, bool *v);
tp_err tp_mpr_int(tp_mpr *r, int64_t *v);   /* unsigned above INT64_MAX: TP_EPROTO */
tp_err tp_mpr_uint(tp_mpr *r, uint64_t *v); /* negative: TP_EPROTO */
tp_err tp_mpr_f64(tp_mpr *r, double *v);    /* float 32 or 64 only */
tp_err tp_mpr_str(tp_mpr *r, const char **s, uint32_t *n);
tp_err tp_mpr_bin(tp_mpr *r, const uint8_t **p, uint32_t *n);
/* Container headers: *n is checked against the bytes left (each element
 * needs at least one byte, each map entry two). */
tp_err tp_mpr_array(tp_mpr *r, uint32_t *n);
tp_err tp_mpr_map(tp_mpr *r, uint32_t *n);
/* tp_mpr_skip consumes one complete value of any type, nested at most
 * TP_MP_MAX_DEPTH deep. */
tp_err tp_mpr_skip(tp_mpr *r);
/* tp_mp_str_eq says whether the n bytes at s are the NUL-terminated key. */
bool tp_mp_str_eq(const char *s, uint32_t n, const char *key);
/* tp_mp_map_find positions *v at the value of key (NUL-terminated) in the map
 * that buf (len bytes) holds, a control request or reply.  TP_ENOENT when
 * the key is absent (a nil value is found: check it with tp_mpr_peek),
 * TP_EPROTO or another reader error when buf is not a map of string keys. */
tp_err tp_mp_map_find(const void *buf, size_t len, const char *key, tp_mpr *v);
/* tp_mp_map_value is tp_mp_map_find where a nil value counts as absent
 * (TP_ENOENT): the optional arguments and results of requests, replies and
 * event bodies. */
tp_err tp_mp_map_value(const void *buf, size_t len, const char *key, tp_mpr *v);
/* Typed reads over tp_mp_map_value: TP_ENOENT when absent or nil,
 * TP_EPROTO when malformed or of another type. */
tp_err tp_mp_map_int(const void *buf, size_t len, const char *key, int64_t *v);
tp_err tp_mp_map_bool(const void *buf, size_t len, const char *key, bool *v);
tp_err tp_mp_map_str(const void *buf, size_t len, const char *key, const char **s, uint32_t *n);

#endif
