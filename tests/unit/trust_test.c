/* SPDX-License-Identifier: MIT
 * trust_test.c -- the trust rule (daemon/checks/trust.h) for a job on
 * several hosts: a process of another host that never said bye is named
 * with its host, its rank and its spool file there; one of this host is
 * named as before; ranks of the launch world that never reached the daemon
 * make the execution untrusted, named; a world whose every rank was seen,
 * or processes without a rank, do not.  A failed execution is named with
 * the rank that ended with an uncaught exception, or else with those that
 * ended without a bye, never with its launcher's exception. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "daemon/checks/trust.h"

static char here[sizeof(((struct utsname *)0)->nodename)];

static void setup(void)
{
    struct utsname u;
    ck_assert_int_eq(uname(&u), 0);
    strcpy(here, u.nodename);
}

/* proc fills p as a process that stepped and said bye "exit". */
static void proc(tpd_proc *p, int64_t pid, int64_t rank, int64_t world, const char *host)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->rank = rank;
    p->world = world;
    p->host = host;
    p->spool = "/proj/.trainparity/spool";
    p->has_bye = true;
    p->bye_reason = "exit";
    p->steps = 3;
    p->sent = p->nevents = 10;
    p->max_seq = 9;
}

/* no_bye makes p a process that ended without a bye (killed). */
static void no_bye(tpd_proc *p)
{
    p->has_bye = false;
    p->bye_reason = NULL;
}

/* raised makes p a process that ended with an uncaught exc. */
static void raised(tpd_proc *p, const char *exc)
{
    p->bye_reason = "exception";
    p->bye_exc = exc;
}

static const tpd_trust command = {"the command", false, false, true, false, false, true};

/* judge applies trust t to an execution over procs that exited with
 * status. */
static const char *judge(tpd_proc *procs, size_t n, const tpd_trust *t, int64_t status, char *buf,
                         size_t len)
{
    tpd_exec e;
    memset(&e, 0, sizeof e);
    e.id = 7;
    e.role = "record";
    e.finished = e.has_status = true;
    e.status = status;
    e.procs = procs;
    e.nprocs = n;
    return tpd_exec_problem(&e, t, buf, len);
}

static const char *problem(tpd_proc *procs, size_t n, char *buf, size_t len)
{
    return judge(procs, n, &command, 0, buf, len);
}

START_TEST(test_trust_every_rank_seen)
{
    tpd_proc p[4];
    char buf[2048];
    for (int i = 0; i < 4; i++) proc(&p[i], 100 + i, i, 4, i < 2 ? here : "far-host");
    ck_assert_ptr_null(problem(p, 4, buf, sizeof buf));
    /* processes without a rank (a launcher, a single process) ask for none */
    proc(&p[0], 100, -1, 1, here);
    ck_assert_ptr_null(problem(p, 1, buf, sizeof buf));
}
END_TEST

START_TEST(test_trust_unseen_ranks_named)
{
    tpd_proc p[2];
    char buf[2048];
    const char *why;
    proc(&p[0], 100, 0, 4, here);
    proc(&p[1], 101, 1, 4, here);
    why = problem(p, 2, buf, sizeof buf);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "no event from rank 2, 3 of the 4 ranks") != NULL, "%s", why);
}
END_TEST

START_TEST(test_trust_many_unseen_ranks_counted)
{
    tpd_proc p[1];
    char buf[2048];
    const char *why;
    proc(&p[0], 100, 0, 64, here);
    why = problem(p, 1, buf, sizeof buf);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "no event from rank 1, 2, 3, 4, 5, 6, 7, 8 and 55 more of the 64") !=
                      NULL,
                  "%s", why);
}
END_TEST

START_TEST(test_trust_no_bye_elsewhere_names_host_and_spool)
{
    tpd_proc p[3];
    char buf[2048];
    const char *why;
    proc(&p[0], 100, 0, 2, here);
    proc(&p[1], 300, -1, 1, "far-host"); /* its launcher, no rank */
    proc(&p[2], 301, 1, 2, "far-host");
    p[1].has_bye = p[2].has_bye = false;
    why = problem(p, 3, buf, sizeof buf);
    ck_assert_ptr_nonnull(why);
    /* the rank a user knows their job by, rather than its launcher */
    ck_assert_msg(strstr(why, "process 301 (rank 1) on host far-host ended without reporting") !=
                      NULL,
                  "%s", why);
    ck_assert_msg(strstr(why, "far-host:/proj/.trainparity/spool/7-301.spool") != NULL, "%s", why);
}
END_TEST

