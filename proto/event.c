/* SPDX-License-Identifier: MIT
 * event.c -- event kinds, the batch envelope, leaf encoding and the strict
 * batch decoder (bodies are held to proto/schema.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/event.h"

const char *tp_kind_name(tp_kind k)
{
    if (k <= TP_K_NONE || k >= TP_K__COUNT) return NULL;
    return tp_kinds[k].name;
}

tp_kind tp_kind_parse(const char *s, size_t n)
{
    for (int k = TP_K_NONE + 1; k < TP_K__COUNT; k++)
        if (tp_mp_str_eq(s, (uint32_t)n, tp_kinds[k].name)) return (tp_kind)k;
    return TP_K_NONE;
}

/* ---- encoding ---- */

size_t tp_enc_batch_begin(tp_buf *b, const tp_header *h)
{
    tp_mp_map(b, 6 + (h->tok != NULL) + (h->key != NULL));
    tp_mp_cstr(b, "v");
    tp_mp_uint(b, TP_SCHEMA_VERSION);
    tp_mp_cstr(b, "run");
    tp_mp_int(b, h->run);
    tp_mp_cstr(b, "exec");
    tp_mp_int(b, h->exec);
    tp_mp_cstr(b, "pid");
    tp_mp_int(b, h->pid);
    tp_mp_cstr(b, "rank");
    tp_mp_int(b, h->rank);
    if (h->tok) {
        tp_mp_cstr(b, "tok");
        tp_mp_str(b, h->tok, h->tok_len);
    }
    if (h->key) {
        tp_mp_cstr(b, "key");
        tp_mp_str(b, h->key, h->key_len);
    }
    tp_mp_cstr(b, "events");
    return tp_mp_array32(b);
}

void tp_enc_batch_end(tp_buf *b, size_t offset, uint32_t nevents)
{
    tp_mp_patch32(b, offset, nevents);
}

void tp_enc_event_begin(tp_buf *b, uint64_t seq, uint64_t time_ns, int64_t step, tp_kind k)
{
    tp_mp_array(b, 5);
    tp_mp_uint(b, seq);
    tp_mp_uint(b, time_ns);
    tp_mp_int(b, step);
    tp_mp_cstr(b, tp_kind_name(k));
}

void tp_enc_leaf_tensor(tp_buf *b, const char *path, size_t path_len, const char *dtype,
                        const int64_t *shape, uint32_t ndim, const uint8_t digest[16],
                        const tp_stats *st, const char *device, bool blob)
{
    tp_enc_leaf_tensor_kind(b, path, path_len, dtype, shape, ndim, digest, st, device, blob, NULL);
}

void tp_enc_leaf_tensor_kind(tp_buf *b, const char *path, size_t path_len, const char *dtype,
                             const int64_t *shape, uint32_t ndim, const uint8_t digest[16],
                             const tp_stats *st, const char *device, bool blob, const char *dkind)
{
    tp_mp_array(b, dkind ? 12 : 11);
    tp_mp_str(b, "t", 1);
    tp_mp_str(b, path, path_len);
    tp_mp_cstr(b, dtype);
    tp_mp_array(b, ndim);
    for (uint32_t i = 0; i < ndim; i++) tp_mp_int(b, shape[i]);
    tp_mp_bin(b, digest, TP_DIGEST_LEN);
    tp_mp_f64(b, st->sum);
    tp_mp_f64(b, st->l2);
    tp_mp_f64(b, st->maxabs);
    tp_mp_uint(b, st->nonfinite);
    tp_mp_cstr(b, device ? device : "cpu");
    tp_mp_bool(b, blob);
    if (dkind) tp_mp_cstr(b, dkind);
}

void tp_enc_leaf_digest(tp_buf *b, const char *path, size_t path_len, const uint8_t digest[16],
                        uint64_t nitems)
{
    tp_mp_array(b, 4);
    tp_mp_str(b, "d", 1);
    tp_mp_str(b, path, path_len);
    tp_mp_bin(b, digest, TP_DIGEST_LEN);
    tp_mp_uint(b, nitems);
}

