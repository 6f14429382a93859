// SPDX-License-Identifier: MIT
// kernels.cu -- the device digest's kernels (devdigest.h says what they
// compute and in which order).  Compiled at build time by NVRTC (cubin.c)
// for sm_80 and sm_90, and to PTX for compute_80, with no header but
// devdigest.h.  One chunk kernel per element kind, so that the element
// loops unroll; one kernel joins the chunks' results.
#include "devdigest.h"

// block_tree reduces the block's parts in the fixed tree (thread t joins
// t + s at each width s) and leaves the result in sh[0].
__device__ __forceinline__ void block_tree(tpd_part *sh)
{
    for (unsigned s = TPD_THREADS / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (threadIdx.x < s) tpd_join(&sh[threadIdx.x], &sh[threadIdx.x + s]);
    }
    __syncthreads();
}

template <int DT>
__device__ __forceinline__ void chunks(const unsigned char *p, unsigned long long n, tpd_part *parts)
{
    __shared__ tpd_part sh[TPD_THREADS];
    tpd_part r;
    unsigned long long c = blockIdx.x;
    bool aligned = ((unsigned long long)p & (TPD_VEC - 1)) == 0;
    tpd_part_zero(&r);
#pragma unroll
    for (unsigned k = 0; k < TPD_PER_THREAD; k++) {
        unsigned long long off = c * TPD_CHUNK + (k * TPD_THREADS + threadIdx.x) * (unsigned long long)TPD_VEC;
        if (off >= n) break;
        if (aligned && off + TPD_VEC <= n) {
            union {
                uint4 q;
                unsigned char b[TPD_VEC];
            } v;
            v.q = __ldg((const uint4 *)(p + off));
            tpd_vector(&r, v.b, off, TPD_VEC, DT);
        } else {
            unsigned char b[TPD_VEC];
            unsigned len = n - off < TPD_VEC ? (unsigned)(n - off) : TPD_VEC;
            for (unsigned i = 0; i < TPD_VEC; i++) b[i] = i < len ? p[off + i] : 0;
            tpd_vector(&r, b, off, len, DT);
        }
    }
    sh[threadIdx.x] = r;
    block_tree(sh);
    if (threadIdx.x == 0) parts[c] = sh[0];
}

#define TPD_CHUNKS(name, dt)                                                                       \
    extern "C" __global__ void __launch_bounds__(TPD_THREADS)                                      \
        name(const unsigned char *p, unsigned long long n, tpd_part *parts)                        \
    {                                                                                              \
        chunks<dt>(p, n, parts);                                                                   \
    }

TPD_CHUNKS(tpd_chunks_other, TPD_OTHER)
TPD_CHUNKS(tpd_chunks_f32, TPD_F32)
TPD_CHUNKS(tpd_chunks_f64, TPD_F64)
TPD_CHUNKS(tpd_chunks_f16, TPD_F16)
TPD_CHUNKS(tpd_chunks_bf16, TPD_BF16)
TPD_CHUNKS(tpd_chunks_i8, TPD_I8)
TPD_CHUNKS(tpd_chunks_i16, TPD_I16)
TPD_CHUNKS(tpd_chunks_i32, TPD_I32)
TPD_CHUNKS(tpd_chunks_i64, TPD_I64)
TPD_CHUNKS(tpd_chunks_u8, TPD_U8)
TPD_CHUNKS(tpd_chunks_u16, TPD_U16)
TPD_CHUNKS(tpd_chunks_u32, TPD_U32)
TPD_CHUNKS(tpd_chunks_u64, TPD_U64)
TPD_CHUNKS(tpd_chunks_bool, TPD_BOOL)

// tpd_final joins nparts chunk results into *out, in one block: thread t
// takes chunks t, t + 256, ... in order, then the tree.
extern "C" __global__ void __launch_bounds__(TPD_THREADS)
    tpd_final(const tpd_part *parts, unsigned long long nparts, tpd_part *out)
{
    __shared__ tpd_part sh[TPD_THREADS];
    tpd_part r;
    tpd_part_zero(&r);
    for (unsigned long long c = threadIdx.x; c < nparts; c += TPD_THREADS) tpd_join(&r, &parts[c]);
    sh[threadIdx.x] = r;
    block_tree(sh);
    if (threadIdx.x == 0) *out = sh[0];
}
