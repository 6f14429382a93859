/* SPDX-License-Identifier: MIT
 * xxh3_avx2.c -- XXH3's streaming update built for AVX2 (see xxh3_avx2.h).
 * The whole file is compiled with AVX2 enabled, so nothing here may run
 * before tp_xxh3_avx2_available() says the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__)
#pragma GCC target("avx2")
#define TP_XXH3_AVX2 1
#undef XXH_VECTOR
#define XXH_VECTOR XXH_AVX2
#endif

#include "digest/xxh3_avx2.h"

#ifdef TP_XXH3_AVX2
int tp_xxh3_avx2_available(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2");
    }
    return have;
}

void tp_xxh3_128_update_avx2(XXH3_state_t *s, const void *p, size_t n)
{
    (void)XXH3_128bits_update(s, p, n);
}
#else
/* Not x86-64, or the whole build already targets AVX2: the inlined xxHash
 * is as fast as it gets. */
int tp_xxh3_avx2_available(void)
{
    return 0;
}

void tp_xxh3_128_update_avx2(XXH3_state_t *s, const void *p, size_t n)
{
    (void)XXH3_128bits_update(s, p, n);
}
#endif
