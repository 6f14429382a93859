/* SPDX-License-Identifier: MIT
 * send.h -- the path from a finished batch to the daemon: a bounded queue, a
 * sender thread that owns the nng push socket, and a spool file for when the
 * daemon cannot be reached.
 *
 * The training thread only enqueues.  The sender thread dials lazily; when a
 * send times out (NNG_OPT_SENDTIMEO) it switches to the spool file for the
 * rest of the process, so a missing daemon costs the training one timeout on
 * a thread it does not wait for.  Batches that can go nowhere are counted as
 * dropped (their events are reported in bye and make any verdict an ERROR).
 * A forked child never touches nng: after fork every call is a no-op. */
#ifndef TP_AGENT_SEND_H
#define TP_AGENT_SEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tpa_send_submit queues one batch (malloc'ed; ownership passes) holding
 * nevents events.  Starts the sender thread on first use.  When the queue is
 * full it waits up to two seconds for room, then drops the batch. */
void tpa_send_submit(uint8_t *data, size_t len, uint32_t nevents);
/* tpa_send_drain waits until every queued batch is sent or spooled, or
 * timeout_ms passed.  Returns 0 when drained. */
int tpa_send_drain(int timeout_ms);
/* tpa_send_confirm asks the daemon's control socket until it has stored every
 * event up to last_seq from this process, or timeout_ms passed.  Returns 0
 * when confirmed; immediately 0 when everything went to the spool. */
int tpa_send_confirm(uint64_t last_seq, int timeout_ms);
/* tpa_send_stop ends the sender thread after a drain. */
void tpa_send_stop(void);
uint64_t tpa_send_dropped(void);
bool tpa_send_spooled(void);
/* tpa_send_atfork_child forgets the parent's thread, queue and socket. */
void tpa_send_atfork_child(void);

#endif
