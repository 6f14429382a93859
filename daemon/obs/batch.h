/* SPDX-License-Identifier: MIT
 * batch.h -- string sample IDs of a filed DataLoader batch (batch.c).
 *
 * A batch's IDs are integers or strings (proto/SCHEMA.md).  Every reader of
 * tpd_batch.ids (the coverage audit, the resume check's data stream) works
 * on int64, so a string ID is filed there as its key, XXH3-64 of its bytes:
 * equal strings get equal keys in every process and execution of a run,
 * with no table shared between them, and integer IDs are filed as before.
 * The strings themselves stay with the batch for the checks that name them
 * (coverage interns them exactly, so a collision of keys never merges two
 * IDs there; the resume check compares keys). */
#ifndef TP_DAEMON_OBS_BATCH_H
#define TP_DAEMON_OBS_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

/* tpd_batch_id_key is the key a string ID of n bytes is filed as. */
int64_t tpd_batch_id_key(const char *s, size_t n);

/* tpd_batch_set_strs makes the n strings s (len[i] bytes each; len NULL:
 * NUL-terminated) b's IDs: keys in b->ids, copies of the strings in a.
 * Errors: TP_ENOMEM (b untouched). */
tp_err tpd_batch_set_strs(tpd_arena *a, tpd_batch *b, const char *const *s, const uint32_t *len,
                          uint32_t n);

/* tpd_batch_strs is b's IDs as strings (b->n of them, NUL-terminated, owned
 * by the run's arena), or NULL when b's IDs are integers or absent. */
const char *const *tpd_batch_strs(const tpd_batch *b);

#endif
