/* SPDX-License-Identifier: MIT
 * follow_test.c -- the executions other hosts follow (daemon/serve/follow.h),
 * through the control commands as a network peer sends them (with the
 * token): an execution created with env is handed to a follower with its
 * key, command and variables, and one created without is not; the leader
 * sees the follower's command running, then how it failed; the asides and
 * the end of the run reach the follower; a finished execution is marked so;
 * the spool files a follower could not send reach the leader; one that
 * leaves is not waited for at the run's end; a wrong token is refused. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/serve/control.h"
#include "daemon/store/store.h"
#include "proto/mp.h"
#include "tests/unit/testdir.h"

#define TOKEN "follow-test-token"

static char dir[512];
static tpd_store *st;
static tpd_control *ctl;
static tp_buf rep;

static void setup(void)
{
    char path[600], why[256];
    td_make(dir, sizeof dir);
    ck_assert_int_eq(
        tpd_store_open(&st, td_path(path, sizeof path, dir, "runs.db"), 0, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_control_create(&ctl, st, NULL, TOKEN), TP_OK);
    tp_buf_init(&rep);
}

static void teardown(void)
{
    tp_buf_free(&rep);
    tpd_control_destroy(ctl);
    tpd_store_close(st);
    td_remove(dir);
}

/* req starts a network request for cmd with n more pairs (the token is one
 * of its own). */
static void req(tp_buf *b, const char *cmd, uint32_t n, const char *tok)
{
    tp_buf_init(b);
    tp_mp_map(b, n + 2);
    tp_mp_cstr(b, "cmd");
    tp_mp_cstr(b, cmd);
    tp_mp_cstr(b, "tok");
    tp_mp_cstr(b, tok);
}

static void pair_int(tp_buf *b, const char *k, int64_t v)
{
    tp_mp_cstr(b, k);
    tp_mp_int(b, v);
}

static void pair_str(tp_buf *b, const char *k, const char *v)
{
    tp_mp_cstr(b, k);
    tp_mp_cstr(b, v);
}

static void pair_strs(tp_buf *b, const char *k, const char *const *v, uint32_t n)
{
    tp_mp_cstr(b, k);
    tp_mp_array(b, n);
    for (uint32_t i = 0; i < n; i++) tp_mp_cstr(b, v[i]);
}

/* ask answers b (freed) into rep and returns its "ok". */
static bool ask(tp_buf *b)
{
    bool ok = false, proven;
    ck_assert_int_eq(tpd_control_handle(ctl, b->data, b->len, false, &proven, &rep), TP_OK);
    tp_buf_free(b);
    ck_assert_int_eq(tp_mp_map_bool(rep.data, rep.len, "ok", &ok), TP_OK);
    return ok;
}

static int64_t rint_(const char *k)
{
    int64_t v = -99;
    ck_assert_msg(tp_mp_map_int(rep.data, rep.len, k, &v) == TP_OK, "no int %s", k);
    return v;
}

/* rstr returns the reply's string k, copied into a static buffer. */
static const char *rstr(const char *k)
{
    static char out[1024];
    const char *s;
    uint32_t n;
    ck_assert_msg(tp_mp_map_str(rep.data, rep.len, k, &s, &n) == TP_OK, "no string %s", k);
    snprintf(out, sizeof out, "%.*s", (int)n, s);
    return out;
}

/* rarray returns the length of the reply's array k. */
static uint32_t rarray(const char *k, tp_mpr *r)
{
    uint32_t n = 0;
    ck_assert_int_eq(tp_mp_map_find(rep.data, rep.len, k, r), TP_OK);
    ck_assert_int_eq(tp_mpr_array(r, &n), TP_OK);
    return n;
}

static int64_t run_create(void)
{
    tp_buf b;
    req(&b, "run.create", 1, TOKEN);
    pair_str(&b, "check", "resume");
    ck_assert(ask(&b));
    return rint_("run");
}

/* exec_create makes an execution of run, followed when env is given. */
static int64_t exec_create(int64_t run, const char *role, bool env, char key[33])
{
    static const char *argv[] = {"torchrun", "train.py"};
    static const char *vars[] = {"TRAINPARITY_INTERRUPT_AT=4", "TRAINPARITY_PIDNS=x/pid:[1]"};
    tp_buf b;
    req(&b, "exec.create", env ? 4 : 3, TOKEN);
    pair_int(&b, "run", run);
    pair_str(&b, "role", role);
    pair_strs(&b, "argv", argv, 2);
    if (env) pair_strs(&b, "env", vars, 2);
    ck_assert(ask(&b));
    snprintf(key, 33, "%s", rstr("key"));
    return rint_("exec");
}

