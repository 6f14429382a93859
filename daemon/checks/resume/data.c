/* SPDX-License-Identifier: MIT
 * data.c -- the explanation of a first divergence in the training data:
 * whether R's sample at that point is one A had already trained on earlier
 * in the same pass (the loader and epoch A's sample came from), which says
 * R repeats samples and lost its place in the epoch; or one A had not, so
 * that the place may have been right and the order not (a shuffle whose
 * generator was not restored) unless the loader skipped too far. */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/resume/ctx.h"

static const tpd_batch *batch_of(const tpd_proc *p, uint64_t seq)
{
    for (size_t i = 0; i < p->nbatches; i++)
        if (p->batches[i].seq == seq) return &p->batches[i];
    return NULL;
}

/* id_at finds the sample at position pos of p's stream s: its id (a string
 * id's key), its batch event, and the id as the report writes it (a string
 * id itself); false past the end. */
static bool id_at(const tpd_proc *p, const tpd_stream *s, uint64_t pos, int64_t *id,
                  const tpd_batch **b, char *text, size_t n)
{
    for (size_t k = 0; k < s->n; k++)
        if (pos >= s->v[k].off && pos < s->v[k].off + s->v[k].n) {
            uint64_t j = pos - s->v[k].off;
            *id = s->v[k].ids[j];
            if ((*b = batch_of(p, s->v[k].seq)) == NULL) return false;
            if ((*b)->strs != NULL && j < (*b)->n)
                snprintf(text, n, "\"%s\"", (*b)->strs[j]);
            else
                snprintf(text, n, "%lld", (long long)*id);
            return true;
        }
    return false;
}

/* earlier finds id among the samples of s before pos that came from the
 * same loader and epoch as b (A's pass at the divergence); *at its
 * position. */
static bool earlier(const tpd_proc *p, const tpd_stream *s, uint64_t pos, const tpd_batch *b,
                    int64_t id, uint64_t *at)
{
    for (size_t k = 0; k < s->n && s->v[k].off < pos; k++) {
        const tpd_batch *o = batch_of(p, s->v[k].seq);
        if (o == NULL || o->loader != b->loader || o->epoch != b->epoch) continue;
        for (uint32_t j = 0; j < s->v[k].n && s->v[k].off + j < pos; j++)
            if (s->v[k].ids[j] == id) {
                *at = s->v[k].off + j;
                return true;
            }
    }
    return false;
}

void tpd_resume_explain_data(tpd_rctx *x)
{
    tpd_stream sa = {0}, sr = {0};
    int64_t ida, idr;
    uint64_t at;
    const tpd_batch *b, *br;
    char ta[160], tr[160];
    unsigned long long pa = x->sra.pos_a, pr = x->sra.pos_b;
    if (tpd_stream_build(x->pa, &sa) != TP_OK || tpd_stream_build(x->pr, &sr) != TP_OK ||
        !id_at(x->pa, &sa, x->sra.pos_a, &ida, &b, ta, sizeof ta) ||
        !id_at(x->pr, &sr, x->sra.pos_b, &idr, &br, tr, sizeof tr)) {
        tpd_why_add(&x->why, "data_position",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu): R did not go on with the samples A trained on (a loader "
                    "that restarted its epoch or skipped too many or too few batches, or a "
                    "shuffle that was not restored?)",
                    pa, pr);
    } else if (earlier(x->pa, &sa, x->sra.pos_a, b, idr, &at)) {
        tpd_why_add(&x->why, "data_position",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu): R took sample id %s there, which A had already trained "
                    "on earlier in the same epoch (A's sample %llu), where A took id %s: R "
                    "repeats samples, so the data pipeline did not resume where it was (did the "
                    "loader restart its epoch, or skip too few batches?)",
                    pa, pr, tr, (unsigned long long)at, ta);
    } else {
        tpd_why_add(&x->why, "data_order",
                    "R's training data differs from A's at sample %llu of the training stream "
                    "(R's sample %llu): R took sample id %s there where A took id %s, and A "
                    "had not trained on id %s earlier in that epoch, so R does not repeat "
                    "what A trained: its place in the epoch may be right and the order not (a "
                    "shuffle whose generator, or the RNG it draws from, was not restored), or "
                    "the loader skipped too many batches",
                    pa, pr, tr, ta, tr);
    }
    tpd_stream_free(&sa);
    tpd_stream_free(&sr);
}
