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
#include "daemon/store/secret.h"

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
    tp_cmd cmd; /* its command (tpd_req_command); -1 before */
    int n;
    argkey a[MAX_ARGS]; /* its keys, for finding duplicates */
};

struct tpd_reply {
    tp_buf body;   /* the result pairs */
    uint32_t n;    /* their number */
    int cmd;       /* the command answered; -1 before tpd_req_command */
    char bad[160]; /* a result its command does not declare so */
    char err[512];
};

/* ---- the command ---- */

/* value_is says whether the value at v is of type t. */
static bool value_is(tp_mpr v, tp_ctype t)
{
    tp_mptype mt;
    uint32_t n;
    if (tp_mpr_peek(&v, &mt) != TP_OK) return false;
    switch (t) {
    case TP_C_INT:
        return mt == TP_MP_INT;
    case TP_C_NUM:
        return mt == TP_MP_INT || mt == TP_MP_FLOAT;
    case TP_C_BOOL:
        return mt == TP_MP_BOOL;
    case TP_C_STR:
        return mt == TP_MP_STR;
    case TP_C_BIN:
        return mt == TP_MP_BIN;
    case TP_C_STRS:
    case TP_C_INTS:
        if (tp_mpr_array(&v, &n) != TP_OK) return false;
        for (uint32_t i = 0; i < n; i++) {
            if (tp_mpr_peek(&v, &mt) != TP_OK || mt != (t == TP_C_STRS ? TP_MP_STR : TP_MP_INT) ||
                tp_mpr_skip(&v) != TP_OK)
                return false;
        }
        return true;
    }
    return false;
}

/* takes writes the names of cmd's arguments into b ("none" when none). */
static void takes(tp_cmd cmd, char *b, size_t len)
{
    size_t at = 0;
    b[0] = '\0';
    for (int i = 0; i < TPA_COUNT && at < len; i++)
        if (tp_args[i].cmd == cmd)
            at += (size_t)snprintf(b + at, len - at, "%s%s", at ? ", " : "", tp_args[i].key);
    if (at == 0) snprintf(b, len, "none");
}

tp_err tpd_req_command(const tpd_req *q, tpd_reply *r, tp_cmd *cmd, char *check, size_t len)
{
    tpd_req *w = (tpd_req *)q;
    const char *name;
    uint32_t n;
    char list[256];
    tp_mpr v;
    int c;
    tp_err err = tp_mp_map_str(q->buf, q->len, TP_CTL_CMD, &name, &n);
    if (err == TP_ENOENT) return tpd_reply_fail(r, TP_EINVAL, "missing 'cmd'");
    if (err != TP_OK) return tpd_reply_fail(r, TP_EINVAL, "'cmd' is not a string");
    if ((c = tp_cmd_find(name, n, check, len)) < 0)
        return tpd_reply_fail(r, TP_EINVAL, "unknown command '%.*s'", (int)(n > 64 ? 64 : n), name);
    for (int i = 0; i < q->n; i++) {
        const argkey *k = &q->a[i];
        int a;
        if (tp_mp_str_eq(k->key, k->klen, TP_CTL_CMD) || tp_mp_str_eq(k->key, k->klen, TP_CTL_TOK))
            continue;
        if ((a = tp_arg_find((tp_cmd)c, k->key, k->klen)) < 0) {
            takes((tp_cmd)c, list, sizeof list);
            return tpd_reply_fail(r, TP_EINVAL, "unknown argument '%.*s' of %.*s (it takes %s)",
                                  (int)(k->klen > 64 ? 64 : k->klen), k->key,
                                  (int)(n > 64 ? 64 : n), name, list);
        }
        if (tp_mp_map_value(q->buf, q->len, tp_args[a].key, &v) != TP_OK) continue; /* nil */
        if (!value_is(v, tp_args[a].type))
            return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not %s", tp_args[a].key,
                                  tp_ctype_name(tp_args[a].type));
    }
    for (int a = 0; a < TPA_COUNT; a++)
        if (tp_args[a].cmd == (tp_cmd)c && tp_args[a].need &&
            tp_mp_map_value(q->buf, q->len, tp_args[a].key, &v) != TP_OK)
            return tpd_reply_fail(r, TP_EINVAL, "missing argument '%s'", tp_args[a].key);
    w->cmd = (tp_cmd)c;
    r->cmd = c;
    *cmd = (tp_cmd)c;
    return TP_OK;
}

