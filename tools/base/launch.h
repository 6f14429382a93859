/* SPDX-License-Identifier: MIT
 * launch.h -- run a command as a child and wait for it, forwarding the
 * signals a user sends to trainparity-run.
 *
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are caught while the
 * child runs and sent on to it; the previous handlers come back afterwards.
 * A signal the kernel sent to the whole foreground process group (^C, ^\,
 * a terminal hangup) already reached the child and is not sent twice; one
 * this process ignored when it started stays ignored (for the child too).
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT, from anyone, also ask
 * trainparity-run to stop (tpt_launch_stopped): a check runs no further
 * execution after the one they reached.
 * Single-threaded use: the handlers share one static child pid. */
#ifndef TP_TOOLS_BASE_LAUNCH_H
#define TP_TOOLS_BASE_LAUNCH_H

#include "proto/tp_err.h"

#define TPT_TICK_MS 200 /* how often tpt_launch calls its tick while it waits */

/* Something to do while the command runs: fn(arg) every TPT_TICK_MS, on the
 * calling thread (watching the daemon: tpt_daemon_check). */
typedef struct tpt_tick {
    void (*fn)(void *arg);
    void *arg;
} tpt_tick;

typedef struct tpt_exit {
    int status; /* exit status, or -1 when killed by a signal */
    int signal; /* terminating signal, or 0 */
} tpt_exit;

/* tpt_launch runs argv (argv[0] searched on PATH when it has no '/', like
 * execvp) with this process's environment where each "KEY=VALUE" of env
 * (NULL-terminated; NULL for none; the later of two for one key wins)
 * replaces or adds KEY, and a "KEY" without '=' removes it, and waits for
 * it, calling tick (NULL: none) every
 * TPT_TICK_MS meanwhile.
 * On success *out says how it ended.  When the command cannot be started
 * (not found, not executable) returns TP_ECHILD with err "cannot run 'foo':
 * No such file or directory" and, if errnum is not NULL, the errno in
 * *errnum.  Errors: TP_ECHILD, TP_ENOMEM, TP_EINVAL (empty argv). */
tp_err tpt_launch(char *const argv[], char *const env[], const tpt_tick *tick, tpt_exit *out,
                  int *errnum, char *err);

/* tpt_launch_stopped returns the first of SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT that reached this process while a command of tpt_launch ran, or
 * 0 when none did. */
int tpt_launch_stopped(void);

/* tpt_signal_name returns "SIGTERM" for SIGTERM (the four above), else "a
 * signal". */
const char *tpt_signal_name(int sig);

/* tpt_die_of ends this process as killed by sig, after flushing stdio, so
 * that its parent sees what a signal to the command would have shown
 * (a shell's loop stops on it): the default action restored, sig raised. */
void tpt_die_of(int sig) __attribute__((noreturn));

/* tpt_exit_code maps how a command ended to a shell's exit status: its own
 * status, or 128 + the signal that killed it. */
int tpt_exit_code(const tpt_exit *e);

#endif
