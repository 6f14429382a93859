/* SPDX-License-Identifier: MIT
 * emit.h -- events into batches: sequence numbers, the current step, and one
 * batch per optimizer step (one nng message, or several batches in one when
 * they queue up in agent/send.c).
 *
 * A caller builds an event body in its own tp_buf, without any lock (it may
 * release the GIL while hashing), then commits it: the commit takes a short
 * mutex, assigns the next sequence number and appends the event to the open
 * batch.  Sequence numbers are contiguous per process: an event that fails
 * while being built is discarded before it gets one.  In a forked child and
 * after shutdown every commit is a no-op. */
#ifndef TP_AGENT_EMIT_H
#define TP_AGENT_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/event.h"

#define TPA_NO_SEQ UINT64_MAX

/* tpa_emit_init prepares the batch header (pid, run, exec, rank). */
void tpa_emit_init(int64_t rank);
/* tpa_emit_commit appends body (a complete map) as an event of kind k at the
 * current step.  Returns its sequence number, or TPA_NO_SEQ when disabled. */
uint64_t tpa_emit_commit(tp_kind k, const tp_buf *body);
/* tpa_emit_flush closes the open batch and hands it to the sender. */
void tpa_emit_flush(void);
void tpa_emit_set_step(int64_t step);
int64_t tpa_emit_step(void);
void tpa_emit_set_rank(int64_t rank);
/* tpa_emit_count is the number of events committed so far. */
uint64_t tpa_emit_count(void);
/* tpa_emit_dropped counts events lost before the sender (allocation failure). */
uint64_t tpa_emit_dropped(void);
/* tpa_emit_disable makes every later commit a no-op (fork child, shutdown). */
void tpa_emit_disable(void);
bool tpa_emit_enabled(void);
/* tpa_emit_atfork_child resets the lock in a forked child and disables. */
void tpa_emit_atfork_child(void);

#endif
