/* SPDX-License-Identifier: MIT
 * devdigest.h -- the device digest "dev1": what it computes, element by
 * element, for the GPU kernels (kernels.cu, compiled by NVRTC) and for the
 * host reference (ref.c) alike.  No includes on the device side: NVRTC
 * compiles it without a toolkit's headers.
 *
 * The function.  A tensor's n bytes are read as pairs of little-endian
 * 32-bit words (a, b), pair j holding bytes [8j, 8j+8), the last one padded
 * with zero bytes.  Each pair j has two keys per lane, derived from j alone
 * (tpa_dev1_keys), and each lane is the sum, modulo 2^64, over all pairs of
 *     (a + ka) * (b + kb)            (32-bit sums, a 64-bit product: NH)
 * Integer sums do not depend on the order of the additions, so any
 * decomposition of the tensor over threads gives the same lanes.  A change
 * of one word is always seen by a lane unless its partner plus key is zero
 * modulo 2^32 there (the product of two non-zero numbers below 2^32 is not
 * zero modulo 2^64); the two lanes use unrelated keys.  The host finishes
 * the digest with XXH3-128 over the tag "dev1", the dtype, the shape, n
 * and both lanes (tp_digest_device).
 *
 * The statistics (sum, sum of squares, max |x| over finite elements,
 * non-finite count) are accumulated in double, in a fixed order set by the
 * constants below and nothing else (not the GPU's size): thread t of the
 * block of chunk c reads the 16-byte vectors t, t + 256, t + 512, t + 768 of
 * its chunk, element by element; the 256 threads are reduced in a fixed
 * tree (block_tree in kernels.cu, tree in ref.c), and the chunks' results
 * by one block, thread t taking chunks t, t + 256, ... in order, then the
 * same tree.  The reference follows the same order, so kernel and reference
 * agree bit for bit. */
#ifndef TP_AGENT_CUDA_DEVDIGEST_H
#define TP_AGENT_CUDA_DEVDIGEST_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TPA_DEV1_FN __device__ __forceinline__
#else
#define TPA_DEV1_FN static inline
#endif

#define TPA_DEV1_THREADS    256
#define TPA_DEV1_VEC        16 /* bytes a thread reads at once */
#define TPA_DEV1_PER_THREAD 4  /* vectors per thread per chunk */
#define TPA_DEV1_CHUNK                                                                             \
    (TPA_DEV1_THREADS * TPA_DEV1_VEC * TPA_DEV1_PER_THREAD) /* 16 KiB: one block */

/* Element kinds, as tp_dtype numbers them (digest/digest.h). */
enum {
    TPA_DEV1_OTHER = 0,
    TPA_DEV1_F32,
    TPA_DEV1_F64,
    TPA_DEV1_F16,
    TPA_DEV1_BF16,
    TPA_DEV1_I8,
    TPA_DEV1_I16,
    TPA_DEV1_I32,
    TPA_DEV1_I64,
    TPA_DEV1_U8,
    TPA_DEV1_U16,
    TPA_DEV1_U32,
    TPA_DEV1_U64,
    TPA_DEV1_BOOL,
};

/* One chunk's, or one tensor's, results: 48 bytes. */
typedef struct tpa_dev1_part {
    unsigned long long lane[2];
    double sum, sq, mx;
    unsigned long long nf;
} tpa_dev1_part;

