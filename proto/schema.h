/* SPDX-License-Identifier: MIT
 * schema.h -- the C view of proto/events.def: the event kinds, the body
 * field ids (TPF_<body>_<key>), the value types, and the tables the
 * validator (proto/schema.c), the readers (tp_body_* in proto/event.h) and
 * the generator (proto/schema_gen.c) share. */
#ifndef TP_PROTO_SCHEMA_H
#define TP_PROTO_SCHEMA_H

#include <stdint.h>

/* The types a key may hold: a mask of these. */
enum {
    TP_T_NIL = 1 << 0,
    TP_T_BOOL = 1 << 1,
    TP_T_INT = 1 << 2,      /* integer fitting int64 */
    TP_T_UINT = 1 << 3,     /* non-negative integer */
    TP_T_F64 = 1 << 4,      /* float, or an integer */
    TP_T_STR = 1 << 5,      /* UTF-8 text, at most TP_MAX_STR bytes */
    TP_T_BIN = 1 << 6,      /* bytes */
    TP_T_DIGEST = 1 << 7,   /* 16 bytes */
    TP_T_LEAVES = 1 << 8,   /* array of leaves */
    TP_T_STRS = 1 << 9,     /* array of str */
    TP_T_INTS = 1 << 10,    /* array of int */
    TP_T_F64S = 1 << 11,    /* array of float or int */
    TP_T_RECORDS = 1 << 12, /* array of [name str, size uint, digest] */
    TP_T_IDS = 1 << 13      /* array of int, or array of str (sample IDs: one kind) */
};

typedef enum tp_kind {
    TP_K_NONE = 0,
#define TP_EVENT(NAME, name, body, doc) TP_K_##NAME,
#include "proto/events.def"
    TP_K__COUNT
} tp_kind;

/* tp_body_id: a body (a set of keys; save and load share one). */
typedef enum tp_body_id {
#define TP_BODY(body, doc) TPB_##body,
#include "proto/events.def"
    TPB__COUNT
} tp_body_id;

/* tp_field: one key of one body, TPF_<body>_<key>.  A body's fields are
 * numbered consecutively from TPF_<body>__first. */
typedef enum tp_field {
#define TP_BODY(body, doc)                    TPF_##body##__first, TPF_##body##__open = TPF_##body##__first - 1,
#define TP_FIELD(body, key, types, need, doc) TPF_##body##_##key,
#include "proto/events.def"
    TPF__COUNT
} tp_field;

/* TP_KEY(body, key) is the key's wire name, "key", and fails to compile
 * when events.def declares no such key: for the code that writes bodies. */
#define TP_KEY(body, key) ((void)TPF_##body##_##key, #key)

typedef struct tp_field_def {
    const char *key;
    unsigned types; /* TP_T_* */
    int required;
    const char *doc;
    tp_body_id body;
} tp_field_def;

typedef struct tp_body_def {
    const char *name;
    const char *doc;
    tp_field first; /* its fields: [first, first + tp_body_nfields) */
} tp_body_def;

typedef struct tp_kind_def {
    const char *name; /* on the wire */
    const char *doc;
    tp_body_id body;
} tp_kind_def;

extern const tp_field_def tp_fields[TPF__COUNT];
extern const tp_body_def tp_bodies[TPB__COUNT];
extern const tp_kind_def tp_kinds[TP_K__COUNT]; /* [TP_K_NONE] is empty */

/* tp_body_nfields is the number of keys body b declares. */
unsigned tp_body_nfields(tp_body_id b);
/* tp_field_of finds the field of body b named key (n bytes); -1 if none. */
int tp_field_of(tp_body_id b, const char *key, uint32_t n);

#endif
