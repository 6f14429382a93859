/* SPDX-License-Identifier: MIT
 * store_test.c -- the daemon's store, ingest and query code on real database
 * files: creation, migration of a real version 1 file (tests/unit/store_v1.sql)
 * and refusing it read-only, refusing newer and foreign files without
 * touching them, what every event kind stores, duplicates, gaps, tokens,
 * spool files and the text views. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/checks/compare/diff.h"
#include "daemon/ingest/ingest.h"
#include "daemon/obs/obs.h"
#include "daemon/store/blob.h"
#include "daemon/store/pack.h"
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

/* A leaf decoded from the stored bodies, its strings copied. */
typedef struct got_leaves {
    int n;       /* leaves under the key in all the bodies read */
    int matched; /* ... of which had the path asked for */
    tp_leaf l;   /* the last of those; its strings point below */
    char path[96], dtype[16], device[16], str[16];
} got_leaves;

/* body_leaves decodes the leaves array under key ("leaves", "grads",
 * "manifest") in the body of every stored event of the given kinds (an SQL
 * condition), as the readers do (daemon/obs/obs.c): events.body is the only
 * copy, unpacked (daemon/store/pack.h).  Counts them and keeps the last
 * whose path is path (NULL: none). */
static got_leaves body_leaves(tpd_store *s, const char *kinds, const char *key, const char *path)
{
    got_leaves g;
    sqlite3_stmt *st = NULL;
    char sql[256];
    tp_buf scratch;
    tp_buf_init(&scratch);
    memset(&g, 0, sizeof g);
    snprintf(sql, sizeof sql, "SELECT body FROM events WHERE %s ORDER BY id", kinds);
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const uint8_t *body;
        size_t len;
        tp_mpr r;
        uint32_t n;
        ck_assert_int_eq(tpd_body_read(tpd_store_leafdict(s), sqlite3_column_blob(st, 0),
                                       (size_t)sqlite3_column_bytes(st, 0), &scratch, &body, &len),
                         TP_OK);
        if (tp_mp_map_value(body, len, key, &r) != TP_OK) continue;
        ck_assert_int_eq(tp_mpr_array(&r, &n), TP_OK);
        for (uint32_t i = 0; i < n; i++) {
            tp_leaf l;
            ck_assert_int_eq(tp_leaf_read(&r, &l), TP_OK);
            g.n++;
            if (path == NULL || l.path_len != strlen(path) || memcmp(l.path, path, l.path_len))
                continue;
            g.matched++;
            g.l = l;
            snprintf(g.path, sizeof g.path, "%.*s", (int)l.path_len, l.path);
            snprintf(g.dtype, sizeof g.dtype, "%.*s", (int)l.dtype_len, l.dtype ? l.dtype : "");
            snprintf(g.device, sizeof g.device, "%.*s", (int)l.device_len,
                     l.device ? l.device : "");
            snprintf(g.str, sizeof g.str, "%.*s", (int)l.s_len, l.s ? l.s : "");
            g.l.path = g.path, g.l.dtype = g.dtype, g.l.device = g.device, g.l.s = g.str;
        }
    }
    sqlite3_finalize(st);
    tp_buf_free(&scratch);
    return g;
}

/* all_leaves counts the leaves the stored bodies hold: snapshot and sched
 * "leaves", step "grads", save and load "manifest" (what version 1 also
 * copied into its leaves table). */
