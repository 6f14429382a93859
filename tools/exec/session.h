/* SPDX-License-Identifier: MIT
 * session.h -- what every execution of one trainparity-run invocation
 * shares: the daemon (found or started), the agent library and the spool
 * directory.  A check opens one session, creates its run, runs its
 * executions with tpt_exec_run (exec.h), asks the daemon, and closes it. */
#ifndef TP_TOOLS_EXEC_SESSION_H
#define TP_TOOLS_EXEC_SESSION_H

#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/client/client.h"
#include "tools/client/daemon.h"

typedef struct tpt_session tpt_session; /* opaque */

/* tpt_session_open finds the agent (tpt_find_agent; checked first, so a
 * missing agent starts no daemon), creates ./.trainparity/spool (0700) and
 * opens the daemon (tpt_daemon_open).  On success *sp owns the session.
 * Errors (with err): those of tpt_find_agent, tpt_state_dir and
 * tpt_daemon_open; TP_EINVAL when the agent's path holds ':' or ' ' (it
 * could not go into LD_PRELOAD). */
tp_err tpt_session_open(tpt_session **sp, char *err);

/* tpt_session_close ends the run for the hosts that follow it, leaves the daemon (tpt_daemon_close:
 * a private one stops when no other command holds it) and frees s.  NULL is a no-op. Errors: those
 * of tpt_daemon_close. */
tp_err tpt_session_close(tpt_session *s, char *err);

/* How long tpt_session_close waits for the hosts that follow the
 * session's run (trainparity-run join) to be told it ended: a bound for
 * liveness, they ask every TPT_FOLLOW_POLL_MS. */
#define TPT_FOLLOWERS_END_MS 30000

/* tpt_session_ran records the run of the session's executions: on the
 * network (tpt_daemon_on_network), tpt_session_close tells the hosts that
 * follow it that it ended. */
void tpt_session_ran(tpt_session *s, int64_t run);

/* The daemon's control client (owned by s). */
tpt_client *tpt_session_client(tpt_session *s);
/* The daemon handle (owned by s). */
tpt_daemon *tpt_session_daemon(tpt_session *s);
/* The agent library's absolute path (owned by s). */
const char *tpt_session_agent(const tpt_session *s);
/* The spool directory's absolute path (owned by s). */
const char *tpt_session_spool(const tpt_session *s);

#endif
