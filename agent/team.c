/* SPDX-License-Identifier: MIT
 * team.c -- the OpenMP team, borrowed through GOMP_parallel (see team.h).
 * The entry points are looked up until found: the runtime arrives with
 * torch, after the agent booted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
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

typedef struct each_ctx {
    void (*fn)(void *, size_t);
    void *arg;
    size_t n;
    atomic_size_t next;
} each_ctx;

static void each_share(void *arg)
{
    each_ctx *c = arg;
    size_t i;
    while ((i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed)) < c->n)
        c->fn(c->arg, i);
}

void tpa_team_each(void (*fn)(void *, size_t), void *arg, size_t n, int nthreads)
{
    each_ctx c = {fn, arg, n, 0};
    atomic_init(&c.next, 0);
    tpa_team_run(each_share, &c, nthreads);
}