static int all_leaves(tpd_store *s)
{
    return body_leaves(s, "kind IN ('snapshot', 'sched')", "leaves", NULL).n +
           body_leaves(s, "kind = 'step'", "grads", NULL).n +
           body_leaves(s, "kind IN ('save', 'load')", "manifest", NULL).n;
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

/* ---- query diff, from the store ---- */

/* diff_text is query diff's report of run 1 against itself. */
static void diff_text(tpd_store *s, tpd_str *out)
{
    char why[512] = "";
    bool match = false;
    tpd_diff_side a = {1, -1}, b = {1, -1};
    tp_err rc = tpd_golden_diff(s, a, b, false, out, &match, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "diff: %s: %s", tp_strerror(rc), why);
    ck_assert_msg(match, "%s", out->s);
    ck_assert_msg(strstr(out->s, "the executions match at every step"), "%s", out->s);
}

/* query diff loads its second side on a second connection when it can,
 * and on the first when that cannot be opened (here: the file is gone
 * from its folder, while the first connection holds it open): the same
 * report either way.  A run it does not hold is refused either way. */
START_TEST(test_store_diff_two_connections)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    char key[TP_EXEC_KEY_LEN + 1], why[512] = "", wal[720];
    int64_t run, exec = keyed_exec(s, &run, key);
    tpd_str two = {0}, one = {0}, none = {0};
    tpd_diff_side a = {1, -1}, absent = {99, -1};
    bool match;
    tb t;
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, exec, 4242, 0, NULL, key);
    tb_all(&t, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
    tpd_ingest_destroy(in);
    diff_text(s, &two);
    ck_assert_int_eq(tpd_golden_diff(s, a, absent, false, &none, &match, why, sizeof why),
                     TP_ENOENT);
    ck_assert_msg(strstr(why, "99"), "%s", why);
    snprintf(wal, sizeof wal, "%s-wal", db);
    ck_assert_int_eq(unlink(db), 0);
    unlink(wal);
    diff_text(s, &one);
    ck_assert_str_eq(one.s, two.s);
    ck_assert_int_eq(tpd_golden_diff(s, a, absent, false, &none, &match, why, sizeof why),
                     TP_ENOENT);
    ck_assert_ptr_null(none.s);
    tpd_str_free(&two);
    tpd_str_free(&one);
    tpd_store_close(s);
}
END_TEST

/* ---- a load that leaves out what a verdict does not compare ---- */

/* A load keeping (tpd_obs_load_keeping) holds what a whole load holds but
 * the induced components of the start-of-step snapshots at the dropped
 * steps: the same items otherwise, in the same order, the same light steps
 * and snapshots; and a save at a dropped step anchors nothing, as it
 * anchors nothing where the whole load holds the state. */
