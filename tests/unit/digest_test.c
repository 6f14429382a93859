/* SPDX-License-Identifier: MIT
 * digest_test.c -- tensor digests and statistics: what the digest covers,
 * exact statistics where they are exactly representable, non-finite counts,
 * the fused pass (its fast kernels, its pieces, slices and prefetches) and
 * the one-loop pass (its stripes and blocks) against a plain
 * element-by-element definition and XXH3-128 itself, and every kernel this
 * CPU runs against the portable one, bit for bit. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "digest/digest.h"

static void digest(const char *dt, const int64_t *shape, int nd, const void *p, size_t n,
                   uint8_t d[16], tp_stats *st)
{
    tp_digest_tensor(dt, shape, nd, p, n, tp_dtype_parse(dt), d, st);
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

/* reference is the definition the kernels must reproduce exactly: element i
 * goes to lane i % 16 (sum, then the square by fused multiply-add), the
 * maximum and the sums skip non-finite elements and count them, the lanes
 * are added in order. */
static void reference(const float *x, size_t n, tp_stats *st)
{
    double sum[16] = {0}, sq[16] = {0};
    st->maxabs = 0, st->nonfinite = 0, st->sum = 0, st->l2 = 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (!isfinite(x[i])) {
            st->nonfinite++;
            continue;
        }
        sum[i % 16] += v;
        sq[i % 16] = fma(v, v, sq[i % 16]);
        if (fabs(v) > st->maxabs) st->maxabs = fabs(v);
    }
    for (int j = 0; j < 16; j++) {
        st->sum += sum[j];
        st->l2 += sq[j];
    }
    st->l2 = sqrt(st->l2);
}

/* whole_hash is XXH3-128 over the dtype name, the shape and the bytes at once. */
static void whole_hash(const char *dt, const int64_t *shape, int nd, const void *p, size_t nbytes,
                       uint8_t out[16])
{
    size_t hl = strlen(dt) + 1 + 8 * (size_t)nd;
    uint8_t *buf = malloc(hl + nbytes);
    XXH128_canonical_t c;
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, dt, strlen(dt) + 1);
    for (int i = 0; i < nd; i++)
        for (int k = 0; k < 8; k++)
            buf[strlen(dt) + 1 + 8 * (size_t)i + (size_t)k] =
                (uint8_t)((uint64_t)shape[i] >> (8 * k));
    if (nbytes) memcpy(buf + hl, p, nbytes);
    XXH128_canonicalFromHash(&c, XXH3_128bits(buf, hl + nbytes));
    memcpy(out, c.digest, 16);
    free(buf);
}

static void check_f32(const float *x, size_t n)
{
    int64_t shape = (int64_t)n;
    uint8_t d[16], want[16];
    tp_stats st, ref;
    digest("torch.float32", &shape, 1, x, n * sizeof *x, d, &st);
    reference(x, n, &ref);
    whole_hash("torch.float32", &shape, 1, x, n * sizeof *x, want);
    ck_assert_mem_eq(d, want, 16);
    ck_assert_msg(memcmp(&st.sum, &ref.sum, 8) == 0, "n=%zu sum %.17g != %.17g", n, st.sum,
                  ref.sum);
    ck_assert_msg(memcmp(&st.l2, &ref.l2, 8) == 0, "n=%zu l2 %.17g != %.17g", n, st.l2, ref.l2);
    ck_assert_msg(st.maxabs == ref.maxabs, "n=%zu max %g != %g", n, st.maxabs, ref.maxabs);
    ck_assert_uint_eq(st.nonfinite, ref.nonfinite);
}

static float *noise(size_t n, unsigned seed)
{
    float *x = malloc((n + 4) * sizeof *x);
    uint32_t r = seed * 2654435761u + 1;
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n + 4; i++) {
        r = r * 1664525u + 1013904223u;
        /* magnitudes from 1e-8 to 1e3, both signs: sums that round */
        x[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * powf(10.0f, (float)(r % 12) - 8.0f);
    }
    return x;
}

START_TEST(test_digest_fused_matches_definition)
{
    /* around the lanes (16), the slices (256 floats), the pieces (1024) and
     * the prefetch distance (2048), plus a large buffer */
    static const size_t sizes[] = {1,    15,   16,   17,   255,  256,  257,  1023,
                                   1024, 1025, 2047, 2048, 2049, 3071, 4103, 300007};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        float *x = noise(sizes[k], (unsigned)k);
        for (size_t off = 0; off < 4; off++) check_f32(x + off, sizes[k]); /* any alignment */
        free(x);
    }
}
END_TEST

