/* SPDX-License-Identifier: MIT
 * devdigest_test.c -- the device digest "dev1" (agent/cuda/devdigest.h),
 * through its host reference (agent/cuda/ref.c), which the GPU kernels
 * must match bit for bit: its lanes against a plain loop over the pairs at
 * every size around the chunks' edges (each pair counted once, whatever
 * the decomposition), its statistics against a plain sum, half-precision
 * conversion against the compiler's, what changes a digest, and fixed
 * values, so that the function cannot change unnoticed. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cuda/tpcuda.h"
#include "digest/digest.h"

/* plain_lanes: the definition, one pair after another. */
static void plain_lanes(const uint8_t *p, size_t n, unsigned long long lane[2])
{
    lane[0] = lane[1] = 0;
    for (size_t j = 0; 8 * j < n; j++) {
        uint8_t v[8] = {0};
        memcpy(v, p + 8 * j, n - 8 * j < 8 ? n - 8 * j : 8);
        tpa_dev1_pair(lane, j, tpa_dev1_le32(v), tpa_dev1_le32(v + 4));
    }
}

static uint8_t *random_bytes(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (uint8_t)x;
    }
    return p;
}

START_TEST(test_lanes_are_the_plain_sum_at_every_edge)
{
    const size_t sizes[] = {0,
                            1,
                            7,
                            8,
                            9,
                            15,
                            16,
                            17,
                            4095,
                            4096,
                            TPA_DEV1_CHUNK - 1,
                            TPA_DEV1_CHUNK,
                            TPA_DEV1_CHUNK + 1,
                            TPA_DEV1_CHUNK * 3 + 8,
                            (size_t)TPA_DEV1_CHUNK * TPA_DEV1_THREADS - 3,
                            (size_t)TPA_DEV1_CHUNK * TPA_DEV1_THREADS + 17,
                            (size_t)TPA_DEV1_CHUNK * (2 * TPA_DEV1_THREADS + 5) + 9};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *p = random_bytes(sizes[i], (unsigned)i);
        unsigned long long want[2];
        tpa_dev1_part r;
        plain_lanes(p, sizes[i], want);
        tpcu_reference(p, sizes[i], TPA_DEV1_U8, &r);
        ck_assert_msg(r.lane[0] == want[0] && r.lane[1] == want[1], "size %zu", sizes[i]);
        free(p);
    }
}
END_TEST

START_TEST(test_statistics_float32)
{
    size_t n = TPA_DEV1_CHUNK * 3 / 4 + 5; /* elements: several chunks, a tail */
    float *x = malloc(n * sizeof *x);
    double sum = 0, sq = 0, mx = 0;
    tpa_dev1_part r;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((double)(i % 1000) - 499.5) / 7.0f;
        if (i % 977 == 3) x[i] = i % 2 ? NAN : -INFINITY;
    }
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) sum += x[i], sq += (double)x[i] * x[i], mx = fmax(mx, fabs(x[i]));
    tpcu_reference(x, n * sizeof *x, TPA_DEV1_F32, &r);
    ck_assert_double_eq_tol(r.sum, sum, 1e-9 * sqrt(sq));
    ck_assert_double_eq_tol(r.sq, sq, 1e-12 * sq);
    ck_assert_double_eq(r.mx, mx);
    ck_assert_uint_eq(r.nf, n / 977 + (n % 977 > 3));
    free(x);
}
END_TEST

START_TEST(test_statistics_integers_and_bool)
{
    int64_t a[5] = {-3, 4, INT64_C(1) << 40, 0, -7};
    uint8_t b[4] = {1, 0, 1, 1};
    tpa_dev1_part r;
    tpcu_reference(a, sizeof a, TPA_DEV1_I64, &r);
    ck_assert_double_eq(r.sum, -3 + 4 + (double)(INT64_C(1) << 40) - 7);
    ck_assert_double_eq(r.mx, (double)(INT64_C(1) << 40));
    ck_assert_uint_eq(r.nf, 0);
    tpcu_reference(b, sizeof b, TPA_DEV1_BOOL, &r);
    ck_assert_double_eq(r.sum, 3);
    ck_assert_double_eq(r.sq, 3);
}
END_TEST

