/* SPDX-License-Identifier: MIT
 * tcpd.h -- a real trainparity-daemon process for a benchmark: serving a
 * fresh database on tcp://127.0.0.1 with a token (as across nodes), and the
 * control requests a benchmark needs (run.create, exec.create, exec.finish),
 * each carrying the token.
 *
 * tcpd_start forks and execs; it uses no nng, so a caller may fork its
 * senders after it.  The control calls use nng: fork nothing after them.
 * Each control call opens its own connection and closes it, so that the
 * benchmark holds none of the daemon's connections while its senders run
 * (a network listener takes at most 16 from one address,
 * daemon/serve/serve.c).  Every wait is bounded. */
#ifndef TP_BENCH_TCPD_H
#define TP_BENCH_TCPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/control.h"

typedef struct tcpd {
    char dir[512];    /* scratch directory: database, token file, log, spool */
    char db[600];     /* the database */
    char url[64];     /* tcp://127.0.0.1:PORT */
    char control[64]; /* tcp://127.0.0.1:PORT+1 */
    char token[40];   /* the shared token */
    pid_t pid;        /* the daemon, 0 when none */
} tcpd;

/* tcpd_start makes a scratch directory, a token file (0600) and a free
 * port pair, and starts bin serve on them; its stderr goes to daemon.log in
 * the directory.  Returns 0, or -1 with why set. */
int tcpd_start(tcpd *d, const char *bin, char *why, size_t n);

/* tcpd_exec_new waits (at most 20 s) until the daemon answers ping, then
 * makes a run and an execution: their ids and the execution's key.
 * Returns 0, or -1 with why set. */
int tcpd_exec_new(const tcpd *d, int64_t *run, int64_t *exec, char key[TP_EXEC_KEY_LEN + 1],
                  char *why, size_t n);

/* tcpd_finish finishes exec (status 0, no wait): the events the daemon
 * stored, the processes that sent any, and whether every one said bye with
 * nothing unstored.  Returns 0, or -1 with why set. */
int tcpd_finish(const tcpd *d, int64_t exec, int64_t *events, int64_t *processes, bool *complete,
                char *why, size_t n);

/* tcpd_stop stops the daemon (SIGTERM; SIGKILL after 10 s). */
void tcpd_stop(tcpd *d);

/* tcpd_remove removes the scratch directory and all in it. */
void tcpd_remove(tcpd *d);

#endif
