/* SPDX-License-Identifier: MIT
 * control.h -- the daemon's command protocol (proto/control.h): a request
 * map {"cmd": str, ...} in, a reply map {"ok": bool, ["error": str], ...}
 * out.  Every request is checked whole first (a map of unique string keys,
 * well-formed values, nothing after it); a malformed or failing request gets
 * {"ok": false, "error": ...} and never stops the daemon.
 *
 * Commands are declared in proto/control.def, arguments and results with
 * them; adding one ("verdict") is its rows there, a handler with the
 * tpd_cmd_fn signature and its entry in control.c's handler table.  Before a
 * handler runs, its request is checked against the declaration
 * (tpd_req_command, reqrep.h); handlers read their arguments with tpd_req_*
 * and write results with tpd_reply_*.  A check's "<check>.evidence" is one
 * command for every check the check table (checks/judge.h) says keeps an
 * evidence file.
 * A control context is used by the serve thread only. */
#ifndef TP_DAEMON_SERVE_CONTROL_H
#define TP_DAEMON_SERVE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/ingest/backlog.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/reqrep.h"
#include "daemon/store/store.h"
#include "proto/mp.h"
#include "proto/tp_err.h"

typedef struct tpd_control tpd_control; /* opaque */

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

#endif
