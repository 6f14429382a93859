/* SPDX-License-Identifier: MIT
 * induction.c -- the resume verdict under the induction mode
 * (docs/induction.md): A, B and I digest the model's tensors and the
 * optimizer's state at boundaries only (their first step, after a save, a
 * load or a restore, every Kth step, the end), every per-step input at
 * every step; R digests everything.  A divergence found after a light step
 * may have begun unseen at that step, so the verdict then asks for the
 * baselines to be rerun with every tensor digested over those steps (A2,
 * B2), and the rerun stands in for them (verdict.c). */
#include <string.h>

#include "daemon/base/json.h"
#include "daemon/checks/resume/ctx.h"

typedef tpd_rctx ctx;

void tpd_resume_locate(ctx *x, const tpd_cmp_result *cmp, int64_t a0, const tpd_items *other,
                       int64_t b0, bool vs_b)
{
    const tpd_div *d = cmp->first.found ? &cmp->first : &cmp->first_unsure;
    int64_t lo;
    if (!d->found || !tpd_light_between(&x->pa->timeline, a0, other, b0, a0, d->step_a, &lo))
        return;
    if (strcmp(x->A->role, "A2") == 0) { /* the reruns ran: what is still light stays unseen */
        x->unseen = true;
        x->unseen_from = lo;
        x->unseen_to = d->step_a;
        return;
    }
    x->narrow = true;
    x->narrow_b = vs_b;
    x->narrow_from = lo;
    x->narrow_to = d->step_a;
}

/* counts gives how many of p's steps had a full start-of-step snapshot, of all. */
static void counts(const tpd_proc *p, int64_t *full, int64_t *all)
{
    *all = p->steps;
    *full = p->steps - (int64_t)p->timeline.nlight;
    if (*full < 0) *full = 0;
}

/* rerun_window finds the steps the rerun r digested whole where the first
 * run f had been light: [*lo, *hi]; false when there are none. */
static bool rerun_window(const tpd_proc *f, const tpd_proc *r, int64_t *lo, int64_t *hi)
{
    bool any = false;
    for (size_t i = 0; i < f->timeline.nlight; i++) {
        int64_t s = f->timeline.light[i];
        if (tpd_light(&r->timeline, s)) continue;
        if (!any) *lo = s;
        *hi = s;
        any = true;
    }
    return any;
}

static bool induced(const ctx *x)
{
    if (x->pa == NULL || x->pb == NULL) return false;
    return x->pa->timeline.nlight || x->pb->timeline.nlight || x->pa0 != NULL || x->pb0 != NULL;
}

void tpd_resume_induction_text(ctx *x)
{
    int64_t fa, na, fb, nb, lo = 0, hi = 0;
    if (!induced(x)) return;
    counts(x->pa, &fa, &na);
    counts(x->pb, &fb, &nb);
    tpd_str_printf(
        &x->head,
        "  digests     induction: the model and optimizer state at boundaries (A at %lld "
        "of %lld steps, B at %lld of %lld), the inputs of every step; R every tensor at "
        "every step\n",
        (long long)fa, (long long)na, (long long)fb, (long long)nb);
    if (x->pa0 != NULL && rerun_window(x->pa0, x->pa, &lo, &hi)) {
        tpd_str_printf(&x->head, "  narrowed    A%s rerun with every tensor digested at ",
                       x->pb0 != NULL ? " and B" : "");
        if (lo == hi)
            tpd_str_printf(&x->head, "step %lld", (long long)lo);
        else
            tpd_str_printf(&x->head, "steps %lld to %lld", (long long)lo, (long long)hi);
        tpd_str_puts(&x->head, ", where the state could have diverged unseen\n");
    }
    if (x->unseen)
        tpd_str_printf(&x->head,
                       "  unseen      the rerun was still light from step %lld to %lld: the state "
                       "may have diverged there before the first divergence below\n",
                       (long long)x->unseen_from, (long long)x->unseen_to);
}

json_t *tpd_resume_induction_json(const ctx *x)
{
    int64_t fa, na, fb, nb, lo = 0, hi = 0;
    json_t *o, *narrowed = json_null(), *unseen = json_null();
    bool bad;
    if (!induced(x)) return json_null();
    counts(x->pa, &fa, &na);
    counts(x->pb, &fb, &nb);
    if (x->pa0 != NULL && rerun_window(x->pa0, x->pa, &lo, &hi)) {
        narrowed = json_pack("{s:I, s:I, s:[s]}", "from", (json_int_t)lo, "to", (json_int_t)hi,
                             "reruns", "A2");
        if (narrowed != NULL && x->pb0 != NULL)
            json_array_append_new(json_object_get(narrowed, "reruns"), json_string("B2"));
    }
    if (x->unseen)
        unseen = json_pack("{s:I, s:I}", "from", (json_int_t)x->unseen_from, "to",
                           (json_int_t)x->unseen_to);
    o = json_pack("{s:{s:I, s:I}, s:{s:I, s:I}}", "A", "full_steps", (json_int_t)fa, "steps",
                  (json_int_t)na, "B", "full_steps", (json_int_t)fb, "steps", (json_int_t)nb);
    bad = !tpd_jset(o, "narrowed", narrowed);
    bad |= !tpd_jset(o, "unseen", unseen);
    return tpd_jdone(o, bad);
}
