/* SPDX-License-Identifier: MIT
 * store.h -- persistent run storage for the daemon (SQLite).
 *
 * One database file per daemon, in WAL mode, versioned with PRAGMA
 * user_version and marked with PRAGMA application_id; daemon/store/schema.sql
 * is version 3 and names the tables (runs, executions, processes, events,
 * leafdefs, gaps, blobs, verdicts, counters).  Every SQL statement of the daemon is in
 * daemon/store/: the observations read a run through rows.h, ingest writes
 * a batch through writer.h.  What an event says is in events.body alone
 * (MessagePack, its leaves packed by pack.h; unpacked with tpd_body_read, it
 * is read with proto's tp_body_* and tp_leaf_read).  Every
 * statement binds its parameters.
 *
 * A database this code creates is 0600 (and so are its -wal and -shm).
 *
 * A store is used by one thread at a time.  Writers batch their work between
 * tpd_store_begin and tpd_store_commit; functions that write outside such a
 * transaction run in their own.  A file that is not a TrainParity database is
 * never written, truncated or deleted. */
#ifndef TP_DAEMON_STORE_STORE_H
#define TP_DAEMON_STORE_STORE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/control.h"
#include "proto/tp_err.h"

#define TPD_STORE_VERSION 3          /* PRAGMA user_version this build writes */
#define TPD_STORE_APP_ID  0x54507231 /* PRAGMA application_id: "TPr1" */

typedef struct tpd_store tpd_store;       /* opaque; one per daemon or query */
typedef struct tpd_leafdict tpd_leafdict; /* leafdict.h */

enum tpd_store_flags {
    TPD_STORE_READONLY = 1 << 0, /* never write; the file must exist */
};

/* tpd_store_open opens (creating it unless TPD_STORE_READONLY) and migrates
 * the database at path: an empty file gets version TPD_STORE_VERSION, an
 * older one is brought to it in one transaction that keeps every row (or
 * changes nothing when it fails).  On success *sp owns the store; on error
 * *sp is untouched and why receives a one-line reason without the path, e.g.
 * "not a TrainParity database (file is not a database)".
 * Errors: TP_ENOMEM, TP_ENOENT (read-only and missing or empty), TP_EIO,
 * TP_EVERSION (written by a newer build, or TPD_STORE_READONLY and older:
 * reading never migrates), TP_ECORRUPT (not a TrainParity database, or
 * damaged), TP_EDB. */
tp_err tpd_store_open(tpd_store **sp, const char *path, unsigned flags, char *why, size_t whylen);

/* tpd_store_close rolls back an open transaction and releases s.  Statements
 * prepared on tpd_store_db(s) must be finalized first.  NULL is a no-op. */
void tpd_store_close(tpd_store *s);

/* tpd_store_db is s's connection, for the modules of daemon/store/ that
 * prepare their own statements, and for tpd_obs_load (daemon/obs/obs.h),
 * which reads it through rows.h.  Owned by s. */
sqlite3 *tpd_store_db(tpd_store *s);
/* tpd_store_leafdict is the dictionary of s's packed leaves (leafdict.h),
 * for the modules of daemon/store/ that write or read event bodies.  Owned
 * by s. */
tpd_leafdict *tpd_store_leafdict(tpd_store *s);
/* tpd_store_path is the path s was opened with.  Owned by s. */
const char *tpd_store_path(const tpd_store *s);
/* tpd_store_errmsg is SQLite's message for the last failed call on s. */
const char *tpd_store_errmsg(tpd_store *s);
/* tpd_store_lasterr is tpd_store_errmsg while the connection's last call
 * failed, NULL once a call since (a rollback) has succeeded. */
const char *tpd_store_lasterr(tpd_store *s);
/* tpd_store_busy tells whether why holds SQLite's words for a database
 * busy or locked by another connection: a failure a retry may cure. */
bool tpd_store_busy(const char *why);
/* tpd_store_readonly reports whether s was opened TPD_STORE_READONLY. */
bool tpd_store_readonly(const tpd_store *s);

/* tpd_sqlite_err maps a SQLite result code to a tp_err. */
tp_err tpd_sqlite_err(int rc);
/* tpd_now_ns is CLOCK_REALTIME in nanoseconds (the *_ns columns). */
int64_t tpd_now_ns(void);

