/* SPDX-License-Identifier: MIT
 * ctx.h -- what the accumulation verdict's parts share: the judging
 * context of one run (verdict.c: preconditions, initial states;
 * report.c: the report) and the phases of one update that decide
 * "first" (phases.c).  Internal to the accumulation verdict. */
#ifndef TP_DAEMON_CHECKS_ACCUM_CTX_H
#define TP_DAEMON_CHECKS_ACCUM_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/checks/accum/windows.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

typedef struct tpd_actx {
    const tpd_run *run;
    tpd_cmp_opts o;
    int64_t N, U;
    const tpd_exec *F, *M;
    const tpd_proc *pf, *pm;
    tpd_awins wf, wm;
    tpd_arena *a;
    bool found, unsure;
    bool explained; /* the divergence's cause does not depend on random draws:
                     * call counts, an exact factor, a carry-over, or equal
                     * gradients feeding different updates */
    int64_t update;
    char path[256];
    tpd_str vm, vf; /* the two values at the first divergence, text */
    tpd_str head;   /* lines under the outcome */
    tpd_why why;    /* the explanation */
    /* the initial states at the first backward, as compared: tensors and
     * values per group, those that differ, those not compared */
    bool judged_init; /* the initial states were compared */
    int64_t init_cmp[TPD_G__COUNT], init_diff, init_skipped;
    tpd_str init_rngs;    /* RNGs seeded alike but drawn in pieces, "a, b" */
    json_t *init_rngj;    /* the same, a JSON array of strings */
    json_t *init_differ;  /* the paths that differ, a JSON array of strings */
    bool disable_dropout; /* declared: --disable-dropout */
    bool oom;
} tpd_actx;

/* tpd_actx_finish writes the report of outcome oc into *out (report.c).
 * Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_actx_finish(tpd_actx *x, tpd_outcome oc, tpd_result *out);

/* tpd_actx_why adds a line to the explanation (text and JSON). */
void tpd_actx_why(tpd_actx *x, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tpd_actx_items_at: [*lo, *hi) are p's timeline items of step s. */
void tpd_actx_items_at(const tpd_proc *p, int64_t s, size_t *lo, size_t *hi);
/* tpd_actx_find_at is p's item at step s with the given path, or NULL. */
const tpd_item *tpd_actx_find_at(const tpd_proc *p, int64_t s, const char *path);

/* The phases of update u, in the order that decides "first".  Each returns
 * true when the update differs there, having recorded the divergence and
 * what the evidence says of its cause (x->explained when that cause cannot
 * come from random draws). */
bool tpd_actx_phase_steps(tpd_actx *x, int64_t u);
bool tpd_actx_phase_loss(tpd_actx *x, int64_t u);
bool tpd_actx_phase_grad(tpd_actx *x, int64_t u);
bool tpd_actx_phase_state(tpd_actx *x, int64_t u);
bool tpd_actx_phase_model(tpd_actx *x, int64_t u);
bool tpd_actx_phase_sched(tpd_actx *x, int64_t u);

#endif
