/* SPDX-License-Identifier: MIT
 * digest.c -- fused XXH3-128 + statistics over tensor memory.
 *
 * Memory is read once.  With AVX-512, large float tensors are hashed and
 * their statistics accumulated in one loop, stripe by stripe (see "the
 * one-loop pass"); otherwise each 4 KiB piece is hashed, then its statistics
 * are accumulated from L1 while later lines are prefetched (see "the fused
 * pass").  On this project's machines the one-loop pass runs at the speed of
 * a plain memory read (bench/hash_bench.c).  Statistics use sixteen
 * independent double accumulators; the order is fixed, so equal bytes always
 * give equal statistics, whichever kernel computed them. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <string.h>

#include <xxhash.h>

#include "agent/digest.h"
#include "agent/xxh3_avx2.h"
#include "agent/xxh3_avx512.h"

#define LANES 16

/* cpu_kernel is the best kernel this CPU runs. */
static tpa_kernel cpu_kernel(void)
{
    static int best = -1;
    if (best < 0) {
        best = TPA_KERNEL_PORTABLE;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = TPA_KERNEL_AVX2;
#ifdef TPA_HAVE_AVX512
        if (best == TPA_KERNEL_AVX2 && __builtin_cpu_supports("avx512f")) best = TPA_KERNEL_AVX512;
#endif
#endif
    }
    return (tpa_kernel)best;
}

static tpa_kernel kernel_cap = TPA_KERNEL_AVX512;

/* kernel is the kernel in use. */
static tpa_kernel kernel(void)
{
    tpa_kernel best = cpu_kernel();
    return best < kernel_cap ? best : kernel_cap;
}

tpa_kernel tpa_digest_use_kernel(tpa_kernel k)
{
    kernel_cap = k;
    return kernel();
}

/* hash_update feeds XXH3 through its AVX2 build when the CPU has one, also
 * with AVX-512: xxHash's AVX-512 build read memory at 0.6 of a plain read on
 * AMD Zen 5, its AVX2 build at 0.97. */
