/* SPDX-License-Identifier: MIT
 * send.h -- the path from a finished batch to the daemon: a bounded queue, a
 * sender thread that owns the nng push socket and a req socket to the
 * daemon's control URL, and a spool file for what the daemon cannot take.
 *
 * The training thread only enqueues.  The sender thread dials lazily and
 * keeps every batch it sent until the daemon's `seen` says the batch is
 * stored and committed; what a killed or restarted daemon did not store is
 * sent again, and what is still unacknowledged when memory is short or at
 * bye goes to the spool file, which the tool ingests after the command (the
 * daemon skips duplicate events).  When a send times out (NNG_OPT_SENDTIMEO)
 * it switches to the spool file for the rest of the process, so a missing
 * daemon costs the training one timeout on a thread it does not wait for.
 * Batches that can go nowhere are counted as dropped (their events are
 * reported in bye and make any verdict an ERROR).  A forked child never
 * touches nng: after fork every call is a no-op. */
#ifndef TP_AGENT_SEND_H
#define TP_AGENT_SEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tpa_send_submit queues one batch (malloc'ed; ownership passes) holding
 * nevents events with the seqs first_seq.. first_seq + nevents - 1, whose
 * events array (an array32, proto/event.h) begins at events_at; batches
 * queued behind each other with the same envelope may travel as one message
 * (0: this one never does).  Batches are submitted in seq order; a seq
 * skipped or dropped is never waited for.
 * Starts the sender thread on first use.  When the queue is full it waits up
 * to two seconds for room, then drops the batch. */
void tpa_send_submit(uint8_t *data, size_t len, uint32_t nevents, uint64_t first_seq,
                     size_t events_at);
/* tpa_send_drain waits until every queued batch is sent or spooled, or
 * timeout_ms passed.  Returns 0 when drained. */
int tpa_send_drain(int timeout_ms);
/* tpa_send_confirm waits until the daemon has acknowledged every batch sent
 * (the sender thread asks `seen` and sends again what it lacks) or the batch
 * is in the spool.  When the daemon has been unreachable for a send timeout,
 * or two seconds before timeout_ms, what is still unacknowledged or queued
 * goes to the spool instead; it returns within timeout_ms.  Returns 0 when
 * every batch is acknowledged or spooled; -1 when some went without an
 * acknowledgement (no control URL, after a dropped batch, no spool) or were
 * not spooled in time. */
int tpa_send_confirm(int timeout_ms);
/* tpa_send_stop ends the sender thread after a drain; what it still retains
 * goes to the spool. */
void tpa_send_stop(void);
uint64_t tpa_send_dropped(void);
/* tpa_send_spooled: whether any batch went, or everything now goes, to the spool. */
bool tpa_send_spooled(void);
/* tpa_send_on_end registers fn, which ends the process when the daemon says
 * that its execution is over (`seen`'s end: a process of it was
 * interrupted).  Only while TRAINPARITY_INTERRUPT_AT is set does the sender
 * ask for it (at least every 500 ms) and act on it: once, on a thread of
 * its own, which holds no lock of the agent's, no GIL, and takes no signal
 * of the process's.  fn may wait for the sender (tpa_send_confirm).  NULL
 * unregisters.  Before the sender thread starts, or at any time. */
void tpa_send_on_end(void (*fn)(void));
/* tpa_send_atfork_child forgets the parent's thread, queue and socket. */
void tpa_send_atfork_child(void);

#endif