START_TEST(test_store_load_keeping)
{
    tpd_store *s = open_store(0);
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    char key[TP_EXEC_KEY_LEN + 1], why[512] = "";
    int64_t run, exec = keyed_exec(s, &run, key), drop[] = {1, 2, 4, 9};
    tpd_obs_keep keep = {drop, 4};
    tpd_run *whole = NULL, *kept = NULL;
    const tpd_items *w, *k;
    uint64_t seq = 1;
    size_t j = 0, left = 0, anchors = 0;
    tb t;
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, exec, 4242, 0, NULL, key);
    tb_hello(&t, seq++, 0);
    for (int64_t step = 0; step < 5; step++) {
        /* model and optimizer state at every step, as a golden run */
        tb_snapshot_why(&t, seq++, step, 3, "backward", step % 2 ? "optimizer.state" : "model");
        tb_step(&t, seq++, step, true, 2, 1.0, 0.1);
        tb_step(&t, seq++, step, false, 0, 0.5, 0.1);
        /* saves at a dropped step, a kept one, and after the last step */
        if (step == 2 || step == 3) tb_snapshot_why(&t, seq++, step, 2, "save", "model");
    }
    tb_snapshot_why(&t, seq++, 5, 2, "save", "model");
    tb_bye(&t, seq, seq - 1, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    tb_free(&t);
    tpd_ingest_destroy(in);
    ck_assert_int_eq(tpd_obs_load(s, run, &whole, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_obs_load_keeping(s, run, &keep, &kept, why, sizeof why), TP_OK);
    ck_assert_uint_eq(whole->nexecs, 1);
    ck_assert_uint_eq(kept->execs[0].nprocs, whole->execs[0].nprocs);
    w = &whole->execs[0].procs[0].timeline;
    k = &kept->execs[0].procs[0].timeline;
    for (size_t i = 0; i < w->n; i++) {
        const tpd_item *x = &w->v[i];
        bool dropped =
            !x->anchor && tpd_induced(x) && (x->step == 1 || x->step == 2 || x->step == 4);
        if (dropped) {
            left++;
            continue;
        }
        ck_assert_uint_lt(j, k->n);
        ck_assert_int_eq(k->v[j].step, x->step);
        ck_assert_str_eq(k->v[j].path, x->path);
        ck_assert_int_eq(k->v[j].anchor, x->anchor);
        ck_assert(memcmp(k->v[j].v.digest, x->v.digest, sizeof x->v.digest) == 0);
        j++;
    }
    ck_assert_uint_eq(j, k->n);
    ck_assert_uint_eq(left, 3 * 3); /* three tensors at each of steps 1, 2 and 4 */
    /* the save after the last step anchors its two tensors in both; the one
     * at step 2 in neither */
    for (size_t i = 0; i < k->n; i++) {
        ck_assert(!k->v[i].anchor || k->v[i].step == 5);
        anchors += k->v[i].anchor;
    }
    ck_assert_uint_eq(anchors, 2);
    ck_assert_uint_eq(k->nlight, w->nlight);
    ck_assert_uint_eq(kept->execs[0].procs[0].nsnaps, whole->execs[0].procs[0].nsnaps);
    ck_assert_int_eq(kept->execs[0].procs[0].steps, whole->execs[0].procs[0].steps);
    tpd_obs_free(whole);
    tpd_obs_free(kept);
    tpd_store_close(s);
}
END_TEST

/* ---- open, migrate, refuse ---- */

START_TEST(test_store_open_creates_latest)
{
    static const char *const tables[] = {"runs", "executions", "processes", "events",  "leafdefs",
                                         "gaps", "blobs",      "verdicts",  "counters"};
    tpd_store *s = open_store(0);
    char buf[64];
    ck_assert_int_eq(TPD_STORE_VERSION, 3);
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
    /* version 2: no copy of the leaves beside the bodies; every execution
     * has a key; version 3: leafdefs */
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'leaves%'"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"),
                     (int64_t)(sizeof tables / sizeof tables[0]));
    ck_assert_int_eq(
        scalar(s, "SELECT count(*) FROM pragma_table_info('executions') WHERE name = 'key'"), 1);
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
    char why[256] = "", sql[64];
    tpd_store_close(s);
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", TPD_STORE_VERSION + 1);
    raw_exec(db, sql);
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
    got_leaves g;
    tb t;
    exec = keyed_exec(s, &run, key);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, run, exec, 4242, 0, NULL, key);
    ck_assert_int_eq(tb_all(&t, 0), 16);
    tb_bye(&t, 16, 17, 0);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    ck_assert_int_eq(res.events, 17);
    ck_assert_int_eq(res.dup, 0);
    ck_assert_int_eq(res.exec, exec);
    ck_assert_int_eq(res.pid, 4242);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 17);
    ck_assert_int_eq(scalar(s, "SELECT count(DISTINCT kind) FROM events"), TP_K__COUNT - 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events WHERE kind = 'cover'"), 1);
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
    ck_assert_int_eq(scalar(s, "SELECT sent FROM processes"), 17);
    ck_assert_int_eq(scalar(s, "SELECT dropped FROM processes"), 0);
    ck_assert_int_eq(scalar(s, "SELECT nevents FROM processes"), 17);
    ck_assert_int_eq(scalar(s, "SELECT max_seq FROM processes"), 16);
    /* the leaves, decoded from the bodies: snapshot 3 tensors + 5 values +
     * 1 digest, grads 2, sched 1, save and load manifests 2 each */
    ck_assert_int_eq(all_leaves(s), 9 + 2 + 1 + 2 + 2);
    ck_assert_int_eq(body_leaves(s, "kind = 'snapshot'", "leaves", NULL).n, 9);
    ck_assert_int_eq(body_leaves(s, "kind = 'step'", "grads", NULL).n, 2);
    ck_assert_int_eq(body_leaves(s, "kind IN ('save', 'load')", "manifest", NULL).n, 4);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "model.layer1.weight");
    ck_assert_int_eq(g.matched, 1);
    ck_assert_int_eq(g.l.kind, 't');
    ck_assert_str_eq(g.dtype, "float32");
    ck_assert_int_eq(g.l.ndim, 2);
    ck_assert(g.l.shape[0] == 64 && g.l.shape[1] == 33);
    tb_digest(d, 7919);
    ck_assert(memcmp(g.l.digest, d, sizeof d) == 0);
    ck_assert(g.l.stats.sum == 0.5 && g.l.stats.l2 == 2.5 && g.l.stats.maxabs == 0.25);
    ck_assert_int_eq(g.l.stats.nonfinite, 1);
    ck_assert_str_eq(g.device, "cpu");
    ck_assert(!g.l.blob);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "model.layer0.weight");
    ck_assert(g.matched == 1 && g.l.blob);
    g = body_leaves(s, "kind = 'step'", "grads", "grad.layer1.weight");
    ck_assert(g.matched == 1 && g.l.kind == 't' && g.l.stats.nonfinite == 1);
    g = body_leaves(s, "kind IN ('save', 'load')", "manifest", "model.layer1.weight");
    ck_assert_int_eq(g.matched, 2);
    ck_assert(g.l.shape[0] == 64 && g.l.shape[1] == 33);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "optimizer.group[0].lr");
    ck_assert(g.matched == 1 && g.l.kind == 'v' && g.l.vtype == TP_V_FLOAT && g.l.f == 0.1);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "optimizer.group[0].nesterov");
    ck_assert(g.matched == 1 && g.l.vtype == TP_V_BOOL && g.l.b);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "optimizer.cls");
    ck_assert(g.matched == 1 && g.l.vtype == TP_V_STR);
    ck_assert_str_eq(g.str, "SGD");
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "scaler.none");
    ck_assert(g.matched == 1 && g.l.kind == 'v' && g.l.vtype == TP_V_NIL);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "rng.torch_cpu");
    ck_assert(g.matched == 1 && g.l.kind == 'd' && g.l.nitems == 5056);
    tb_digest(d, 42);
    ck_assert(memcmp(g.l.digest, d, sizeof d) == 0);
    g = body_leaves(s, "kind = 'sched'", "leaves", "scheduler.last_epoch");
    ck_assert(g.matched == 1 && g.l.vtype == TP_V_INT && g.l.i == 1);
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
    ck_assert_int_eq(v, 17);
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
    ck_assert_int_eq(tb_all(&t, 0), 16);
    tb_end(&t);
    ingest_ok(in, &t, &res);
    ingest_ok(in, &t, &res);
    ck_assert_int_eq(res.events, 0);
    ck_assert_int_eq(res.dup, 16);
    /* a batch overlapping the stored ones: only the new seq counts */
    tb_begin_key(&t2, run, exec, 7, 0, NULL, key);
    tb_backward(&t2, 15, 1, 1.0, 1);
    tb_backward(&t2, 16, 1, 1.0, 1);
    tb_end(&t2);
    ingest_ok(in, &t2, &res);
    ck_assert_int_eq(res.events, 1);
    ck_assert_int_eq(res.dup, 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 17);
    ck_assert_int_eq(scalar(s, "SELECT nevents FROM processes"), 17);
    ck_assert_int_eq(all_leaves(s), 16); /* those of the first batch, once */
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM processes"), 1);
    ck_assert_int_eq(tpd_store_counter_get(s, "duplicates", &v), TP_OK);
    ck_assert_int_eq(v, 17);
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

