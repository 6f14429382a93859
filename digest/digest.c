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
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <xxhash.h>

#include "digest/digest.h"
#include "digest/prefetch.h"
#include "digest/stats.h"
#include "digest/stats512.h"
#include "digest/xxh3_avx2.h"
#include "digest/xxh3_avx512.h"

/* hash_update feeds XXH3 through its AVX2 build when the CPU has one, also
 * with AVX-512: xxHash's AVX-512 build read memory at 0.6 of a plain read on
 * AMD Zen 5, its AVX2 build at 0.97. */
static void hash_update(XXH3_state_t *s, const void *p, size_t n)
{
    if (tp_stats_kernel() >= TP_KERNEL_AVX2 && tp_xxh3_avx2_available())
        tp_xxh3_128_update_avx2(s, p, n);
    else
        XXH3_128bits_update(s, p, n);
}

static const struct {
    const char *name;
    tp_dtype dt;
} dtypes[] = {
    {"float32", TP_DT_F32}, {"float", TP_DT_F32},  {"float64", TP_DT_F64},   {"double", TP_DT_F64},
    {"float16", TP_DT_F16}, {"half", TP_DT_F16},   {"bfloat16", TP_DT_BF16}, {"int8", TP_DT_I8},
    {"int16", TP_DT_I16},   {"short", TP_DT_I16},  {"int32", TP_DT_I32},     {"int", TP_DT_I32},
    {"int64", TP_DT_I64},   {"long", TP_DT_I64},   {"uint8", TP_DT_U8},      {"uint16", TP_DT_U16},
    {"uint32", TP_DT_U32},  {"uint64", TP_DT_U64}, {"bool", TP_DT_BOOL},
};

tp_dtype tp_dtype_parse(const char *name)
{
    if (strncmp(name, "torch.", 6) == 0) name += 6;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(name, dtypes[i].name) == 0) return dtypes[i].dt;
    return TP_DT_OTHER;
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

/* The locality of every prefetch: 2 (x86's prefetcht1) brings the line into
 * L2 and leaves L1 to the loads themselves.  On AMD Zen 4 (bench/hash_bench.c,
 * 256 MiB, float32, three alternated runs each) the one-loop pass read at
 * 21.7-22.0 GB/s with it and 18.6-20.8 with 3 (prefetcht0, into L1), the
 * AVX2 kernel 17.8-17.9 against 14.5-14.6. */
#define PREFETCH_LOCALITY 2

#define FUSE_BYTES     ((size_t)4096)
#define SLICE_BYTES    ((size_t)1024)
#define PREFETCH_AHEAD (2 * FUSE_BYTES)

/* prefetch asks for n bytes at p into L2, not L1 (PREFETCH_LOCALITY). */
static void prefetch(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, PREFETCH_LOCALITY);
}

/* fused hashes and accumulates n bytes (n a multiple of the element size). */
static void fused(XXH3_state_t *state, tp_acc *a, tp_dtype dt, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n, *q = p;
    int fast = tp_is_float(dt);
    while (q < end) {
        size_t k = (size_t)(end - q) < FUSE_BYTES ? (size_t)(end - q) : FUSE_BYTES;
        hash_update(state, q, k);
        for (size_t s = 0; s < k; s += SLICE_BYTES) {
            size_t m = k - s < SLICE_BYTES ? k - s : SLICE_BYTES;
            if ((size_t)(end - q) - s >= PREFETCH_AHEAD + m) prefetch(q + s + PREFETCH_AHEAD, m);
            tp_stats_chunk(a, dt, q + s, m, fast);
        }
        q += k;
    }
    if (fast) tp_stats_recheck(a, dt, p, n);
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
                              const void *data, size_t nbytes, tp_dtype dt, tp_acc *a)
{
    XXH3_state_t state;

    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        uint8_t le[8];
        put_le64(le, shape[i]);
        XXH3_128bits_update(&state, le, 8);
    }
    if (dt == TP_DT_OTHER) {
        if (nbytes) hash_update(&state, data, nbytes);
    } else {
        size_t body = nbytes - nbytes % tp_elem_size(dt);
        fused(&state, a, dt, data, body);
        if (nbytes > body) hash_update(&state, (const uint8_t *)data + body, nbytes - body);
    }
    return XXH3_128bits_digest(&state);
}

