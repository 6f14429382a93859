/* SPDX-License-Identifier: MIT
 * client.c -- control-socket client: req socket, calls, reply lookups.
 *
 * A call runs on one nng context with one aio whose callback signals a
 * condition variable: the caller waits on it in slices and can withdraw the
 * request (nng_aio_cancel) when the watch says the daemon is gone.  Pipe
 * events count the connections, for tpt_client_silence. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "tools/base/cli.h"
#include "tools/client/client.h"
#include "tools/base/errbuf.h"

/* A request is resent on a timer after this long: never, in practice (a
 * long ingest must not be asked for twice); it is resent at once when its
 * connection is lost. */
#define RESEND_MS (24 * 3600 * 1000)

struct tpt_client {
    nng_socket sock;
    nng_ctx ctx;
    nng_aio *aio;
    bool sock_open, ctx_open, sync_init;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;         /* the aio's operation has completed (mu) */
    int npipes;        /* connections up (mu) */
    long long down_ms; /* since when none is up (mu) */
    int timeout_ms;
    tpt_watch watch;
    bool has_watch;
    bool reviving; /* in watch.revive: no second one */
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

static void on_aio(void *arg)
{
    tpt_client *c = arg;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* on_pipe counts connections; ADD_PRE and REM_POST, because nng reports
 * REM_POST for every pipe that saw ADD_PRE. */
static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    tpt_client *c = arg;
    (void)p;
    pthread_mutex_lock(&c->mu);
    if (ev == NNG_PIPE_EV_ADD_PRE) {
        c->npipes++;
    } else if (ev == NNG_PIPE_EV_REM_POST && c->npipes > 0 && --c->npipes == 0) {
        c->down_ms = tpt_now_ms();
    }
    pthread_mutex_unlock(&c->mu);
}

static tp_err init_sync(tpt_client *c)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return TP_ENOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        pthread_condattr_destroy(&ca);
        return TP_ENOMEM;
    }
    if (pthread_cond_init(&c->cv, &ca) != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_condattr_destroy(&ca);
        return TP_ENOMEM;
    }
    pthread_condattr_destroy(&ca);
    c->sync_init = true;
    return TP_OK;
}

tp_err tpt_client_open(tpt_client **cp, const char *url, int timeout_ms)
{
    tpt_client *c;
    int rv = 0;
    tp_err rc;
    if (cp == NULL || url == NULL || timeout_ms < 0) return TP_EINVAL;
    c = calloc(1, sizeof(*c));
    if (c == NULL) return TP_ENOMEM;
    if ((c->url = strdup(url)) == NULL || (rc = init_sync(c)) != TP_OK) {
        rc = TP_ENOMEM;
        goto fail;
    }
    c->down_ms = tpt_now_ms();
    if ((rv = nng_req0_open(&c->sock)) != 0) goto nng_fail;
    c->sock_open = true;
    /* Replies carry query text: allow what the wire allows, not nng's 1 MiB.
     * Reconnect quickly: a daemon that was just started comes up in ms. */
    if ((rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 512u << 20)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 10)) != 0 ||
        (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 200)) != 0 ||
        (rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_PRE, on_pipe, c)) != 0 ||
        (rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, on_pipe, c)) != 0 ||
        (rv = nng_ctx_open(&c->ctx, c->sock)) != 0)
        goto nng_fail;
    c->ctx_open = true;
    if ((rv = nng_ctx_set_ms(c->ctx, NNG_OPT_REQ_RESENDTIME, RESEND_MS)) != 0 ||
        (rv = nng_aio_alloc(&c->aio, on_aio, c)) != 0)
        goto nng_fail;
    nng_aio_set_timeout(c->aio, NNG_DURATION_INFINITE);
    if ((rv = nng_dial(c->sock, url, NULL, NNG_FLAG_NONBLOCK)) != 0) goto nng_fail;
    tpt_client_timeout(c, timeout_ms);
    *cp = c;
    return TP_OK;
nng_fail:
    rc = from_nng(rv);
fail:
    tpt_client_close(c);
    return rc;
}

void tpt_client_close(tpt_client *c)
{
    if (c == NULL) return;
    if (c->aio != NULL) nng_aio_stop(c->aio);
    if (c->ctx_open) nng_ctx_close(c->ctx);
    /* Closing the socket runs the last pipe callbacks: mu must outlive it. */
    if (c->sock_open) nng_close(c->sock);
    if (c->aio != NULL) nng_aio_free(c->aio);
    if (c->sync_init) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
    }
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
    tp_mp_cstr(out, TP_CTL_TOK);
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
    return old;
}

