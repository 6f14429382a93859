/* SPDX-License-Identifier: MIT
 * store_test.c -- the daemon's store, ingest and query code on real database
 * files: creation and migration, refusing newer and foreign files without
 * touching them, rows from every event kind, duplicates, gaps, tokens, spool
 * files and the text views. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ingest/ingest.h"
#include "daemon/store/blob.h"
#include "daemon/store/query.h"
#include "daemon/store/secret.h"
#include "daemon/store/store.h"
#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"

static char dir[512], db[600];

static void setup(void)
{
    td_make(dir, sizeof dir);
    td_path(db, sizeof db, dir, "runs.db");
}

static void teardown(void)
{
    td_remove(dir);
}

static tpd_store *open_store(unsigned flags)
{
    tpd_store *s = NULL;
    char why[256] = "";
    tp_err rc = tpd_store_open(&s, db, flags, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "open: %s: %s", tp_strerror(rc), why);
    return s;
}

/* scalar runs a query returning one integer. */
static int64_t scalar(tpd_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -999;
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* text runs a query returning one string (copied into out). */
static const char *text(tpd_store *s, const char *sql, char *out, size_t n)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

/* keyed_exec creates a run and an execution of it with its key; in a
 * fresh database both are 1. */
static int64_t keyed_exec(tpd_store *s, int64_t *run, char key[TP_EXEC_KEY_LEN + 1])
{
    int64_t exec = 0;
    ck_assert_int_eq(tpd_store_run_create(s, "t", "record", NULL, run), TP_OK);
    ck_assert_int_eq(tpd_store_exec_create_keyed(s, *run, "main", NULL, &exec, key), TP_OK);
    return exec;
}

static void ingest_ok(tpd_ingest *in, const tb *t, tpd_ingest_result *res)
{
    char why[256] = "";
    tp_err rc = tpd_ingest_message(in, t->buf.data, t->buf.len, res, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "ingest: %s: %s", tp_strerror(rc), why);
}

/* ---- open, migrate, refuse ---- */

START_TEST(test_store_open_creates_v1)
{
    static const char *const tables[] = {"runs", "executions", "processes", "events",  "leaves",
                                         "gaps", "blobs",      "verdicts",  "counters"};
    tpd_store *s = open_store(0);
    char buf[64];
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), TPD_STORE_VERSION);
    ck_assert_int_eq(scalar(s, "PRAGMA application_id"), TPD_STORE_APP_ID);
    ck_assert_str_eq(text(s, "PRAGMA journal_mode", buf, sizeof buf), "wal");
    ck_assert_int_eq(scalar(s, "PRAGMA synchronous"), 1); /* NORMAL */
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(tpd_store_db(s), "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                           -1, &st, NULL);
        sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        ck_assert_msg(sqlite3_column_int(st, 0) == 1, "table %s missing", tables[i]);
        sqlite3_finalize(st);
    }
    ck_assert_str_eq(tpd_store_path(s), db);
    tpd_store_close(s);
    s = open_store(0); /* reopening an up-to-date database migrates nothing */
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), TPD_STORE_VERSION);
    tpd_store_close(s);
    tpd_store_close(NULL);
}
END_TEST

