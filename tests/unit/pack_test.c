/* SPDX-License-Identifier: MIT
 * pack_test.c -- packed event bodies (daemon/store/pack.h) and the leaf
 * definitions they name (daemon/store/leafdict.h), on real database files:
 * every kind of body comes back byte for byte, a tensor costs 38 bytes, a
 * definition written in a transaction or savepoint that rolls back is
 * forgotten with it, a packed body naming a definition the database lacks
 * is an error the readers say, and a version 2 database (its bodies not
 * packed, tests/unit/store_v2.sql) is migrated and read as it was. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ingest/ingest.h"
#include "daemon/store/leafdict.h"
#include "daemon/store/pack.h"
#include "daemon/store/rows.h"
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

static int64_t scalar(tpd_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -999;
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* stored_form is tpd_body_stored on e, checked to unpack to e's body. */
static size_t stored_form(tpd_store *s, const tp_event *e, bool *packed)
{
    tp_buf p, back, again;
    const uint8_t *out;
    size_t n;
    tp_buf_init(&p);
    tp_buf_init(&back);
    tp_buf_init(&again);
    ck_assert_int_eq(
        tpd_body_stored(tpd_store_leafdict(s), e->kind, e->body, e->body_len, &p, &back, &out, &n),
        TP_OK);
    *packed = tpd_body_packed(out, n);
    if (*packed) {
        ck_assert_int_eq(tpd_body_unpack(tpd_store_leafdict(s), out, n, &again), TP_OK);
        ck_assert_int_eq(again.len, e->body_len);
        ck_assert(memcmp(again.data, e->body, e->body_len) == 0);
    } else {
        ck_assert(out == e->body && n == e->body_len);
    }
    tp_buf_free(&p);
    tp_buf_free(&back);
    tp_buf_free(&again);
    return n;
}

START_TEST(test_pack_every_kind_round_trips)
{
    tpd_store *s = open_store(0);
    tp_batch b;
    bool packed;
    tb t;
    tb_begin(&t, 1, 1, 7, 0, NULL);
    tb_all(&t, 0);
    tb_snapshot(&t, 100, 2, 40);
    tb_end(&t);
    ck_assert_int_eq(tp_batch_decode(t.buf.data, t.buf.len, &b, NULL, 0), TP_OK);
    for (size_t i = 0; i < b.n; i++) {
        const tp_event *e = &b.ev[i];
        size_t n = stored_form(s, e, &packed);
        /* only bodies with leaves pack: snapshot, step pre (grads), sched,
         * save and load (manifest) */
        if (packed)
            ck_assert(e->kind == TP_K_SNAPSHOT || e->kind == TP_K_STEP || e->kind == TP_K_SCHED ||
                      e->kind == TP_K_SAVE || e->kind == TP_K_LOAD);
        if (e->seq == 100) {
            /* 40 tensors and 6 other leaves: each tensor 38 to 40 bytes
             * (37 of values, a key of 1 to 3 bytes) ... */
            ck_assert(packed);
            ck_assert_msg(n < e->body_len / 2, "%zu of %zu", n, e->body_len);
        }
    }
    /* the same snapshot again: every definition is known, none is added */
    {
        int64_t defs = scalar(s, "SELECT count(*) FROM leafdefs");
        size_t n = stored_form(s, &b.ev[b.n - 1], &packed);
        ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), defs);
        /* ... 38 or 39 here (ids below 64), and 6 other leaves */
        ck_assert_msg(n <= 40 * 39 + 6 * 12 + 32, "%zu", n);
    }
    tp_batch_free(&b);
    tb_free(&t);
    tpd_store_close(s);
}
END_TEST

/* one_leaf writes the body {"why": "backward", "leaves": [leaf]} where the
 * tensor leaf has maxabs m and nonfinite nf; dkind NULL: 11 elements. */
static void one_leaf(tp_buf *b, double m, uint64_t nf, const char *dkind)
{
    int64_t shape[1] = {3};
    uint8_t d[16];
    tp_stats st = {0.1, 0.2, m, nf};
    tp_buf_reset(b);
    tb_digest(d, 99);
    tp_mp_map(b, 2);
    tp_mp_cstr(b, "why");
    tp_mp_cstr(b, "backward");
    tp_mp_cstr(b, "leaves");
    tp_mp_array(b, 1);
    tp_enc_leaf_tensor_kind(b, "model.w", 7, "float32", shape, 1, d, &st, "cpu", false, dkind);
}