bool tpd_req_token(const tpd_req *q, const char *tok)
{
    const char *s;
    uint32_t n;
    return tp_mp_map_str(q->buf, q->len, TP_CTL_TOK, &s, &n) == TP_OK &&
           tpd_secret_eq(s, n, tok, strlen(tok));
}

/* ---- arguments ---- */

/* key_of is argument a's key when it is one of q's command, else NULL. */
static const char *key_of(const tpd_req *q, tp_arg a)
{
    return (int)a >= 0 && a < TPA_COUNT && tp_args[a].cmd == q->cmd ? tp_args[a].key : NULL;
}

tp_err tpd_req_find(const tpd_req *q, tp_arg a, tp_mpr *v)
{
    const char *key = key_of(q, a);
    tp_mpr f, end;
    tp_err err;
    if (key == NULL) return TP_EPROTO;
    if ((err = tp_mp_map_value(q->buf, q->len, key, &f)) != TP_OK)
        return err == TP_ENOENT ? err : TP_EPROTO;
    /* the reader ends with the value, as a handler reading it expects */
    end = f;
    if (tp_mpr_skip(&end) != TP_OK) return TP_EPROTO;
    f.end = end.p;
    *v = f;
    return TP_OK;
}

tp_err tpd_req_int(const tpd_req *q, tp_arg a, int64_t *v)
{
    const char *key = key_of(q, a);
    return key ? tp_mp_map_int(q->buf, q->len, key, v) : TP_EPROTO;
}

bool tpd_req_flag(const tpd_req *q, tp_arg a)
{
    const char *key = key_of(q, a);
    bool v = false;
    if (key == NULL || tp_mp_map_bool(q->buf, q->len, key, &v) != TP_OK) return false;
    return v;
}

tp_err tpd_req_str(const tpd_req *q, tp_arg a, const char **s, uint32_t *n)
{
    const char *key = key_of(q, a);
    return key ? tp_mp_map_str(q->buf, q->len, key, s, n) : TP_EPROTO;
}

tp_err tpd_req_bin(const tpd_req *q, tp_arg a, const uint8_t **p, uint32_t *n)
{
    tp_mpr v;
    tp_err err = tpd_req_find(q, a, &v);
    return err == TP_OK ? tp_mpr_bin(&v, p, n) : err;
}

bool tpd_req_local(const tpd_req *q)
{
    return q->local;
}