START_TEST(test_store_runs_execs_verdicts_persist)
{
    tpd_store *s = open_store(0);
    int64_t run = 0, exec = 0, vid = 0, v = 0;
    int64_t status = 3;
    tpd_exec_state es;
    tpd_verdict vd, got;
    ck_assert_int_eq(tpd_store_run_create(s, "demo", "resume", "{\"at\":4}", &run), TP_OK);
    ck_assert_int_eq(tpd_store_run_create(s, NULL, NULL, NULL, &v), TP_EINVAL);
    ck_assert_int_eq(tpd_store_run_exists(s, run), TP_OK);
    ck_assert_int_eq(tpd_store_run_exists(s, run + 100), TP_ENOENT);
    ck_assert_int_eq(tpd_store_exec_create(s, run + 100, "a", NULL, &exec), TP_ENOENT);
    ck_assert_int_eq(tpd_store_exec_create(s, run, "baseline-a", "[\"python\",\"t.py\"]", &exec),
                     TP_OK);
    ck_assert_int_eq(tpd_store_exec_state(s, exec, &es), TP_OK);
    ck_assert(!es.finished);
    ck_assert_int_eq(es.run, run);
    ck_assert_int_eq(tpd_store_exec_finish(s, exec, &status, NULL), TP_OK);
    status = 9;
    ck_assert_int_eq(tpd_store_exec_finish(s, exec, &status, &status), TP_OK); /* no change */
    ck_assert_int_eq(tpd_store_exec_finish(s, exec + 100, NULL, NULL), TP_ENOENT);
    ck_assert_int_eq(tpd_store_exec_state(s, exec, &es), TP_OK);
    ck_assert(es.finished);
    ck_assert_int_eq(es.processes, 0);

    memset(&vd, 0, sizeof vd);
    vd.run = run;
    vd.check_kind = "resume";
    vd.outcome = "FAIL";
    vd.has_step = true;
    vd.step = 5;
    vd.path = "optimizer.state.fc1.weight.exp_avg";
    vd.report = "{\"outcome\":\"FAIL\"}";
    vd.text = "first divergence at step 5";
    ck_assert_int_eq(tpd_store_verdict_insert(s, &vd, &vid), TP_OK);
    vd.outcome = NULL;
    ck_assert_int_eq(tpd_store_verdict_insert(s, &vd, &v), TP_EINVAL);

    ck_assert_int_eq(tpd_store_counter_add(s, "things", 2), TP_OK);
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert_int_eq(tpd_store_begin(s), TP_EINVAL);
    ck_assert_int_eq(tpd_store_counter_add(s, "things", 3), TP_OK);
    ck_assert_int_eq(tpd_store_counter_get(s, "things", &v), TP_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(tpd_store_commit(s), TP_OK);
    ck_assert_int_eq(tpd_store_commit(s), TP_EINVAL);
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert_int_eq(tpd_store_counter_add(s, "things", 100), TP_OK);
    tpd_store_rollback(s);
    tpd_store_close(s);

    s = open_store(TPD_STORE_READONLY);
    ck_assert_int_eq(tpd_store_counter_get(s, "things", &v), TP_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(tpd_store_counter_get(s, "absent", &v), TP_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(scalar(s, "SELECT exit_status FROM executions"), 3);
    ck_assert_int_eq(scalar(s, "SELECT exit_signal IS NULL FROM executions"), 1);
    ck_assert_int_eq(tpd_store_verdict_latest(s, run, &got), TP_OK);
    ck_assert_int_eq(got.id, vid);
    ck_assert_str_eq(got.outcome, "FAIL");
    ck_assert_str_eq(got.path, "optimizer.state.fc1.weight.exp_avg");
    ck_assert(got.has_step && got.step == 5);
    ck_assert(got.created_ns > 0);
    tpd_verdict_clear(&got);
    ck_assert_int_eq(tpd_store_verdict_get(s, vid, &got), TP_OK);
    ck_assert_str_eq(got.text, "first divergence at step 5");
    tpd_verdict_clear(&got);
    tpd_verdict_clear(NULL);
    ck_assert_int_eq(tpd_store_verdict_get(s, vid + 1, &got), TP_ENOENT);
    ck_assert_int_eq(tpd_store_begin(s), TP_EINVAL); /* read-only */
    tpd_store_close(s);
}
END_TEST

START_TEST(test_store_newer_version_refused)
{
    tpd_store *s = open_store(0), *s2 = NULL;
    char why[256] = "";
    tpd_store_close(s);
    raw_exec(db, "PRAGMA user_version = 2");
    ck_assert_int_eq(tpd_store_open(&s2, db, 0, why, sizeof why), TP_EVERSION);
    ck_assert_ptr_null(s2);
    ck_assert_msg(strstr(why, "newer") != NULL, "why: %s", why);
    why[0] = '\0';
    ck_assert_int_eq(tpd_store_open(&s2, db, TPD_STORE_READONLY, why, sizeof why), TP_EVERSION);
    ck_assert(why[0]);
}
END_TEST

/* read_file returns a file's bytes (free() them). */
static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = malloc(1 << 16);
    ck_assert_ptr_nonnull(f);
    *n = fread(p, 1, 1 << 16, f);
    fclose(f);
    return p;
}

static void garbage_case(size_t size)
{
    uint8_t *orig = malloc(size), *now;
    char why[256] = "", side[700];
    unsigned seed = (unsigned)size;
    tpd_store *s = NULL;
    size_t n;
    FILE *f = fopen(db, "wb");
    for (size_t i = 0; i < size; i++) orig[i] = (uint8_t)rand_r(&seed);
    memcpy(orig, "not sqlite", 10);
    fwrite(orig, 1, size, f);
    fclose(f);
    ck_assert_int_eq(tpd_store_open(&s, db, 0, why, sizeof why), TP_ECORRUPT);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(why, "not a TrainParity database (file is not a database)");
    ck_assert_int_eq(tpd_store_open(&s, db, TPD_STORE_READONLY, why, sizeof why), TP_ECORRUPT);
    now = read_file(db, &n);
    ck_assert_int_eq(n, size);
    ck_assert(memcmp(orig, now, size) == 0);
    ck_assert_int_ne(access(td_path(side, sizeof side, dir, "runs.db-wal"), F_OK), 0);
    ck_assert_int_ne(access(td_path(side, sizeof side, dir, "runs.db-journal"), F_OK), 0);
    free(orig);
    free(now);
}

START_TEST(test_store_garbage_refused_untouched)
{
    garbage_case(4096);
    garbage_case(100);
    garbage_case(32768);
}
END_TEST

START_TEST(test_store_foreign_database_refused)
{
    tpd_store *s = NULL;
    char why[256] = "";
    raw_exec(db, "CREATE TABLE notes(x); INSERT INTO notes VALUES(1)");
    ck_assert_int_eq(tpd_store_open(&s, db, 0, why, sizeof why), TP_ECORRUPT);
    ck_assert(strstr(why, "not a TrainParity database") != NULL);
    raw_exec(db, "SELECT * FROM notes"); /* still there */
    raw_exec(db, "PRAGMA user_version = 1");
    ck_assert_int_eq(tpd_store_open(&s, db, 0, why, sizeof why), TP_ECORRUPT);
    ck_assert(strstr(why, "application id") != NULL);
}
END_TEST

START_TEST(test_store_readonly_missing)
{
    tpd_store *s = NULL;
    tpd_ingest *in = NULL;
    char why[256] = "";
    ck_assert_int_eq(tpd_store_open(&s, db, TPD_STORE_READONLY, why, sizeof why), TP_ENOENT);
    ck_assert(why[0]);
    ck_assert_int_ne(access(db, F_OK), 0); /* not created */
    ck_assert_int_eq(tpd_store_open(&s, "", 0, why, sizeof why), TP_EINVAL);
    s = open_store(0);
    tpd_store_close(s);
    s = open_store(TPD_STORE_READONLY);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_EINVAL);
    tpd_store_close(s);
}
END_TEST

/* ---- ingest ---- */

START_TEST(test_store_ingest_every_kind)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    char buf[512], path[700];
    uint8_t d[16];
    int64_t v, run, exec;
    char key[TP_EXEC_KEY_LEN + 1];
    tb t;
    exec = keyed_exec(s, &run, key);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, exec, 4242, 0, NULL, key);
    tb_all(&t, 0);
    tb_bye(&t, 15, 16, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    ck_assert_int_eq(res.events, 16);
    ck_assert_int_eq(res.dup, 0);
    ck_assert_int_eq(res.exec, exec);
    ck_assert_int_eq(res.pid, 4242);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 16);
    ck_assert_int_eq(scalar(s, "SELECT count(DISTINCT kind) FROM events"), 15);
    /* the process row: hello and bye */
    ck_assert_str_eq(text(s, "SELECT python FROM processes", buf, sizeof buf), "3.11.7");
    ck_assert_str_eq(text(s, "SELECT torch FROM processes", buf, sizeof buf), "2.13.0");
    ck_assert_str_eq(text(s, "SELECT argv FROM processes", buf, sizeof buf),
                     "[\"python\",\"train.py\",\"--lr\",\"0.1\"]");
    ck_assert_str_eq(text(s, "SELECT cwd FROM processes", buf, sizeof buf), "/home/u/proj");
    ck_assert_str_eq(text(s, "SELECT role FROM processes", buf, sizeof buf), "main");
    ck_assert_int_eq(scalar(s, "SELECT world FROM processes"), 2);
    ck_assert_int_eq(scalar(s, "SELECT ppid FROM processes"), 1);
    ck_assert_int_eq(scalar(s, "SELECT hello_ns FROM processes"), 1000);
    ck_assert_str_eq(text(s, "SELECT bye_reason FROM processes", buf, sizeof buf), "exit");
    ck_assert_int_eq(scalar(s, "SELECT sent FROM processes"), 16);
    ck_assert_int_eq(scalar(s, "SELECT dropped FROM processes"), 0);
    ck_assert_int_eq(scalar(s, "SELECT nevents FROM processes"), 16);
    ck_assert_int_eq(scalar(s, "SELECT max_seq FROM processes"), 15);
    /* leaves: snapshot 3 tensors + 5 values + 1 digest, grads 2, sched 1,
     * save and load manifests 2 each */
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leaves"), 9 + 2 + 1 + 2 + 2);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leaves WHERE src = 'grads'"), 2);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leaves WHERE src = 'manifest'"), 4);
    ck_assert_str_eq(text(s,
                          "SELECT shape FROM leaves WHERE path = 'model.layer1.weight'"
                          " AND src = 'leaves'",
                          buf, sizeof buf),
                     "[64,33]");
    ck_assert_int_eq(
        scalar(s, "SELECT length(digest) FROM leaves WHERE path = 'model.layer1.weight'"), 16);
    ck_assert_int_eq(
        scalar(s, "SELECT nonfinite FROM leaves WHERE path = 'model.layer1.weight' LIMIT 1"), 1);
    ck_assert_int_eq(scalar(s, "SELECT blob FROM leaves WHERE path = 'model.layer0.weight'"
                               " AND src = 'leaves'"),
                     1);
    ck_assert_str_eq(text(s,
                          "SELECT typeof(value) || vtype FROM leaves WHERE path ="
                          " 'optimizer.group[0].lr'",
                          buf, sizeof buf),
                     "realfloat");
    ck_assert_str_eq(text(s,
                          "SELECT typeof(value) || vtype || value FROM leaves WHERE path ="
                          " 'optimizer.group[0].nesterov'",
                          buf, sizeof buf),
                     "integerbool1");
    ck_assert_str_eq(
        text(s, "SELECT value FROM leaves WHERE path = 'optimizer.cls'", buf, sizeof buf), "SGD");
    ck_assert_int_eq(scalar(s, "SELECT value IS NULL FROM leaves WHERE path = 'scaler.none'"), 1);
    ck_assert_int_eq(scalar(s, "SELECT nitems FROM leaves WHERE path = 'rng.torch_cpu'"), 5056);
    ck_assert_int_eq(scalar(s, "SELECT value FROM leaves WHERE src = 'leaves' AND path ="
                               " 'scheduler.last_epoch' AND kind = 'v' ORDER BY event_id DESC"),
                     1);
    /* the blob: bytes in the file store, a row, no bytes in the event */
    ck_assert_int_eq(scalar(s, "SELECT size FROM blobs"), 100);
    ck_assert_str_eq(text(s, "SELECT shape FROM blobs", buf, sizeof buf), "[100]");
    ck_assert_int_lt(scalar(s, "SELECT length(body) FROM events WHERE kind = 'blob'"), 60);
    {
        tpd_blobs *bl = NULL;
        char bdir[700];
        struct stat sb;
        tb_digest(d, 0xb10b);
        ck_assert_int_eq(tpd_blobs_dir_for(db, bdir, sizeof bdir), TP_OK);
        ck_assert_int_eq(tpd_blobs_open(&bl, bdir), TP_OK);
        ck_assert_int_eq(tpd_blob_path(bl, d, path, sizeof path), TP_OK);
        ck_assert_int_eq(stat(path, &sb), 0);
        ck_assert_int_eq(sb.st_size, 100);
        ck_assert_int_eq(stat(bdir, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 0777, 0700);
        tpd_blobs_close(bl);
    }
    ck_assert_int_eq(tpd_store_counter_get(s, "batches", &v), TP_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(tpd_store_counter_get(s, "events", &v), TP_OK);
    ck_assert_int_eq(v, 16);
    tb_free(&t);
    tpd_ingest_destroy(in);
    tpd_ingest_destroy(NULL);
    tpd_store_close(s);
}
END_TEST

START_TEST(test_store_duplicate_seq_ignored)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    int64_t v, run, exec;
    char key[TP_EXEC_KEY_LEN + 1];
    tb t, t2;
    exec = keyed_exec(s, &run, key);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, exec, 7, 0, NULL, key);
    tb_all(&t, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    ingest_ok(in, &t, &res);
    ck_assert_int_eq(res.events, 0);
    ck_assert_int_eq(res.dup, 15);
    /* a batch overlapping the stored ones: only the new seq counts */
    tb_begin_key(&t2, run, exec, 7, 0, NULL, key);
    tb_backward(&t2, 14, 1, 1.0, 1);
    tb_backward(&t2, 15, 1, 1.0, 1);
    tb_end(&t2);
    ingest_ok(in, &t2, &res);
    ck_assert_int_eq(res.events, 1);
    ck_assert_int_eq(res.dup, 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 16);
    ck_assert_int_eq(scalar(s, "SELECT nevents FROM processes"), 16);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leaves"), 16);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM processes"), 1);
    ck_assert_int_eq(tpd_store_counter_get(s, "duplicates", &v), TP_OK);
    ck_assert_int_eq(v, 16);
    tb_free(&t);
    tb_free(&t2);
    tpd_ingest_destroy(in);
    tpd_store_close(s);
}
END_TEST

