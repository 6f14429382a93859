/* SPDX-License-Identifier: MIT
 * schema.c -- schema version 1: the keys and types of every event body, and
 * the validator that holds a body to them.  Unknown keys, duplicate keys,
 * missing required keys and wrong types are all TP_EPROTO: agent and daemon
 * ship together, so a body the schema does not describe is a bug or hostile. */
#include <stdio.h>
#include <string.h>

#include "proto/event.h"

enum {
    F_NIL = 1 << 0,
    F_BOOL = 1 << 1,
    F_INT = 1 << 2,      /* integer fitting int64 */
    F_UINT = 1 << 3,     /* non-negative integer */
    F_F64 = 1 << 4,      /* float, or an integer */
    F_STR = 1 << 5,      /* UTF-8 text, at most TP_MAX_STR bytes */
    F_BIN = 1 << 6,      /* bytes */
    F_DIGEST = 1 << 7,   /* 16 bytes */
    F_LEAVES = 1 << 8,   /* array of leaves */
    F_STRS = 1 << 9,     /* array of str */
    F_INTS = 1 << 10,    /* array of int */
    F_F64S = 1 << 11,    /* array of float or int */
    F_RECORDS = 1 << 12, /* array of [name str, size uint, digest] */
    F_IDS = 1 << 13      /* array of int, or array of str (sample IDs: one kind) */
};

#define REQ         1
#define TP_MAX_STR  (1u << 20)
#define TP_MAX_PATH 4096u
#define TP_MAX_ID   1024u /* bytes of a string sample ID (the agent refuses longer) */

typedef struct field {
    const char *key;
    unsigned types;
    int required;
} field;

static const field hello_f[] = {{"schema", F_UINT, REQ},     {"agent", F_STR, REQ},
                                {"python", F_STR, REQ},      {"torch", F_STR | F_NIL, 0},
                                {"numpy", F_STR | F_NIL, 0}, {"argv", F_STRS, REQ},
                                {"cwd", F_STR, REQ},         {"exe", F_STR | F_NIL, 0},
                                {"role", F_STR, REQ},        {"rank", F_INT, REQ},
                                {"world", F_INT, REQ},       {"local_rank", F_INT, 0},
                                {"ppid", F_INT, REQ},        {"interrupt_at", F_INT | F_NIL, 0},
                                {"capture", F_STR, 0},       {"cxx", F_STR, 0},
                                {"hash_threads", F_UINT, 0}, {NULL, 0, 0}};
static const field bye_f[] = {{"reason", F_STR, REQ},    {"code", F_INT | F_NIL, 0},
                              {"sent", F_UINT, REQ},     {"dropped", F_UINT, REQ},
                              {"errors", F_UINT, REQ},   {"spooled", F_BOOL, 0},
                              {"exc", F_STR | F_NIL, 0}, {NULL, 0, 0}};
static const field snapshot_f[] = {{"why", F_STR, REQ}, {"leaves", F_LEAVES, REQ}, {NULL, 0, 0}};
static const field backward_f[] = {{"loss", F_F64 | F_NIL, REQ},     {"dtype", F_STR | F_NIL, 0},
                                   {"count", F_UINT, REQ},           {"numel", F_UINT, 0},
                                   {"mean_over", F_UINT | F_NIL, 0}, {NULL, 0, 0}};
static const field step_f[] = {{"phase", F_STR, REQ},
                               {"opt", F_UINT, REQ},
                               {"cls", F_STR, REQ},
                               {"lrs", F_F64S, 0},
                               {"grads", F_LEAVES, 0},
                               {"gnorm", F_F64 | F_NIL, 0},
                               {"unorm", F_F64 | F_NIL, 0},
                               {"changed", F_BOOL | F_NIL, 0},
                               {"skipped", F_BOOL, 0},
                               {"nparams", F_UINT, 0},
                               {"ngrads", F_UINT, 0},
                               {"via", F_STR, 0},
                               {NULL, 0, 0}};
static const field sched_f[] = {{"sched", F_UINT, REQ},
                                {"cls", F_STR, REQ},
                                {"leaves", F_LEAVES, REQ},
                                {"metric", F_F64 | F_NIL, 0},
                                {NULL, 0, 0}};
static const field saveload_f[] = {{"api", F_STR, REQ},
                                   {"target", F_STR, REQ},
                                   {"name", F_STR | F_NIL, 0},
                                   {"digest", F_DIGEST | F_NIL, 0},
                                   {"via", F_STR, REQ},
                                   {"records", F_RECORDS, 0},
                                   {"manifest", F_LEAVES, 0},
                                   {"bytes", F_UINT | F_NIL, 0},
                                   {"error", F_STR | F_NIL, 0},
                                   {"armed", F_BOOL, 0},
                                   {NULL, 0, 0}};
static const field restore_f[] = {{"what", F_STR, REQ},       {"obj", F_STR, REQ},
                                  {"op", F_STR, REQ},         {"load", F_INT | F_NIL, 0},
                                  {"missing", F_STRS, 0},     {"unexpected", F_STRS, 0},
                                  {"seed", F_INT | F_NIL, 0}, {"caller", F_STR | F_NIL, 0},
                                  {"manifest", F_LEAVES, 0},  {NULL, 0, 0}};
static const field batch_f[] = {{"loader", F_UINT, REQ},
                                {"epoch", F_UINT, REQ},
                                {"pos", F_UINT, REQ},
                                {"ids", F_IDS | F_NIL, REQ},
                                {"worker", F_INT | F_NIL, REQ},
                                {"size", F_UINT | F_NIL, 0},
                                {"dataset_len", F_INT | F_NIL, 0},
                                {"sampler", F_STR | F_NIL, 0},
                                {"rank", F_INT, 0},
                                {"world", F_INT, 0},
                                {"total_size", F_INT | F_NIL, 0},
                                {"drop_last", F_BOOL, 0},
                                {"id_source", F_STR, 0},
                                {"end", F_BOOL, 0},
                                {NULL, 0, 0}};
