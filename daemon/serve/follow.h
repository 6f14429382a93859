/* SPDX-License-Identifier: MIT
 * follow.h -- the executions that other hosts follow: a check run on one
 * host (the leader, trainparity-run --listen) while a `trainparity-run join`
 * on each other host (a follower: a Kubernetes pod, which no launcher of the
 * leader's starts) runs every execution's command there too, with the
 * execution's key and variables (docs/multinode.md).
 *
 * The leader's exec.create carries "env" (the variables every host's
 * agents need: the interrupt step, the capture mode, the leader's pid
 * space); such an execution is registered here, with its role, key and
 * command.  A follower polls exec.next: the next execution of the run after
 * the last it ran, the checkpoints to move aside first (those the leader
 * moved aside of executions it ran too: exec.aside), or the end of the run
 * (run.end).  After each command it says how that ended (exec.done); the
 * leader waits for that (exec.followers) before it finishes the execution.
 *
 * Kept in memory, by the daemon that serves the check: a daemon restarted
 * mid-run knows the executions created after the restart only, which is
 * what a follower asks for next.  At most TPD_FOLLOW_EXECS executions
 * (the oldest forgotten first), TPD_FOLLOW_RUNS runs and
 * TPD_FOLLOW_HOSTS followers; the serve thread only. */
#ifndef TP_DAEMON_SERVE_FOLLOW_H
#define TP_DAEMON_SERVE_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/serve/control.h"
#include "proto/tp_err.h"

#define TPD_FOLLOW_EXECS 256
#define TPD_FOLLOW_RUNS  64
#define TPD_FOLLOW_HOSTS 256
#define TPD_FOLLOW_ASIDE 64 /* executions moved aside per run */

typedef struct tpd_follow tpd_follow; /* opaque */

tp_err tpd_follow_create(tpd_follow **fp);
void tpd_follow_destroy(tpd_follow *f); /* NULL is a no-op */

/* tpd_follow_strs reads the request's argument key, an array of strings
 * without NUL bytes, into *out (n strings, each and the array malloc'ed:
 * tpd_follow_strs_free).  Errors: TP_ENOENT (absent or nil), TP_EPROTO
 * (another type), TP_ENOMEM. */
tp_err tpd_follow_strs(const tpd_req *q, tp_arg key, char ***out, size_t *n);
void tpd_follow_strs_free(char **v, size_t n);

/* tpd_follow_exec registers execution exec of run for followers: its role
 * and key (copied), its command (argv, nargv strings) and variables (env,
 * nenv "KEY=VALUE" strings), whose arrays it takes over (tpd_follow_strs'),
 * also on error.  Errors: TP_ENOMEM. */
tp_err tpd_follow_exec(tpd_follow *f, int64_t run, int64_t exec, const char *role, const char *key,
                       char **argv, size_t nargv, char **env, size_t nenv);

/* tpd_follow_finished marks exec finished (exec.finish): a follower that
 * has not started it by then is told so instead of running it. */
void tpd_follow_finished(tpd_follow *f, int64_t exec);

/* The commands (control.c's table; proto/control.h says their fields). */
tp_err tpd_follow_cmd_next(tpd_control *c, const tpd_req *q, tpd_reply *r);
tp_err tpd_follow_cmd_done(tpd_control *c, const tpd_req *q, tpd_reply *r);
tp_err tpd_follow_cmd_aside(tpd_control *c, const tpd_req *q, tpd_reply *r);
tp_err tpd_follow_cmd_followers(tpd_control *c, const tpd_req *q, tpd_reply *r);
tp_err tpd_follow_cmd_end(tpd_control *c, const tpd_req *q, tpd_reply *r);

#endif