typedef struct gap_list {
    int n;
    int64_t r[8][2];
} gap_list;

static void collect(void *arg, int64_t first, int64_t last)
{
    gap_list *g = arg;
    if (g->n < 8) g->r[g->n][0] = first, g->r[g->n][1] = last;
    g->n++;
}

static char gaps_key[TP_EXEC_KEY_LEN + 1]; /* of execution 3 of run 1 */

static void ingest_seqs(tpd_ingest *in, int64_t pid, const int *seqs, int n)
{
    tpd_ingest_result res;
    tb t;
    tb_begin_key(&t, 1, 3, pid, 0, NULL, gaps_key);
    for (int i = 0; i < n; i++) tb_backward(&t, (uint64_t)seqs[i], 0, 1.0, 1);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
}

START_TEST(test_store_gaps_and_seen)
{
    static const int first[] = {0, 1, 2, 5, 6, 9};
    static const int fill[] = {3, 4, 7, 8};
    static const int late[] = {1, 2};
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    gap_list g = {0};
    int64_t seq, n, run, exec = 0;
    bool bye = true;
    keyed_exec(s, &run, gaps_key);
    while (exec < 3)
        ck_assert_int_eq(tpd_store_exec_create_keyed(s, run, "main", NULL, &exec, gaps_key), TP_OK);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    ck_assert_int_eq(tpd_store_seen(s, 3, 100, &seq, &bye), TP_OK);
    ck_assert_int_eq(seq, -1);
    ck_assert(!bye);
    ingest_seqs(in, 100, first, 6);
    ingest_seqs(in, 200, late, 2); /* seq 0 lost */
    ck_assert_int_eq(tpd_store_seen(s, 3, 100, &seq, &bye), TP_OK);
    ck_assert_int_eq(seq, 2);
    ck_assert(!bye);
    ck_assert_int_eq(tpd_store_seen(s, 3, 200, &seq, &bye), TP_OK);
    ck_assert_int_eq(seq, -1);
    ck_assert_int_eq(tpd_store_process_gaps(s, 3, 100, collect, &g, &n), TP_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(g.n, 2);
    ck_assert(g.r[0][0] == 3 && g.r[0][1] == 4);
    ck_assert(g.r[1][0] == 7 && g.r[1][1] == 8);
    ck_assert_int_eq(tpd_store_gaps_compute(s, 3, &n), TP_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM gaps WHERE exec_id = 3"), 3);
    ck_assert_int_eq(scalar(s, "SELECT last_seq FROM gaps WHERE pid = 200"), 0);
    ingest_seqs(in, 100, fill, 4);
    ck_assert_int_eq(tpd_store_seen(s, 3, 100, &seq, &bye), TP_OK);
    ck_assert_int_eq(seq, 9);
    ck_assert_int_eq(tpd_store_gaps_compute(s, 3, &n), TP_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM gaps WHERE pid = 100"), 0);
    /* a process row exists without its hello */
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM processes WHERE python IS NULL"), 2);
    tpd_ingest_destroy(in);
    tpd_store_close(s);
}
END_TEST

START_TEST(test_store_malformed_and_token)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    char why[256] = "", key[TP_EXEC_KEY_LEN + 1];
    int64_t v, run, exec;
    tb t;
    exec = keyed_exec(s, &run, key);
    ck_assert_int_eq(tpd_ingest_create(&in, s, "s3cret"), TP_OK);
    ck_assert_int_eq(tpd_ingest_message(in, "\xc1garbage", 8, &res, why, sizeof why), TP_EPROTO);
    ck_assert(why[0]);
    tb_begin_key(&t, run, exec, 3, 0, NULL, key);
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    ck_assert_str_eq(why, "missing token");
    tb_free(&t);
    tb_begin_key(&t, run, exec, 3, 0, "s3cre7", key);
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    ck_assert_str_eq(why, "wrong token");
    tb_free(&t);
    /* the right token, but no key, or another's */
    tb_begin_key(&t, run, exec, 3, 0, "s3cret", NULL);
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    ck_assert_str_eq(why, "batch without its execution's key");
    tb_free(&t);
    tb_begin_key(&t, run, exec, 3, 0, "s3cret", "0123456789abcdef0123456789abcdef");
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    ck_assert_str_eq(why, "batch with a wrong execution key");
    tb_free(&t);
    tb_begin_key(&t, run, exec, 3, 0, "s3cret", key);
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
    /* a seq the database cannot hold */
    tb_begin_key(&t, run, exec, 3, 0, "s3cret", key);
    tb_backward(&t, (uint64_t)INT64_MAX + 1, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    tb_free(&t);
    ck_assert_int_eq(tpd_store_counter_get(s, "malformed", &v), TP_OK);
    ck_assert_int_eq(v, 6);
    ck_assert_int_eq(tpd_store_counter_get(s, "refused", &v), TP_OK);
    ck_assert_int_eq(v, 4);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 1);
    tpd_ingest_destroy(in);
    tpd_store_close(s);
}
END_TEST

START_TEST(test_store_secrets)
{
    char a[TP_EXEC_KEY_LEN + 1], b[TP_EXEC_KEY_LEN + 1];
    ck_assert_int_eq(tpd_secret_new(a), TP_OK);
    ck_assert_int_eq(tpd_secret_new(b), TP_OK);
    ck_assert_uint_eq(strlen(a), TP_EXEC_KEY_LEN);
    ck_assert_uint_eq(strspn(a, "0123456789abcdef"), TP_EXEC_KEY_LEN);
    ck_assert_str_ne(a, b);
    ck_assert(tpd_secret_eq("t0k-s3cret", 10, "t0k-s3cret", 10));
    ck_assert(!tpd_secret_eq("t0k-s3cret", 10, "t0k-s3creT", 10)); /* the last byte */
    ck_assert(!tpd_secret_eq("t0k-s3cret", 10, "T0k-s3cret", 10)); /* the first */
    ck_assert(!tpd_secret_eq("t0k-s3cret", 10, "t0k-s3cre", 9));   /* a prefix */
    ck_assert(!tpd_secret_eq("t0k", 3, "t0k-s3cret", 10));
    ck_assert(!tpd_secret_eq(NULL, 0, "", 0));
    ck_assert(tpd_secret_eq("", 0, "", 0));
}
END_TEST

START_TEST(test_store_old_database_gets_keys)
{
    /* a version 1 database made before execution keys: opening it for
     * writing adds the column; its executions take no more batches, new
     * ones do; reading it needs nothing */
    extern const char tpd_schema_v1[];
    char sql[256], key[TP_EXEC_KEY_LEN + 1], why[256];
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    tpd_store *s;
    int64_t exec;
    tb t;
    raw_exec(db, tpd_schema_v1);
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d; PRAGMA application_id = %d",
             TPD_STORE_VERSION, TPD_STORE_APP_ID);
    raw_exec(db, sql);
    raw_exec(db, "INSERT INTO runs(name, check_kind, created_ns) VALUES('old', 'record', 1);"
                 "INSERT INTO executions(run_id, role, created_ns) VALUES(1, 'main', 1)");
    s = open_store(TPD_STORE_READONLY);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM pragma_table_info('executions')"
                               " WHERE name = 'key'"),
                     0);
    tpd_store_close(s);
    s = open_store(0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM pragma_table_info('executions')"
                               " WHERE name = 'key'"),
                     1);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, 1, 1, 5, 0, NULL, "");
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ck_assert_int_eq(tpd_ingest_message(in, t.buf.data, t.buf.len, &res, why, sizeof why),
                     TP_EPROTO);
    tb_free(&t);
    ck_assert_int_eq(tpd_store_exec_create_keyed(s, 1, "main", NULL, &exec, key), TP_OK);
    ck_assert_int_eq(exec, 2);
    tb_begin_key(&t, 1, exec, 5, 0, NULL, key);
    tb_backward(&t, 0, 0, 1, 1);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
    ck_assert_int_eq(tpd_store_exec_create_keyed(s, 99, "main", NULL, &exec, key), TP_ENOENT);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM executions"), 2);
    tpd_ingest_destroy(in);
    tpd_store_close(s);
    s = open_store(0); /* the column is there: nothing to add */
    tpd_store_close(s);
}
END_TEST

