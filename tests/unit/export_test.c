/* SPDX-License-Identifier: MIT
 * export_test.c -- a run exported to a file and imported into another
 * database: the rows equal modulo ids (every id new, every reference and the
 * ids inside a verdict's JSON report remapped), the blob bytes there, nothing
 * stored before touched; and the files refused without touching the target:
 * not an export, a database, truncated, damaged, a newer format, a missing
 * blob, an unknown run; an import that fails halfway leaves nothing. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ingest/ingest.h"
#include "daemon/store/blob.h"
#include "daemon/store/export.h"
#include "daemon/store/pack.h"
#include "daemon/store/secret.h"
#include "daemon/store/store.h"
#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"

static char dir[512], src[600], dst[600], xfile[600];

static void setup(void)
{
    td_make(dir, sizeof dir);
    td_path(src, sizeof src, dir, "src.db");
    td_path(dst, sizeof dst, dir, "dst.db");
    td_path(xfile, sizeof xfile, dir, "run.tpx");
}

static void teardown(void)
{
    td_remove(dir);
}

static tpd_store *open_db(const char *path, unsigned flags)
{
    tpd_store *s = NULL;
    char why[256] = "";
    tp_err rc = tpd_store_open(&s, path, flags, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "open %s: %s: %s", path, tp_strerror(rc), why);
    return s;
}

static int64_t scalar(tpd_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -999;
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    sqlite3_close(h);
}

static const uint8_t BLOB_FILL = 0x5a;
#define BLOB_SIZE 300

/* a_run stores a run in s: two executions, one with a gap in its events
 * and a blob (captured values), the other plain, and a verdict whose JSON
 * report names the run and both executions.  Returns the run id. */
static int64_t a_run(tpd_store *s, const char *name, uint8_t d[16])
{
    char key[TP_EXEC_KEY_LEN + 1], key2[TP_EXEC_KEY_LEN + 1], report[512];
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    int64_t run, e1, e2;
    tpd_verdict v;
    char why[256];
    uint64_t q = 0;
    tb t;
    ck_assert_int_eq(tpd_store_run_create(s, name, "resume", "{\"at\": 2}", &run), TP_OK);
    ck_assert_int_eq(
        tpd_store_exec_create_keyed(s, run, "baseline-a", "[\"python\",\"t.py\"]", &e1, key),
        TP_OK);
    ck_assert_int_eq(
        tpd_store_exec_create_keyed(s, run, "resumed", "[\"python\",\"t.py\",\"-r\"]", &e2, key2),
        TP_OK);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, e1, 500, 0, NULL, key);
    tb_hello(&t, q++, 0);
    tb_snapshot(&t, q++, 0, 3);
    tb_backward(&t, q++, 0, 1.5, 1);
    tb_step(&t, q++, 0, true, 2, 2.0, 9.61731e-05);
    tb_step(&t, q++, 0, false, 0, 0.05, 9.61731e-05);
    tb_blob(&t, q++, 0, d, BLOB_SIZE, BLOB_FILL);
    q++; /* a lost event: a gap */
    tb_backward(&t, q++, 1, 1.25, 1);
    tb_bye(&t, q, q + 1, 0);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why), TP_OK);
    tb_free(&t);
    tb_begin_key(&t, run, e2, 600, 0, NULL, key2);
    tb_hello(&t, 0, 0);
    tb_backward(&t, 1, 0, 3.0, 1);
    tb_bye(&t, 2, 3, 0);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why), TP_OK);
    tb_free(&t);
    tpd_ingest_destroy(in);
    ck_assert_int_eq(tpd_store_exec_finish(s, e1, &(int64_t){0}, NULL), TP_OK);
    ck_assert_int_eq(tpd_store_exec_finish(s, e2, NULL, &(int64_t){9}), TP_OK);
    ck_assert_int_eq(tpd_store_gaps_compute(s, e1, NULL), TP_OK);
    snprintf(report, sizeof report,
             "{\"check\":\"resume\",\"run\":%lld,\"note\":\"run\",\"evidence\":{\"executions\":"
             "[{\"execution\":%lld,\"run\":1e3},{\"execution\": %lld}],\"execution\":-7}}",
             (long long)run, (long long)e1, (long long)e2);
    memset(&v, 0, sizeof v);
    v.run = run;
    v.check_kind = "resume";
    v.outcome = "FAIL";
    v.has_step = true;
    v.step = 1;
    v.path = "scheduler.last_epoch";
    v.report = report;
    v.text = "resume: FAIL at step 1\n";
    ck_assert_int_eq(tpd_store_verdict_insert(s, &v, NULL), TP_OK);
    return run;
}

