/* SPDX-License-Identifier: MIT
 * stream.c -- the training data stream and its comparison (see stream.h). */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/checks/resume/stream.h"

/* One iteration of a DataLoader: the span of its batch events.  An
 * iteration the training left before its end (a step limit reached, an
 * iterator used for one batch) has no end event: its span runs on to the
 * next batch event of the process, so that the backward of its last batch
 * still falls within it. */
typedef struct pass {
    uint32_t loader, epoch;
    uint64_t first, last;
    size_t last_index; /* of its last batch event in p->batches */
    bool ended, train;
} pass;

/* find_pass finds (or adds) the pass of b; the latest passes are the likely
 * ones, so the search goes backwards. */
static pass *find_pass(pass **v, size_t *n, size_t *cap, const tpd_batch *b)
{
    for (size_t i = *n; i-- > 0;)
        if ((*v)[i].loader == b->loader && (*v)[i].epoch == b->epoch) return &(*v)[i];
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        pass *g = realloc(*v, c * sizeof *g);
        if (g == NULL) return NULL;
        *v = g;
        *cap = c;
    }
    memset(&(*v)[*n], 0, sizeof **v);
    (*v)[*n].loader = b->loader;
    (*v)[*n].epoch = b->epoch;
    (*v)[*n].first = b->seq;
    return &(*v)[(*n)++];
}

/* backward_within reports whether p has a backward with first < seq < last. */
static bool backward_within(const tpd_proc *p, uint64_t first, uint64_t last)
{
    size_t lo = 0, hi = p->nmarks;
    while (lo < hi) { /* the first mark after first (marks are in seq order) */
        size_t mid = lo + (hi - lo) / 2;
        if (p->marks[mid].seq <= first)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < p->nmarks && p->marks[i].seq < last; i++)
        if (p->marks[i].kind == TP_K_BACKWARD) return true;
    return false;
}

tp_err tpd_stream_build(const tpd_proc *p, tpd_stream *s)
{
    pass *passes = NULL;
    size_t npasses = 0, cap = 0, k = 0;
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < p->nbatches; i++) {
        pass *q = find_pass(&passes, &npasses, &cap, &p->batches[i]);
        if (q == NULL) goto nomem;
        q->last = p->batches[i].seq;
        q->last_index = i;
        q->ended |= p->batches[i].end;
    }
    for (size_t i = 0; i < npasses; i++) {
        pass *q = &passes[i];
        uint64_t last = q->last;
        if (!q->ended)
            last = q->last_index + 1 < p->nbatches ? p->batches[q->last_index + 1].seq : UINT64_MAX;
        q->train = backward_within(p, q->first, last);
    }
    for (size_t i = 0; i < p->nbatches; i++) {
        const tpd_batch *b = &p->batches[i];
        if (b->has_ids && !b->end) s->n++;
    }
    if (s->n && (s->v = calloc(s->n, sizeof *s->v)) == NULL) goto nomem;
    for (size_t i = 0; i < p->nbatches; i++) {
        const tpd_batch *b = &p->batches[i];
        const pass *q;
        if (!b->has_ids || b->end) continue;
        q = find_pass(&passes, &npasses, &cap, b);
        if (q == NULL || !q->train) continue;
        s->v[k].off = s->len;
        s->v[k].n = b->n;
        s->v[k].step = b->step;
        s->v[k].seq = b->seq;
        s->v[k].ids = b->ids;
        s->len += b->n;
        k++;
    }
    s->n = k;
    free(passes);
    return TP_OK;
nomem:
    free(passes);
    tpd_stream_free(s);
    return TP_ENOMEM;
}

