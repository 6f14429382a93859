/* SPDX-License-Identifier: MIT
 * team.c -- the OpenMP team, borrowed through GOMP_parallel (see team.h).
 * The entry points are looked up until found: the runtime arrives with
 * torch, after the agent booted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/team.h"

#define MAX_THREADS 64

typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);
typedef int (*omp_max_threads_fn)(void);

static void *gomp_parallel, *omp_max_threads; /* atomic: set once, read by any thread */

static void *lookup(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f == NULL && (f = dlsym(RTLD_DEFAULT, name)) != NULL)
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

int tpa_team_size(void)
{
    void *gp = lookup(&gomp_parallel, "GOMP_parallel"), *mt;
    int n;
    if (tpa_cfg.hash_threads > 0) return gp ? tpa_cfg.hash_threads : 1;
    mt = lookup(&omp_max_threads, "omp_get_max_threads");
    if (gp == NULL || mt == NULL) return 1;
    n = ((omp_max_threads_fn)(uintptr_t)mt)();
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

void tpa_team_run(void (*fn)(void *), void *arg, int nthreads)
{
    void *gp = lookup(&gomp_parallel, "GOMP_parallel");
    if (nthreads > 1 && gp != NULL)
        ((gomp_parallel_fn)(uintptr_t)gp)(fn, arg, (unsigned)nthreads, 0);
    else
        fn(arg);
}
