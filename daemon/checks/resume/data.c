/* SPDX-License-Identifier: MIT
 * data.c -- the explanation of a first divergence in the training data.
 * From that point to the end of the epoch (the pass of the loader and
 * epoch each side's sample came from) each run has some samples left: a
 * different number says R's place in the epoch was lost (it restarted the
 * epoch, or skipped too few or too many batches); the same number says the
 * place was right and the order was not (a shuffle whose generator, or the
 * RNG it draws from, was not restored), the same samples in another order
 * or others.  The counts say so only when both passes ran to their end: a
 * training that stops at a step count before its epoch ends leaves as
 * many samples on both sides whatever the place was, and then the report
 * names the two ids and no cause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/resume/ctx.h"

/* batch_of finds p's batch event seq (p->batches is in seq order). */
static const tpd_batch *batch_of(const tpd_proc *p, uint64_t seq)
{
    size_t lo = 0, hi = p->nbatches;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->batches[mid].seq == seq) return &p->batches[mid];
        if (p->batches[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The rest of one side's epoch from a position of its stream. */
typedef struct rest {
    const tpd_batch *b; /* the batch at the position */
    char id[160];       /* the id there, as the report writes it */
    int64_t *ids;       /* the ids from there to the end of the pass, malloc'ed */
    uint64_t n;
    bool ended; /* the pass ran to its end (an end event) */
} rest;

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* rest_of fills r from position pos of p's stream s; false when pos is past
 * its end, a batch event cannot be found, or out of memory. */
static bool rest_of(const tpd_proc *p, const tpd_stream *s, uint64_t pos, rest *r)
{
    size_t k = 0;
    memset(r, 0, sizeof *r);
    while (k < s->n && !(pos >= s->v[k].off && pos < s->v[k].off + s->v[k].n)) k++;
    if (k == s->n || (r->b = batch_of(p, s->v[k].seq)) == NULL) return false;
    if (r->b->strs != NULL && pos - s->v[k].off < r->b->n)
        snprintf(r->id, sizeof r->id, "\"%s\"", r->b->strs[pos - s->v[k].off]);
    else
        snprintf(r->id, sizeof r->id, "%lld", (long long)s->v[k].ids[pos - s->v[k].off]);
    if ((r->ids = malloc(sizeof *r->ids * (s->len - pos))) == NULL) return false;
    for (size_t i = k; i < s->n; i++) {
        const tpd_batch *o = batch_of(p, s->v[i].seq);
        if (o == NULL || o->loader != r->b->loader || o->epoch != r->b->epoch) break;
        for (uint32_t j = i == k ? (uint32_t)(pos - s->v[k].off) : 0; j < s->v[i].n; j++)
            r->ids[r->n++] = s->v[i].ids[j];
    }
    qsort(r->ids, r->n, sizeof *r->ids, cmp_id);
    for (size_t i = 0; i < p->nbatches && !r->ended; i++)
        r->ended = p->batches[i].end && p->batches[i].loader == r->b->loader &&
                   p->batches[i].epoch == r->b->epoch;
    return true;
}

void tpd_resume_explain_data(tpd_rctx *x)
{
    tpd_stream sa = {0}, sr = {0};
    rest a = {0}, r = {0};
    unsigned long long pa = x->sra.pos_a, pr = x->sra.pos_b;
    bool ok = tpd_stream_build(x->pa, &sa) == TP_OK && tpd_stream_build(x->pr, &sr) == TP_OK &&
              rest_of(x->pa, &sa, x->sra.pos_a, &a) && rest_of(x->pr, &sr, x->sra.pos_b, &r);
    if (!ok)
        tpd_why_add(&x->why, "data_position",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu): R did not go on with the samples A trained on (a loader "
                    "that restarted its epoch or skipped too many or too few batches, or a "
                    "shuffle that was not restored?)",
                    pa, pr);
    else if (!a.ended || !r.ended)
        tpd_why_add(&x->why, "data_position",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu: id %s where A took %s): R did not go on with the samples "
                    "A trained on (a loader that restarted its epoch or skipped too many or too "
                    "few batches, or a shuffle that was not restored?); %s, so the samples left "
                    "in it cannot tell which",
                    pa, pr, r.id, a.id,
                    !a.ended && !r.ended ? "neither run ran to the end of its epoch"
                    : !a.ended           ? "A did not run to the end of its epoch"
                                         : "R did not run to the end of its epoch");
    else if (a.n != r.n)
        tpd_why_add(&x->why, "data_position",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu: id %s where A took %s): from there R had %llu samples "
                    "left in the epoch where A had %llu, so the data pipeline did not resume "
                    "where it was (%s)",
                    pa, pr, r.id, a.id, (unsigned long long)r.n, (unsigned long long)a.n,
                    r.n > a.n ? "did the loader restart its epoch, or skip too few batches?"
                              : "did the loader skip too many batches?");
    else
        tpd_why_add(&x->why, "data_order",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu: id %s where A took %s): from there both had %llu "
                    "samples left in the epoch, so R resumed at A's place, and took %s: the "
                    "epoch's order differs (was the shuffle's generator, or the RNG it draws "
                    "from, restored?)",
                    pa, pr, r.id, a.id, (unsigned long long)a.n,
                    memcmp(a.ids, r.ids, sizeof *a.ids * a.n) == 0
                        ? "the same samples in another order"
                        : "other samples");
    free(a.ids);
    free(r.ids);
    tpd_stream_free(&sa);
    tpd_stream_free(&sr);
}
