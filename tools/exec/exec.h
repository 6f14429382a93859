/* SPDX-License-Identifier: MIT
 * exec.h -- one execution of a check: the daemon records it, the command
 * runs under the agent, its spool files are ingested, the daemon is told it
 * ended and waited for until it has the execution's events. */
#ifndef TP_TOOLS_EXEC_EXEC_H
#define TP_TOOLS_EXEC_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/client/ctl.h"
#include "tools/base/launch.h"
#include "tools/exec/session.h"

#define TPT_FINISH_WAIT_MS 5000
/* How long, after the command ended on this host, an execution waits for
 * the hosts that follow it (trainparity-run join) to end theirs: a bound
 * for liveness, their commands end with this one's. */
#define TPT_FOLLOWERS_WAIT_MS 60000

typedef struct tpt_exec_spec {
    const char *role;  /* "record", "A", "B", "I", "R", ... */
    char *const *argv; /* the command, NULL-terminated */
    char *const *env;  /* extra "KEY=VALUE" for this execution only
                        * (TRAINPARITY_INTERRUPT_AT=4, TRAINPARITY_CAPTURE=values,
                        * ...), NULL-terminated; NULL for none */
    int wait_ms;       /* exec.finish wait; 0 means TPT_FINISH_WAIT_MS */
} tpt_exec_spec;

typedef struct tpt_exec_result {
    int64_t exec;            /* execution id; -1 when it was not created */
    bool launched;           /* the command started (exit is valid) */
    int spawn_errno;         /* why it did not start (ENOENT, EACCES), else 0 */
    tpt_exit exit;           /* how it ended */
    int nspool;              /* spool files ingested */
    tpt_ingest_info spooled; /* their counts */
    bool finished;           /* the daemon answered exec.finish (finish valid) */
    tpt_finish finish;
    /* the following hosts that hold spool files of it they could not send:
     * "host (pid N): K" (K files), comma-separated; "" none */
    char unsent[512];
} tpt_exec_result;

/* What an agent is told through the environment (proto/control.h). */
typedef struct tpt_agent_vars {
    const char *agent;   /* the library, for LD_PRELOAD */
    const char *daemon;  /* its event URL */
    const char *control; /* its control URL */
    const char *token;   /* "" when none */
    const char *spool;   /* the spool folder */
    int64_t run, exec;
    const char *key, *role;
    char *const *extra; /* "KEY=VALUE" that win over these; NULL-terminated or NULL */
} tpt_agent_vars;

/* tpt_agent_env returns the variables of a (LD_PRELOAD with the agent
 * before any already there, this process's pid space as TRAINPARITY_PIDNS),
 * the names of the check variables (TP_ENV_CHECK_VARS: removed from this
 * process's environment) and a->extra's, in a NULL-terminated array for
 * tpt_launch, of
 * which the first *n are owned: tpt_agent_env_free(env, *n).  NULL when out
 * of memory. */
char **tpt_agent_env(const tpt_agent_vars *a, size_t *n);
void tpt_agent_env_free(char **env, size_t n);

/* tpt_exec_run runs one execution of run: exec.create (role, argv), the
 * command with LD_PRELOAD=<agent>[:<old LD_PRELOAD>], TRAINPARITY_DAEMON,
 * _CONTROL, _RUN, _EXEC, _ROLE, _SPOOL and spec->env (which win over these)
 * in its environment, forwarded signals (tpt_launch); on the network
 * (tpt_daemon_on_network) exec.create also carries spec->env and the
 * tool's pid space for the hosts that follow the check, and their commands
 * are waited for (TPT_FOLLOWERS_WAIT_MS; one that failed is the
 * execution's exit when this host's succeeded); then the spool files
 * (tpt_spool_ingest), then exec.finish until the daemon is no longer
 * pending.  While the command runs the daemon is watched
 * (tpt_daemon_check): a private one that dies is restarted at once, so the
 * agents have one to redial; one that cannot be is the error returned, and
 * the spool files are then left for a later ingest.  *res is always written,
 * also on error, so the caller knows how far it got.  A command that cannot
 * be started returns TP_ECHILD (err: "cannot run 'foo': ..."); the execution
 * is still finished with an unknown status.  Errors (with err): TP_ECHILD,
 * those of the control calls and of tpt_spool_ingest, and TP_EDB when the
 * daemon reports events it received and could not store (finish.unstored).
 * Whenever there are such events err names their number, the execution and
 * the daemon's reason, after the first error if another came first. */
tp_err tpt_exec_run(tpt_session *s, int64_t run, const tpt_exec_spec *spec, tpt_exec_result *res,
                    char *err);

/* tpt_exec_one is tpt_exec_run for a check's command, saying so: its
 * progress under tag (what runs, then how it exited; the role is named when
 * it is not the tag), and its error, if any, on stderr.  Returns 0 when the
 * command ran (whatever its status) and was recorded whole, else -1: lost
 * events never make a verdict.  Also -1, saying so, when a stopping signal
 * reached trainparity-run while it ran (tpt_launch_stopped): the check
 * stops, and main ends the process as killed by that signal. */
int tpt_exec_one(tpt_session *s, const char *tag, int64_t run, const tpt_exec_spec *spec,
                 tpt_exec_result *res);

/* tpt_exec_cut says that the command of res started and a stopping signal
 * reached trainparity-run while it ran: tpt_exec_one returned -1, yet what
 * the command saved is moved aside as a finished baseline's is, so that a
 * script that resumes on its own does not find it next time. */
bool tpt_exec_cut(const tpt_exec_result *res);

#endif