/* ---- transactions and counters (store.c) ---- */

/* tpd_store_begin starts a write transaction (BEGIN IMMEDIATE).
 * Errors: TP_EINVAL (one is open, or read-only), TP_EDB, TP_EIO. */
tp_err tpd_store_begin(tpd_store *s);
/* tpd_store_commit writes pending counter deltas and commits.  On failure the
 * transaction is rolled back.  Errors: TP_EINVAL (none open), TP_EDB, TP_EIO. */
tp_err tpd_store_commit(tpd_store *s);
/* tpd_store_rollback abandons the open transaction and pending counter
 * deltas.  A no-op when none is open. */
void tpd_store_rollback(tpd_store *s);
/* tpd_store_in_txn reports whether a transaction opened by begin is open. */
bool tpd_store_in_txn(const tpd_store *s);
/* tpd_store_settle ends a transaction SQLite still has open while s has
 * none (a failed rollback), so that the next begin can succeed; a no-op
 * otherwise.  Errors: TP_EDB and the like (tpd_store_errmsg says why). */
tp_err tpd_store_settle(tpd_store *s);

/* tpd_store_counter_add adds delta to counters.name (created at 0).  Inside a
 * transaction the delta is kept in memory and written by commit; outside one
 * it is written at once.  name: at most 31 bytes.
 * Errors: TP_EINVAL, TP_EDB. */
tp_err tpd_store_counter_add(tpd_store *s, const char *name, int64_t delta);
/* tpd_store_counter_get reads counters.name, 0 when absent, plus any delta
 * pending in the open transaction.  Errors: TP_EDB. */
tp_err tpd_store_counter_get(tpd_store *s, const char *name, int64_t *v);

/* ---- runs, executions, verdicts (runs.c) ---- */

/* tpd_store_run_create inserts a run; name and params may be NULL.
 * Errors: TP_EINVAL (check NULL), TP_EDB. */
tp_err tpd_store_run_create(tpd_store *s, const char *name, const char *check, const char *params,
                            int64_t *run);
/* tpd_store_run_create_at is tpd_store_run_create with the run's
 * created_ns given: the check's start, which may precede the call. */
tp_err tpd_store_run_create_at(tpd_store *s, const char *name, const char *check,
                               const char *params, int64_t created_ns, int64_t *run);
/* tpd_store_run_exists: TP_OK when run exists, TP_ENOENT when not, TP_EDB. */
tp_err tpd_store_run_exists(tpd_store *s, int64_t run);

/* tpd_store_run_find finds the run run (when run > 0), or else the latest
 * called name whose check is check (NULL: any): its id, check and name
 * (malloc'ed; *name NULL when it has none).  TP_ENOENT when there is none;
 * TP_ENOMEM, TP_EDB. */
tp_err tpd_store_run_find(tpd_store *s, int64_t run, const char *name, const char *check,
                          int64_t *id, char **check_out, char **name_out);

/* tpd_store_events_in counts the events of (exec, pid) stored with a seq in
 * lo..hi; -1 when the database cannot say. */
int64_t tpd_store_events_in(tpd_store *s, int64_t exec, int64_t pid, int64_t lo, int64_t hi);

/* tpd_store_exec_create inserts an execution of run; argv_json is a JSON
 * array of strings (or NULL).  Errors: TP_ENOENT (no such run), TP_EDB. */
tp_err tpd_store_exec_create(tpd_store *s, int64_t run, const char *role, const char *argv_json,
                             int64_t *exec);

/* tpd_store_exec_create_keyed is tpd_store_exec_create that also gives the
 * execution a fresh random key (secret.h), stored in executions.key and
 * written to key: the secret every batch for the execution must carry.
 * Both or neither are stored (a transaction of its own when none is open).
 * Errors: TP_ENOENT (no such run), TP_EIO (no random source), TP_EINVAL
 * (read-only), TP_EDB. */
tp_err tpd_store_exec_create_keyed(tpd_store *s, int64_t run, const char *role,
                                   const char *argv_json, int64_t *exec,
                                   char key[TP_EXEC_KEY_LEN + 1]);