tp_err tpd_req_strdup(const tpd_req *q, tp_arg a, char **out)
{
    const char *s;
    uint32_t n;
    char *p;
    tp_err err = tpd_req_str(q, a, &s, &n);
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

/* key starts result k, written as type t, and notes in r->bad when its
 * command does not declare it so. */
static void key(tpd_reply *r, tp_res k, tp_ctype t)
{
    if ((int)k < 0 || k >= TPR_COUNT) {
        if (!r->bad[0]) snprintf(r->bad, sizeof r->bad, "result #%d is not declared", (int)k);
        return;
    }
    if (!r->bad[0] && ((int)tp_ress[k].cmd != r->cmd || tp_ress[k].type != t))
        snprintf(r->bad, sizeof r->bad, "result '%s' written as %s is not %s's", tp_ress[k].key,
                 tp_ctype_name(t), r->cmd >= 0 ? tp_cmds[r->cmd].name : "(no command)");
    tp_mp_cstr(&r->body, tp_ress[k].key);
    r->n++;
}

void tpd_reply_int(tpd_reply *r, tp_res k, int64_t v)
{
    key(r, k, TP_C_INT);
    tp_mp_int(&r->body, v);
}

void tpd_reply_bool(tpd_reply *r, tp_res k, bool v)
{
    key(r, k, TP_C_BOOL);
    tp_mp_bool(&r->body, v);
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

void tpd_reply_str(tpd_reply *r, tp_res k, const char *s, size_t n)
{
    key(r, k, TP_C_STR);
    put_text(&r->body, s, n);
}

void tpd_reply_cstrs(tpd_reply *r, tp_res k, char *const *v, size_t n)
{
    key(r, k, TP_C_STRS);
    tp_mp_array(&r->body, (uint32_t)n);
    for (size_t i = 0; i < n; i++) put_text(&r->body, v[i], strlen(v[i]));
}

void tpd_reply_ints(tpd_reply *r, tp_res k, const int64_t *v, size_t n)
{
    key(r, k, TP_C_INTS);
    tp_mp_array(&r->body, (uint32_t)n);
    for (size_t i = 0; i < n; i++) tp_mp_int(&r->body, v[i]);
}

void tpd_reply_cstr(tpd_reply *r, tp_res k, const char *s)
{
    key(r, k, TP_C_STR);
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

/* arg_fail fails the reply for argument a, which lookup err refused:
 * absent, of another type than the handler reads (tpd_req_command checked
 * its declared one), or not one of the request's command (a handler's
 * mistake). */
static tp_err arg_fail(const tpd_req *q, tpd_reply *r, tp_arg a, tp_err err, const char *type)
{
    if (key_of(q, a) == NULL)
        return tpd_reply_fail(r, TP_EINVAL, "internal error: argument #%d is not the command's",
                              (int)a);
    if (err == TP_ENOENT)
        return tpd_reply_fail(r, TP_EINVAL, "missing argument '%s'", tp_args[a].key);
    if (err == TP_ENOMEM) return tpd_reply_fail(r, err, "out of memory");
    return tpd_reply_fail(r, TP_EINVAL, "argument '%s' is not %s", tp_args[a].key, type);
}

tp_err tpd_req_need_int(const tpd_req *q, tpd_reply *r, tp_arg a, int64_t *v)
{
    tp_err err = tpd_req_int(q, a, v);
    return err == TP_OK ? TP_OK : arg_fail(q, r, a, err, "an integer");
}

tp_err tpd_req_opt_str(const tpd_req *q, tpd_reply *r, tp_arg a, char **out)
{
    tp_err err = tpd_req_strdup(q, a, out);
    *out = err == TP_OK ? *out : NULL;
    if (err == TP_OK || (err == TP_ENOENT && key_of(q, a) != NULL)) return TP_OK;
    return arg_fail(q, r, a, err, "a string without NUL bytes");
}

tp_err tpd_req_need_str(const tpd_req *q, tpd_reply *r, tp_arg a, char **out)
{
    tp_err err = tpd_req_strdup(q, a, out);
    *out = err == TP_OK ? *out : NULL;
    return err == TP_OK ? TP_OK : arg_fail(q, r, a, err, "a string without NUL bytes");
}

tp_err tpd_req_opt_int(const tpd_req *q, tpd_reply *r, tp_arg a, int64_t *v, bool *has)
{
    tp_err err = tpd_req_int(q, a, v);
    *has = err == TP_OK;
    if (err == TP_OK || (err == TP_ENOENT && key_of(q, a) != NULL)) return TP_OK;
    return arg_fail(q, r, a, err, "an integer");
}

tp_err tpd_req_opt_f64(const tpd_req *q, tpd_reply *r, tp_arg a, double *v, bool *has)
{
    tp_mpr f;
    tp_mptype t;
    int64_t i;
    tp_err err = tpd_req_find(q, a, &f);
    *has = false;
    if (err == TP_ENOENT && key_of(q, a) != NULL) return TP_OK;
    if (err == TP_OK && tp_mpr_peek(&f, &t) == TP_OK && t == TP_MP_INT &&
        tp_mpr_int(&f, &i) == TP_OK) {
        *v = (double)i;
    } else if (err != TP_OK || tp_mpr_f64(&f, v) != TP_OK) {
        return arg_fail(q, r, a, err == TP_OK ? TP_EPROTO : err, "a number");
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
    q->cmd = (tp_cmd)-1;
    r->cmd = -1;
    if (err == TP_OK) err = fn(arg, q, r);
    if (err == TP_OK && r->bad[0]) /* the declaration is the truth (reqrep.h) */
        err = tpd_reply_fail(r, TP_EINVAL, "internal error: %s", r->bad);
    if (err == TP_OK && !r->body.oom) {
        tp_mp_map(reply, r->n + 1);
        tp_mp_cstr(reply, TP_CTL_OK);
        tp_mp_bool(reply, true);
        tp_buf_append(reply, r->body.data, r->body.len);
    } else {
        if (err == TP_OK || r->body.oom) snprintf(r->err, sizeof r->err, "out of memory");
        if (!r->err[0]) snprintf(r->err, sizeof r->err, "%s", tp_strerror(err));
        tp_buf_reset(reply);
        tp_mp_map(reply, 2);
        tp_mp_cstr(reply, TP_CTL_OK);
        tp_mp_bool(reply, false);
        tp_mp_cstr(reply, TP_CTL_ERROR);
        put_text(reply, r->err, strlen(r->err)); /* it may quote the request */
    }
    err = reply->oom ? TP_ENOMEM : TP_OK;
    tp_buf_free(&r->body);
out:
    free(r);
    free(q);
    return err;
}
