/* SPDX-License-Identifier: MIT
 * ctx.h -- what the golden-run verdict's parts share: the judging context
 * of one compare run (verdict.c: preconditions, the comparisons, the
 * report); the comparisons themselves and the explanation of a FAIL are
 * pair.h's.  Internal to the compare verdict. */
#ifndef TP_DAEMON_CHECKS_COMPARE_CTX_H
#define TP_DAEMON_CHECKS_COMPARE_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/compare/pair.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

typedef struct tpd_gctx {
    const tpd_run *run;    /* the compare run */
    const tpd_run *golden; /* the golden run, NULL when it could not be read */
    const tpd_cmp_opts *o;
    bool once; /* D was not run (--once): determinism not checked */
    const tpd_exec *G, *C, *D;
    const tpd_proc *pg, *pc, *pd;
    tpd_gpair gc, cd; /* C against G, D against C */
    tpd_str head;     /* lines under the outcome */
    tpd_why why;      /* the explanation */
    /* induction (induction.c): the first C and D when reruns (C2, D2)
     * stand in for them; a narrowing asked for (C rerun, and D too when
     * narrow_d, with every tensor digested from narrow_from to narrow_to);
     * steps that stayed light where a divergence could have begun unseen;
     * the last step at which G's and C's state was compared before the end
     * (state_end, the step after the last both trained), -1 when none */
    const tpd_proc *pc0, *pd0;
    bool narrow, narrow_d, unseen;
    int64_t narrow_from, narrow_to, unseen_from, unseen_to, state_last, state_end;
} tpd_gctx;

/* tpd_compare_locate decides whether the first divergence of p (G-C, or
 * C-D when d_too) is where a run digesting every tensor at every step
 * would find it: when a step up to it was light on either side, the state
 * may have diverged there unseen, and x asks to narrow those steps (C
 * rerun, D too when d_too) or, when the reruns ran already, notes that
 * they stay unseen (induction.c). */
void tpd_compare_locate(tpd_gctx *x, const tpd_gpair *p, bool d_too);

/* tpd_compare_anchor checks, for a pair p that matched at every step (G-C
 * and C-D both, the only case whose outcome depends on it), that the state
 * was compared on both sides up to the end: when the steps
 * after its last comparison were light (no snapshot at the exit, the
 * objects gone), a divergence of the state alone there would be unseen,
 * and x asks to narrow them like a divergence's.  For G-C (!d_too) it
 * also keeps where the state was last compared, for the report. */
void tpd_compare_anchor(tpd_gctx *x, const tpd_gpair *p, bool d_too);

/* tpd_compare_induction_text adds the report's lines on the digest mode to
 * x->head (nothing when C and D digested every tensor at every step). */
void tpd_compare_induction_text(tpd_gctx *x);

/* tpd_compare_induction_json is the report's evidence.induction: JSON null
 * when C and D digested every tensor at every step; NULL when an
 * allocation failed. */
json_t *tpd_compare_induction_json(const tpd_gctx *x);

#endif
