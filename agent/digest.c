/* SPDX-License-Identifier: MIT
 * digest.c -- fused XXH3-128 + statistics over tensor memory.
 *
 * Memory is read once: each 4 KiB piece is hashed, then its statistics are
 * accumulated from L1 while later lines are prefetched (see "the fused
 * pass").  On this project's machines that runs at the speed of a plain
 * memory read (bench/hash_bench.c).  Statistics use sixteen independent
 * double accumulators; the order is fixed, so equal bytes always give equal
 * statistics, whichever kernel computed them. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <string.h>

#include <xxhash.h>

#include "agent/digest.h"
#include "agent/xxh3_avx2.h"

#define LANES 16

/* hash_update feeds XXH3 through its AVX2 build when the CPU has one. */
static void hash_update(XXH3_state_t *s, const void *p, size_t n)
{
    if (tpa_xxh3_avx2_available())
        tpa_xxh3_128_update_avx2(s, p, n);
    else
        XXH3_128bits_update(s, p, n);
}

/* Sixteen double accumulators: element i of a float32 run goes to lane
 * i % 16, squares are accumulated with fused multiply-add, and the lanes are
 * reduced in a fixed order, so the AVX2 kernel and the portable one give the
 * same bits for the same bytes. */
typedef struct acc {
    double sum[LANES], sq[LANES];
    double mx;
    uint64_t nf;
} acc;

static const struct {
    const char *name;
    tpa_dtype dt;
} dtypes[] = {
    {"float32", TPA_DT_F32},   {"float", TPA_DT_F32},   {"float64", TPA_DT_F64},
    {"double", TPA_DT_F64},    {"float16", TPA_DT_F16}, {"half", TPA_DT_F16},
    {"bfloat16", TPA_DT_BF16}, {"int8", TPA_DT_I8},     {"int16", TPA_DT_I16},
    {"short", TPA_DT_I16},     {"int32", TPA_DT_I32},   {"int", TPA_DT_I32},
    {"int64", TPA_DT_I64},     {"long", TPA_DT_I64},    {"uint8", TPA_DT_U8},
    {"uint16", TPA_DT_U16},    {"uint32", TPA_DT_U32},  {"uint64", TPA_DT_U64},
    {"bool", TPA_DT_BOOL},
};

tpa_dtype tpa_dtype_parse(const char *name)
{
    if (strncmp(name, "torch.", 6) == 0) name += 6;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(name, dtypes[i].name) == 0) return dtypes[i].dt;
    return TPA_DT_OTHER;
}

static inline void add(acc *a, int lane, double v)
{
    double av = fabs(v);
    a->sum[lane] += v;
    a->sq[lane] = fma(v, v, a->sq[lane]);
    a->mx = av > a->mx ? av : a->mx;
}

