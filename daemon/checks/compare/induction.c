/* SPDX-License-Identifier: MIT
 * induction.c -- the compare verdict under the induction mode
 * (docs/induction.md): C and D digest the model's tensors and the
 * optimizer's state at boundaries only (the first step, after a save, a
 * load or a restore, every Kth step, the end), every per-step input at
 * every step; the golden run G digested everything.  A divergence found
 * after a light step may have begun unseen at that step, so the verdict
 * then asks for C (and D, when it is C and D that differ) to be rerun with
 * every tensor digested over those steps, as C2 (D2), which stand in for
 * the first ones (verdict.c). */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/base/json.h"
#include "daemon/checks/compare/ctx.h"
#include "daemon/checks/compare/verdict.h"
#include "daemon/checks/narrow.h"

typedef tpd_gctx ctx;

/* ask widens the narrowing x asks for to the steps lo to hi, of D too when
 * d_too; once the reruns ran, what is still light stays unseen. */
static void ask(ctx *x, int64_t lo, int64_t hi, bool d_too)
{
    if (x->pc0 != NULL) {
        if (!x->unseen || lo < x->unseen_from) x->unseen_from = lo;
        if (!x->unseen || hi > x->unseen_to) x->unseen_to = hi;
        x->unseen = true;
        return;
    }
    if (!x->narrow || lo < x->narrow_from) x->narrow_from = lo;
    if (!x->narrow || hi > x->narrow_to) x->narrow_to = hi;
    x->narrow = true;
    x->narrow_d |= d_too;
}

void tpd_compare_locate(ctx *x, const tpd_gpair *p, bool d_too)
{
    const tpd_div *d = tpd_golden_first(p);
    int64_t lo;
    if (d != NULL && tpd_light_between(&p->a->timeline, 0, &p->b->timeline, 0, 0, d->step_a, &lo))
        ask(x, lo, d->step_a, d_too);
}

void tpd_compare_anchor(ctx *x, const tpd_gpair *p, bool d_too)
{
    int64_t end = p->a->steps < p->b->steps ? p->a->steps : p->b->steps, lo;
    int64_t last = tpd_last_state(&p->a->timeline, 0, &p->b->timeline, 0, end);
    if (!d_too) {
        x->state_last = last;
        x->state_end = end;
    }
    /* the state after the last step, with the objects gone by the exit, is
     * seen by neither mode */
    if (last >= 0 && last < end - 1 &&
        tpd_light_between(&p->a->timeline, 0, &p->b->timeline, 0, last + 1, end - 1, &lo))
        ask(x, lo, end - 1, d_too);
}

int64_t *tpd_golden_drop(const tpd_run *r, size_t *n)
{
    const tpd_exec *ce = tpd_obs_exec(r, "C"), *c2e = tpd_obs_exec(r, "C2");
    const tpd_proc *c = ce ? tpd_obs_trainer(ce) : NULL, *c2 = c2e ? tpd_obs_trainer(c2e) : NULL;
    int64_t *v;
    *n = 0;
    if (c == NULL || c->timeline.nlight == 0 || (c2e != NULL && c2 == NULL)) return NULL;
    if ((v = malloc(c->timeline.nlight * sizeof *v)) == NULL) return NULL;
    for (size_t i = 0; i < c->timeline.nlight; i++) {
        int64_t s = c->timeline.light[i];
        if (c2 == NULL || tpd_light(&c2->timeline, s)) v[(*n)++] = s;
    }
    return v;
}

static bool induced(const ctx *x)
{
    if (x->pc == NULL) return false;
    return x->pc->timeline.nlight || (x->pd && x->pd->timeline.nlight) || x->pc0 != NULL ||
           (x->pg && x->pg->timeline.nlight);
}

/* narrowed finds the steps the reruns digested whole where C (or D) had
 * been light. */
static bool narrowed(const ctx *x, int64_t *lo, int64_t *hi)
{
    int64_t l, h;
    bool any = x->pc0 != NULL && tpd_rerun_window(x->pc0, x->pc, lo, hi);
    if (x->pd0 != NULL && tpd_rerun_window(x->pd0, x->pd, &l, &h)) {
        if (!any || l < *lo) *lo = l;
        if (!any || h > *hi) *hi = h;
        any = true;
    }
    return any;
}

static bool state_short(const ctx *x)
{
    return x->state_last >= 0 && x->state_last < x->state_end - 1;
}

void tpd_compare_induction_text(ctx *x)
{
    int64_t fc, nc, fd, nd, fg, ng, lo = 0, hi = 0;
    if (!induced(x)) return;
    tpd_full_counts(x->pc, &fc, &nc);
    tpd_str_printf(&x->head,
                   "  digests     induction: the model and optimizer state at boundaries (C at "
                   "%lld of %lld steps",
                   (long long)fc, (long long)nc);
    if (x->pd != NULL) {
        tpd_full_counts(x->pd, &fd, &nd);
        tpd_str_printf(&x->head, ", D at %lld of %lld", (long long)fd, (long long)nd);
    }
    tpd_str_puts(&x->head, "), the inputs of every step; ");
    if (x->pg && x->pg->timeline.nlight) {
        /* a golden run recorded with TRAINPARITY_DIGEST=induction set */
        tpd_full_counts(x->pg, &fg, &ng);
        tpd_str_printf(&x->head,
                       "G at %lld of %lld steps (recorded in the induction mode: where G was "
                       "light, no rerun of C can show the state)\n",
                       (long long)fg, (long long)ng);
    } else {
        tpd_str_puts(&x->head, "G every tensor at every step\n");
    }
    if (narrowed(x, &lo, &hi)) {
        tpd_narrowed_text(&x->head, x->pd0 != NULL ? "C2, D2" : "C2", lo, hi, "");
    }
    tpd_unseen_text(&x->head, state_short(x) ? x->state_last : -1, x->unseen, x->unseen_from,
                    x->unseen_to);
}

json_t *tpd_compare_induction_json(const ctx *x)
{
    int64_t fc, nc, fd = 0, nd = 0, lo = 0, hi = 0;
    json_t *o, *nw = json_null(), *unseen = json_null();
    bool bad;
    if (!induced(x)) return json_null();
    tpd_full_counts(x->pc, &fc, &nc);
    if (x->pd != NULL) tpd_full_counts(x->pd, &fd, &nd);
    if (narrowed(x, &lo, &hi)) {
        json_t *roles = json_array();
        bool rb = !tpd_jpush(roles, json_string("C2"));
        if (x->pd0 != NULL) rb |= !tpd_jpush(roles, json_string("D2"));
        nw = json_pack("{s:I, s:I, s:o}", "from", (json_int_t)lo, "to", (json_int_t)hi, "reruns",
                       tpd_jdone(roles, rb));
    }
    if (x->unseen)
        unseen = json_pack("{s:I, s:I}", "from", (json_int_t)x->unseen_from, "to",
                           (json_int_t)x->unseen_to);
    o = json_pack("{s:{s:I, s:I}}", "C", "full_steps", (json_int_t)fc, "steps", (json_int_t)nc);
    bad = !tpd_jset(o, "D",
                    x->pd != NULL ? json_pack("{s:I, s:I}", "full_steps", (json_int_t)fd, "steps",
                                              (json_int_t)nd)
                                  : json_null());
    bad |= !tpd_jset(o, "narrowed", nw);
    bad |= !tpd_jset(o, "unseen", unseen);
    bad |= !tpd_jset(o, "state_last", state_short(x) ? json_integer(x->state_last) : json_null());
    return tpd_jdone(o, bad);
}
