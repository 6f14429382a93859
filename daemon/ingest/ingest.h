/* SPDX-License-Identifier: MIT
 * ingest.h -- agent batches into rows: events (their bodies whole), processes, blobs.
 *
 * A message is decoded and checked whole (proto/event.h) before anything is
 * written, so a malformed message leaves no trace but counters.malformed;
 * the reason is handed back for the caller to log.  A good message is
 * written inside a savepoint of the caller's transaction (or a transaction
 * of its own when none is open): it is stored whole or not at all.  An event
 * whose (exec, pid, seq) is already stored is skipped and counted as a
 * duplicate (the same batch may arrive from a spool file and the socket).
 *
 * Only batches for an execution the daemon created (exec.create), of the run
 * they name and with that execution's key, are stored, from the socket and
 * from spool files alike; a batch that would add a process to a finished
 * execution (exec.finish) is refused as well.  A refused batch is dropped
 * like a malformed one (TP_EPROTO) and also counted in refused.
 *
 * Counters kept: batches, events, duplicates, malformed (every batch
 * dropped), refused (of those, the ones refused for their token, execution
 * or key), spool_frames, torn.
 * An ingest context is used by one thread; it holds prepared statements on
 * its store's connection, so destroy it before closing the store. */
#ifndef TP_DAEMON_INGEST_INGEST_H
#define TP_DAEMON_INGEST_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/store.h"
#include "proto/tp_err.h"

typedef struct tpd_ingest tpd_ingest; /* opaque */

typedef struct tpd_ingest_result {
    int64_t exec;    /* the batch's execution id */
    int64_t pid;     /* the batch's process */
    uint64_t events; /* events newly stored */
    uint64_t dup;    /* events skipped: already stored */
} tpd_ingest_result;

typedef struct tpd_spool_result {
    uint64_t frames; /* complete frames read, good or bad */
    uint64_t events; /* events newly stored */
    uint64_t dup;    /* events already stored */
    uint64_t bad;    /* frames rejected (malformed, oversized, empty) */
    bool torn;       /* the file ended inside a frame; that frame was skipped */
} tpd_spool_result;

/* tpd_ingest_create prepares ingesting into s.  token (copied; NULL or ""
 * for none) is the shared secret every socket batch must carry in "tok".
 * Blobs go to "<db>.blobs" beside the database.
 * Errors: TP_ENOMEM, TP_EINVAL (read-only store), TP_EDB. */
tp_err tpd_ingest_create(tpd_ingest **ip, tpd_store *s, const char *token);
/* tpd_ingest_destroy finalizes in's statements and frees it.  NULL: no-op. */
void tpd_ingest_destroy(tpd_ingest *in);

/* tpd_ingest_store is the store in writes to. */
tpd_store *tpd_ingest_store(tpd_ingest *in);

/* tpd_ingest_message stores one batch (len bytes at msg, not retained).
 * *res (if not NULL) is written on success.  why receives a one-line reason
 * on error.  Errors: TP_EPROTO / TP_EVERSION (malformed, or refused: a
 * wrong token, an unknown execution, a wrong key; counted in
 * counters.malformed and dropped), TP_ENOMEM, TP_EIO (blob store), TP_EDB
 * (the message was not stored). */
tp_err tpd_ingest_message(tpd_ingest *in, const void *msg, size_t len, tpd_ingest_result *res,
                          char *why, size_t whylen);

/* Where the frames of a spool come from, which sets what their batches are
 * held to besides their execution and its key. */
typedef enum tpd_from {
    TPD_FROM_SPOOL, /* a file on this host a control request named */
    TPD_FROM_OWNER, /* a file the database's owner named (trainparity-daemon
                     * ingest): a process new to a finished execution is
                     * stored too (it never reached the daemon while its
                     * execution ran) */
    TPD_FROM_PEER,  /* frames a tool on another host read from its spool and
                     * sent (control ingest): the token is checked, as on the
                     * socket */
} tpd_from;

/* tpd_ingest_local is tpd_ingest_message for a batch of a spool (spool.c)
 * from, which sets whether the token is checked (the execution and its key
 * always are) and whether a process new to a finished execution is stored
 * (else it is refused, as from the socket).  A transaction must be open
 * (TP_EINVAL otherwise).  why must not be NULL. */
tp_err tpd_ingest_local(tpd_ingest *in, const void *msg, size_t len, tpd_from from,
                        tpd_ingest_result *res, char *why, size_t whylen);

/* tpd_ingest_spool stores the batches of a spool file: frames of a 4-byte
 * big-endian length and one batch.  Bad frames are counted and skipped; a
 * frame longer than TP_MAX_MESSAGE ends the reading (the file cannot be
 * resynchronised) and counts as bad; a torn last frame is skipped and
 * reported.  Tokens are not checked (the file is local); executions and
 * keys are.  The file is the database owner's to name (trainparity-daemon
 * ingest): a process new to a finished execution is stored too
 * (TPD_FROM_OWNER).  Afterwards the gaps of every execution it touched are
 * recomputed.  Commits every few hundred frames when no transaction was
 * open.  why receives the reason of the first bad frame, or of the error.
 * Errors: TP_ENOENT, TP_EIO (cannot read the file), TP_ENOMEM, TP_EDB. */
tp_err tpd_ingest_spool(tpd_ingest *in, const char *path, tpd_spool_result *res, char *why,
                        size_t whylen);

/* tpd_ingest_spool_confined is tpd_ingest_spool for a path a request named
 * (the control command ingest): only a spool file is read, that is a
 * regular file, not a symbolic link, owned by the daemon's user, named
 * <exec>-<pid>.spool (decimal numbers; agent/send.c names them so); any
 * other path is TP_EINVAL with why "not a spool file", whether or not it
 * exists.  Nothing read from the file is quoted in why: a bad frame is
 * reported by its number only. */
tp_err tpd_ingest_spool_confined(tpd_ingest *in, const char *path, tpd_spool_result *res, char *why,
                                 size_t whylen);

/* tpd_ingest_frames is tpd_ingest_spool for len bytes of frames at data
 * that a tool on another host read from its spool and sent
 * (TPD_FROM_PEER): every batch must carry the token; a bad frame is named
 * by its number only.  len may end inside a frame (torn). */
tp_err tpd_ingest_frames(tpd_ingest *in, const void *data, size_t len, tpd_spool_result *res,
                         char *why, size_t whylen);

#endif