START_TEST(test_store_database_private)
{
    /* created 0600 with its -wal and -shm whatever the umask; an existing
     * file keeps its mode */
    static const char *const suffix[] = {"", "-wal", "-shm"};
    char path[700];
    struct stat sb;
    mode_t old = umask(022);
    tpd_store *s = open_store(0);
    ck_assert_int_eq(tpd_store_counter_add(s, "x", 1), TP_OK);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", db, suffix[i]);
        ck_assert_msg(stat(path, &sb) == 0, "no %s", path);
        ck_assert_msg((sb.st_mode & 0777) == 0600, "%s is %o", path, sb.st_mode & 0777);
    }
    tpd_store_close(s);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", db, suffix[i]);
        unlink(path);
    }
    umask(0);
    fclose(fopen(db, "w"));
    chmod(db, 0640);
    s = open_store(0);
    tpd_store_close(s);
    ck_assert_int_eq(stat(db, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0640);
    umask(old);
}
END_TEST

/* ---- spool files ---- */

static void frame(FILE *f, const void *p, uint32_t n, uint32_t claimed)
{
    uint8_t h[4] = {(uint8_t)(claimed >> 24), (uint8_t)(claimed >> 16), (uint8_t)(claimed >> 8),
                    (uint8_t)claimed};
    fwrite(h, 1, 4, f);
    fwrite(p, 1, n, f);
}

