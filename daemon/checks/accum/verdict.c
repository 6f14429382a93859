/* SPDX-License-Identifier: MIT
 * verdict.c -- gradient-accumulation parity: preconditions (ERROR),
 * the initial states (ABSTAIN), then update by update the phases of
 * phases.c; the report is report.c's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/checks/accum/ctx.h"
#include "daemon/checks/accum/verdict.h"
#include "daemon/checks/accum/windows.h"
#include "daemon/checks/params.h"
#include "daemon/checks/trust.h"

typedef tpd_actx ctx;

/* ---- the initial state ---- */

/* What the initial states at the first backward say.  Parameters,
 * optimizer, scheduler or scaler state that differ make the updates
 * incomparable.  An RNG alone is different: the micro-batch run draws by
 * micro-batch (torch.randint batches, a prefetch before backward), so its
 * RNG is elsewhere at the first backward even when it drew the same numbers
 * in the end; what the RNG fed shows in the losses and gradients, which the
 * phases compare anyway.  So the difference of an RNG that both runs seeded
 * alike is kept for later: when every update matches it did not matter
 * (PASS, said); when one differs for a reason random draws cannot produce
 * (call counts, an exact factor of N, a carry-over, equal gradients feeding
 * different weights) it is a FAIL; otherwise nothing tells randomness from
 * accumulation (ABSTAIN).  An RNG seeded differently is an initial state
 * that differs. */
typedef enum init_diff { INIT_SAME, INIT_RNG, INIT_STATE } init_diff;

/* same_seeding: both runs seeded the RNG at path alike before their first
 * update (the same seeds in the same order, or none at all: torch's default
 * generator starts from a fixed seed), so that they started it from the same
 * state.  A state set from elsewhere (set_rng_state) cannot be told equal. */
static bool same_seeding(const ctx *x, const char *path)
{
    size_t i = 0, j = 0;
    const tpd_proc *a = x->pf, *b = x->pm;
    for (;;) {
        while (i < a->nrestores && (a->restores[i].step != 0 || a->restores[i].obj == NULL ||
                                    strcmp(a->restores[i].obj, path) != 0))
            i++;
        while (j < b->nrestores && (b->restores[j].step != 0 || b->restores[j].obj == NULL ||
                                    strcmp(b->restores[j].obj, path) != 0))
            j++;
        if (i == a->nrestores || j == b->nrestores) return i == a->nrestores && j == b->nrestores;
        const tpd_restore *r = &a->restores[i++], *q = &b->restores[j++];
        if (!r->has_seed || !q->has_seed || r->seed != q->seed) return false;
    }
}

/* initial_differs compares the reference's model, optimizer, scheduler,
 * scaler and RNG state at the first backward with micro's, exactly, and
 * records what it compared (x->init_*) for the report. */
static init_diff initial_differs(ctx *x)
{
    tpd_cmp_opts exact = {false, 0, 0, NULL};
    tpd_eq eq;
    size_t lo, hi, k = 0, unsure = 0;
    tpd_str list = {0};
    bool rng = false;
    x->init_rngj = json_array();
    x->init_differ = json_array();
    if (x->init_rngj == NULL || x->init_differ == NULL) x->oom = true;
    tpd_actx_items_at(x->pf, 0, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *f = &x->pf->timeline.v[i], *m;
        if (f->group < TPD_G_MODEL || f->group > TPD_G_RNG) continue;
        /* the forward before the first backward updated BatchNorm's running
         * statistics from batches of different sizes: not an initial state */
        if (f->group == TPD_G_MODEL &&
            (strstr(f->path, ".running_") || strstr(f->path, ".num_batches_tracked"))) {
            x->init_skipped++;
            continue;
        }
        x->init_cmp[f->group]++;
        m = tpd_actx_find_at(x->pm, 0, f->path);
        eq = m != NULL ? tpd_val_eq(&m->v, &f->v, &exact) : TPD_DIFF;
        if (eq == TPD_SAME) continue;
        if (f->group == TPD_G_RNG && m != NULL && same_seeding(x, f->path)) {
            tpd_str_printf(&x->init_rngs, "%s%s", x->init_rngs.len ? ", " : "", f->path);
            if (!tpd_jpush(x->init_rngj, tpd_json_str(f->path))) x->oom = true;
            continue;
        }
        if (f->group == TPD_G_RNG) rng = true;
        /* exact: unsure only when the digests are of different kinds */
        if (eq == TPD_UNSURE) unsure++;
        if (k < 6)
            tpd_str_printf(&list, "%s%s%s", k ? ", " : "", f->path,
                           !m                 ? " (absent)"
                           : eq == TPD_UNSURE ? " (digests of different kinds)"
                                              : "");
        if (!tpd_jpush(x->init_differ, tpd_json_str(f->path))) x->oom = true;
        k++;
    }
    x->init_diff = (int64_t)k;
    if (k == 0) return x->init_rngs.len ? INIT_RNG : INIT_SAME;
    if (unsure == k) {
        tpd_str_printf(&x->head,
                       "  the initial states cannot be compared at the first backward: %s%s\n",
                       list.s, k > 6 ? ", ..." : "");
        tpd_actx_why(x, "initial",
                     "whether the two commands start from the same state cannot be shown: the "
                     "digests of %s are of different kinds and no values were captured (rerun "
                     "with --capture values)",
                     list.s);
        tpd_str_free(&list);
        return INIT_STATE;
    }
    tpd_str_printf(&x->head, "  the initial states differ at the first backward: %s%s\n", list.s,
                   k > 6 ? ", ..." : "");
    if (rng)
        tpd_actx_why(x, "initial",
                     "an RNG differs at the first backward and the two runs did not seed it alike; "
                     "seed both runs alike");
    tpd_actx_why(x, "initial",
                 "the two commands do not start from the same state, so their "
                 "updates cannot be compared: %s",
                 list.s);
    tpd_str_free(&list);
    return INIT_STATE;
}

