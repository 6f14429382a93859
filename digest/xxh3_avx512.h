/* SPDX-License-Identifier: MIT
 * xxh3_avx512.h -- XXH3-128's long-input loop spelled out stripe by stripe
 * on AVX-512 registers, so that a caller can do its own work between
 * stripes (digest.c computes statistics of the same bytes in the same loop).
 *
 * It is XXH3 as its specification defines it (xxHash's doc/xxhash_spec.md,
 * "XXH3 algorithm description", inputs longer than 240 bytes, default
 * secret, seed 0): the message is cut into 64-byte stripes; every stripe but
 * the one holding the last byte is accumulated with the secret at 8 * its
 * place in a block of 16 stripes, and the accumulators are scrambled after
 * each such block; the last 64 bytes are then accumulated with the secret at
 * 121, and the accumulators merged.  The result is XXH3_128bits of the
 * message, bit for bit; tests/unit/digest_test.c checks it against xxHash.
 * The secret, the initial accumulators and the merge are xxHash's own
 * (XXH_INLINE_ALL).  Nothing here may run before the CPU is known to have
 * AVX-512F. */
#ifndef TP_DIGEST_XXH3_AVX512_H
#define TP_DIGEST_XXH3_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8))
#define TP_HAVE_AVX512 1
#include <immintrin.h>

#define TP_XXH3_STRIPE        64 /* bytes */
#define TP_XXH3_BLOCK_STRIPES 16 /* (secret size - stripe) / 8 */
#define TP_XXH3_SCRAMBLE_KEY  (XXH3_SECRET_DEFAULT_SIZE - TP_XXH3_STRIPE)
#define TP_XXH3_LAST_KEY      (TP_XXH3_SCRAMBLE_KEY - 7)
#define TP_XXH3_MERGE_KEY     11

/* The eight 64-bit accumulators between calls, and how many stripes of the
 * current block they have taken. */
typedef struct tp_xxh3_long {
    _Alignas(64) uint64_t acc[8];
    unsigned pos;
} tp_xxh3_long;

static inline void tp_xxh3_long_init(tp_xxh3_long *x)
{
    static const uint64_t init[8] = XXH3_INIT_ACC;
    for (int i = 0; i < 8; i++) x->acc[i] = init[i];
    x->pos = 0;
}

/* tp_xxh3_accumulate512 adds one stripe: each accumulator gets the
 * neighbouring input word plus the product of the two 32-bit halves of its
 * input word xor the key. */
__attribute__((target("avx512f"))) static inline __m512i
tp_xxh3_accumulate512(__m512i acc, const void *in, const void *key)
{
    __m512i d = _mm512_loadu_si512(in);
    __m512i dk = _mm512_xor_si512(d, _mm512_loadu_si512(key));
    __m512i prod = _mm512_mul_epu32(dk, _mm512_srli_epi64(dk, 32));
    __m512i swapped = _mm512_shuffle_epi32(d, (_MM_PERM_ENUM)0x4e);
    return _mm512_add_epi64(prod, _mm512_add_epi64(acc, swapped));
}

/* tp_xxh3_scramble512 ends a block: acc = (acc ^ acc >> 47 ^ key) * PRIME32_1. */
__attribute__((target("avx512f"))) static inline __m512i tp_xxh3_scramble512(__m512i acc)
{
    const __m512i prime = _mm512_set1_epi32((int)XXH_PRIME32_1);
    __m512i k = _mm512_loadu_si512(XXH3_kSecret + TP_XXH3_SCRAMBLE_KEY);
    __m512i v = _mm512_xor_si512(_mm512_xor_si512(acc, _mm512_srli_epi64(acc, 47)), k);
    __m512i lo = _mm512_mul_epu32(v, prime);
    __m512i hi = _mm512_mul_epu32(_mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x31), prime);
    return _mm512_add_epi64(lo, _mm512_slli_epi64(hi, 32));
}

/* tp_xxh3_key512 is the secret for the stripe at pos in its block. */
static inline const uint8_t *tp_xxh3_key512(unsigned pos)
{
    return XXH3_kSecret + 8 * pos;
}

/* tp_xxh3_stripes512 accumulates n whole stripes (none of them the last). */
__attribute__((target("avx512f"))) static inline void
tp_xxh3_stripes512(tp_xxh3_long *x, const uint8_t *in, size_t n)
{
    __m512i acc = _mm512_load_si512(x->acc);
    for (size_t i = 0; i < n; i++, in += TP_XXH3_STRIPE) {
        acc = tp_xxh3_accumulate512(acc, in, tp_xxh3_key512(x->pos));
        if (++x->pos == TP_XXH3_BLOCK_STRIPES) {
            acc = tp_xxh3_scramble512(acc);
            x->pos = 0;
        }
    }
    _mm512_store_si512(x->acc, acc);
}

/* tp_xxh3_finish512 accumulates the last 64 bytes of a message of len bytes
 * (len > 240) and returns its XXH3-128. */
__attribute__((target("avx512f"))) static inline XXH128_hash_t
tp_xxh3_finish512(tp_xxh3_long *x, const uint8_t last[TP_XXH3_STRIPE], uint64_t len)
{
    XXH128_hash_t h;
    __m512i acc = _mm512_load_si512(x->acc);
    _mm512_store_si512(x->acc, tp_xxh3_accumulate512(acc, last, XXH3_kSecret + TP_XXH3_LAST_KEY));
    h.low64 = XXH3_mergeAccs(x->acc, XXH3_kSecret + TP_XXH3_MERGE_KEY, len * XXH_PRIME64_1);
    h.high64 =
        XXH3_mergeAccs(x->acc, XXH3_kSecret + XXH3_SECRET_DEFAULT_SIZE - 64 - TP_XXH3_MERGE_KEY,
                       ~(len * XXH_PRIME64_2));
    return h;
}
#endif

#endif
