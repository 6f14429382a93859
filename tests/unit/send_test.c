/* SPDX-License-Identifier: MIT
 * send_test.c -- the agent's sender (agent/send.c) into a real daemon: a
 * serve loop in a thread, real ipc:// sockets, a real database file.
 *
 * Batches submitted faster than the daemon takes them travel several to a
 * message; every event must still be stored once, as it was sent.  A batch
 * the daemon refuses must take no other batch with it: the good ones are
 * stored from the socket, and the spool holds the refused one on its own.
 * The sender thread runs under SCHED_BATCH, so that waking it never takes
 * the training thread's core; the thread that submits keeps its policy.
 * The sender is one per process, so each test (Check runs each in a child
 * process) uses it once. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <nng/nng.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/send.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/serve.h"
#include "daemon/store/pack.h"
#include "daemon/store/store.h"
#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"

#define KEY "0123456789abcdef0123456789abcdef" /* execution 1's, set below */
#define PER 4                                  /* events per batch */

typedef struct tdaemon {
    char dir[512], db[600], url[700];
    tpd_store *s;
    tpd_serve *sv;
    pthread_t th;
    tpd_serve_stats st;
} tdaemon;

static void log_quiet(void *arg, const char *line)
{
    (void)arg, (void)line;
}

static void *serve_thread(void *arg)
{
    tpd_serve_run(arg, NULL, 0);
    return NULL;
}

static void cfg_set(char *field, size_t n, const char *v)
{
    ck_assert_uint_lt(strlen(v), n);
    memcpy(field, v, strlen(v) + 1);
}

/* start opens a database holding execution 1 (key KEY), serves it, and
 * points the sender at it, its spool in the scratch directory. */
static void start(tdaemon *d)
{
    const char *listen[1] = {d->url};
    tpd_serve_opts o;
    char why[512] = "", key[TP_EXEC_KEY_LEN + 1];
    int64_t run, exec;
    td_make(d->dir, sizeof d->dir);
    td_path(d->db, sizeof d->db, d->dir, "runs.db");
    snprintf(d->url, sizeof d->url, "ipc://%s/ingest.ipc", d->dir);
    ck_assert_int_eq(tpd_store_open(&d->s, d->db, 0, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_store_run_create(d->s, NULL, "record", NULL, &run), TP_OK);
    ck_assert_int_eq(tpd_store_exec_create_keyed(d->s, run, "main", NULL, &exec, key), TP_OK);
    ck_assert_int_eq(exec, 1);
    ck_assert_int_eq(
        sqlite3_exec(tpd_store_db(d->s), "UPDATE executions SET key = '" KEY "'", NULL, NULL, NULL),
        SQLITE_OK);
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = 1;
    o.log = log_quiet;
    ck_assert_int_eq(tpd_serve_open(&d->sv, d->s, &o, why, sizeof why), TP_OK);
    ck_assert_int_eq(pthread_create(&d->th, NULL, serve_thread, d->sv), 0);
    memset(&tpa_cfg, 0, sizeof tpa_cfg);
    tpa_cfg.run = run;
    tpa_cfg.exec = exec;
    tpa_cfg.send_timeout_ms = 5000;
    tpa_cfg.debug = getenv("TRAINPARITY_DEBUG") != NULL;
    cfg_set(tpa_cfg.daemon, sizeof tpa_cfg.daemon, d->url);
    cfg_set(tpa_cfg.control, sizeof tpa_cfg.control, tpd_serve_control_url(d->sv));
    cfg_set(tpa_cfg.spool, sizeof tpa_cfg.spool, d->dir);
}

/* stop ends the sender and the serve loop; the store stays open. */
static void stop(tdaemon *d)
{
    tpa_send_stop();
    tpd_serve_stop(d->sv);
    pthread_join(d->th, NULL);
    tpd_serve_get_stats(d->sv, &d->st);
    tpd_serve_close(d->sv);
}

static void finish(tdaemon *d)
{
    tpd_store_close(d->s);
    td_remove(d->dir);
}

/* make builds batch i of this process: seqs i*PER.., one optimizer step. */
static void make(tb *t, int i)
{
    uint64_t seq = (uint64_t)i * PER;
    tb_begin_key(t, 1, 1, getpid(), 0, NULL, KEY);
    tb_batchev(t, seq, i);
    tb_backward(t, seq + 1, i, 1.0 / (i + 1), 1);
    tb_step(t, seq + 2, i, true, i % 3, 1.5, 0.1);
    tb_step(t, seq + 3, i, false, 0, 0.01, 0.1);
    tb_end(t);
}

/* make_refused builds batch i with an event of a kind no daemon knows: the
 * daemon refuses the whole message that holds it. */
static void make_refused(tb *t, int i)
{
    uint64_t seq = (uint64_t)i * PER;
    tb_begin_key(t, 1, 1, getpid(), 0, NULL, KEY);
    for (int k = 0; k < PER; k++) {
        tp_mp_array(&t->buf, 5);
        tp_mp_uint(&t->buf, seq + (uint64_t)k);
        tp_mp_uint(&t->buf, 1);
        tp_mp_int(&t->buf, i);
        tp_mp_cstr(&t->buf, "no_such_kind");
        tp_mp_map(&t->buf, 0);
        t->n++;
    }
    tb_end(t);
}

/* submit hands batch t to the sender as agent/emit.c does (a malloc'ed
 * copy; the sender takes it). */
static void submit(const tb *t, int i)
{
    uint8_t *copy = malloc(t->buf.len);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, t->buf.data, t->buf.len);
    tpa_send_submit(copy, t->buf.len, t->n, (uint64_t)i * PER, t->off);
}

