/* SPDX-License-Identifier: MIT
 * export.c -- writing an export: one run of a store as a self-contained
 * file (export.h).  The design, shared with reading one (import.c), is in
 * exchange.h. */
#define _XOPEN_SOURCE 700 /* P_tmpdir */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "daemon/base/text.h"
#include "daemon/store/blob.h"
#include "daemon/store/export.h"
#include "daemon/store/exchange.h"
#include "daemon/store/pack.h"

#include "tp_version.h"

/* daemon/store/schema.sql, embedded (daemon/CMakeLists.txt) */
extern const char tpd_schema[];

/* What an export adds to the schema.  checksum: see exchange.h. */
static const char export_ddl[] =
    "CREATE TABLE blob_bytes (digest BLOB PRIMARY KEY, bytes BLOB NOT NULL);"
    "CREATE TABLE export_info (format INTEGER NOT NULL, schema INTEGER NOT NULL,"
    " run_id INTEGER NOT NULL, exported_ns INTEGER NOT NULL, producer TEXT NOT NULL,"
    " checksum BLOB NOT NULL);";

/* read_file reads the whole regular file path into *out (malloc'd). */
static tp_err read_file(const char *path, uint8_t **out, size_t *n)
{
    struct stat sb;
    uint8_t *buf;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? TP_ENOENT : TP_EIO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return TP_EIO;
    }
    if ((buf = malloc(sb.st_size ? (size_t)sb.st_size : 1)) == NULL) {
        close(fd);
        return TP_ENOMEM;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != (size_t)sb.st_size) {
        free(buf);
        return TP_EIO;
    }
    *out = buf;
    *n = got;
    return TP_OK;
}

typedef struct writer {
    sqlite3 *src, *dst;
    int64_t run;
    XXH3_state_t *h;
    tpd_xdigests refs; /* the digests the run's blob events name */
    tpd_leafdict *leaves;
    tp_buf body; /* scratch: a packed body, unpacked */
    tpd_str sql;
    char *why;
    size_t whylen;
} writer;

static tp_err src_fail(writer *w, int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    tpd_xsay(w->why, w->whylen, TP_EDB, "database: %s", sqlite3_errmsg(w->src));
    return e == TP_OK ? TP_EDB : e;
}

static tp_err dst_fail(writer *w, int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    tpd_xsay(w->why, w->whylen, TP_EIO, "cannot write the export: %s", sqlite3_errmsg(w->dst));
    return e == TP_OK || e == TP_ECORRUPT ? TP_EIO : e;
}

/* copy_table copies the rows of run w->run (bound as ?1 to src's query, or
 * the blob digest for TPD_XT_BLOBS: one call per digest) into the export. */
static tp_err copy_rows(writer *w, const tpd_xtable *t, sqlite3_stmt *sel, sqlite3_stmt *ins,
                        uint64_t *rows)
{
    tp_err err;
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        if ((err = tpd_xcheck_types(t, sel, "database", w->why, w->whylen)) != TP_OK) return err;
        if (t == &tpd_xtables[TPD_XT_EVENTS] &&
            strcmp((const char *)sqlite3_column_text(sel, 6), "blob") == 0) {
            uint8_t d[16];
            if (tpd_xblob_digest(sqlite3_column_blob(sel, 7), (size_t)sqlite3_column_bytes(sel, 7),
                                 d) != TP_OK)
                return tpd_xsay(w->why, w->whylen, TP_ECORRUPT,
                                "database: event %lld is a blob event without a digest",
                                (long long)sqlite3_column_int64(sel, 0));
            if ((err = tpd_xdigests_add(&w->refs, d, -1)) != TP_OK) {
                tpd_xsay(w->why, w->whylen, err, "out of memory");
                return err;
            }
        }
        sqlite3_reset(ins);
        for (int i = 0; i < t->ncols; i++) {
            const uint8_t *body;
            size_t n;
            /* an export holds bodies as the agent sent them: it has no
             * leafdefs, and a reader of any version reads it */
            if (t == &tpd_xtables[TPD_XT_EVENTS] && i == 7) {
                if (tpd_body_read(w->leaves, sqlite3_column_blob(sel, i),
                                  (size_t)sqlite3_column_bytes(sel, i), &w->body, &body,
                                  &n) != TP_OK)
                    return tpd_xsay(w->why, w->whylen, TP_ECORRUPT,
                                    "database: event %lld has a packed body that cannot be read",
                                    (long long)sqlite3_column_int64(sel, 0));
                tpd_xhash_bytes(w->h, 'b', body, n);
                sqlite3_bind_blob64(ins, i + 1, n ? (const void *)body : "", n, SQLITE_STATIC);
                continue;
            }
            tpd_xhash_col(w->h, sel, i);
            sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
        }
        if ((rc = sqlite3_step(ins)) != SQLITE_DONE) return dst_fail(w, rc);
        (*rows)++;
    }
    return rc == SQLITE_DONE ? TP_OK : src_fail(w, rc);
}

