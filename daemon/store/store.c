/* SPDX-License-Identifier: MIT
 * store.c -- opening, checking and migrating the database; transactions and
 * counters.
 *
 * Opening never writes before the file has proved to be ours: the first read
 * (PRAGMA user_version) fails with SQLITE_NOTADB on a file that is not
 * SQLite, a version above TPD_STORE_VERSION is refused, and an unversioned
 * file that already holds tables belongs to someone else.  Only then is WAL
 * switched on and the schema created, or an older version migrated, in one
 * transaction: all of it happens or none.  Version 1 (its schema is kept as
 * tests/unit/store_v1.sql) also copied the leaves of event bodies into a
 * table; version 2 drops it and adds executions.key where a version 1 file
 * predates it; version 3 adds the leafdefs of packed bodies (pack.h).  Only
 * a database opened for writing is migrated: a reader refuses an older
 * version, whose tables it cannot trust to be this version's.  Counter deltas are kept in memory during a transaction so that
 * ingesting a message costs no counter UPDATE; commit writes them.
 *
 * A database file this code creates is 0600 whatever the umask (it holds
 * the commands' argv, where tokens and API keys may be), and SQLite gives
 * its -wal and -shm files the database's mode; an existing file keeps its
 * mode. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/store/leafdict.h"
#include "daemon/store/secret.h"
#include "daemon/store/store.h"

/* daemon/store/schema.sql, embedded (the symbol is named in
 * daemon/CMakeLists.txt): version TPD_STORE_VERSION's schema, whole */
extern const char tpd_schema[];

#define NCOUNTERS 16
#define BUSY_MS   5000

typedef struct counter {
    char name[32];
    int64_t delta;
} counter;

struct tpd_store {
    sqlite3 *db;
    char *path;
    unsigned flags;
    bool in_txn;
    tpd_leafdict *leaves; /* the definitions of packed bodies' leaves */
    int ncounters;
    counter counters[NCOUNTERS];
};

tp_err tpd_sqlite_err(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return TP_OK;
    case SQLITE_NOMEM:
        return TP_ENOMEM;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return TP_ECORRUPT;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
        return TP_EIO;
    case SQLITE_NOTFOUND:
        return TP_ENOENT;
    default:
        return TP_EDB;
    }
}

