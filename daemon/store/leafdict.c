/* SPDX-License-Identifier: MIT
 * leafdict.c -- the leaf definitions of a store (see leafdict.h).
 *
 * Every definition the dictionary knows is one allocation (its head and
 * tail bytes follow the struct) in the list all[], found by content for
 * interning and by id for reading through two open-addressing tables of
 * indexes into all[], rebuilt whenever they grow or definitions are
 * forgotten.  pending[] holds the definitions interned since the
 * transaction began; they are kept when the transaction's commit says so
 * (tpd_leafdict_committed), and dropped by the rollback hook or by
 * tpd_leafdict_undo. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/store/leafdict.h"
#include "daemon/store/store.h"

typedef struct ent {
    int64_t id;
    uint64_t hash; /* of nvar, head and tail */
    unsigned nvar;
    size_t head_len, tail_len;
    uint8_t bytes[]; /* head, then tail */
} ent;

struct tpd_leafdict {
    sqlite3 *db;
    sqlite3_stmt *ins, *sel;
    ent **all;
    size_t n, cap;
    size_t *by_content, *by_id; /* slots: index into all + 1, 0 empty */
    size_t nslots;              /* a power of two, at least 2 n */
    ent **pending;
    size_t npending, cappending;
};

static uint64_t def_hash(const tpd_leafdef *def)
{
    uint64_t h = XXH3_64bits_withSeed(def->head, def->head_len, def->nvar);
    return XXH3_64bits_withSeed(def->tail, def->tail_len, h);
}

static uint64_t id_hash(int64_t id)
{
    return (uint64_t)id * 0x9e3779b97f4a7c15ull;
}

static void slot_put(size_t *slots, size_t nslots, uint64_t h, size_t ix)
{
    size_t i = (size_t)h & (nslots - 1);
    while (slots[i]) i = (i + 1) & (nslots - 1);
    slots[i] = ix + 1;
}

/* rebuild makes tables of nslots slots for all[]. */
static tp_err rebuild(tpd_leafdict *d, size_t nslots)
{
    size_t *c = calloc(nslots, sizeof *c), *b = calloc(nslots, sizeof *b);
    if (c == NULL || b == NULL) {
        free(c);
        free(b);
        return TP_ENOMEM;
    }
    for (size_t i = 0; i < d->n; i++) {
        slot_put(c, nslots, d->all[i]->hash, i);
        slot_put(b, nslots, id_hash(d->all[i]->id), i);
    }
    free(d->by_content);
    free(d->by_id);
    d->by_content = c;
    d->by_id = b;
    d->nslots = nslots;
    return TP_OK;
}

/* add puts e into all[] and the tables; e is d's on success. */
static tp_err add(tpd_leafdict *d, ent *e)
{
    tp_err err;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        ent **a = realloc(d->all, cap * sizeof *a);
        if (a == NULL) return TP_ENOMEM;
        d->all = a;
        d->cap = cap;
    }
    if (2 * (d->n + 1) > d->nslots) {
        size_t nslots = d->nslots ? 2 * d->nslots : 256;
        if ((err = rebuild(d, nslots)) != TP_OK) return err;
    }
    d->all[d->n] = e;
    slot_put(d->by_content, d->nslots, e->hash, d->n);
    slot_put(d->by_id, d->nslots, id_hash(e->id), d->n);
    d->n++;
    return TP_OK;
}

static ent *ent_new(int64_t id, const tpd_leafdef *def, uint64_t h)
{
    ent *e = malloc(sizeof *e + def->head_len + def->tail_len);
    if (e == NULL) return NULL;
    e->id = id;
    e->hash = h;
    e->nvar = def->nvar;
    e->head_len = def->head_len;
    e->tail_len = def->tail_len;
    if (def->head_len) memcpy(e->bytes, def->head, def->head_len);
    if (def->tail_len) memcpy(e->bytes + def->head_len, def->tail, def->tail_len);
    return e;
}

static void ent_def(const ent *e, tpd_leafdef *def)
{
    def->nvar = e->nvar;
    def->head = e->bytes;
    def->head_len = e->head_len;
    def->tail = e->bytes + e->head_len;
    def->tail_len = e->tail_len;
}

/* forget drops pending[from..] from d. */
static void forget(tpd_leafdict *d, size_t from)
{
    size_t j = 0;
    if (from >= d->npending) return;
    for (size_t i = 0; i < d->n; i++) {
        bool drop = false;
        for (size_t p = from; p < d->npending && !drop; p++) drop = d->all[i] == d->pending[p];
        if (drop)
            free(d->all[i]);
        else
            d->all[j++] = d->all[i];
    }
    d->n = j;
    d->npending = from;
    /* the same number of slots, fewer entries: only allocation can fail,
     * and then the lookups must not see the freed entries */
    if (rebuild(d, d->nslots) != TP_OK) {
        memset(d->by_content, 0, d->nslots * sizeof *d->by_content);
        memset(d->by_id, 0, d->nslots * sizeof *d->by_id);
        for (size_t i = 0; i < d->n; i++) {
            slot_put(d->by_content, d->nslots, d->all[i]->hash, i);
            slot_put(d->by_id, d->nslots, id_hash(d->all[i]->id), i);
        }
    }
}

static void on_rollback(void *arg)
{
    forget(arg, 0);
}

tp_err tpd_leafdict_open(tpd_leafdict **dp, sqlite3 *db)
{
    tpd_leafdict *d = calloc(1, sizeof *d);
    if (d == NULL) return TP_ENOMEM;
    d->db = db;
    sqlite3_rollback_hook(db, on_rollback, d);
    *dp = d;
    return TP_OK;
}

