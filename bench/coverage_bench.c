/* SPDX-License-Identifier: MIT
 * coverage_bench.c -- the coverage audit of 10 million observed IDs (by
 * default): a shuffled universe dealt to 8 ranks as a DistributedSampler
 * deals it, in batches of 256, audited under exactly_once (bitmaps over a
 * known universe), expected_padding, and no_cross_rank_overlap over an
 * unknown universe (a hash table).  Reports milliseconds per million IDs
 * and the ratio to one plain pass that only reads every ID.
 *
 *   coverage_bench [MILLIONS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/checks/coverage/audit.h"

#define RANKS 8
#define BATCH 256
#define REPS  3

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile int64_t sink;

/* best runs the audit REPS times and returns the fastest, in seconds. */
static double best(tpd_cov_policy p, const tpd_cov_universe *u, int64_t padding,
                   const tpd_cov_epoch *e, const char **path)
{
    tpd_cov_auditor *a = NULL;
    tpd_cov_finding f;
    tpd_cov_counts c;
    double t = 1e9;
    if (tpd_cov_auditor_create(&a, p, u, padding) != TP_OK) {
        fprintf(stderr, "coverage_bench: cannot create the auditor\n");
        exit(1);
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = now(), dt;
        if (tpd_cov_audit(a, e, &f, &c) != TP_OK) {
            fprintf(stderr, "coverage_bench: out of memory\n");
            exit(1);
        }
        dt = now() - t0;
        if (dt < t) t = dt;
        sink += c.observations;
    }
    *path = f.path;
    tpd_cov_auditor_destroy(a);
    return t;
}

int main(int argc, char **argv)
{
    int64_t millions = argc > 1 ? atoll(argv[1]) : 10;
    int64_t n = millions * 1000000, per = (n + RANKS - 1) / RANKS, total = per * RANKS;
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    int64_t *ids = malloc(sizeof *ids * (size_t)total);
    size_t nb = (size_t)RANKS * (size_t)((per + BATCH - 1) / BATCH);
    tpd_batch *b = calloc(nb, sizeof *b);
    const tpd_batch **v = malloc(sizeof *v * nb);
    size_t first[RANKS + 1], k = 0;
    tpd_cov_universe known = {true, n, NULL, 0}, unknown = {false, 0, NULL, 0};
    tpd_cov_epoch e;
    const char *path;
    double base = 1e9, t;
    uint64_t x = 88172645463325252ull;
    if (millions < 1 || !perm || !ids || !b || !v) {
        fprintf(stderr, "usage: coverage_bench [MILLIONS >= 1] (or out of memory)\n");
        return 1;
    }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
        int64_t j, tmp;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        j = (int64_t)(x % (uint64_t)(i + 1));
        tmp = perm[i], perm[i] = perm[j], perm[j] = tmp;
    }
    /* rank r gets the padded list's items r, r + RANKS, ... */
    for (int r = 0; r < RANKS; r++) {
        int64_t *mine = ids + (int64_t)r * per;
        first[r] = k;
        for (int64_t i = 0; i < per; i++) mine[i] = perm[(i * RANKS + r) % n];
        for (int64_t i = 0; i < per; i += BATCH) {
            b[k].rank = r;
            b[k].pos = (uint32_t)(i / BATCH);
            b[k].ids = mine + i;
            b[k].n = (uint32_t)(per - i < BATCH ? per - i : BATCH);
            b[k].has_ids = true;
            v[k] = &b[k];
            k++;
        }
    }
    first[RANKS] = k;
    e.epoch = 0;
    e.nranks = RANKS;
    e.batches = v;
    e.first = first;
    e.complete = true;

    for (int r = 0; r < REPS; r++) { /* the baseline: read every ID once */
        double t0 = now();
        int64_t s = 0;
        for (size_t i = 0; i < k; i++)
            for (uint32_t j = 0; j < v[i]->n; j++) s += v[i]->ids[j];
        sink += s;
        if (now() - t0 < base) base = now() - t0;
    }
    printf("coverage_bench: %lld observed IDs, %d ranks, batches of %d, universe %lld\n",
           (long long)total, RANKS, BATCH, (long long)n);
    printf("  %-40s %8.2f ms per million IDs\n", "read every ID (baseline)",
           base * 1e3 / ((double)total / 1e6));
    t = best(TPD_COV_EXACTLY_ONCE, &known, 0, &e, &path);
    printf("  %-40s %8.2f ms per million IDs (%.1fx baseline) -> %s\n",
           "exactly_once, known universe", t * 1e3 / ((double)total / 1e6), t / base,
           path ? path : "PASS");
    t = best(TPD_COV_EXPECTED_PADDING, &known, total - n, &e, &path);
    printf("  %-40s %8.2f ms per million IDs (%.1fx baseline) -> %s\n",
           "expected_padding, known universe", t * 1e3 / ((double)total / 1e6), t / base,
           path ? path : "PASS");
    t = best(TPD_COV_NO_CROSS_RANK_OVERLAP, &unknown, 0, &e, &path);
    printf("  %-40s %8.2f ms per million IDs (%.1fx baseline) -> %s\n",
           "no_cross_rank_overlap, unknown universe", t * 1e3 / ((double)total / 1e6), t / base,
           path ? path : "PASS");
    free(perm);
    free(ids);
    free(b);
    free(v);
    return 0;
}