START_TEST(test_pack_tensor_forms)
{
    /* a maxabs that is a float32, one that is not, a nonfinite count that
     * is not a fixint, a leaf with its digest kind: all exact */
    static const double maxabs[] = {0.25, 0.1, 3.0e38, 1e300, 0.0, -0.0, 1.401298464324817e-45};
    static const uint64_t nonfinite[] = {0, 1, 127, 128, 1u << 20};
    tpd_store *s = open_store(0);
    tp_buf body;
    tp_buf_init(&body);
    for (size_t i = 0; i < sizeof maxabs / sizeof maxabs[0]; i++)
        for (size_t j = 0; j < sizeof nonfinite / sizeof nonfinite[0]; j++)
            for (int k = 0; k < 2; k++) {
                tp_event e = {.kind = TP_K_SNAPSHOT};
                bool packed;
                size_t n;
                one_leaf(&body, maxabs[i], nonfinite[j], k ? "dev1" : NULL);
                e.body = body.data;
                e.body_len = body.len;
                ck_assert_int_eq(tp_body_validate(e.kind, e.body, e.body_len, NULL, 0), TP_OK);
                n = stored_form(s, &e, &packed);
                ck_assert(packed);
                ck_assert_uint_lt(n, e.body_len);
            }
    tp_buf_free(&body);
    tpd_store_close(s);
}
END_TEST

/* pack_one packs the body of a 5-tensor snapshot (paths under prefix)
 * into p; returns whether it packed. */
static bool pack_one(tpd_store *s, const char *prefix, tp_buf *p)
{
    tp_buf body;
    bool packed = false;
    tp_buf_init(&body);
    tp_mp_map(&body, 2);
    tp_mp_cstr(&body, "why");
    tp_mp_cstr(&body, "backward");
    tp_mp_cstr(&body, "leaves");
    tp_mp_array(&body, 5);
    for (int i = 0; i < 5; i++) {
        char path[64];
        int64_t shape[1] = {4};
        uint8_t d[16];
        tp_stats st = {1, 2, 0.5, 0};
        int len = snprintf(path, sizeof path, "%s.%d", prefix, i);
        tb_digest(d, (uint64_t)i);
        tp_enc_leaf_tensor(&body, path, (size_t)len, "float32", shape, 1, d, &st, "cpu", false);
    }
    ck_assert_int_eq(
        tpd_body_pack(tpd_store_leafdict(s), TP_K_SNAPSHOT, body.data, body.len, p, &packed),
        TP_OK);
    tp_buf_free(&body);
    return packed;
}

