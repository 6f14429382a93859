/* SPDX-License-Identifier: MIT
 * job.h -- hashing an event's large tensors all at once, on every thread.
 *
 * A snapshot or a step's gradients is encoded in one walk (flatten.h),
 * except for the digests and statistics of its large tensors: those leaves
 * get fixed-width placeholders and their tensors join a job.  Before the
 * event is committed, tpa_job_run hashes them on the process's compute
 * threads (team.h), largest first, with the GIL released, and patches the
 * results in.  The training thread is inside the hook all the while, so
 * nothing the training does can write a tensor while it is being hashed. */
#ifndef TP_AGENT_JOB_H
#define TP_AGENT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/pyapi.h"
#include "digest/digest.h"
#include "proto/event.h"
#include "proto/mp.h"

typedef struct tpa_deferred {
    const void *data;
    size_t nbytes;
    tp_dtype dt;
    char dtype[40];
    int64_t shape[TP_MAX_DIMS];
    int ndim;
    size_t at_digest, at_sum, at_l2, at_maxabs, at_nonfinite; /* value offsets in body */
    int slot;                      /* >= 0: a device digest, that slot of the collect (devjob.h) */
    size_t at_kind;                /* a device leaf's digest kind, patched when it falls back */
    PyObject *keep;                /* keeps the tensor's memory alive until the job is destroyed */
    uint8_t digest[TP_DIGEST_LEN]; /* results, written by tpa_job_run */
    tp_stats st;
    bool done; /* hashed already (a copy, hashed and dropped when met) */
} tpa_deferred;

typedef struct tpa_job tpa_job; /* opaque */

/* tpa_job_create makes an empty job; NULL when out of memory (then every
 * tensor is hashed where it is met). */
tpa_job *tpa_job_create(void);
/* tpa_job_add takes one deferred tensor; its keep reference passes to the
 * job, also when it fails (-1: out of memory). */
int tpa_job_add(tpa_job *j, const tpa_deferred *d);
/* tpa_job_count is the number of deferred tensors in j. */
size_t tpa_job_count(const tpa_job *j);
/* tpa_job_gnorm asks for the gradient norm to be patched at offset at of the
 * body (a float64 placeholder), from sync_sq (the sum of squared norms of the
 * leaves hashed at once) plus the deferred ones, added in the order they
 * were deferred (as tensorleaf.c adds them when nothing is deferred). */
void tpa_job_gnorm(tpa_job *j, size_t at, double sync_sq);
/* tpa_job_run hashes every tensor of j and patches the placeholders in body.
 * Device digests are collected first, in one wait; one that cannot be is
 * replaced by the digest of a host copy, and its leaf's kind by "xxh3"
 * (or "none", with no digest, when not even a copy can be made).
 * GIL held on entry and on return (released while hashing). */
void tpa_job_run(tpa_job *j, tp_buf *body);
/* tpa_job_destroy releases j and its tensors.  NULL is a no-op.  GIL held. */
void tpa_job_destroy(tpa_job *j);

/* Encoding helpers for placeholders: each appends a fixed-width value and
 * returns its offset. */
size_t tpa_put_f64_fixed(tp_buf *b, double v);
size_t tpa_put_u64_fixed(tp_buf *b, uint64_t v);

#endif