/* export_to writes run of the database at path to xfile; returns the
 * result and leaves the reason in why. */
static tp_err export_to(const char *path, int64_t run, char *why, size_t n)
{
    tpd_store *s = open_db(path, TPD_STORE_READONLY);
    int fd = open(xfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    tp_err rc;
    ck_assert_int_ge(fd, 0);
    rc = tpd_export_write(s, run, fd, why, n);
    close(fd);
    tpd_store_close(s);
    return rc;
}

/* import_from imports xfile into dst: open (checks) then import. */
static tp_err import_from(const char *file, int64_t *run, char *why, size_t n)
{
    tpd_export *x = NULL;
    tpd_store *s;
    tp_err rc = tpd_export_open(&x, file, why, n);
    if (rc != TP_OK) return rc;
    s = open_db(dst, 0);
    rc = tpd_export_import(x, s, run, why, n);
    tpd_store_close(s);
    tpd_export_close(x);
    return rc;
}

/* same_rows compares the rows two queries return, value by value; a
 * column named body as the store's readers read it (unpacked,
 * daemon/store/pack.h), since each store packs with its own ids. */
static void same_rows(tpd_store *a, tpd_store *b, const char *sql, int64_t ida, int64_t idb)
{
    sqlite3_stmt *sa = NULL, *sb = NULL;
    tp_buf ua, ub;
    int ra, rb, rows = 0;
    tp_buf_init(&ua);
    tp_buf_init(&ub);
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(a), sql, -1, &sa, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(b), sql, -1, &sb, NULL), SQLITE_OK);
    sqlite3_bind_int64(sa, 1, ida);
    sqlite3_bind_int64(sb, 1, idb);
    for (;;) {
        ra = sqlite3_step(sa);
        rb = sqlite3_step(sb);
        ck_assert_msg(ra == rb, "%s: row %d: %d vs %d", sql, rows, ra, rb);
        if (ra != SQLITE_ROW) break;
        ck_assert_int_eq(sqlite3_column_count(sa), sqlite3_column_count(sb));
        for (int i = 0; i < sqlite3_column_count(sa); i++) {
            int ta = sqlite3_column_type(sa, i), na, nb;
            const void *pa, *pb;
            ck_assert_msg(ta == sqlite3_column_type(sb, i), "%s: row %d col %d: type", sql, rows,
                          i);
            pa = sqlite3_column_blob(sa, i);
            pb = sqlite3_column_blob(sb, i);
            na = sqlite3_column_bytes(sa, i);
            nb = sqlite3_column_bytes(sb, i);
            if (strcmp(sqlite3_column_name(sa, i), "body") == 0) {
                const uint8_t *p;
                size_t n;
                ck_assert_int_eq(tpd_body_read(tpd_store_leafdict(a), pa, (size_t)na, &ua, &p, &n),
                                 TP_OK);
                pa = p, na = (int)n;
                ck_assert_int_eq(tpd_body_read(tpd_store_leafdict(b), pb, (size_t)nb, &ub, &p, &n),
                                 TP_OK);
                pb = p, nb = (int)n;
            }
            ck_assert_msg(na == nb && (na == 0 || memcmp(pa, pb, (size_t)na) == 0),
                          "%s: row %d col %d differs", sql, rows, i);
        }
        rows++;
    }
    ck_assert_int_eq(ra, SQLITE_DONE);
    sqlite3_finalize(sa);
    sqlite3_finalize(sb);
    tp_buf_free(&ua);
    tp_buf_free(&ub);
    ck_assert_msg(rows > 0, "%s: no rows", sql);
}

