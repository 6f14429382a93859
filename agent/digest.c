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
#include <math.h>
#include <string.h>

#include <xxhash.h>

#include "agent/digest.h"

#define CHUNK (64u * 1024u)
#define LANES 8

typedef struct acc {
    double sum[LANES], sq[LANES], mx[LANES];
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
    /* v is finite here */
    double av = fabs(v);
    a->sum[lane] += v;
    a->sq[lane] += v * v;
    a->mx[lane] = av > a->mx[lane] ? av : a->mx[lane];
}

__attribute__((target_clones("avx2", "default"))) static void stats_f32(acc *a, const float *p,
                                                                        size_t n)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; j++) {
            float v = p[i + j];
            int fin = fabsf(v) <= FLT_MAX;
            double d = fin ? (double)v : 0.0;
            double ad = fabs(d);
            a->sum[j] += d;
            a->sq[j] += d * d;
            a->mx[j] = ad > a->mx[j] ? ad : a->mx[j];
            a->nf += !fin;
        }
    }
    for (; i < n; i++) {
        float v = p[i];
        if (fabsf(v) <= FLT_MAX)
            add(a, 0, v);
        else
            a->nf++;
    }
}

__attribute__((target_clones("avx2", "default"))) static void stats_f64(acc *a, const double *p,
                                                                        size_t n)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; j++) {
            double v = p[i + j];
            int fin = fabs(v) <= DBL_MAX;
            double d = fin ? v : 0.0;
            double ad = fabs(d);
            a->sum[j] += d;
            a->sq[j] += d * d;
            a->mx[j] = ad > a->mx[j] ? ad : a->mx[j];
            a->nf += !fin;
        }
    }
    for (; i < n; i++) {
        if (fabs(p[i]) <= DBL_MAX)
            add(a, 0, p[i]);
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

void tpa_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                       size_t nbytes, tpa_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    XXH3_state_t state;
    XXH128_hash_t h;
    XXH128_canonical_t c;
    acc a;
    const uint8_t *p = data;
    /* a chunk boundary must not split an element */
    size_t chunk = CHUNK - CHUNK % elem_size(dt);

    memset(&a, 0, sizeof a);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        uint8_t le[8];
        uint64_t v = (uint64_t)shape[i];
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)(v >> (8 * k));
        XXH3_128bits_update(&state, le, 8);
    }
    while (nbytes > 0) {
        size_t k = nbytes < chunk ? nbytes : chunk;
        XXH3_128bits_update(&state, p, k);
        if (dt != TPA_DT_OTHER) stats_chunk(&a, dt, p, k);
        p += k;
        nbytes -= k;
    }
    h = XXH3_128bits_digest(&state);
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, TP_DIGEST_LEN);

    if (dt == TPA_DT_OTHER) {
        st->sum = st->l2 = st->maxabs = NAN;
        st->nonfinite = 0;
        return;
    }
    st->sum = 0, st->l2 = 0, st->maxabs = 0;
    for (int j = 0; j < LANES; j++) {
        st->sum += a.sum[j];
        st->l2 += a.sq[j];
        st->maxabs = a.mx[j] > st->maxabs ? a.mx[j] : st->maxabs;
    }
    st->l2 = sqrt(st->l2);
    st->nonfinite = a.nf;
}

void tpa_digest_bytes(const void *p, size_t n, uint8_t out[TP_DIGEST_LEN])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
    memcpy(out, c.digest, TP_DIGEST_LEN);
}
