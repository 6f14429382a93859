/* SPDX-License-Identifier: MIT
 * stats512.h -- the sixteen statistics lanes (stats.h) in AVX-512
 * registers, inline: the AVX-512 kernels (stats.c) and the one-loop pass
 * (digest.c) share them.  Nothing here may run before the CPU is known to
 * have AVX-512F. */
#ifndef TP_DIGEST_STATS512_H
#define TP_DIGEST_STATS512_H

#include "digest/stats.h"
#include "digest/xxh3_avx512.h"

#ifdef TP_HAVE_AVX512
#include <immintrin.h>

/* The sixteen lanes on AVX-512: sums of lanes 0-7 in s0 and of lanes 8-15 in
 * s1, squares in q0 and q1, so that one 512-bit load of sixteen floats is
 * exactly one float per lane; the maxima stay in float. */
typedef struct lanes512 {
    __m512d s0, s1, q0, q1;
    __m512 mx;
} lanes512;

#define TARGET_AVX512 __attribute__((target("avx512f,avx512dq")))
#define INLINE_AVX512 __attribute__((target("avx512f,avx512dq"), always_inline)) static inline

INLINE_AVX512 void lanes512_load(lanes512 *l, const tp_acc *a)
{
    l->s0 = _mm512_loadu_pd(&a->sum[0]), l->s1 = _mm512_loadu_pd(&a->sum[8]);
    l->q0 = _mm512_loadu_pd(&a->sq[0]), l->q1 = _mm512_loadu_pd(&a->sq[8]);
    l->mx = _mm512_setzero_ps();
}

INLINE_AVX512 void lanes512_store(const lanes512 *l, tp_acc *a)
{
    float m = _mm512_reduce_max_ps(l->mx);
    _mm512_storeu_pd(&a->sum[0], l->s0), _mm512_storeu_pd(&a->sum[8], l->s1);
    _mm512_storeu_pd(&a->sq[0], l->q0), _mm512_storeu_pd(&a->sq[8], l->q1);
    a->mx = m > a->mx ? m : a->mx;
}

/* lanes512_add accumulates sixteen floats, one per lane, with the additions
 * and fused multiply-adds of f32_avx2, so the same bits: lo is lanes 0-7
 * widened to double, hi lanes 8-15, v all sixteen as floats.  The maxima
 * take one instruction, AVX-512DQ's range (imm 0x0B: the larger magnitude,
 * sign cleared), where an and and a max took two: the one-loop pass over
 * 256 KiB in cache went from 25.9 to 27.3 GB/s on AMD Zen 4.  It is
 * max(|x|) for finite x; a non-finite element has the statistics computed
 * again, masked (tp_stats_recheck). */
INLINE_AVX512 void lanes512_add(lanes512 *l, __m512d lo, __m512d hi, __m512 v)
{
    l->mx = _mm512_range_ps(l->mx, v, 0x0B);
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
#endif

#endif
