/* SPDX-License-Identifier: MIT
 * async.h -- hashing snapshots while training goes on.
 *
 * A snapshot taken at the first backward of a step, or the gradients taken
 * at an optimizer step, are encoded at once except for the digests and
 * statistics of their large tensors: those leaves get fixed-width
 * placeholders, and a job holding references to the tensors goes to a
 * hashing thread.  The backward pass (or the optimizer step) runs meanwhile
 * on the other cores: it reads what is being hashed but does not write it.
 * Before anything can write those tensors (the next optimizer step, a
 * load_state_dict, a save, zero_grad, the next backward, exit) the glue calls
 * tpa_async_wait, which waits for the jobs, patches the digests in and
 * commits the events in submission order.  TRAINPARITY_ASYNC=0 turns this
 * off: every tensor is then hashed where it is met. */
#ifndef TP_AGENT_ASYNC_H
#define TP_AGENT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/digest.h"
#include "agent/pyapi.h"
#include "proto/event.h"

typedef struct tpa_deferred {
    const void *data;
    size_t nbytes;
    tpa_dtype dt;
    char dtype[40];
    int64_t shape[TP_MAX_DIMS];
    int ndim;
    size_t at_digest, at_sum, at_l2, at_maxabs, at_nonfinite; /* value offsets in body */
    PyObject *keep; /* keeps the tensor's memory alive; released with the GIL */
} tpa_deferred;

typedef struct tpa_job tpa_job; /* opaque */

/* tpa_async_enabled says whether deferred hashing is on (config, not forked). */
bool tpa_async_enabled(void);
/* tpa_job_create starts a job for one event of kind k at step.  NULL when
 * out of memory (then hash synchronously). */
tpa_job *tpa_job_create(tp_kind k, int64_t step);
/* tpa_job_add takes one deferred tensor; its keep reference passes to the job. */
int tpa_job_add(tpa_job *j, const tpa_deferred *d);
/* tpa_job_count is the number of deferred tensors in j. */
size_t tpa_job_count(const tpa_job *j);
/* tpa_job_gnorm asks for the gradient norm to be patched at offset at of the
 * body (a float64 placeholder), from sync_sq (the sum of squared norms of the
 * leaves hashed at once) plus the deferred ones. */
void tpa_job_gnorm(tpa_job *j, size_t at, double sync_sq);
/* tpa_job_submit hands j and its finished body (ownership passes) to the
 * hashing thread.  GIL held. */
void tpa_job_submit(tpa_job *j, tp_buf *body);
/* tpa_job_discard drops a job that will not be submitted.  GIL held. */
void tpa_job_discard(tpa_job *j);
/* tpa_async_wait waits for every submitted job, commits their events in
 * order and releases their tensors.  Called with the GIL held (released
 * while waiting); with gil false (exit without Python) it commits only. */
void tpa_async_wait(bool gil);
/* tpa_async_atfork_child forgets the parent's thread and jobs. */
void tpa_async_atfork_child(void);

/* Encoding helpers for placeholders: each appends a fixed-width value and
 * returns its offset. */
size_t tpa_put_f64_fixed(tp_buf *b, double v);
size_t tpa_put_u64_fixed(tp_buf *b, uint64_t v);

#endif
