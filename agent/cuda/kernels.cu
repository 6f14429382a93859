// SPDX-License-Identifier: MIT
// kernels.cu -- the device digest's kernels (devdigest.h says what they
// compute and in which order).  Compiled at build time by NVRTC (cubin.c)
// for sm_80 and sm_90, and to PTX for compute_80, with no header but
// devdigest.h.  One chunk kernel per element kind, so that the element
// loops unroll; one kernel joins the chunks' results.
#include "devdigest.h"

// block_tree reduces the block's parts in the fixed tree (thread t joins
// t + s at each width s) and leaves the result in sh[0].
__device__ __forceinline__ void block_tree(tpa_dev1_part *sh)
{
    for (unsigned s = TPA_DEV1_THREADS / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (threadIdx.x < s) tpa_dev1_join(&sh[threadIdx.x], &sh[threadIdx.x + s]);
    }
    __syncthreads();
}

template <int DT>
__device__ __forceinline__ void chunks(const unsigned char *p, unsigned long long n, tpa_dev1_part *parts)
{
    __shared__ tpa_dev1_part sh[TPA_DEV1_THREADS];
    tpa_dev1_part r;
    unsigned long long c = blockIdx.x;
    bool aligned = ((unsigned long long)p & (TPA_DEV1_VEC - 1)) == 0;
    tpa_dev1_part_zero(&r);
#pragma unroll
    for (unsigned k = 0; k < TPA_DEV1_PER_THREAD; k++) {
        unsigned long long off = c * TPA_DEV1_CHUNK + (k * TPA_DEV1_THREADS + threadIdx.x) * (unsigned long long)TPA_DEV1_VEC;
        if (off >= n) break;
        if (aligned && off + TPA_DEV1_VEC <= n) {
            union {
                uint4 q;
                unsigned char b[TPA_DEV1_VEC];
            } v;
            v.q = __ldg((const uint4 *)(p + off));
            tpa_dev1_vector(&r, v.b, off, TPA_DEV1_VEC, DT);
        } else {
            unsigned char b[TPA_DEV1_VEC];
            unsigned len = n - off < TPA_DEV1_VEC ? (unsigned)(n - off) : TPA_DEV1_VEC;
            for (unsigned i = 0; i < TPA_DEV1_VEC; i++) b[i] = i < len ? p[off + i] : 0;
            tpa_dev1_vector(&r, b, off, len, DT);
        }
    }
    sh[threadIdx.x] = r;
    block_tree(sh);
    if (threadIdx.x == 0) parts[c] = sh[0];
}

#define TPA_DEV1_CHUNKS(name, dt)                                                                  \
    extern "C" __global__ void __launch_bounds__(TPA_DEV1_THREADS)                                 \
        name(const unsigned char *p, unsigned long long n, tpa_dev1_part *parts)                   \
    {                                                                                              \
        chunks<dt>(p, n, parts);                                                                   \
    }

TPA_DEV1_CHUNKS(tpa_dev1_chunks_other, TPA_DEV1_OTHER)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_f32, TPA_DEV1_F32)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_f64, TPA_DEV1_F64)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_f16, TPA_DEV1_F16)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_bf16, TPA_DEV1_BF16)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_i8, TPA_DEV1_I8)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_i16, TPA_DEV1_I16)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_i32, TPA_DEV1_I32)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_i64, TPA_DEV1_I64)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_u8, TPA_DEV1_U8)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_u16, TPA_DEV1_U16)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_u32, TPA_DEV1_U32)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_u64, TPA_DEV1_U64)
TPA_DEV1_CHUNKS(tpa_dev1_chunks_bool, TPA_DEV1_BOOL)

// tpa_dev1_final joins nparts chunk results into *out, in one block: thread t
// takes chunks t, t + 256, ... in order, then the tree.
extern "C" __global__ void __launch_bounds__(TPA_DEV1_THREADS)
    tpa_dev1_final(const tpa_dev1_part *parts, unsigned long long nparts, tpa_dev1_part *out)
{
    __shared__ tpa_dev1_part sh[TPA_DEV1_THREADS];
    tpa_dev1_part r;
    tpa_dev1_part_zero(&r);
    for (unsigned long long c = threadIdx.x; c < nparts; c += TPA_DEV1_THREADS) tpa_dev1_join(&r, &parts[c]);
    sh[threadIdx.x] = r;
    block_tree(sh);
    if (threadIdx.x == 0) *out = sh[0];
}
