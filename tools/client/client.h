/* SPDX-License-Identifier: MIT
 * client.h -- a client of the daemon's control socket (nng req/rep): one
 * request, one reply, each a MessagePack map (proto/control.h).
 *
 * A client owns one req socket dialed without blocking, so it can be opened
 * before the daemon listens: nng reconnects in the background and a call
 * waits for the connection within its timeout.  A call waits in slices of
 * TPT_WATCH_MS on an nng context (a req socket's own timeout would abandon
 * the request) and between slices asks a watch whether the daemon is still
 * there, so that a dead daemon is noticed within a slice while a live one may
 * take the whole timeout.  A request is sent again only when its connection
 * is lost (to a daemon restarted at the same address), never on a timer.
 * Not thread-safe: one caller at a time.  Never use a client in a forked
 * child (nng is not fork-safe). */
#ifndef TP_TOOLS_CLIENT_CLIENT_H
#define TP_TOOLS_CLIENT_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/control.h"
#include "proto/mp.h"
#include "proto/tp_err.h"

typedef struct tpt_client tpt_client; /* opaque */

#define TPT_WATCH_MS 200 /* how often a waiting call asks its watch */

/* A call's watch over the daemon it waits for (tpt_client_watch). */
typedef struct tpt_watch {
    /* alive returns TP_OK while the daemon may still answer; otherwise an
     * error, with why (TPT_ERR_LEN bytes) saying what became of it.
     * Called on the calling thread between slices; it may not call c. */
    tp_err (*alive)(void *arg, char *why);
    /* revive (may be NULL: none) is called after alive failed and the
     * request was withdrawn, with alive's why.  TP_OK: a daemon answers at
     * the same URL again, and the request is sent anew (with a fresh
     * timeout); else the call fails with revive's error and err.  It may
     * make calls on c, during which revive is not called again. */
    tp_err (*revive)(void *arg, const char *why, char *err);
    void *arg;
} tpt_watch;

/* tpt_client_open opens a req socket to the control URL url; each call sends
 * and receives within timeout_ms.  On success *cp owns the client.
 * Errors: TP_EINVAL (bad URL), TP_ENOMEM, TP_ENET. */
tp_err tpt_client_open(tpt_client **cp, const char *url, int timeout_ms);

/* tpt_client_close closes c's socket and frees c.  NULL is a no-op. */
void tpt_client_close(tpt_client *c);

/* tpt_client_token makes every later request carry tok (copied; NULL or ""
 * for none) under "tok", as a daemon started with a shared token requires.
 * Errors: TP_ENOMEM. */
tp_err tpt_client_token(tpt_client *c, const char *tok);

/* tpt_client_url is the URL c was opened with (owned by c). */
const char *tpt_client_url(const tpt_client *c);

/* tpt_client_timeout sets the per-call send and receive timeout and returns
 * the previous one. */
int tpt_client_timeout(tpt_client *c, int timeout_ms);

/* tpt_client_watch makes every later call consult w (copied; NULL: no
 * watch, a call waits out its timeout). */
void tpt_client_watch(tpt_client *c, const tpt_watch *w);

/* tpt_client_silence is how long (ms) c has had no connection to the
 * daemon: 0 while it has one; since the open, or since the last one was
 * lost.  Any thread. */
long long tpt_client_silence(tpt_client *c);

/* tpt_client_call sends the request map req and receives the reply into rep
 * (reset first; the caller owns and frees it).  It checks that the reply is a
 * map with a boolean "ok"; when ok is false the daemon's "error" string goes
 * into err and the call returns TP_EINVAL (rep still holds the reply).
 * Errors: TP_ETIMEDOUT (no reply within the timeout: the daemon is busy, or
 * not there and no watch said so), TP_ECLOSED (the watch found the daemon
 * gone; err says how), those of the watch's revive, TP_ENET, TP_ENOMEM,
 * TP_EPROTO (not a reply map), TP_EINVAL. */
tp_err tpt_client_call(tpt_client *c, const tp_buf *req, tp_buf *rep, char *err);

/* tpt_client_ask is tpt_client_call that frees req afterwards, as a
 * request built for one call is. */
tp_err tpt_client_ask(tpt_client *c, tp_buf *req, tp_buf *rep, char *err);

/* ---- requests ----
 * A request is written through the identifiers of proto/control.def. */

/* tpt_req_begin resets b and starts the request for command cmd (not
 * TPC_evidence: tpt_req_evidence); its arguments follow, each written with
 * a tpt_arg_* (at most 14: the request is a MessagePack fixmap, whose
 * one-byte header each counts up). */
void tpt_req_begin(tp_buf *b, tp_cmd cmd);
/* tpt_req_evidence starts check's evidence request ("coverage.evidence"). */
void tpt_req_evidence(tp_buf *b, const char *check);
void tpt_arg_int(tp_buf *b, tp_arg a, int64_t v);
void tpt_arg_bool(tp_buf *b, tp_arg a, bool v);
void tpt_arg_f64(tp_buf *b, tp_arg a, double v);
void tpt_arg_str(tp_buf *b, tp_arg a, const char *s); /* NULL: nil (absent) */
void tpt_arg_nil(tp_buf *b, tp_arg a);
/* tpt_arg_bin writes n bytes at p. */
void tpt_arg_bin(tp_buf *b, tp_arg a, const void *p, size_t n);
/* tpt_arg_strs writes the array of n strings v. */
void tpt_arg_strs(tp_buf *b, tp_arg a, char *const *v, uint32_t n);

/* ---- replies ----
 * Lookups scan the reply map from its start.  A key whose value is nil counts
 * as absent (TP_ENOENT); a value of another type is TP_EPROTO. */

/* tpt_reply_find positions *v at result k's value. */
tp_err tpt_reply_find(const tp_buf *rep, tp_res k, tp_mpr *v);
tp_err tpt_reply_int(const tp_buf *rep, tp_res k, int64_t *v);
tp_err tpt_reply_bool(const tp_buf *rep, tp_res k, bool *v);
/* tpt_reply_str points *s (not NUL-terminated, n bytes) into rep. */
tp_err tpt_reply_str(const tp_buf *rep, tp_res k, const char **s, uint32_t *n);
/* tpt_reply_copy writes the string result k into out (n bytes, cut to
 * fit); "" when absent or not a string. */
void tpt_reply_copy(const tp_buf *rep, tp_res k, char *out, size_t n);
/* tpt_reply_strdup returns a NUL-terminated copy in *out (free() it). */
tp_err tpt_reply_strdup(const tp_buf *rep, tp_res k, char **out);

#endif
