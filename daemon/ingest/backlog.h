/* SPDX-License-Identifier: MIT
 * backlog.h -- the ingest messages the daemon received and has not
 * committed yet, oldest first, and what exec.finish must say about them.
 *
 * The serve loop (serve/serve.c) holds every message it stores in the open
 * transaction until that commits (tpd_backlog_hold, tpd_backlog_committed).
 * When the commit, or a message's insert, fails for a reason a retry can
 * cure (a full disk, an I/O error, a lock), the transaction is rolled back
 * and its messages wait (tpd_backlog_abandoned); every message received
 * while any waits queues behind them (tpd_backlog_push), and the loop
 * stores them again, in order, until they commit (tpd_backlog_next,
 * tpd_backlog_take, tpd_backlog_drop).  Only the waiting messages count
 * against the bound (max_bytes): a message that finds it full, or no memory,
 * is freed and its events are counted lost for its (exec, pid), with the
 * reason; so is one the store refuses for a reason no retry cures.
 * Malformed messages are never kept or counted: the caller drops them as
 * before.
 *
 * exec.finish counts events, not messages: the seq ranges of the batches
 * that wait or were lost, each seq once however often an agent sent it,
 * less those the store has (a spool file or another copy brought them).
 * Waiting ones are counted from the queue itself when asked (exec.finish is
 * rare); lost ranges are kept per (exec, pid) for the daemon's lifetime.
 * A backlog is used by the serve thread only. */
#ifndef TP_DAEMON_INGEST_BACKLOG_H
#define TP_DAEMON_INGEST_BACKLOG_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

#define TPD_BACKLOG_MAX ((size_t)256 << 20) /* bytes of waiting messages */
#define TPD_BACKLOG_WHY 256                 /* a reason's bytes, NUL included */

typedef struct tpd_backlog tpd_backlog; /* opaque */

/* tpd_backlog_create makes an empty backlog of at most max_bytes of waiting
 * messages (0: TPD_BACKLOG_MAX).  Errors: TP_EINVAL, TP_ENOMEM. */
tp_err tpd_backlog_create(tpd_backlog **bp, size_t max_bytes);
/* tpd_backlog_destroy frees b and every message it holds.  NULL: no-op. */
void tpd_backlog_destroy(tpd_backlog *b);

/* ---- the open transaction ---- */

/* tpd_backlog_reserve makes room to hold one more message, so that the
 * tpd_backlog_hold after a successful store cannot fail.  Errors:
 * TP_ENOMEM. */
tp_err tpd_backlog_reserve(tpd_backlog *b);
/* tpd_backlog_hold takes m, just stored in the open transaction while
 * nothing waits (tpd_backlog_waiting is 0), until the transaction ends;
 * exec, pid and nevents describe its batch.  A tpd_backlog_reserve must
 * have succeeded since the last hold. */
void tpd_backlog_hold(tpd_backlog *b, nng_msg *m, int64_t exec, int64_t pid, uint64_t nevents);
/* tpd_backlog_take moves the oldest waiting message (tpd_backlog_next) into
 * the open transaction: it has just been stored there. */
void tpd_backlog_take(tpd_backlog *b);
/* tpd_backlog_held is the number of messages in the open transaction. */
size_t tpd_backlog_held(const tpd_backlog *b);
/* tpd_backlog_committed frees the messages of the open transaction, which
 * committed, and returns their number. */
size_t tpd_backlog_committed(tpd_backlog *b);
/* tpd_backlog_abandoned makes the messages of the open transaction, which
 * was rolled back, wait first in line; why (the database's reason) becomes
 * the reason of everything waiting. */
void tpd_backlog_abandoned(tpd_backlog *b, const char *why);

/* ---- waiting ---- */

/* tpd_backlog_push takes m in every case and queues it behind everything
 * received before it; reason (NULL: the current one) is why it waits.  The
 * batch is decoded to learn its (exec, pid) and events.  Returns TP_OK when
 * m waits; TP_EPROTO or TP_EVERSION when it is malformed (freed, nothing
 * counted; why says so); TP_EFULL (the waiting messages fill max_bytes) or
 * TP_ENOMEM when it cannot wait: freed, its events counted lost, and why
 * says so. */
tp_err tpd_backlog_push(tpd_backlog *b, nng_msg *m, const char *reason, char *why, size_t whylen);
/* tpd_backlog_lose frees m, which the store refused for a reason no retry
 * cures (why), and counts its events lost.  Returns TP_EPROTO when m does
 * not even decode (nothing counted), else TP_OK. */
tp_err tpd_backlog_lose(tpd_backlog *b, nng_msg *m, const char *why);
/* tpd_backlog_waiting is the number of messages waiting. */
size_t tpd_backlog_waiting(const tpd_backlog *b);
/* tpd_backlog_bytes is the size of the messages waiting. */
size_t tpd_backlog_bytes(const tpd_backlog *b);
/* tpd_backlog_reason is why the messages wait ("" when none ever did). */
const char *tpd_backlog_reason(const tpd_backlog *b);
/* tpd_backlog_next is the oldest waiting message (still b's), or NULL. */
nng_msg *tpd_backlog_next(tpd_backlog *b);
/* tpd_backlog_drop frees the oldest waiting message: malformed after all
 * (lost false: not counted), or refused by the store for a reason no retry
 * cures (lost true: its events counted lost with why). */
void tpd_backlog_drop(tpd_backlog *b, bool lost, const char *why);
/* tpd_backlog_lose_all counts every waiting message lost with why (the
 * daemon stops), frees them, and returns their number. */
size_t tpd_backlog_lose_all(tpd_backlog *b, const char *why);

/* ---- what exec.finish reports ---- */

typedef struct tpd_backlog_info {
    int64_t waiting; /* events of the execution waiting and not in the store */
    int64_t lost;    /* events of the execution lost: none waits, the store lacks them */
    const char *why; /* the reason (owned by b, valid until its next change); NULL: none */
} tpd_backlog_info;

/* tpd_backlog_stored_fn returns how many of the seqs lo..hi of process pid
 * of exec the store has, or -1 when it cannot tell (none are then). */
typedef int64_t (*tpd_backlog_stored_fn)(void *arg, int64_t exec, int64_t pid, int64_t lo,
                                         int64_t hi);

/* tpd_backlog_exec fills *out for exec, asking stored (NULL: the store has
 * nothing) about the seq ranges concerned.  Events lost when not even their
 * execution could be learnt (no memory) count for every execution. */
void tpd_backlog_exec(tpd_backlog *b, int64_t exec, tpd_backlog_stored_fn stored, void *arg,
                      tpd_backlog_info *out);

/* tpd_backlog_waited returns how many milliseconds ago exec was first asked
 * about while it had events waiting: 0 the first time.  The clock restarts
 * once none of its events wait. */
double tpd_backlog_waited(tpd_backlog *b, int64_t exec);

#endif