void tpd_stream_free(tpd_stream *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

uint64_t tpd_stream_before(const tpd_stream *s, const tpd_proc *p, int64_t step)
{
    uint64_t n = 0;
    size_t i = 0;
    while (i < p->nmarks && !(p->marks[i].kind == TP_K_BACKWARD && p->marks[i].step == step)) i++;
    if (i == p->nmarks) return s->len;
    for (size_t k = 0; k < s->n && s->v[k].seq < p->marks[i].seq; k++) n += s->v[k].n;
    return n;
}

/* at finds the batch of s that holds position pos (< s->len). */
static size_t at(const tpd_stream *s, uint64_t pos)
{
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].off <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int64_t id_at(const tpd_stream *s, size_t *k, uint64_t pos)
{
    while (pos >= s->v[*k].off + s->v[*k].n) (*k)++;
    return s->v[*k].ids[pos - s->v[*k].off];
}

/* ids_val makes v the n ids at ids, digested as the agent's tensors are:
 * XXH3-128 of the little-endian bytes. */
static tp_err ids_val(tpd_val *v, const int64_t *ids, uint64_t n)
{
    uint8_t *le = calloc((size_t)n * 8 + 1, 1);
    XXH128_canonical_t c;
    if (le == NULL) return TP_ENOMEM;
    for (uint64_t i = 0; i < n; i++)
        for (int j = 0; j < 8; j++)
            le[(size_t)i * 8 + (size_t)j] = (uint8_t)((uint64_t)ids[i] >> (8 * j));
    XXH128_canonicalFromHash(&c, XXH3_128bits(le, (size_t)n * 8));
    free(le);
    memset(v, 0, sizeof *v);
    v->kind = 'i';
    v->n = n;
    v->ids = ids;
    memcpy(v->digest, c.digest, 16);
    return TP_OK;
}

static void ids_item(tpd_item *it, int64_t step)
{
    it->step = step;
    it->group = TPD_G_DATA;
    it->path = "data.ids";
}

/* fill describes the divergence at offset i from the aligned starts sa0 and
 * sb0 (la and lb: the ids each has from there). */
static tp_err fill(const tpd_stream *sa, uint64_t sa0, uint64_t la, int64_t a0,
                   const tpd_stream *sb, uint64_t sb0, uint64_t lb, int64_t b0, uint64_t i,
                   tpd_stream_div *out)
{
    bool has_a = i < la, has_b = i < lb;
    uint64_t lo, hi; /* the positions shown, relative to the aligned starts */
    tp_err rc;
    out->d.found = true;
    out->d.group = TPD_G_DATA;
    out->d.path = "data.ids";
    out->compared = i;
    if (has_b) { /* b's batch at i, from the aligned start on */
        const tpd_sbatch *y = &sb->v[at(sb, sb0 + i)];
        lo = y->off > sb0 ? y->off - sb0 : 0;
        hi = y->off + y->n - sb0;
    } else { /* a's batch at i, from i on */
        const tpd_sbatch *x = &sa->v[at(sa, sa0 + i)];
        lo = i;
        hi = x->off + x->n - sa0;
    }
    out->pos_a = sa0 + i;
    out->pos_b = sb0 + i;
    if (has_a) {
        uint64_t ahi = hi < la ? hi : la;
        size_t k = at(sa, sa0 + lo), kl = at(sa, sa0 + ahi - 1);
        const int64_t *ids = sa->v[k].ids + (sa0 + lo - sa->v[k].off);
        int64_t fstep = sa->v[at(sa, sa0 + i)].step;
        if (k != kl) { /* b's batch spans several of a's: copy */
            if ((out->own = malloc(sizeof *out->own * (size_t)(ahi - lo))) == NULL)
                return TP_ENOMEM;
            for (uint64_t q = lo; q < ahi; q++) out->own[q - lo] = id_at(sa, &k, sa0 + q);
            ids = out->own;
        }
        ids_item(&out->ia, fstep > a0 ? fstep : a0);
        if ((rc = ids_val(&out->ia.v, ids, ahi - lo)) != TP_OK) return rc;
        out->d.a = &out->ia;
    }
    if (has_b) {
        const tpd_sbatch *y = &sb->v[at(sb, sb0 + i)];
        ids_item(&out->ib, y->step > b0 ? y->step : b0);
        if ((rc = ids_val(&out->ib.v, y->ids + (sb0 + lo - y->off), hi - lo)) != TP_OK) return rc;
        out->d.b = &out->ib;
    }
    /* the side that has nothing there is at the other's step, aligned */
    out->d.step_a = has_a ? out->ia.step : out->ib.step - b0 + a0;
    out->d.step_b = has_b ? out->ib.step : out->ia.step - a0 + b0;
    return TP_OK;
}

tp_err tpd_stream_compare(const tpd_proc *a, int64_t a0, const tpd_proc *b, int64_t b0,
                          tpd_stream_div *out)
{
    tpd_stream sa, sb;
    uint64_t pa, pb, sa0, sb0, la, lb, m, i;
    size_t ka = 0, kb = 0;
    tp_err rc = TP_OK;
    memset(out, 0, sizeof *out);
    if ((rc = tpd_stream_build(a, &sa)) != TP_OK) return rc;
    if ((rc = tpd_stream_build(b, &sb)) != TP_OK) {
        tpd_stream_free(&sa);
        return rc;
    }
    /* align the points just before each side's first backward of its step:
     * what was fetched before them is what was consumed, plus the same
     * prefetch on both sides */
    pa = tpd_stream_before(&sa, a, a0);
    pb = tpd_stream_before(&sb, b, b0);
    sa0 = pa > pb ? pa - pb : 0;
    sb0 = pb > pa ? pb - pa : 0;
    la = sa.len - sa0;
    lb = sb.len - sb0;
    m = la < lb ? la : lb;
    for (i = 0; i < m; i++)
        if (id_at(&sa, &ka, sa0 + i) != id_at(&sb, &kb, sb0 + i)) break;
    if (i < m || la != lb)
        rc = fill(&sa, sa0, la, a0, &sb, sb0, lb, b0, i, out);
    else
        out->compared = m;
    tpd_stream_free(&sa);
    tpd_stream_free(&sb);
    if (rc != TP_OK) tpd_stream_div_free(out);
    return rc;
}

void tpd_stream_div_free(tpd_stream_div *d)
{
    free(d->own);
    memset(d, 0, sizeof *d);
}

void tpd_stream_merge(tpd_cmp_result *cmp, const tpd_stream_div *sd)
{
    if (!sd->d.found || (cmp->first.found && cmp->first.step_a < sd->d.step_a)) return;
    if (!cmp->first_other.found || sd->d.step_a <= cmp->first_other.step_a)
        cmp->first_other = sd->d;
    cmp->first =
        cmp->first_rng.found && cmp->first_rng.step_a < sd->d.step_a ? cmp->first_rng : sd->d;
}
