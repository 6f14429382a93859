/* SPDX-License-Identifier: MIT
 * verdict.c -- training health: the trust rule (ERROR), then the checks of
 * verdict.h over the telemetry rows (telemetry.c) and the final snapshot;
 * the report is report.c's.  Every explanation line says what was observed,
 * nothing more. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"
#include "daemon/checks/health/verdict.h"
#include "daemon/checks/params.h"
#include "daemon/checks/trust.h"

typedef tpd_hctx ctx;

void tpd_hctx_found(ctx *x, size_t row, int64_t step, const char *path)
{
    x->found = true;
    x->row = row;
    x->step = step;
    snprintf(x->path, sizeof x->path, "%s", path);
}

/* lrs_text appends the learning rates of w ("lr 0.1, 0.01"). */
static void lrs_text(tpd_str *t, const tpd_hrow *w)
{
    for (uint32_t i = 0; i < w->nlrs; i++) tpd_str_printf(t, "%s%g", i ? ", " : "", w->lrs[i]);
}

/* last_finite_loss: the last step before row i whose loss was reported
 * finite, or -1. */
static int64_t last_finite_loss(const ctx *x, size_t i)
{
    while (i-- > 0)
        if (x->rows[i].has_loss && isfinite(x->rows[i].loss)) return x->rows[i].step;
    return -1;
}

static bool check_loss(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i];
    int64_t prev;
    if (w->bad_bwd == 0 || w->scaler_skipped) return false;
    tpd_hctx_found(x, i, w->step, "loss");
    tpd_str_printf(&x->value, "%g (backward call %d of %d of the step)", w->bad_loss, w->bad_bwd,
                   w->nbwd);
    tpd_why_add(&x->why, "finite",
                "the loss of backward call %d of step %lld was %g; no GradScaler skipped the step",
                w->bad_bwd, (long long)w->step, w->bad_loss);
    prev = last_finite_loss(x, i);
    if (prev >= 0)
        tpd_why_add(&x->why, "finite", "the last finite loss before it was at step %lld",
                    (long long)prev);
    if (w->nonfinite_grads > 0)
        tpd_why_add(&x->why, "finite",
                    "at the same step %u gradient%s held non-finite values, the first %s",
                    w->nonfinite_grads, w->nonfinite_grads == 1 ? "" : "s", w->nonfinite_grad);
    return true;
}

static bool check_grads(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i];
    if (w->nonfinite_grads == 0 || w->scaler_skipped) return false;
    tpd_hctx_found(x, i, w->step, w->nonfinite_grad);
    tpd_str_printf(&x->value, "%llu non-finite value%s", (unsigned long long)w->nonfinite_vals,
                   w->nonfinite_vals == 1 ? "" : "s");
    tpd_why_add(&x->why, "finite",
                "%s held %llu non-finite value%s when optimizer[%lld] stepped at step %lld (%u "
                "gradient%s with non-finite values in all), and no GradScaler skipped the step",
                w->nonfinite_grad, (unsigned long long)w->nonfinite_vals,
                w->nonfinite_vals == 1 ? "" : "s", (long long)w->opt, (long long)w->step,
                w->nonfinite_grads, w->nonfinite_grads == 1 ? "" : "s");
    if (w->has_loss && isfinite(w->loss))
        tpd_why_add(&x->why, "finite", "the loss of the step was finite (%g)", w->loss);
    if (w->has_changed && w->changed)
        tpd_why_add(&x->why, "finite", "the step changed the parameters");
    return true;
}

static bool check_norm(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i];
    if (!x->has_max || !w->has_gnorm || w->scaler_skipped) return false;
    if (isfinite(w->gnorm) && w->gnorm <= x->max_grad_norm) return false;
    tpd_hctx_found(x, i, w->step, "grad_norm");
    tpd_str_printf(&x->value, "%g > %g (--max-grad-norm)", w->gnorm, x->max_grad_norm);
    tpd_why_add(&x->why, "grad_norm",
                "the gradient L2 norm optimizer[%lld] stepped with at step %lld was %g, above "
                "--max-grad-norm %g",
                (long long)w->opt, (long long)w->step, w->gnorm, x->max_grad_norm);
    for (size_t k = i; k-- > 0;) {
        const tpd_hrow *q = &x->rows[k];
        if (q->opt != w->opt || !q->has_gnorm) continue;
        tpd_why_add(&x->why, "grad_norm", "it was %g at step %lld", q->gnorm, (long long)q->step);
        break;
    }
    return true;
}

