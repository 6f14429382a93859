/* SPDX-License-Identifier: MIT
 * reqrep.h -- a control request and its reply, as proto/control.def
 * declares them: a request map {"cmd": str, ...} is checked whole first (a
 * map of at most 32 unique string keys, well-formed values, nothing after
 * it), then against its command's declaration (tpd_req_command); a
 * handler reads its arguments with tpd_req_* and writes its results with
 * tpd_reply_*, each named by its identifier (TPA_..., TPR_...); the reply is
 * the map {"ok": true, ...results} or, when the request was malformed or
 * the handler failed, {"ok": false, "error": str}.  A result its command
 * does not declare, or of another type, fails the reply ("internal error"),
 * so that the declaration stays the truth.  Every string in a reply is
 * written as valid UTF-8. */
#ifndef TP_DAEMON_SERVE_REQREP_H
#define TP_DAEMON_SERVE_REQREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/control.h"
#include "proto/mp.h"
#include "proto/tp_err.h"

typedef struct tpd_req tpd_req;     /* a checked request */
typedef struct tpd_reply tpd_reply; /* a reply being built */

/* tpd_answer_fn answers a checked request: TP_OK after writing its results,
 * or an error (with tpd_reply_fail for a message of its own). */
typedef tp_err (*tpd_answer_fn)(void *arg, const tpd_req *q, tpd_reply *r);

/* tpd_reqrep_answer checks the request of len bytes at req (which came
 * through a local control socket when local is true), has fn(arg) answer
 * it, and writes the reply map into reply (reset first).  Returns TP_OK
 * whenever a reply was written (also for a malformed request or a failed
 * command); TP_ENOMEM when not even that was possible. */
tp_err tpd_reqrep_answer(const void *req, size_t len, bool local, tpd_answer_fn fn, void *arg,
                         tp_buf *reply);

/* tpd_req_command reads the request's command into *cmd (and, for a
 * check's evidence command, the check's name into check, len bytes) and
 * checks its arguments against the command's declaration: each declared,
 * of its type or nil, and every required one there.  TP_OK, or TP_EINVAL
 * with the reply's error naming what is wrong. */
tp_err tpd_req_command(const tpd_req *q, tpd_reply *r, tp_cmd *cmd, char *check, size_t len);

/* tpd_req_token says whether the request carries the token tok. */
bool tpd_req_token(const tpd_req *q, const char *tok);

/* ---- arguments ----
 * Read once tpd_req_command checked the request, so of their declared
 * type.  A key whose value is nil counts as absent.  Errors: TP_ENOENT
 * (absent), TP_EPROTO (another type, or an argument of another command). */
tp_err tpd_req_find(const tpd_req *q, tp_arg a, tp_mpr *v);
tp_err tpd_req_int(const tpd_req *q, tp_arg a, int64_t *v);
/* tpd_req_flag is the boolean argument a, false when absent. */
bool tpd_req_flag(const tpd_req *q, tp_arg a);
/* tpd_req_str points *s (n bytes, not NUL-terminated) into the request. */
tp_err tpd_req_str(const tpd_req *q, tp_arg a, const char **s, uint32_t *n);
/* tpd_req_bin points *p (n bytes) into the request. */
tp_err tpd_req_bin(const tpd_req *q, tp_arg a, const uint8_t **p, uint32_t *n);
/* tpd_req_strdup returns a NUL-terminated copy (free() it); a string holding
 * a NUL byte is TP_EPROTO.  Also TP_ENOMEM. */
tp_err tpd_req_strdup(const tpd_req *q, tp_arg a, char **out);
/* Arguments a handler requires (tpd_req_need_*) or takes when given
 * (tpd_req_opt_str: *out NULL when absent): on failure the reply's error
 * says which argument and why ("missing argument 'exec'"). */
tp_err tpd_req_need_int(const tpd_req *q, tpd_reply *r, tp_arg a, int64_t *v);
tp_err tpd_req_need_str(const tpd_req *q, tpd_reply *r, tp_arg a, char **out);
tp_err tpd_req_opt_str(const tpd_req *q, tpd_reply *r, tp_arg a, char **out);
/* tpd_req_opt_int and tpd_req_opt_f64 (an integer taken as a number too)
 * read an optional argument, *has saying whether it was given. */
tp_err tpd_req_opt_int(const tpd_req *q, tpd_reply *r, tp_arg a, int64_t *v, bool *has);
tp_err tpd_req_opt_f64(const tpd_req *q, tpd_reply *r, tp_arg a, double *v, bool *has);
/* tpd_req_local says whether q came through a local (ipc://) control socket. */
bool tpd_req_local(const tpd_req *q);

/* ---- results ---- */
void tpd_reply_int(tpd_reply *r, tp_res k, int64_t v);
void tpd_reply_bool(tpd_reply *r, tp_res k, bool v);
void tpd_reply_str(tpd_reply *r, tp_res k, const char *s, size_t n);
void tpd_reply_cstr(tpd_reply *r, tp_res k, const char *s); /* NULL: nil */
/* tpd_reply_cstrs and tpd_reply_ints write an array of n values. */
void tpd_reply_cstrs(tpd_reply *r, tp_res k, char *const *v, size_t n);
void tpd_reply_ints(tpd_reply *r, tp_res k, const int64_t *v, size_t n);
/* tpd_reply_fail sets the reply's error message and returns err, so that a
 * handler can `return tpd_reply_fail(r, TP_ENOENT, "no run %lld", id);`. */
tp_err tpd_reply_fail(tpd_reply *r, tp_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
