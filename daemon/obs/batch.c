/* SPDX-License-Identifier: MIT
 * batch.c -- files a process's DataLoader batch events, ids and all,
 * for the checks that audit samples (coverage).
 *
 * One pass over the body map: a key lookup per field would skip the ids
 * array once per later key, and a batch can hold thousands of ids.  The ids
 * go into the run's arena exactly sized; the sampler, id-source and shard
 * names are shared with the previous batch when equal, so a million batches cost a
 * million records, not a million strings.
 *
 * String IDs (batch.h) take one arena block per batch: the n keys, then
 * the n string pointers (tpd_batch.strs). */
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/obs/batch.h"
#include "daemon/obs/obs.h"

int64_t tpd_batch_id_key(const char *s, size_t n)
{
    return (int64_t)XXH3_64bits(s, n);
}

const char *const *tpd_batch_strs(const tpd_batch *b)
{
    return b != NULL && b->has_ids ? b->strs : NULL;
}

/* str_block allocates the keys and string pointers of n string IDs. */
static int64_t *str_block(tpd_arena *a, uint32_t n)
{
    return tpd_arena_alloc(a, (sizeof(int64_t) + sizeof(const char *)) * (n ? n : 1));
}

tp_err tpd_batch_set_strs(tpd_arena *a, tpd_batch *b, const char *const *s, const uint32_t *len,
                          uint32_t n)
{
    int64_t *keys = str_block(a, n);
    const char **strs = (const char **)(keys + n);
    if (keys == NULL) return TP_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        size_t k = len ? len[i] : strlen(s[i]);
        if ((strs[i] = tpd_arena_strndup(a, s[i], k)) == NULL) return TP_ENOMEM;
        keys[i] = tpd_batch_id_key(s[i], k);
    }
    b->ids = keys;
    b->strs = strs;
    b->n = n;
    b->has_ids = true;
    return TP_OK;
}

/* same_or_dup returns prev when it equals s (n bytes), else a copy. */
static const char *same_or_dup(tpd_arena *a, const char *prev, const char *s, uint32_t n)
{
    if (prev != NULL && strlen(prev) == n && memcmp(prev, s, n) == 0) return prev;
    return tpd_arena_strndup(a, s, n);
}

/* read_strs reads n string IDs (the schema holds them to one kind). */
static tp_err read_strs(tpd_arena *a, tp_mpr *r, tpd_batch *b, uint32_t n)
{
    int64_t *keys = str_block(a, n);
    const char **v = (const char **)(keys + n);
    if (keys == NULL) return TP_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const char *s;
        uint32_t k;
        if (tp_mpr_str(r, &s, &k) != TP_OK) return TP_EPROTO;
        if ((v[i] = tpd_arena_strndup(a, s, k)) == NULL) return TP_ENOMEM;
        keys[i] = tpd_batch_id_key(s, k);
    }
    b->ids = keys;
    b->strs = v;
    b->n = n;
    b->has_ids = true;
    return TP_OK;
}

/* read_ids reads an array of integers, or of strings, into the arena. */
static tp_err read_ids(tpd_arena *a, tp_mpr *r, tpd_batch *b)
{
    uint32_t n;
    int64_t *ids;
    tp_mptype t;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    if (n > 0 && tp_mpr_peek(r, &t) == TP_OK && t == TP_MP_STR) return read_strs(a, r, b, n);
    ids = tpd_arena_alloc(a, sizeof *ids * (n ? n : 1));
    if (ids == NULL) return TP_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        if (tp_mpr_int(r, &ids[i]) != TP_OK) return TP_EPROTO;
    b->ids = ids;
    b->n = n;
    b->has_ids = true;
    return TP_OK;
}

/* opt_int reads an integer or nil; *has says which. */
static tp_err opt_int(tp_mpr *r, int64_t *v, bool *has)
{
    tp_mptype t;
    if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
    if (t == TP_MP_NIL) {
        *has = false;
        return tp_mpr_nil(r);
    }
    *has = true;
    return tp_mpr_int(r, v);
}