/* export_blobs writes the blobs rows and the bytes of w->refs. */
static tp_err export_blobs(writer *w, const char *db_path)
{
    char dir[4096], file[4200], hex[33];
    sqlite3_stmt *sel = NULL, *ins = NULL;
    tpd_blobs *b = NULL;
    uint64_t rows = 0;
    tp_err err;
    int rc;
    tpd_xdigests_sort(&w->refs);
    /* the blobs rows, in digest order */
    tpd_xselect_sql(&w->sql, &tpd_xtables[TPD_XT_BLOBS], true);
    if ((rc = sqlite3_prepare_v2(w->src, tpd_str_cstr(&w->sql), -1, &sel, NULL)) != SQLITE_OK) {
        err = src_fail(w, rc);
        goto out;
    }
    tpd_xinsert_sql(&w->sql, &tpd_xtables[TPD_XT_BLOBS], true);
    if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
        err = dst_fail(w, rc);
        goto out;
    }
    tpd_xhash_table_begin(w->h, &tpd_xtables[TPD_XT_BLOBS]);
    for (size_t i = 0; i < w->refs.n; i++) {
        uint64_t before = rows;
        sqlite3_reset(sel);
        sqlite3_bind_blob(sel, 1, w->refs.d[i], 16, SQLITE_STATIC);
        if ((err = copy_rows(w, &tpd_xtables[TPD_XT_BLOBS], sel, ins, &rows)) != TP_OK) goto out;
        if (rows == before) {
            tpd_xhex16(hex, w->refs.d[i]);
            err = tpd_xsay(w->why, w->whylen, TP_ECORRUPT,
                           "blob %s of run %lld has no row in the blobs table", hex,
                           (long long)w->run);
            goto out;
        }
    }
    tpd_xhash_table_end(w->h, rows);
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    sel = ins = NULL;

    /* their bytes, from the blob store beside the database */
    if ((err = tpd_blobs_dir_for(db_path, dir, sizeof dir)) != TP_OK ||
        (err = tpd_blobs_open(&b, dir)) != TP_OK) {
        tpd_xsay(w->why, w->whylen, err, "cannot locate the blob store");
        goto out;
    }
    if ((rc = sqlite3_prepare_v2(w->src, "SELECT size FROM blobs WHERE digest = ?1", -1, &sel,
                                 NULL)) != SQLITE_OK) {
        err = src_fail(w, rc);
        goto out;
    }
    tpd_xinsert_sql(&w->sql, &tpd_xtables[TPD_XT_BYTES], true);
    if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
        err = dst_fail(w, rc);
        goto out;
    }
    tpd_xhash_table_begin(w->h, &tpd_xtables[TPD_XT_BYTES]);
    for (size_t i = 0; i < w->refs.n; i++) {
        uint8_t *bytes = NULL;
        size_t n = 0;
        int64_t size = -1;
        tpd_xhex16(hex, w->refs.d[i]);
        sqlite3_reset(sel);
        sqlite3_bind_blob(sel, 1, w->refs.d[i], 16, SQLITE_STATIC);
        if ((rc = sqlite3_step(sel)) == SQLITE_ROW) size = sqlite3_column_int64(sel, 0);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            err = src_fail(w, rc);
            goto out;
        }
        if ((err = tpd_blob_path(b, w->refs.d[i], file, sizeof file)) != TP_OK) {
            tpd_xsay(w->why, w->whylen, err, "blob %s: path too long", hex);
            goto out;
        }
        if ((err = read_file(file, &bytes, &n)) != TP_OK) {
            if (err == TP_ENOENT) err = TP_ECORRUPT;
            tpd_xsay(w->why, w->whylen, err,
                     "blob %s of run %lld is %s in the blob store beside the database", hex,
                     (long long)w->run,
                     err == TP_ENOMEM ? "too large to read" : "missing or unreadable");
            goto out;
        }
        if ((int64_t)n != size) {
            free(bytes);
            err = tpd_xsay(w->why, w->whylen, TP_ECORRUPT,
                           "blob %s of run %lld holds %zu bytes, its row says %lld", hex,
                           (long long)w->run, n, (long long)size);
            goto out;
        }
        tpd_xhash_bytes(w->h, 'b', w->refs.d[i], 16);
        tpd_xhash_bytes(w->h, 'b', bytes, n);
        sqlite3_reset(ins);
        sqlite3_bind_blob(ins, 1, w->refs.d[i], 16, SQLITE_STATIC);
        rc = sqlite3_bind_blob64(ins, 2, n ? (const void *)bytes : (const void *)"", n,
                                 SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_step(ins);
        free(bytes);
        if (rc != SQLITE_DONE) {
            err = rc == SQLITE_TOOBIG ? tpd_xsay(w->why, w->whylen, TP_EIO,
                                                 "blob %s is too large for an export", hex)
                                      : dst_fail(w, rc);
            goto out;
        }
    }
    tpd_xhash_table_end(w->h, w->refs.n);
    err = TP_OK;
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    tpd_blobs_close(b);
    return err;
}

