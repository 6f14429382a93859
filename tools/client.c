/* SPDX-License-Identifier: MIT
 * client.c -- control-socket client: req socket, calls, reply lookups. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "tools/client.h"
#include "tools/errbuf.h"

struct tpt_client {
    nng_socket sock;
    int timeout_ms;
    char *url;
    char *tok; /* NULL: requests go as they are */
};

static tp_err from_nng(int rv)
{
    switch (rv) {
    case 0:
        return TP_OK;
    case NNG_ENOMEM:
        return TP_ENOMEM;
    case NNG_ETIMEDOUT:
        return TP_ETIMEDOUT;
    case NNG_ECLOSED:
        return TP_ECLOSED;
    case NNG_EADDRINVAL:
    case NNG_ENOTSUP:
    case NNG_EINVAL:
        return TP_EINVAL;
    default:
        return TP_ENET;
    }
}

tp_err tpt_client_open(tpt_client **cp, const char *url, int timeout_ms)
{
    tpt_client *c;
    int rv;
    tp_err rc;
    if (cp == NULL || url == NULL || timeout_ms < 0) return TP_EINVAL;
    c = calloc(1, sizeof(*c));
    if (c == NULL) return TP_ENOMEM;
    c->url = strdup(url);
    if (c->url == NULL) {
        free(c);
        return TP_ENOMEM;
    }
    if ((rv = nng_req0_open(&c->sock)) != 0) {
        free(c->url);
        free(c);
        return from_nng(rv);
    }
    /* Replies carry query text: allow what the wire allows, not nng's 1 MiB.
     * Reconnect quickly: a daemon that was just started comes up in ms. */
    if ((rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 512u << 20)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 10)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 200)) != 0 ||
        (rv = nng_dial(c->sock, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
        rc = from_nng(rv);
        goto fail;
    }
    tpt_client_timeout(c, timeout_ms);
    *cp = c;
    return TP_OK;
fail:
    tpt_client_close(c);
    return rc;
}

void tpt_client_close(tpt_client *c)
{
    if (c == NULL) return;
    nng_close(c->sock);
    free(c->url);
    free(c->tok);
    free(c);
}

tp_err tpt_client_token(tpt_client *c, const char *tok)
{
    char *t = NULL;
    if (tok != NULL && tok[0] != '\0' && (t = strdup(tok)) == NULL) return TP_ENOMEM;
    free(c->tok);
    c->tok = t;
    return TP_OK;
}

/* with_token returns req with "tok" added to its map, in *out (free it). */
static tp_err with_token(const tpt_client *c, const tp_buf *req, tp_buf *out)
{
    tp_mpr r;
    uint32_t n;
    tp_mpr_init(&r, req->data, req->len);
    if (tp_mpr_map(&r, &n) != TP_OK) return TP_EINVAL;
    tp_buf_init(out);
    tp_mp_map(out, n + 1);
    tp_mp_cstr(out, "tok");
    tp_mp_cstr(out, c->tok);
    tp_buf_append(out, r.p, tp_mpr_left(&r));
    return out->oom ? TP_ENOMEM : TP_OK;
}

const char *tpt_client_url(const tpt_client *c)
{
    return c->url;
}

int tpt_client_timeout(tpt_client *c, int timeout_ms)
{
    int old = c->timeout_ms;
    c->timeout_ms = timeout_ms;
    nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO, timeout_ms);
    nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO, timeout_ms);
    return old;
}