START_TEST(test_half_conversion_exact)
{
    for (unsigned h = 0; h < 65536; h++) {
        _Float16 f;
        uint16_t u = (uint16_t)h;
        float got = tpa_dev1_half(h), want;
        memcpy(&f, &u, 2);
        want = (float)f;
        if (isnan(want))
            ck_assert_msg(isnan(got), "0x%04x", h);
        else
            ck_assert_msg(memcmp(&got, &want, 4) == 0, "0x%04x: %a vs %a", h, got, want);
    }
}
END_TEST

START_TEST(test_every_change_is_seen)
{
    size_t n = 3 * TPA_DEV1_CHUNK + 40;
    uint8_t *p = random_bytes(n, 7);
    tpa_dev1_part a, b;
    tpcu_reference(p, n, TPA_DEV1_F32, &a);
    for (size_t at = 0; at < n; at += 997) {
        for (int bit = 0; bit < 8; bit += 3) {
            p[at] ^= (uint8_t)(1u << bit);
            tpcu_reference(p, n, TPA_DEV1_F32, &b);
            ck_assert_msg(b.lane[0] != a.lane[0] && b.lane[1] != a.lane[1], "byte %zu bit %d", at,
                          bit);
            p[at] ^= (uint8_t)(1u << bit);
        }
    }
    /* two different elements swapped */
    {
        uint32_t t;
        memcpy(&t, p + 8, 4);
        memcpy(p + 8, p + 4096, 4);
        memcpy(p + 4096, &t, 4);
        tpcu_reference(p, n, TPA_DEV1_F32, &b);
        ck_assert(b.lane[0] != a.lane[0] && b.lane[1] != a.lane[1]);
    }
    free(p);
}
END_TEST

START_TEST(test_zeros_of_other_lengths_differ)
{
    uint8_t z[64] = {0}, d1[16], d2[16], d3[16];
    int64_t s16 = 16, s15 = 15, s4x4[2] = {4, 4};
    tpa_dev1_part r1, r2;
    tpcu_reference(z, 64, TPA_DEV1_F32, &r1);
    tpcu_reference(z, 60, TPA_DEV1_F32, &r2);
    tp_digest_device("torch.float32", &s16, 1, 64, r1.lane, d1);
    tp_digest_device("torch.float32", &s15, 1, 60, r2.lane, d2);
    ck_assert(memcmp(d1, d2, 16) != 0);
    tp_digest_device("torch.float32", s4x4, 2, 64, r1.lane, d3);
    ck_assert(memcmp(d1, d3, 16) != 0);
    tp_digest_device("torch.int32", &s16, 1, 64, r1.lane, d3);
    ck_assert(memcmp(d1, d3, 16) != 0);
}
END_TEST

/* The values the function gives today: a change to devdigest.h that moves
 * them is a new function, with a new tag ("dev2"), never a silent one. */
START_TEST(test_fixed_values)
{
    uint8_t bytes[100];
    tpa_dev1_part r;
    for (int i = 0; i < 100; i++) bytes[i] = (uint8_t)(i * 37 + 11);
    tpcu_reference(bytes, sizeof bytes, TPA_DEV1_U8, &r);
    ck_assert_uint_eq(r.lane[0], 0x74226f6759db0618ULL);
    ck_assert_uint_eq(r.lane[1], 0x69648e1c6ef12a2dULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("devdigest");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_lanes_are_the_plain_sum_at_every_edge);
    tcase_add_test(tc, test_statistics_float32);
    tcase_add_test(tc, test_statistics_integers_and_bool);
    tcase_add_test(tc, test_half_conversion_exact);
    tcase_add_test(tc, test_every_change_is_seen);
    tcase_add_test(tc, test_zeros_of_other_lengths_differ);
    tcase_add_test(tc, test_fixed_values);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
