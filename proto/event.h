/* SPDX-License-Identifier: MIT
 * event.h -- the wire schema (version 1) shared by the agent and the daemon:
 * event kinds, the batch envelope, tensor leaves, the encoder helpers and the
 * strict decoder.  proto/SCHEMA.md is the prose version of this file.
 *
 * A message is one MessagePack map (a batch):
 *   {"v": 1, "run": int, "exec": int, "pid": int, "rank": int,
 *    ["tok": str,] ["key": str,] "events": [event, ...]}
 * An event is an array [seq, time_ns, step, kind, body] where body is a map
 * whose keys and types are fixed per kind by proto/schema.c.  The decoder
 * checks the whole message (envelope, every body, every leaf) before the
 * caller sees any of it. */
#ifndef TP_PROTO_EVENT_H
#define TP_PROTO_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/mp.h"
#include "proto/schema.h"
#include "proto/tp_err.h"

#define TP_SCHEMA_VERSION  1
#define TP_MAX_MESSAGE     (512u << 20) /* bytes; larger messages are rejected */
#define TP_MAX_NET_MESSAGE (32u << 20)  /* bytes over a network (tcp://) listener */
#define TP_MAX_DIMS        16
#define TP_DIGEST_LEN      16
#define TP_KEY_MAX         64 /* bytes of a batch's "key"; longer is malformed */
#define TP_DKIND_MAX       8  /* bytes of a tensor leaf's digest kind */

/* Digest kinds of a tensor leaf: which function made its digest.  Digests
 * of different kinds differ even for equal tensors and are never compared;
 * "none" says the agent could not digest the tensor (its digest is not one). */
#define TP_DKIND_XXH3 "xxh3" /* XXH3-128 of the bytes on the host; an 11-element leaf */
#define TP_DKIND_DEV1 "dev1" /* the device digest, computed on the GPU */
#define TP_DKIND_NONE "none"

/* tp_kind_name returns the wire name of k ("snapshot"), or NULL. */
const char *tp_kind_name(tp_kind k);
/* tp_kind_parse maps a wire name to its kind; TP_K_NONE if unknown. */
tp_kind tp_kind_parse(const char *s, size_t n);

typedef struct tp_header {
    int64_t run;  /* run id, from the daemon */
    int64_t exec; /* execution id, from the daemon */
    int64_t pid;
    int64_t rank;    /* -1 when unknown */
    const char *tok; /* shared token (tcp listeners); NULL when absent */
    uint32_t tok_len;
    const char *key; /* the execution's key (TP_ENV_EXEC_KEY); NULL when absent */
    uint32_t key_len;
} tp_header;

/* TP_BODY_KEYS_MAX: the most keys a body declares (proto/events.def). */
#define TP_BODY_KEYS_MAX 64

/* Where a body's keys are, found in one walk of its map (tp_body_index):
 * each getter then finds its key at once instead of walking the map from
 * its start, and skipping every value before the key on the way.  A
 * snapshot's leaves come before its other keys, so a reader that asks a
 * snapshot for three keys walked its leaves three times. */
typedef struct tp_body_ix {
    uint64_t have;                  /* bit i: the body's field first + i is present */
    uint32_t off[TP_BODY_KEYS_MAX]; /* ... and its value's offset in the body */
} tp_body_ix;

typedef struct tp_event {
    uint64_t seq;     /* per-process sequence number, from 0 */
    uint64_t time_ns; /* CLOCK_MONOTONIC */
    int64_t step;     /* optimizer-step index the event belongs to */
    tp_kind kind;
    const uint8_t *body; /* the validated body map, inside the message */
    size_t body_len;
    const tp_body_ix *ix; /* where body's keys are, or NULL: the getters walk it */
} tp_event;

typedef struct tp_batch {
    tp_header hdr;
    size_t n;
    tp_event *ev; /* n events, owned by the batch */
} tp_batch;

/* ---- tensor leaves ----
 * A leaf is one flattened value of a state: an array whose first element is
 * its kind.
 *   tensor: ["t", path, dtype, [shape...], digest(bin16), sum, l2, maxabs,
 *            nonfinite, device, blob(bool) [, dkind]]
 *           dkind, the digest's kind (TP_DKIND_*), is 1 to TP_DKIND_MAX
 *           bytes of [a-z0-9]; a leaf of 11 elements has kind "xxh3"
 *   value:  ["v", path, nil|bool|int|float|str]
 *   digest: ["d", path, digest(bin16), nitems]  (an opaque value: RNG state,
 *            a long sequence of numbers, bytes) */

typedef struct tp_stats {
    double sum;
    double l2;     /* Euclidean norm */
    double maxabs; /* max |x| over finite values */
    uint64_t nonfinite;
} tp_stats;

typedef enum tp_vtype { TP_V_NIL, TP_V_BOOL, TP_V_INT, TP_V_FLOAT, TP_V_STR } tp_vtype;