tp_err tpt_client_call(tpt_client *c, const tp_buf *req, tp_buf *rep, char *err)
{
    tp_buf tokreq;
    nng_msg *m = NULL;
    const char *s;
    uint32_t n;
    bool ok;
    int rv;
    tp_err rc;

    if (c == NULL || req == NULL || rep == NULL) return TP_EINVAL;
    if (req->oom) return tpt_seterr(err, TP_ENOMEM, "out of memory building a request");
    tp_buf_init(&tokreq);
    tp_buf_reset(rep);
    if (c->tok != NULL) {
        if ((rc = with_token(c, req, &tokreq)) != TP_OK) {
            tp_buf_free(&tokreq);
            return tpt_seterr(err, rc, "cannot add the token to a request");
        }
        req = &tokreq;
    }
    rv = nng_send(c->sock, req->data, req->len, 0);
    tp_buf_free(&tokreq);
    if (rv != 0 || (rv = nng_recvmsg(c->sock, &m, 0)) != 0) {
        rc = from_nng(rv);
        if (rc == TP_ETIMEDOUT)
            return tpt_seterr(err, rc, "daemon at %s did not answer within %d ms", c->url,
                              c->timeout_ms);
        return tpt_seterr(err, rc, "daemon at %s: %s", c->url, nng_strerror(rv));
    }
    tp_buf_append(rep, nng_msg_body(m), nng_msg_len(m));
    nng_msg_free(m);
    if (rep->oom) return tpt_seterr(err, TP_ENOMEM, "out of memory reading a reply");
    if (tpt_reply_bool(rep, "ok", &ok) != TP_OK)
        return tpt_seterr(err, TP_EPROTO, "daemon at %s sent a malformed reply", c->url);
    if (!ok) {
        if (tpt_reply_str(rep, "error", &s, &n) != TP_OK) {
            s = "request refused (no reason given)";
            n = (uint32_t)strlen(s);
        }
        return tpt_seterr(err, TP_EINVAL, "daemon: %.*s", (int)n, s);
    }
    return TP_OK;
}

void tpt_req_begin(tp_buf *b, const char *cmd, uint32_t nargs)
{
    tp_buf_reset(b);
    tp_mp_map(b, nargs + 1);
    tp_mp_cstr(b, "cmd");
    tp_mp_cstr(b, cmd);
}

tp_err tpt_reply_find(const tp_buf *rep, const char *key, tp_mpr *v)
{
    tp_mpr r;
    uint32_t n, i, kn;
    const char *k;
    tp_mptype t;
    tp_err rc;

    tp_mpr_init(&r, rep->data, rep->len);
    if ((rc = tp_mpr_map(&r, &n)) != TP_OK) return rc;
    for (i = 0; i < n; i++) {
        if ((rc = tp_mpr_str(&r, &k, &kn)) != TP_OK) return rc;
        if (tp_mp_str_eq(k, kn, key)) {
            if ((rc = tp_mpr_peek(&r, &t)) != TP_OK) return rc;
            if (t == TP_MP_NIL) return TP_ENOENT;
            *v = r;
            return TP_OK;
        }
        if ((rc = tp_mpr_skip(&r)) != TP_OK) return rc;
    }
    return TP_ENOENT;
}

tp_err tpt_reply_int(const tp_buf *rep, const char *key, int64_t *v)
{
    tp_mpr r;
    tp_err rc = tpt_reply_find(rep, key, &r);
    return rc != TP_OK ? rc : tp_mpr_int(&r, v);
}

tp_err tpt_reply_bool(const tp_buf *rep, const char *key, bool *v)
{
    tp_mpr r;
    tp_err rc = tpt_reply_find(rep, key, &r);
    return rc != TP_OK ? rc : tp_mpr_bool(&r, v);
}

tp_err tpt_reply_str(const tp_buf *rep, const char *key, const char **s, uint32_t *n)
{
    tp_mpr r;
    tp_err rc = tpt_reply_find(rep, key, &r);
    return rc != TP_OK ? rc : tp_mpr_str(&r, s, n);
}

tp_err tpt_reply_strdup(const tp_buf *rep, const char *key, char **out)
{
    const char *s;
    uint32_t n;
    char *p;
    tp_err rc = tpt_reply_str(rep, key, &s, &n);
    if (rc != TP_OK) return rc;
    if ((p = malloc((size_t)n + 1)) == NULL) return TP_ENOMEM;
    memcpy(p, s, n);
    p[n] = '\0';
    *out = p;
    return TP_OK;
}
