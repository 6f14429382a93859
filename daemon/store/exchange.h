/* SPDX-License-Identifier: MIT
 * exchange.h -- what writing an export (export.c) and reading one
 * (import.c) share: the table of exported columns, the checksum, digest sets
 * and small helpers: the exchange format of one run.  Internal to
 * daemon/store/: only export.c, import.c and exchange.c include it; the API
 * is export.h.  Everything here is prefixed tpd_x.
 *
 * One table (tpd_xtables[]) names every exported column with its type and
 * role.  It drives the export's SELECTs and INSERTs, the checks on reading
 * an export, the checksum on both sides, and the import's id remapping, so
 * none of them can disagree about a column.  Reading an export is one
 * function, scan() in import.c, run twice: once by tpd_export_open to check
 * all of it before the target database is even opened, once by
 * tpd_export_import to copy the rows inside the target's transaction,
 * checking and hashing again so that a file changed in between is caught
 * and rolled back.
 *
 * An export is untrusted input.  It is opened read-only and immutable
 * (SQLite writes nothing beside it), defensive, without trusted schema and
 * without views, read by rowid or key order only (a damaged index cannot
 * hide rows), and every value is checked for its type before it is used.
 * Its rows are checked against the run they claim: one run, executions of
 * that run, processes, events and gaps of those executions, event bodies
 * that the event schema accepts, and the bytes of every blob an event names.
 *
 * The checksum (XXH3-128) covers each table in order: its name, then per row
 * each value as a type tag and its bytes (integers as 8 little-endian bytes,
 * text and blobs with an 8-byte length), then the number of rows.  It is
 * computed from the values as the export writes them and as the reader reads
 * them, so it is independent of SQLite's page layout. */
#ifndef TP_DAEMON_STORE_EXCHANGE_H
#define TP_DAEMON_STORE_EXCHANGE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "daemon/base/text.h"
#include "proto/tp_err.h"

/* ---- the exported columns ---- */

enum tpd_xcol_flags {
    TPD_XC_NN = 1 << 0,     /* NOT NULL */
    TPD_XC_ID = 1 << 1,     /* the row's own id: the import makes a new one */
    TPD_XC_RUN = 1 << 2,    /* a run id */
    TPD_XC_EXEC = 1 << 3,   /* an execution id */
    TPD_XC_SECRET = 1 << 4, /* never exported: NULL in every export */
    TPD_XC_REPORT = 1 << 5, /* a verdict's JSON report: ids inside are remapped */
};

typedef struct tpd_xcol {
    const char *name;
    int type; /* SQLITE_INTEGER, SQLITE_TEXT or SQLITE_BLOB */
    unsigned flags;
} tpd_xcol;

/* The exported tables, in the order they are written, hashed and read. */
typedef enum tpd_xtab {
    TPD_XT_RUNS,
    TPD_XT_EXECS,
    TPD_XT_PROCS,
    TPD_XT_EVENTS,
    TPD_XT_GAPS,
    TPD_XT_VERDICTS,
    TPD_XT_BLOBS,
    TPD_XT_BYTES
} tpd_xtab;
#define TPD_XT_COUNT 8

typedef struct tpd_xtable {
    const char *name;
    const tpd_xcol *cols;
    int ncols;
    const char *scope;  /* export: which source rows (run ?1); NULL: made here */
    const char *order;  /* the row order, on both sides */
    const char *import; /* what ends the import's INSERT; NULL: not inserted */
} tpd_xtable;

/* tpd_xtables is the table of exported columns, indexed by tpd_xtab. */
extern const tpd_xtable tpd_xtables[TPD_XT_COUNT];

/* tpd_xselect_sql writes the SELECT of t's columns: from an export (scoped
 * false: every row) or from a store (the rows of run ?1, secrets as NULL). */
void tpd_xselect_sql(tpd_str *q, const tpd_xtable *t, bool scoped);

/* tpd_xinsert_sql writes the INSERT of t's columns: every one (into an
 * export) or all but the row's own id (into a store, which makes a new one). */
void tpd_xinsert_sql(tpd_str *q, const tpd_xtable *t, bool all);

/* tpd_xcheck_types checks the types of st's current row against t's
 * columns; what names the row's origin in the message ("export",
 * "database").  Errors: TP_ECORRUPT, with why (whylen bytes) saying why. */
tp_err tpd_xcheck_types(const tpd_xtable *t, sqlite3_stmt *st, const char *what, char *why,
                        size_t whylen);

/* ---- the checksum (see above) ---- */

/* tpd_xhash_bytes hashes n bytes at p (p may be NULL when n is 0) as a
 * value of type tag: the tag, n as 8 little-endian bytes, the bytes. */
void tpd_xhash_bytes(XXH3_state_t *h, char tag, const void *p, size_t n);

/* tpd_xhash_col hashes column i of st's current row. */
void tpd_xhash_col(XXH3_state_t *h, sqlite3_stmt *st, int i);

/* tpd_xhash_table_begin and tpd_xhash_table_end bracket the rows of t. */
void tpd_xhash_table_begin(XXH3_state_t *h, const tpd_xtable *t);
void tpd_xhash_table_end(XXH3_state_t *h, uint64_t rows);

/* tpd_xhash_final writes h's digest, canonical (big-endian), to out. */
void tpd_xhash_final(XXH3_state_t *h, uint8_t out[16]);

/* ---- digest sets ---- */

typedef struct tpd_xdigests {
    uint8_t (*d)[16];
    int64_t *size; /* per digest, where known */
    size_t n, cap;
} tpd_xdigests;

/* tpd_xdigests_add appends d with its size (-1: not known).  Errors:
 * TP_ENOMEM. */
tp_err tpd_xdigests_add(tpd_xdigests *s, const uint8_t d[16], int64_t size);

/* tpd_xdigests_sort sorts s and drops repeats (sizes are not kept). */
void tpd_xdigests_sort(tpd_xdigests *s);

/* tpd_xdigests_find is the index of d in sorted s, or -1. */
ptrdiff_t tpd_xdigests_find(const tpd_xdigests *s, const uint8_t d[16]);

/* tpd_xdigests_free releases s's memory and empties it. */
void tpd_xdigests_free(tpd_xdigests *s);

/* ---- small helpers ---- */

/* tpd_xsay writes the message fmt into why (whylen bytes) and returns e. */
tp_err tpd_xsay(char *why, size_t whylen, tp_err e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* tpd_xhex16 writes the 32 lowercase hex digits of d, NUL-terminated. */
void tpd_xhex16(char out[33], const uint8_t d[16]);

/* tpd_xblob_digest reads the digest of a stored blob event body: the map
 * {"digest": bin 16, "size": uint, ["dtype": str], ["shape": [int...]]}
 * ingest rewrites it to.  Anything else is TP_EPROTO. */
tp_err tpd_xblob_digest(const uint8_t *p, size_t n, uint8_t d[16]);

#endif