/* ---- the one-loop pass ----
 * With AVX-512, a large float tensor is hashed and its statistics are
 * accumulated in the same loop, 64 bytes of each per turn: the hash is
 * XXH3's long-input loop spelled out (digest/xxh3_avx512.h), and its work
 * fills the cycles the statistics spend waiting on their chains of additions
 * (every lane adds one float per 64 bytes), so the loop keeps up with memory
 * where hashing a piece, then accumulating it, did not (0.7 of a read).  XXH3's stripes start at
 * the header (the dtype name and the shape), so the tensor's stripes lie across its elements: the
 * statistics follow a few bytes behind the hash.  Statistics run fast, then are checked, as in the
 * fused pass. */

#define ONE_LOOP_MIN_BYTES ((size_t)16384)
#define HEAD_MAX           512 /* header bytes: dtype name, ~60 dimensions */
/* The prefetch distance, where the pass prefetches at all (prefetch.h).  On
 * a 2-core Xeon whose memory reads at 11 GB/s a thread (bench/hash_bench.c,
 * 256 MiB, float32): none 0.67 of a read, 2 KiB 0.94-0.96, 4 KiB 0.96-1.00,
 * 8 KiB 0.84-0.96, 16 KiB 0.86-0.92.  On a 2-core AMD Zen 4 (a copy of this
 * pass timed the same way, one run each): none 0.94, 2 KiB 0.58, 3 KiB
 * 0.67, 4 KiB 0.78-0.80, 6 KiB 0.87, 8 KiB 0.81, 16 KiB 0.79. */
#define AHEAD_STRIPES (4096 / TP_XXH3_STRIPE)

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