START_TEST(test_store_spool_file)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_spool_result r;
    char spool[700], why[256], key[TP_EXEC_KEY_LEN + 1];
    int64_t run, exec;
    tb a, b, c;
    FILE *f;
    exec = keyed_exec(s, &run, key);
    ck_assert_int_eq(tpd_ingest_create(&in, s, "tok-ignored-for-spools"), TP_OK);
    tb_begin_key(&a, run, exec, 11, 0, NULL, key);
    tb_all(&a, 0);
    tb_end(&a);
    tb_begin_key(&c, run, exec, 12, 0, NULL, NULL); /* no key: refused here too */
    tb_backward(&c, 0, 0, 1.0, 1);
    tb_end(&c);
    tb_begin_key(&b, run, exec, 11, 0, NULL, key);
    tb_backward(&b, 14, 1, 1.0, 1); /* a duplicate */
    tb_backward(&b, 17, 1, 1.0, 1); /* leaves 15, 16 missing */
    tb_end(&b);
    td_path(spool, sizeof spool, dir, "11.spool");
    f = fopen(spool, "wb");
    frame(f, a.buf.data, (uint32_t)a.buf.len, (uint32_t)a.buf.len);
    frame(f, "\x93\x01\x02\x03", 4, 4); /* malformed */
    frame(f, "", 0, 0);                 /* empty */
    frame(f, c.buf.data, (uint32_t)c.buf.len, (uint32_t)c.buf.len);
    frame(f, b.buf.data, (uint32_t)b.buf.len, (uint32_t)b.buf.len);
    frame(f, a.buf.data, 10, (uint32_t)a.buf.len); /* torn */
    fclose(f);
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert_int_eq(r.frames, 5);
    ck_assert_int_eq(r.bad, 3);
    ck_assert(r.torn);
    ck_assert_int_eq(r.events, 16);
    ck_assert_int_eq(r.dup, 1);
    ck_assert(why[0]);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM processes WHERE pid = 12"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM gaps WHERE exec_id = 1"), 1);
    ck_assert_int_eq(scalar(s, "SELECT first_seq * 100 + last_seq FROM gaps"), 1516);
    /* again: everything is a duplicate */
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert_int_eq(r.events, 0);
    ck_assert_int_eq(r.dup, 17);
    /* an oversized length ends the reading */
    f = fopen(spool, "wb");
    frame(f, b.buf.data, (uint32_t)b.buf.len, (uint32_t)b.buf.len);
    frame(f, "xx", 2, 0xffffffffu);
    frame(f, a.buf.data, (uint32_t)a.buf.len, (uint32_t)a.buf.len);
    fclose(f);
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert_int_eq(r.frames, 1);
    ck_assert_int_eq(r.bad, 1);
    ck_assert(!r.torn);
    ck_assert(strstr(why, "exceeds") != NULL);
    /* a 2-byte file is a torn header; a missing file is an error */
    f = fopen(spool, "wb");
    fwrite("\x00\x00", 1, 2, f);
    fclose(f);
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert(r.torn && r.frames == 0);
    ck_assert_int_eq(tpd_ingest_spool(in, "/nonexistent/x.spool", &r, why, sizeof why), TP_ENOENT);
    ck_assert(why[0]);
    tb_free(&a);
    tb_free(&b);
    tb_free(&c);
    tpd_ingest_destroy(in);
    tpd_store_close(s);
}
END_TEST

