/* SPDX-License-Identifier: MIT
 * arena_test.c -- the bump allocator (daemon/base/arena.h): arrays grown
 * one element at a time keep their contents and zero the rest, whether
 * they live among other allocations or, past 64 KiB, in a chunk of their
 * own that grows in place; the allocations around them stay intact.  A
 * large array fitted to its length keeps its contents and grows again.
 * Interned copies: one per distinct byte string, NUL-terminated, aligned,
 * found again across the table's growth. */
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
    /* fitted: the small array and one asked to keep its whole capacity
     * stay as they are; the large one keeps its n elements and grows again,
     * zeroed beyond */
    {
        size_t was = wcap;
        ck_assert_ptr_eq(tpd_arena_fit(a, w, &wcap, 3, sizeof *w), w);
        ck_assert_uint_eq(wcap, was);
        ck_assert_ptr_eq(tpd_arena_fit(a, v, &cap, cap, sizeof *v), v);
        ck_assert_uint_gt(cap, n);
    }
    v = tpd_arena_fit(a, v, &cap, n, sizeof *v);
    ck_assert_uint_eq(cap, n);
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(v[i], (int64_t)(i * 7 + 1));
    v = tpd_arena_grow(a, v, &cap, n + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_gt(cap, n);
    for (size_t k = n; k < cap; k++) ck_assert_int_eq(v[k], 0);
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(v[i], (int64_t)(i * 7 + 1));
    tpd_arena_destroy(a);
    tpd_arena_destroy(NULL);
}
END_TEST

START_TEST(test_arena_intern_once_per_bytes)
{
    tpd_arena *a = tpd_arena_create();
    const char *first[5000];
    const int64_t shape[3] = {16, 8, 3}, same[3] = {16, 8, 3}, other[3] = {16, 8, 4};
    const int64_t *s1, *s2, *s3;
    char buf[32];
    ck_assert_ptr_nonnull(a);
    /* past several doublings of the table (256 slots at first) */
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof buf, "model.layers.%d.weight", i);
        first[i] = tpd_arena_intern(a, buf, (size_t)n);
        ck_assert_ptr_nonnull(first[i]);
        ck_assert_str_eq(first[i], buf);
        ck_assert_uint_eq((uintptr_t)first[i] % 16, 0);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof buf, "model.layers.%d.weight", i);
        ck_assert_ptr_eq(tpd_arena_intern(a, buf, (size_t)n), first[i]);
    }
    /* a prefix is another string; the empty one is one too */
    ck_assert_ptr_ne(tpd_arena_intern(a, "model.layers.1.weight", 14), first[1]);
    ck_assert_str_eq(tpd_arena_intern(a, "model.layers.1.weight", 14), "model.layers.1");
    ck_assert_str_eq(tpd_arena_intern(a, "", 0), "");
    ck_assert_ptr_eq(tpd_arena_intern(a, "x", 0), tpd_arena_intern(a, "", 0));
    s1 = tpd_arena_intern(a, shape, sizeof shape);
    s2 = tpd_arena_intern(a, same, sizeof same);
    s3 = tpd_arena_intern(a, other, sizeof other);
    ck_assert_ptr_eq(s1, s2);
    ck_assert_ptr_ne(s1, s3);
    ck_assert(s1[0] == 16 && s1[1] == 8 && s1[2] == 3 && s3[2] == 4);
    tpd_arena_destroy(a);
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
    tcase_add_test(tc, test_arena_intern_once_per_bytes);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
