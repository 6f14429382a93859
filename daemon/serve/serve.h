/* SPDX-License-Identifier: MIT
 * serve.h -- the daemon's sockets and its one loop: an nng pull socket on
 * every ingest URL, an nng rep socket on the control URL, one store.
 *
 * One thread polls both sockets (their NNG_OPT_RECVFD descriptors) and a
 * wake-up pipe; it never spins.  Ingest messages share a transaction until
 * batch_max of them or 10 ms have gone by, whichever is first; before each
 * control request everything already received is stored and committed, so a
 * request sees every batch that arrived before it.  Malformed messages are
 * counted and dropped; their reasons go to the log callback once per
 * distinct reason.
 *
 * A message is held until its transaction commits.  When the database fails
 * (a full disk, an I/O error, its lock), the transaction is rolled back and
 * its messages, and every one received after them, wait in memory
 * (ingest/backlog.h, at most TPD_BACKLOG_MAX bytes) and are stored again in order
 * every 200 ms until they commit; one that cannot wait is counted lost for
 * its execution, which exec.finish reports (control.c). */
#ifndef TP_DAEMON_SERVE_SERVE_H
#define TP_DAEMON_SERVE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/store.h"
#include "proto/tp_err.h"

typedef struct tpd_serve tpd_serve; /* opaque */

/* tpd_log_fn receives one line (no newline) for the operator. */
typedef void (*tpd_log_fn)(void *arg, const char *line);

typedef struct tpd_serve_opts {
    const char *const *listen; /* ingest URLs, at least one */
    size_t nlisten;
    const char *control; /* NULL: tp_url_control of every listen URL */
    const char *token;   /* NULL or "": none; required by non-ipc URLs */
    unsigned batch_max;  /* ingest messages per transaction; 0: 256 */
    tpd_log_fn log;      /* NULL: nothing is logged */
    void *log_arg;
} tpd_serve_opts;

typedef struct tpd_serve_stats {
    uint64_t messages;  /* ingest messages received */
    uint64_t stored;    /* ... stored */
    uint64_t malformed; /* ... dropped as malformed */
    uint64_t failed;    /* ... lost: not stored, and not kept for a retry */
    uint64_t waiting;   /* ... kept in memory now, waiting for the database */
    uint64_t requests;  /* control requests answered */
    uint64_t commits;   /* ingest transactions committed */
} tpd_serve_stats;

/* tpd_serve_open binds the sockets of a daemon storing into s (which must
 * outlive the server).  For ipc:// URLs the socket's directory is created
 * 0700 if missing (tpd_private_dir); an existing one keeps its mode, and a
 * shared (sticky, world-writable) or foreign one is refused.  A tcp:// (any
 * non-ipc) URL without a token is refused.  The control socket demands the
 * token ("tok") in every request that comes through a network listener;
 * requests through its ipc:// listeners are the local user's.  why receives a
 * one-line reason.
 * Errors: TP_EINVAL (options), TP_ENET (listen failed, e.g. in use), TP_EIO
 * (ipc directory), TP_ENOMEM, TP_EDB.  Never call from a process that will
 * fork and use nng in the child. */
tp_err tpd_serve_open(tpd_serve **sp, tpd_store *s, const tpd_serve_opts *o, char *why,
                      size_t whylen);

/* tpd_serve_run serves until tpd_serve_stop or a shutdown command, then
 * stores what was received and commits (what the database still refuses
 * then is lost, and logged).  Returns TP_OK then; an error only
 * when polling itself failed (why says so). */
tp_err tpd_serve_run(tpd_serve *sv, char *why, size_t whylen);

/* tpd_serve_stop asks a running tpd_serve_run to return.  Async-signal-safe
 * and callable from any thread. */
void tpd_serve_stop(tpd_serve *sv);

/* tpd_serve_close closes the sockets and frees sv.  NULL is a no-op. */
void tpd_serve_close(tpd_serve *sv);

/* tpd_serve_control_url is the control URL in use (owned by sv). */
const char *tpd_serve_control_url(const tpd_serve *sv);
/* tpd_serve_get_stats copies sv's counters (serve thread, or after run). */
void tpd_serve_get_stats(const tpd_serve *sv, tpd_serve_stats *st);

/* tpd_serve_default_listen writes "ipc://<absolute dir of db_path>/ingest.ipc"
 * into out; the directory must exist.  Errors: TP_EIO, TP_EINVAL. */
tp_err tpd_serve_default_listen(const char *db_path, char *out, size_t n);

/* tpd_private_dir makes dir exist: missing components are created 0700
 * (whatever the umask); a directory that already existed is never chmod'ed,
 * and the final one is refused when it is shared (sticky, or writable by
 * others) or someone else's.  Errors: TP_EIO (why says so). */
tp_err tpd_private_dir(const char *dir, char *why, size_t whylen);

#endif
