/* SPDX-License-Identifier: MIT
 * hash_bench.c -- the agent's hashing throughput as a ratio to a plain memory
 * read of the same bytes, in the same process: XXH3-128 alone, and the
 * agent's digest (XXH3-128 + sum, L2, max |x|, non-finite count) over
 * float32 and bfloat16 with the best kernel this CPU runs, and over float32
 * with each lesser SIMD kernel.  The "read" is a sum of 64-bit words with
 * four accumulators, which the compiler vectorizes: as fast as this machine
 * reads memory.
 *
 * Nine rounds, each reading the bytes once and then running every row once;
 * a row's ratio is the median over the rounds of the read's time over the
 * row's time in the same round (a moment when the machine's memory is slow
 * or fast falls on both), and its GB/s the best round's.
 *
 * usage: hash_bench [MiB]   (default 256) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "digest/digest.h"

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
    tp_digest_bytes(p, n, d);
    sink += d[0];
}

__attribute__((noinline)) static void digest_all(const char *dtype, tp_dtype dt, const void *p,
                                                 size_t bytes)
{
    int64_t shape[1] = {(int64_t)(bytes / (dt == TP_DT_F32 ? 4 : 2))};
    uint8_t d[16];
    tp_stats st;
    tp_digest_tensor(dtype, shape, 1, p, bytes, dt, d, &st);
    sink += d[0];
}

#define REPS 9

static const char *const kernel_names[] = {"C", "AVX2", "AVX-512"};

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A row: what is timed, as a ratio to the read. */
typedef struct row {
    const char *label;
    tp_kernel kernel; /* the kernels it may use */
    tp_dtype dt;      /* TP_DT_OTHER: XXH3-128 alone */
    double best;
    double ratio[REPS]; /* the read's time over the row's, round by round */
} row;

static void run(const row *r, const float *f32, const uint16_t *bf16, size_t bytes)
{
    tp_digest_use_kernel(r->kernel);
    if (r->dt == TP_DT_OTHER)
        xxh_all(f32, bytes);
    else if (r->dt == TP_DT_F32)
        digest_all("torch.float32", TP_DT_F32, f32, bytes);
    else
        digest_all("torch.bfloat16", TP_DT_BF16, bf16, bytes);
    tp_digest_use_kernel(TP_KERNEL_AVX512);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256, bytes = mib << 20;
    tp_kernel best = tp_digest_use_kernel(TP_KERNEL_AVX512);
    float *f32 = malloc(bytes);
    uint16_t *bf16 = malloc(bytes);
    row rows[4] = {
        {"XXH3-128", best, TP_DT_OTHER, 1e9, {0}},
        {"digest + stats", best, TP_DT_F32, 1e9, {0}},
        {"  bfloat16", best, TP_DT_BF16, 1e9, {0}},
        {"  AVX2 kernel", TP_KERNEL_AVX2, TP_DT_F32, 1e9, {0}},
    };
    int nrows = best == TP_KERNEL_AVX512 ? 4 : 3;
    double read = 1e9;
    if (f32 == NULL || bf16 == NULL || mib == 0) {
        fprintf(stderr, "usage: hash_bench [MiB]\n");
        return 64;
    }
    for (size_t i = 0; i < bytes / sizeof(float); i++) f32[i] = (float)(i % 1000) * 0.001f;
    for (size_t i = 0; i < bytes / sizeof(uint16_t); i++) {
        uint32_t bits;
        memcpy(&bits, &f32[i / 2], 4);
        bf16[i] = (uint16_t)(bits >> 16);
    }
    for (int rep = 0; rep < REPS; rep++) {
        double t = now_s(), tr;
        read_all((const uint64_t *)f32, bytes / 8);
        tr = now_s() - t;
        read = tr < read ? tr : read;
        for (int k = 0; k < nrows; k++) {
            t = now_s();
            run(&rows[k], f32, bf16, bytes);
            t = now_s() - t;
            rows[k].best = t < rows[k].best ? t : rows[k].best;
            rows[k].ratio[rep] = tr / t;
        }
    }
    printf("hash_bench: %zu MiB, %d rounds, kernel %s\n", mib, REPS, kernel_names[best]);
    printf("  memory read      %7.2f GB/s\n", (double)bytes / read / 1e9);
    for (int k = 0; k < nrows; k++) {
        qsort(rows[k].ratio, REPS, sizeof(double), by_value);
        printf("  %-16s %7.2f GB/s  ratio to read %.2f (rounds %.2f-%.2f; best against best"
               " %.2f)\n",
               rows[k].label, (double)bytes / rows[k].best / 1e9, rows[k].ratio[REPS / 2],
               rows[k].ratio[0], rows[k].ratio[REPS - 1], read / rows[k].best);
    }
    free(f32);
    free(bf16);
    return sink == 42 ? 1 : 0;
}