static bool check_update(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i];
    char path[64];
    if (w->scaler_skipped || !w->has_changed || w->changed || w->warmup) return false;
    snprintf(path, sizeof path, "optimizer[%lld]", (long long)w->opt);
    tpd_hctx_found(x, i, w->step, path);
    tpd_str_puts(&x->value, "not skipped by a GradScaler; no parameter changed");
    if (w->changed_by_snaps)
        tpd_why_add(&x->why, "update",
                    "optimizer[%lld] stepped at step %lld, no GradScaler skipped it, and none of "
                    "its parameters changed (their digests in the snapshots of steps %lld and "
                    "%lld are equal)",
                    (long long)w->opt, (long long)w->step, (long long)w->snap_before,
                    (long long)w->snap_after);
    else
        tpd_why_add(&x->why, "update",
                    "optimizer[%lld] stepped at step %lld, no GradScaler skipped it, and no "
                    "parameter changed (the agent compared them before and after the step)",
                    (long long)w->opt, (long long)w->step);
    if (w->nlrs > 0) {
        tpd_str lr = {0};
        lrs_text(&lr, w);
        tpd_why_add(&x->why, "update", "the learning rate%s of its param group%s %s %s%s",
                    w->nlrs == 1 ? "" : "s", w->nlrs == 1 ? "" : "s", w->nlrs == 1 ? "was" : "were",
                    tpd_str_cstr(&lr), tpd_hrow_lrs_zero(w) ? " at that step" : "");
        tpd_str_free(&lr);
    }
    if (w->ngrads >= 0 && w->nparams >= 0)
        tpd_why_add(&x->why, "update", "%lld of its %lld parameters had a gradient",
                    (long long)w->ngrads, (long long)w->nparams);
    return true;
}

/* check_final: a non-finite parameter in the snapshot taken at exit. */
static bool check_final(ctx *x)
{
    const tpd_snap *s = NULL;
    for (size_t i = 0; i < x->p->nsnaps; i++)
        if (x->p->snaps[i].why && strcmp(x->p->snaps[i].why, "final") == 0) s = &x->p->snaps[i];
    if (s == NULL) return false;
    x->final_seen = true;
    for (size_t i = 0; i < s->items.n; i++) {
        const tpd_item *it = &s->items.v[i];
        if (it->group != TPD_G_MODEL || it->v.kind != 't') continue;
        x->final_tensors++;
        if (x->found || it->v.stats.nonfinite == 0) continue;
        tpd_hctx_found(x, x->nrows, s->step, it->path);
        tpd_str_printf(&x->value, "%llu non-finite value%s",
                       (unsigned long long)it->v.stats.nonfinite,
                       it->v.stats.nonfinite == 1 ? "" : "s");
        tpd_why_add(&x->why, "finite",
                    "%s held %llu non-finite value%s in the final snapshot (at exit, after %lld "
                    "optimizer steps); no step that a GradScaler did not skip had a "
                    "non-finite loss or applied a non-finite gradient",
                    it->path, (unsigned long long)it->v.stats.nonfinite,
                    it->v.stats.nonfinite == 1 ? "" : "s", (long long)x->p->steps);
    }
    return x->found;
}

static tpd_outcome judge(ctx *x)
{
    char buf[1024];
    const char *problem;
    static const tpd_trust cmd = {
        .who = "the command", .who_procs = true, .crash = true, .steps = true, .trainer = true};
    if ((problem = tpd_exec_problem(x->ex, &cmd, buf, sizeof buf)) != NULL) {
        tpd_str_printf(&x->head, "  %s\n", problem);
        return TPD_ERROR;
    }
    if (tpd_hctx_rows(x) != TP_OK) {
        x->oom = true;
        return TPD_ERROR;
    }
    if (x->nrows == 0) {
        tpd_str_puts(&x->head, "  the command made no optimizer step\n");
        return TPD_ERROR;
    }
    tpd_health_amp_scan(x);
    tpd_health_ranks_scan(x);
    if (tpd_health_cover(x)) {
        check_final(x); /* counts what the final snapshot holds */
        return TPD_FAIL;
    }
    for (size_t i = 0; i < x->nrows && !x->oom; i++)
        if (tpd_health_amp_step(x, i) || check_loss(x, i) || check_grads(x, i) ||
            check_norm(x, i) || check_update(x, i) || tpd_health_bounds_step(x, i) ||
            tpd_health_ranks_step(x, i)) {
            check_final(x);
            return TPD_FAIL;
        }
    if (!x->oom && (tpd_health_amp_skipped(x) || tpd_health_bounds_run(x))) {
        check_final(x);
        return TPD_FAIL;
    }
    return check_final(x) ? TPD_FAIL : TPD_PASS;
}

tp_err tpd_verdict_health(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    tpd_params par;
    tp_err rc;
    (void)o;
    memset(&x, 0, sizeof x);
    x.run = r;
    /* params that do not parse read as empty: no bound (verdict.h) */
    if (tpd_params_parse(&par, r->params, NULL, 0) == TP_ENOMEM) return TP_ENOMEM;
    x.max_grad_norm = tpd_param_num(&par, TPP_health_max_grad_norm);
    x.has_max = !isnan(x.max_grad_norm);
    x.max_skipped = tpd_param_num(&par, TPP_health_max_skipped);
    if ((x.a = tpd_arena_create()) == NULL) {
        tpd_params_clear(&par);
        return TP_ENOMEM;
    }
    tpd_health_bounds_parse(&x, &par);
    tpd_params_clear(&par);
    x.ex = tpd_obs_exec(r, "health");
    x.p = tpd_obs_trainer(x.ex);
    rc = tpd_hctx_finish(&x, judge(&x), out);
    tpd_str_free(&x.head);
    tpd_str_free(&x.value);
    tpd_why_free(&x.why);
    tpd_arena_destroy(x.a);
    return rc;
}
