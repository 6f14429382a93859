/* SPDX-License-Identifier: MIT
 * control.h -- the daemon's command protocol (proto/control.h): a request
 * map {"cmd": str, ...} in, a reply map {"ok": bool, ["error": str], ...}
 * out.  Every request is checked whole first (a map of unique string keys,
 * well-formed values, nothing after it); a malformed or failing request gets
 * {"ok": false, "error": ...} and never stops the daemon.
 *
 * Commands are rows of one table in control.c: adding one ("verdict") is a
 * handler with the tpd_cmd_fn signature plus one row.  Handlers read their
 * arguments with tpd_req_* and write results with tpd_reply_*.  A check's
 * "<check>.evidence" is no row: the check table (checks/judge.h) says which
 * checks keep an evidence file.
 * A control context is used by the serve thread only. */
#ifndef TP_DAEMON_SERVE_CONTROL_H
#define TP_DAEMON_SERVE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/ingest/backlog.h"
#include "daemon/ingest/ingest.h"
#include "daemon/store/store.h"
#include "proto/mp.h"
#include "proto/tp_err.h"

typedef struct tpd_control tpd_control; /* opaque */
typedef struct tpd_req tpd_req;         /* a checked request */
typedef struct tpd_reply tpd_reply;     /* a reply being built */

/* tpd_cmd_fn handles one command.  It returns TP_OK after writing its
 * results, or an error (with tpd_reply_fail for a message of its own). */
typedef tp_err (*tpd_cmd_fn)(tpd_control *c, const tpd_req *q, tpd_reply *r);

/* tpd_control_create makes a command handler over s (and in, for the ingest
 * command; may be NULL).  token (copied; NULL for none): when set, every
 * request that did not come through a local control socket must carry the
 * same string under "tok".  Such a request never opens a file (the ingest
 * command is refused), token or not.
 * Errors: TP_EINVAL, TP_ENOMEM. */
tp_err tpd_control_create(tpd_control **cp, tpd_store *s, tpd_ingest *in, const char *token);
/* tpd_control_destroy frees c.  NULL is a no-op. */
void tpd_control_destroy(tpd_control *c);

/* tpd_control_handle answers the request of len bytes at req, which came
 * through a local (ipc://, the daemon's own user's) control socket when
 * local is true (serve.c asks its guard); *proven says whether it came
 * through a network one and carried the token: reply is reset
 * and receives the reply map.  Returns TP_OK whenever a reply was written
 * (also for failed commands); TP_ENOMEM when not even that was possible. */
tp_err tpd_control_handle(tpd_control *c, const void *req, size_t len, bool local, bool *proven,
                          tp_buf *reply);

/* tpd_control_shutdown reports whether the daemon is to stop: a shutdown
 * command was answered, or its owner's lease is over (lease.h). */
bool tpd_control_shutdown(const tpd_control *c);

/* tpd_control_tick is called by the serve loop at least once a second: it
 * drops attached processes that are gone (at most every
 * TPD_LEASE_PRUNE_MS) and stops an owned daemon that none holds any more. */
void tpd_control_tick(tpd_control *c);

/* tpd_control_set_backlog gives exec.finish the serve loop's backlog (the
 * batches received and not stored yet; must outlive c), so that it waits
 * for them and reports those lost.  NULL: none. */
void tpd_control_set_backlog(tpd_control *c, tpd_backlog *b);

/* tpd_control_store and tpd_control_ingest give handlers their context. */
tpd_store *tpd_control_store(tpd_control *c);
tpd_ingest *tpd_control_ingest(tpd_control *c);
/* tpd_control_follow is the executions other hosts follow (follow.h). */
struct tpd_follow *tpd_control_follow(tpd_control *c);

/* ---- for handlers: arguments ----
 * A key whose value is nil counts as absent.  Errors: TP_ENOENT (absent),
 * TP_EPROTO (another type). */
tp_err tpd_req_find(const tpd_req *q, const char *key, tp_mpr *v);
tp_err tpd_req_int(const tpd_req *q, const char *key, int64_t *v);
tp_err tpd_req_bool(const tpd_req *q, const char *key, bool *v);
/* tpd_req_str points *s (n bytes, not NUL-terminated) into the request. */
tp_err tpd_req_str(const tpd_req *q, const char *key, const char **s, uint32_t *n);
/* tpd_req_strdup returns a NUL-terminated copy (free() it); a string holding
 * a NUL byte is TP_EPROTO.  Also TP_ENOMEM. */
tp_err tpd_req_strdup(const tpd_req *q, const char *key, char **out);
/* Arguments a handler requires (tpd_req_need_*) or takes when given
 * (tpd_req_opt_str: *out NULL when absent): on failure the reply's error
 * says which argument and why ("missing argument 'exec'"). */
tp_err tpd_req_need_int(const tpd_req *q, tpd_reply *r, const char *key, int64_t *v);
tp_err tpd_req_need_str(const tpd_req *q, tpd_reply *r, const char *key, char **out);
tp_err tpd_req_opt_str(const tpd_req *q, tpd_reply *r, const char *key, char **out);
/* tpd_req_local says whether q came through a local (ipc://) control socket. */
bool tpd_req_local(const tpd_req *q);

/* ---- for handlers: results ---- */
void tpd_reply_int(tpd_reply *r, const char *key, int64_t v);
void tpd_reply_bool(tpd_reply *r, const char *key, bool v);
void tpd_reply_f64(tpd_reply *r, const char *key, double v);
void tpd_reply_nil(tpd_reply *r, const char *key);
void tpd_reply_str(tpd_reply *r, const char *key, const char *s, size_t n);
void tpd_reply_cstr(tpd_reply *r, const char *key, const char *s); /* NULL: nil */
/* tpd_reply_cstrs and tpd_reply_ints write an array of n values. */
void tpd_reply_cstrs(tpd_reply *r, const char *key, char *const *v, size_t n);
void tpd_reply_ints(tpd_reply *r, const char *key, const int64_t *v, size_t n);
/* tpd_reply_fail sets the reply's error message and returns err, so that a
 * handler can `return tpd_reply_fail(r, TP_ENOENT, "no run %lld", id);`. */
tp_err tpd_reply_fail(tpd_reply *r, tp_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
