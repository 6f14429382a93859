/* SPDX-License-Identifier: MIT
 * writer.h -- the rows an agent batch becomes: its process, its events,
 * what hello, bye and blob events fill in, and the (exec -> run, key)
 * lookup that admits a batch.  The statements of daemon/ingest/ingest.c,
 * which decides what to write; this file only writes it.
 *
 * Every statement is prepared once (SQLITE_PREPARE_PERSISTENT) when the
 * writer is opened, and strings and bodies are bound straight from the
 * caller's buffers (SQLITE_STATIC): they need only outlive the call.  A
 * batch is written between tpd_writer_savepoint and tpd_writer_release (or
 * tpd_writer_undo), inside the store's transaction.
 *
 * Functions that fail return the SQLite code as a tp_err (TP_EDB when it
 * maps to none); tpd_store_errmsg says why.  One thread at a time, the
 * store's. */
#ifndef TP_DAEMON_STORE_WRITER_H
#define TP_DAEMON_STORE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/store.h"
#include "proto/control.h"
#include "proto/event.h"
#include "proto/tp_err.h"

typedef struct tpd_writer tpd_writer; /* opaque; one per ingest */

/* tpd_writer_open prepares the statements on s, which must outlive the
 * writer.  On success *wp owns them; on error *wp is untouched.
 * Errors: TP_EINVAL (s read-only), TP_ENOMEM, TP_EDB. */
tp_err tpd_writer_open(tpd_writer **wp, tpd_store *s);
/* tpd_writer_close finalizes w's statements and frees it.  NULL is a
 * no-op. */
void tpd_writer_close(tpd_writer *w);

/* tpd_writer_exec_key reads exec's run and key: TP_OK when exec exists and
 * has a key of TP_EXEC_KEY_LEN characters (key is not NUL-terminated),
 * TP_ENOENT when not; *run and key are written only on TP_OK. */
tp_err tpd_writer_exec_key(tpd_writer *w, int64_t exec, int64_t *run, char key[TP_EXEC_KEY_LEN]);
/* tpd_writer_exec_finished tells whether exec.finish was called for exec
 * (false for an unknown execution). */
tp_err tpd_writer_exec_finished(tpd_writer *w, int64_t exec, bool *finished);

/* tpd_writer_savepoint opens the savepoint one batch is written in. */
tp_err tpd_writer_savepoint(tpd_writer *w);
/* tpd_writer_release keeps what was written since the savepoint. */
tp_err tpd_writer_release(tpd_writer *w);
/* tpd_writer_undo drops what was written since the savepoint, and the
 * savepoint itself. */
void tpd_writer_undo(tpd_writer *w);

/* tpd_writer_process makes sure process (exec, pid) has a row (with rank);
 * *added tells whether this call made it. */
tp_err tpd_writer_process(tpd_writer *w, int64_t exec, int64_t pid, int64_t rank, bool *added);
/* tpd_writer_event inserts event e of (exec, pid) with body (body_len
 * bytes) for its body, its leaves packed (pack.h); *fresh is false when
 * (exec, pid, e->seq) was already stored, and nothing changed. */
tp_err tpd_writer_event(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e,
                        const void *body, size_t body_len, bool *fresh);
/* tpd_writer_hello fills process (exec, pid)'s row from hello event e
 * (fields e lacks are NULL). */
tp_err tpd_writer_hello(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e);
/* tpd_writer_bye fills process (exec, pid)'s bye columns from bye event e
 * (fields e lacks are NULL). */
tp_err tpd_writer_bye(tpd_writer *w, int64_t exec, int64_t pid, const tp_event *e);
/* tpd_writer_blob records blob digest (size bytes, written to the blob
 * store by the caller) unless it is known: its dtype from blob event e,
 * shape_txt its shape as JSON ("" or NULL: none). */
tp_err tpd_writer_blob(tpd_writer *w, const uint8_t digest[TP_DIGEST_LEN], uint32_t size,
                       const tp_event *e, const char *shape_txt);
/* tpd_writer_counts adds events to process (exec, pid)'s nevents and
 * raises its max_seq to max_seq. */
tp_err tpd_writer_counts(tpd_writer *w, int64_t exec, int64_t pid, int64_t events, int64_t max_seq);

#endif