void tp_enc_leaf_value_begin(tp_buf *b, const char *path, size_t path_len)
{
    tp_mp_array(b, 3);
    tp_mp_str(b, "v", 1);
    tp_mp_str(b, path, path_len);
}

/* ---- leaves ---- */

static tp_err read_digest(tp_mpr *r, uint8_t d[16])
{
    const uint8_t *p;
    uint32_t n;
    if (tp_mpr_bin(r, &p, &n) != TP_OK || n != TP_DIGEST_LEN) return TP_EPROTO;
    memcpy(d, p, TP_DIGEST_LEN);
    return TP_OK;
}

static tp_err read_path(tp_mpr *r, tp_leaf *l)
{
    if (tp_mpr_str(r, &l->path, &l->path_len) != TP_OK) return TP_EPROTO;
    if (l->path_len == 0 || l->path_len > 4096) return TP_EPROTO;
    return TP_OK;
}

/* read_number reads a float, or an integer as a double. */
static tp_err read_number(tp_mpr *r, double *v)
{
    tp_mptype t;
    int64_t i;
    if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
    if (t == TP_MP_INT) {
        if (tp_mpr_int(r, &i) != TP_OK) return TP_EPROTO;
        *v = (double)i;
        return TP_OK;
    }
    return tp_mpr_f64(r, v);
}

/* read_dkind reads a tensor leaf's digest kind: 1 to TP_DKIND_MAX bytes of
 * [a-z0-9], so that reports can print it as it is. */
