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
 * Two more rows say which part of the ratio is the kernel and which the
 * machine.  "In cache": the digest over IN_CACHE bytes that stay in the
 * core's cache, again and again: the kernel's own speed, with no memory to
 * wait for; where it is not well above the memory read, the single-thread
 * ratio is bounded by the core, not the memory, and moves with the core's
 * clock.  "On every core": each of the machine's cores reads, then digests,
 * its own share of the bytes at once, as the agent hashes a snapshot's
 * tensors on torch's compute threads (agent/team.h): the ratio the agent
 * meets, against the read of every core.
 *
 * usage: hash_bench [MiB]   (default 256) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

#define REPS        9
#define IN_CACHE    ((size_t)256 << 10) /* in L2 on every x86 core of the last years */
#define MAX_THREADS 64

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
    tp_prefetch pf;   /* TP_PREFETCH_AUTO: the way the timing chose */
    double best;
    double ratio[REPS]; /* the read's time over the row's, round by round */
} row;

static tp_prefetch chosen; /* the way the digest chose, by timing (calibrate) */

static void run(const row *r, const float *f32, const uint16_t *bf16, size_t bytes)
{
    tp_digest_use_kernel(r->kernel);
    tp_digest_use_prefetch(r->pf == TP_PREFETCH_AUTO ? chosen : r->pf);
    if (r->dt == TP_DT_OTHER)
        xxh_all(f32, bytes);
    else if (r->dt == TP_DT_F32)
        digest_all("torch.float32", TP_DT_F32, f32, bytes);
    else
        digest_all("torch.bfloat16", TP_DT_BF16, bf16, bytes);
    tp_digest_use_kernel(TP_KERNEL_AVX512);
    tp_digest_use_prefetch(chosen);
}

/* calibrate digests pieces of CAL_PIECE bytes of f32 until the digest has
 * chosen its way of prefetching (digest/prefetch.h), as the agent's first
 * large tensors make it choose, and fixes that way for every later row. */
#define CAL_PIECE ((size_t)16 << 20)
static void calibrate(const float *f32, size_t bytes)
{
    size_t at = 0;
    tp_digest_use_prefetch(TP_PREFETCH_AUTO);
    while (tp_digest_prefetch() == TP_PREFETCH_AUTO && bytes >= CAL_PIECE) {
        digest_all("torch.float32", TP_DT_F32, (const char *)f32 + at, CAL_PIECE);
        at = at + 2 * CAL_PIECE <= bytes ? at + CAL_PIECE : 0;
    }
    chosen = tp_digest_prefetch() == TP_PREFETCH_OFF ? TP_PREFETCH_OFF : TP_PREFETCH_ON;
    tp_digest_use_prefetch(chosen);
}

/* ---- in cache, and on every core ---- */

/* median_of sorts v (REPS ratios) and returns its median. */
static double median_of(double *v)
{
    qsort(v, REPS, sizeof(double), by_value);
    return v[REPS / 2];
}

/* in_cache prints the digest's speed over IN_CACHE bytes of f32, hashed
 * bytes / IN_CACHE times, beside mem, the memory read's GB/s. */
static void in_cache(const float *f32, size_t bytes, double mem)
{
    size_t times = bytes / IN_CACHE;
    double best = 1e9, bestr = 1e9;
    for (int rep = 0; rep < REPS; rep++) {
        double t = now_s();
        for (size_t i = 0; i < times; i++) read_all((const uint64_t *)f32, IN_CACHE / 8);
        t = now_s() - t;
        bestr = t < bestr ? t : bestr;
        t = now_s();
        for (size_t i = 0; i < times; i++) digest_all("torch.float32", TP_DT_F32, f32, IN_CACHE);
        t = now_s() - t;
        best = t < best ? t : best;
    }
    printf("  in cache (%zu KiB, again and again): read %.2f GB/s, digest + stats %.2f GB/s:"
           " the kernel's own speed, %.2f of the memory read\n",
           IN_CACHE >> 10, (double)(times * IN_CACHE) / bestr / 1e9,
           (double)(times * IN_CACHE) / best / 1e9, (double)(times * IN_CACHE) / best / 1e9 / mem);
}

