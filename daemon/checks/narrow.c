/* SPDX-License-Identifier: MIT
 * narrow.c -- what the induction-mode verdicts share (see narrow.h). */
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