/* f32_portable accumulates n floats (n a multiple of 16 or the tail). */
static void f32_portable(acc *a, const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = p[i];
        if (fabsf(v) <= FLT_MAX)
            add(a, (int)(i % LANES), v);
        else
            a->nf++;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The sixteen lanes in four registers of sums (s0-s3) and four of squares
 * (q0-q3), in and out of an acc. */
#define LANES_LOAD(a)                                                                              \
    __m256d s0 = _mm256_loadu_pd(&(a)->sum[0]), s1 = _mm256_loadu_pd(&(a)->sum[4]);                \
    __m256d s2 = _mm256_loadu_pd(&(a)->sum[8]), s3 = _mm256_loadu_pd(&(a)->sum[12]);               \
    __m256d q0 = _mm256_loadu_pd(&(a)->sq[0]), q1 = _mm256_loadu_pd(&(a)->sq[4]);                  \
    __m256d q2 = _mm256_loadu_pd(&(a)->sq[8]), q3 = _mm256_loadu_pd(&(a)->sq[12])
#define LANES_STORE(a)                                                                             \
    do {                                                                                           \
        _mm256_storeu_pd(&(a)->sum[0], s0), _mm256_storeu_pd(&(a)->sum[4], s1);                    \
        _mm256_storeu_pd(&(a)->sum[8], s2), _mm256_storeu_pd(&(a)->sum[12], s3);                   \
        _mm256_storeu_pd(&(a)->sq[0], q0), _mm256_storeu_pd(&(a)->sq[4], q1);                      \
        _mm256_storeu_pd(&(a)->sq[8], q2), _mm256_storeu_pd(&(a)->sq[12], q3);                     \
    } while (0)

/* half8 accumulates eight floats into two double accumulators each. */
#define HALF8(v, s_lo, s_hi, q_lo, q_hi)                                                           \
    do {                                                                                           \
        __m256i bad_ = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), expm), expm);   \
        __m256 f_ = _mm256_andnot_ps(_mm256_castsi256_ps(bad_), v);                                \
        __m256d lo_ = _mm256_cvtps_pd(_mm256_castps256_ps128(f_));                                 \
        __m256d hi_ = _mm256_cvtps_pd(_mm256_extractf128_ps(f_, 1));                               \
        nf +=                                                                                      \
            (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(bad_))); \
        mx = _mm256_max_ps(mx, _mm256_and_ps(f_, absm));                                           \
        s_lo = _mm256_add_pd(s_lo, lo_);                                                           \
        s_hi = _mm256_add_pd(s_hi, hi_);                                                           \
        q_lo = _mm256_fmadd_pd(lo_, lo_, q_lo);                                                    \
        q_hi = _mm256_fmadd_pd(hi_, hi_, q_hi);                                                    \
    } while (0)

__attribute__((target("avx2,fma"))) static void f32_avx2(acc *a, const float *p, size_t n)
{
    const __m256i expm = _mm256_set1_epi32(0x7f800000);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    LANES_LOAD(a);
    __m256 mx = _mm256_setzero_ps();
    uint64_t nf = 0;
    float m[8];
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m256 v0 = _mm256_loadu_ps(p + i), v1 = _mm256_loadu_ps(p + i + 8);
        HALF8(v0, s0, s1, q0, q1);
        HALF8(v1, s2, s3, q2, q3);
    }
    LANES_STORE(a);
    _mm256_storeu_ps(m, mx);
    for (int k = 0; k < 8; k++) a->mx = m[k] > a->mx ? m[k] : a->mx;
    a->nf += nf;
}

/* f32_avx2_fast is f32_avx2 without the non-finite masks: for finite data
 * the same bits.  Its maxima are split in two to shorten the chain. */
__attribute__((target("avx2,fma"))) static void f32_avx2_fast(acc *a, const float *p, size_t n)
{
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    LANES_LOAD(a);
    __m256 mx0 = _mm256_setzero_ps(), mx1 = _mm256_setzero_ps();
    float m[8];
    for (size_t i = 0; i + 16 <= n; i += 16) {
        /* converting straight from memory saves the lane extracts; the
         * second read of each line comes from L1 */
        __m256d a0 = _mm256_cvtps_pd(_mm_loadu_ps(p + i));
        __m256d a1 = _mm256_cvtps_pd(_mm_loadu_ps(p + i + 4));
        __m256d a2 = _mm256_cvtps_pd(_mm_loadu_ps(p + i + 8));
        __m256d a3 = _mm256_cvtps_pd(_mm_loadu_ps(p + i + 12));
        mx0 = _mm256_max_ps(mx0, _mm256_and_ps(_mm256_loadu_ps(p + i), absm));
        mx1 = _mm256_max_ps(mx1, _mm256_and_ps(_mm256_loadu_ps(p + i + 8), absm));
        s0 = _mm256_add_pd(s0, a0);
        s1 = _mm256_add_pd(s1, a1);
        s2 = _mm256_add_pd(s2, a2);
        s3 = _mm256_add_pd(s3, a3);
        q0 = _mm256_fmadd_pd(a0, a0, q0);
        q1 = _mm256_fmadd_pd(a1, a1, q1);
        q2 = _mm256_fmadd_pd(a2, a2, q2);
        q3 = _mm256_fmadd_pd(a3, a3, q3);
    }
    LANES_STORE(a);
    _mm256_storeu_ps(m, _mm256_max_ps(mx0, mx1));
    for (int k = 0; k < 8; k++) a->mx = m[k] > a->mx ? m[k] : a->mx;
}