TPA_DEV1_FN unsigned int tpa_dev1_mix32(unsigned int x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* tpa_dev1_keys: the keys of pair j, lane 0 (k[0], k[1]) and lane 1 (k[2], k[3]). */
TPA_DEV1_FN void tpa_dev1_keys(unsigned long long j, unsigned int k[4])
{
    unsigned int u =
        tpa_dev1_mix32((unsigned int)j ^ tpa_dev1_mix32((unsigned int)(j >> 32) + 0x9e3779b9U));
    k[0] = u;
    k[1] = u * 0x85ebca77U + 0xc2b2ae3dU;
    k[2] = tpa_dev1_mix32(u ^ 0x27d4eb2fU);
    k[3] = k[2] * 0x165667b1U + 0x61c88647U;
}

TPA_DEV1_FN void tpa_dev1_pair(unsigned long long lane[2], unsigned long long j, unsigned int a,
                               unsigned int b)
{
    unsigned int k[4];
    tpa_dev1_keys(j, k);
    lane[0] += (unsigned long long)(a + k[0]) * (unsigned long long)(b + k[1]);
    lane[1] += (unsigned long long)(a + k[2]) * (unsigned long long)(b + k[3]);
}

TPA_DEV1_FN unsigned int tpa_dev1_le32(const unsigned char *p)
{
    return (unsigned int)p[0] | (unsigned int)p[1] << 8 | (unsigned int)p[2] << 16 |
           (unsigned int)p[3] << 24;
}

TPA_DEV1_FN unsigned long long tpa_dev1_le64(const unsigned char *p)
{
    return (unsigned long long)tpa_dev1_le32(p) | (unsigned long long)tpa_dev1_le32(p + 4) << 32;
}

TPA_DEV1_FN int tpa_dev1_elem_size(int dt)
{
    switch (dt) {
    case TPA_DEV1_F64:
    case TPA_DEV1_I64:
    case TPA_DEV1_U64:
        return 8;
    case TPA_DEV1_F32:
    case TPA_DEV1_I32:
    case TPA_DEV1_U32:
        return 4;
    case TPA_DEV1_F16:
    case TPA_DEV1_BF16:
    case TPA_DEV1_I16:
    case TPA_DEV1_U16:
        return 2;
    default:
        return 1;
    }
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
TPA_DEV1_FN float tpa_dev1_f32_of_bits(unsigned int u)
{
    return __uint_as_float(u);
}
TPA_DEV1_FN double tpa_dev1_f64_of_bits(unsigned long long u)
{
    return __longlong_as_double((long long)u);
}
TPA_DEV1_FN double tpa_dev1_fma(double x, double y, double z)
{
    return fma(x, y, z);
}
TPA_DEV1_FN double tpa_dev1_fabs(double x)
{
    return fabs(x);
}
#else
#include <math.h>

TPA_DEV1_FN float tpa_dev1_f32_of_bits(unsigned int u)
{
    union {
        unsigned int u;
        float f;
    } c;
    c.u = u;
    return c.f;
}
TPA_DEV1_FN double tpa_dev1_f64_of_bits(unsigned long long u)
{
    union {
        unsigned long long u;
        double d;
    } c;
    c.u = u;
    return c.d;
}
#define tpa_dev1_fma  fma
#define tpa_dev1_fabs fabs
#endif

/* tpa_dev1_half: IEEE binary16 bits to float, exactly. */
TPA_DEV1_FN float tpa_dev1_half(unsigned int h)
{
    unsigned int s = (h & 0x8000U) << 16, e = (h >> 10) & 0x1fU, m = h & 0x3ffU;
    if (e == 0x1fU) return tpa_dev1_f32_of_bits(s | 0x7f800000U | m << 13);
    if (e != 0) return tpa_dev1_f32_of_bits(s | (e + 112U) << 23 | m << 13);
    /* zero or subnormal: m * 2^-24 */
    return tpa_dev1_f32_of_bits(s) + (s ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f;
}

/* tpa_dev1_elem: the element of kind dt at p as a double; *fin: whether finite. */
TPA_DEV1_FN double tpa_dev1_elem(const unsigned char *p, int dt, int *fin)
{
    double x;
    *fin = 1;
    switch (dt) {
    case TPA_DEV1_F32:
        x = (double)tpa_dev1_f32_of_bits(tpa_dev1_le32(p));
        break;
    case TPA_DEV1_F64:
        x = tpa_dev1_f64_of_bits(tpa_dev1_le64(p));
        break;
    case TPA_DEV1_F16:
        x = (double)tpa_dev1_half((unsigned int)p[0] | (unsigned int)p[1] << 8);
        break;
    case TPA_DEV1_BF16:
        x = (double)tpa_dev1_f32_of_bits(((unsigned int)p[0] | (unsigned int)p[1] << 8) << 16);
        break;
    case TPA_DEV1_I8:
        return (double)(signed char)p[0];
    case TPA_DEV1_I16:
        return (double)(short)(unsigned short)((unsigned int)p[0] | (unsigned int)p[1] << 8);
    case TPA_DEV1_I32:
        return (double)(int)tpa_dev1_le32(p);
    case TPA_DEV1_I64:
        return (double)(long long)tpa_dev1_le64(p);
    case TPA_DEV1_U16:
        return (double)((unsigned int)p[0] | (unsigned int)p[1] << 8);
    case TPA_DEV1_U32:
        return (double)tpa_dev1_le32(p);
    case TPA_DEV1_U64:
        return (double)tpa_dev1_le64(p);
    default: /* TPA_DEV1_U8, TPA_DEV1_BOOL */
        return (double)p[0];
    }
    *fin = x - x == 0.0;
    return x;
}

TPA_DEV1_FN void tpa_dev1_part_zero(tpa_dev1_part *r)
{
    r->lane[0] = r->lane[1] = 0;
    r->sum = r->sq = r->mx = 0.0;
    r->nf = 0;
}

/* tpa_dev1_vector accumulates the 16 bytes at v, which begin at byte off of the
 * tensor, of which the first len (<= 16) are the tensor's; the rest are
 * zero.  Pairs with no byte of the tensor and partial elements are left
 * out. */
TPA_DEV1_FN void tpa_dev1_vector(tpa_dev1_part *r, const unsigned char *v, unsigned long long off,
                                 unsigned int len, int dt)
{
    unsigned int es = (unsigned int)tpa_dev1_elem_size(dt);
    for (unsigned int q = 0; q < TPA_DEV1_VEC / 8 && 8 * q < len; q++)
        tpa_dev1_pair(r->lane, off / 8 + q, tpa_dev1_le32(v + 8 * q), tpa_dev1_le32(v + 8 * q + 4));
    if (dt == TPA_DEV1_OTHER) return;
    for (unsigned int e = 0; e + es <= len; e += es) {
        int fin;
        double x = tpa_dev1_elem(v + e, dt, &fin);
        if (!fin) {
            r->nf++;
            continue;
        }
        r->sum += x;
        r->sq = tpa_dev1_fma(x, x, r->sq);
        if (tpa_dev1_fabs(x) > r->mx) r->mx = tpa_dev1_fabs(x);
    }
}

/* tpa_dev1_join adds b into a (the statistics in this order: a, then b). */
TPA_DEV1_FN void tpa_dev1_join(tpa_dev1_part *a, const tpa_dev1_part *b)
{
    a->lane[0] += b->lane[0];
    a->lane[1] += b->lane[1];
    a->sum += b->sum;
    a->sq += b->sq;
    if (b->mx > a->mx) a->mx = b->mx;
    a->nf += b->nf;
}

#endif
