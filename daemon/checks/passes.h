/* SPDX-License-Identifier: MIT
 * passes.h -- a process's DataLoader passes, and which of them fed the
 * training.
 *
 * A pass is one iteration of a DataLoader: a loader and its epoch, from its
 * first batch event to its last (its end, when the iterator ran out).  It
 * fed the training when a backward lies within it (the resume check's rule
 * for its training stream, daemon/checks/resume/stream.c: an evaluation
 * pass run between training steps, or a sanity check, has none), or when a
 * backward is credited to it: each backward goes to the pass of the last
 * batch event before it.  The credit covers a loader that fetches ahead of
 * what it returns (accelerate's prepared loader takes batch k + 1, or its
 * end, before it returns batch k), whose last backward of an epoch comes
 * after the end, and a pass of one batch, whose only backward does.
 *
 * Loaders are numbered per process in creation order (the agent's
 * DataLoader index); the batch events carry the number. */
#ifndef TP_DAEMON_CHECKS_PASSES_H
#define TP_DAEMON_CHECKS_PASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

typedef struct tpd_pass {
    uint32_t loader, epoch;
    uint64_t first, last; /* seq of its first and last batch event (an end included) */
    size_t last_index;    /* of its last batch event in p->batches */
    uint32_t batches;     /* batches it returned (its end not counted) */
    uint32_t backward;    /* backward calls credited to it */
    bool ended;           /* the iterator ran out (an end event) */
    bool train;           /* it fed the training: a backward within it or credited */
} tpd_pass;

typedef struct tpd_passes {
    tpd_pass *v; /* in order of their first batch event */
    size_t n;
} tpd_passes;

/* tpd_passes_build finds p's passes into *ps (free with tpd_passes_free).
 * On error *ps is empty.  Errors: TP_ENOMEM. */
tp_err tpd_passes_build(const tpd_proc *p, tpd_passes *ps);

/* tpd_passes_free releases what ps holds and empties it; an empty one is a
 * no-op. */
void tpd_passes_free(tpd_passes *ps);

/* tpd_passes_find is the pass of loader and epoch, or NULL. */
const tpd_pass *tpd_passes_find(const tpd_passes *ps, uint32_t loader, uint32_t epoch);

#endif