/* next is host1 (pid 7)'s exec.next; returns the state. */
static const char *next(int64_t run, int64_t after, int64_t asided)
{
    tp_buf b;
    req(&b, "exec.next", 5, TOKEN);
    pair_str(&b, "host", "host1");
    pair_int(&b, "pid", 7);
    pair_int(&b, "run", run);
    pair_int(&b, "after", after);
    pair_int(&b, "asided", asided);
    ck_assert(ask(&b));
    return rstr("state");
}

/* said is host1 (pid 7)'s exec.done of exec with status (and 0 signal),
 * and unsent when told (tell). */
static bool said(int64_t exec, int64_t status, bool tell, int64_t unsent)
{
    tp_buf b;
    req(&b, "exec.done", tell ? 6 : 5, TOKEN);
    pair_str(&b, "host", "host1");
    pair_int(&b, "pid", 7);
    pair_int(&b, "exec", exec);
    pair_int(&b, "status", status);
    pair_int(&b, "signal", 0);
    if (tell) pair_int(&b, "unsent", unsent);
    return ask(&b);
}

static bool done(int64_t exec, int64_t status)
{
    return said(exec, status, false, 0);
}

/* done_unsent is done() with the number of spool files host1 could not
 * send. */
static bool done_unsent(int64_t exec, int64_t unsent)
{
    return said(exec, 0, true, unsent);
}

static void followers(int64_t exec)
{
    tp_buf b;
    req(&b, "exec.followers", 1, TOKEN);
    pair_int(&b, "exec", exec);
    ck_assert(ask(&b));
}

START_TEST(test_follow_exec_handed_over)
{
    char key[33];
    tp_mpr r;
    const char *s;
    uint32_t n;
    int64_t run, a;
    ck_assert_str_eq(next(0, 0, 0), "wait"); /* nothing followed yet */
    run = run_create();
    a = exec_create(run, "A", true, key);
    ck_assert_str_eq(next(0, 0, 0), "exec"); /* run 0: the newest not ended */
    ck_assert_int_eq(rint_("run"), run);
    ck_assert_int_eq(rint_("exec"), a);
    ck_assert_str_eq(rstr("role"), "A");
    ck_assert_str_eq(rstr("key"), key);
    ck_assert_uint_eq(rarray("argv", &r), 2);
    ck_assert_int_eq(tp_mpr_str(&r, &s, &n), TP_OK);
    ck_assert(tp_mp_str_eq(s, n, "torchrun"));
    ck_assert_uint_eq(rarray("env", &r), 2);
    ck_assert_int_eq(tp_mpr_str(&r, &s, &n), TP_OK);
    ck_assert(tp_mp_str_eq(s, n, "TRAINPARITY_INTERRUPT_AT=4"));
    ck_assert_uint_eq(rarray("aside", &r), 0);
    /* the leader sees it running on host1, then failed there */
    followers(a);
    ck_assert_int_eq(rint_("running"), 1);
    ck_assert_str_eq(rstr("waiting"), "host1 (pid 7)");
    ck_assert(done(a, 1));
    followers(a);
    ck_assert_int_eq(rint_("running"), 0);
    ck_assert_str_eq(rstr("failed"), "host1 (pid 7): status 1");
    ck_assert_int_eq(rint_("status"), 1);
    /* an execution not created for followers is never handed out */
    (void)exec_create(run, "record", false, key);
    ck_assert_str_eq(next(run, a, 0), "wait");
}
END_TEST