void tpt_client_watch(tpt_client *c, const tpt_watch *w)
{
    c->has_watch = w != NULL;
    if (w != NULL) c->watch = *w;
}

long long tpt_client_silence(tpt_client *c)
{
    long long s;
    pthread_mutex_lock(&c->mu);
    s = c->npipes > 0 ? 0 : tpt_now_ms() - c->down_ms;
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* withdraw cancels the aio's operation and waits for it to end; 0 when it
 * had completed after all (its result stands), else gave_up. */
static int withdraw(tpt_client *c, int gave_up)
{
    nng_aio_cancel(c->aio);
    nng_aio_wait(c->aio);
    return nng_aio_result(c->aio) == 0 ? 0 : gave_up;
}

/* await_op waits for the aio's operation until deadline, asking the watch
 * every TPT_WATCH_MS; returns its nng result, NNG_ETIMEDOUT, or NNG_ECLOSED
 * with *gone set and why filled when the watch found the daemon gone. */
static int await_op(tpt_client *c, long long deadline, bool *gone, char *why)
{
    for (;;) {
        long long until = tpt_now_ms() + TPT_WATCH_MS;
        struct timespec ts;
        bool done;

        if (until > deadline) until = deadline;
        ts.tv_sec = (time_t)(until / 1000);
        ts.tv_nsec = (long)(until % 1000) * 1000000L;
        pthread_mutex_lock(&c->mu);
        while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0) {}
        done = c->done;
        pthread_mutex_unlock(&c->mu);
        if (done) return nng_aio_result(c->aio);
        if (tpt_now_ms() >= deadline) return withdraw(c, NNG_ETIMEDOUT);
        if (c->has_watch && c->watch.alive(c->watch.arg, why) != TP_OK) {
            int rv = withdraw(c, NNG_ECLOSED);
            *gone = rv != 0;
            return rv;
        }
    }
}

static void start_op(tpt_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->done = false;
    pthread_mutex_unlock(&c->mu);
}

/* roundtrip sends len bytes at data and receives the reply into *mp. */
static int roundtrip(tpt_client *c, const void *data, size_t len, nng_msg **mp, bool *gone,
                     char *why)
{
    long long deadline = tpt_now_ms() + c->timeout_ms;
    nng_msg *m;
    int rv;

    *gone = false;
    if ((rv = nng_msg_alloc(&m, 0)) != 0) return rv;
    if ((rv = nng_msg_append(m, data, len)) != 0) {
        nng_msg_free(m);
        return rv;
    }
    nng_aio_set_msg(c->aio, m);
    start_op(c);
    nng_ctx_send(c->ctx, c->aio);
    if ((rv = await_op(c, deadline, gone, why)) != 0) {
        nng_msg_free(nng_aio_get_msg(c->aio)); /* a send that failed leaves it to us */
        nng_aio_set_msg(c->aio, NULL);
        return rv;
    }
    start_op(c);
    nng_ctx_recv(c->ctx, c->aio);
    if ((rv = await_op(c, deadline, gone, why)) != 0) return rv;
    *mp = nng_aio_get_msg(c->aio);
    nng_aio_set_msg(c->aio, NULL);
    return 0;
}

tp_err tpt_client_call(tpt_client *c, const tp_buf *req, tp_buf *rep, char *err)
{
    char why[TPT_ERR_LEN];
    tp_buf tokreq;
    nng_msg *m = NULL;
    const char *s;
    uint32_t n;
    bool ok, gone;
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
    for (;;) {
        why[0] = '\0';
        rv = roundtrip(c, req->data, req->len, &m, &gone, why);
        if (!gone) break;
        if (c->watch.revive == NULL || c->reviving) {
            tp_buf_free(&tokreq);
            return tpt_seterr(err, TP_ECLOSED, "%s", why);
        }
        c->reviving = true;
        rc = c->watch.revive(c->watch.arg, why, err);
        c->reviving = false;
        if (rc != TP_OK) {
            tp_buf_free(&tokreq);
            return rc;
        }
    }
    tp_buf_free(&tokreq);
    if (rv != 0) {
        rc = from_nng(rv);
        if (rc == TP_ETIMEDOUT)
            return tpt_seterr(err, rc, "daemon at %s did not answer within %d ms", c->url,
                              c->timeout_ms);
        return tpt_seterr(err, rc, "daemon at %s: %s", c->url, nng_strerror(rv));
    }
    tp_buf_append(rep, nng_msg_body(m), nng_msg_len(m));
    nng_msg_free(m);
    if (rep->oom) return tpt_seterr(err, TP_ENOMEM, "out of memory reading a reply");
    if (tp_mp_map_bool(rep->data, rep->len, TP_CTL_OK, &ok) != TP_OK)
        return tpt_seterr(err, TP_EPROTO, "daemon at %s sent a malformed reply", c->url);
    if (!ok) {
        if (tp_mp_map_str(rep->data, rep->len, TP_CTL_ERROR, &s, &n) != TP_OK) {
            s = "request refused (no reason given)";
            n = (uint32_t)strlen(s);
        }
        return tpt_seterr(err, TP_EINVAL, "daemon: %.*s", (int)n, s);
    }
    return TP_OK;
}