static int have_avx2(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return have;
}
#endif

/* stats_f32 accumulates n floats; fast: without the non-finite masks. */
static void stats_f32(acc *a, const float *p, size_t n, int fast)
{
    size_t body = n - n % LANES;
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        if (fast)
            f32_avx2_fast(a, p, body);
        else
            f32_avx2(a, p, body);
        f32_portable(a, p + body, n - body);
        return;
    }
#else
    (void)fast;
#endif
    f32_portable(a, p, n);
}

static void stats_f64(acc *a, const double *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fabs(p[i]) <= DBL_MAX)
            add(a, (int)(i % LANES), p[i]);
        else
            a->nf++;
    }
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    float f;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal */
        f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    memcpy(&f, &bits, 4);
    return f;
}

static void stats_half(acc *a, const uint16_t *p, size_t n, int bf16, int fast)
{
    float buf[256];
    while (n > 0) {
        size_t k = n < 256 ? n : 256;
        for (size_t i = 0; i < k; i++) {
            if (bf16) {
                uint32_t bits = (uint32_t)p[i] << 16;
                memcpy(&buf[i], &bits, 4);
            } else {
                buf[i] = half_to_float(p[i]);
            }
        }
        stats_f32(a, buf, k, fast);
        p += k;
        n -= k;
    }
}

#define STATS_INT(fn, T)                                                                           \
    static void fn(acc *a, const T *p, size_t n)                                                   \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) add(a, (int)(i % LANES), (double)p[i]);                     \
    }
STATS_INT(stats_i8, int8_t)
STATS_INT(stats_i16, int16_t)
STATS_INT(stats_i32, int32_t)
STATS_INT(stats_i64, int64_t)
STATS_INT(stats_u8, uint8_t)
STATS_INT(stats_u16, uint16_t)
STATS_INT(stats_u32, uint32_t)
STATS_INT(stats_u64, uint64_t)

static size_t elem_size(tpa_dtype dt)
{
    switch (dt) {
    case TPA_DT_F64:
    case TPA_DT_I64:
    case TPA_DT_U64:
        return 8;
    case TPA_DT_F32:
    case TPA_DT_I32:
    case TPA_DT_U32:
        return 4;
    case TPA_DT_F16:
    case TPA_DT_BF16:
    case TPA_DT_I16:
    case TPA_DT_U16:
        return 2;
    case TPA_DT_I8:
    case TPA_DT_U8:
    case TPA_DT_BOOL:
        return 1;
    default:
        return 1;
    }
}

static void stats_chunk(acc *a, tpa_dtype dt, const void *p, size_t nbytes, int fast)
{
    size_t n = nbytes / elem_size(dt);
    switch (dt) {
    case TPA_DT_F32:
        stats_f32(a, p, n, fast);
        break;
    case TPA_DT_F64:
        stats_f64(a, p, n);
        break;
    case TPA_DT_F16:
        stats_half(a, p, n, 0, fast);
        break;
    case TPA_DT_BF16:
        stats_half(a, p, n, 1, fast);
        break;
    case TPA_DT_I8:
        stats_i8(a, p, n);
        break;
    case TPA_DT_I16:
        stats_i16(a, p, n);
        break;
    case TPA_DT_I32:
        stats_i32(a, p, n);
        break;
    case TPA_DT_I64:
        stats_i64(a, p, n);
        break;
    case TPA_DT_U8:
    case TPA_DT_BOOL:
        stats_u8(a, p, n);
        break;
    case TPA_DT_U16:
        stats_u16(a, p, n);
        break;
    case TPA_DT_U32:
        stats_u32(a, p, n);
        break;
    case TPA_DT_U64:
        stats_u64(a, p, n);
        break;
    default:
        break;
    }
}

