/* SPDX-License-Identifier: MIT
 * prefetch.h -- whether the one-loop pass (digest.c) asks for memory ahead
 * of its reads, decided by timing: internal to the digest.
 *
 * A software prefetch a few KiB ahead is what kept one thread at the speed
 * of a memory read on a 2-core Xeon (0.96 of a read with it, 0.67 without);
 * on a 2-core AMD Zen 4 the same prefetch held one thread at 0.74-0.78 of a
 * read, where the hardware alone reached 0.86-0.90 (bench/hash_bench.c).
 * The digest's bits are the same either way, so each process times its
 * first CAL_SAMPLES tensors of CAL_MIN_BYTES or more both ways, one of each
 * in turn, prefetches from then on only where that was at least 3% faster
 * (by the median ratio of the pairs' speeds), and
 * times both ways again every RECAL_PASSES such tensors (prefetch.c). */
#ifndef TP_DIGEST_PREFETCH_H
#define TP_DIGEST_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>

/* A one-loop pass about to run: which way, and, when it is timed, the
 * round and slot its time goes to (slot -1: not timed). */
typedef struct tp_pf_run {
    bool prefetch;
    int slot;
    unsigned round;
    size_t bytes;
    double t0;
} tp_pf_run;

/* tp_pf_start says how to run a one-loop pass over nbytes.  Thread-safe. */
tp_pf_run tp_pf_start(size_t nbytes);

/* tp_pf_end records the time of a timed pass; the pass that completes the
 * last slot makes the decision.  Thread-safe. */
void tp_pf_end(const tp_pf_run *r);

#endif