START_TEST(test_digest_fused_non_finite)
{
    /* a non-finite element in the body sends the statistics to the masked
     * pass; one in the tail is masked there; both give the definition */
    size_t n = 300007;
    float *x = noise(n, 7);
    check_f32(x, n);
    x[5000] = NAN;
    check_f32(x, n);
    x[5000] = INFINITY;
    x[n - 3] = -INFINITY;
    check_f32(x, n);
    x[5000] = 1.0f;
    check_f32(x, n);
    x[0] = NAN;
    check_f32(x, 20);
    check_f32(x + 1, 20);
    free(x);
}
END_TEST

START_TEST(test_digest_bf16_fused_matches_definition)
{
    size_t n = 5000;
    uint16_t *h = malloc(n * sizeof *h);
    float *f = malloc(n * sizeof *f);
    float *x = noise(n, 3);
    int64_t shape = (int64_t)n;
    uint8_t d[16];
    tp_stats st, ref;
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        h[i] = (uint16_t)(bits >> 16);
        bits = (uint32_t)h[i] << 16;
        memcpy(&f[i], &bits, 4);
    }
    h[4321] = 0x7fc0; /* NaN */
    f[4321] = NAN;
    digest("torch.bfloat16", &shape, 1, h, n * sizeof *h, d, &st);
    reference(f, n, &ref);
    ck_assert(memcmp(&st.sum, &ref.sum, 8) == 0);
    ck_assert(memcmp(&st.l2, &ref.l2, 8) == 0);
    ck_assert(st.maxabs == ref.maxabs);
    ck_assert_uint_eq(st.nonfinite, 1);
    free(h);
    free(f);
    free(x);
}
END_TEST

/* ---- every kernel gives the portable kernel's bits ---- */

static uint32_t next(uint32_t *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 17;
    *r ^= *r << 5;
    return *r;
}

/* f32_bits is a random float32: signed zeros, denormals, and when nonfinite
 * infinities and NaNs among normal numbers from 2^-40 to 2^40 of both signs
 * (sums that round). */
static uint32_t f32_bits(uint32_t *r, int nonfinite)
{
    uint32_t x = next(r), sign = x & 0x80000000u, y = next(r);
    switch (x % 61) {
    case 0:
        return sign;
    case 1:
        return sign | (y & 0x7fffffu);
    case 2:
        return nonfinite ? sign | 0x7f800000u : sign;
    case 3:
        return nonfinite ? 0x7fc00000u | (y & 0x3fffffu) : sign;
    default:
        return sign | (87 + y % 81) << 23 | (next(r) & 0x7fffffu);
    }
}

/* f16_bits is a random float16 of every class the same way. */
static uint16_t f16_bits(uint32_t *r, int nonfinite)
{
    uint32_t x = next(r), sign = (x >> 16) & 0x8000u, y = next(r);
    switch (x % 61) {
    case 0:
        return (uint16_t)sign;
    case 1:
        return (uint16_t)(sign | (y & 0x3ffu));
    case 2:
        return (uint16_t)(nonfinite ? sign | 0x7c00u : sign);
    case 3:
        return (uint16_t)(nonfinite ? 0x7e00u | (y & 0x1ffu) : sign);
    default:
        return (uint16_t)(sign | (1 + y % 30) << 10 | (next(r) & 0x3ffu));
    }
}

/* fill writes n random elements of dtype dt (float32, bfloat16 or float16)
 * at p; nonfinite puts infinities and NaNs among them. */
static void fill(void *p, const char *dt, size_t n, int nonfinite, uint32_t seed)
{
    uint32_t r = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(dt, "torch.float32") == 0 || strcmp(dt, "float32") == 0) {
            uint32_t v = f32_bits(&r, nonfinite);
            memcpy((uint8_t *)p + 4 * i, &v, 4);
        } else {
            uint16_t v = strcmp(dt, "torch.float16") == 0
                             ? f16_bits(&r, nonfinite)
                             : (uint16_t)(f32_bits(&r, nonfinite) >> 16);
            memcpy((uint8_t *)p + 2 * i, &v, 2);
        }
    }
}

