/* SPDX-License-Identifier: MIT
 * ref.c -- the device digest computed on the host, in the kernels' order
 * (devdigest.h), so that the two agree bit for bit: the tests of the
 * function run here on every machine, and a GPU check compares the kernels
 * with it (tpcu_reference, tpcuda.h). */
#include <math.h>
#include <string.h>

#include "agent/cuda/tpcuda.h"

/* tree reduces the TPA_DEV1_THREADS parts in r in the kernels' fixed tree: at
 * each width s, part t joins part t + s; the result is r[0]. */
static void tree(tpa_dev1_part *r)
{
    for (unsigned s = TPA_DEV1_THREADS / 2; s > 0; s >>= 1)
        for (unsigned t = 0; t < s; t++) tpa_dev1_join(&r[t], &r[t + s]);
}

/* chunk computes chunk c of the n bytes at p, as one block does. */
static void chunk(tpa_dev1_part *out, const unsigned char *p, unsigned long long n, int dt,
                  unsigned long long c)
{
    static __thread tpa_dev1_part r[TPA_DEV1_THREADS];
    for (unsigned t = 0; t < TPA_DEV1_THREADS; t++) {
        tpa_dev1_part_zero(&r[t]);
        for (unsigned k = 0; k < TPA_DEV1_PER_THREAD; k++) {
            unsigned long long off =
                c * TPA_DEV1_CHUNK + (k * TPA_DEV1_THREADS + t) * (unsigned long long)TPA_DEV1_VEC;
            unsigned char v[TPA_DEV1_VEC];
            unsigned len;
            if (off >= n) break;
            len = n - off < TPA_DEV1_VEC ? (unsigned)(n - off) : TPA_DEV1_VEC;
            memset(v, 0, sizeof v);
            memcpy(v, p + off, len);
            tpa_dev1_vector(&r[t], v, off, len, dt);
        }
    }
    tree(r);
    *out = r[0];
}

void tpcu_reference(const void *data, size_t nbytes, int dt, tpa_dev1_part *out)
{
    static __thread tpa_dev1_part r[TPA_DEV1_THREADS];
    unsigned long long nchunks = (nbytes + TPA_DEV1_CHUNK - 1) / TPA_DEV1_CHUNK;
    for (unsigned t = 0; t < TPA_DEV1_THREADS; t++) {
        tpa_dev1_part_zero(&r[t]);
        for (unsigned long long c = t; c < nchunks; c += TPA_DEV1_THREADS) {
            tpa_dev1_part part;
            chunk(&part, data, nbytes, dt, c);
            tpa_dev1_join(&r[t], &part);
        }
    }
    tree(r);
    *out = r[0];
}
