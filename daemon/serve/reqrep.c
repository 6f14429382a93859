/* SPDX-License-Identifier: MIT
 * reqrep.c -- the control protocol's requests and replies (reqrep.h): a
 * request checked whole, its arguments read, the reply's results written
 * and the reply map around them. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/serve/reqrep.h"

#define MAX_ARGS 32

typedef struct argkey {
    const char *key;
    uint32_t klen;
} argkey;

/* A request checked whole (parse_req): a map of at most MAX_ARGS unique
 * string keys, nothing after it. */
struct tpd_req {
    const void *buf;
    size_t len;
    bool local; /* it came through a local (ipc://) control socket */
    int n;
    argkey a[MAX_ARGS]; /* its keys, for finding duplicates */
};

struct tpd_reply {
    tp_buf body; /* the result pairs */
    uint32_t n;  /* their number */
    char err[512];
};

/* ---- arguments ---- */

tp_err tpd_req_find(const tpd_req *q, const char *key, tp_mpr *v)
{
    tp_mpr f, end;
    tp_err err = tp_mp_map_value(q->buf, q->len, key, &f);
    if (err != TP_OK) return err == TP_ENOENT ? err : TP_EPROTO;
    /* the reader ends with the value, as a handler reading it expects */
    end = f;
    if (tp_mpr_skip(&end) != TP_OK) return TP_EPROTO;
    f.end = end.p;
    *v = f;
    return TP_OK;
}

tp_err tpd_req_int(const tpd_req *q, const char *key, int64_t *v)
{
    return tp_mp_map_int(q->buf, q->len, key, v);
}

tp_err tpd_req_bool(const tpd_req *q, const char *key, bool *v)
{
    return tp_mp_map_bool(q->buf, q->len, key, v);
}

tp_err tpd_req_str(const tpd_req *q, const char *key, const char **s, uint32_t *n)
{
    return tp_mp_map_str(q->buf, q->len, key, s, n);
}

bool tpd_req_local(const tpd_req *q)
{
    return q->local;
}

tp_err tpd_req_strdup(const tpd_req *q, const char *key, char **out)
{
    const char *s;
    uint32_t n;
    char *p;
    tp_err err = tpd_req_str(q, key, &s, &n);
    if (err != TP_OK) return err;
    if (memchr(s, '\0', n)) return TP_EPROTO;
    if ((p = malloc((size_t)n + 1)) == NULL) return TP_ENOMEM;
    memcpy(p, s, n);
    p[n] = '\0';
    *out = p;
    return TP_OK;
}

/* parse_req checks a request whole and indexes its keys. */
static tp_err parse_req(const void *buf, size_t len, tpd_req *q, char *why, size_t whylen)
{
    tp_mpr r;
    uint32_t n;
    tp_mpr_init(&r, buf, len);
    q->buf = buf;
    q->len = len;
    q->n = 0;
    if (len == 0 || tp_mpr_map(&r, &n) != TP_OK) {
        snprintf(why, whylen, "malformed request: not a map");
        return TP_EPROTO;
    }
    if (n > MAX_ARGS) {
        snprintf(why, whylen, "malformed request: more than %d keys", MAX_ARGS);
        return TP_EPROTO;
    }
    for (uint32_t i = 0; i < n; i++) {
        argkey *a = &q->a[q->n];
        if (tp_mpr_str(&r, &a->key, &a->klen) != TP_OK) {
            snprintf(why, whylen, "malformed request: a key is not a string");
            return TP_EPROTO;
        }
        for (int j = 0; j < q->n; j++) {
            if (q->a[j].klen == a->klen && memcmp(q->a[j].key, a->key, a->klen) == 0) {
                snprintf(why, whylen, "malformed request: duplicate key '%.*s'",
                         (int)(a->klen > 64 ? 64 : a->klen), a->key);
                return TP_EPROTO;
            }
        }
        if (tp_mpr_skip(&r) != TP_OK) {
            snprintf(why, whylen, "malformed request: bad value for '%.*s'",
                     (int)(a->klen > 64 ? 64 : a->klen), a->key);
            return TP_EPROTO;
        }
        q->n++;
    }
    if (tp_mpr_left(&r) != 0) {
        snprintf(why, whylen, "malformed request: trailing bytes");
        return TP_EPROTO;
    }
    return TP_OK;
}

/* ---- results ---- */

static void key(tpd_reply *r, const char *k)
{
    tp_mp_cstr(&r->body, k);
    r->n++;
}

void tpd_reply_int(tpd_reply *r, const char *k, int64_t v)
{
    key(r, k);
    tp_mp_int(&r->body, v);
}

void tpd_reply_bool(tpd_reply *r, const char *k, bool v)
{
    key(r, k);
    tp_mp_bool(&r->body, v);
}

void tpd_reply_f64(tpd_reply *r, const char *k, double v)
{
    key(r, k);
    tp_mp_f64(&r->body, v);
}

void tpd_reply_nil(tpd_reply *r, const char *k)
{
    key(r, k);
    tp_mp_nil(&r->body);
}

