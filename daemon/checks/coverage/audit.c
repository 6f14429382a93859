/* SPDX-License-Identifier: MIT
 * audit.c -- the coverage audit of one epoch (audit.h).
 *
 * A known universe maps each ID to a dense index (0..n-1, or through the
 * declared ranges) and keeps two bitmaps: `seen` (observed in this epoch)
 * and `cur` (observed on the rank being walked), so a repeat is told apart
 * as same-rank or cross-rank without storing a rank per ID.  `cur` is
 * cleared by walking the rank's own IDs again, so its cost follows the
 * observations, not ranks * universe.  An unknown universe uses an open
 * addressing table of ID -> the last rank that observed it (ranks are walked
 * in order, so "already on this rank" is "last seen on this rank", as `cur`
 * says), sized to the epoch's observations.
 *
 * The hot loop touches one bit per observation and never stops early: the
 * first violation is kept and the counting goes on.  Everything needed to
 * explain a violation or an example (the first observation of a repeated
 * ID, the smallest missing IDs) is found again after the fact, in one more
 * pass over the epoch. */
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/coverage/audit.h"

/* A universe larger than this (2^32 IDs, two 512 MiB bitmaps) is refused. */
#define MAX_BITS (INT64_C(1) << 32)

typedef struct wrap {
    int64_t id;
    int64_t j;       /* its place among the wrap-around IDs, in dealing order */
    int64_t allowed; /* repeats allowed of it */
    int64_t repeats;
} wrap;

struct tpd_cov_auditor {
    tpd_cov_policy policy;
    tpd_cov_universe u;
    int64_t padding;
    int64_t *base; /* ranges: the dense index of ranges[i].lo */
    uint64_t *seen, *cur;
    size_t words;
    /* unknown universe */
    int64_t *keys;
    int32_t *owner; /* first rank + 1; 0: empty slot */
    size_t hcap;
    /* expected_padding */
    wrap *wraps;
    size_t nwraps, wcap;
    tpd_cov_deal deal; /* how the order was dealt to the ranks */
    int64_t deal_batch;
    bool exact;      /* fewer repeats than the padding fail too */
    bool count_only; /* u.n is a count, not the IDs 0..n-1 */
    /* the first examples of each kind, over the epochs audited */
    size_t examples;
    tpd_cov_example *ex[TPD_COV_K__COUNT];
    size_t nex[TPD_COV_K__COUNT];
    int64_t *pending; /* scratch: IDs whose first observation is wanted */
};

tp_err tpd_cov_auditor_create(tpd_cov_auditor **ap, tpd_cov_policy policy,
                              const tpd_cov_universe *u, int64_t padding)
{
    return tpd_cov_auditor_open(ap, policy, u, padding, NULL);
}

tp_err tpd_cov_auditor_open(tpd_cov_auditor **ap, tpd_cov_policy policy, const tpd_cov_universe *u,
                            int64_t padding, const tpd_cov_opts *o)
{
    static const tpd_cov_opts defaults;
    tpd_cov_auditor *a;
    bool listed;
    if (o == NULL) o = &defaults;
    listed = u->known && !o->count_only;
    if (u->known && u->n < 0) return TP_EINVAL;
    if (listed && u->n > MAX_BITS) return TP_EINVAL;
    if ((a = calloc(1, sizeof *a)) == NULL) return TP_ENOMEM;
    a->policy = policy;
    a->u = *u;
    a->count_only = u->known && o->count_only;
    a->exact = o->padding_exact;
    a->deal = o->deal_batch >= 1 ? o->deal : TPD_COV_DEAL_SAMPLES;
    a->deal_batch = o->deal_batch;
    a->examples = o->examples > 0 ? (size_t)o->examples : 0;
    a->padding = padding > 0 ? padding : 0;
    if (listed) {
        a->words = (size_t)((u->n + 63) / 64) + 1;
        a->seen = calloc(a->words, sizeof *a->seen);
        a->cur = calloc(a->words, sizeof *a->cur);
        if (a->seen == NULL || a->cur == NULL) goto fail;
        if (u->ranges != NULL) {
            int64_t at = 0;
            if ((a->base = malloc(sizeof *a->base * (u->nranges ? u->nranges : 1))) == NULL)
                goto fail;
            for (size_t i = 0; i < u->nranges; i++) {
                a->base[i] = at;
                at += u->ranges[i].hi - u->ranges[i].lo + 1;
            }
        }
    }
    *ap = a;
    return TP_OK;
fail:
    tpd_cov_auditor_destroy(a);
    return TP_ENOMEM;
}

