/* SPDX-License-Identifier: MIT
 * stats.h -- the statistics of tensor memory (sum, sum of squares, max |x|
 * over finite elements, non-finite count) in sixteen double lanes, and the
 * kernel that computes them (portable C, AVX2, AVX-512, chosen at run time).
 * Internal to the digest (digest.c): every kernel gives the same bits for
 * the same bytes. */
#ifndef TP_DIGEST_STATS_H
#define TP_DIGEST_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "digest/digest.h"

#define TP_LANES 16

/* Sixteen double accumulators: element i of a float32 run goes to lane
 * i % 16, squares are accumulated with fused multiply-add, and the lanes are
 * reduced in a fixed order, so the AVX2 kernel and the portable one give the
 * same bits for the same bytes. */
typedef struct tp_acc {
    double sum[TP_LANES], sq[TP_LANES];
    double mx;
    uint64_t nf;
} tp_acc;

/* tp_stats_kernel is the kernel in use: the best this CPU runs, capped by
 * tp_digest_use_kernel. */
tp_kernel tp_stats_kernel(void);

/* tp_elem_size is the size of one element of dt (1 for TP_DT_OTHER). */
size_t tp_elem_size(tp_dtype dt);

/* tp_is_float: dt is float32, float16 or bfloat16 (whose statistics run
 * fast first, tp_stats_recheck). */
int tp_is_float(tp_dtype dt);

/* tp_stats_chunk accumulates the elements of nbytes at p into a; fast:
 * without the non-finite masks (the same bits for finite data). */
void tp_stats_chunk(tp_acc *a, tp_dtype dt, const void *p, size_t nbytes, int fast);

/* tp_stats_recheck computes the statistics of n bytes at p again, masked,
 * when fast kernels met a non-finite element (a non-finite sum of squares
 * says so: NaN stays NaN, an infinity squares to +inf, finite squares of
 * floats cannot overflow a double). */
void tp_stats_recheck(tp_acc *a, tp_dtype dt, const uint8_t *p, size_t n);

#endif
