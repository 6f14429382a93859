/* SPDX-License-Identifier: MIT
 * induction.c -- the resume verdict under the induction mode
 * (docs/induction.md): every execution digests the model's tensors and
 * the optimizer's state at boundaries only (its first step, after a save, a
 * load or a restore, every Kth step, the end), every per-step input at
 * every step.  A divergence found after a light step may have begun unseen
 * at that step, so the verdict then asks for reruns with every tensor
 * digested over those steps: A2 (B2 when the baselines differed; I2 and R2
 * when R was light there), which stand in for the first ones (verdict.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/json.h"
#include "daemon/checks/narrow.h"
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
    /* R's own steps of that window, when R was light in it */
    if (!vs_b && tpd_light_between(other, b0, other, b0, lo - a0 + b0, d->step_b, &lo)) {
        x->narrow_r = true;
        x->narrow_r_from = x->narrow_from - a0 + b0;
        x->narrow_r_to = d->step_b;
    }
}

void tpd_resume_anchors(ctx *x)
{
    x->state_end = x->c + (x->na < x->nr ? x->na : x->nr);
    x->state_last = -1;
    /* the state R had after its load is compared with A's at the save:
     * A's step there must have digested it */
    if (tpd_light(&x->pa->timeline, x->c) && strcmp(x->A->role, "A2") != 0) {
        x->narrow = true;
        x->narrow_from = x->narrow_to = x->c;
        return;
    }
    x->state_last = tpd_last_state(&x->pa->timeline, x->c, &x->pr->timeline, x->r0, x->state_end);
    /* steps after the last comparison of the state, before the end, were
     * light: a divergence of the state alone there would be unseen, where
     * digesting every step would have seen it, so they are narrowed too
     * (the state after the last step, with the objects gone, is seen by
     * neither) */
    if (x->state_last >= 0 && x->state_last < x->state_end - 1 && strcmp(x->A->role, "A2") != 0) {
        int64_t lo;
        x->narrow = true;
        x->narrow_from = x->state_last + 1;
        x->narrow_to = x->state_end - 1;
        if (tpd_light_between(&x->pr->timeline, x->r0, &x->pr->timeline, x->r0,
                              x->narrow_from - x->c + x->r0, x->narrow_to - x->c + x->r0, &lo)) {
            x->narrow_r = true;
            x->narrow_r_from = x->narrow_from - x->c + x->r0;
            x->narrow_r_to = x->narrow_to - x->c + x->r0;
        }
    }
}

static bool induced(const ctx *x)
{
    if (x->pa == NULL || (x->pb == NULL && !x->once) || x->pr == NULL) return false;
    return x->pa->timeline.nlight || (x->pb && x->pb->timeline.nlight) || x->pr->timeline.nlight ||
           x->pa0 != NULL || x->pb0 != NULL || x->pr0 != NULL;
}

/* reruns is the rerun executions' roles, "A2, I2, R2" or the like. */
static const char *reruns(const ctx *x, char *buf, size_t n)
{
    snprintf(buf, n, "A2%s%s", x->pb0 ? ", B2" : "", x->pr0 ? ", I2, R2" : "");
    return buf;
}

void tpd_resume_induction_text(ctx *x)
{
    int64_t fa, na, fb, nb, fr, nr, lo = 0, hi = 0;
    char roles[32];
    if (!induced(x)) return;
    tpd_full_counts(x->pa, &fa, &na);
    tpd_full_counts(x->pr, &fr, &nr);
    tpd_str_printf(
        &x->head,
        "  digests     induction: the model and optimizer state at boundaries (A at %lld "
        "of %lld steps",
        (long long)fa, (long long)na);
    if (x->pb != NULL) {
        tpd_full_counts(x->pb, &fb, &nb);
        tpd_str_printf(&x->head, ", B at %lld of %lld", (long long)fb, (long long)nb);
    }
    tpd_str_printf(&x->head, ", R at %lld of %lld), the inputs of every step\n", (long long)fr,
                   (long long)nr);
    if (x->pa0 != NULL && tpd_rerun_window(x->pa0, x->pa, &lo, &hi))
        tpd_narrowed_text(&x->head, reruns(x, roles, sizeof roles), lo, hi, " (A's numbering)");
    tpd_unseen_text(&x->head,
                    x->state_last >= 0 && x->state_last < x->state_end - 1 ? x->state_last : -1,
                    x->unseen, x->unseen_from, x->unseen_to);
}

json_t *tpd_resume_induction_json(const ctx *x)
{
    int64_t fa, na, fb = 0, nb = 0, fr, nr, lo = 0, hi = 0;
    json_t *o, *narrowed = json_null(), *unseen = json_null();
    bool bad;
    if (!induced(x)) return json_null();
    tpd_full_counts(x->pa, &fa, &na);
    if (x->pb != NULL) tpd_full_counts(x->pb, &fb, &nb);
    tpd_full_counts(x->pr, &fr, &nr);
    if (x->pa0 != NULL && tpd_rerun_window(x->pa0, x->pa, &lo, &hi)) {
        json_t *roles = json_array();
        bool rb = !tpd_jpush(roles, json_string("A2"));
        if (x->pb0 != NULL) rb |= !tpd_jpush(roles, json_string("B2"));
        if (x->pr0 != NULL) {
            rb |= !tpd_jpush(roles, json_string("I2"));
            rb |= !tpd_jpush(roles, json_string("R2"));
        }
        narrowed = json_pack("{s:I, s:I, s:o}", "from", (json_int_t)lo, "to", (json_int_t)hi,
                             "reruns", tpd_jdone(roles, rb));
    }
    if (x->unseen)
        unseen = json_pack("{s:I, s:I}", "from", (json_int_t)x->unseen_from, "to",
                           (json_int_t)x->unseen_to);
    o = json_pack("{s:{s:I, s:I}, s:o, s:{s:I, s:I}}", "A", "full_steps", (json_int_t)fa, "steps",
                  (json_int_t)na, "B",
                  x->pb != NULL ? json_pack("{s:I, s:I}", "full_steps", (json_int_t)fb, "steps",
                                            (json_int_t)nb)
                                : json_null(),
                  "R", "full_steps", (json_int_t)fr, "steps", (json_int_t)nr);
    bad = !tpd_jset(o, "narrowed", narrowed);
    bad |= !tpd_jset(o, "unseen", unseen);
    bad |= !tpd_jset(o, "state_last",
                     x->state_last >= 0 && x->state_last < x->state_end - 1
                         ? json_integer(x->state_last)
                         : json_null());
    return tpd_jdone(o, bad);
}
