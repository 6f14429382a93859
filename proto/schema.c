/* SPDX-License-Identifier: MIT
 * schema.c -- schema version 1: the tables of proto/events.def (every
 * event kind, every body key with its types), and the validator that holds
 * a body to them.  Unknown keys, duplicate keys,
 * missing required keys and wrong types are all TP_EPROTO: agent and daemon
 * ship together, so a body the schema does not describe is a bug or hostile. */
#include <stdio.h>
#include <string.h>

#include "proto/event.h"

#define TP_MAX_STR  (1u << 20)
#define TP_MAX_PATH 4096u
#define TP_MAX_ID   1024u /* bytes of a string sample ID (the agent refuses longer) */

/* The tables, from proto/events.def. */
#define REQ 1
#define OPT 0
const tp_field_def tp_fields[TPF__COUNT] = {
#define TP_FIELD(body, key, types, need, doc)                                                      \
    [TPF_##body##_##key] = {#key, types, need, doc, TPB_##body},
#include "proto/events.def"
};

const tp_body_def tp_bodies[TPB__COUNT] = {
#define TP_BODY(body, doc) [TPB_##body] = {#body, doc, TPF_##body##__first},
#include "proto/events.def"
};

const tp_kind_def tp_kinds[TP_K__COUNT] = {
#define TP_EVENT(NAME, name, body, doc) [TP_K_##NAME] = {#name, doc, TPB_##body},
#include "proto/events.def"
};

/* firsts[b] is body b's first field, firsts[b + 1] the one after its last. */
static const tp_field firsts[TPB__COUNT + 1] = {
#define TP_BODY(body, doc) TPF_##body##__first,
#include "proto/events.def"
    TPF__COUNT};

unsigned tp_body_nfields(tp_body_id b)
{
    return (unsigned)b < TPB__COUNT ? (unsigned)(firsts[b + 1] - firsts[b]) : 0;
}

int tp_field_of(tp_body_id b, const char *key, uint32_t n)
{
    if ((unsigned)b >= TPB__COUNT) return -1;
    for (int f = firsts[b]; f < firsts[b + 1]; f++)
        if (tp_mp_str_eq(key, n, tp_fields[f].key)) return f;
    return -1;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        if (why) snprintf(why, whylen, __VA_ARGS__);                                               \
        return TP_EPROTO;                                                                          \
    } while (0)

static tp_err check_str(tp_mpr *r, uint32_t max)
{
    const char *s;
    uint32_t n;
    if (tp_mpr_str(r, &s, &n) != TP_OK || n > max) return TP_EPROTO;
    return TP_OK;
}

/* check_ids validates sample IDs: all integers or all strings, so that one
 * batch never mixes kinds (an ID 7 and an ID "7" are different samples, and
 * the readers file a batch's IDs as one kind). */
static tp_err check_ids(tp_mpr *r)
{
    tp_mptype first = TP_MP_NIL, t;
    uint32_t n;
    int64_t iv;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n; i++) {
        if (tp_mpr_peek(r, &t) != TP_OK || (i > 0 && t != first)) return TP_EPROTO;
        first = t;
        if (t == TP_MP_INT) {
            if (tp_mpr_int(r, &iv) != TP_OK) return TP_EPROTO;
        } else if (t != TP_MP_STR || check_str(r, TP_MAX_ID) != TP_OK) {
            return TP_EPROTO;
        }
    }
    return TP_OK;
}

static tp_err check_digest(tp_mpr *r)
{
    const uint8_t *p;
    uint32_t n;
    if (tp_mpr_bin(r, &p, &n) != TP_OK || n != TP_DIGEST_LEN) return TP_EPROTO;
    return TP_OK;
}

/* check_array_of validates an array whose elements satisfy one scalar check. */
static tp_err check_array_of(tp_mpr *r, unsigned elem)
{
    uint32_t n;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n; i++) {
        int64_t iv;
        double dv;
        tp_err rc = TP_EPROTO;
        if (elem == TP_T_STR)
            rc = check_str(r, TP_MAX_STR);
        else if (elem == TP_T_INT)
            rc = tp_mpr_int(r, &iv);
        else if (elem == TP_T_F64) {
            tp_mptype t;
            if (tp_mpr_peek(r, &t) == TP_OK && t == TP_MP_INT)
                rc = tp_mpr_int(r, &iv);
            else
                rc = tp_mpr_f64(r, &dv);
        }
        if (rc != TP_OK) return TP_EPROTO;
    }
    return TP_OK;
}