static void ctx_free(ctx *x)
{
    tpd_str_free(&x->head);
    tpd_str_free(&x->init_rngs);
    json_decref(x->init_differ);
    json_decref(x->init_rngj);
    tpd_why_free(&x->why);
    tpd_str_free(&x->vm);
    tpd_str_free(&x->vf);
    tpd_arena_destroy(x->a);
}

static tpd_outcome judge(ctx *x)
{
    char buf[1024];
    const char *problem;
    /* both executions train to the end: a failed exit is never expected */
    static const tpd_trust full = {.who = "the reference (full-batch) execution",
                                   .who_procs = true,
                                   .trainer = true},
                           micro = {.who = "the micro-batch execution",
                                    .who_procs = true,
                                    .trainer = true};
    if ((problem = tpd_exec_problem(x->F, &full, buf, sizeof buf)) ||
        (problem = tpd_exec_problem(x->M, &micro, buf, sizeof buf))) {
        tpd_str_printf(&x->head, "  %s\n", problem);
        return TPD_ERROR;
    }
    if (tpd_awins_build(x->a, x->pf, &x->wf) != TP_OK ||
        tpd_awins_build(x->a, x->pm, &x->wm) != TP_OK) {
        x->oom = true;
        return TPD_ERROR;
    }
    if ((int64_t)x->wf.n < x->U) {
        tpd_str_printf(&x->head,
                       "  the reference made %zu optimizer update%s; %lld are compared "
                       "(--updates)\n",
                       x->wf.n, x->wf.n == 1 ? "" : "s", (long long)x->U);
        return TPD_ERROR;
    }
    x->judged_init = true;
    switch (initial_differs(x)) {
    case INIT_STATE:
        return TPD_ABSTAIN;
    case INIT_RNG:
        tpd_str_printf(&x->head,
                       "  %s differed at the first backward: judged by the updates (see why)\n",
                       x->init_rngs.s);
        break;
    case INIT_SAME:
        break;
    }
    for (int64_t u = 0; u < x->U; u++) {
        if (tpd_actx_phase_steps(x, u) || tpd_actx_phase_loss(x, u) || tpd_actx_phase_grad(x, u) ||
            tpd_actx_phase_state(x, u) || tpd_actx_phase_model(x, u) ||
            tpd_actx_phase_sched(x, u)) {
            if (x->init_rngs.len == 0) return TPD_FAIL;
            if (x->explained) {
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward (the micro-batch run draws in "
                             "smaller pieces); the cause above does not depend on random draws",
                             x->init_rngs.s);
                return TPD_FAIL;
            }
            /* what the phase made of the difference assumed equal draws */
            tpd_why_free(&x->why);
            /* --disable-dropout given: advising it again would send the
             * user round in circles; what is left is other draws */
            if (x->disable_dropout)
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward, and the runs differ: random "
                             "draws (random batches, or dropout the agent does not reach; "
                             "--disable-dropout was given) may differ between them, so the "
                             "difference cannot be put down to accumulation; draw batches from "
                             "a seeded generator of their own",
                             x->init_rngs.s);
            else
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward, and the runs differ: random "
                             "draws (dropout, random batches) may differ between them, so the "
                             "difference cannot be put down to accumulation; --disable-dropout, "
                             "or draw batches from a seeded generator of their own",
                             x->init_rngs.s);
            return TPD_ABSTAIN;
        }
    }
    if (x->init_rngs.len)
        tpd_actx_why(x, "initial",
                     "%s differed at the first backward (the micro-batch run draws in smaller "
                     "pieces), yet every update matched: what the RNG fed was the same",
                     x->init_rngs.s);
    if (x->unsure) return TPD_ABSTAIN;
    return TPD_PASS;
}

tp_err tpd_verdict_accum(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    tpd_params par;
    tp_err rc;
    memset(&x, 0, sizeof x);
    x.run = r;
    x.o = *o;
    /* params that do not parse (none, from an old client) read as empty:
     * every value is its default, as declared in verdict.h */
    if (tpd_params_parse(&par, r->params, NULL, 0) == TP_ENOMEM) return TP_ENOMEM;
    if (!x.o.tolerance) {
        x.o.tolerance = true;
        x.o.rtol = tpd_param_num(&par, TPP_accum_rtol);
        x.o.atol = tpd_param_num(&par, TPP_accum_atol);
    }
    x.N = tpd_param_int(&par, TPP_accum_micro);
    x.U = tpd_param_int(&par, TPP_accum_updates);
    x.disable_dropout = tpd_param_bool(&par, TPP_accum_disable_dropout);
    tpd_params_clear(&par);
    if (x.N < 1) x.N = 1;
    if (x.U < 1) x.U = 1;
    x.F = tpd_obs_exec(r, "full");
    x.M = tpd_obs_exec(r, "micro");
    x.pf = tpd_obs_trainer(x.F);
    x.pm = tpd_obs_trainer(x.M);
    if ((x.a = tpd_arena_create()) == NULL) return TP_ENOMEM;
    rc = tpd_actx_finish(&x, judge(&x), out);
    ctx_free(&x);
    return rc;
}
