/* SPDX-License-Identifier: MIT
 * daemon.h -- finding, starting and stopping the daemon trainparity-run
 * talks to.
 *
 * When TRAINPARITY_DAEMON names an ingest URL, that daemon is used (control
 * URL from TRAINPARITY_CONTROL, else tp_url_control) and must answer a ping;
 * it is left running, and requests carry TRAINPARITY_TOKEN when that is set.  Otherwise the
 * project's private daemon is used: database ./.trainparity/runs.db, sockets
 * ipc://<abs>/.trainparity/ingest.ipc
 * (+ ".ctl"), or, when that path does not fit a unix socket address, the same
 * names in a 0700 directory $TMPDIR/trainparity-<uid>-<hash of the project
 * path> (/tmp when TMPDIR is unset or too long).  A daemon already answering
 * there is reused and left running; else one is started detached (its own
 * session, stdout and stderr appended to ./.trainparity/daemon.log) and shut
 * down by tpt_daemon_close.  Single-threaded use only. */
#ifndef TP_TOOLS_DAEMON_H
#define TP_TOOLS_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/client.h"

#define TPT_DAEMON_START_MS 5000 /* how long a started daemon has to answer */
#define TPT_CALL_TIMEOUT_MS 30000

typedef struct tpt_daemon tpt_daemon; /* opaque */

/* tpt_daemon_open finds or starts the daemon for the working directory and
 * connects a control client to it.  On success *dp owns the handle.
 * Errors (with err): TP_ENOENT (no daemon binary), TP_ECHILD (cannot start
 * it), TP_ETIMEDOUT (it never answered; err names the log), TP_EIO,
 * TP_EINVAL (bad TRAINPARITY_DAEMON/CONTROL URL), TP_ENET. */
tp_err tpt_daemon_open(tpt_daemon **dp, char *err);

/* tpt_daemon_close stops the daemon if tpt_daemon_open started it (control
 * "shutdown", then waits for it to exit; SIGTERM then SIGKILL if it will
 * not) and frees d.  NULL is a no-op.  Errors: TP_ETIMEDOUT when the daemon
 * had to be killed; TP_EIO when it exited with a failure status. */
tp_err tpt_daemon_close(tpt_daemon *d, char *err);

/* The control client (owned by d; do not close it). */
tpt_client *tpt_daemon_client(tpt_daemon *d);
/* The ingest and control URLs the agent is to be given (owned by d). */
const char *tpt_daemon_ingest(const tpt_daemon *d);
const char *tpt_daemon_control(const tpt_daemon *d);
/* The database path the daemon reported in its ping ("" if none). */
const char *tpt_daemon_db(const tpt_daemon *d);
/* The daemon's pid from its ping (-1 if not said). */
int64_t tpt_daemon_pid(const tpt_daemon *d);
/* Whether tpt_daemon_open started the daemon (and close will stop it). */
bool tpt_daemon_started(const tpt_daemon *d);

#endif
