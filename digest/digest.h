/* SPDX-License-Identifier: MIT
 * digest.h -- tensor digests and statistics over raw memory.
 *
 * A digest is XXH3-128 over the dtype name, the shape (int64 little-endian)
 * and the bytes, so equal digests mean equal dtype, shape and contents.  The
 * statistics (sum, L2 norm, max |x| over finite elements, non-finite count)
 * are computed in the same pass over memory.  Pure C, no Python, no threads
 * of its own, reentrant: callers hash several tensors at once on several
 * threads (agent/job.h) and release the GIL around it. */
#ifndef TP_DIGEST_DIGEST_H
#define TP_DIGEST_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "proto/event.h"

typedef enum tp_dtype {
    TP_DT_OTHER = 0, /* digest only; statistics are NaN */
    TP_DT_F32,
    TP_DT_F64,
    TP_DT_F16,
    TP_DT_BF16,
    TP_DT_I8,
    TP_DT_I16,
    TP_DT_I32,
    TP_DT_I64,
    TP_DT_U8,
    TP_DT_U16,
    TP_DT_U32,
    TP_DT_U64,
    TP_DT_BOOL,
} tp_dtype;

/* tp_dtype_parse maps "torch.float32", "float32", "uint32"... to a code. */
tp_dtype tp_dtype_parse(const char *name);

/* tp_digest_tensor digests nbytes at data as a tensor of the given dtype name
 * and shape, and fills *st (NaN statistics for TP_DT_OTHER).  data may be
 * NULL when nbytes is 0. */
void tp_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                      size_t nbytes, tp_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st);

/* tp_digest_device finishes a device digest ("dev1", agent/cuda/devdigest.h)
 * of nbytes from its two lanes: XXH3-128 over the tag, the dtype name, the
 * shape, nbytes and the lanes. */
void tp_digest_device(const char *dtype_name, const int64_t *shape, int ndim, size_t nbytes,
                      const unsigned long long lane[2], uint8_t out[TP_DIGEST_LEN]);

/* tp_digest_bytes is XXH3-128 of n bytes. */
void tp_digest_bytes(const void *p, size_t n, uint8_t out[TP_DIGEST_LEN]);

/* The kernels, in order: each gives the same digests and statistics, bit for
 * bit, and the best one the CPU runs is used. */
typedef enum tp_kernel {
    TP_KERNEL_PORTABLE = 0, /* C, SSE2 XXH3 */
    TP_KERNEL_AVX2,         /* AVX2 + FMA */
    TP_KERNEL_AVX512,       /* AVX-512F and DQ: hash and statistics in one loop */
} tp_kernel;

/* tp_digest_use_kernel, for tests and benchmarks only, makes later digests
 * use no kernel above k (TP_KERNEL_AVX512: the best again) and returns the
 * best kernel now in use.  Not thread-safe: call it while nothing digests. */
tp_kernel tp_digest_use_kernel(tp_kernel k);

/* Whether the AVX-512 pass over a large float tensor asks for memory ahead
 * of its reads (software prefetch).  Which way keeps one thread nearer the
 * speed of a memory read depends on the machine, never the digest's bits:
 * by default (TP_PREFETCH_AUTO) each process times its first large tensors
 * both ways and prefetches only where that was faster (digest/prefetch.h). */
typedef enum tp_prefetch {
    TP_PREFETCH_AUTO = 0, /* still timing */
    TP_PREFETCH_ON,
    TP_PREFETCH_OFF,
} tp_prefetch;

/* tp_digest_use_prefetch, for tests and benchmarks only, fixes the way
 * (ON, OFF), or starts the timing again (AUTO).  Not thread-safe: call it
 * while nothing digests. */
void tp_digest_use_prefetch(tp_prefetch m);

/* tp_digest_prefetch is the way decided, or TP_PREFETCH_AUTO while the
 * process is still timing. */
tp_prefetch tp_digest_prefetch(void);

#endif
