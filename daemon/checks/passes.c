/* SPDX-License-Identifier: MIT
 * passes.c -- a process's DataLoader passes and which fed the training
 * (passes.h).
 *
 * One walk over the batch events files each into its pass (the latest
 * passes are the likely ones, so the search goes backwards), then one walk
 * over the marks, merged by seq with the batch events, credits each
 * backward to the pass of the batch event before it and tells each pass
 * whether a backward lies within it.  About linear in the events: both
 * searches look only at the passes open at once (a few). */
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/passes.h"

/* find_or_add is the index of the pass of b in ps (cap: its room), added
 * when new; -1 when out of memory. */
static ptrdiff_t find_or_add(tpd_passes *ps, size_t *cap, const tpd_batch *b)
{
    tpd_pass *q;
    for (size_t i = ps->n; i-- > 0;)
        if (ps->v[i].loader == b->loader && ps->v[i].epoch == b->epoch) return (ptrdiff_t)i;
    if (ps->n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        tpd_pass *g = realloc(ps->v, c * sizeof *g);
        if (g == NULL) return -1;
        ps->v = g;
        *cap = c;
    }
    q = &ps->v[ps->n];
    memset(q, 0, sizeof *q);
    q->loader = b->loader;
    q->epoch = b->epoch;
    q->first = b->seq;
    return (ptrdiff_t)ps->n++;
}

tp_err tpd_passes_build(const tpd_proc *p, tpd_passes *ps)
{
    size_t cap = 0, bi = 0, lo = 0;
    ptrdiff_t at = -1;    /* the pass of the last batch event before the mark */
    uint64_t *end = NULL; /* each pass's span ends here (exclusive) */
    size_t *of;           /* the pass of each batch event */
    memset(ps, 0, sizeof *ps);
    if ((of = malloc((p->nbatches ? p->nbatches : 1) * sizeof *of)) == NULL) return TP_ENOMEM;
    for (size_t i = 0; i < p->nbatches; i++) {
        const tpd_batch *b = &p->batches[i];
        ptrdiff_t k = find_or_add(ps, &cap, b);
        if (k < 0) goto nomem;
        of[i] = (size_t)k;
        ps->v[k].last = b->seq;
        ps->v[k].last_index = i;
        if (b->end)
            ps->v[k].ended = true;
        else
            ps->v[k].batches++;
    }
    if (ps->n && (end = malloc(ps->n * sizeof *end)) == NULL) goto nomem;
    for (size_t k = 0; k < ps->n; k++) {
        const tpd_pass *q = &ps->v[k];
        /* a pass left before its end runs on to the next batch event, so
         * that the backward of its last batch still falls within it */
        end[k] = q->last;
        if (!q->ended)
            end[k] =
                q->last_index + 1 < p->nbatches ? p->batches[q->last_index + 1].seq : UINT64_MAX;
    }
    for (size_t m = 0; m < p->nmarks; m++) {
        const tpd_mark *mk = &p->marks[m];
        if (mk->kind != TP_K_BACKWARD) continue;
        while (bi < p->nbatches && p->batches[bi].seq < mk->seq) at = (ptrdiff_t)of[bi++];
        if (at >= 0) {
            ps->v[at].backward++;
            ps->v[at].train = true;
        }
        /* the passes before lo are settled: trained, or over before this
         * backward (marks come in seq order); those after k began after it */
        while (lo < ps->n && (ps->v[lo].train || end[lo] <= mk->seq)) lo++;
        for (size_t k = lo; k < ps->n && ps->v[k].first < mk->seq; k++)
            if (mk->seq < end[k]) ps->v[k].train = true;
    }
    free(end);
    free(of);
    return TP_OK;
nomem:
    free(of);
    tpd_passes_free(ps);
    return TP_ENOMEM;
}

void tpd_passes_free(tpd_passes *ps)
{
    free(ps->v);
    memset(ps, 0, sizeof *ps);
}

const tpd_pass *tpd_passes_find(const tpd_passes *ps, uint32_t loader, uint32_t epoch)
{
    for (size_t i = ps->n; i-- > 0;)
        if (ps->v[i].loader == loader && ps->v[i].epoch == epoch) return &ps->v[i];
    return NULL;
}
