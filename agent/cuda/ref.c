/* SPDX-License-Identifier: MIT
 * ref.c -- the device digest computed on the host, in the kernels' order
 * (devdigest.h), so that the two agree bit for bit: the tests of the
 * function run here on every machine, and a GPU check compares the kernels
 * with it (tpcu_reference, tpcuda.h). */
#include <math.h>
#include <string.h>

#include "agent/cuda/tpcuda.h"

/* tree reduces the TPD_THREADS parts in r in the kernels' fixed tree: at
 * each width s, part t joins part t + s; the result is r[0]. */
static void tree(tpd_part *r)
{
    for (unsigned s = TPD_THREADS / 2; s > 0; s >>= 1)
        for (unsigned t = 0; t < s; t++) tpd_join(&r[t], &r[t + s]);
}

/* chunk computes chunk c of the n bytes at p, as one block does. */
static void chunk(tpd_part *out, const unsigned char *p, unsigned long long n, int dt,
                  unsigned long long c)
{
    static __thread tpd_part r[TPD_THREADS];
    for (unsigned t = 0; t < TPD_THREADS; t++) {
        tpd_part_zero(&r[t]);
        for (unsigned k = 0; k < TPD_PER_THREAD; k++) {
            unsigned long long off =
                c * TPD_CHUNK + (k * TPD_THREADS + t) * (unsigned long long)TPD_VEC;
            unsigned char v[TPD_VEC];
            unsigned len;
            if (off >= n) break;
            len = n - off < TPD_VEC ? (unsigned)(n - off) : TPD_VEC;
            memset(v, 0, sizeof v);
            memcpy(v, p + off, len);
            tpd_vector(&r[t], v, off, len, dt);
        }
    }
    tree(r);
    *out = r[0];
}

void tpcu_reference(const void *data, size_t nbytes, int dt, tpd_part *out)
{
    static __thread tpd_part r[TPD_THREADS];
    unsigned long long nchunks = (nbytes + TPD_CHUNK - 1) / TPD_CHUNK;
    for (unsigned t = 0; t < TPD_THREADS; t++) {
        tpd_part_zero(&r[t]);
        for (unsigned long long c = t; c < nchunks; c += TPD_THREADS) {
            tpd_part part;
            chunk(&part, data, nbytes, dt, c);
            tpd_join(&r[t], &part);
        }
    }
    tree(r);
    *out = r[0];
}