/* The run's rows without their ids, in order: what must survive. */
static const char *const rows_sql[] = {
    "SELECT name, check_kind, params, created_ns FROM runs WHERE id = ?1",
    "SELECT role, argv, created_ns, finished_ns, exit_status, exit_signal FROM executions"
    " WHERE run_id = ?1 ORDER BY id",
    "SELECT p.pid, ppid, rank, world, local_rank, p.role, agent, python, torch, numpy, p.argv,"
    " cwd, exe, capture, cxx, interrupt_at, hello_ns, bye_ns, bye_reason, bye_code, bye_exc,"
    " spooled, sent, dropped, errors, nevents, max_seq FROM processes p JOIN executions e ON"
    " e.id = p.exec_id WHERE e.run_id = ?1 ORDER BY p.id",
    "SELECT v.pid, seq, time_ns, step, kind, body FROM events v JOIN executions e ON e.id ="
    " v.exec_id WHERE e.run_id = ?1 ORDER BY v.id",
    "SELECT g.pid, first_seq, last_seq FROM gaps g JOIN executions e ON e.id = g.exec_id"
    " WHERE e.run_id = ?1 ORDER BY g.rowid",
    "SELECT check_kind, outcome, step, path, text, created_ns FROM verdicts WHERE run_id = ?1"
    " ORDER BY id",
    /* both databases hold that one blob, whatever ?1 */
    "SELECT digest, size, dtype, shape FROM blobs WHERE ?1 IS NOT NULL ORDER BY digest",
};