void tpd_cov_auditor_destroy(tpd_cov_auditor *a)
{
    if (a == NULL) return;
    free(a->base);
    free(a->seen);
    free(a->cur);
    free(a->keys);
    free(a->owner);
    free(a->wraps);
    for (int k = 0; k < TPD_COV_K__COUNT; k++) free(a->ex[k]);
    free(a->pending);
    free(a);
}

const tpd_cov_example *tpd_cov_examples(const tpd_cov_auditor *a, tpd_cov_kind k, size_t *n)
{
    *n = a->nex[k];
    return a->ex[k];
}

/* example keeps one more example of kind k while there is room; NULL when
 * there is none (or no memory: examples are a courtesy, never a verdict). */
static tpd_cov_example *example(tpd_cov_auditor *a, tpd_cov_kind k, uint32_t epoch, int64_t id)
{
    tpd_cov_example *x;
    if (a->nex[k] >= a->examples) return NULL;
    if (a->ex[k] == NULL && (a->ex[k] = calloc(a->examples, sizeof *a->ex[k])) == NULL) return NULL;
    x = &a->ex[k][a->nex[k]++];
    memset(x, 0, sizeof *x);
    x->epoch = epoch;
    x->id = id;
    x->rank = -1;
    return x;
}

/* observed keeps an example of kind k for item i of batch b on rank r. */
static void observed(tpd_cov_auditor *a, tpd_cov_kind k, const tpd_cov_epoch *e, int64_t r,
                     const tpd_batch *b, uint32_t i)
{
    tpd_cov_example *x = example(a, k, e->epoch, b->ids[i]);
    if (x == NULL) return;
    x->rank = r;
    x->pos = b->pos;
    x->item = i;
    x->has_worker = b->has_worker;
    x->worker = b->worker;
}

/* dense maps id to its index in a known universe; false when outside. */
static inline bool dense(const tpd_cov_auditor *a, int64_t id, uint64_t *ix)
{
    size_t lo = 0, hi;
    if (a->u.ranges == NULL) {
        if (id < 0 || id >= a->u.n) return false;
        *ix = (uint64_t)id;
        return true;
    }
    hi = a->u.nranges;
    while (lo < hi) { /* the last range whose lo <= id */
        size_t mid = lo + (hi - lo) / 2;
        if (a->u.ranges[mid].lo <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || id > a->u.ranges[lo - 1].hi) return false;
    *ix = (uint64_t)(a->base[lo - 1] + (id - a->u.ranges[lo - 1].lo));
    return true;
}

/* id_at is the ID with dense index ix. */
static int64_t id_at(const tpd_cov_auditor *a, uint64_t ix)
{
    size_t lo = 0, hi = a->u.nranges;
    if (a->u.ranges == NULL) return (int64_t)ix;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->base[mid] <= (int64_t)ix)
            lo = mid + 1;
        else
            hi = mid;
    }
    return a->u.ranges[lo - 1].lo + ((int64_t)ix - a->base[lo - 1]);
}

static inline bool bit(const uint64_t *m, uint64_t i)
{
    return (m[i >> 6] >> (i & 63)) & 1u;
}

static inline void set_bit(uint64_t *m, uint64_t i)
{
    m[i >> 6] |= UINT64_C(1) << (i & 63);
}