/* check_stored checks that every event of batch t (number i) is stored
 * for this process with the body it was sent with (read as the store's
 * readers do: unpacked, daemon/store/pack.h). */
static void check_stored(tdaemon *d, const tb *t, int i)
{
    tp_batch b;
    char why[256];
    sqlite3_stmt *st;
    tp_buf scratch;
    tp_buf_init(&scratch);
    ck_assert_int_eq(tp_batch_decode(t->buf.data, t->buf.len, &b, why, sizeof why), TP_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(d->s),
                                        "SELECT body FROM events WHERE exec_id = 1 AND pid = ?1"
                                        " AND seq = ?2",
                                        -1, &st, NULL),
                     SQLITE_OK);
    for (size_t k = 0; k < b.n; k++) {
        const uint8_t *body;
        size_t len;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, getpid());
        sqlite3_bind_int64(st, 2, (int64_t)b.ev[k].seq);
        ck_assert_msg(sqlite3_step(st) == SQLITE_ROW, "batch %d: seq %llu not stored", i,
                      (unsigned long long)b.ev[k].seq);
        ck_assert_int_eq(tpd_body_read(tpd_store_leafdict(d->s), sqlite3_column_blob(st, 0),
                                       (size_t)sqlite3_column_bytes(st, 0), &scratch, &body, &len),
                         TP_OK);
        ck_assert_int_eq(len, b.ev[k].body_len);
        ck_assert(memcmp(body, b.ev[k].body, len) == 0);
    }
    sqlite3_finalize(st);
    tp_buf_free(&scratch);
    tp_batch_free(&b);
}