START_TEST(test_pack_definitions_follow_transactions)
{
    tpd_store *s = open_store(0);
    tpd_leafdict *d = tpd_store_leafdict(s);
    tp_buf p, out;
    size_t mark;
    tp_buf_init(&p);
    tp_buf_init(&out);

    /* a transaction that rolls back takes its definitions with it: the
     * dictionary writes them again, and what it packs unpacks */
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert(pack_one(s, "a", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 5);
    tpd_store_rollback(s);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 0);
    ck_assert_int_eq(tpd_body_unpack(d, p.data, p.len, &out), TP_ECORRUPT);
    ck_assert(pack_one(s, "a", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 5);
    ck_assert_int_eq(tpd_body_unpack(d, p.data, p.len, &out), TP_OK);

    /* committed ones stay when a later transaction rolls back */
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert(pack_one(s, "b", &p));
    ck_assert_int_eq(tpd_store_commit(s), TP_OK);
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert(pack_one(s, "c", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 15);
    tpd_store_rollback(s);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 10);
    ck_assert(pack_one(s, "b", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 10);
    ck_assert_int_eq(tpd_body_unpack(d, p.data, p.len, &out), TP_OK);

    /* a savepoint rolled back inside a transaction that commits: what was
     * interned under it goes (the ingest's batches, writer.c) */
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert(pack_one(s, "d", &p));
    mark = tpd_leafdict_mark(d);
    ck_assert_int_eq(sqlite3_exec(tpd_store_db(s), "SAVEPOINT x", NULL, NULL, NULL), SQLITE_OK);
    ck_assert(pack_one(s, "e", &p));
    ck_assert_int_eq(sqlite3_exec(tpd_store_db(s), "ROLLBACK TO x; RELEASE x", NULL, NULL, NULL),
                     SQLITE_OK);
    tpd_leafdict_undo(d, mark);
    ck_assert_int_eq(tpd_store_commit(s), TP_OK);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 15);
    ck_assert(pack_one(s, "e", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 20);
    ck_assert_int_eq(tpd_body_unpack(d, p.data, p.len, &out), TP_OK);

    /* a savepoint outside any transaction is one: released, it commits,
     * and a transaction begun next that rolls back keeps them */
    ck_assert_int_eq(sqlite3_exec(tpd_store_db(s), "SAVEPOINT y", NULL, NULL, NULL), SQLITE_OK);
    ck_assert(pack_one(s, "f", &p));
    ck_assert_int_eq(sqlite3_exec(tpd_store_db(s), "RELEASE y", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(tpd_store_begin(s), TP_OK);
    ck_assert(pack_one(s, "g", &p));
    tpd_store_rollback(s);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 25);
    ck_assert(pack_one(s, "f", &p));
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 25);
    ck_assert_int_eq(tpd_body_unpack(d, p.data, p.len, &out), TP_OK);
    tpd_store_close(s);

    /* another connection reads what this one wrote, by id */
    s = open_store(TPD_STORE_READONLY);
    ck_assert_int_eq(tpd_body_unpack(tpd_store_leafdict(s), p.data, p.len, &out), TP_OK);
    tp_buf_free(&p);
    tp_buf_free(&out);
    tpd_store_close(s);
}
END_TEST

static tp_err count_event(void *arg, const tp_event *e)
{
    (void)e;
    (*(int *)arg)++;
    return TP_OK;
}

/* ingest_run stores for (exec 1, pid 7) a hello, a 30-tensor snapshot and a
 * step with 30 gradients, in a keyed execution of a new run. */
static void ingest_run(tpd_store *s, tp_batch *sent, tb *t)
{
    char key[TP_EXEC_KEY_LEN + 1], why[256] = "";
    tpd_ingest *in = NULL;
    tpd_ingest_result res;
    int64_t run, exec;
    ck_assert_int_eq(tpd_store_run_create(s, "t", "record", NULL, &run), TP_OK);
    ck_assert_int_eq(tpd_store_exec_create_keyed(s, run, "main", NULL, &exec, key), TP_OK);
    ck_assert_int_eq(tpd_ingest_create(&in, s, NULL), TP_OK);
    tb_begin_key(t, run, exec, 7, 0, NULL, key);
    tb_hello(t, 0, 0);
    tb_snapshot(t, 1, 0, 30);
    tb_step(t, 2, 0, true, 30, 1.0, 0.1);
    tb_end(t);
    ck_assert_msg(tpd_ingest_message(in, t->buf.data, t->buf.len, &res, why, sizeof why) == TP_OK,
                  "%s", why);
    tpd_ingest_destroy(in);
    ck_assert_int_eq(tp_batch_decode(t->buf.data, t->buf.len, sent, NULL, 0), TP_OK);
}

START_TEST(test_pack_missing_definition_is_an_error)
{
    tpd_store *s = open_store(0);
    tp_batch sent;
    char why[256] = "";
    int n = 0;
    tb t;
    ingest_run(s, &sent, &t);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events WHERE hex(substr(body, 1, 1)) = 'C1'"),
                     2);
    tpd_store_close(s);

    /* a damaged database: the definitions are gone; a reader says so */
    s = open_store(0);
    ck_assert_int_eq(sqlite3_exec(tpd_store_db(s), "DELETE FROM leafdefs", NULL, NULL, NULL),
                     SQLITE_OK);
    tpd_store_close(s);
    s = open_store(TPD_STORE_READONLY);
    ck_assert_int_eq(tpd_rows_events(s, 1, 7, count_event, &n, why, sizeof why), TP_ECORRUPT);
    ck_assert_msg(strstr(why, "names no stored leaf definition"), "%s", why);
    ck_assert_int_eq(n, 1); /* the hello, before the snapshot */
    tpd_store_close(s);
    tp_batch_free(&sent);
    tb_free(&t);
}
END_TEST

/* The events of (exec 1, pid 7) read back must be those sent. */
typedef struct cmp {
    const tp_batch *sent;
    size_t i;
} cmp;

static tp_err same_event(void *arg, const tp_event *e)
{
    cmp *c = arg;
    const tp_event *w;
    ck_assert_uint_lt(c->i, c->sent->n);
    w = &c->sent->ev[c->i++];
    ck_assert_uint_eq(e->seq, w->seq);
    ck_assert_int_eq(e->kind, w->kind);
    ck_assert_uint_eq(e->body_len, w->body_len);
    ck_assert(memcmp(e->body, w->body, w->body_len) == 0);
    return TP_OK;
}

extern const char store_v2_sql[]; /* tests/unit/store_v2.sql, embedded */

START_TEST(test_pack_v2_migrates_and_reads)
{
    /* a version 2 file whose bodies are as the agent sent them: version 3
     * adds leafdefs and keeps every row; readers read the old bodies and
     * new, packed ones, alike */
    tpd_store *s;
    sqlite3 *h = NULL;
    sqlite3_stmt *ev = NULL;
    tp_batch sent, more;
    cmp c;
    tb t, t2;
    char why[256] = "";
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, store_v2_sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h,
                                  "PRAGMA user_version = 2; PRAGMA application_id = 1414558257;"
                                  "INSERT INTO runs(name, check_kind, created_ns)"
                                  " VALUES('old', 'record', 1);"
                                  "INSERT INTO executions(run_id, role, created_ns, key)"
                                  " VALUES(1, 'main', 1, NULL);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    tb_begin(&t, 1, 1, 7, 0, NULL);
    tb_all(&t, 0);
    tb_snapshot(&t, 100, 2, 30);
    tb_end(&t);
    ck_assert_int_eq(tp_batch_decode(t.buf.data, t.buf.len, &sent, NULL, 0), TP_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "INSERT INTO events(exec_id, pid, seq, time_ns, step,"
                                        " kind, body) VALUES(1, 7, ?1, ?2, ?3, ?4, ?5)",
                                        -1, &ev, NULL),
                     SQLITE_OK);
    for (size_t i = 0; i < sent.n; i++) {
        sqlite3_bind_int64(ev, 1, (int64_t)sent.ev[i].seq);
        sqlite3_bind_int64(ev, 2, (int64_t)sent.ev[i].time_ns);
        sqlite3_bind_int64(ev, 3, sent.ev[i].step);
        sqlite3_bind_text(ev, 4, tp_kind_name(sent.ev[i].kind), -1, SQLITE_STATIC);
        sqlite3_bind_blob(ev, 5, sent.ev[i].body, (int)sent.ev[i].body_len, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(ev), SQLITE_DONE);
        sqlite3_reset(ev);
    }
    sqlite3_finalize(ev);
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);

    s = open_store(0);
    ck_assert_int_eq(scalar(s, "PRAGMA user_version"), 3);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM leafdefs"), 0);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events WHERE hex(substr(body, 1, 1)) = 'C1'"),
                     0);
    c.sent = &sent, c.i = 0;
    ck_assert_int_eq(tpd_rows_events(s, 1, 7, same_event, &c, why, sizeof why), TP_OK);
    ck_assert_uint_eq(c.i, sent.n);
    /* a new run beside it is packed, and reads back as sent */
    ingest_run(s, &more, &t2);
    ck_assert_int_eq(scalar(s, "SELECT count(*) FROM events WHERE hex(substr(body, 1, 1)) = 'C1'"),
                     2);
    tpd_store_close(s);

    s = open_store(TPD_STORE_READONLY);
    c.sent = &sent, c.i = 0;
    ck_assert_int_eq(tpd_rows_events(s, 1, 7, same_event, &c, why, sizeof why), TP_OK);
    ck_assert_uint_eq(c.i, sent.n);
    c.sent = &more, c.i = 0;
    ck_assert_int_eq(tpd_rows_events(s, 2, 7, same_event, &c, why, sizeof why), TP_OK);
    ck_assert_uint_eq(c.i, more.n);
    tpd_store_close(s);
    tp_batch_free(&sent);
    tp_batch_free(&more);
    tb_free(&t);
    tb_free(&t2);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("pack");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pack_every_kind_round_trips);
    tcase_add_test(tc, test_pack_tensor_forms);
    tcase_add_test(tc, test_pack_definitions_follow_transactions);
    tcase_add_test(tc, test_pack_missing_definition_is_an_error);
    tcase_add_test(tc, test_pack_v2_migrates_and_reads);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
