/* SPDX-License-Identifier: MIT
 * pack.h -- event bodies as the store keeps them: each leaf of a body's
 * leaf lists (a snapshot's leaves, a step's grads, a scheduler's leaves, a
 * checkpoint's manifest) stored as the id of its definition (leafdict.h)
 * and the values that change, instead of its path, dtype, shape and device
 * in every event.
 *
 * A packed body is the byte 0xc1 (which MessagePack never uses), then the
 * body's map with each leaf list replaced by 0xc1, the list's array
 * header, and per leaf its id (a MessagePack unsigned integer) followed by
 * its definition's nvar values; every other key and value is kept as it
 * was.  Unpacking gives back the body the agent sent, byte for byte: the
 * pieces are copies of its bytes, and the writer stores a body packed only
 * after unpacking it again has given back the same bytes.  A body that is
 * not packed (one a version 2 database holds, one without leaves, one
 * whose leaves are not of the three kinds) is stored and read as it came.
 * Nothing from outside can pass for a packed body: a batch's bodies and an
 * export's are checked to be maps of the schema before they are stored. */
#ifndef TP_DAEMON_STORE_PACK_H
#define TP_DAEMON_STORE_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/leafdict.h"
#include "proto/mp.h"
#include "proto/schema.h"
#include "proto/tp_err.h"

#define TPD_PACKED 0xc1 /* the first byte of a packed body */

/* tpd_leaf_split says how a leaf of kind kind ('t', 'v', 'd') splits:
 * *nhead elements of its array (its kind first) that stay the same from
 * step to step, then *nvar that change; the rest (a tensor's device, blob
 * flag and digest kind) stay the same too.  False for another kind. */
bool tpd_leaf_split(char kind, unsigned *nhead, unsigned *nvar);

/* tpd_body_packed tells whether the n bytes at p are a packed body. */
bool tpd_body_packed(const uint8_t *p, size_t n);

/* tpd_body_pack writes the packed form of body (n bytes, validated, of
 * kind k) to out, emptied first, interning its leaves' definitions in d.
 * *packed is false, and out is to be ignored, when the body has nothing
 * to pack or a leaf this code does not split.  Errors: TP_ENOMEM, and
 * tpd_leafdict_intern's. */
tp_err tpd_body_pack(tpd_leafdict *d, tp_kind k, const uint8_t *body, size_t n, tp_buf *out,
                     bool *packed);

/* tpd_body_unpack writes the body packed in the n bytes at p to out,
 * emptied first.  Errors: TP_ECORRUPT (not a packed body, or one naming a
 * definition the store does not hold), TP_ENOMEM, TP_EDB. */
tp_err tpd_body_unpack(tpd_leafdict *d, const uint8_t *p, size_t n, tp_buf *out);

/* tpd_body_stored points *out and *outlen at the form of body (n bytes,
 * validated, of kind k) to store: its packed form in packed when that is
 * smaller and unpacking it (into back) gives body again byte for byte,
 * else body itself.  Both buffers are the caller's scratch.  Errors:
 * tpd_body_pack's (then nothing is to be stored). */
tp_err tpd_body_stored(tpd_leafdict *d, tp_kind k, const uint8_t *body, size_t n, tp_buf *packed,
                       tp_buf *back, const uint8_t **out, size_t *outlen);

/* tpd_body_read points *body and *len at the stored body (p, n) as the
 * agent sent it: p itself when it is not packed, else its unpacked form in
 * scratch, valid until scratch's next use.  Errors: tpd_body_unpack's. */
tp_err tpd_body_read(tpd_leafdict *d, const uint8_t *p, size_t n, tp_buf *scratch,
                     const uint8_t **body, size_t *len);

#endif