typedef struct share {
    const float *p;
    size_t bytes;
    bool digest;
} share;

static void *share_run(void *arg)
{
    const share *s = arg;
    if (s->digest)
        digest_all("torch.float32", TP_DT_F32, s->p, s->bytes);
    else
        read_all((const uint64_t *)s->p, s->bytes / 8);
    return NULL;
}

/* on_cores runs n threads at once, each over its own share of bytes at f32
 * (whole 64-byte lines), reading or digesting, and returns the time. */
static double on_cores(const float *f32, size_t bytes, int n, bool digest)
{
    pthread_t t[MAX_THREADS];
    share sh[MAX_THREADS];
    size_t part = bytes / (size_t)n / 64 * 64;
    int started = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        sh[i] = (share){(const float *)((const char *)f32 + part * (size_t)i), part, digest};
        if (i == n - 1 || pthread_create(&t[i], NULL, share_run, &sh[i]) != 0)
            share_run(&sh[i]); /* the last share on this thread */
        else
            started++;
    }
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    return now_s() - t0;
}

static void every_core(const float *f32, size_t bytes)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int n = ncpu < 1 ? 1 : ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;
    double ratio[REPS], br = 1e9, bd = 1e9;
    for (int rep = 0; rep < REPS; rep++) {
        double tr = on_cores(f32, bytes, n, false), td = on_cores(f32, bytes, n, true);
        br = tr < br ? tr : br;
        bd = td < bd ? td : bd;
        ratio[rep] = tr / td;
    }
    printf("  on every core (%d threads, each its share): read %.2f GB/s, digest + stats %.2f"
           " GB/s, ratio to read %.2f (rounds ",
           n, (double)bytes / br / 1e9, (double)bytes / bd / 1e9, median_of(ratio));
    printf("%.2f-%.2f)\n", ratio[0], ratio[REPS - 1]);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256, bytes = mib << 20;
    tp_kernel best = tp_digest_use_kernel(TP_KERNEL_AVX512);
    float *f32 = malloc(bytes);
    uint16_t *bf16 = malloc(bytes);
    row rows[6] = {
        {"XXH3-128", best, TP_DT_OTHER, TP_PREFETCH_AUTO, 1e9, {0}},
        {"digest + stats", best, TP_DT_F32, TP_PREFETCH_AUTO, 1e9, {0}},
        {"  bfloat16", best, TP_DT_BF16, TP_PREFETCH_AUTO, 1e9, {0}},
        {"  AVX2 kernel", TP_KERNEL_AVX2, TP_DT_F32, TP_PREFETCH_AUTO, 1e9, {0}},
        {"  prefetch on", best, TP_DT_F32, TP_PREFETCH_ON, 1e9, {0}},
        {"  prefetch off", best, TP_DT_F32, TP_PREFETCH_OFF, 1e9, {0}},
    };
    int nrows = best == TP_KERNEL_AVX512 ? 6 : 3;
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
    calibrate(f32, bytes);
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
    printf("hash_bench: %zu MiB, %d rounds, kernel %s, prefetch %s (chosen by timing)\n", mib, REPS,
           kernel_names[best],
           best < TP_KERNEL_AVX512     ? "-"
           : chosen == TP_PREFETCH_OFF ? "off"
                                       : "on");
    printf("  memory read      %7.2f GB/s\n", (double)bytes / read / 1e9);
    for (int k = 0; k < nrows; k++) {
        qsort(rows[k].ratio, REPS, sizeof(double), by_value);
        printf("  %-16s %7.2f GB/s  ratio to read %.2f (rounds %.2f-%.2f; best against best"
               " %.2f)\n",
               rows[k].label, (double)bytes / rows[k].best / 1e9, rows[k].ratio[REPS / 2],
               rows[k].ratio[0], rows[k].ratio[REPS - 1], read / rows[k].best);
    }
    in_cache(f32, bytes, (double)bytes / read / 1e9);
    every_core(f32, bytes);
    free(f32);
    free(bf16);
    return sink == 42 ? 1 : 0;
}