/* ---- the fused pass ----
 * The bytes are hashed and their statistics accumulated in one pass of
 * FUSE_BYTES pieces: a piece is hashed from memory, then its statistics are
 * read from L1 while the lines PREFETCH_AHEAD further on are prefetched, so
 * the memory stays busy while the statistics compute.  Float statistics
 * first run without the non-finite masks (the same bits for finite data);
 * a non-finite element leaves a non-finite sum of squares (NaN stays NaN,
 * an infinity squares to +inf, finite squares of floats cannot overflow a
 * double), and only then are the statistics computed again, masked. */

#define FUSE_BYTES     ((size_t)4096)
#define SLICE_BYTES    ((size_t)1024)
#define PREFETCH_AHEAD (2 * FUSE_BYTES)

static int is_float(tpa_dtype dt)
{
    return dt == TPA_DT_F32 || dt == TPA_DT_F16 || dt == TPA_DT_BF16;
}

static void prefetch(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, 3);
}

static int all_finite(const acc *a)
{
    for (int j = 0; j < LANES; j++)
        if (!isfinite(a->sq[j])) return 0;
    return 1;
}

/* fused hashes and accumulates n bytes (n a multiple of the element size). */
static void fused(XXH3_state_t *state, acc *a, tpa_dtype dt, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n, *q = p;
    int fast = is_float(dt);
    while (q < end) {
        size_t k = (size_t)(end - q) < FUSE_BYTES ? (size_t)(end - q) : FUSE_BYTES;
        hash_update(state, q, k);
        for (size_t s = 0; s < k; s += SLICE_BYTES) {
            size_t m = k - s < SLICE_BYTES ? k - s : SLICE_BYTES;
            if ((size_t)(end - q) - s >= PREFETCH_AHEAD + m) prefetch(q + s + PREFETCH_AHEAD, m);
            stats_chunk(a, dt, q + s, m, fast);
        }
        q += k;
    }
    if (fast && !all_finite(a)) {
        memset(a, 0, sizeof *a);
        stats_chunk(a, dt, p, n, 0);
    }
}

void tpa_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                       size_t nbytes, tpa_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    XXH3_state_t state;
    XXH128_canonical_t c;
    acc a;

    memset(&a, 0, sizeof a);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        uint8_t le[8];
        uint64_t v = (uint64_t)shape[i];
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)(v >> (8 * k));
        XXH3_128bits_update(&state, le, 8);
    }
    if (dt == TPA_DT_OTHER) {
        if (nbytes) hash_update(&state, data, nbytes);
    } else {
        size_t body = nbytes - nbytes % elem_size(dt);
        fused(&state, &a, dt, data, body);
        if (nbytes > body) hash_update(&state, (const uint8_t *)data + body, nbytes - body);
    }
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&state));
    memcpy(out, c.digest, TP_DIGEST_LEN);

    if (dt == TPA_DT_OTHER) {
        st->sum = st->l2 = st->maxabs = NAN;
        st->nonfinite = 0;
        return;
    }
    st->sum = 0, st->l2 = 0;
    for (int j = 0; j < LANES; j++) {
        st->sum += a.sum[j];
        st->l2 += a.sq[j];
    }
    st->l2 = sqrt(st->l2);
    st->maxabs = a.mx;
    st->nonfinite = a.nf;
}

void tpa_digest_bytes(const void *p, size_t n, uint8_t out[TP_DIGEST_LEN])
{
    XXH128_canonical_t c;
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    hash_update(&state, p, n); /* the same hash as XXH3_128bits(p, n) */
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&state));
    memcpy(out, c.digest, TP_DIGEST_LEN);
}
