/* SPDX-License-Identifier: MIT
 * xxh3_avx2.h -- XXH3's streaming update compiled for AVX2.
 *
 * xxHash is inlined (XXH_INLINE_ALL) and so built for the baseline x86-64
 * the rest of the build targets: SSE2.  This second copy of its update loop
 * is built for AVX2 and chosen at run time when the CPU has it; XXH3 gives
 * the same hash whatever vector unit computes it, so digests do not depend
 * on the machine. */
#ifndef TP_DIGEST_XXH3_AVX2_H
#define TP_DIGEST_XXH3_AVX2_H

#include <stddef.h>

#include <xxhash.h>

/* tp_xxh3_avx2_available is 1 when this CPU runs the AVX2 copy. */
int tp_xxh3_avx2_available(void);
/* tp_xxh3_128_update_avx2 is XXH3_128bits_update (same state, same result)
 * compiled for AVX2.  Call it only when tp_xxh3_avx2_available(). */
void tp_xxh3_128_update_avx2(XXH3_state_t *s, const void *p, size_t n);

#endif
