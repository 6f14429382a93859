/* SPDX-License-Identifier: MIT
 * evidence.c -- the coverage evidence file (trainparity-run coverage
 * --evidence): every observation of the audited window, one JSON line per
 * ID (verdict.h, tpd_coverage_evidence). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/coverage/ctx.h"
#include "daemon/checks/coverage/verdict.h"

typedef tpd_cctx ctx;

typedef struct occ {
    int64_t id;
    size_t seq; /* (epoch, rank, position, item) order: the tie-break */
    uint32_t epoch, pos, item;
    int64_t rank;
    const tpd_batch *b;
} occ;

static int cmp_occ(const void *p, const void *q)
{
    const occ *a = p, *b = q;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* occs_of collects every observation of the window, epoch-major. */
static occ *occs_of(ctx *x, size_t *n)
{
    size_t total = 0, k = 0;
    occ *v;
    for (int64_t r = 0; r < x->world; r++)
        for (size_t i = 0; i < x->ranks[r].nb; i++) {
            const tpd_batch *b = &x->ranks[r].batches[i];
            if (tpd_cctx_of_loader(x, b) && !b->end && b->has_ids && b->epoch < (uint64_t)x->window)
                total += b->n;
        }
    if ((v = malloc(sizeof *v * (total ? total : 1))) == NULL) return NULL;
    for (int64_t ep = 0; ep < x->window; ep++)
        for (int64_t r = 0; r < x->world; r++)
            for (size_t i = 0; i < x->ranks[r].nb; i++) {
                const tpd_batch *b = &x->ranks[r].batches[i];
                if (!tpd_cctx_of_loader(x, b) || b->end || !b->has_ids || b->epoch != (uint64_t)ep)
                    continue;
                for (uint32_t j = 0; j < b->n; j++, k++)
                    v[k] = (occ){b->ids[j], k, b->epoch, b->pos, j, r, b};
            }
    qsort(v, total, sizeof *v, cmp_occ);
    *n = total;
    return v;
}

/* id_line writes ID id's line with its observations v[0..n-1]; false when
 * out of memory. */
static bool id_line(const ctx *x, tpd_str *s, int64_t id, const occ *v, size_t n)
{
    json_t *o = json_object(), *a = json_array();
    char *line;
    bool bad = a == NULL;
    bad |= !tpd_jset(o, "id", tpd_cctx_id_json(x, id));
    for (size_t i = 0; i < n; i++)
        bad |= !tpd_jpush(
            a, json_pack("{s:I, s:I, s:I, s:I, s:o}", "epoch", (json_int_t)v[i].epoch, "rank",
                         (json_int_t)v[i].rank, "position", (json_int_t)v[i].pos, "item",
                         (json_int_t)v[i].item, "worker",
                         v[i].b->has_worker ? tpd_json_int(v[i].b->worker) : json_null()));
    bad |= !tpd_jset(o, "occurrences", a);
    if ((line = tpd_json_dump(tpd_jdone(o, bad))) == NULL) return false;
    tpd_str_puts(s, line);
    free(line);
    return true;
}

/* next_listed steps *it through a listed universe in ascending order; false
 * at its end. */
static bool next_listed(const ctx *x, size_t *range, int64_t *id, bool *started)
{
    if (!x->u.known || x->strs != NULL) return false;
    if (x->u.ranges == NULL) {
        if (!*started) *id = -1;
        *started = true;
        return ++*id < x->u.n;
    }
    if (!*started) {
        *started = true;
        if (x->u.nranges == 0) return false;
        *id = x->u.ranges[0].lo;
        return true;
    }
    if (*id < x->u.ranges[*range].hi) return ++*id, true;
    if (++*range >= x->u.nranges) return false;
    *id = x->u.ranges[*range].lo;
    return true;
}

tp_err tpd_coverage_evidence(const tpd_run *r, char **out, char *why, size_t whylen)
{
    tpd_result res;
    tpd_str s = {0};
    ctx x;
    occ *v = NULL;
    size_t n = 0, i = 0, range = 0;
    int64_t u = 0;
    bool more, started = false;
    tp_err rc = TP_OK;
    memset(&x, 0, sizeof x);
    memset(&res, 0, sizeof res);
    if ((x.a = tpd_arena_create()) == NULL) return TP_ENOMEM;
    if (!tpd_cctx_prepare(&x, r, &res, &rc)) {
        const char *line = res.text ? strchr(res.text, '\n') : NULL;
        if (rc == TP_OK) {
            rc = TP_EINVAL;
            snprintf(why, whylen, "the run's IDs cannot be audited (%s):%.*s",
                     tpd_outcome_name(res.outcome), line ? (int)strcspn(line + 1, "\n") : 0,
                     line ? line + 1 : "");
        } else {
            snprintf(why, whylen, "%s", tp_strerror(rc));
        }
        goto done;
    }
    if ((v = occs_of(&x, &n)) == NULL) {
        rc = TP_ENOMEM;
        snprintf(why, whylen, "%s", tp_strerror(rc));
        goto done;
    }
    /* integer IDs ascending, every ID of a listed universe among them (none
     * observed: no occurrences); string IDs in the order first observed */
    more = next_listed(&x, &range, &u, &started);
    while (i < n || more) {
        size_t k = i;
        int64_t id = i < n ? v[i].id : u;
        if (more && (i >= n || u < id)) id = u;
        while (k < n && v[k].id == id) k++;
        if (!id_line(&x, &s, id, v + i, k - i)) {
            rc = TP_ENOMEM;
            snprintf(why, whylen, "%s", tp_strerror(rc));
            goto done;
        }
        i = k;
        while (more && u <= id) more = next_listed(&x, &range, &u, &started);
    }
    if ((*out = tpd_str_steal(&s)) == NULL) rc = TP_ENOMEM;
done:
    free(v);
    tpd_str_free(&s);
    tpd_result_clear(&res);
    tpd_cctx_free(&x);
    return rc;
}
