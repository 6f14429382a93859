/* SPDX-License-Identifier: MIT
 * lease_test.c -- the daemon's holders (daemon/serve/lease.h): attach and detach,
 * an owned lease that ends with its last holder and an unowned one that
 * never ends, and holders that are gone (exited, or zombies nobody reaped)
 * dropped at the next prune. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/serve/lease.h"

static tpd_lease *l;

static void setup(void)
{
    ck_assert_int_eq(tpd_lease_create(&l), TP_OK);
}

static void teardown(void)
{
    tpd_lease_destroy(l);
    l = NULL;
}

/* sleeper forks a child that waits to be killed; returns its pid. */
static pid_t sleeper(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (;;) pause();
    }
    return pid;
}

START_TEST(test_lease_attach_detach)
{
    ck_assert_int_eq(tpd_lease_attach(l, getpid(), false), TP_OK);
    ck_assert_int_eq(tpd_lease_attach(l, getpid(), false), TP_OK); /* again: one holder */
    ck_assert_int_eq(tpd_lease_count(l), 1);
    ck_assert_int_eq(tpd_lease_detach(l, 999999999), 1); /* not a holder */
    ck_assert_int_eq(tpd_lease_detach(l, getpid()), 0);
    ck_assert(!tpd_lease_over(l)); /* nobody owns it: it never ends */
}
END_TEST

START_TEST(test_lease_owner_ends_with_last_holder)
{
    pid_t other = sleeper();
    ck_assert_int_eq(tpd_lease_attach(l, getpid(), true), TP_OK);
    ck_assert_int_eq(tpd_lease_attach(l, other, false), TP_OK);
    ck_assert_int_eq(tpd_lease_detach(l, getpid()), 1);
    ck_assert(!tpd_lease_over(l)); /* the other still holds it */
    ck_assert_int_eq(tpd_lease_detach(l, other), 0);
    ck_assert(tpd_lease_over(l));
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
}
END_TEST

START_TEST(test_lease_prunes_the_gone)
{
    pid_t reaped = sleeper(), zombie = sleeper();
    ck_assert_int_eq(tpd_lease_attach(l, reaped, true), TP_OK);
    ck_assert_int_eq(tpd_lease_attach(l, zombie, false), TP_OK);
    ck_assert_int_eq(tpd_lease_attach(l, getpid(), false), TP_OK);
    ck_assert_int_eq(tpd_lease_prune(l), 3);
    kill(reaped, SIGKILL);
    waitpid(reaped, NULL, 0);
    kill(zombie, SIGKILL); /* not reaped: a zombie holds nothing */
    for (;;) {             /* until it has died, still unreaped */
        siginfo_t si = {0};
        ck_assert_int_eq(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOHANG | WNOWAIT), 0);
        if (si.si_pid == zombie) break;
        usleep(1000);
    }
    ck_assert_int_eq(tpd_lease_prune(l), 1);
    ck_assert(!tpd_lease_over(l));
    ck_assert_int_eq(tpd_lease_detach(l, getpid()), 0);
    ck_assert(tpd_lease_over(l));
    waitpid(zombie, NULL, 0);
}
END_TEST

START_TEST(test_lease_refuses_no_process)
{
    pid_t gone = sleeper();
    kill(gone, SIGKILL);
    waitpid(gone, NULL, 0);
    ck_assert_int_eq(tpd_lease_attach(l, gone, true), TP_ENOENT);
    ck_assert_int_eq(tpd_lease_attach(l, 0, false), TP_EINVAL);
    ck_assert_int_eq(tpd_lease_attach(l, -5, false), TP_EINVAL);
    ck_assert_int_eq(tpd_lease_count(l), 0);
    ck_assert(!tpd_lease_over(l)); /* a refused owner owns nothing */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lease");
    TCase *tc = tcase_create("lease");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_lease_attach_detach);
    tcase_add_test(tc, test_lease_owner_ends_with_last_holder);
    tcase_add_test(tc, test_lease_prunes_the_gone);
    tcase_add_test(tc, test_lease_refuses_no_process);
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
