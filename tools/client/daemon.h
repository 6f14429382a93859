/* SPDX-License-Identifier: MIT
 * daemon.h -- finding, starting, watching and leaving the daemon
 * trainparity-run talks to.
 *
 * When TRAINPARITY_DAEMON names an ingest URL, that daemon is used (control
 * URL from TRAINPARITY_CONTROL, else tp_url_control) and must answer a ping;
 * it is left running, and requests carry TRAINPARITY_TOKEN when that is set.
 * If it goes away, it is never restarted: a call fails once there has been
 * no connection to it for TPT_SILENCE_MS (it may come back within that).
 *
 * Otherwise the project's private daemon is used: database
 * ./.trainparity/runs.db, sockets ipc://<abs>/.trainparity/ingest.ipc
 * (+ ".ctl"), or, when that path does not fit a unix socket address, the same
 * names in a 0700 directory $TMPDIR/trainparity-<uid>-<hash of the project
 * path> (/tmp when TMPDIR is unset or too long).  A daemon already answering
 * there is reused; else one is started detached (its own session, stdout and
 * stderr appended to ./.trainparity/daemon.log).  Either way this process
 * attaches to it (control "attach"), and tpt_daemon_close detaches: a daemon
 * that a trainparity-run started exits when the last attached process has
 * detached or is gone, so several commands in one project share it and the
 * last one out stops it.  One started by hand is only attached to.
 *
 * A private daemon that dies while it is used (noticed within TPT_WATCH_MS
 * by every call, and by tpt_daemon_check while a command runs: waitpid for
 * the one this process started, kill(pid, 0) for one it reuses, or, when
 * that pid is not one this process can see, TPT_SILENCE_MS without a
 * connection) is said on stderr and started afresh on the same database and
 * sockets, at most TPT_RESTARTS times; the agents redial the same socket.
 * Single-threaded use only. */
#ifndef TP_TOOLS_CLIENT_DAEMON_H
#define TP_TOOLS_CLIENT_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/client/client.h"

#define TPT_DAEMON_START_MS 5000  /* how long a started daemon has to answer */
#define TPT_CALL_TIMEOUT_MS 30000 /* a live daemon's answer (ingest: longer) */
#define TPT_SILENCE_MS      10000 /* an external daemon unconnected this long is gone */
#define TPT_RESTARTS        3     /* restarts of a private daemon, then ERROR */

typedef struct tpt_daemon tpt_daemon; /* opaque */

/* tpt_daemon_open finds or starts the daemon for the working directory and
 * connects a control client to it.  On success *dp owns the handle.
 * Errors (with err): TP_ENOENT (no daemon binary), TP_ECHILD (cannot start
 * it), TP_ETIMEDOUT (it never answered; err names the log), TP_EIO,
 * TP_EINVAL (bad TRAINPARITY_DAEMON/CONTROL URL), TP_ENET. */
tp_err tpt_daemon_open(tpt_daemon **dp, char *err);

/* tpt_daemon_close detaches from a private daemon and frees d.  When that
 * was the last holder, the daemon exits and is waited for (SIGTERM then
 * SIGKILL if it will not); otherwise it is left serving the others.  NULL is
 * a no-op.  Errors: TP_ETIMEDOUT when the daemon had to be killed; TP_EIO
 * when it exited with a failure status or died. */
tp_err tpt_daemon_close(tpt_daemon *d, char *err);

/* tpt_daemon_check notices, between calls (while a command runs), that the
 * private daemon died, and restarts it as a call would; TP_OK while a
 * daemon serves (an external one: always).  Errors (with err): TP_ECLOSED
 * when it died and cannot be or was too often restarted; from then on every
 * call fails at once. */
tp_err tpt_daemon_check(tpt_daemon *d, char *err);

/* tpt_daemon_listen has the next tpt_daemon_open make the project's
 * private daemon listen at url (tcp://HOST:PORT) as well, and its control
 * socket at HOST:PORT+1, with a token (tools/client/token.h): the agents are then
 * given those URLs and the token, so that processes on other hosts reach
 * it.  A private daemon already serving other commands without it is
 * refused (TP_EINVAL).  Ignored when TRAINPARITY_DAEMON names a daemon.
 * url must outlive the handle. */
void tpt_daemon_listen(const char *url);

/* The control client (owned by d; do not close it). */
tpt_client *tpt_daemon_client(tpt_daemon *d);
/* The ingest and control URLs the agent is to be given (owned by d): the
 * network ones under tpt_daemon_listen. */
const char *tpt_daemon_ingest(const tpt_daemon *d);
const char *tpt_daemon_control(const tpt_daemon *d);
/* tpt_daemon_on_network says whether the agents reach the daemon over the
 * network (--listen, or an external daemon's tcp:// URL): the check's
 * executions are then also for other hosts to follow (trainparity-run
 * join). */
bool tpt_daemon_on_network(const tpt_daemon *d);
/* The token the agents are to carry ("" when none; owned by d). */
const char *tpt_daemon_token(const tpt_daemon *d);
/* The database path the daemon reported in its ping ("" if none). */
const char *tpt_daemon_db(const tpt_daemon *d);
/* The daemon's pid from its ping (-1 if not said). */
int64_t tpt_daemon_pid(const tpt_daemon *d);
/* Whether this process started the daemon now serving. */
bool tpt_daemon_started(const tpt_daemon *d);

#endif