/* put_text writes s (n bytes) as a string that is valid UTF-8 (base/text.h). */
static void put_text(tp_buf *b, const char *s, size_t n)
{
    tpd_str clean;
    if (tpd_utf8_clean(s, n)) {
        tp_mp_str(b, s, n);
        return;
    }
    tpd_str_init(&clean);
    tpd_str_utf8(&clean, s, n);
    if (clean.oom)
        b->oom = 1;
    else
        tp_mp_str(b, tpd_str_cstr(&clean), clean.len);
    tpd_str_free(&clean);
}

void tpd_reply_str(tpd_reply *r, const char *k, const char *s, size_t n)
{
    key(r, k);
    put_text(&r->body, s, n);
}

void tpd_reply_cstrs(tpd_reply *r, const char *k, char *const *v, size_t n)
{
    key(r, k);
    tp_mp_array(&r->body, (uint32_t)n);
    for (size_t i = 0; i < n; i++) put_text(&r->body, v[i], strlen(v[i]));
}

void tpd_reply_ints(tpd_reply *r, const char *k, const int64_t *v, size_t n)
{
    key(r, k);
    tp_mp_array(&r->body, (uint32_t)n);
    for (size_t i = 0; i < n; i++) tp_mp_int(&r->body, v[i]);
}

void tpd_reply_cstr(tpd_reply *r, const char *k, const char *s)
{
    key(r, k);
    if (s == NULL)
        tp_mp_nil(&r->body);
    else
        put_text(&r->body, s, strlen(s));
}

tp_err tpd_reply_fail(tpd_reply *r, tp_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    return err;
}

/* need_int reads a required integer argument or fails the reply. */
tp_err tpd_req_need_int(const tpd_req *q, tpd_reply *r, const char *k, int64_t *v)
{
    tp_err err = tpd_req_int(q, k, v);
    if (err == TP_ENOENT) return tpd_reply_fail(r, TP_EINVAL, "missing argument '%s'", k);
    if (err != TP_OK) return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not an integer", k);
    return TP_OK;
}

/* opt_str reads an optional string argument (NULL when absent or nil). */
tp_err tpd_req_opt_str(const tpd_req *q, tpd_reply *r, const char *k, char **out)
{
    tp_err err = tpd_req_strdup(q, k, out);
    if (err == TP_ENOENT) {
        *out = NULL;
        return TP_OK;
    }
    if (err == TP_ENOMEM) return tpd_reply_fail(r, err, "out of memory");
    if (err != TP_OK) return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not a string", k);
    return TP_OK;
}

tp_err tpd_req_need_str(const tpd_req *q, tpd_reply *r, const char *k, char **out)
{
    tp_err err = tpd_req_opt_str(q, r, k, out);
    if (err == TP_OK && *out == NULL)
        return tpd_reply_fail(r, TP_EINVAL, "missing argument '%s'", k);
    return err;
}

/* opt_int reads an optional integer into *v, setting *has. */
tp_err tpd_req_opt_int(const tpd_req *q, tpd_reply *r, const char *k, int64_t *v, bool *has)
{
    tp_err err = tpd_req_int(q, k, v);
    *has = err == TP_OK;
    if (err == TP_OK || err == TP_ENOENT) return TP_OK;
    return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not an integer", k);
}

/* opt_f64 reads an optional number (float or integer) into *v. */
tp_err tpd_req_opt_f64(const tpd_req *q, tpd_reply *r, const char *k, double *v, bool *has)
{
    tp_mpr f;
    tp_mptype t;
    int64_t i;
    *has = false;
    if (tpd_req_find(q, k, &f) != TP_OK) return TP_OK;
    if (tp_mpr_peek(&f, &t) == TP_OK && t == TP_MP_INT && tp_mpr_int(&f, &i) == TP_OK) {
        *v = (double)i;
    } else if (tp_mpr_f64(&f, v) != TP_OK) {
        return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not a number", k);
    }
    *has = true;
    return TP_OK;
}

tp_err tpd_reqrep_answer(const void *req, size_t len, bool local, tpd_answer_fn fn, void *arg,
                         tp_buf *reply)
{
    tpd_reply *r = calloc(1, sizeof *r);
    tpd_req *q = calloc(1, sizeof *q);
    tp_err err = TP_ENOMEM;
    tp_buf_reset(reply);
    if (r == NULL || q == NULL) goto out;
    tp_buf_init(&r->body);
    err = parse_req(req, len, q, r->err, sizeof r->err);
    q->local = local;
    if (err == TP_OK) err = fn(arg, q, r);
    if (err == TP_OK && !r->body.oom) {
        tp_mp_map(reply, r->n + 1);
        tp_mp_cstr(reply, "ok");
        tp_mp_bool(reply, true);
        tp_buf_append(reply, r->body.data, r->body.len);
    } else {
        if (err == TP_OK || r->body.oom) snprintf(r->err, sizeof r->err, "out of memory");
        if (!r->err[0]) snprintf(r->err, sizeof r->err, "%s", tp_strerror(err));
        tp_buf_reset(reply);
        tp_mp_map(reply, 2);
        tp_mp_cstr(reply, "ok");
        tp_mp_bool(reply, false);
        tp_mp_cstr(reply, "error");
        put_text(reply, r->err, strlen(r->err)); /* it may quote the request */
    }
    err = reply->oom ? TP_ENOMEM : TP_OK;
    tp_buf_free(&r->body);
out:
    free(r);
    free(q);
    return err;
}
