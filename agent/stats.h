/* SPDX-License-Identifier: MIT
 * stats.h -- the statistics of tensor memory (sum, sum of squares, max |x|
 * over finite elements, non-finite count) in sixteen double lanes, and the
 * kernel that computes them (portable C, AVX2, AVX-512, chosen at run time).
 * Internal to the digest (digest.c): every kernel gives the same bits for
 * the same bytes. */
#ifndef TP_AGENT_STATS_H
#define TP_AGENT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/digest.h"

#define TPA_LANES 16

/* Sixteen double accumulators: element i of a float32 run goes to lane
 * i % 16, squares are accumulated with fused multiply-add, and the lanes are
 * reduced in a fixed order, so the AVX2 kernel and the portable one give the
 * same bits for the same bytes. */
typedef struct tpa_acc {
    double sum[TPA_LANES], sq[TPA_LANES];
    double mx;
    uint64_t nf;
} tpa_acc;

/* tpa_stats_kernel is the kernel in use: the best this CPU runs, capped by
 * tpa_digest_use_kernel. */
tpa_kernel tpa_stats_kernel(void);

/* tpa_elem_size is the size of one element of dt (1 for TPA_DT_OTHER). */
size_t tpa_elem_size(tpa_dtype dt);

/* tpa_is_float: dt is float32, float16 or bfloat16 (whose statistics run
 * fast first, tpa_stats_recheck). */
int tpa_is_float(tpa_dtype dt);

/* tpa_stats_chunk accumulates the elements of nbytes at p into a; fast:
 * without the non-finite masks (the same bits for finite data). */
void tpa_stats_chunk(tpa_acc *a, tpa_dtype dt, const void *p, size_t nbytes, int fast);

/* tpa_stats_recheck computes the statistics of n bytes at p again, masked,
 * when fast kernels met a non-finite element (a non-finite sum of squares
 * says so: NaN stays NaN, an infinity squares to +inf, finite squares of
 * floats cannot overflow a double). */
void tpa_stats_recheck(tpa_acc *a, tpa_dtype dt, const uint8_t *p, size_t n);

#endif