#ifdef TP_HAVE_AVX512
/* halves512 widens sixteen bfloat16 or float16 at p to float, exactly. */
INLINE_AVX512 __m512 halves512(const uint8_t *p, tp_dtype dt)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (dt == TP_DT_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* step512 accumulates 64 bytes of elements: one float per lane, or two
 * rounds of one half per lane. */
INLINE_AVX512 void step512(lanes512 *l, const uint8_t *p, tp_dtype dt)
{
    if (dt == TP_DT_F32) {
        lanes512_add_at(l, (const float *)(const void *)p);
    } else {
        lanes512_add_v(l, halves512(p, dt));
        lanes512_add_v(l, halves512(p + 32, dt));
    }
}

/* one_loop512 hashes n stripes at in and accumulates n times 64 bytes of
 * elements at p, prefetching AHEAD_STRIPES ahead when pf. */
INLINE_AVX512 void one_loop512(tp_xxh3_long *x, const uint8_t *in, const uint8_t *p, size_t n,
                               tp_acc *a, tp_dtype dt, bool pf)
{
    __m512i h = _mm512_load_si512(x->acc);
    unsigned pos = x->pos;
    lanes512 l;
    lanes512_load(&l, a);
    for (size_t i = 0; i < n; i++, in += TP_XXH3_STRIPE, p += TP_XXH3_STRIPE) {
        if (pf && i + AHEAD_STRIPES < n)
            __builtin_prefetch(in + AHEAD_STRIPES * TP_XXH3_STRIPE, 0, PREFETCH_LOCALITY);
        h = tp_xxh3_accumulate512(h, in, tp_xxh3_key512(pos));
        step512(&l, p, dt);
        if (++pos == TP_XXH3_BLOCK_STRIPES) {
            h = tp_xxh3_scramble512(h);
            pos = 0;
        }
    }
    _mm512_store_si512(x->acc, h);
    x->pos = pos;
    lanes512_store(&l, a);
}

/* one_loop512_dt is one_loop512 built once per float dtype (-O3 unswitches
 * its loop on pf). */
TARGET_AVX512 static void one_loop512_dt(tp_xxh3_long *x, const uint8_t *in, const uint8_t *p,
                                         size_t n, tp_acc *a, tp_dtype dt, bool pf)
{
    if (dt == TP_DT_F32)
        one_loop512(x, in, p, n, a, TP_DT_F32, pf);
    else if (dt == TP_DT_BF16)
        one_loop512(x, in, p, n, a, TP_DT_BF16, pf);
    else
        one_loop512(x, in, p, n, a, TP_DT_F16, pf);
}

/* one_loop digests the header (hlen bytes at head, which has room for a
 * stripe more) and the tensor (n bytes at data) to *h and returns 1, or
 * returns 0 when the tensor is not for the one-loop pass. */
static int one_loop(uint8_t *head, size_t hlen, const uint8_t *data, size_t n, tp_dtype dt,
                    tp_acc *a, XXH128_hash_t *h)
{
    size_t body = n - n % tp_elem_size(dt), len = hlen + n, hs, skip, ns, done;
    tp_xxh3_long x;
    tp_pf_run pf;

    if (tp_stats_kernel() != TP_KERNEL_AVX512 || !tp_is_float(dt) || n < ONE_LOOP_MIN_BYTES ||
        hlen > HEAD_MAX)
        return 0;
    /* the stripes with header bytes (the tensor's first skip bytes end the
     * last of them), then the tensor's stripes but the very last */
    hs = (hlen + TP_XXH3_STRIPE - 1) / TP_XXH3_STRIPE, skip = hs * TP_XXH3_STRIPE - hlen;
    ns = (len - 1) / TP_XXH3_STRIPE - hs, done = ns * TP_XXH3_STRIPE;
    memcpy(head + hlen, data, skip);
    tp_xxh3_long_init(&x);
    tp_xxh3_stripes512(&x, head, hs);
    pf = tp_pf_start(n);
    one_loop512_dt(&x, data + skip, data, ns, a, dt, pf.prefetch);
    tp_pf_end(&pf);
    tp_stats_chunk(a, dt, data + done, body - done, 1);
    *h = tp_xxh3_finish512(&x, data + n - TP_XXH3_STRIPE, len);
    tp_stats_recheck(a, dt, data, body);
    return 1;
}
#else
static int one_loop(uint8_t *head, size_t hlen, const uint8_t *data, size_t n, tp_dtype dt,
                    tp_acc *a, XXH128_hash_t *h)
{
    return 0;
}
#endif

void tp_digest_tensor(const char *dtype_name, const int64_t *shape, int ndim, const void *data,
                      size_t nbytes, tp_dtype dt, uint8_t out[TP_DIGEST_LEN], tp_stats *st)
{
    uint8_t head[HEAD_MAX + 64];
    size_t hlen = header(head, dtype_name, shape, ndim);
    XXH128_hash_t h;
    XXH128_canonical_t c;
    tp_acc a;

    memset(&a, 0, sizeof a);
    if (!one_loop(head, hlen, data, nbytes, dt, &a, &h))
        h = streamed(dtype_name, shape, ndim, data, nbytes, dt, &a);
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, TP_DIGEST_LEN);

    if (dt == TP_DT_OTHER) {
        st->sum = st->l2 = st->maxabs = NAN;
        st->nonfinite = 0;
        return;
    }
    st->sum = 0, st->l2 = 0;
    for (int j = 0; j < TP_LANES; j++) {
        st->sum += a.sum[j];
        st->l2 += a.sq[j];
    }
    st->l2 = sqrt(st->l2);
    st->maxabs = a.mx;
    st->nonfinite = a.nf;
}

void tp_digest_device(const char *dtype_name, const int64_t *shape, int ndim, size_t nbytes,
                      const unsigned long long lane[2], uint8_t out[TP_DIGEST_LEN])
{
    uint8_t le[8];
    XXH3_state_t state;
    XXH128_canonical_t c;
    const int64_t tail[3] = {(int64_t)nbytes, (int64_t)lane[0], (int64_t)lane[1]};
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, "dev1", 4);
    XXH3_128bits_update(&state, dtype_name, strlen(dtype_name) + 1);
    for (int i = 0; i < ndim; i++) {
        put_le64(le, shape[i]);
        XXH3_128bits_update(&state, le, 8);
    }
    for (int i = 0; i < 3; i++) {
        put_le64(le, tail[i]);
        XXH3_128bits_update(&state, le, 8);
    }
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&state));
    memcpy(out, c.digest, TP_DIGEST_LEN);
}

void tp_digest_bytes(const void *p, size_t n, uint8_t out[TP_DIGEST_LEN])
{
    XXH128_canonical_t c;
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    hash_update(&state, p, n); /* the same hash as XXH3_128bits(p, n) */
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&state));
    memcpy(out, c.digest, TP_DIGEST_LEN);
}