int64_t tpd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* pragma_int runs a pragma that returns one integer. */
static int pragma_int(sqlite3 *db, const char *sql, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *v = 0;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* pragma_text runs a pragma that returns one string into out. */
static int pragma_text(sqlite3 *db, const char *sql, char *out, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    out[0] = '\0';
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            snprintf(out, n, "%s", t ? (const char *)t : "");
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* check_ours decides whether the open file is a TrainParity database of a
 * version this build reads; *ver receives its user_version. */
static tp_err check_ours(tpd_store *s, int64_t *ver, char *why, size_t whylen)
{
    int64_t app = 0, ntables = 0;
    int rc = pragma_int(s->db, "PRAGMA user_version", ver);
    if (rc == SQLITE_OK) rc = pragma_int(s->db, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK) rc = pragma_int(s->db, "SELECT count(*) FROM sqlite_master", &ntables);
    if (rc != SQLITE_OK) {
        tp_err e = tpd_sqlite_err(rc);
        if (e == TP_ECORRUPT)
            snprintf(why, whylen, "not a TrainParity database (%s)", sqlite3_errstr(rc & 0xff));
        else
            snprintf(why, whylen, "cannot read the database: %s", sqlite3_errmsg(s->db));
        return e;
    }
    if (*ver > TPD_STORE_VERSION) {
        snprintf(why, whylen,
                 "database version %lld is newer than this trainparity-daemon reads (%d); "
                 "use a newer build",
                 (long long)*ver, TPD_STORE_VERSION);
        return TP_EVERSION;
    }
    if (*ver == 0 && ntables > 0) {
        snprintf(why, whylen, "not a TrainParity database (it holds other tables)");
        return TP_ECORRUPT;
    }
    if (*ver > 0 && app != TPD_STORE_APP_ID) {
        snprintf(why, whylen, "not a TrainParity database (application id %#llx)",
                 (unsigned long long)app);
        return TP_ECORRUPT;
    }
    if (*ver == 0 && (s->flags & TPD_STORE_READONLY)) {
        snprintf(why, whylen, "no TrainParity data (empty database)");
        return TP_ENOENT;
    }
    return TP_OK;
}

/* v1_to_v2 is the step from version 1 to 2: executions.key, which builds
 * of version 1 added only from some point on (add it where it is missing,
 * before anything else), and no leaves table (events.body holds the same;
 * the table's index goes with it). */
static int v1_to_v2(sqlite3 *db)
{
    static const char has_key[] =
        "SELECT count(*) FROM pragma_table_info('executions') WHERE name = 'key'";
    int64_t n = 0;
    int rc = pragma_int(db, has_key, &n);
    if (rc == SQLITE_OK && n == 0)
        rc = sqlite3_exec(db, "ALTER TABLE executions ADD COLUMN key TEXT", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "DROP TABLE IF EXISTS leaves", NULL, NULL, NULL);
    return rc;
}

/* v2_to_v3 is the step from version 2 to 3: the leafdefs table (as
 * schema.sql declares it), which packed bodies name.  A version 2 body
 * is not packed and stays as it is. */
static int v2_to_v3(sqlite3 *db)
{
    return sqlite3_exec(db,
                        "CREATE TABLE leafdefs (id INTEGER PRIMARY KEY, nvar INTEGER NOT NULL,"
                        " head BLOB NOT NULL, tail BLOB NOT NULL)",
                        NULL, NULL, NULL);
}

/* migrate brings a database of version ver (0: empty) to TPD_STORE_VERSION,
 * in one transaction that re-reads the version under the write lock
 * (another process may have migrated meanwhile).  On failure nothing is
 * changed. */
static tp_err migrate(tpd_store *s, int64_t ver, char *why, size_t whylen)
{
    char sql[96];
    int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = pragma_int(s->db, "PRAGMA user_version", &ver);
    if (rc != SQLITE_OK) goto fail;
    if (ver > TPD_STORE_VERSION) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        snprintf(why, whylen, "database version %lld is newer than this build reads (%d)",
                 (long long)ver, TPD_STORE_VERSION);
        return TP_EVERSION;
    }
    if (ver == 0) {
        rc = sqlite3_exec(s->db, tpd_schema, NULL, NULL, NULL); /* the latest, at once */
    } else {
        if (ver < 2) rc = v1_to_v2(s->db);
        if (rc == SQLITE_OK && ver < 3) rc = v2_to_v3(s->db);
    }
    if (rc != SQLITE_OK) goto fail;
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d; PRAGMA application_id = %d",
             TPD_STORE_VERSION, TPD_STORE_APP_ID);
    rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) goto fail;
    return TP_OK;
fail:
    if (ver == 0)
        snprintf(why, whylen, "cannot create the schema: %s", sqlite3_errmsg(s->db));
    else
        snprintf(why, whylen, "cannot migrate the database from version %lld to %d: %s",
                 (long long)ver, TPD_STORE_VERSION, sqlite3_errmsg(s->db));
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
}

/* create_private creates a missing database file 0600 before SQLite opens
 * it (SQLite would make it 0644 less the umask).  Any failure is left to
 * SQLite's open to report. */
static void create_private(const char *path)
{
    int fd, rc;
    if (strcmp(path, ":memory:") == 0) return;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    rc = fchmod(fd, 0600); /* a umask may have taken our own bits too */
    (void)rc;
    close(fd);
}