static int64_t count_events(tdaemon *d)
{
    sqlite3_stmt *st;
    int64_t n;
    ck_assert_int_eq(sqlite3_prepare_v2(tpd_store_db(d->s),
                                        "SELECT count(*) FROM events WHERE exec_id = 1", -1, &st,
                                        NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

#define NBATCH 3000

START_TEST(test_send_merges_queued_batches)
{
    tdaemon d;
    static tb t[NBATCH];
    start(&d);
    for (int i = 0; i < NBATCH; i++) make(&t[i], i);
    for (int i = 0; i < NBATCH; i++) submit(&t[i], i);
    ck_assert_int_eq(tpa_send_confirm(20000), 0);
    ck_assert_uint_eq(tpa_send_dropped(), 0);
    ck_assert(!tpa_send_spooled());
    stop(&d);
    /* queued batches went several to a message */
    ck_assert_uint_gt(d.st.messages, 0);
    ck_assert_msg(d.st.messages < NBATCH / 4, "%llu messages for %d batches",
                  (unsigned long long)d.st.messages, NBATCH);
    ck_assert_uint_eq(d.st.malformed, 0);
    /* every event once, as it was sent */
    ck_assert_int_eq(count_events(&d), (int64_t)NBATCH * PER);
    for (int i = 0; i < NBATCH; i++) {
        check_stored(&d, &t[i], i);
        tb_free(&t[i]);
    }
    finish(&d);
}
END_TEST

#define NREF    400
#define REFUSED 123

START_TEST(test_send_refused_batch_goes_alone)
{
    tdaemon d;
    static tb t[NREF];
    char spool[700], name[64], why[256] = "";
    tpd_ingest *in = NULL;
    tpd_spool_result sr;
    start(&d);
    for (int i = 0; i < NREF; i++) {
        if (i == REFUSED)
            make_refused(&t[i], i);
        else
            make(&t[i], i);
    }
    for (int i = 0; i < NREF; i++) submit(&t[i], i);
    /* the refused batch is a hole `seen` never passes */
    tpa_send_confirm(20000);
    ck_assert_uint_eq(tpa_send_dropped(), 0);
    ck_assert(tpa_send_spooled());
    stop(&d);
    /* the message holding it was refused; sent again alone, the others were stored */
    ck_assert_uint_gt(d.st.malformed, 0);
    ck_assert_int_eq(count_events(&d), (int64_t)(NREF - 1) * PER);
    /* the spool holds it on its own: one bad frame, nothing new from the others */
    snprintf(name, sizeof name, "1-%d.spool", (int)getpid());
    td_path(spool, sizeof spool, d.dir, name);
    ck_assert_int_eq(tpd_ingest_create(&in, d.s, NULL), TP_OK);
    ck_assert_int_eq(tpd_ingest_spool(in, spool, &sr, why, sizeof why), TP_OK);
    tpd_ingest_destroy(in);
    ck_assert_uint_eq(sr.bad, 1);
    ck_assert_uint_eq(sr.events, 0);
    ck_assert(!sr.torn);
    ck_assert_int_eq(count_events(&d), (int64_t)(NREF - 1) * PER);
    for (int i = 0; i < NREF; i++) {
        if (i != REFUSED) check_stored(&d, &t[i], i);
        tb_free(&t[i]);
    }
    finish(&d);
}
END_TEST

/* sched_batch_threads counts this process's threads under SCHED_BATCH. */
static int sched_batch_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    ck_assert_ptr_nonnull(dir);
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.' && sched_getscheduler(atoi(e->d_name)) == SCHED_BATCH) n++;
    closedir(dir);
    return n;
}

START_TEST(test_send_sender_under_sched_batch)
{
    tdaemon d;
    static tb t;
    start(&d);
    ck_assert_int_eq(sched_batch_threads(), 0);
    make(&t, 0);
    submit(&t, 0);
    ck_assert_int_eq(tpa_send_confirm(20000), 0);
    ck_assert_int_ge(sched_batch_threads(), 1); /* the sender, alive until bye */
    ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
    stop(&d);
    check_stored(&d, &t, 0);
    tb_free(&t);
    finish(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("send");
    TCase *tc = tcase_create("send");
    int failed;
    SRunner *sr;
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_send_merges_queued_batches);
    tcase_add_test(tc, test_send_refused_batch_goes_alone);
    tcase_add_test(tc, test_send_sender_under_sched_batch);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
