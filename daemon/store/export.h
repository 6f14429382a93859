/* SPDX-License-Identifier: MIT
 * export.h -- one run as a self-contained file, and the file added to
 * another database as a new run: a golden run recorded on one machine is
 * checked on another.
 *
 * An export is an SQLite database image (so `sqlite3 F` can read it) marked
 * PRAGMA application_id TPD_EXPORT_APP_ID ("TPx1") and PRAGMA user_version
 * TPD_EXPORT_FORMAT.  It holds the tables of daemon/store/schema.sql with
 * only that run's rows under their original ids (runs, executions,
 * processes, events, gaps, verdicts, and the blobs rows its blob events
 * name), plus
 *   blob_bytes (digest, bytes)   the bytes of each of those blobs
 *   export_info (format, schema, run_id, exported_ns, producer, checksum)
 * where checksum is the XXH3-128 of every row of those tables, in table
 * and id order, type by type: a file damaged anywhere that matters fails it.
 * Execution keys (secrets that let batches in) are never exported: an
 * imported execution takes no batches. */
#ifndef TP_DAEMON_STORE_EXPORT_H
#define TP_DAEMON_STORE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/store/store.h"
#include "proto/tp_err.h"

#define TPD_EXPORT_FORMAT 1 /* PRAGMA user_version this build writes */
/* The oldest export_info.schema this build imports: versions 2 and 3 export
 * the same columns, and bodies as the agent sent them (never packed). */
#define TPD_EXPORT_OLDEST_SCHEMA 2
#define TPD_EXPORT_APP_ID        0x54507831 /* PRAGMA application_id: "TPx1" */

typedef struct tpd_export tpd_export; /* opaque: an export file, checked */

/* tpd_export_write writes run of s as an export to fd (a file or a pipe),
 * building it in a temporary file under $TMPDIR first, which it removes.
 * The blobs come from s's blob store (<db>.blobs/).  s may be read-only;
 * the run is read in one read transaction.  On error why (whylen bytes)
 * says why and fd may have received part of a file.  Errors: TP_ENOENT (no
 * such run), TP_ECORRUPT (a blob of the run is missing or not its size, or
 * a row holds a value of the wrong type), TP_EIO, TP_ENOMEM, TP_EDB. */
tp_err tpd_export_write(tpd_store *s, int64_t run, int fd, char *why, size_t whylen);

/* tpd_export_open opens the export at path and checks all of it before
 * anything is written anywhere: the header (TrainParity export, format,
 * length), SQLite's quick_check, the checksum, the type of every value,
 * that every row belongs to the one run, every event body (the event
 * schema, proto/events.def), and that every blob an event names is there.
 * On success *xp owns the open file; on error *xp is untouched.  Errors:
 * TP_ECORRUPT (not an export, truncated, damaged, inconsistent),
 * TP_EVERSION (a newer format or schema), TP_EIO, TP_ENOMEM. */
tp_err tpd_export_open(tpd_export **xp, const char *path, char *why, size_t whylen);

/* tpd_export_source_run is the run's id in the database it came from. */
int64_t tpd_export_source_run(const tpd_export *x);

/* tpd_export_import adds x to s as a new run, in one transaction of s
 * (none may be open): every row gets a new id and every reference (run,
 * execution; the "run" and "execution" members of verdict reports) the
 * new one; nothing already stored changes.  Blob bytes go to s's blob
 * store first (content-addressed: an existing file is kept; a failed import
 * may leave files that no row names).  *run receives the new run's id.
 * Errors: TP_EINVAL (s read-only or in a transaction), TP_ECORRUPT (x
 * changed since it was opened), TP_EIO, TP_ENOMEM, TP_EDB. */
tp_err tpd_export_import(tpd_export *x, tpd_store *s, int64_t *run, char *why, size_t whylen);

/* tpd_export_close releases x.  NULL is a no-op. */
void tpd_export_close(tpd_export *x);

#endif