static tp_err check_records(tp_mpr *r)
{
    uint32_t n, m;
    uint64_t size;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n; i++) {
        if (tp_mpr_array(r, &m) != TP_OK || m != 3) return TP_EPROTO;
        if (check_str(r, TP_MAX_PATH) != TP_OK || tp_mpr_uint(r, &size) != TP_OK ||
            check_digest(r) != TP_OK)
            return TP_EPROTO;
    }
    return TP_OK;
}

static tp_err check_leaves(tp_mpr *r, char *why, size_t whylen)
{
    uint32_t n;
    tp_leaf leaf;
    if (tp_mpr_array(r, &n) != TP_OK) BAD("leaves: not an array");
    for (uint32_t i = 0; i < n; i++)
        if (tp_leaf_read(r, &leaf) != TP_OK) BAD("leaves[%u]: malformed leaf", i);
    return TP_OK;
}

/* check_value checks one value against a type mask. */
static tp_err check_value(tp_mpr *r, unsigned types, char *why, size_t whylen)
{
    tp_mptype t;
    int64_t iv;
    uint64_t uv;
    double dv;
    bool bv;
    const uint8_t *p;
    uint32_t n;
    if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
    switch (t) {
    case TP_MP_NIL:
        if (types & TP_T_NIL) return tp_mpr_nil(r);
        break;
    case TP_MP_BOOL:
        if (types & TP_T_BOOL) return tp_mpr_bool(r, &bv);
        break;
    case TP_MP_INT:
        if (types & TP_T_UINT) return tp_mpr_uint(r, &uv);
        if (types & (TP_T_INT | TP_T_F64)) return tp_mpr_int(r, &iv);
        break;
    case TP_MP_FLOAT:
        if (types & TP_T_F64) return tp_mpr_f64(r, &dv);
        break;
    case TP_MP_STR:
        if (types & TP_T_STR) return check_str(r, TP_MAX_STR);
        break;
    case TP_MP_BIN:
        if (types & TP_T_DIGEST) return check_digest(r);
        if (types & TP_T_BIN) return tp_mpr_bin(r, &p, &n);
        break;
    case TP_MP_ARRAY:
        if (types & TP_T_LEAVES) return check_leaves(r, why, whylen);
        if (types & TP_T_STRS) return check_array_of(r, TP_T_STR);
        if (types & TP_T_INTS) return check_array_of(r, TP_T_INT);
        if (types & TP_T_IDS) return check_ids(r);
        if (types & TP_T_F64S) return check_array_of(r, TP_T_F64);
        if (types & TP_T_RECORDS) return check_records(r);
        break;
    default:
        break;
    }
    return TP_EPROTO;
}

tp_err tp_body_validate(tp_kind k, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    tp_body_id b;
    tp_field first;
    tp_mpr r;
    uint32_t n;
    uint64_t seen = 0;
    unsigned nf;
    if (why && whylen) why[0] = '\0';
    if (k <= TP_K_NONE || k >= TP_K__COUNT) BAD("unknown event kind");
    b = tp_kinds[k].body;
    first = tp_bodies[b].first;
    nf = tp_body_nfields(b);
    tp_mpr_init(&r, p, len);
    if (tp_mpr_map(&r, &n) != TP_OK) BAD("%s: body is not a map", tp_kind_name(k));
    for (uint32_t i = 0; i < n; i++) {
        const char *key;
        uint32_t klen;
        int f, j;
        if (tp_mpr_str(&r, &key, &klen) != TP_OK)
            BAD("%s: body key is not a string", tp_kind_name(k));
        if ((f = tp_field_of(b, key, klen)) < 0)
            BAD("%s: unknown key '%.*s'", tp_kind_name(k), (int)(klen > 64 ? 64 : klen), key);
        j = f - (int)first;
        if (seen & (1ull << j)) BAD("%s: duplicate key '%s'", tp_kind_name(k), tp_fields[f].key);
        seen |= 1ull << j;
        if (check_value(&r, tp_fields[f].types, why, whylen) != TP_OK) {
            char inner[160] = "";
            if (why) snprintf(inner, sizeof inner, "%s", why);
            BAD("%s.%s: wrong type or malformed%s%s", tp_kind_name(k), tp_fields[f].key,
                inner[0] ? ": " : "", inner);
        }
    }
    if (tp_mpr_left(&r) != 0) BAD("%s: trailing bytes after body", tp_kind_name(k));
    for (unsigned j = 0; j < nf; j++)
        if (tp_fields[first + j].required && !(seen & (1ull << j)))
            BAD("%s: missing key '%s'", tp_kind_name(k), tp_fields[first + j].key);
    return TP_OK;
}