static inline void clear_bit(uint64_t *m, uint64_t i)
{
    m[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

static inline size_t slot_of(int64_t id, size_t mask)
{
    return (size_t)(((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & mask;
}

/* hash_reset makes the table empty with room for n IDs at most half full. */
static tp_err hash_reset(tpd_cov_auditor *a, int64_t n)
{
    size_t cap = 64;
    while (cap < (size_t)n * 2) cap *= 2;
    if (cap > a->hcap) {
        int64_t *k = realloc(a->keys, cap * sizeof *k);
        int32_t *o;
        if (k == NULL) return TP_ENOMEM;
        a->keys = k;
        if ((o = realloc(a->owner, cap * sizeof *o)) == NULL) return TP_ENOMEM;
        a->owner = o;
        a->hcap = cap;
    }
    memset(a->owner, 0, a->hcap * sizeof *a->owner);
    return TP_OK;
}

/* hash_find returns the slot of id: owner 0 when it is not there yet. */
static size_t hash_find(const tpd_cov_auditor *a, int64_t id)
{
    size_t mask = a->hcap - 1, s = slot_of(id, mask);
    while (a->owner[s] != 0 && a->keys[s] != id) s = (s + 1) & mask;
    return s;
}

static int cmp_wrap(const void *x, const void *y)
{
    const wrap *p = x, *q = y;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* dealt is the place in the epoch's order of rank r's k-th sample, W ranks
 * (audit.h, tpd_cov_deal). */
static int64_t dealt(const tpd_cov_auditor *a, int64_t k, int64_t r, int64_t w)
{
    int64_t b = a->deal_batch, s;
    switch (a->deal) {
    case TPD_COV_DEAL_BATCHES:
        return ((k / b) * w + r) * b + k % b;
    case TPD_COV_DEAL_SPLIT:
        s = b / w > 0 ? b / w : 1;
        return (k / s) * b + r * s + k % s;
    default:
        return k * w + r;
    }
}

/* find_wraps collects the wrap-around IDs: the sampler pads by repeating
 * the first IDs of its order (a DistributedSampler its padded list,
 * BatchSamplerShard the epoch's first batches), so they are those the
 * ranks hold at the order's first places. */
static tp_err find_wraps(tpd_cov_auditor *a, const tpd_cov_epoch *e)
{
    int64_t n = a->padding, w = e->nranks > 0 ? e->nranks : 1;
    if (a->u.known && a->u.n < n) n = a->u.n;
    a->nwraps = 0;
    if (n <= 0) return TP_OK;
    if ((size_t)n > a->wcap) {
        wrap *v = realloc(a->wraps, (size_t)n * sizeof *v);
        if (v == NULL) return TP_ENOMEM;
        a->wraps = v;
        a->wcap = (size_t)n;
    }
    for (int64_t r = 0; r < e->nranks; r++) {
        int64_t k = 0; /* the rank's k-th sample holds place dealt(k) of the order */
        for (size_t bi = e->first[r]; bi < e->first[r + 1] && dealt(a, k, r, w) < n; bi++) {
            const tpd_batch *b = e->batches[bi];
            for (uint32_t i = 0; i < b->n && dealt(a, k, r, w) < n && (int64_t)a->nwraps < n;
                 i++, k++) {
                wrap *x = &a->wraps[a->nwraps++];
                x->id = b->ids[i];
                x->j = dealt(a, k, r, w);
                x->allowed = (a->padding - 1 - x->j) / n + 1;
                x->repeats = 0;
            }
        }
    }
    if (a->nwraps > 1) qsort(a->wraps, a->nwraps, sizeof *a->wraps, cmp_wrap);
    return TP_OK;
}

static wrap *wrap_of(tpd_cov_auditor *a, int64_t id)
{
    wrap key = {id, 0, 0, 0};
    if (a->nwraps == 0) return NULL; /* bsearch wants a real array even when empty */
    return bsearch(&key, a->wraps, a->nwraps, sizeof *a->wraps, cmp_wrap);
}

/* first_seen finds the first observation of id in e (rank-major). */
static void first_seen(const tpd_cov_epoch *e, int64_t id, tpd_cov_finding *f)
{
    for (int64_t r = 0; r < e->nranks; r++)
        for (size_t bi = e->first[r]; bi < e->first[r + 1]; bi++) {
            const tpd_batch *b = e->batches[bi];
            for (uint32_t i = 0; i < b->n; i++)
                if (b->ids[i] == id) {
                    f->has_prev = true;
                    f->prev_rank = r;
                    f->prev_pos = b->pos;
                    f->prev_item = i;
                    return;
                }
        }
}

static void at(tpd_cov_finding *f, const char *path, int64_t r, const tpd_batch *b, uint32_t i)
{
    f->path = path;
    f->rank = r;
    f->pos = b->pos;
    f->item = i;
    f->id = b->ids[i];
    f->has_worker = b->has_worker;
    f->worker = b->worker;
}

/* repeat judges a repeated observation under the policy; true when it is a
 * violation (then f says which). */
static bool repeat(tpd_cov_auditor *a, bool same, int64_t repeats, int64_t r, const tpd_batch *b,
                   uint32_t i, tpd_cov_finding *f)
{
    wrap *w;
    switch (a->policy) {
    case TPD_COV_AT_LEAST_ONCE:
        return false;
    case TPD_COV_NO_CROSS_RANK_OVERLAP:
        if (same) return false;
        /* fall through */
    case TPD_COV_EXACTLY_ONCE:
        at(f, same ? "coverage.same_rank_duplicate" : "coverage.cross_rank_duplicate", r, b, i);
        return true;
    case TPD_COV_EXPECTED_PADDING:
        w = wrap_of(a, b->ids[i]);
        if (w != NULL) w->repeats++;
        if (w != NULL && repeats <= a->padding && w->repeats <= w->allowed) return false;
        at(f, "coverage.padding_exceeded", r, b, i);
        f->wrap = w != NULL;
        f->repeats = repeats; /* too many in all, or a repeat of another ID */
        f->allowed = a->padding;
        if (w != NULL && repeats <= a->padding) { /* too many of this one */
            f->per_id = true;
            f->repeats = w->repeats;
            f->allowed = w->allowed;
        }
        return true;
    }
    return false;
}

/* missing counts the universe's IDs never seen, keeping the smallest in f
 * and the first examples. */
static int64_t missing(tpd_cov_auditor *a, uint32_t epoch, int64_t distinct, tpd_cov_finding *f)
{
    int64_t n = a->u.n - distinct;
    f->nmissing = n;
    if (n <= 0) return 0;
    for (size_t w = 0; w < a->words; w++) {
        uint64_t holes = ~a->seen[w];
        if (f->nshown >= TPD_COV_SHOWN && a->nex[TPD_COV_K_MISSING] >= a->examples) break;
        while (holes != 0) {
            uint64_t ix = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(holes);
            int64_t id;
            if ((int64_t)ix >= a->u.n) return n;
            id = id_at(a, ix);
            if (f->nshown < TPD_COV_SHOWN) f->missing[f->nshown++] = id;
            example(a, TPD_COV_K_MISSING, epoch, id);
            holes &= holes - 1;
        }
    }
    return n;
}

/* clear_cur forgets rank r's observations in the cur bitmap. */
static void clear_cur(tpd_cov_auditor *a, const tpd_cov_epoch *e, int64_t r)
{
    uint64_t ix;
    for (size_t bi = e->first[r]; bi < e->first[r + 1]; bi++) {
        const tpd_batch *b = e->batches[bi];
        for (uint32_t i = 0; i < b->n; i++)
            if (dense(a, b->ids[i], &ix)) clear_bit(a->cur, ix);
    }
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
    return p < q ? -1 : p > q;
}

/* first_seens finds, in one pass over e, where each repeat example kept
 * since from[k] (and f's repeat) first observed its ID. */
static void first_seens(tpd_cov_auditor *a, const tpd_cov_epoch *e, const size_t *from,
                        tpd_cov_finding *f, bool f_repeat)
{
    size_t np = 0, cap = 1;
    int64_t *v;
    for (int k = TPD_COV_K_SAME_RANK; k <= TPD_COV_K_CROSS_RANK; k++) cap += a->nex[k] - from[k];
    if ((v = realloc(a->pending, cap * sizeof *v)) == NULL) {
        if (f_repeat) first_seen(e, f->id, f); /* examples go without */
        return;
    }
    a->pending = v;
    for (int k = TPD_COV_K_SAME_RANK; k <= TPD_COV_K_CROSS_RANK; k++)
        for (size_t j = from[k]; j < a->nex[k]; j++) v[np++] = a->ex[k][j].id;
    if (f_repeat) v[np++] = f->id;
    if (np == 0) return;
    qsort(v, np, sizeof *v, cmp_i64);
    for (int64_t r = 0; r < e->nranks && np > 0; r++)
        for (size_t bi = e->first[r]; bi < e->first[r + 1] && np > 0; bi++) {
            const tpd_batch *b = e->batches[bi];
            for (uint32_t i = 0; i < b->n && np > 0; i++) {
                int64_t *hit = bsearch(&b->ids[i], v, np, sizeof *v, cmp_i64);
                size_t lo;
                if (hit == NULL) continue;
                for (int k = TPD_COV_K_SAME_RANK; k <= TPD_COV_K_CROSS_RANK; k++)
                    for (size_t j = from[k]; j < a->nex[k]; j++) {
                        tpd_cov_example *x = &a->ex[k][j];
                        if (x->id != b->ids[i] || x->has_prev) continue;
                        x->has_prev = true;
                        x->prev_rank = r;
                        x->prev_pos = b->pos;
                        x->prev_item = i;
                    }
                if (f_repeat && f->id == b->ids[i] && !f->has_prev) {
                    f->has_prev = true;
                    f->prev_rank = r;
                    f->prev_pos = b->pos;
                    f->prev_item = i;
                }
                /* found: drop every copy of the ID from the pending list */
                lo = (size_t)(hit - v);
                while (lo > 0 && v[lo - 1] == b->ids[i]) lo--;
                {
                    size_t end = lo;
                    while (end < np && v[end] == b->ids[i]) end++;
                    memmove(v + lo, v + end, (np - end) * sizeof *v);
                    np -= end - lo;
                }
            }
        }
}

/* epoch_end judges what only a complete epoch shows: IDs never observed, a
 * count_only universe exceeded, padding short of exact. */
static void epoch_end(tpd_cov_auditor *a, const tpd_cov_epoch *e, tpd_cov_finding *f,
                      tpd_cov_counts *c)
{
    bool judged = a->policy != TPD_COV_NO_CROSS_RANK_OVERLAP; /* needs no universe */
    tpd_cov_finding scratch, *g = f->path ? &scratch : f;
    memset(&scratch, 0, sizeof scratch);
    if (a->count_only) {
        if (c->distinct > a->u.n) {
            c->unexpected += c->distinct - a->u.n;
            c->distinct = a->u.n; /* within the count; the rest are unexpected */
            if (judged && g == f) {
                f->path = "coverage.unexpected_id";
                f->rank = -1;
                f->nextra = c->unexpected;
            }
        } else if (c->distinct < a->u.n) {
            c->missing = a->u.n - c->distinct;
            if (judged && g == f) {
                f->path = "coverage.missing";
                f->rank = -1;
                f->nmissing = c->missing;
            }
        }
    } else if (a->u.known) {
        c->missing = missing(a, e->epoch, c->distinct, g);
        if (c->missing > 0 && judged && g == f) {
            f->path = "coverage.missing";
            f->rank = -1;
        }
    }
    if (f->path == NULL && a->policy == TPD_COV_EXPECTED_PADDING && a->exact &&
        c->repeats < a->padding) {
        f->path = "coverage.padding_short";
        f->rank = -1;
        f->repeats = c->repeats;
        f->allowed = a->padding;
    }
}

tp_err tpd_cov_audit(tpd_cov_auditor *a, const tpd_cov_epoch *e, tpd_cov_finding *f,
                     tpd_cov_counts *c)
{
    size_t from[TPD_COV_K__COUNT];
    bool listed = a->u.known && !a->count_only; /* the bitmaps hold the universe */
    tpd_cov_finding scratch;
    tp_err rc;
    memset(f, 0, sizeof *f);
    memset(c, 0, sizeof *c);
    f->epoch = e->epoch;
    for (int k = 0; k < TPD_COV_K__COUNT; k++) from[k] = a->nex[k];
    if (listed) {
        memset(a->seen, 0, a->words * sizeof *a->seen);
        memset(a->cur, 0, a->words * sizeof *a->cur);
    } else {
        int64_t n = 0;
        for (size_t bi = 0; bi < e->first[e->nranks]; bi++) n += e->batches[bi]->n;
        if ((rc = hash_reset(a, n)) != TP_OK) return rc;
    }
    if (a->policy == TPD_COV_EXPECTED_PADDING && (rc = find_wraps(a, e)) != TP_OK) return rc;

    for (int64_t r = 0; r < e->nranks; r++) {
        for (size_t bi = e->first[r]; bi < e->first[r + 1]; bi++) {
            const tpd_batch *b = e->batches[bi];
            for (uint32_t i = 0; i < b->n; i++) {
                int64_t id = b->ids[i];
                tpd_cov_finding *g = f->path ? &scratch : f; /* the first one stays */
                bool same;
                c->observations++;
                if (listed) {
                    uint64_t ix;
                    if (!dense(a, id, &ix)) {
                        c->unexpected++;
                        c->violations++;
                        observed(a, TPD_COV_K_UNEXPECTED, e, r, b, i);
                        at(g, "coverage.unexpected_id", r, b, i);
                        continue;
                    }
                    if (!bit(a->seen, ix)) {
                        set_bit(a->seen, ix);
                        set_bit(a->cur, ix);
                        c->distinct++;
                        continue;
                    }
                    same = bit(a->cur, ix);
                    set_bit(a->cur, ix);
                } else {
                    size_t s = hash_find(a, id);
                    if (a->owner[s] == 0) {
                        a->keys[s] = id;
                        a->owner[s] = (int32_t)r + 1;
                        c->distinct++;
                        continue;
                    }
                    same = a->owner[s] == (int32_t)r + 1;
                    a->owner[s] = (int32_t)r + 1;
                }
                c->repeats++;
                if (same)
                    c->same_rank++;
                else
                    c->cross_rank++;
                observed(a, same ? TPD_COV_K_SAME_RANK : TPD_COV_K_CROSS_RANK, e, r, b, i);
                if (repeat(a, same, c->repeats, r, b, i, g)) c->violations++;
            }
        }
        if (listed) clear_cur(a, e, r);
    }
    first_seens(a, e, from, f, f->path != NULL && strcmp(f->path, "coverage.unexpected_id") != 0);
    if (e->complete) epoch_end(a, e, f, c);
    return TP_OK;
}
