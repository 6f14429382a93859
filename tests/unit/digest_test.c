/* SPDX-License-Identifier: MIT
 * digest_test.c -- tensor digests and statistics: what the digest covers,
 * exact statistics where they are exactly representable, non-finite counts,
 * and the same result from the chunked and the two-thread paths. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/digest.h"

static void digest(const char *dt, const int64_t *shape, int nd, const void *p, size_t n,
                   uint8_t d[16], tp_stats *st)
{
    tpa_digest_tensor(dt, shape, nd, p, n, tpa_dtype_parse(dt), d, st);
}

START_TEST(test_digest_covers_dtype_shape_and_bytes)
{
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    uint8_t a[16], b[16];
    tp_stats st;
    digest("torch.float32", s23, 2, x, sizeof x, a, &st);
    digest("torch.float32", s23, 2, x, sizeof x, b, &st);
    ck_assert_mem_eq(a, b, 16);
    digest("torch.float32", s32, 2, x, sizeof x, b, &st);
    ck_assert(memcmp(a, b, 16) != 0);
    digest("torch.int32", s23, 2, x, sizeof x, b, &st);
    ck_assert(memcmp(a, b, 16) != 0);
    x[5] = 7;
    digest("torch.float32", s23, 2, x, sizeof x, b, &st);
    ck_assert(memcmp(a, b, 16) != 0);
}
END_TEST

START_TEST(test_digest_stats_float32_exact)
{
    float x[37];
    int64_t n = 37;
    uint8_t d[16];
    tp_stats st;
    double sum = 0, sq = 0;
    for (int i = 0; i < 37; i++) {
        x[i] = (float)(i - 18);
        sum += x[i];
        sq += x[i] * x[i];
    }
    x[3] = NAN;
    x[7] = INFINITY;
    sum -= (3 - 18) + (7 - 18);
    sq -= (3.0 - 18) * (3 - 18) + (7.0 - 18) * (7 - 18);
    digest("torch.float32", &n, 1, x, sizeof x, d, &st);
    ck_assert_double_eq(st.sum, sum);
    ck_assert_double_eq_tol(st.l2, sqrt(sq), 1e-12);
    ck_assert_double_eq(st.maxabs, 18);
    ck_assert_uint_eq(st.nonfinite, 2);
}
END_TEST

START_TEST(test_digest_stats_other_dtypes)
{
    double f64[3] = {-1.5, 2.5, 4};
    int64_t i64[4] = {-3, 1, 2, 7};
    uint16_t bf16[2] = {0x3f80, 0xc000}; /* 1.0, -2.0 */
    int64_t n3 = 3, n4 = 4, n2 = 2;
    uint8_t d[16];
    tp_stats st;
    digest("torch.float64", &n3, 1, f64, sizeof f64, d, &st);
    ck_assert_double_eq(st.sum, 5);
    ck_assert_double_eq(st.maxabs, 4);
    digest("torch.int64", &n4, 1, i64, sizeof i64, d, &st);
    ck_assert_double_eq(st.sum, 7);
    ck_assert_double_eq(st.maxabs, 7);
    digest("torch.bfloat16", &n2, 1, bf16, sizeof bf16, d, &st);
    ck_assert_double_eq(st.sum, -1);
    ck_assert_double_eq(st.l2, sqrt(5));
    digest("torch.complex64", &n2, 1, f64, 16, d, &st);
    ck_assert(isnan(st.sum));
}
END_TEST

START_TEST(test_digest_large_buffer_same_as_pieces)
{
    /* above the size where statistics move to the worker thread */
    size_t n = (size_t)3 << 20;
    float *x = malloc(n * sizeof *x);
    int64_t shape = (int64_t)n;
    uint8_t d1[16], d2[16];
    tp_stats st1, st2;
    double sum = 0;
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)(i % 7) - 3);
        sum += x[i];
    }
    x[12345] = NAN;
    sum -= (float)((int)(12345 % 7) - 3);
    digest("torch.float32", &shape, 1, x, n * sizeof *x, d1, &st1);
    digest("torch.float32", &shape, 1, x, n * sizeof *x, d2, &st2);
    ck_assert_mem_eq(d1, d2, 16);
    ck_assert_double_eq(st1.sum, sum);
    ck_assert_double_eq(st1.sum, st2.sum);
    ck_assert_double_eq(st1.l2, st2.l2);
    ck_assert_double_eq(st1.maxabs, 3);
    ck_assert_uint_eq(st1.nonfinite, 1);
    free(x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("digest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_digest_covers_dtype_shape_and_bytes);
    tcase_add_test(tc, test_digest_stats_float32_exact);
    tcase_add_test(tc, test_digest_stats_other_dtypes);
    tcase_add_test(tc, test_digest_large_buffer_same_as_pieces);
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
