/* SPDX-License-Identifier: MIT
 * digest.c -- fused XXH3-128 + statistics over tensor memory.
 *
 * The bytes are walked in 64 KiB chunks: each chunk is hashed, then its
 * statistics are accumulated while it is still in L2, so memory is read once.
 * Statistics use eight independent double accumulators so the compiler can
 * keep them in vector registers; the order is fixed, so equal bytes always
 * give equal statistics. */
#define _GNU_SOURCE
#include <float.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <string.h>

#include <xxhash.h>

#include "agent/digest.h"
#include "agent/xxh3_avx2.h"

#define CHUNK (64u * 1024u)
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
    __m256d s0 = _mm256_loadu_pd(&a->sum[0]), s1 = _mm256_loadu_pd(&a->sum[4]);
    __m256d s2 = _mm256_loadu_pd(&a->sum[8]), s3 = _mm256_loadu_pd(&a->sum[12]);
    __m256d q0 = _mm256_loadu_pd(&a->sq[0]), q1 = _mm256_loadu_pd(&a->sq[4]);
    __m256d q2 = _mm256_loadu_pd(&a->sq[8]), q3 = _mm256_loadu_pd(&a->sq[12]);
    __m256 mx = _mm256_setzero_ps();
    uint64_t nf = 0;
    float m[8];
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m256 v0 = _mm256_loadu_ps(p + i), v1 = _mm256_loadu_ps(p + i + 8);
        HALF8(v0, s0, s1, q0, q1);
        HALF8(v1, s2, s3, q2, q3);
    }
    _mm256_storeu_pd(&a->sum[0], s0);
    _mm256_storeu_pd(&a->sum[4], s1);
    _mm256_storeu_pd(&a->sum[8], s2);
    _mm256_storeu_pd(&a->sum[12], s3);
    _mm256_storeu_pd(&a->sq[0], q0);
    _mm256_storeu_pd(&a->sq[4], q1);
    _mm256_storeu_pd(&a->sq[8], q2);
    _mm256_storeu_pd(&a->sq[12], q3);
    _mm256_storeu_ps(m, mx);
    for (int k = 0; k < 8; k++) a->mx = m[k] > a->mx ? m[k] : a->mx;
    a->nf += nf;
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

static void stats_f32(acc *a, const float *p, size_t n)
{
    size_t body = n - n % LANES;
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        f32_avx2(a, p, body);
        f32_portable(a, p + body, n - body);
        return;
    }
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

static void stats_half(acc *a, const uint16_t *p, size_t n, int bf16)
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
        stats_f32(a, buf, k);
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

static void stats_chunk(acc *a, tpa_dtype dt, const void *p, size_t nbytes)
{
    size_t n = nbytes / elem_size(dt);
    switch (dt) {
    case TPA_DT_F32:
        stats_f32(a, p, n);
        break;
    case TPA_DT_F64:
        stats_f64(a, p, n);
        break;
    case TPA_DT_F16:
        stats_half(a, p, n, 0);
        break;
    case TPA_DT_BF16:
        stats_half(a, p, n, 1);
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

/* ---- the statistics worker ----
 * For a large buffer the statistics are computed on a second thread while
 * the calling thread hashes: a snapshot runs while torch computes nothing, so
 * the second core is otherwise idle, and the two passes then cost about one
 * memory read instead of two.  One job at a time (callers hold the GIL or
 * are otherwise serialised; a busy worker means the caller does it itself).
 * A forked child starts without the thread and makes a new one on demand. */

#define PARALLEL_BYTES ((size_t)2 << 20)

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, busy, has_job, failed;
    acc *a;
    tpa_dtype dt;
    const uint8_t *p;
    size_t n;
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL, 0, NULL, 0};

static void stats_all(acc *a, tpa_dtype dt, const uint8_t *p, size_t n)
{
    size_t chunk = CHUNK - CHUNK % elem_size(dt);
    while (n > 0) {
        size_t k = n < chunk ? n : chunk;
        stats_chunk(a, dt, p, k);
        p += k;
        n -= k;
    }
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&W.mu);
    for (;;) {
        while (!W.has_job) pthread_cond_wait(&W.cv, &W.mu);
        pthread_mutex_unlock(&W.mu);
        stats_all(W.a, W.dt, W.p, W.n);
        pthread_mutex_lock(&W.mu);
        W.has_job = 0;
        pthread_cond_broadcast(&W.cv);
    }
    return NULL;
}

static void worker_atfork_child(void)
{
    pthread_mutex_init(&W.mu, NULL);
    pthread_cond_init(&W.cv, NULL);
    W.started = W.busy = W.has_job = 0;
}

/* worker_post hands the statistics of a buffer to the worker; 0 if taken. */
static int worker_post(acc *a, tpa_dtype dt, const uint8_t *p, size_t n)
{
    int taken = 0;
    pthread_mutex_lock(&W.mu);
    if (!W.started && !W.failed) {
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&t, NULL, worker_main, NULL) == 0) {
            pthread_detach(t);
            W.started = 1;
            pthread_atfork(NULL, NULL, worker_atfork_child);
        } else {
            W.failed = 1;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (W.started && !W.busy) {
        W.busy = W.has_job = 1;
        W.a = a, W.dt = dt, W.p = p, W.n = n;
        pthread_cond_broadcast(&W.cv);
        taken = 1;
    }
    pthread_mutex_unlock(&W.mu);
    return taken ? 0 : -1;
}

static void worker_wait(void)
{
    pthread_mutex_lock(&W.mu);
    while (W.has_job) pthread_cond_wait(&W.cv, &W.mu);
    W.busy = 0;
    pthread_mutex_unlock(&W.mu);
}

static void digest(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                   size_t nbytes, tpa_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st,
                   int may_parallel)
{
    XXH3_state_t state;
    XXH128_canonical_t c;
    acc a;
    const uint8_t *p = data;
    int parallel = 0;

    memset(&a, 0, sizeof a);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        uint8_t le[8];
        uint64_t v = (uint64_t)shape[i];
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)(v >> (8 * k));
        XXH3_128bits_update(&state, le, 8);
    }
    if (may_parallel && dt != TPA_DT_OTHER && nbytes >= PARALLEL_BYTES)
        parallel = worker_post(&a, dt, p, nbytes) == 0;
    if (parallel || dt == TPA_DT_OTHER) {
        if (nbytes) hash_update(&state, p, nbytes);
        if (parallel) worker_wait();
    } else {
        /* chunk by chunk: the statistics read what hashing just brought in */
        size_t chunk = CHUNK - CHUNK % elem_size(dt);
        while (nbytes > 0) {
            size_t k = nbytes < chunk ? nbytes : chunk;
            hash_update(&state, p, k);
            stats_chunk(&a, dt, p, k);
            p += k;
            nbytes -= k;
        }
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

void tpa_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                       size_t nbytes, tpa_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    digest(dtype_name, shape, ndim, data, nbytes, dt, out, st, 1);
}

void tpa_digest_tensor_serial(const char *dtype_name, const int64_t *shape, int ndim,
                              const void *data, size_t nbytes, tpa_dtype dt,
                              uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    digest(dtype_name, shape, ndim, data, nbytes, dt, out, st, 0);
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