/* ---- text views ---- */

static void training_run(tpd_store *s, int64_t *run)
{
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    int64_t exec;
    tpd_verdict v;
    tb t;
    uint64_t q = 0;
    char key[TP_EXEC_KEY_LEN + 1];
    ck_assert_int_eq(tpd_store_run_create(s, "demo", "health", NULL, run), TP_OK);
    ck_assert_int_eq(
        tpd_store_exec_create_keyed(s, *run, "main", "[\"python\",\"t.py\"]", &exec, key), TP_OK);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, *run, exec, 500, 0, NULL, key);
    tb_hello(&t, q++, 0);
    tb_backward(&t, q++, 0, 1.5, 1); /* two micro-batches in step 0 */
    tb_backward(&t, q++, 0, 0.5, 2);
    tb_step(&t, q++, 0, true, 1, 2.0, 0.1);
    tb_step(&t, q++, 0, false, 0, 0.05, 0.1);
    tb_backward(&t, q++, 1, 1.25, 1);
    tb_step(&t, q++, 1, true, 1, 1.5, 0.05);
    tb_step(&t, q++, 1, false, 0, 0.025, 0.05);
    q++; /* one lost event */
    tb_bye(&t, q, q + 1, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
    tpd_ingest_destroy(in);
    ck_assert_int_eq(tpd_store_exec_finish(s, exec, &(int64_t){0}, NULL), TP_OK);
    memset(&v, 0, sizeof v);
    v.run = *run;
    v.check_kind = "health";
    v.outcome = "ERROR";
    ck_assert_int_eq(tpd_store_verdict_insert(s, &v, NULL), TP_OK);
}