static tp_err opt_str(tpd_arena *a, tp_mpr *r, const char *prev, const char **out)
{
    tp_mptype t;
    const char *s;
    uint32_t n;
    if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
    if (t == TP_MP_NIL) {
        *out = NULL;
        return tp_mpr_nil(r);
    }
    if (tp_mpr_str(r, &s, &n) != TP_OK) return TP_EPROTO;
    *out = same_or_dup(a, prev, s, n);
    return *out != NULL ? TP_OK : TP_ENOMEM;
}

static tp_err read_u32(tp_mpr *r, uint32_t *v)
{
    uint64_t u;
    if (tp_mpr_uint(r, &u) != TP_OK || u > UINT32_MAX) return TP_EPROTO;
    *v = (uint32_t)u;
    return TP_OK;
}

/* field reads the value of key k into b. */
static tp_err field(tpd_arena *a, tp_mpr *r, const char *k, uint32_t kn, tpd_batch *b,
                    const tpd_batch *prev)
{
    tp_mptype t;
    if (tp_mp_str_eq(k, kn, "ids")) {
        if (tp_mpr_peek(r, &t) != TP_OK) return TP_EPROTO;
        return t == TP_MP_NIL ? tp_mpr_nil(r) : read_ids(a, r, b);
    }
    if (tp_mp_str_eq(k, kn, "loader")) return read_u32(r, &b->loader);
    if (tp_mp_str_eq(k, kn, "epoch")) return read_u32(r, &b->epoch);
    if (tp_mp_str_eq(k, kn, "pos")) return read_u32(r, &b->pos);
    if (tp_mp_str_eq(k, kn, "worker")) return opt_int(r, &b->worker, &b->has_worker);
    if (tp_mp_str_eq(k, kn, "rank")) return tp_mpr_int(r, &b->rank);
    if (tp_mp_str_eq(k, kn, "world")) return tp_mpr_int(r, &b->world);
    if (tp_mp_str_eq(k, kn, "dataset_len")) return opt_int(r, &b->dataset_len, &b->has_dataset_len);
    if (tp_mp_str_eq(k, kn, "total_size")) return opt_int(r, &b->total_size, &b->has_total_size);
    if (tp_mp_str_eq(k, kn, "drop_last")) return tp_mpr_bool(r, &b->drop_last);
    if (tp_mp_str_eq(k, kn, "end")) return tp_mpr_bool(r, &b->end);
    if (tp_mp_str_eq(k, kn, "sampler"))
        return opt_str(a, r, prev ? prev->sampler : NULL, &b->sampler);
    if (tp_mp_str_eq(k, kn, "id_source"))
        return opt_str(a, r, prev ? prev->id_source : NULL, &b->id_source);
    if (tp_mp_str_eq(k, kn, "shard")) return opt_str(a, r, prev ? prev->shard : NULL, &b->shard);
    if (tp_mp_str_eq(k, kn, "shard_batch")) {
        bool has;
        tp_err rc = opt_int(r, &b->shard_batch, &has);
        if (rc == TP_OK && !has) b->shard_batch = 0;
        return rc;
    }
    if (tp_mp_str_eq(k, kn, "shard_ranks")) return tp_mpr_int(r, &b->shard_ranks);
    if (tp_mp_str_eq(k, kn, "shard_even")) return tp_mpr_bool(r, &b->shard_even);
    if (tp_mp_str_eq(k, kn, "shard_drop_last")) return tp_mpr_bool(r, &b->shard_drop_last);
    return tp_mpr_skip(r); /* size, and keys a later schema adds */
}

tp_err tpd_proc_add_batch(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    const tpd_batch *prev = p->nbatches ? &p->batches[p->nbatches - 1] : NULL;
    tpd_batch b, *v;
    tp_mpr r;
    uint32_t n;
    tp_err rc;
    memset(&b, 0, sizeof b);
    b.seq = e->seq;
    b.step = e->step;
    b.rank = -1;
    b.world = 1;
    tp_mpr_init(&r, e->body, e->body_len);
    if (tp_mpr_map(&r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kn;
        if (tp_mpr_str(&r, &k, &kn) != TP_OK) return TP_EPROTO;
        if ((rc = field(a, &r, k, kn, &b, prev)) != TP_OK) return rc;
    }
    v = tpd_arena_grow(a, p->batches, &p->batches_cap, p->nbatches + 1, sizeof *v);
    if (v == NULL) return TP_ENOMEM;
    p->batches = v;
    p->batches[p->nbatches++] = b;
    return TP_OK;
}