/* tpd_store_exec_finish records finished_ns (now), exit_status and
 * exit_signal (NULL pointers store NULL) on the first call for exec; later
 * calls change nothing.  Errors: TP_ENOENT (no such execution), TP_EDB. */
tp_err tpd_store_exec_finish(tpd_store *s, int64_t exec, const int64_t *status,
                             const int64_t *signal);

typedef struct tpd_exec_state {
    int64_t run;
    bool finished;       /* exec.finish was called */
    int64_t finished_ns; /* when it was first called */
    int64_t processes;   /* processes that sent anything */
    int64_t with_bye;    /* ... of which a bye is stored */
    int64_t events;      /* distinct events stored */
    int64_t dropped;     /* sum of the byes' dropped counts */
    int64_t gaps;        /* rows in the gaps table (as last computed) */
} tpd_exec_state;

/* tpd_store_exec_state fills *st for exec.  Errors: TP_ENOENT, TP_EDB. */
tp_err tpd_store_exec_state(tpd_store *s, int64_t exec, tpd_exec_state *st);
/* tpd_store_exec_interrupted tells whether a process of exec has said bye
 * with reason "interrupt": the agent ended it on request (resume's I), so
 * the execution is over for its other processes too (`seen`'s end).  An
 * unknown execution is false.  Errors: TP_EDB. */
tp_err tpd_store_exec_interrupted(tpd_store *s, int64_t exec, bool *yes);

/* A verdict row.  Strings are NUL-terminated; NULL stores NULL. */
typedef struct tpd_verdict {
    int64_t id; /* written by insert and get */
    int64_t run;
    char *check_kind;
    char *outcome; /* "PASS", "FAIL", "ABSTAIN", "ERROR" */
    bool has_step;
    int64_t step;       /* the first divergence's optimizer step, if has_step */
    char *path;         /* the first divergence's component path, or NULL */
    char *report;       /* JSON report, or NULL */
    char *text;         /* human-readable report, or NULL */
    int64_t created_ns; /* insert: 0 means now */
} tpd_verdict;

/* tpd_store_verdict_insert stores *v (its id is ignored) and returns the new
 * id.  Errors: TP_EINVAL (check_kind or outcome NULL), TP_EDB. */
tp_err tpd_store_verdict_insert(tpd_store *s, const tpd_verdict *v, int64_t *id);
/* tpd_store_verdict_get reads verdict id into *out, whose strings are then
 * owned by the caller (tpd_verdict_clear).  Errors: TP_ENOENT, TP_ENOMEM,
 * TP_EDB. */
tp_err tpd_store_verdict_get(tpd_store *s, int64_t id, tpd_verdict *out);
/* tpd_store_verdict_latest reads the newest verdict of run, like get. */
tp_err tpd_store_verdict_latest(tpd_store *s, int64_t run, tpd_verdict *out);
/* tpd_verdict_clear frees the strings of a verdict read by get or latest and
 * zeroes it.  NULL is a no-op. */
void tpd_verdict_clear(tpd_verdict *v);

/* ---- sequence bookkeeping (gaps.c) ---- */

/* tpd_store_seen reports for process (exec, pid) the highest seq S such that
 * 0..S are all stored (-1 if none) and whether its bye is stored.
 * An unknown process is seq -1, bye false.  Errors: TP_EDB. */
tp_err tpd_store_seen(tpd_store *s, int64_t exec, int64_t pid, int64_t *seq, bool *bye);

/* tpd_gap_fn receives one missing range first..last (inclusive). */
typedef void (*tpd_gap_fn)(void *arg, int64_t first, int64_t last);

/* tpd_store_process_gaps computes the missing seq ranges of (exec, pid)
 * below its highest stored seq, from the events themselves, calling fn for
 * each in order; *n (if not NULL) receives their number.  Errors: TP_EDB. */
tp_err tpd_store_process_gaps(tpd_store *s, int64_t exec, int64_t pid, tpd_gap_fn fn, void *arg,
                              int64_t *n);

/* tpd_store_gaps_compute replaces the gaps rows of every process of exec
 * and returns their number in *ngaps (if not NULL).  Errors: TP_EDB. */
tp_err tpd_store_gaps_compute(tpd_store *s, int64_t exec, int64_t *ngaps);

#endif