tp_err tpd_store_open(tpd_store **sp, const char *path, unsigned flags, char *why, size_t whylen)
{
    tpd_store *s;
    char dummy[8], mode[16];
    int64_t ver = 0;
    int oflags, rc;
    tp_err err;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if (sp == NULL || path == NULL || path[0] == '\0') {
        snprintf(why, whylen, "no database path");
        return TP_EINVAL;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL || (s->path = strdup(path)) == NULL) {
        err = TP_ENOMEM;
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    s->flags = flags;
    if (!(flags & TPD_STORE_READONLY)) create_private(path);
    oflags = (flags & TPD_STORE_READONLY) ? SQLITE_OPEN_READONLY
                                          : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    rc = sqlite3_open_v2(path, &s->db, oflags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = tpd_sqlite_err(rc);
        if ((rc & 0xff) == SQLITE_CANTOPEN) {
            err = (flags & TPD_STORE_READONLY) ? TP_ENOENT : TP_EIO;
            snprintf(why, whylen, "cannot open the database (%s)",
                     (flags & TPD_STORE_READONLY) ? "no such file, or unreadable"
                                                  : sqlite3_errstr(rc & 0xff));
        } else {
            snprintf(why, whylen, "cannot open the database: %s",
                     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        }
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, BUSY_MS);
    /* a file this process may not write, SQLite opens read-only instead;
     * its first read would leave -wal and -shm files beside it, as
     * unwritable as the database, that stop the next writer: refuse first */
    if (!(flags & TPD_STORE_READONLY) && sqlite3_db_readonly(s->db, "main") == 1) {
        snprintf(why, whylen,
                 "cannot open the database for writing (the file or its file system is "
                 "read-only)");
        err = TP_EIO;
        goto fail;
    }
    err = check_ours(s, &ver, why, whylen);
    if (err != TP_OK) goto fail;
    if (!(flags & TPD_STORE_READONLY)) {
        rc = pragma_text(s->db, "PRAGMA journal_mode = WAL", mode, sizeof mode);
        if (rc == SQLITE_OK && strcmp(mode, "wal") != 0) {
            snprintf(why, whylen, "cannot switch the database to WAL mode (%s)", mode);
            err = TP_EDB;
            goto fail;
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(why, whylen, "cannot configure the database: %s", sqlite3_errmsg(s->db));
            err = tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
            goto fail;
        }
        if (ver < TPD_STORE_VERSION && (err = migrate(s, ver, why, whylen)) != TP_OK) goto fail;
    } else if (ver < TPD_STORE_VERSION) {
        snprintf(why, whylen,
                 "database version %lld is older than this build reads (%d); "
                 "run trainparity-daemon serve on it once to migrate it",
                 (long long)ver, TPD_STORE_VERSION);
        err = TP_EVERSION;
        goto fail;
    }
    if ((err = tpd_leafdict_open(&s->leaves, s->db)) != TP_OK) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    *sp = s;
    return TP_OK;
fail:
    tpd_store_close(s);
    return err;
}

void tpd_store_close(tpd_store *s)
{
    if (s == NULL) return;
    if (s->in_txn) tpd_store_rollback(s);
    tpd_leafdict_close(s->leaves);
    if (s->db) sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

sqlite3 *tpd_store_db(tpd_store *s)
{
    return s->db;
}

tpd_leafdict *tpd_store_leafdict(tpd_store *s)
{
    return s->leaves;
}

const char *tpd_store_path(const tpd_store *s)
{
    return s->path;
}

const char *tpd_store_errmsg(tpd_store *s)
{
    return sqlite3_errmsg(s->db);
}

const char *tpd_store_lasterr(tpd_store *s)
{
    return sqlite3_errcode(s->db) != SQLITE_OK ? sqlite3_errmsg(s->db) : NULL;
}

bool tpd_store_busy(const char *why)
{
    return strstr(why, sqlite3_errstr(SQLITE_BUSY)) || strstr(why, sqlite3_errstr(SQLITE_LOCKED));
}

bool tpd_store_readonly(const tpd_store *s)
{
    return (s->flags & TPD_STORE_READONLY) != 0;
}

/* ---- transactions ---- */

tp_err tpd_store_begin(tpd_store *s)
{
    int rc;
    if (s->in_txn || (s->flags & TPD_STORE_READONLY)) return TP_EINVAL;
    /* out of any transaction, what was interned is stored (had it rolled
     * back, the rollback hook would have dropped it) */
    if (sqlite3_get_autocommit(s->db)) tpd_leafdict_committed(s->leaves);
    rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
    s->in_txn = true;
    s->ncounters = 0;
    return TP_OK;
}

/* write_counter adds delta to a counter row. */
static int write_counter(tpd_store *s, const char *name, int64_t delta)
{
    static const char sql[] = "INSERT INTO counters(name, value) VALUES(?1, ?2) "
                              "ON CONFLICT(name) DO UPDATE SET value = value + ?2";
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, delta);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

tp_err tpd_store_commit(tpd_store *s)
{
    int rc = SQLITE_OK;
    if (!s->in_txn) return TP_EINVAL;
    for (int i = 0; i < s->ncounters && rc == SQLITE_OK; i++)
        if (s->counters[i].delta) rc = write_counter(s, s->counters[i].name, s->counters[i].delta);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        tpd_store_rollback(s);
        return tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
    }
    s->in_txn = false;
    s->ncounters = 0;
    tpd_leafdict_committed(s->leaves);
    return TP_OK;
}

void tpd_store_rollback(tpd_store *s)
{
    if (!s->in_txn) return;
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_txn = false;
    s->ncounters = 0;
}

bool tpd_store_in_txn(const tpd_store *s)
{
    return s->in_txn;
}

tp_err tpd_store_settle(tpd_store *s)
{
    int rc;
    if (s->in_txn || sqlite3_get_autocommit(s->db)) return TP_OK;
    rc = sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
    return TP_OK;
}

/* ---- counters ---- */

tp_err tpd_store_counter_add(tpd_store *s, const char *name, int64_t delta)
{
    int i, rc;
    if (name == NULL || strlen(name) >= sizeof s->counters[0].name) return TP_EINVAL;
    if (s->flags & TPD_STORE_READONLY) return TP_EINVAL;
    if (!s->in_txn) {
        rc = write_counter(s, name, delta);
        return rc == SQLITE_OK ? TP_OK : TP_EDB;
    }
    for (i = 0; i < s->ncounters; i++)
        if (strcmp(s->counters[i].name, name) == 0) break;
    if (i == s->ncounters) {
        if (i == NCOUNTERS) { /* full: write this one now, inside the transaction */
            rc = write_counter(s, name, delta);
            return rc == SQLITE_OK ? TP_OK : TP_EDB;
        }
        snprintf(s->counters[i].name, sizeof s->counters[i].name, "%s", name);
        s->counters[i].delta = 0;
        s->ncounters++;
    }
    s->counters[i].delta += delta;
    return TP_OK;
}

tp_err tpd_store_counter_get(tpd_store *s, const char *name, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int64_t val = 0;
    int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM counters WHERE name = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) val = sqlite3_column_int64(st, 0);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) return TP_EDB;
    for (int i = 0; i < s->ncounters; i++)
        if (strcmp(s->counters[i].name, name) == 0) val += s->counters[i].delta;
    *v = val;
    return TP_OK;
}

/* ---- execution keys ---- */

tp_err tpd_store_exec_create_keyed(tpd_store *s, int64_t run, const char *role,
                                   const char *argv_json, int64_t *exec,
                                   char key[TP_EXEC_KEY_LEN + 1])
{
    static const char sql[] = "UPDATE executions SET key = ?2 WHERE id = ?1";
    char k[TP_EXEC_KEY_LEN + 1];
    sqlite3_stmt *st = NULL;
    bool own = !s->in_txn;
    int64_t id = 0;
    tp_err err;
    int rc;
    if ((err = tpd_secret_new(k)) != TP_OK) return err;
    if (own && (err = tpd_store_begin(s)) != TP_OK) return err;
    if ((err = tpd_store_exec_create(s, run, role, argv_json, &id)) != TP_OK) goto fail;
    rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, k, TP_EXEC_KEY_LEN, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        err = tpd_sqlite_err(rc) == TP_OK ? TP_EDB : tpd_sqlite_err(rc);
        goto fail;
    }
    if (own && (err = tpd_store_commit(s)) != TP_OK) return err;
    *exec = id;
    memcpy(key, k, sizeof k);
    return TP_OK;
fail:
    if (own) tpd_store_rollback(s);
    return err;
}