/* start writes the request map's header, counted up by each argument
 * (client.h), and its command's name. */
static void start(tp_buf *b, const char *name, size_t n)
{
    tp_buf_reset(b);
    tp_mp_map(b, 1);
    tp_mp_cstr(b, TP_CTL_CMD);
    tp_mp_str(b, name, n);
}

void tpt_req_begin(tp_buf *b, tp_cmd cmd)
{
    start(b, TPC_NAME(cmd), strlen(TPC_NAME(cmd)));
}

void tpt_req_evidence(tp_buf *b, const char *check)
{
    char name[128];
    int n = snprintf(name, sizeof name, "%s%s", check, TP_EVIDENCE_SUFFIX);
    start(b, name, n > 0 && (size_t)n < sizeof name ? (size_t)n : 0);
}

/* arg writes argument a's key and counts it in the map's header. */
static void arg(tp_buf *b, tp_arg a)
{
    if (b->oom || b->len == 0 || (b->data[0] & 0x0f) == 0x0f) {
        b->oom = 1; /* more than a fixmap holds: refused below as out of memory */
        return;
    }
    b->data[0]++;
    tp_mp_cstr(b, TPA_KEY(a));
}

void tpt_arg_int(tp_buf *b, tp_arg a, int64_t v)
{
    arg(b, a);
    tp_mp_int(b, v);
}

void tpt_arg_bool(tp_buf *b, tp_arg a, bool v)
{
    arg(b, a);
    tp_mp_bool(b, v);
}

void tpt_arg_f64(tp_buf *b, tp_arg a, double v)
{
    arg(b, a);
    tp_mp_f64(b, v);
}

void tpt_arg_str(tp_buf *b, tp_arg a, const char *s)
{
    arg(b, a);
    if (s == NULL)
        tp_mp_nil(b);
    else
        tp_mp_cstr(b, s);
}

void tpt_arg_nil(tp_buf *b, tp_arg a)
{
    arg(b, a);
    tp_mp_nil(b);
}

void tpt_arg_bin(tp_buf *b, tp_arg a, const void *p, size_t n)
{
    arg(b, a);
    tp_mp_bin(b, p, n);
}

void tpt_arg_strs(tp_buf *b, tp_arg a, char *const *v, uint32_t n)
{
    arg(b, a);
    tp_mp_array(b, n);
    for (uint32_t i = 0; i < n; i++) tp_mp_cstr(b, v[i]);
}

tp_err tpt_reply_find(const tp_buf *rep, tp_res k, tp_mpr *v)
{
    return tp_mp_map_value(rep->data, rep->len, TPR_KEY(k), v);
}

tp_err tpt_reply_int(const tp_buf *rep, tp_res k, int64_t *v)
{
    return tp_mp_map_int(rep->data, rep->len, TPR_KEY(k), v);
}

tp_err tpt_reply_bool(const tp_buf *rep, tp_res k, bool *v)
{
    return tp_mp_map_bool(rep->data, rep->len, TPR_KEY(k), v);
}

tp_err tpt_reply_str(const tp_buf *rep, tp_res k, const char **s, uint32_t *n)
{
    return tp_mp_map_str(rep->data, rep->len, TPR_KEY(k), s, n);
}

void tpt_reply_copy(const tp_buf *rep, tp_res k, char *out, size_t n)
{
    const char *s;
    uint32_t len;
    out[0] = '\0';
    if (tpt_reply_str(rep, k, &s, &len) == TP_OK) snprintf(out, n, "%.*s", (int)len, s);
}

tp_err tpt_client_ask(tpt_client *c, tp_buf *req, tp_buf *rep, char *err)
{
    tp_err rc = tpt_client_call(c, req, rep, err);
    tp_buf_free(req);
    return rc;
}

tp_err tpt_reply_strdup(const tp_buf *rep, tp_res k, char **out)
{
    const char *s;
    uint32_t n;
    char *p;
    tp_err rc = tpt_reply_str(rep, k, &s, &n);
    if (rc != TP_OK) return rc;
    if ((p = malloc((size_t)n + 1)) == NULL) return TP_ENOMEM;
    memcpy(p, s, n);
    p[n] = '\0';
    *out = p;
    return TP_OK;
}
