/* SPDX-License-Identifier: MIT
 * stats.c -- statistics kernels over tensor memory (see stats.h): element i
 * of a run goes to lane i % 16, squares are accumulated with fused
 * multiply-add, and the lanes are reduced in a fixed order, so the portable,
 * AVX2 and AVX-512 kernels give the same bits for the same bytes; which one
 * runs is chosen once, from the CPU. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <string.h>

#include "digest/stats.h"
#include "digest/stats512.h"

/* cpu_kernel is the best kernel this CPU runs. */
static tp_kernel cpu_kernel(void)
{
    static int best = -1;
    if (best < 0) {
        best = TP_KERNEL_PORTABLE;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = TP_KERNEL_AVX2;
#ifdef TP_HAVE_AVX512
        if (best == TP_KERNEL_AVX2 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512dq"))
            best = TP_KERNEL_AVX512;
#endif
#endif
    }
    return (tp_kernel)best;
}

static tp_kernel kernel_cap = TP_KERNEL_AVX512;

tp_kernel tp_stats_kernel(void)
{
    tp_kernel best = cpu_kernel();
    return best < kernel_cap ? best : kernel_cap;
}

tp_kernel tp_digest_use_kernel(tp_kernel k)
{
    kernel_cap = k;
    return tp_stats_kernel();
}

static inline void add(tp_acc *a, int lane, double v)
{
    double av = fabs(v);
    a->sum[lane] += v;
    a->sq[lane] = fma(v, v, a->sq[lane]);
    a->mx = av > a->mx ? av : a->mx;
}

/* f32_portable accumulates n floats (n a multiple of 16 or the tail). */
static void f32_portable(tp_acc *a, const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = p[i];
        if (fabsf(v) <= FLT_MAX)
            add(a, (int)(i % TP_LANES), v);
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

__attribute__((target("avx2,fma"))) static void f32_avx2(tp_acc *a, const float *p, size_t n)
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
__attribute__((target("avx2,fma"))) static void f32_avx2_fast(tp_acc *a, const float *p, size_t n)
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

#endif

#ifdef TP_HAVE_AVX512
/* f32_avx512 is f32_avx2 on AVX-512: non-finite elements count, and add 0. */
TARGET_AVX512 static void f32_avx512(tp_acc *a, const float *p, size_t n)
{
    const __m512i expm = _mm512_set1_epi32(0x7f800000);
    uint64_t nf = 0;
    lanes512 l;
    lanes512_load(&l, a);
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(p + i);
        __m512i e = _mm512_and_si512(_mm512_castps_si512(v), expm);
        __mmask16 bad = _mm512_cmpeq_epi32_mask(e, expm);
        nf += (uint64_t)__builtin_popcount(bad);
        lanes512_add_v(&l, _mm512_maskz_mov_ps((__mmask16)~bad, v));
    }
    lanes512_store(&l, a);
    a->nf += nf;
}

/* f32_avx512_fast is f32_avx512 without the non-finite masks. */
TARGET_AVX512 static void f32_avx512_fast(tp_acc *a, const float *p, size_t n)
{
    lanes512 l;
    lanes512_load(&l, a);
    for (size_t i = 0; i + 16 <= n; i += 16) lanes512_add_at(&l, p + i);
    lanes512_store(&l, a);
}
#endif

/* stats_f32 accumulates n floats; fast: without the non-finite masks. */
static void stats_f32(tp_acc *a, const float *p, size_t n, int fast)
{
    size_t body = n - n % TP_LANES;
#ifdef TP_HAVE_AVX512
    if (tp_stats_kernel() == TP_KERNEL_AVX512) {
        if (fast)
            f32_avx512_fast(a, p, body);
        else
            f32_avx512(a, p, body);
        f32_portable(a, p + body, n - body);
        return;
    }
#endif
#if defined(__x86_64__) && defined(__GNUC__)
    if (tp_stats_kernel() >= TP_KERNEL_AVX2) {
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

static void stats_f64(tp_acc *a, const double *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fabs(p[i]) <= DBL_MAX)
            add(a, (int)(i % TP_LANES), p[i]);
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

static void stats_half(tp_acc *a, const uint16_t *p, size_t n, int bf16, int fast)
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
    static void fn(tp_acc *a, const T *p, size_t n)                                                \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) add(a, (int)(i % TP_LANES), (double)p[i]);                  \
    }
STATS_INT(stats_i8, int8_t)
STATS_INT(stats_i16, int16_t)
STATS_INT(stats_i32, int32_t)
STATS_INT(stats_i64, int64_t)
STATS_INT(stats_u8, uint8_t)
STATS_INT(stats_u16, uint16_t)
STATS_INT(stats_u32, uint32_t)
STATS_INT(stats_u64, uint64_t)

size_t tp_elem_size(tp_dtype dt)
{
    switch (dt) {
    case TP_DT_F64:
    case TP_DT_I64:
    case TP_DT_U64:
        return 8;
    case TP_DT_F32:
    case TP_DT_I32:
    case TP_DT_U32:
        return 4;
    case TP_DT_F16:
    case TP_DT_BF16:
    case TP_DT_I16:
    case TP_DT_U16:
        return 2;
    case TP_DT_I8:
    case TP_DT_U8:
    case TP_DT_BOOL:
        return 1;
    default:
        return 1;
    }
}

void tp_stats_chunk(tp_acc *a, tp_dtype dt, const void *p, size_t nbytes, int fast)
{
    size_t n = nbytes / tp_elem_size(dt);
    switch (dt) {
    case TP_DT_F32:
        stats_f32(a, p, n, fast);
        break;
    case TP_DT_F64:
        stats_f64(a, p, n);
        break;
    case TP_DT_F16:
        stats_half(a, p, n, 0, fast);
        break;
    case TP_DT_BF16:
        stats_half(a, p, n, 1, fast);
        break;
    case TP_DT_I8:
        stats_i8(a, p, n);
        break;
    case TP_DT_I16:
        stats_i16(a, p, n);
        break;
    case TP_DT_I32:
        stats_i32(a, p, n);
        break;
    case TP_DT_I64:
        stats_i64(a, p, n);
        break;
    case TP_DT_U8:
    case TP_DT_BOOL:
        stats_u8(a, p, n);
        break;
    case TP_DT_U16:
        stats_u16(a, p, n);
        break;
    case TP_DT_U32:
        stats_u32(a, p, n);
        break;
    case TP_DT_U64:
        stats_u64(a, p, n);
        break;
    default:
        break;
    }
}

int tp_is_float(tp_dtype dt)
{
    return dt == TP_DT_F32 || dt == TP_DT_F16 || dt == TP_DT_BF16;
}

static int all_finite(const tp_acc *a)
{
    for (int j = 0; j < TP_LANES; j++)
        if (!isfinite(a->sq[j])) return 0;
    return 1;
}

void tp_stats_recheck(tp_acc *a, tp_dtype dt, const uint8_t *p, size_t n)
{
    if (all_finite(a)) return;
    memset(a, 0, sizeof *a);
    tp_stats_chunk(a, dt, p, n, 0);
}