START_TEST(test_store_query_text)
{
    tpd_store *s = open_store(0), *ro;
    tpd_str out;
    char why[256] = "";
    int64_t run;
    const char *o;
    training_run(s, &run);
    ro = open_store(TPD_STORE_READONLY);
    tpd_str_init(&out);
    ck_assert_int_eq(tpd_query(ro, "runs", 0, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "demo") && strstr(o, "health") && strstr(o, "ERROR"), "%s", o);
    tpd_str_reset(&out);
    ck_assert_int_eq(tpd_query(ro, "run", run, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "process 500: rank 0/2, role main, python 3.11.7, torch 2.13.0"), "%s",
                  o);
    ck_assert_msg(strstr(o, "events 9, bye exit (code 0), sent 10, dropped 0"), "%s", o);
    ck_assert_msg(strstr(o, "gaps 8\n"), "%s", o);
    ck_assert_msg(strstr(o, "kinds: hello 1 backward 3 step 4 bye 1"), "%s", o);
    ck_assert_msg(strstr(o, "exit: status 0"), "%s", o);
    ck_assert_msg(strstr(o, "argv [\"python\",\"t.py\"]"), "%s", o);
    tpd_str_reset(&out);
    ck_assert_int_eq(tpd_query(ro, "steps", run, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "  0      2            2        2            0.05         0.1,0.01"),
                  "%s", o);
    ck_assert_msg(strstr(o, "  1      1.25         1        1.5          0.025        0.05,0.005"),
                  "%s", o);
    tpd_str_reset(&out);
    ck_assert_int_eq(tpd_query(ro, "steps", run + 1, &out, why, sizeof why), TP_ENOENT);
    ck_assert_str_eq(why, "no run 2");
    ck_assert_int_eq(tpd_query(ro, "run", 99, &out, why, sizeof why), TP_ENOENT);
    ck_assert_int_eq(tpd_query(ro, "bogus", 1, &out, why, sizeof why), TP_EINVAL);
    tpd_str_free(&out);
    tpd_store_close(ro);
    tpd_store_close(s);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_store_open_creates_v1);
    tcase_add_test(tc, test_store_runs_execs_verdicts_persist);
    tcase_add_test(tc, test_store_newer_version_refused);
    tcase_add_test(tc, test_store_garbage_refused_untouched);
    tcase_add_test(tc, test_store_foreign_database_refused);
    tcase_add_test(tc, test_store_readonly_missing);
    tcase_add_test(tc, test_store_ingest_every_kind);
    tcase_add_test(tc, test_store_duplicate_seq_ignored);
    tcase_add_test(tc, test_store_gaps_and_seen);
    tcase_add_test(tc, test_store_malformed_and_token);
    tcase_add_test(tc, test_store_secrets);
    tcase_add_test(tc, test_store_old_database_gets_keys);
    tcase_add_test(tc, test_store_database_private);
    tcase_add_test(tc, test_store_spool_file);
    tcase_add_test(tc, test_store_query_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(store_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