static void hash_update(XXH3_state_t *s, const void *p, size_t n)
{
    if (kernel() >= TPA_KERNEL_AVX2 && tpa_xxh3_avx2_available())
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

#endif

#ifdef TPA_HAVE_AVX512
/* The sixteen lanes on AVX-512: sums of lanes 0-7 in s0 and of lanes 8-15 in
 * s1, squares in q0 and q1, so that one 512-bit load of sixteen floats is
 * exactly one float per lane; the maxima stay in float. */
typedef struct lanes512 {
    __m512d s0, s1, q0, q1;
    __m512 mx;
} lanes512;

#define TARGET_AVX512 __attribute__((target("avx512f")))
#define INLINE_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

INLINE_AVX512 void lanes512_load(lanes512 *l, const acc *a)
{
    l->s0 = _mm512_loadu_pd(&a->sum[0]), l->s1 = _mm512_loadu_pd(&a->sum[8]);
    l->q0 = _mm512_loadu_pd(&a->sq[0]), l->q1 = _mm512_loadu_pd(&a->sq[8]);
    l->mx = _mm512_setzero_ps();
}

INLINE_AVX512 void lanes512_store(const lanes512 *l, acc *a)
{
    float m = _mm512_reduce_max_ps(l->mx);
    _mm512_storeu_pd(&a->sum[0], l->s0), _mm512_storeu_pd(&a->sum[8], l->s1);
    _mm512_storeu_pd(&a->sq[0], l->q0), _mm512_storeu_pd(&a->sq[8], l->q1);
    a->mx = m > a->mx ? m : a->mx;
}

/* lanes512_add accumulates sixteen floats, one per lane, with the additions
 * and fused multiply-adds of f32_avx2, so the same bits: lo is lanes 0-7
 * widened to double, hi lanes 8-15, v all sixteen as floats. */
INLINE_AVX512 void lanes512_add(lanes512 *l, __m512d lo, __m512d hi, __m512 v)
{
    l->mx = _mm512_max_ps(l->mx, _mm512_abs_ps(v));
    l->s0 = _mm512_add_pd(l->s0, lo);
    l->s1 = _mm512_add_pd(l->s1, hi);
    l->q0 = _mm512_fmadd_pd(lo, lo, l->q0);
    l->q1 = _mm512_fmadd_pd(hi, hi, l->q1);
}

/* lanes512_add_v accumulates the sixteen floats of v. */
INLINE_AVX512 void lanes512_add_v(lanes512 *l, __m512 v)
{
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    lanes512_add(l, _mm512_cvtps_pd(_mm512_castps512_ps256(v)), _mm512_cvtps_pd(hi), v);
}

/* lanes512_add_at accumulates the sixteen floats at p, widening each half
 * straight from memory: from a 512-bit load and an extract of its upper
 * half, the one-loop pass ran at 0.65 of a memory read on AMD Zen 5 instead
 * of 1.0. */
INLINE_AVX512 void lanes512_add_at(lanes512 *l, const float *p)
{
    lanes512_add(l, _mm512_cvtps_pd(_mm256_loadu_ps(p)), _mm512_cvtps_pd(_mm256_loadu_ps(p + 8)),
                 _mm512_loadu_ps(p));
}

/* f32_avx512 is f32_avx2 on AVX-512: non-finite elements count, and add 0. */
TARGET_AVX512 static void f32_avx512(acc *a, const float *p, size_t n)
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
TARGET_AVX512 static void f32_avx512_fast(acc *a, const float *p, size_t n)
{
    lanes512 l;
    lanes512_load(&l, a);
    for (size_t i = 0; i + 16 <= n; i += 16) lanes512_add_at(&l, p + i);
    lanes512_store(&l, a);
}
#endif

/* stats_f32 accumulates n floats; fast: without the non-finite masks. */
static void stats_f32(acc *a, const float *p, size_t n, int fast)
{
    size_t body = n - n % LANES;
#ifdef TPA_HAVE_AVX512
    if (kernel() == TPA_KERNEL_AVX512) {
        if (fast)
            f32_avx512_fast(a, p, body);
        else
            f32_avx512(a, p, body);
        f32_portable(a, p + body, n - body);
        return;
    }
#endif
#if defined(__x86_64__) && defined(__GNUC__)
    if (kernel() >= TPA_KERNEL_AVX2) {
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

/* recheck computes the statistics of n bytes again, masked, when the fast
 * kernels met a non-finite element. */
static void recheck(acc *a, tpa_dtype dt, const uint8_t *p, size_t n)
{
    if (all_finite(a)) return;
    memset(a, 0, sizeof *a);
    stats_chunk(a, dt, p, n, 0);
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
    if (fast) recheck(a, dt, p, n);
}

/* put_le64 writes v as int64 little-endian, the way the digest hashes a
 * dimension. */
static void put_le64(uint8_t out[8], int64_t v)
{
    for (int k = 0; k < 8; k++) out[k] = (uint8_t)((uint64_t)v >> (8 * k));
}

/* streamed digests the tensor through XXH3's streaming API and the fused
 * pass. */
static XXH128_hash_t streamed(const char *dtype_name, const int64_t *shape, int ndim,
                              const void *data, size_t nbytes, tpa_dtype dt, acc *a)
{
    XXH3_state_t state;

    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        uint8_t le[8];
        put_le64(le, shape[i]);
        XXH3_128bits_update(&state, le, 8);
    }
    if (dt == TPA_DT_OTHER) {
        if (nbytes) hash_update(&state, data, nbytes);
    } else {
        size_t body = nbytes - nbytes % elem_size(dt);
        fused(&state, a, dt, data, body);
        if (nbytes > body) hash_update(&state, (const uint8_t *)data + body, nbytes - body);
    }
    return XXH3_128bits_digest(&state);
}

/* ---- the one-loop pass ----
 * With AVX-512, a large float tensor is hashed and its statistics are
 * accumulated in the same loop, 64 bytes of each per turn: the hash is
 * XXH3's long-input loop spelled out (agent/xxh3_avx512.h), and its work
 * fills the cycles the statistics spend waiting on their chains of additions
 * (every lane adds one float per 64 bytes), so the loop keeps up with memory
 * where hashing a piece, then accumulating it, did not (0.7 of a read).  XXH3's stripes start at
 * the header (the dtype name and the shape), so the tensor's stripes lie across its elements: the
 * statistics follow a few bytes behind the hash.  Statistics run fast, then are checked, as in the
 * fused pass. */

#define ONE_LOOP_MIN_BYTES ((size_t)16384)
#define HEAD_MAX           512                      /* header bytes: dtype name, ~60 dimensions */
#define AHEAD_STRIPES      (8192 / TPA_XXH3_STRIPE) /* prefetch distance */

/* header writes what the digest hashes before the tensor's bytes, the dtype
 * name with its NUL and the shape as int64 little-endian, to head when it
 * fits in HEAD_MAX bytes, and returns its length. */
static size_t header(uint8_t *head, const char *dtype_name, const int64_t *shape, int ndim)
{
    size_t name = strlen(dtype_name) + 1, len = name + 8 * (size_t)(ndim > 0 ? ndim : 0);
    if (len > HEAD_MAX) return len;
    memcpy(head, dtype_name, name);
    for (int i = 0; i < ndim; i++) put_le64(head + name + 8 * (size_t)i, shape[i]);
    return len;
}

#ifdef TPA_HAVE_AVX512
/* halves512 widens sixteen bfloat16 or float16 at p to float, exactly. */
INLINE_AVX512 __m512 halves512(const uint8_t *p, tpa_dtype dt)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (dt == TPA_DT_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* step512 accumulates 64 bytes of elements: one float per lane, or two
 * rounds of one half per lane. */
INLINE_AVX512 void step512(lanes512 *l, const uint8_t *p, tpa_dtype dt)
{
    if (dt == TPA_DT_F32) {
        lanes512_add_at(l, (const float *)(const void *)p);
    } else {
        lanes512_add_v(l, halves512(p, dt));
        lanes512_add_v(l, halves512(p + 32, dt));
    }
}

/* one_loop512 hashes n stripes at in and accumulates n times 64 bytes of
 * elements at p, prefetching AHEAD_STRIPES ahead. */
INLINE_AVX512 void one_loop512(tpa_xxh3_long *x, const uint8_t *in, const uint8_t *p, size_t n,
                               acc *a, tpa_dtype dt)
{
    __m512i h = _mm512_load_si512(x->acc);
    unsigned pos = x->pos;
    lanes512 l;
    lanes512_load(&l, a);
    for (size_t i = 0; i < n; i++, in += TPA_XXH3_STRIPE, p += TPA_XXH3_STRIPE) {
        if (i + AHEAD_STRIPES < n) __builtin_prefetch(in + AHEAD_STRIPES * TPA_XXH3_STRIPE, 0, 3);
        h = tpa_xxh3_accumulate512(h, in, tpa_xxh3_key512(pos));
        step512(&l, p, dt);
        if (++pos == TPA_XXH3_BLOCK_STRIPES) {
            h = tpa_xxh3_scramble512(h);
            pos = 0;
        }
    }
    _mm512_store_si512(x->acc, h);
    x->pos = pos;
    lanes512_store(&l, a);
}

/* one_loop512_dt is one_loop512 built once per float dtype. */
TARGET_AVX512 static void one_loop512_dt(tpa_xxh3_long *x, const uint8_t *in, const uint8_t *p,
                                         size_t n, acc *a, tpa_dtype dt)
{
    if (dt == TPA_DT_F32)
        one_loop512(x, in, p, n, a, TPA_DT_F32);
    else if (dt == TPA_DT_BF16)
        one_loop512(x, in, p, n, a, TPA_DT_BF16);
    else
        one_loop512(x, in, p, n, a, TPA_DT_F16);
}

/* one_loop digests the header (hlen bytes at head, which has room for a
 * stripe more) and the tensor (n bytes at data) to *h and returns 1, or
 * returns 0 when the tensor is not for the one-loop pass. */
static int one_loop(uint8_t *head, size_t hlen, const uint8_t *data, size_t n, tpa_dtype dt, acc *a,
                    XXH128_hash_t *h)
{
    size_t body = n - n % elem_size(dt), len = hlen + n, hs, skip, ns, done;
    tpa_xxh3_long x;

    if (kernel() != TPA_KERNEL_AVX512 || !is_float(dt) || n < ONE_LOOP_MIN_BYTES || hlen > HEAD_MAX)
        return 0;
    /* the stripes with header bytes (the tensor's first skip bytes end the
     * last of them), then the tensor's stripes but the very last */
    hs = (hlen + TPA_XXH3_STRIPE - 1) / TPA_XXH3_STRIPE, skip = hs * TPA_XXH3_STRIPE - hlen;
    ns = (len - 1) / TPA_XXH3_STRIPE - hs, done = ns * TPA_XXH3_STRIPE;
    memcpy(head + hlen, data, skip);
    tpa_xxh3_long_init(&x);
    tpa_xxh3_stripes512(&x, head, hs);
    one_loop512_dt(&x, data + skip, data, ns, a, dt);
    stats_chunk(a, dt, data + done, body - done, 1);
    *h = tpa_xxh3_finish512(&x, data + n - TPA_XXH3_STRIPE, len);
    recheck(a, dt, data, body);
    return 1;
}
#else
static int one_loop(uint8_t *head, size_t hlen, const uint8_t *data, size_t n, tpa_dtype dt, acc *a,
                    XXH128_hash_t *h)
{
    return 0;
}
#endif

void tpa_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                       size_t nbytes, tpa_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    uint8_t head[HEAD_MAX + 64];
    size_t hlen = header(head, dtype_name, shape, ndim);
    XXH128_hash_t h;
    XXH128_canonical_t c;
    acc a;

    memset(&a, 0, sizeof a);
    if (!one_loop(head, hlen, data, nbytes, dt, &a, &h))
        h = streamed(dtype_name, shape, ndim, data, nbytes, dt, &a);
    XXH128_canonicalFromHash(&c, h);
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