START_TEST(test_trust_no_bye_here_as_before)
{
    tpd_proc p[1];
    char buf[2048];
    const char *why;
    proc(&p[0], 100, -1, 1, here);
    p[0].has_bye = false;
    why = problem(p, 1, buf, sizeof buf);
    ck_assert_ptr_nonnull(why);
    ck_assert_str_eq(why, "process 100 ended without reporting its last events (no bye)");
}
END_TEST

/* expect_failed: the sentence for a resume execution over procs that
 * exited with status 1 (a launcher's status when one of its ranks failed)
 * is want. */
static void expect_failed(tpd_proc *procs, size_t n, const char *want)
{
    static const tpd_trust a = {
        .who = "A (uninterrupted)", .who_procs = true, .steps = true, .interrupt = true};
    char buf[2048];
    const char *why = judge(procs, n, &a, 1, buf, sizeof buf);
    ck_assert_ptr_nonnull(why);
    ck_assert_str_eq(why, want);
}

/* launcher makes p torchrun's process: no step, no rank, and the
 * ChildFailedError that follows from a rank's failure. */
static void launcher(tpd_proc *p)
{
    proc(p, 100, -1, 1, here);
    raised(p, "ChildFailedError");
    p->steps = 0;
}

START_TEST(test_trust_failed_names_the_rank_that_raised)
{
    tpd_proc p[4];
    launcher(&p[0]);
    for (int i = 1; i < 4; i++) proc(&p[i], 100 + i, i - 1, 3, here);
    no_bye(&p[1]); /* the trainer, ended by the launcher */
    raised(&p[2], "RuntimeError");
    no_bye(&p[3]);
    expect_failed(p, 4,
                  "A (uninterrupted) exited with status 1; process 102 (rank 1) ended with an "
                  "uncaught RuntimeError; process 101 (rank 0) and 1 more ended without a bye "
                  "(killed, crashed or os._exit)");
}
END_TEST

START_TEST(test_trust_failed_names_ranks_without_bye)
{
    tpd_proc p[4];
    launcher(&p[0]);
    for (int i = 1; i < 4; i++) proc(&p[i], 100 + i, i - 1, 3, here);
    no_bye(&p[1]);
    no_bye(&p[3]);
    expect_failed(p, 4,
                  "A (uninterrupted) exited with status 1; process 101 (rank 0) and 1 more ended "
                  "without a bye (killed, crashed or os._exit)");
    /* every rank said bye: the status alone, as before */
    for (int i = 1; i < 4; i++) proc(&p[i], 100 + i, i - 1, 3, here);
    expect_failed(p, 4, "A (uninterrupted) exited with status 1");
    /* the trainer's own exception names the failure, as before */
    raised(&p[1], "ValueError");
    expect_failed(p, 4, "A (uninterrupted) exited with status 1 after an uncaught ValueError");
    /* ... and a rank killed beside it is named after it */
    no_bye(&p[3]);
    expect_failed(p, 4,
                  "A (uninterrupted) exited with status 1 after an uncaught ValueError; process "
                  "103 (rank 2) ended without a bye (killed, crashed or os._exit)");
}
END_TEST

START_TEST(test_trust_failed_single_process_killed)
{
    tpd_proc p[1];
    proc(&p[0], 100, -1, 1, here);
    no_bye(&p[0]);
    expect_failed(p, 1,
                  "A (uninterrupted) exited with status 1; process 100 ended without a bye "
                  "(killed, crashed or os._exit)");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trust");
    TCase *tc = tcase_create("trust");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_trust_every_rank_seen);
    tcase_add_test(tc, test_trust_unseen_ranks_named);
    tcase_add_test(tc, test_trust_many_unseen_ranks_counted);
    tcase_add_test(tc, test_trust_no_bye_elsewhere_names_host_and_spool);
    tcase_add_test(tc, test_trust_no_bye_here_as_before);
    tcase_add_test(tc, test_trust_failed_names_the_rank_that_raised);
    tcase_add_test(tc, test_trust_failed_names_ranks_without_bye);
    tcase_add_test(tc, test_trust_failed_single_process_killed);
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
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
