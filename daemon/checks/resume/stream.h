/* SPDX-License-Identifier: MIT
 * stream.h -- the training data stream: what the training consumed, in order.
 *
 * A process's train stream is the concatenation, in fetch order, of the
 * sample ids of the batches its training passes returned.  A pass is one
 * iteration of a DataLoader (a loader and its epoch); it is a training pass
 * when a backward lies between its first batch and its last batch or end
 * (an evaluation pass run between training steps, or a sanity check, has
 * none).  Two executions' streams are compared by position, so which
 * DataLoader object produced a batch (a resumed run builds a new one to skip
 * the batches already trained) and how far ahead it was fetched (a loader
 * that prefetches one batch) do not matter: only the samples and their
 * order do. */
#ifndef TP_DAEMON_CHECKS_RESUME_STREAM_H
#define TP_DAEMON_CHECKS_RESUME_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/checks/lockstep.h"
#include "daemon/obs/obs.h"

/* One batch of the stream. */
typedef struct tpd_sbatch {
    uint64_t off; /* the position of its first id in the stream */
    uint32_t n;   /* ids */
    int64_t step; /* the step during which it was fetched */
    uint64_t seq; /* its event */
    const int64_t *ids;
} tpd_sbatch;

typedef struct tpd_stream {
    tpd_sbatch *v;
    size_t n;
    uint64_t len; /* ids in all */
} tpd_stream;

/* tpd_stream_build builds p's train stream into *s (free with
 * tpd_stream_free; the ids stay p's).  Errors: TP_ENOMEM. */
tp_err tpd_stream_build(const tpd_proc *p, tpd_stream *s);
void tpd_stream_free(tpd_stream *s);

/* tpd_stream_before counts the ids of s that p fetched before its first
 * backward of step (all of them when p has none at that step). */
uint64_t tpd_stream_before(const tpd_stream *s, const tpd_proc *p, int64_t step);

/* The first position at which two streams differ. */
typedef struct tpd_stream_div {
    tpd_div d;             /* path "data.ids", group data; d.a and d.b point below */
    uint64_t pos_a, pos_b; /* its position in each stream (sample number, from 0) */
    uint64_t compared;     /* samples compared equal before it (all, when none) */
    tpd_item ia, ib;       /* a's and b's ids at the same positions: b's batch */
    int64_t *own;          /* storage of ia's ids when they span batches */
} tpd_stream_div;

/* tpd_stream_compare compares the train streams of a and b, aligned at their
 * first backward of steps a0 and b0: the ids a fetched before it, less those
 * b fetched before its own, is where b's stream starts in a's (the samples a
 * consumed before a0 when both fetch equally far ahead; 0 when b skips by
 * iterating and discarding).  A stream that ends first differs at the first
 * position only the other has.  Steps are reported as the step of the batch
 * fetch, at least a0 and b0.  Free *out with tpd_stream_div_free.
 * Errors: TP_ENOMEM. */
tp_err tpd_stream_compare(const tpd_proc *a, int64_t a0, const tpd_proc *b, int64_t b0,
                          tpd_stream_div *out);
void tpd_stream_div_free(tpd_stream_div *d);

/* tpd_stream_merge merges sd, the first divergence of two training data
 * streams, into cmp, the lockstep comparison of the same two runs: the
 * earlier in a's steps is the first, the data on a tie (data comes first
 * within a step).  An RNG divergence before it is the first, as the RNG
 * rule has it (tpd_compare walks on to the end when it finds no other
 * divergence, so its first_rng is then the earliest).  cmp then points into
 * sd. */
void tpd_stream_merge(tpd_cmp_result *cmp, const tpd_stream_div *sd);

#endif
