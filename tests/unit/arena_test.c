/* SPDX-License-Identifier: MIT
 * arena_test.c -- the bump allocator (daemon/base/arena.h): arrays grown
 * one element at a time keep their contents and zero the rest, whether
 * they live among other allocations or, past 64 KiB, in a chunk of their
 * own that grows in place; the allocations around them stay intact. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"

START_TEST(test_arena_grow_keeps_contents)
{
    tpd_arena *a = tpd_arena_create();
    int64_t *v = NULL, *w = NULL;
    size_t cap = 0, wcap = 0, n = 300000;
    char *strs[64];
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < n; i++) {
        size_t was = cap;
        int64_t *g = tpd_arena_grow(a, v, &cap, i + 1, sizeof *v);
        ck_assert_ptr_nonnull(g);
        ck_assert_uint_ge(cap, i + 1);
        if (cap != was)
            for (size_t k = i; k < cap; k++) ck_assert_int_eq(g[k], 0); /* zeroed beyond */
        v = g;
        v[i] = (int64_t)(i * 7 + 1);
        if (i % 5000 == 0) { /* other allocations in between */
            char buf[32];
            snprintf(buf, sizeof buf, "s%zu", i / 5000);
            strs[i / 5000] = tpd_arena_strdup(a, buf);
            w = tpd_arena_grow(a, w, &wcap, i / 5000 + 1, sizeof *w);
            w[i / 5000] = -(int64_t)i;
        }
    }
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(v[i], (int64_t)(i * 7 + 1));
    for (size_t j = 0; j * 5000 < n; j++) {
        char buf[32];
        snprintf(buf, sizeof buf, "s%zu", j);
        ck_assert_str_eq(strs[j], buf);
        ck_assert_int_eq(w[j], -(int64_t)(j * 5000));
    }
    ck_assert_ptr_eq(tpd_arena_grow(a, v, &cap, 10, sizeof *v), v); /* nothing to do */
    tpd_arena_destroy(a);
    tpd_arena_destroy(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_arena_grow_keeps_contents);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
