/* SPDX-License-Identifier: MIT
 * hash_bench.c -- the agent's hashing throughput as a ratio to a plain memory
 * read of the same bytes, in the same process: XXH3-128 alone, and the
 * agent's fused digest (XXH3-128 + sum, L2, max |x|, non-finite count over
 * float32).  The "read" is a sum of 64-bit words with four accumulators,
 * which the compiler vectorizes: as fast as this machine reads memory.
 *
 * usage: hash_bench [MiB]   (default 256; each figure is the best of 9) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "agent/digest.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t sink;

__attribute__((noinline)) static void read_all(const uint64_t *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    sink += a + b + c + d;
}

__attribute__((noinline)) static void xxh_all(const void *p, size_t n)
{
    uint8_t d[TP_DIGEST_LEN]; /* the agent's XXH3-128: its AVX2 build where the CPU has one */
    tpa_digest_bytes(p, n, d);
    sink += d[0];
}

__attribute__((noinline)) static void digest_all(const float *p, size_t n)
{
    int64_t shape[1] = {(int64_t)n};
    uint8_t d[16];
    tp_stats st;
    tpa_digest_tensor("torch.float32", shape, 1, p, n * sizeof(float), TPA_DT_F32, d, &st);
    sink += d[0];
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256, bytes = mib << 20;
    float *buf = malloc(bytes);
    double best[3] = {1e9, 1e9, 1e9};
    if (buf == NULL || mib == 0) {
        fprintf(stderr, "usage: hash_bench [MiB]\n");
        return 64;
    }
    for (size_t i = 0; i < bytes / sizeof(float); i++) buf[i] = (float)(i % 1000) * 0.001f;
    for (int rep = 0; rep < 9; rep++) {
        double t0 = now_s(), t1, t2, t3;
        read_all((const uint64_t *)buf, bytes / 8);
        t1 = now_s();
        xxh_all(buf, bytes);
        t2 = now_s();
        digest_all(buf, bytes / sizeof(float));
        t3 = now_s();
        if (t1 - t0 < best[0]) best[0] = t1 - t0;
        if (t2 - t1 < best[1]) best[1] = t2 - t1;
        if (t3 - t2 < best[2]) best[2] = t3 - t2;
    }
    printf("hash_bench: %zu MiB, best of 9\n", mib);
    printf("  memory read      %7.2f GB/s\n", (double)bytes / best[0] / 1e9);
    printf("  XXH3-128         %7.2f GB/s  ratio to read %.2f\n", (double)bytes / best[1] / 1e9,
           best[0] / best[1]);
    printf("  digest + stats   %7.2f GB/s  ratio to read %.2f\n", (double)bytes / best[2] / 1e9,
           best[0] / best[2]);
    free(buf);
    return sink == 42 ? 1 : 0;
}