START_TEST(test_follow_aside_finished_end)
{
    char key[33];
    tp_mpr r;
    int64_t run, a, b, v;
    run = run_create();
    a = exec_create(run, "A", true, key);
    ck_assert_str_eq(next(run, 0, 0), "exec");
    ck_assert(done(a, 0));
    ck_assert(!done(a + 100, 0)); /* not given to it: refused */
    /* the leader moved A's checkpoints aside, then made B and finished it
     * before host1 asked */
    {
        tp_buf m;
        req(&m, "exec.aside", 2, TOKEN);
        pair_int(&m, "run", run);
        pair_int(&m, "exec", a);
        ck_assert(ask(&m));
    }
    b = exec_create(run, "B", true, key);
    {
        tp_buf m;
        req(&m, "exec.finish", 2, TOKEN);
        pair_int(&m, "exec", b);
        pair_int(&m, "status", 0);
        ck_assert(ask(&m));
    }
    ck_assert_str_eq(next(run, a, 0), "exec");
    ck_assert_int_eq(rint_("exec"), b);
    ck_assert_uint_eq(rarray("aside", &r), 1);
    ck_assert_int_eq(tp_mpr_int(&r, &v), TP_OK);
    ck_assert_int_eq(v, a);
    {
        bool fin = false;
        ck_assert_int_eq(tp_mp_map_bool(rep.data, rep.len, "finished", &fin), TP_OK);
        ck_assert(fin);
    }
    ck_assert(done(b, 0));
    /* the run ends: host1 is told once it asks, then none is left */
    {
        tp_buf m;
        req(&m, "run.end", 1, TOKEN);
        pair_int(&m, "run", run);
        ck_assert(ask(&m));
        ck_assert_int_eq(rint_("untold"), 1);
    }
    ck_assert_str_eq(next(run, b, 1), "end");
    ck_assert_uint_eq(rarray("aside", &r), 0); /* A's aside done already */
    {
        tp_buf m;
        req(&m, "run.end", 1, TOKEN);
        pair_int(&m, "run", run);
        ck_assert(ask(&m));
        ck_assert_int_eq(rint_("untold"), 0);
    }
    ck_assert_str_eq(next(0, 0, 0), "wait"); /* no run is open any more */
}
END_TEST

/* A follower stopped by a signal says it leaves with exec.done: the run's
 * end does not wait for it to ask. */
START_TEST(test_follow_leaving)
{
    char key[33];
    int64_t run, a;
    run = run_create();
    a = exec_create(run, "A", true, key);
    ck_assert_str_eq(next(run, 0, 0), "exec");
    {
        tp_buf m;
        req(&m, "exec.done", 6, TOKEN);
        pair_str(&m, "host", "host1");
        pair_int(&m, "pid", 7);
        pair_int(&m, "exec", a);
        pair_int(&m, "status", -1);
        pair_int(&m, "signal", 15);
        tp_mp_cstr(&m, "leaving");
        tp_mp_bool(&m, true);
        ck_assert(ask(&m));
    }
    followers(a);
    ck_assert_int_eq(rint_("running"), 0);
    ck_assert_int_eq(rint_("signal"), 15);
    {
        tp_buf m;
        req(&m, "run.end", 1, TOKEN);
        pair_int(&m, "run", run);
        ck_assert(ask(&m));
        ck_assert_int_eq(rint_("untold"), 0);
    }
}
END_TEST

/* A follower that holds spool files of an execution it could not send
 * says so with exec.done; the leader reads it from exec.followers, and a
 * next execution starts without it. */
START_TEST(test_follow_unsent_spool)
{
    char key[33];
    int64_t run, a, b;
    run = run_create();
    a = exec_create(run, "A", true, key);
    ck_assert_str_eq(next(run, 0, 0), "exec");
    followers(a);
    ck_assert_str_eq(rstr("unsent"), ""); /* still running: nothing said */
    ck_assert(!done_unsent(a, -1));
    ck_assert_str_eq(rstr("error"), "unsent must not be negative");
    ck_assert(done_unsent(a, 2));
    followers(a);
    ck_assert_int_eq(rint_("running"), 0);
    ck_assert_str_eq(rstr("failed"), ""); /* its command succeeded */
    ck_assert_str_eq(rstr("unsent"), "host1 (pid 7): 2");
    b = exec_create(run, "B", true, key);
    ck_assert_str_eq(next(run, a, 0), "exec");
    ck_assert(done(b, 0)); /* without unsent: none */
    followers(b);
    ck_assert_str_eq(rstr("unsent"), "");
}
END_TEST

START_TEST(test_follow_wrong_token)
{
    tp_buf b;
    req(&b, "exec.next", 2, "not-the-token");
    pair_str(&b, "host", "host1");
    pair_int(&b, "pid", 7);
    ck_assert(!ask(&b));
    ck_assert_str_eq(rstr("error"), "missing or wrong token");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("follow");
    TCase *tc = tcase_create("follow");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_follow_exec_handed_over);
    tcase_add_test(tc, test_follow_aside_finished_end);
    tcase_add_test(tc, test_follow_unsent_spool);
    tcase_add_test(tc, test_follow_leaving);
    tcase_add_test(tc, test_follow_wrong_token);
    suite_add_tcase(s, tc);
    return s;
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
