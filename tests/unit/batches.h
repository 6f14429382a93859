/* SPDX-License-Identifier: MIT
 * batches.h -- builds valid wire batches for tests and benchmarks: every
 * event kind with every body field, through the proto encoder. */
#ifndef TP_TESTS_BATCHES_H
#define TP_TESTS_BATCHES_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/event.h"

typedef struct tb {
    tp_buf buf;
    size_t off; /* the events array header */
    uint32_t n; /* events written */
} tb;

/* tb_begin starts a batch (tok may be NULL); tb_end patches the count. */
void tb_begin(tb *t, int64_t run, int64_t exec, int64_t pid, int64_t rank, const char *tok);
/* tb_begin_key is tb_begin with the execution's key (may be NULL), the
 * envelope written key by key as proto/SCHEMA.md shows it. */
void tb_begin_key(tb *t, int64_t run, int64_t exec, int64_t pid, int64_t rank, const char *tok,
                  const char *key);
void tb_end(tb *t);
void tb_free(tb *t);

/* tb_digest fills d with a digest derived from x. */
void tb_digest(uint8_t d[16], uint64_t x);

void tb_hello(tb *t, uint64_t seq, int64_t rank);
void tb_bye(tb *t, uint64_t seq, uint64_t sent, uint64_t dropped);
/* tb_snapshot writes nleaves tensor leaves plus one value leaf of each type
 * and one digest leaf. */
void tb_snapshot(tb *t, uint64_t seq, int64_t step, int nleaves);
/* tb_snapshot_why is tb_snapshot taken for why ("backward", "save",
 * "final"), its tensors under prefix ("model", "optimizer.state"). */
void tb_snapshot_why(tb *t, uint64_t seq, int64_t step, int nleaves, const char *why,
                     const char *prefix);
void tb_backward(tb *t, uint64_t seq, int64_t step, double loss, uint64_t count);
/* tb_backward_scaled is tb_backward with "scaled" (1 true, 0 false, -1 left
 * out) and mean_over. */
void tb_backward_scaled(tb *t, uint64_t seq, int64_t step, double loss, uint64_t count, int scaled);
/* tb_step writes a pre (with ngrads grads, gnorm, lrs {lr, lr/10}) or a
 * post (unorm) step event. */
void tb_step(tb *t, uint64_t seq, int64_t step, bool pre, int ngrads, double norm, double lr);
void tb_sched(tb *t, uint64_t seq, int64_t step);
void tb_saveload(tb *t, uint64_t seq, int64_t step, tp_kind k);
void tb_restore(tb *t, uint64_t seq, int64_t step);
void tb_batchev(tb *t, uint64_t seq, int64_t step);
void tb_amp(tb *t, uint64_t seq, int64_t step);
void tb_clip(tb *t, uint64_t seq, int64_t step);
/* tb_blob writes a blob event of n bytes (value fill) under digest d. */
void tb_blob(tb *t, uint64_t seq, int64_t step, const uint8_t d[16], size_t n, uint8_t fill);
void tb_error(tb *t, uint64_t seq, int64_t step);
/* tb_cover writes optimizer 1's (Adam) cover event: tensors
 * "model.0.weight" (id 101, group 0, 16x8) and "model.0.bias" (id 102,
 * group 1, 16); graded "model.0.weight" (101, 16x8) and "<Linear>.weight"
 * (201, 4x16), a parameter in no optimizer. */
void tb_cover(tb *t, uint64_t seq, int64_t step);
/* tb_zero_grad writes optimizer 0's zero_grad(set_to_none=True). */
void tb_zero_grad(tb *t, uint64_t seq, int64_t step);

/* tb_all writes one event of every kind, seqs from seq on; returns the next
 * seq. */
uint64_t tb_all(tb *t, uint64_t seq);

#endif
