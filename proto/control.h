/* SPDX-License-Identifier: MIT
 * control.h -- the daemon's command protocol (nng req/rep) and the
 * environment contract between trainparity-run and the agent.
 *
 * A request is a MessagePack map {"cmd": str, ...arguments}; a reply is a map
 * {"ok": bool, ["error": str,] ...results}.  Commands:
 *   ping                                   -> version, db, pid, attached
 *   run.create  name check params [started_ago_ns]
 *                                          -> run (params: a JSON object of the keys
 *                                             proto/params.def declares for check;
 *                                             started_ago_ns: how long ago the
 *                                             check began, a duration so that the
 *                                             daemon's clock places it)
 *   run.find    run | name [check]         -> found; run, check, name when found (the
 *                                             run by id, or the latest called name
 *                                             whose check is check)
 *   exec.create run role argv [env]        -> exec, key (the execution's secret);
 *                                             env (the "KEY=VALUE" every host's agents
 *                                             need) lets other hosts follow it:
 *   exec.next   host pid [run after asided] -> state: "wait", "exec" or "end"; run,
 *                                             aside (executions to move aside first,
 *                                             from the asided-th); for "exec": exec,
 *                                             role, key, argv, env, finished
 *                                             (trainparity-run join, the follower
 *                                             host pid; run 0: the newest not ended)
 *   exec.done   exec host pid status signal -> (nothing): the follower's command ended
 *   exec.aside  run exec                   -> (nothing): the leader moved exec's
 *                                             checkpoints aside; followers do too
 *   exec.followers exec                    -> running, waiting, failed, status, signal
 *                                             (followers whose command is running;
 *                                             the first that failed)
 *   run.end     run                        -> untold (followers not yet told the run
 *                                             ended; daemon/serve/follow.h)
 *   exec.finish exec status signal wait_ms -> pending, complete, processes, events,
 *                                             gaps, dropped, unstored (events received
 *                                             and not stored), unstored_why
 *   seen        exec pid                   -> seq (last contiguous, -1), bye, end
 *                                             (a process of exec said bye "interrupt":
 *                                             the agent asked to interrupt it ends
 *                                             every process of the execution)
 *   ingest      path                       -> events, bad (a spool file named
 *                                             <exec>-<pid>.spool, of the daemon's
 *                                             user; local control sockets only)
 *   query       what ("runs"|"run"|"steps"|"verdict"|"saves") id [json]
 *                                          -> text (the view; JSON when json is true)
 *   verdict     run                        -> outcome, text, json
 *   coverage.evidence run                  -> evidence (every ID's occurrences,
 *                                             JSON lines)
 *   shutdown                               -> (nothing); stops now
 *   attach      pid [owner]                -> attached (holders now)
 *   detach      pid                        -> attached (left), exiting
 * A daemon that an attached process started (owner: true) exits once no
 * attached process is left: detached, or found gone (daemon/serve/lease.h).
 * Every string in a reply is valid UTF-8: a byte that is not becomes
 * U+FFFD, a control character other than newline and tab the escape
 * \u00NN (valid in JSON text as well). */
#ifndef TP_PROTO_CONTROL_H
#define TP_PROTO_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

/* Environment read by the agent (set by trainparity-run). */
#define TP_ENV_DAEMON       "TRAINPARITY_DAEMON"       /* ingest URL */
#define TP_ENV_CONTROL      "TRAINPARITY_CONTROL"      /* control URL (else derived) */
#define TP_ENV_RUN          "TRAINPARITY_RUN"          /* run id */
#define TP_ENV_EXEC         "TRAINPARITY_EXEC"         /* execution id */
#define TP_ENV_EXEC_KEY     "TRAINPARITY_EXEC_KEY"     /* the execution's key (exec.create) */
#define TP_ENV_ROLE         "TRAINPARITY_ROLE"         /* execution role label */
#define TP_ENV_SPOOL        "TRAINPARITY_SPOOL"        /* spool directory */
#define TP_ENV_CAPTURE      "TRAINPARITY_CAPTURE"      /* "digests" | "values" */
#define TP_ENV_INTERRUPT_AT "TRAINPARITY_INTERRUPT_AT" /* optimizer step K */
#define TP_ENV_UPDATE_NORM  "TRAINPARITY_UPDATE_NORM"  /* "1": exact update norms */
#define TP_ENV_UPDATE_EVERY "TRAINPARITY_UPDATE_EVERY" /* N: those norms every Nth step */
#define TP_ENV_TOKEN        "TRAINPARITY_TOKEN"        /* shared token for tcp:// */
#define TP_ENV_DEBUG        "TRAINPARITY_DEBUG"        /* "1": agent logs to stderr */
#define TP_ENV_SAMPLE_ID    "TRAINPARITY_SAMPLE_ID"    /* Python expression over a batch */
#define TP_ENV_DIGEST       "TRAINPARITY_DIGEST"     /* "full" | "induction" (docs/induction.md) */
#define TP_ENV_FULL_STEPS   "TRAINPARITY_FULL_STEPS" /* "LO-HI": every tensor digested there */
#define TP_ENV_FULL_EVERY   "TRAINPARITY_FULL_EVERY" /* K: induction's safety net, 0 none */
#define TP_ENV_PIDNS        "TRAINPARITY_PIDNS"      /* the tool's pid space (tp_pidns) */

/* An execution's key: 128 random bits as lowercase hex, made by exec.create.
 * Every batch for the execution carries it ("key"); the daemon stores only
 * batches whose (run, exec, key) match an execution it created. */
#define TP_EXEC_KEY_LEN 32

/* Exit status of a process the agent ended on request (resume's execution I). */
#define TP_INTERRUPT_STATUS 0

/* tp_url_control derives the control URL from an ingest URL: "ipc://P" gives
 * "ipc://P.ctl", "tcp://H:N" gives "tcp://H:N+1".  TP_EINVAL for other forms
 * or when out (n bytes) is too small. */
tp_err tp_url_control(const char *ingest, char *out, size_t n);

/* tp_url_local tells whether url is ipc:// or inproc://, which no other host
 * can reach; anything else (tcp://) is a network URL. */
bool tp_url_local(const char *url);

/* A process's id on the wire.  A pid names a process only within its pid
 * space: processes on two hosts, or in two containers (a Kubernetes pod
 * each), can have the same pid.  So the agent sends its pid as is when it
 * lives in the pid space of the trainparity-run that started the check
 * (TRAINPARITY_PIDNS, unset: assumed the same), and otherwise ORs a tag of
 * its own pid space above the pid's TP_PID_BITS bits (a Linux pid is below
 * 2^22): pid | tp_pid_tag(its space, the tool's).  Its ppid gets the same
 * tag, which its parent, in the same space, has too. */
#define TP_PID_BITS     22
#define TP_PID_TAG_BITS 41

/* tp_pidns writes this process's pid space into out (n bytes): the boot's
 * id and the pid namespace, "<boot id>/pid:[<inode>]".  TP_EIO when /proc
 * does not say; TP_EINVAL when n is too small. */
tp_err tp_pidns(char *out, size_t n);

/* tp_pid_tag is the tag for a process of pid space mine when the tool's is
 * tools: 0 when they are the same, or tools is NULL or empty (a process
 * started by hand), else a non-zero multiple of 2^TP_PID_BITS below 2^63. */
int64_t tp_pid_tag(const char *mine, const char *tools);

#endif