/* build fills the open, empty export dst with run w->run of src. */
static tp_err build(writer *w, const char *db_path)
{
    sqlite3_stmt *sel = NULL, *ins = NULL;
    uint8_t sum[16];
    tp_err err = TP_OK;
    int rc;
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d",
             TPD_EXPORT_APP_ID, TPD_EXPORT_FORMAT);
    if ((rc = sqlite3_exec(w->dst, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", NULL,
                           NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, tpd_schema, NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, export_ddl, NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, sql, NULL, NULL, NULL)) != SQLITE_OK)
        return dst_fail(w, rc);
    for (int t = TPD_XT_RUNS; t <= TPD_XT_VERDICTS; t++) {
        uint64_t rows = 0;
        tpd_xselect_sql(&w->sql, &tpd_xtables[t], true);
        if ((rc = sqlite3_prepare_v2(w->src, tpd_str_cstr(&w->sql), -1, &sel, NULL)) != SQLITE_OK)
            return src_fail(w, rc);
        tpd_xinsert_sql(&w->sql, &tpd_xtables[t], true);
        if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
            sqlite3_finalize(sel);
            return dst_fail(w, rc);
        }
        sqlite3_bind_int64(sel, 1, w->run);
        tpd_xhash_table_begin(w->h, &tpd_xtables[t]);
        err = copy_rows(w, &tpd_xtables[t], sel, ins, &rows);
        tpd_xhash_table_end(w->h, rows);
        sqlite3_finalize(sel);
        sqlite3_finalize(ins);
        if (err != TP_OK) return err;
        if (t == TPD_XT_RUNS && rows == 0)
            return tpd_xsay(w->why, w->whylen, TP_ENOENT, "no run %lld", (long long)w->run);
    }
    if ((err = export_blobs(w, db_path)) != TP_OK) return err;
    tpd_xhash_final(w->h, sum);
    rc = sqlite3_prepare_v2(w->dst,
                            "INSERT INTO export_info(format, schema, run_id, exported_ns,"
                            " producer, checksum) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                            -1, &ins, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int(ins, 1, TPD_EXPORT_FORMAT);
        sqlite3_bind_int(ins, 2, TPD_STORE_VERSION);
        sqlite3_bind_int64(ins, 3, w->run);
        sqlite3_bind_int64(ins, 4, tpd_now_ns());
        sqlite3_bind_text(ins, 5, "trainparity-daemon " TP_VERSION, -1, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 6, sum, sizeof sum, SQLITE_STATIC);
        rc = sqlite3_step(ins);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(ins);
    if (rc == SQLITE_OK) rc = sqlite3_exec(w->dst, "COMMIT", NULL, NULL, NULL);
    return rc == SQLITE_OK ? TP_OK : dst_fail(w, rc);
}