void tpd_leafdict_close(tpd_leafdict *d)
{
    if (d == NULL) return;
    sqlite3_rollback_hook(d->db, NULL, NULL);
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->sel);
    for (size_t i = 0; i < d->n; i++) free(d->all[i]);
    free(d->all);
    free(d->by_content);
    free(d->by_id);
    free(d->pending);
    free(d);
}

static tp_err dberr(int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    return e == TP_OK ? TP_EDB : e;
}

tp_err tpd_leafdict_intern(tpd_leafdict *d, const tpd_leafdef *def, int64_t *id)
{
    uint64_t h;
    ent *e;
    tp_err err;
    int rc;
    if (def->nvar > TPD_LEAF_NVAR_MAX) return TP_EINVAL;
    h = def_hash(def);
    if (d->nslots) {
        for (size_t i = (size_t)h & (d->nslots - 1); d->by_content[i];
             i = (i + 1) & (d->nslots - 1)) {
            ent *c = d->all[d->by_content[i] - 1];
            if (c->hash == h && c->nvar == def->nvar && c->head_len == def->head_len &&
                c->tail_len == def->tail_len && memcmp(c->bytes, def->head, def->head_len) == 0 &&
                memcmp(c->bytes + c->head_len, def->tail, def->tail_len) == 0) {
                *id = c->id;
                return TP_OK;
            }
        }
    }
    if (d->npending == d->cappending) {
        size_t cap = d->cappending ? 2 * d->cappending : 16;
        ent **p = realloc(d->pending, cap * sizeof *p);
        if (p == NULL) return TP_ENOMEM;
        d->pending = p;
        d->cappending = cap;
    }
    if (d->ins == NULL &&
        (rc = sqlite3_prepare_v3(d->db, "INSERT INTO leafdefs(nvar, head, tail) VALUES(?1, ?2, ?3)",
                                 -1, SQLITE_PREPARE_PERSISTENT, &d->ins, NULL)) != SQLITE_OK)
        return dberr(rc);
    sqlite3_reset(d->ins);
    sqlite3_bind_int(d->ins, 1, (int)def->nvar);
    sqlite3_bind_blob64(d->ins, 2, def->head, def->head_len, SQLITE_STATIC);
    /* a NULL pointer would bind NULL, not an empty tail */
    sqlite3_bind_blob64(d->ins, 3, def->tail_len ? def->tail : (const void *)"", def->tail_len,
                        SQLITE_STATIC);
    rc = sqlite3_step(d->ins);
    sqlite3_reset(d->ins);
    if (rc != SQLITE_DONE) return dberr(rc);
    if ((e = ent_new(sqlite3_last_insert_rowid(d->db), def, h)) == NULL) return TP_ENOMEM;
    if ((err = add(d, e)) != TP_OK) {
        /* the row stays, unnamed: a later intern writes another */
        free(e);
        return err;
    }
    if (!sqlite3_get_autocommit(d->db)) d->pending[d->npending++] = e;
    *id = e->id;
    return TP_OK;
}

tp_err tpd_leafdict_get(tpd_leafdict *d, int64_t id, tpd_leafdef *def)
{
    tpd_leafdef got;
    const void *head, *tail;
    ent *e;
    tp_err err;
    int rc, nvar;
    if (d->nslots) {
        uint64_t h = id_hash(id);
        for (size_t i = (size_t)h & (d->nslots - 1); d->by_id[i]; i = (i + 1) & (d->nslots - 1)) {
            ent *c = d->all[d->by_id[i] - 1];
            if (c->id == id) {
                ent_def(c, def);
                return TP_OK;
            }
        }
    }
    if (d->sel == NULL &&
        (rc = sqlite3_prepare_v3(d->db, "SELECT nvar, head, tail FROM leafdefs WHERE id = ?1", -1,
                                 SQLITE_PREPARE_PERSISTENT, &d->sel, NULL)) != SQLITE_OK)
        return dberr(rc);
    sqlite3_reset(d->sel);
    sqlite3_bind_int64(d->sel, 1, id);
    rc = sqlite3_step(d->sel);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(d->sel);
        return rc == SQLITE_DONE ? TP_ECORRUPT : dberr(rc);
    }
    nvar = sqlite3_column_int(d->sel, 0);
    head = sqlite3_column_blob(d->sel, 1);
    got.head_len = (size_t)sqlite3_column_bytes(d->sel, 1);
    tail = sqlite3_column_blob(d->sel, 2);
    got.tail_len = (size_t)sqlite3_column_bytes(d->sel, 2);
    if (nvar < 0 || nvar > TPD_LEAF_NVAR_MAX || head == NULL ||
        sqlite3_column_type(d->sel, 2) != SQLITE_BLOB) {
        sqlite3_reset(d->sel);
        return TP_ECORRUPT;
    }
    got.nvar = (unsigned)nvar;
    got.head = head;
    got.tail = tail;
    e = ent_new(id, &got, def_hash(&got));
    sqlite3_reset(d->sel);
    if (e == NULL) return TP_ENOMEM;
    if ((err = add(d, e)) != TP_OK) {
        free(e);
        return err;
    }
    ent_def(e, def);
    return TP_OK;
}

void tpd_leafdict_committed(tpd_leafdict *d)
{
    d->npending = 0;
}

size_t tpd_leafdict_mark(tpd_leafdict *d)
{
    return d->npending;
}

void tpd_leafdict_undo(tpd_leafdict *d, size_t mark)
{
    forget(d, mark);
}