typedef struct tp_leaf {
    char kind; /* 't', 'v' or 'd' */
    const char *path;
    uint32_t path_len;
    /* 't' */
    const char *dtype;
    uint32_t dtype_len;
    uint32_t ndim;
    int64_t shape[TP_MAX_DIMS];
    tp_stats stats;
    const char *device;
    uint32_t device_len;
    bool blob;
    const char *dkind; /* the digest's kind: in the message, or TP_DKIND_XXH3 */
    uint32_t dkind_len;
    /* 't' and 'd' */
    uint8_t digest[TP_DIGEST_LEN];
    uint64_t nitems; /* 'd' */
    /* 'v' */
    tp_vtype vtype;
    bool b;
    int64_t i;
    double f;
    const char *s;
    uint32_t s_len;
} tp_leaf;

/* ---- encoding (agent side) ---- */

/* tp_enc_batch_begin writes the envelope and opens the events array; returns
 * the offset to hand to tp_enc_batch_end with the number of events written. */
size_t tp_enc_batch_begin(tp_buf *b, const tp_header *h);
void tp_enc_batch_end(tp_buf *b, size_t offset, uint32_t nevents);
/* tp_enc_event_begin writes [seq, time, step, kind, and leaves the body map to
 * the caller, who writes exactly one map next. */
void tp_enc_event_begin(tp_buf *b, uint64_t seq, uint64_t time_ns, int64_t step, tp_kind k);
/* tp_enc_leaf_tensor writes a tensor leaf of 11 elements: its digest is of
 * kind "xxh3". */
void tp_enc_leaf_tensor(tp_buf *b, const char *path, size_t path_len, const char *dtype,
                        const int64_t *shape, uint32_t ndim, const uint8_t digest[16],
                        const tp_stats *st, const char *device, bool blob);
/* tp_enc_leaf_tensor_kind writes a tensor leaf of 12 elements whose digest
 * is of kind dkind (TP_DKIND_*: 1 to TP_DKIND_MAX bytes of [a-z0-9], which
 * the caller guarantees; the decoder rejects any other); NULL writes
 * tp_enc_leaf_tensor's 11. */
void tp_enc_leaf_tensor_kind(tp_buf *b, const char *path, size_t path_len, const char *dtype,
                             const int64_t *shape, uint32_t ndim, const uint8_t digest[16],
                             const tp_stats *st, const char *device, bool blob, const char *dkind);
void tp_enc_leaf_digest(tp_buf *b, const char *path, size_t path_len, const uint8_t digest[16],
                        uint64_t nitems);
/* Value leaves: the caller writes ["v", path, then exactly one value. */
void tp_enc_leaf_value_begin(tp_buf *b, const char *path, size_t path_len);

/* ---- decoding (daemon side) ---- */

/* tp_batch_decode checks the whole message and fills *out.  On error *out is
 * untouched and why (if not NULL) receives a one-line reason.  The events
 * point into buf, which must outlive *out.  Errors: TP_EPROTO (malformed,
 * truncated, oversized, wrong type, unknown kind or key), TP_EVERSION,
 * TP_ENOMEM. */
tp_err tp_batch_decode(const void *buf, size_t len, tp_batch *out, char *why, size_t whylen);
/* tp_batch_free releases what tp_batch_decode allocated.  NULL is a no-op. */
void tp_batch_free(tp_batch *b);

/* tp_body_index fills *ix with where e's keys are, for e->ix; the first
 * of a key found twice, none of a key the kind does not declare.  Errors:
 * TP_EPROTO (the body is not a map of string keys, or a value before its
 * last is malformed; e->ix stays NULL then, and the getters report what
 * they find), TP_EINVAL (e's kind has no body). */
tp_err tp_body_index(const tp_event *e, tp_body_ix *ix);

/* tp_body_find positions *field at the value of field f (TPF_<body>_<key>,
 * proto/events.def) in a validated body.  TP_ENOENT when the key is absent,
 * TP_EINVAL when f is not a field of the event's kind (a reader's bug). */
tp_err tp_body_find(const tp_event *e, tp_field f, tp_mpr *field);
/* Typed getters over tp_body_find.  TP_ENOENT when absent or nil, TP_EPROTO on
 * a type mismatch (cannot happen for a body the schema validated). */
tp_err tp_body_int(const tp_event *e, tp_field f, int64_t *v);
tp_err tp_body_f64(const tp_event *e, tp_field f, double *v);
tp_err tp_body_bool(const tp_event *e, tp_field f, bool *v);
tp_err tp_body_str(const tp_event *e, tp_field f, const char **s, uint32_t *n);
tp_err tp_body_digest(const tp_event *e, tp_field f, uint8_t d[16]);

/* tp_leaf_read reads one leaf (validated or not) from r. */
tp_err tp_leaf_read(tp_mpr *r, tp_leaf *out);
/* tp_leaf_read_vars reads into *l the values of a leaf of kind kind that
 * change from step to step, at r, as tp_leaf_read reads them: a tensor's
 * digest and four statistics, a value's value (and its vtype), a digest's
 * digest and count.  TP_EPROTO when they are not what the kind has, or
 * kind is none of 't', 'v' and 'd'; r is then left anywhere among them. */
tp_err tp_leaf_read_vars(tp_mpr *r, char kind, tp_leaf *l);

/* tp_body_validate checks a body map of kind k against the schema.
 * Exposed for tests; tp_batch_decode calls it on every event. */
tp_err tp_body_validate(tp_kind k, const uint8_t *p, size_t n, char *why, size_t whylen);

#endif