/* ---- version 1 files ---- */

extern const char store_v1_sql[]; /* tests/unit/store_v1.sql, embedded */

#define V1_KEY "00112233445566778899aabbccddeeff" /* execution 1's, when keyed */
#define V1_PID 500

/* make_v1 writes at db a version 1 database (tests/unit/store_v1.sql) with
 * what a build of that version stored for one run: a run, an execution
 * (keyed: with the key column those builds added, and V1_KEY), a process
 * with its hello and bye, the events of a real batch (hello, snapshot,
 * backward, a step pre and post, sched, save, bye; one seq lost) with their
 * leaves rows, a blob, a gap, a verdict and counters.  Returns the number
 * of leaves rows. */
static int64_t make_v1(bool keyed)
{
    static const char rows[] =
        "INSERT INTO runs(name, check_kind, params, created_ns) VALUES('old', 'health', '{}', 7);"
        "INSERT INTO processes(exec_id, pid, ppid, rank, world, local_rank, role, agent, python,"
        " torch, argv, cwd, hello_ns, bye_ns, bye_reason, bye_code, sent, dropped, errors,"
        " spooled, nevents, max_seq) VALUES(1, 500, 1, 0, 2, 0, 'main', '0.1.0', '3.11.7',"
        " '2.13.0', '[\"python\",\"train.py\"]', '/home/u/proj', 1000, 1009, 'exit', 0, 10, 0,"
        " 0, 0, 9, 9);"
        "INSERT INTO blobs(digest, size, dtype, shape) VALUES(x'00ff', 100, 'uint8', '[100]');"
        "INSERT INTO gaps(exec_id, pid, first_seq, last_seq) VALUES(1, 500, 8, 8);"
        "INSERT INTO verdicts(run_id, check_kind, outcome, step, path, report, text, created_ns)"
        " VALUES(1, 'health', 'ERROR', 1, 'loss', '{}', 'events were lost', 8);"
        "INSERT INTO counters(name, value) VALUES('batches', 1), ('events', 9);";
    sqlite3 *h = NULL;
    sqlite3_stmt *ev = NULL, *lf = NULL;
    tp_batch b;
    int64_t nleaves = 0;
    uint64_t q = 0;
    tb t;
    tb_begin_key(&t, 1, 1, V1_PID, 0, NULL, V1_KEY);
    tb_hello(&t, q++, 0);
    tb_snapshot(&t, q++, 0, 3);
    tb_backward(&t, q++, 0, 1.5, 1);
    tb_step(&t, q++, 0, true, 2, 2.0, 0.1);
    tb_step(&t, q++, 0, false, 0, 0.05, 0.1);
    tb_sched(&t, q++, 1);
    tb_saveload(&t, q++, 1, TP_K_SAVE);
    tb_backward(&t, q++, 1, 1.25, 1);
    q++; /* one lost event */
    tb_bye(&t, q, q + 1, 0);
    tb_end(&t);
    ck_assert_int_eq(tp_batch_decode(t.buf.data, t.buf.len, &b, NULL, 0), TP_OK);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, store_v1_sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    if (keyed) {
        ck_assert_int_eq(
            sqlite3_exec(h, "ALTER TABLE executions ADD COLUMN key TEXT", NULL, NULL, NULL),
            SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(h,
                                      "INSERT INTO executions(run_id, role, argv, created_ns,"
                                      " finished_ns, exit_status, key) VALUES(1, 'main',"
                                      " '[\"python\",\"train.py\"]', 7, 9, 0, '" V1_KEY "')",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    } else {
        ck_assert_int_eq(sqlite3_exec(h,
                                      "INSERT INTO executions(run_id, role, argv, created_ns,"
                                      " finished_ns, exit_status) VALUES(1, 'main',"
                                      " '[\"python\",\"train.py\"]', 7, 9, 0)",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    }
    ck_assert_int_eq(sqlite3_exec(h, rows, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "INSERT INTO events(exec_id, pid, seq, time_ns, step,"
                                        " kind, body) VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6)",
                                        -1, &ev, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "INSERT INTO leaves(event_id, ord, path, kind, value,"
                                        " vtype, nitems, src) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                                        " ?8)",
                                        -1, &lf, NULL),
                     SQLITE_OK);
    for (size_t i = 0; i < b.n; i++) {
        const tp_event *e = &b.ev[i];
        const char *key = e->kind == TP_K_STEP                           ? "grads"
                          : e->kind == TP_K_SAVE || e->kind == TP_K_LOAD ? "manifest"
                                                                         : "leaves";
        tp_mpr r;
        uint32_t n = 0;
        int64_t id;
        sqlite3_bind_int64(ev, 1, V1_PID);
        sqlite3_bind_int64(ev, 2, (int64_t)e->seq);
        sqlite3_bind_int64(ev, 3, (int64_t)e->time_ns);
        sqlite3_bind_int64(ev, 4, e->step);
        sqlite3_bind_text(ev, 5, tp_kind_name(e->kind), -1, SQLITE_STATIC);
        sqlite3_bind_blob(ev, 6, e->body, (int)e->body_len, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(ev), SQLITE_DONE);
        sqlite3_reset(ev);
        id = sqlite3_last_insert_rowid(h);
        /* the leaves rows version 1 copied out of the body */
        if (tp_mp_map_value(e->body, e->body_len, key, &r) == TP_OK)
            ck_assert_int_eq(tp_mpr_array(&r, &n), TP_OK);
        for (uint32_t k = 0; k < n; k++) {
            tp_leaf l;
            char kind[2] = {0};
            ck_assert_int_eq(tp_leaf_read(&r, &l), TP_OK);
            kind[0] = l.kind;
            sqlite3_clear_bindings(lf);
            sqlite3_bind_int64(lf, 1, id);
            sqlite3_bind_int64(lf, 2, k);
            sqlite3_bind_text(lf, 3, l.path, (int)l.path_len, SQLITE_TRANSIENT);
            sqlite3_bind_text(lf, 4, kind, 1, SQLITE_TRANSIENT);
            if (l.kind == 'v' && l.vtype == TP_V_INT) {
                sqlite3_bind_int64(lf, 5, l.i);
                sqlite3_bind_text(lf, 6, "int", -1, SQLITE_STATIC);
            }
            if (l.kind == 'd') sqlite3_bind_int64(lf, 7, (int64_t)l.nitems);
            sqlite3_bind_text(lf, 8, key, -1, SQLITE_STATIC);
            ck_assert_int_eq(sqlite3_step(lf), SQLITE_DONE);
            sqlite3_reset(lf);
            nleaves++;
        }
    }
    sqlite3_finalize(ev);
    sqlite3_finalize(lf);
    ck_assert_int_eq(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
    tp_batch_free(&b);
    tb_free(&t);
    return nleaves;
}

/* dump appends to f every row that sql returns on h, each value typed. */
static void dump(FILE *f, sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    fprintf(f, "%s\n", sql);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *p;
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL:
                fputs(" NULL", f);
                break;
            case SQLITE_INTEGER:
                fprintf(f, " %lld", (long long)sqlite3_column_int64(st, i));
                break;
            case SQLITE_FLOAT:
                fprintf(f, " %.17g", sqlite3_column_double(st, i));
                break;
            case SQLITE_TEXT:
                fprintf(f, " '%s'", (const char *)sqlite3_column_text(st, i));
                break;
            default:
                p = sqlite3_column_blob(st, i);
                fputs(" x'", f);
                for (int k = 0; k < sqlite3_column_bytes(st, i); k++) fprintf(f, "%02x", p[k]);
                fputs("'", f);
            }
        }
        fputs("\n", f);
    }
    sqlite3_finalize(st);
}

/* dump_kept returns (free() it) every row of every table version 2 keeps
 * (the executions without their key, which a migration may add), read from
 * the database at path, or through s when not NULL.  A connection of its
 * own is read-write, so that closing it removes the -wal and -shm files. */
static char *dump_kept(tpd_store *s, const char *path)
{
    static const char *const sqls[] = {
        "SELECT * FROM runs ORDER BY rowid",
        "SELECT id, run_id, role, argv, created_ns, finished_ns, exit_status, exit_signal"
        " FROM executions ORDER BY rowid",
        "SELECT * FROM processes ORDER BY rowid",
        "SELECT * FROM events ORDER BY rowid",
        "SELECT * FROM gaps ORDER BY rowid",
        "SELECT * FROM blobs ORDER BY rowid",
        "SELECT * FROM verdicts ORDER BY rowid",
        "SELECT * FROM counters ORDER BY rowid",
    };
    sqlite3 *h = NULL;
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    ck_assert_ptr_nonnull(f);
    if (s == NULL)
        ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    for (size_t i = 0; i < sizeof sqls / sizeof sqls[0]; i++)
        dump(f, s ? tpd_store_db(s) : h, sqls[i]);
    fclose(f);
    sqlite3_close(h);
    return out;
}

/* raw_scalar runs a query returning one integer on the file at path,
 * without the store (read-write, as dump_kept). */
static int64_t raw_scalar(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -999;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

START_TEST(test_store_v1_migrates)
{
    /* a version 1 file as the last builds of that version left it (with
     * execution keys), opened for writing: version 3 in one step, the
     * leaves table gone, every other row kept and read by the queries, the
     * leaves it held still in the bodies; a second open changes nothing */
    tpd_store *s, *ro;
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    tpd_str out;
    char why[256] = "", *before, *after;
    int64_t nleaves = make_v1(true), schema_ver;
    const char *o;
    got_leaves g;
    tb t;
    ck_assert_int_eq(nleaves, 9 + 2 + 1 + 2); /* snapshot, grads, sched, save manifest */
    ck_assert_int_eq(raw_scalar(db, "PRAGMA user_version"), 1);
    ck_assert_int_eq(raw_scalar(db, "SELECT count(*) FROM leaves"), nleaves);
    before = dump_kept(NULL, db);

    s = open_store(0);
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), 3);
    ck_assert_int_eq(scalar(s, "PRAGMA application_id"), TPD_STORE_APP_ID);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'leaves%'"), 0);
    after = dump_kept(s, NULL);
    ck_assert_str_eq(after, before);
    free(after);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 9);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM executions WHERE key = '" V1_KEY "'"), 1);
    /* what the table held, the bodies hold */
    ck_assert_int_eq(all_leaves(s), nleaves);
    g = body_leaves(s, "kind = 'snapshot'", "leaves", "rng.torch_cpu");
    ck_assert(g.matched == 1 && g.l.kind == 'd' && g.l.nitems == 5056);
    g = body_leaves(s, "kind = 'save'", "manifest", "model.layer1.weight");
    ck_assert(g.matched == 1 && g.l.shape[1] == 33);
    schema_ver = scalar(s, "PRAGMA schema_version");
    /* the execution's agents may still deliver: a batch with its key */
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(&t, 1, 1, V1_PID, 0, NULL, V1_KEY);
    tb_backward(&t, 8, 1, 1.0, 1); /* the lost seq */
    tb_end(&t);
    ingest_ok(in, &t, &res);
    ck_assert_int_eq(res.events, 1);
    tb_free(&t);
    tpd_ingest_destroy(in);
    tpd_store_close(s);

    /* migrated once: a second open for writing and a reader find version 3 */
    s = open_store(0);
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), 3);
    ck_assert_int_eq(scalar(s, "PRAGMA schema_version"), schema_ver);
    tpd_store_close(s);
    ro = open_store(TPD_STORE_READONLY);
    tpd_str_init(&out);
    ck_assert_int_eq(tpd_query(ro, "runs", 0, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "old") && strstr(o, "health") && strstr(o, "ERROR"), "%s", o);
    tpd_str_reset(&out);
    ck_assert_int_eq(tpd_query(ro, "run", 1, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "process 500: rank 0/2, role main, python 3.11.7, torch 2.13.0"), "%s",
                  o);
    ck_assert_msg(strstr(o, "events 10, bye exit (code 0), sent 10, dropped 0"), "%s", o);
    ck_assert_msg(strstr(o, "kinds: hello 1 snapshot 1 backward 3 step 2 sched 1 save 1 bye 1"),
                  "%s", o);
    ck_assert_msg(strstr(o, "gaps none"), "%s", o); /* computed from the events: seq 8 came */
    tpd_str_reset(&out);
    ck_assert_int_eq(tpd_query(ro, "steps", 1, &out, why, sizeof why), TP_OK);
    o = tpd_str_cstr(&out);
    ck_assert_msg(strstr(o, "  0      1.5          1        2            0.05         0.1,0.01"),
                  "%s", o);
    tpd_str_free(&out);
    tpd_store_close(ro);
    free(before);
}
END_TEST