static const field amp_f[] = {{"op", F_STR, REQ},
                              {"scale", F_F64 | F_NIL, 0},
                              {"found_inf", F_BOOL | F_NIL, 0},
                              {"opt", F_INT | F_NIL, 0},
                              {NULL, 0, 0}};
static const field clip_f[] = {{"op", F_STR, REQ},
                               {"max", F_F64 | F_NIL, 0},
                               {"norm", F_F64 | F_NIL, 0},
                               {"nparams", F_UINT, 0},
                               {NULL, 0, 0}};
static const field blob_f[] = {{"digest", F_DIGEST, REQ},
                               {"data", F_BIN, REQ},
                               {"dtype", F_STR, 0},
                               {"shape", F_INTS, 0},
                               {NULL, 0, 0}};
static const field error_f[] = {{"where", F_STR, REQ}, {"msg", F_STR, REQ}, {NULL, 0, 0}};
static const field zero_grad_f[] = {
    {"which", F_STR, REQ}, {"opt", F_UINT, 0}, {"set_to_none", F_BOOL | F_NIL, 0}, {NULL, 0, 0}};

static const field *const bodies[TP_K__COUNT] = {
    [TP_K_HELLO] = hello_f,       [TP_K_BYE] = bye_f,       [TP_K_SNAPSHOT] = snapshot_f,
    [TP_K_BACKWARD] = backward_f, [TP_K_STEP] = step_f,     [TP_K_SCHED] = sched_f,
    [TP_K_SAVE] = saveload_f,     [TP_K_LOAD] = saveload_f, [TP_K_RESTORE] = restore_f,
    [TP_K_BATCH] = batch_f,       [TP_K_AMP] = amp_f,       [TP_K_CLIP] = clip_f,
    [TP_K_BLOB] = blob_f,         [TP_K_ERROR] = error_f,   [TP_K_ZERO_GRAD] = zero_grad_f,
};

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
        if (elem == F_STR)
            rc = check_str(r, TP_MAX_STR);
        else if (elem == F_INT)
            rc = tp_mpr_int(r, &iv);
        else if (elem == F_F64) {
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
        if (types & F_NIL) return tp_mpr_nil(r);
        break;
    case TP_MP_BOOL:
        if (types & F_BOOL) return tp_mpr_bool(r, &bv);
        break;
    case TP_MP_INT:
        if (types & F_UINT) return tp_mpr_uint(r, &uv);
        if (types & (F_INT | F_F64)) return tp_mpr_int(r, &iv);
        break;
    case TP_MP_FLOAT:
        if (types & F_F64) return tp_mpr_f64(r, &dv);
        break;
    case TP_MP_STR:
        if (types & F_STR) return check_str(r, TP_MAX_STR);
        break;
    case TP_MP_BIN:
        if (types & F_DIGEST) return check_digest(r);
        if (types & F_BIN) return tp_mpr_bin(r, &p, &n);
        break;
    case TP_MP_ARRAY:
        if (types & F_LEAVES) return check_leaves(r, why, whylen);
        if (types & F_STRS) return check_array_of(r, F_STR);
        if (types & F_INTS) return check_array_of(r, F_INT);
        if (types & F_IDS) return check_ids(r);
        if (types & F_F64S) return check_array_of(r, F_F64);
        if (types & F_RECORDS) return check_records(r);
        break;
    default:
        break;
    }
    return TP_EPROTO;
}

tp_err tp_body_validate(tp_kind k, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    const field *fs;
    tp_mpr r;
    uint32_t n;
    uint64_t seen = 0;
    if (why && whylen) why[0] = '\0';
    if (k <= TP_K_NONE || k >= TP_K__COUNT) BAD("unknown event kind");
    fs = bodies[k];
    tp_mpr_init(&r, p, len);
    if (tp_mpr_map(&r, &n) != TP_OK) BAD("%s: body is not a map", tp_kind_name(k));
    for (uint32_t i = 0; i < n; i++) {
        const char *key;
        uint32_t klen;
        int j;
        if (tp_mpr_str(&r, &key, &klen) != TP_OK)
            BAD("%s: body key is not a string", tp_kind_name(k));
        for (j = 0; fs[j].key; j++)
            if (tp_mp_str_eq(key, klen, fs[j].key)) break;
        if (fs[j].key == NULL)
            BAD("%s: unknown key '%.*s'", tp_kind_name(k), (int)(klen > 64 ? 64 : klen), key);
        if (seen & (1ull << j)) BAD("%s: duplicate key '%s'", tp_kind_name(k), fs[j].key);
        seen |= 1ull << j;
        if (check_value(&r, fs[j].types, why, whylen) != TP_OK) {
            char inner[160] = "";
            if (why) snprintf(inner, sizeof inner, "%s", why);
            BAD("%s.%s: wrong type or malformed%s%s", tp_kind_name(k), fs[j].key,
                inner[0] ? ": " : "", inner);
        }
    }
    if (tp_mpr_left(&r) != 0) BAD("%s: trailing bytes after body", tp_kind_name(k));
    for (int j = 0; fs[j].key; j++)
        if (fs[j].required && !(seen & (1ull << j)))
            BAD("%s: missing key '%s'", tp_kind_name(k), fs[j].key);
    return TP_OK;
}
