/* SPDX-License-Identifier: MIT
 * narrow.c -- what the induction-mode verdicts share (see narrow.h). */
#include <stdlib.h>

#include "daemon/checks/narrow.h"

const tpd_exec *tpd_standing(const tpd_run *r, const char *role, const char *rerun,
                             const tpd_proc **first)
{
    const tpd_exec *e = tpd_obs_exec(r, rerun), *f = tpd_obs_exec(r, role);
    if (e == NULL) return f;
    if (first != NULL && f != NULL) *first = tpd_obs_trainer(f);
    return e;
}

void tpd_full_counts(const tpd_proc *p, int64_t *full, int64_t *all)
{
    *all = p->steps;
    *full = p->steps - (int64_t)p->timeline.nlight;
    if (*full < 0) *full = 0;
}

int64_t tpd_last_state(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0, int64_t end)
{
    size_t na, nb;
    int64_t *sa = tpd_state_steps(a, 0, &na), *sb = tpd_state_steps(b, 0, &nb), last = -1;
    for (size_t i = na; sa && sb && i-- > 0 && last < 0;) {
        int64_t s = sa[i], t = s - a0 + b0;
        if (s >= a0 && s <= end && bsearch(&t, sb, nb, sizeof *sb, tpd_step_cmp)) last = s;
    }
    free(sa);
    free(sb);
    return last;
}

void tpd_narrowed_text(tpd_str *t, const char *reruns, int64_t lo, int64_t hi,
                       const char *numbering)
{
    tpd_str_printf(t, "  narrowed    %s rerun with every tensor digested at ", reruns);
    if (lo == hi)
        tpd_str_printf(t, "step %lld", (long long)lo);
    else
        tpd_str_printf(t, "steps %lld to %lld", (long long)lo, (long long)hi);
    tpd_str_printf(t, "%s, where the state could have diverged unseen\n", numbering);
}

void tpd_unseen_text(tpd_str *t, int64_t last, bool unseen, int64_t from, int64_t to)
{
    if (last >= 0)
        tpd_str_printf(t,
                       "  state       last compared at step %lld: after it the model and "
                       "optimizer were not digested on both sides (no save after the last step, "
                       "and gone by the exit)\n",
                       (long long)last);
    if (unseen)
        tpd_str_printf(t,
                       "  unseen      the rerun was still light from step %lld to %lld: the state "
                       "may have diverged there before the first divergence below\n",
                       (long long)from, (long long)to);
}

bool tpd_rerun_window(const tpd_proc *f, const tpd_proc *r, int64_t *lo, int64_t *hi)
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
