/* SPDX-License-Identifier: MIT
 * moved.c -- whether a step the agent did not measure (health --every N:
 * no update norm, no `changed`) moved its optimizer's parameters, from the
 * snapshots around it: the agent snapshots the model at the start of every
 * step (the first backward), which record takes too, so this costs the run
 * nothing.  The step's optimizer's tensors are those of its cover event,
 * named as the snapshot names them.  A step moved nothing when every one of
 * them the two snapshots hold has one digest in both: the snapshot at the
 * step's start (or the last before it, for a step with no backward of its
 * own) and the next one after it (the next step's, or the one at exit).
 * Something else that changes them in between (an EMA, a manual edit)
 * counts as a move, and so does a tensor whose two digests cannot be
 * compared (of different kinds, or one not made): this errs toward no
 * failure. */
#include <string.h>

#include "daemon/checks/health/ctx.h"

/* model_steps: the steps whose start-of-step (or exit) snapshot holds
 * model tensors, ascending, once each; *n of them.  NULL when none. */
static int64_t *model_steps(tpd_hctx *x, size_t *n)
{
    int64_t *v;
    size_t k = 0;
    *n = 0;
    for (size_t i = 0; i < x->p->timeline.n; i++) k += x->p->timeline.v[i].group == TPD_G_MODEL;
    if (k == 0) return NULL;
    if ((v = tpd_arena_alloc(x->a, sizeof *v * k)) == NULL) {
        x->oom = true;
        return NULL;
    }
    for (size_t i = 0; i < x->p->timeline.n; i++) {
        const tpd_item *it = &x->p->timeline.v[i];
        if (it->group == TPD_G_MODEL && (*n == 0 || v[*n - 1] != it->step)) v[(*n)++] = it->step;
    }
    return v;
}

/* around finds, in steps v[0..n), the last at or before s (*lo) and the
 * first after it (*hi); false when either is missing. */
static bool around(const int64_t *v, size_t n, int64_t s, int64_t *lo, int64_t *hi)
{
    size_t a = 0, b = n;
    while (a < b) { /* the first step > s */
        size_t mid = a + (b - a) / 2;
        if (v[mid] <= s)
            a = mid + 1;
        else
            b = mid;
    }
    if (a == 0 || a == n) return false;
    *lo = v[a - 1];
    *hi = v[a];
    return true;
}

void tpd_health_moved(tpd_hctx *x)
{
    size_t nsteps;
    int64_t *steps;
    if (x->p == NULL) return;
    steps = model_steps(x, &nsteps);
    for (size_t i = 0; steps != NULL && i < x->nrows; i++) {
        tpd_hrow *w = &x->rows[i];
        const tpd_cover *c;
        tpd_hspan a, b;
        int64_t lo, hi;
        size_t compared = 0;
        bool changed = false;
        if (!w->has_post || w->has_changed || w->scaler_skipped) continue;
        if ((c = tpd_health_cover_at(x, w->opt, w->pre_seq)) == NULL) continue;
        if (!around(steps, nsteps, w->step, &lo, &hi)) continue;
        a = tpd_hspan_of(&x->p->timeline, lo, TPD_G_MODEL);
        b = tpd_hspan_of(&x->p->timeline, hi, TPD_G_MODEL);
        for (uint32_t j = 0; j < c->nparams && !changed; j++) {
            const tpd_item *p = tpd_hspan_find(a, j, c->params[j].name);
            const tpd_item *q = tpd_hspan_find(b, j, c->params[j].name);
            if (p == NULL || q == NULL || p->v.kind != 't' || q->v.kind != 't') continue;
            compared++;
            changed = !tpd_digests_comparable(&p->v, &q->v) ||
                      memcmp(p->v.digest, q->v.digest, TP_DIGEST_LEN) != 0;
        }
        if (compared == 0) continue;
        w->has_changed = true;
        w->changed = changed;
        w->changed_by_snaps = true;
        w->snap_before = lo;
        w->snap_after = hi;
    }
}