/* same_on_every_kernel digests nbytes at p with each kernel this CPU runs
 * and checks the digest and the statistics against the portable kernel's,
 * bit for bit, and the digest against XXH3-128 of the whole message. */
static void same_on_every_kernel(const char *dt, const int64_t *shape, int nd, const void *p,
                                 size_t nbytes)
{
    tp_kernel best = tp_digest_use_kernel(TP_KERNEL_AVX512);
    uint8_t want[16], d[16];
    tp_stats ref, st;
    whole_hash(dt, shape, nd, p, nbytes, want);
    tp_digest_use_kernel(TP_KERNEL_PORTABLE);
    digest(dt, shape, nd, p, nbytes, d, &ref);
    ck_assert_mem_eq(d, want, 16);
    for (int k = TP_KERNEL_AVX2; k <= (int)best; k++) {
        ck_assert_int_eq(tp_digest_use_kernel((tp_kernel)k), k);
        for (int pf = TP_PREFETCH_ON; pf <= TP_PREFETCH_OFF; pf++) { /* both ways of the pass */
            tp_digest_use_prefetch((tp_prefetch)pf);
            digest(dt, shape, nd, p, nbytes, d, &st);
            ck_assert_msg(memcmp(d, want, 16) == 0, "%s %zu bytes kernel %d prefetch %d: digest",
                          dt, nbytes, k, pf);
            ck_assert_msg(memcmp(&st.sum, &ref.sum, 8) == 0 && memcmp(&st.l2, &ref.l2, 8) == 0 &&
                              memcmp(&st.maxabs, &ref.maxabs, 8) == 0 &&
                              st.nonfinite == ref.nonfinite,
                          "%s %zu bytes kernel %d prefetch %d: sum %a/%a l2 %a/%a max %a/%a nf "
                          "%llu/%llu",
                          dt, nbytes, k, pf, st.sum, ref.sum, st.l2, ref.l2, st.maxabs, ref.maxabs,
                          (unsigned long long)st.nonfinite, (unsigned long long)ref.nonfinite);
        }
    }
    tp_digest_use_kernel(TP_KERNEL_AVX512);
    tp_digest_use_prefetch(TP_PREFETCH_AUTO);
}

/* kernels_agree checks n random elements of dt, with and without non-finite
 * ones, at a few misalignments, and with the bytes of one element too many
 * or too few for a whole number of elements. */
static void kernels_agree(const char *dt, size_t es, const int64_t *shape, int nd, size_t n,
                          uint32_t seed)
{
    uint8_t *buf = malloc(n * es + 64);
    ck_assert_ptr_nonnull(buf);
    for (int nonfinite = 0; nonfinite < 2; nonfinite++) {
        fill(buf, dt, n + 64 / es, nonfinite, seed);
        for (size_t off = 0; off < 4; off++)
            same_on_every_kernel(dt, shape, nd, buf + off * es, n * es);
        same_on_every_kernel(dt, shape, nd, buf + es, n * es - 1);
        same_on_every_kernel(dt, shape, nd, buf + es, n * es + 1);
    }
    free(buf);
}

START_TEST(test_digest_kernels_agree)
{
    /* around the one-loop pass's smallest tensor (16 KiB), XXH3's stripes
     * (64 bytes) and blocks (1 KiB) with headers of 22, 23 and 64 bytes (the
     * last ends on a stripe), a header too long for the one-loop pass, a
     * scalar's header (no shape), and large tensors */
    static const size_t f32[] = {1, 15, 17, 255, 4095, 4096, 4097, 4111, 4351, 65541, 100003};
    static const size_t f16[] = {7, 8191, 8192, 8193, 8223, 8703, 70001};
    static const int64_t seven[7] = {1, 2, 3, 4, 5, 6, 7};
    int64_t many[70];
    for (int i = 0; i < 70; i++) many[i] = i;
    for (size_t k = 0; k < sizeof f32 / sizeof f32[0]; k++) {
        int64_t n = (int64_t)f32[k];
        kernels_agree("torch.float32", 4, &n, 1, f32[k], (uint32_t)k);
        kernels_agree("float32", 4, seven, 7, f32[k], (uint32_t)k + 100);
    }
    for (size_t k = 0; k < sizeof f16 / sizeof f16[0]; k++) {
        int64_t n = (int64_t)f16[k];
        kernels_agree("torch.bfloat16", 2, &n, 1, f16[k], (uint32_t)k + 200);
        kernels_agree("torch.float16", 2, &n, 1, f16[k], (uint32_t)k + 300);
    }
    kernels_agree("torch.float32", 4, many, 70, 5000, 400);
    kernels_agree("torch.float16", 2, NULL, 0, 8201, 500);
}
END_TEST