START_TEST(test_store_v1_before_keys_migrates)
{
    /* a version 1 file made before execution keys: the migration adds the
     * column too; its execution takes no more batches, new ones do */
    char key[TP_EXEC_KEY_LEN + 1], why[256], *before, *after;
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    tpd_store *s;
    int64_t exec, nleaves = make_v1(false);
    tb t;
    ck_assert_int_eq(
        raw_scalar(db, "SELECT count(*) FROM pragma_table_info('executions') WHERE name = 'key'"),
        0);
    before = dump_kept(NULL, db);
    s = open_store(0);
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), 3);
    ck_assert_int_eq(
        scalar(s, "SELECT count(*) FROM pragma_table_info('executions') WHERE name = 'key'"), 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM executions WHERE key IS NULL"), 1);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'leaves%'"), 0);
    after = dump_kept(s, NULL);
    ck_assert_str_eq(after, before);
    ck_assert_int_eq(all_leaves(s), nleaves);
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
    s = open_store(0); /* version 3: nothing to do */
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events"), 10);
    tpd_store_close(s);
    free(before);
    free(after);
}
END_TEST

START_TEST(test_store_v1_readonly_refused)
{
    /* a reader never migrates: it says which version and what to do, and
     * the file stays version 1 */
    tpd_store *s = NULL;
    char why[256] = "";
    int64_t nleaves = make_v1(true);
    ck_assert_int_eq(tpd_store_open(&s, db, TPD_STORE_READONLY, why, sizeof why), TP_EVERSION);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(why, "database version 1 is older") && strstr(why, "serve"), "why: %s",
                  why);
    ck_assert_int_eq(raw_scalar(db, "PRAGMA user_version"), 1);
    ck_assert_int_eq(raw_scalar(db, "SELECT count(*) FROM leaves"), nleaves);
}
END_TEST

