/* SPDX-License-Identifier: MIT
 * leafmemo.h -- the loader's memory of a leaf list (a step's snapshot
 * leaves, its gradients): for each place in the list, the bytes of the
 * leaf last read there that stay the same from step to step (its head:
 * kind, path, and a tensor's dtype and shape; its tail: a tensor's device,
 * blob flag and digest kind), and the item made of them.  A leaf whose
 * head and tail are those bytes again is read as its changing values
 * alone (tp_leaf_read_vars), onto a copy of that item: its path, dtype and
 * shape are not parsed and interned again.  The item is the one a full
 * read makes (tpd_leaves_add): the same bytes give the same parse. */
#ifndef TP_DAEMON_OBS_LEAFMEMO_H
#define TP_DAEMON_OBS_LEAFMEMO_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

typedef struct tpd_leafmemo_ent {
    uint8_t *bytes; /* head, then tail (malloc'ed); NULL: nothing read here yet */
    uint32_t head_len, tail_len;
    tpd_item it; /* what the leaf gave, its values aside */
} tpd_leafmemo_ent;

typedef struct tpd_leafmemo {
    tpd_leafmemo_ent *v;
    size_t n;
} tpd_leafmemo;

/* tpd_leafmemo_free releases what m holds and empties it. */
void tpd_leafmemo_free(tpd_leafmemo *m);

/* What tpd_leaves_add_memo reads past without adding: the induced
 * components (tpd_induced), the schedulers' bookkeeping (tpd_bookkeeping). */
enum { TPD_LEAVE_INDUCED = 1, TPD_LEAVE_BOOKKEEPING = 2 };

/* tpd_leaves_add_memo is tpd_leaves_add (obs.h), remembering in m the
 * leaves it reads, by their place in the list, and reading a leaf whose
 * head and tail are the remembered bytes as its values alone.  NULL m:
 * every leaf read whole (tpd_leaves_add is this).  leave: TPD_LEAVE_*
 * flags, what is read past and not added.  Errors: tpd_leaves_add's. */
tp_err tpd_leaves_add_memo(tpd_arena *a, tpd_items *l, tp_mpr *r, int64_t step, uint64_t ord0,
                           tpd_leafmemo *m, unsigned leave);

#endif