/* copy_out writes the file at path to fd. */
static tp_err copy_out(const char *path, int fd, char *why, size_t whylen)
{
    uint8_t buf[1 << 16];
    int in = open(path, O_RDONLY | O_CLOEXEC);
    tp_err err = TP_OK;
    if (in < 0)
        return tpd_xsay(why, whylen, TP_EIO, "cannot reopen the export: %s", strerror(errno));
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            err = tpd_xsay(why, whylen, TP_EIO, "cannot read the export back: %s", strerror(errno));
            break;
        }
        if (r == 0) break;
        if (tpd_write_all(fd, buf, (size_t)r) != 0) {
            err = tpd_xsay(why, whylen, TP_EIO, "cannot write the export: %s", strerror(errno));
            break;
        }
    }
    close(in);
    return err;
}

tp_err tpd_export_write(tpd_store *s, int64_t run, int fd, char *why, size_t whylen)
{
    const char *tmpdir = getenv("TMPDIR");
    char tmp[4096], dummy[8];
    bool own_txn = false;
    writer w;
    tp_err err;
    int tfd, rc;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    memset(&w, 0, sizeof w);
    w.src = tpd_store_db(s);
    w.leaves = tpd_store_leafdict(s);
    tp_buf_init(&w.body);
    w.run = run;
    w.why = why;
    w.whylen = whylen;
    tpd_str_init(&w.sql);
    if (tmpdir == NULL || tmpdir[0] == '\0') tmpdir = P_tmpdir;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/trainparity-export-XXXXXX", tmpdir) >= sizeof tmp)
        return tpd_xsay(why, whylen, TP_EINVAL, "$TMPDIR is too long");
    if ((tfd = mkstemp(tmp)) < 0)
        return tpd_xsay(why, whylen, TP_EIO, "cannot create a temporary file in %s: %s", tmpdir,
                        strerror(errno));
    close(tfd);
    if ((w.h = XXH3_createState()) == NULL || XXH3_128bits_reset(w.h) != XXH_OK) {
        err = tpd_xsay(why, whylen, TP_ENOMEM, "out of memory");
        goto out;
    }
    rc = sqlite3_open_v2(tmp, &w.dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = dst_fail(&w, rc);
        goto out;
    }
    /* one snapshot of the run, even while a daemon writes to it */
    if (sqlite3_get_autocommit(w.src)) {
        if ((rc = sqlite3_exec(w.src, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK) {
            err = src_fail(&w, rc);
            goto out;
        }
        own_txn = true;
    }
    err = build(&w, tpd_store_path(s));
    if (own_txn) sqlite3_exec(w.src, "ROLLBACK", NULL, NULL, NULL);
    if (err != TP_OK) goto out;
    if ((rc = sqlite3_close(w.dst)) != SQLITE_OK) {
        err = dst_fail(&w, rc);
        goto out;
    }
    w.dst = NULL;
    err = copy_out(tmp, fd, why, whylen);
out:
    if (w.dst) sqlite3_close_v2(w.dst);
    unlink(tmp);
    if (w.h) XXH3_freeState(w.h);
    tpd_xdigests_free(&w.refs);
    tp_buf_free(&w.body);
    tpd_str_free(&w.sql);
    return err;
}
