/* SPDX-License-Identifier: MIT
 * leafdict.h -- the leaf definitions of a store: the parts of a leaf that
 * stay the same from step to step, each stored once (the leafdefs table)
 * and named by its id in the packed bodies of events (pack.h).
 *
 * A definition is three things: head, the leaf's MessagePack bytes up to
 * the values that change (its array header, kind, path and, for a tensor,
 * dtype and shape); nvar, how many values follow that change from event to
 * event (a tensor's digest and statistics, a value, an opaque digest and
 * its count); tail, the bytes after them (a tensor's device, blob flag and
 * digest kind).  A leaf is head, its nvar values, tail, byte for byte.
 *
 * One dictionary per store connection, in memory, filled from the table as
 * ids are read and as new definitions are interned.  A definition interned
 * inside a transaction is written to the table in it; if that transaction
 * rolls back (SQLite's rollback hook, whatever the cause) or the savepoint
 * it was interned under is undone (tpd_leafdict_undo), the dictionary
 * forgets it, so that no later event names an id the table does not hold.
 * Two writers may store the same definition under two ids: both are
 * right, a reader needs only that every id it meets is in the table.
 * One thread at a time, the store's. */
#ifndef TP_DAEMON_STORE_LEAFDICT_H
#define TP_DAEMON_STORE_LEAFDICT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

#define TPD_LEAF_NVAR_MAX 8 /* values one definition leaves to the event */

typedef struct tpd_leafdef {
    unsigned nvar;
    const uint8_t *head;
    size_t head_len;
    const uint8_t *tail;
    size_t tail_len;
} tpd_leafdef;

typedef struct tpd_leafdict tpd_leafdict; /* opaque */

/* tpd_leafdict_open makes an empty dictionary for db and registers its
 * rollback hook there (db must have no other).  On success *dp owns it.
 * Errors: TP_ENOMEM. */
tp_err tpd_leafdict_open(tpd_leafdict **dp, sqlite3 *db);

/* tpd_leafdict_close unregisters the hook and frees d.  NULL is a no-op. */
void tpd_leafdict_close(tpd_leafdict *d);

/* tpd_leafdict_intern is the id of definition def, written to the leafdefs
 * table when this dictionary does not know it yet.  Errors: TP_EINVAL (nvar
 * above TPD_LEAF_NVAR_MAX), TP_ENOMEM, TP_EDB and the like (SQLite's). */
tp_err tpd_leafdict_intern(tpd_leafdict *d, const tpd_leafdef *def, int64_t *id);

/* tpd_leafdict_get points *def at definition id, read from the table the
 * first time; the bytes are d's and stay valid until d forgets id (a
 * rollback) or is closed.  Errors: TP_ECORRUPT (no such id, or a malformed
 * row), TP_ENOMEM, TP_EDB. */
tp_err tpd_leafdict_get(tpd_leafdict *d, int64_t id, tpd_leafdef *def);

/* tpd_leafdict_committed keeps the definitions interned in the
 * transaction just committed: the store's commit and begin call it, and a
 * writer's savepoint released outside a transaction.  Were a rollback to
 * drop definitions already committed (a transaction that ended another
 * way), they would only be read from the table again, or stored twice if
 * interned again: never missing. */
void tpd_leafdict_committed(tpd_leafdict *d);

/* tpd_leafdict_mark is the point tpd_leafdict_undo goes back to: call it
 * where a savepoint opens. */
size_t tpd_leafdict_mark(tpd_leafdict *d);

/* tpd_leafdict_undo forgets the definitions interned since mark: call it
 * where the savepoint is rolled back. */
void tpd_leafdict_undo(tpd_leafdict *d, size_t mark);

#endif
