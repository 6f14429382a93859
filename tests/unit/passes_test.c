/* SPDX-License-Identifier: MIT
 * passes_test.c -- a process's DataLoader passes (checks/passes.h) from
 * hand-built batch events and backward marks: a backward within a pass,
 * one credited after its end (a loader that fetches ahead), an evaluation
 * between training steps, a pass left before its end, two loaders zipped. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/passes.h"

typedef struct proc {
    tpd_proc p;
    tpd_batch b[32];
    tpd_mark m[32];
} proc;

/* ev appends to x, at seq, a batch of loader l and epoch e (end: its
 * end), or a backward when l < 0. */
static void ev(proc *x, uint64_t seq, int l, uint32_t e, bool end)
{
    if (l < 0) {
        tpd_mark *m = &x->m[x->p.nmarks++];
        memset(m, 0, sizeof *m);
        m->seq = seq;
        m->kind = TP_K_BACKWARD;
        return;
    }
    tpd_batch *b = &x->b[x->p.nbatches++];
    memset(b, 0, sizeof *b);
    b->seq = seq;
    b->loader = (uint32_t)l;
    b->epoch = e;
    b->end = end;
}

static proc *start(void)
{
    proc *x = calloc(1, sizeof *x);
    ck_assert_ptr_nonnull(x);
    x->p.batches = x->b;
    x->p.marks = x->m;
    return x;
}

#define BWD -1

START_TEST(test_passes_backward_within_and_credited)
{
    proc *x = start();
    tpd_passes ps;
    /* loader 1 fetches ahead: batch, batch, backward, end, backward; then
     * an evaluation (loader 3); then a pass of one batch whose only
     * backward comes after its end */
    ev(x, 1, 1, 0, false);
    ev(x, 2, 1, 0, false);
    ev(x, 3, BWD, 0, false);
    ev(x, 4, 1, 0, true);
    ev(x, 5, BWD, 0, false);
    ev(x, 6, 3, 0, false);
    ev(x, 7, 3, 0, true);
    ev(x, 8, 1, 1, false);
    ev(x, 9, 1, 1, true);
    ev(x, 10, BWD, 0, false);
    ck_assert_int_eq(tpd_passes_build(&x->p, &ps), TP_OK);
    ck_assert_uint_eq(ps.n, 3);
    const tpd_pass *a = tpd_passes_find(&ps, 1, 0), *e = tpd_passes_find(&ps, 3, 0),
                   *b = tpd_passes_find(&ps, 1, 1);
    ck_assert(a && e && b);
    ck_assert(a->train && a->ended);
    ck_assert_uint_eq(a->batches, 2);
    ck_assert_uint_eq(a->backward, 2); /* the one after its end too */
    ck_assert(!e->train);
    ck_assert_uint_eq(e->backward, 0);
    ck_assert(b->train); /* one batch, its backward after its end */
    ck_assert_uint_eq(b->backward, 1);
    ck_assert_ptr_null(tpd_passes_find(&ps, 2, 0));
    tpd_passes_free(&ps);
    tpd_passes_free(&ps); /* emptied: a no-op */
    free(x);
}
END_TEST

START_TEST(test_passes_zipped_and_left_early)
{
    proc *x = start();
    tpd_passes ps;
    /* two loaders zipped (0 then 1 before each backward): both within,
     * only 1 credited; then loader 2 left after one batch, no end, its
     * backward after the next batch event of loader 0 */
    ev(x, 1, 0, 0, false);
    ev(x, 2, 1, 0, false);
    ev(x, 3, BWD, 0, false);
    ev(x, 4, 0, 0, false);
    ev(x, 5, 1, 0, false);
    ev(x, 6, BWD, 0, false);
    ev(x, 7, 0, 0, true);
    ev(x, 8, 1, 0, true);
    ev(x, 9, 2, 0, false);
    ev(x, 10, 0, 1, false);
    ev(x, 11, BWD, 0, false);
    ck_assert_int_eq(tpd_passes_build(&x->p, &ps), TP_OK);
    ck_assert(tpd_passes_find(&ps, 0, 0)->train);
    ck_assert_uint_eq(tpd_passes_find(&ps, 0, 0)->backward, 0);
    ck_assert(tpd_passes_find(&ps, 1, 0)->train);
    ck_assert_uint_eq(tpd_passes_find(&ps, 1, 0)->backward, 2);
    /* loader 2's span ran on to seq 10 only: the backward at 11 is loader
     * 0's second pass's */
    ck_assert(!tpd_passes_find(&ps, 2, 0)->train);
    ck_assert(!tpd_passes_find(&ps, 2, 0)->ended);
    ck_assert(tpd_passes_find(&ps, 0, 1)->train);
    tpd_passes_free(&ps);
    /* no batches: no passes */
    x->p.nbatches = 0;
    ck_assert_int_eq(tpd_passes_build(&x->p, &ps), TP_OK);
    ck_assert_uint_eq(ps.n, 0);
    tpd_passes_free(&ps);
    free(x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("passes");
    TCase *t = tcase_create("passes");
    tcase_add_test(t, test_passes_backward_within_and_credited);
    tcase_add_test(t, test_passes_zipped_and_left_early);
    suite_add_tcase(s, t);
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