START_TEST(test_digest_kernels_agree_on_every_block_end)
{
    /* every length modulo XXH3's block that a float32 message (header of
     * 64 bytes) can have, and odd ones for bfloat16, past the one-loop
     * pass's smallest tensor: which stripe is the last, and whether a block
     * ends just before it */
    static const int64_t seven[7] = {1, 2, 3, 4, 5, 6, 7};
    size_t n = 4096 + 300;
    uint8_t *buf = malloc(n * 4);
    ck_assert_ptr_nonnull(buf);
    fill(buf, "float32", n, 0, 9);
    for (size_t m = 4096; m <= n; m++) {
        int64_t len = (int64_t)m;
        same_on_every_kernel("float32", seven, 7, buf, m * 4);
        same_on_every_kernel("torch.bfloat16", &len, 1, buf, m * 4 - m % 2);
    }
    free(buf);
}
END_TEST

START_TEST(test_digest_prefetch_chosen_by_timing)
{
    /* a tensor of 4 MiB or more is timed: the first 32 decide the way of
     * prefetching, each digested the same as with either way fixed, with
     * and without non-finite elements; a way fixed stays fixed */
    size_t n = ((size_t)1 << 20) + 5;
    int64_t len = (int64_t)n;
    float *buf = malloc(n * 4);
    uint8_t want[16], d[16];
    tp_stats ref, st;
    ck_assert_ptr_nonnull(buf);
    for (int nonfinite = 0; nonfinite < 2; nonfinite++) {
        fill(buf, "float32", n, nonfinite, 11);
        tp_digest_use_prefetch(TP_PREFETCH_OFF);
        digest("float32", &len, 1, buf, n * 4, want, &ref);
        for (int i = 0; i < 40; i++) digest("float32", &len, 1, buf, n * 4, d, &st);
        ck_assert_int_eq(tp_digest_prefetch(), TP_PREFETCH_OFF);
        tp_digest_use_prefetch(TP_PREFETCH_ON);
        digest("float32", &len, 1, buf, n * 4, d, &st);
        ck_assert_mem_eq(d, want, 16);
        ck_assert(memcmp(&st, &ref, sizeof st) == 0);
        tp_digest_use_prefetch(TP_PREFETCH_AUTO);
        ck_assert_int_eq(tp_digest_prefetch(), TP_PREFETCH_AUTO);
        for (int i = 0; i < 32; i++) {
            digest("float32", &len, 1, buf, n * 4, d, &st);
            ck_assert_mem_eq(d, want, 16);
            ck_assert(memcmp(&st, &ref, sizeof st) == 0);
        }
        if (tp_digest_use_kernel(TP_KERNEL_AVX512) == TP_KERNEL_AVX512) /* else no pass timed */
            ck_assert_int_ne(tp_digest_prefetch(), TP_PREFETCH_AUTO);
    }
    free(buf);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("digest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_digest_covers_dtype_shape_and_bytes);
    tcase_add_test(tc, test_digest_stats_float32_exact);
    tcase_add_test(tc, test_digest_stats_other_dtypes);
    tcase_add_test(tc, test_digest_fused_matches_definition);
    tcase_add_test(tc, test_digest_fused_non_finite);
    tcase_add_test(tc, test_digest_bf16_fused_matches_definition);
    tcase_add_test(tc, test_digest_kernels_agree);
    tcase_add_test(tc, test_digest_kernels_agree_on_every_block_end);
    tcase_add_test(tc, test_digest_prefetch_chosen_by_timing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    tp_kernel best = tp_digest_use_kernel(TP_KERNEL_AVX512);
    int failed;
    fprintf(stderr, "digest_test: kernels C to %s\n",
            best == TP_KERNEL_AVX512 ? "AVX-512"
            : best == TP_KERNEL_AVX2 ? "AVX2"
                                     : "C");
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