START_TEST(test_export_round_trip)
{
    uint8_t d[16], *bytes;
    char why[512] = "", file[4200], bdir[700], rep[1024];
    int64_t srun, drun, e1, e2;
    tpd_store *s = open_db(src, 0), *t;
    tpd_blobs *b = NULL;
    struct stat sb;
    FILE *f;
    tb_digest(d, 77);
    a_run(s, "other", d); /* so that the exported run's ids are not 1 */
    srun = a_run(s, "golden", d);
    ck_assert_int_eq(srun, 2);
    tpd_store_close(s);
    ck_assert_msg(export_to(src, srun, why, sizeof why) == TP_OK, "export: %s", why);

    /* the target already holds a run: it stays as it was */
    t = open_db(dst, 0);
    ck_assert_int_eq(tpd_store_run_create(t, "mine", "record", NULL, &drun), TP_OK);
    ck_assert_int_eq(tpd_store_run_create(t, "mine2", "record", NULL, &drun), TP_OK);
    tpd_store_close(t);
    ck_assert_msg(import_from(xfile, &drun, why, sizeof why) == TP_OK, "import: %s", why);
    ck_assert_int_eq(drun, 3);

    s = open_db(src, TPD_STORE_READONLY);
    t = open_db(dst, TPD_STORE_READONLY);
    for (size_t i = 0; i < sizeof rows_sql / sizeof rows_sql[0]; i++)
        same_rows(s, t, rows_sql[i], srun, drun);
    /* new ids, consistent: two executions of run 3, numbered from 1 there */
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM executions WHERE run_id = 3"), 2);
    e1 = scalar(t, "SELECT min(id) FROM executions WHERE run_id = 3");
    e2 = scalar(t, "SELECT max(id) FROM executions WHERE run_id = 3");
    ck_assert_int_eq(e1, 1);
    ck_assert_int_eq(e2, 2);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM processes WHERE exec_id NOT IN (1, 2)"), 0);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM events WHERE exec_id NOT IN (1, 2)"), 0);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM gaps WHERE exec_id = 1"), 1);
    /* keys are secrets: never exported, so the imported executions take no batch */
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM executions WHERE key IS NOT NULL"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM executions WHERE key IS NOT NULL"), 4);
    /* the report's run and executions are the new ones, the rest byte for byte */
    {
        sqlite3_stmt *st = NULL;
        ck_assert_int_eq(
            sqlite3_prepare_v2(tpd_store_db(t), "SELECT report FROM verdicts", -1, &st, NULL),
            SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        snprintf(rep, sizeof rep, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    ck_assert_str_eq(rep, "{\"check\":\"resume\",\"run\":3,\"note\":\"run\",\"evidence\":{"
                          "\"executions\":[{\"execution\":1,\"run\":1e3},{\"execution\": 2}],"
                          "\"execution\":-7}}");
    tpd_store_close(s);
    tpd_store_close(t);

    /* the blob's bytes are in the target's blob store */
    snprintf(bdir, sizeof bdir, "%s.blobs", dst);
    ck_assert_int_eq(tpd_blobs_open(&b, bdir), TP_OK);
    ck_assert_int_eq(tpd_blob_path(b, d, file, sizeof file), TP_OK);
    tpd_blobs_close(b);
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_int_eq(sb.st_size, BLOB_SIZE);
    bytes = malloc(BLOB_SIZE);
    ck_assert_ptr_nonnull(f = fopen(file, "rb"));
    ck_assert_int_eq(fread(bytes, 1, BLOB_SIZE, f), BLOB_SIZE);
    fclose(f);
    for (int i = 0; i < BLOB_SIZE; i++) ck_assert_int_eq(bytes[i], BLOB_FILL);
    free(bytes);

    /* the same file again: another run, the first one untouched */
    ck_assert_msg(import_from(xfile, &drun, why, sizeof why) == TP_OK, "import: %s", why);
    ck_assert_int_eq(drun, 4);
    t = open_db(dst, TPD_STORE_READONLY);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM executions WHERE run_id = 4 AND id IN (3, 4)"),
                     2);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM blobs"), 1);
    ck_assert_int_eq(scalar(t, "SELECT count(*) FROM runs WHERE name LIKE 'mine%'"), 2);
    tpd_store_close(t);
}
END_TEST

/* file_bytes reads the whole file at path into *n bytes (malloc'd). */
static uint8_t *file_bytes(const char *path, size_t *n)
{
    struct stat sb;
    uint8_t *p;
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fstat(fileno(f), &sb), 0);
    p = malloc((size_t)sb.st_size + 1);
    ck_assert_int_eq(fread(p, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
    fclose(f);
    *n = (size_t)sb.st_size;
    return p;
}

static void put_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* refused imports bad (a file name) and expects err, why containing want,
 * and the target exactly as it was (before: its bytes, n of them). */
static void refused(const char *bad, tp_err err, const char *want, const uint8_t *before, size_t n)
{
    char why[512] = "";
    int64_t run = -1;
    size_t m;
    uint8_t *after;
    tp_err rc = import_from(bad, &run, why, sizeof why);
    ck_assert_msg(rc == err, "%s: %s (%s), want %s", bad, tp_strerror(rc), why, tp_strerror(err));
    ck_assert_msg(strstr(why, want) != NULL, "%s: '%s' lacks '%s'", bad, why, want);
    ck_assert_int_eq(run, -1);
    after = file_bytes(dst, &m);
    ck_assert_msg(m == n && memcmp(after, before, n) == 0, "%s: the target changed", bad);
    free(after);
}

START_TEST(test_export_refused)
{
    uint8_t d[16], *x, *before;
    size_t nx, nb;
    char why[512] = "", bad[700], blobfile[4200], bdir[700];
    tpd_store *s = open_db(src, 0);
    tpd_blobs *b = NULL;
    int64_t run, r;
    tb_digest(d, 5);
    run = a_run(s, "golden", d);
    tpd_store_close(s);

    /* an unknown run is not exported */
    ck_assert_int_eq(export_to(src, 99, why, sizeof why), TP_ENOENT);
    ck_assert_str_eq(why, "no run 99");

    ck_assert_msg(export_to(src, run, why, sizeof why) == TP_OK, "export: %s", why);
    x = file_bytes(xfile, &nx);
    /* a target with a run in it, checkpointed so its file is all there is */
    s = open_db(dst, 0);
    ck_assert_int_eq(tpd_store_run_create(s, "mine", "record", NULL, &r), TP_OK);
    tpd_store_close(s);
    before = file_bytes(dst, &nb);
    td_path(bad, sizeof bad, dir, "bad.tpx");

    refused(td_path(bad, sizeof bad, dir, "missing.tpx"), TP_ENOENT, "cannot open", before, nb);
    put_file(bad, "", 0);
    refused(bad, TP_ECORRUPT, "not a TrainParity export (empty file)", before, nb);
    put_file(bad, "hello, world\n", 13);
    refused(bad, TP_ECORRUPT, "not a TrainParity export (not an SQLite file)", before, nb);
    refused(src, TP_ECORRUPT, "a TrainParity database, not an export", before, nb);
    put_file(bad, x, 64); /* shorter than the header */
    refused(bad, TP_ECORRUPT, "not a TrainParity export", before, nb);
    put_file(bad, x, nx - 1024);
    refused(bad, TP_ECORRUPT, "truncated TrainParity export", before, nb);
    put_file(bad, x, nx / 2);
    refused(bad, TP_ECORRUPT, "truncated TrainParity export", before, nb);

    /* a page of garbage in the middle */
    {
        uint8_t *y = malloc(nx);
        memcpy(y, x, nx);
        for (size_t i = 0; i < 4096; i++) y[nx / 2 / 4096 * 4096 + i] = (uint8_t)(i * 7 + 1);
        put_file(bad, y, nx);
        free(y);
        refused(bad, TP_ECORRUPT, "damaged TrainParity export", before, nb);
    }

    /* a changed value, the file still a sound SQLite database: the checksum */
    put_file(bad, x, nx);
    raw_exec(bad,
             "PRAGMA journal_mode = DELETE;"
             " UPDATE events SET time_ns = time_ns + 1 WHERE id = (SELECT max(id) FROM events)");
    refused(bad, TP_ECORRUPT, "does not match its checksum", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE blob_bytes SET bytes = zeroblob(length(bytes))");
    refused(bad, TP_ECORRUPT, "does not match its checksum", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "DELETE FROM blob_bytes");
    refused(bad, TP_ECORRUPT, "inconsistent TrainParity export", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE executions SET run_id = run_id + 1");
    refused(bad, TP_ECORRUPT, "is not of run", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE processes SET pid = 'abc'");
    refused(bad, TP_ECORRUPT, "processes.pid holds text", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE executions SET key = 'deadbeef'");
    refused(bad, TP_ECORRUPT, "executions.key must be empty", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "DROP TABLE gaps");
    refused(bad, TP_ECORRUPT, "not a TrainParity export (table gaps", before, nb);

    /* a newer format, or a newer database schema inside */
    put_file(bad, x, nx);
    raw_exec(bad, "PRAGMA user_version = 2");
    refused(bad, TP_EVERSION, "format 2, newer than", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE export_info SET schema = schema + 1");
    refused(bad, TP_EVERSION, "newer than", before, nb);
    put_file(bad, x, nx);
    raw_exec(bad, "UPDATE export_info SET schema = 1");
    refused(bad, TP_EVERSION, "imports versions 2 to 3", before, nb);

    /* the untouched file still imports: the failures were the files' */
    ck_assert_msg(import_from(xfile, &r, why, sizeof why) == TP_OK, "import: %s", why);
    ck_assert_int_eq(r, 2);
    /* as does one that version 2 wrote: the same tables, bodies as the
     * agent sent them, no leafdefs (exports never pack) */
    put_file(bad, x, nx);
    raw_exec(bad, "DROP TABLE leafdefs; UPDATE export_info SET schema = 2");
    ck_assert_msg(import_from(bad, &r, why, sizeof why) == TP_OK, "import: %s", why);
    ck_assert_int_eq(r, 3);
    free(before);
    free(x);

    /* a run whose blob file is gone cannot be exported complete */
    snprintf(bdir, sizeof bdir, "%s.blobs", src);
    ck_assert_int_eq(tpd_blobs_open(&b, bdir), TP_OK);
    ck_assert_int_eq(tpd_blob_path(b, d, blobfile, sizeof blobfile), TP_OK);
    tpd_blobs_close(b);
    ck_assert_int_eq(unlink(blobfile), 0);
    ck_assert_int_eq(export_to(src, run, why, sizeof why), TP_ECORRUPT);
    ck_assert_msg(strstr(why, "missing or unreadable"), "%s", why);
}
END_TEST

START_TEST(test_export_import_rolls_back)
{
    uint8_t d[16], *before, *after;
    size_t nb, na;
    char why[512] = "";
    tpd_store *s = open_db(src, 0);
    int64_t run, r = -1;
    tb_digest(d, 9);
    run = a_run(s, "golden", d);
    tpd_store_close(s);
    ck_assert_msg(export_to(src, run, why, sizeof why) == TP_OK, "export: %s", why);
    s = open_db(dst, 0);
    ck_assert_int_eq(tpd_store_run_create(s, "mine", "record", NULL, &r), TP_OK);
    tpd_store_close(s);
    /* the last table the import writes refuses: everything before it goes */
    raw_exec(dst, "CREATE TRIGGER no_verdicts BEFORE INSERT ON verdicts"
                  " BEGIN SELECT RAISE(ABORT, 'injected'); END");
    before = file_bytes(dst, &nb);
    r = -1;
    ck_assert_int_eq(import_from(xfile, &r, why, sizeof why), TP_EDB);
    ck_assert_msg(strstr(why, "injected"), "%s", why);
    ck_assert_int_eq(r, -1);
    s = open_db(dst, TPD_STORE_READONLY);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM runs"), 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM executions"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 0);
    tpd_store_close(s);
    after = file_bytes(dst, &na);
    ck_assert_msg(na == nb && memcmp(after, before, nb) == 0, "the target changed");
    free(before);
    free(after);
}
END_TEST

static Suite *export_suite(void)
{
    Suite *s = suite_create("export");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_export_round_trip);
    tcase_add_test(tc, test_export_refused);
    tcase_add_test(tc, test_export_import_rolls_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(export_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