/* file_bytes returns the bytes of the file at path (free() them). */
static uint8_t *file_bytes(const char *path, size_t *n)
{
    struct stat sb;
    uint8_t *p;
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fstat(fileno(f), &sb), 0);
    p = malloc((size_t)sb.st_size + 1);
    *n = fread(p, 1, (size_t)sb.st_size, f);
    ck_assert_int_eq(*n, sb.st_size);
    fclose(f);
    return p;
}

/* v1_unchanged checks that the file at db is still the version 1 file
 * whose bytes are orig (n of them) and whose rows dump_kept gave as rows. */
static void v1_unchanged(const uint8_t *orig, size_t n, const char *rows, int64_t nleaves)
{
    size_t m;
    uint8_t *now = file_bytes(db, &m);
    char *dumped;
    ck_assert(m == n && memcmp(orig, now, n) == 0);
    free(now);
    ck_assert_int_eq(raw_scalar(db, "PRAGMA user_version"), 1);
    ck_assert_int_eq(raw_scalar(db, "SELECT count(*) FROM leaves"), nleaves);
    dumped = dump_kept(NULL, db);
    ck_assert_str_eq(dumped, rows);
    free(dumped);
}

START_TEST(test_store_v1_migration_fails_untouched)
{
    /* a migration that cannot write reports why and leaves the file as it
     * was: another connection holds the write lock (past the busy timeout),
     * or the file is read-only (not for root, whom modes do not stop) */
    tpd_store *s = NULL;
    sqlite3 *h = NULL;
    char why[256] = "", *rows;
    int64_t nleaves = make_v1(true);
    size_t n;
    uint8_t *orig = file_bytes(db, &n);
    tp_err rc;
    rows = dump_kept(NULL, db);

    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    rc = tpd_store_open(&s, db, 0, why, sizeof why);
    ck_assert_msg(rc == TP_EDB, "%s: %s", tp_strerror(rc), why);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(why, "cannot migrate the database from version 1 to 3"), "why: %s", why);
    ck_assert_int_eq(sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
    v1_unchanged(orig, n, rows, nleaves);

    if (geteuid() != 0) {
        char side[700];
        ck_assert_int_eq(chmod(db, 0400), 0);
        why[0] = '\0';
        rc = tpd_store_open(&s, db, 0, why, sizeof why);
        ck_assert_msg(rc == TP_EIO && strstr(why, "read-only"), "%s: %s", tp_strerror(rc), why);
        ck_assert_ptr_null(s);
        /* nothing beside it either: -wal and -shm files as unwritable as
         * the database would stop the next writer after a chmod */
        ck_assert_int_ne(access(td_path(side, sizeof side, dir, "runs.db-wal"), F_OK), 0);
        ck_assert_int_ne(access(td_path(side, sizeof side, dir, "runs.db-shm"), F_OK), 0);
        ck_assert_int_eq(chmod(db, 0600), 0);
        v1_unchanged(orig, n, rows, nleaves);
    }
    /* writable again: it migrates */
    s = open_store(0);
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), 3);
    tpd_store_close(s);
    free(orig);
    free(rows);
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
    ck_assert_int_eq(tb_all(&a, 0), 16);
    tb_end(&a);
    tb_begin_key(&c, run, exec, 12, 0, NULL, NULL); /* no key: refused here too */
    tb_backward(&c, 0, 0, 1.0, 1);
    tb_end(&c);
    tb_begin_key(&b, run, exec, 11, 0, NULL, key);
    tb_backward(&b, 15, 1, 1.0, 1); /* a duplicate */
    tb_backward(&b, 18, 1, 1.0, 1); /* leaves 16, 17 missing */
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
    ck_assert_int_eq(r.events, 17);
    ck_assert_int_eq(r.dup, 1);
    ck_assert(why[0]);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM processes WHERE pid = 12"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM gaps WHERE exec_id = 1"), 1);
    ck_assert_int_eq(scalar(s, "SELECT first_seq * 100 + last_seq FROM gaps"), 1617);
    /* again: everything is a duplicate */
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &r, why, sizeof why), TP_OK);
    ck_assert_int_eq(r.events, 0);
    ck_assert_int_eq(r.dup, 18);
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
    tcase_add_test(tc, test_store_load_keeping);
    tcase_add_test(tc, test_store_open_creates_latest);
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
    tcase_add_test(tc, test_store_v1_migrates);
    tcase_add_test(tc, test_store_v1_before_keys_migrates);
    tcase_add_test(tc, test_store_v1_readonly_refused);
    tcase_add_test(tc, test_store_v1_migration_fails_untouched);
    tcase_add_test(tc, test_store_database_private);
    tcase_add_test(tc, test_store_spool_file);
    tcase_add_test(tc, test_store_query_text);
    tcase_add_test(tc, test_store_diff_two_connections);
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