static tp_err read_dkind(tp_mpr *r, tp_leaf *l)
{
    if (tp_mpr_str(r, &l->dkind, &l->dkind_len) != TP_OK || l->dkind_len == 0 ||
        l->dkind_len > TP_DKIND_MAX)
        return TP_EPROTO;
    for (uint32_t i = 0; i < l->dkind_len; i++) {
        char c = l->dkind[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return TP_EPROTO;
    }
    return TP_OK;
}

tp_err tp_leaf_read_vars(tp_mpr *r, char kind, tp_leaf *l)
{
    tp_mptype t;
    switch (kind) {
    case 't':
        if (read_digest(r, l->digest) != TP_OK || read_number(r, &l->stats.sum) != TP_OK ||
            read_number(r, &l->stats.l2) != TP_OK || read_number(r, &l->stats.maxabs) != TP_OK ||
            tp_mpr_uint(r, &l->stats.nonfinite) != TP_OK)
            return TP_EPROTO;
        return TP_OK;
    case 'd':
        if (read_digest(r, l->digest) != TP_OK || tp_mpr_uint(r, &l->nitems) != TP_OK)
            return TP_EPROTO;
        return TP_OK;
    case 'v':
        if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
        switch (t) {
        case TP_MP_NIL:
            l->vtype = TP_V_NIL;
            return tp_mpr_nil(r);
        case TP_MP_BOOL:
            l->vtype = TP_V_BOOL;
            return tp_mpr_bool(r, &l->b);
        case TP_MP_INT:
            l->vtype = TP_V_INT;
            return tp_mpr_int(r, &l->i);
        case TP_MP_FLOAT:
            l->vtype = TP_V_FLOAT;
            return tp_mpr_f64(r, &l->f);
        case TP_MP_STR:
            l->vtype = TP_V_STR;
            if (tp_mpr_str(r, &l->s, &l->s_len) != TP_OK || l->s_len > 65536) return TP_EPROTO;
            return TP_OK;
        default:
            return TP_EPROTO;
        }
    default:
        return TP_EPROTO;
    }
}

/* read_tensor_leaf reads the n - 1 elements after "t": 10, or 11 with the
 * digest's kind. */
static tp_err read_tensor_leaf(tp_mpr *r, tp_leaf *l, uint32_t n)
{
    uint32_t nd;
    if (read_path(r, l) != TP_OK) return TP_EPROTO;
    if (tp_mpr_str(r, &l->dtype, &l->dtype_len) != TP_OK || l->dtype_len > 64) return TP_EPROTO;
    if (tp_mpr_array(r, &nd) != TP_OK || nd > TP_MAX_DIMS) return TP_EPROTO;
    l->ndim = nd;
    for (uint32_t i = 0; i < nd; i++)
        if (tp_mpr_int(r, &l->shape[i]) != TP_OK || l->shape[i] < 0) return TP_EPROTO;
    if (tp_leaf_read_vars(r, 't', l) != TP_OK) return TP_EPROTO;
    if (tp_mpr_str(r, &l->device, &l->device_len) != TP_OK || l->device_len > 64) return TP_EPROTO;
    if (tp_mpr_bool(r, &l->blob) != TP_OK) return TP_EPROTO;
    if (n == 12) return read_dkind(r, l);
    l->dkind = TP_DKIND_XXH3;
    l->dkind_len = (uint32_t)strlen(TP_DKIND_XXH3);
    return TP_OK;
}

tp_err tp_leaf_read(tp_mpr *r, tp_leaf *out)
{
    tp_mpr save = *r;
    tp_leaf l;
    uint32_t n, klen;
    const char *k;
    tp_err rc = TP_EPROTO;
    memset(&l, 0, sizeof l);
    if (tp_mpr_array(r, &n) != TP_OK || tp_mpr_str(r, &k, &klen) != TP_OK || klen != 1) goto fail;
    l.kind = k[0];
    if (l.kind == 't' && (n == 11 || n == 12))
        rc = read_tensor_leaf(r, &l, n);
    else if ((l.kind == 'v' && n == 3) || (l.kind == 'd' && n == 4))
        rc = read_path(r, &l) == TP_OK ? tp_leaf_read_vars(r, l.kind, &l) : TP_EPROTO;
    if (rc != TP_OK) goto fail;
    *out = l;
    return TP_OK;
fail:
    *r = save;
    return TP_EPROTO;
}

/* ---- decoding ---- */

#define BAD(...)                                                                                   \
    do {                                                                                           \
        if (why) snprintf(why, whylen, __VA_ARGS__);                                               \
        rc = TP_EPROTO;                                                                            \
        goto fail;                                                                                 \
    } while (0)

static tp_err decode_event(tp_mpr *r, tp_event *e, char *why, size_t whylen)
{
    uint32_t n, klen;
    const char *k;
    tp_mpr body;
    tp_err rc;
    if (tp_mpr_array(r, &n) != TP_OK || n != 5) BAD("event is not a 5-element array");
    if (tp_mpr_uint(r, &e->seq) != TP_OK) BAD("event seq is not an unsigned integer");
    if (tp_mpr_uint(r, &e->time_ns) != TP_OK) BAD("event time is not an unsigned integer");
    if (tp_mpr_int(r, &e->step) != TP_OK) BAD("event step is not an integer");
    if (tp_mpr_str(r, &k, &klen) != TP_OK) BAD("event kind is not a string");
    e->kind = tp_kind_parse(k, klen);
    if (e->kind == TP_K_NONE) BAD("unknown event kind '%.*s'", (int)(klen > 32 ? 32 : klen), k);
    body = *r;
    if (tp_mpr_skip(r) != TP_OK) BAD("%s: malformed body", tp_kind_name(e->kind));
    e->body = body.p;
    e->body_len = (size_t)(r->p - body.p);
    return tp_body_validate(e->kind, e->body, e->body_len, why, whylen);
fail:
    return rc;
}

tp_err tp_batch_decode(const void *buf, size_t len, tp_batch *out, char *why, size_t whylen)
{
    tp_mpr r;
    tp_batch b;
    uint32_t n;
    uint64_t v = 0;
    int have_v = 0, have_ev = 0, have[4] = {0, 0, 0, 0};
    tp_err rc;
    memset(&b, 0, sizeof b);
    if (why && whylen) why[0] = '\0';
    if (buf == NULL || len == 0) BAD("empty message");
    if (len > TP_MAX_MESSAGE) BAD("message of %zu bytes exceeds the limit", len);
    tp_mpr_init(&r, buf, len);
    if (tp_mpr_map(&r, &n) != TP_OK) BAD("message is not a map");
    for (uint32_t i = 0; i < n; i++) {
        const char *key;
        uint32_t klen;
        if (tp_mpr_str(&r, &key, &klen) != TP_OK) BAD("envelope key is not a string");
        if (tp_mp_str_eq(key, klen, "v")) {
            if (have_v++ || tp_mpr_uint(&r, &v) != TP_OK) BAD("bad 'v'");
            if (v != TP_SCHEMA_VERSION) {
                if (why)
                    snprintf(why, whylen, "schema version %llu is not supported",
                             (unsigned long long)v);
                rc = TP_EVERSION;
                goto fail;
            }
        } else if (tp_mp_str_eq(key, klen, "run")) {
            if (have[0]++ || tp_mpr_int(&r, &b.hdr.run) != TP_OK) BAD("bad 'run'");
        } else if (tp_mp_str_eq(key, klen, "exec")) {
            if (have[1]++ || tp_mpr_int(&r, &b.hdr.exec) != TP_OK) BAD("bad 'exec'");
        } else if (tp_mp_str_eq(key, klen, "pid")) {
            if (have[2]++ || tp_mpr_int(&r, &b.hdr.pid) != TP_OK) BAD("bad 'pid'");
        } else if (tp_mp_str_eq(key, klen, "rank")) {
            if (have[3]++ || tp_mpr_int(&r, &b.hdr.rank) != TP_OK) BAD("bad 'rank'");
        } else if (tp_mp_str_eq(key, klen, "tok")) {
            if (b.hdr.tok || tp_mpr_str(&r, &b.hdr.tok, &b.hdr.tok_len) != TP_OK) BAD("bad 'tok'");
        } else if (tp_mp_str_eq(key, klen, "key")) {
            if (b.hdr.key || tp_mpr_str(&r, &b.hdr.key, &b.hdr.key_len) != TP_OK ||
                b.hdr.key_len > TP_KEY_MAX)
                BAD("bad 'key'");
        } else if (tp_mp_str_eq(key, klen, "events")) {
            uint32_t ne;
            if (have_ev++ || tp_mpr_array(&r, &ne) != TP_OK) BAD("bad 'events'");
            if (ne > 0) {
                b.ev = calloc(ne, sizeof *b.ev);
                if (b.ev == NULL) {
                    rc = TP_ENOMEM;
                    goto fail;
                }
            }
            for (uint32_t j = 0; j < ne; j++) {
                rc = decode_event(&r, &b.ev[j], why, whylen);
                if (rc != TP_OK) {
                    if (why) {
                        char inner[200];
                        snprintf(inner, sizeof inner, "%s", why);
                        snprintf(why, whylen, "events[%u]: %s", j, inner);
                    }
                    goto fail;
                }
            }
            b.n = ne;
        } else {
            BAD("unknown envelope key '%.*s'", (int)(klen > 32 ? 32 : klen), key);
        }
    }
    if (!have_v) BAD("missing 'v'");
    if (!have[0] || !have[1] || !have[2] || !have[3] || !have_ev) BAD("incomplete envelope");
    if (tp_mpr_left(&r) != 0) BAD("trailing bytes after message");
    *out = b;
    return TP_OK;
fail:
    free(b.ev);
    return rc;
}

void tp_batch_free(tp_batch *b)
{
    if (b == NULL) return;
    free(b->ev);
    b->ev = NULL;
    b->n = 0;
}

/* ---- body access ---- */

/* key_of is field f's key when f belongs to e's kind, else NULL. */
static const char *key_of(const tp_event *e, tp_field f)
{
    if ((unsigned)f >= TPF__COUNT || e->kind <= TP_K_NONE || e->kind >= TP_K__COUNT ||
        tp_fields[f].body != tp_kinds[e->kind].body)
        return NULL;
    return tp_fields[f].key;
}

tp_err tp_body_index(const tp_event *e, tp_body_ix *ix)
{
    tp_body_id b;
    tp_mpr r;
    uint32_t n;
    if (e->kind <= TP_K_NONE || e->kind >= TP_K__COUNT) return TP_EINVAL;
    b = tp_kinds[e->kind].body;
    ix->have = 0;
    tp_mpr_init(&r, e->body, e->body_len);
    if (tp_mpr_map(&r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kn;
        int f;
        if (tp_mpr_str(&r, &k, &kn) != TP_OK) return TP_EPROTO;
        f = tp_field_of(b, k, kn);
        if (f >= 0) {
            unsigned at = (unsigned)f - (unsigned)tp_bodies[b].first;
            if (at < TP_BODY_KEYS_MAX && !(ix->have >> at & 1)) {
                ix->have |= (uint64_t)1 << at;
                ix->off[at] = (uint32_t)(r.p - e->body);
            }
        }
        /* the last value is not walked: no key follows it (a snapshot's
         * leaves and a step's gradients come last), and the getters read
         * a value where it starts, as the map's walk finds it */
        if (i + 1 < n && tp_mpr_skip(&r) != TP_OK) return TP_EPROTO;
    }
    return TP_OK;
}

/* locate positions *v at the value of field f, the key of e's kind key
 * names: from e's index when it has one, else by walking the map.
 * TP_ENOENT when absent; the map reader's error when the body is not a
 * map of string keys. */
static tp_err locate(const tp_event *e, tp_field f, const char *key, tp_mpr *v)
{
    unsigned at;
    if (e->ix == NULL) return tp_mp_map_find(e->body, e->body_len, key, v);
    at = (unsigned)f - (unsigned)tp_bodies[tp_kinds[e->kind].body].first;
    if (at >= TP_BODY_KEYS_MAX || !(e->ix->have >> at & 1)) return TP_ENOENT;
    tp_mpr_init(v, e->body + e->ix->off[at], e->body_len - e->ix->off[at]);
    return TP_OK;
}

tp_err tp_body_find(const tp_event *e, tp_field f, tp_mpr *field)
{
    const char *key = key_of(e, f);
    tp_err rc;
    if (key == NULL) return TP_EINVAL;
    rc = locate(e, f, key, field);
    return rc == TP_OK || rc == TP_ENOENT ? rc : TP_EPROTO;
}

/* present is locate where a nil value counts as absent (TP_ENOENT), as
 * tp_mp_map_value has it. */
static tp_err present(const tp_event *e, tp_field f, const char *key, tp_mpr *v)
{
    tp_mptype t;
    tp_mpr r;
    tp_err rc = locate(e, f, key, &r);
    if (rc != TP_OK) return rc;
    if ((rc = tp_mpr_peek(&r, &t)) != TP_OK) return rc;
    if (t == TP_MP_NIL) return TP_ENOENT;
    *v = r;
    return TP_OK;
}

/* find_present is tp_body_find that also treats nil as absent. */
static tp_err find_present(const tp_event *e, tp_field f, tp_mpr *v)
{
    const char *key = key_of(e, f);
    tp_err rc;
    if (key == NULL) return TP_EINVAL;
    rc = present(e, f, key, v);
    return rc == TP_OK || rc == TP_ENOENT ? rc : TP_EPROTO;
}

tp_err tp_body_int(const tp_event *e, tp_field f, int64_t *v)
{
    tp_mpr r;
    tp_err rc = find_present(e, f, &r);
    return rc != TP_OK ? rc : tp_mpr_int(&r, v);
}

tp_err tp_body_f64(const tp_event *e, tp_field f, double *v)
{
    tp_mpr r;
    tp_err rc = find_present(e, f, &r);
    return rc != TP_OK ? rc : read_number(&r, v);
}

tp_err tp_body_bool(const tp_event *e, tp_field f, bool *v)
{
    tp_mpr r;
    tp_err rc = find_present(e, f, &r);
    return rc != TP_OK ? rc : tp_mpr_bool(&r, v);
}

tp_err tp_body_str(const tp_event *e, tp_field f, const char **s, uint32_t *n)
{
    tp_mpr r;
    tp_err rc = find_present(e, f, &r);
    return rc != TP_OK ? rc : tp_mpr_str(&r, s, n);
}

tp_err tp_body_digest(const tp_event *e, tp_field f, uint8_t d[16])
{
    tp_mpr r;
    tp_err rc = find_present(e, f, &r);
    return rc != TP_OK ? rc : read_digest(&r, d);
}
