/* SPDX-License-Identifier: MIT
 * nng_test.c -- nng as the project builds it (tools/scripts/deps.sh, with
 * tools/scripts/nng-patches): a push socket whose every connection is
 * refused, as the daemon's connection caps refuse an agent's
 * (daemon/serve/netguard.c closes the pipe at NNG_PIPE_EV_ADD_PRE), lives
 * on.  Unpatched, nng 1.5.2 could put such a pipe, freed, on the socket's
 * list of ready pipes, and the next send crashed (SIGSEGV in
 * push0_sock_send: push0-closed-pipe.patch). */
#define _GNU_SOURCE
#include <check.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REFUSALS 300 /* the agent redials every 20-200 ms; here every 1 ms */

static atomic_int refused;

static void refuse(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)ev, (void)arg;
    nng_pipe_close(p);
    atomic_fetch_add(&refused, 1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(test_push_refused_lives)
{
    char msg[256], *url;
    nng_socket pull, push;
    nng_listener l;
    double t0 = now_s();
    int sent = 0;
    ck_assert_int_eq(nng_pull0_open(&pull), 0);
    ck_assert_int_eq(nng_pipe_notify(pull, NNG_PIPE_EV_ADD_PRE, refuse, NULL), 0);
    ck_assert_int_eq(nng_listen(pull, "tcp://127.0.0.1:0", &l, 0), 0);
    ck_assert_int_eq(nng_listener_get_string(l, NNG_OPT_URL, &url), 0);
    ck_assert_int_eq(nng_push0_open(&push), 0);
    nng_socket_set_ms(push, NNG_OPT_RECONNMINT, 1);
    nng_socket_set_ms(push, NNG_OPT_RECONNMAXT, 1);
    ck_assert_int_eq(nng_dial(push, url, NULL, NNG_FLAG_NONBLOCK), 0);
    memset(msg, 0xa5, sizeof msg);
    /* a send every millisecond, as steps send (a tight loop of sends did
     * not crash the unpatched nng); 60 s: a liveness bound, it takes about
     * a second */
    while (atomic_load(&refused) < REFUSALS && now_s() - t0 < 60) {
        if (nng_send(push, msg, sizeof msg, NNG_FLAG_NONBLOCK) == 0) sent++;
        usleep(1000);
    }
    ck_assert_int_ge(atomic_load(&refused), REFUSALS);
    ck_assert_int_eq(nng_close(push), 0);
    ck_assert_int_eq(nng_close(pull), 0);
    nng_strfree(url);
    (void)sent;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nng");
    TCase *tc = tcase_create("refused");
    SRunner *sr;
    int failed;
    tcase_add_test(tc, test_push_refused_lives);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
