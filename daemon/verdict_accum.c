/* SPDX-License-Identifier: MIT
 * verdict_accum.c -- gradient-accumulation parity: preconditions (ERROR),
 * the initial states (ABSTAIN), then update by update the phases of
 * accum_phases.c, and the report. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/accum_ctx.h"
#include "daemon/accum_win.h"
#include "daemon/render.h"
#include "daemon/text.h"
#include "daemon/values.h"
#include "daemon/verdict_accum.h"

typedef tpd_actx ctx;

/* param_num reads a number after "key": in the run's params (JSON). */
static double param_num(const char *json, const char *key, double dflt)
{
    char pat[64];
    const char *p;
    char *end;
    double v;
    if (json == NULL) return dflt;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    if ((p = strstr(json, pat)) == NULL) return dflt;
    v = strtod(p + strlen(pat), &end);
    return end == p + strlen(pat) ? dflt : v;
}

/* param_true: "key": true in the run's params (JSON). */
static bool param_true(const char *json, const char *key)
{
    char pat[64];
    const char *p;
    if (json == NULL) return false;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    if ((p = strstr(json, pat)) == NULL) return false;
    p += strlen(pat);
    while (*p == ' ') p++;
    return strncmp(p, "true", 4) == 0;
}

static const char *exec_problem(const tpd_exec *e, const tpd_proc *p, const char *who, char *buf,
                                size_t n)
{
    if (e == NULL) {
        snprintf(buf, n, "the %s execution is missing", who);
        return buf;
    }
    if (e->has_signal && e->signal != 0) {
        snprintf(buf, n, "the %s execution was killed by signal %lld", who, (long long)e->signal);
        return buf;
    }
    if (e->has_status && e->status != 0) {
        snprintf(buf, n, "the %s execution exited with status %lld%s%s%s", who,
                 (long long)e->status, tpd_status_hint(e->status, p != NULL),
                 p && p->bye_exc ? " after an uncaught " : "", p && p->bye_exc ? p->bye_exc : "");
        return buf;
    }
    if (p == NULL) {
        snprintf(buf, n, "the %s execution ran no Python process the agent saw", who);
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if (!q->has_bye) {
            snprintf(buf, n,
                     "the %s execution: process %lld ended without reporting its last "
                     "events (no bye)",
                     who, (long long)q->pid);
            return buf;
        }
        if (q->dropped > 0 || q->nevents < q->sent || q->nevents < q->max_seq + 1) {
            snprintf(buf, n, "the %s execution: process %lld lost events (%lld sent, %lld stored)",
                     who, (long long)q->pid, (long long)q->sent, (long long)q->nevents);
            return buf;
        }
        if (q->errors > 0 || q->first_error) {
            snprintf(buf, n, "the %s execution: a hook of the agent reported an error: %.600s", who,
                     q->first_error ? q->first_error : "(unknown)");
            return buf;
        }
    }
    return NULL;
}

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

static init_diff initial_differs(ctx *x, tpd_str *rngs)
{
    tpd_cmp_opts exact = {false, 0, 0};
    size_t lo, hi, k = 0;
    tpd_str list = {0};
    bool rng = false;
    tpd_actx_items_at(x->pf, 0, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *f = &x->pf->timeline.v[i], *m;
        if (f->group < TPD_G_MODEL || f->group > TPD_G_RNG) continue;
        /* the forward before the first backward updated BatchNorm's running
         * statistics from batches of different sizes: not an initial state */
        if (f->group == TPD_G_MODEL &&
            (strstr(f->path, ".running_") || strstr(f->path, ".num_batches_tracked")))
            continue;
        m = tpd_actx_find_at(x->pm, 0, f->path);
        if (m != NULL && tpd_val_eq(&m->v, &f->v, &exact) == TPD_SAME) continue;
        if (f->group == TPD_G_RNG && m != NULL && same_seeding(x, f->path)) {
            tpd_str_printf(rngs, "%s%s", rngs->len ? ", " : "", f->path);
            continue;
        }
        if (f->group == TPD_G_RNG) rng = true;
        if (k < 6) tpd_str_printf(&list, "%s%s%s", k ? ", " : "", f->path, m ? "" : " (absent)");
        k++;
    }
    if (k == 0) return rngs->len ? INIT_RNG : INIT_SAME;
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

/* ---- the report ---- */

static void win_json(tpd_str *j, const tpd_awin *w)
{
    tpd_str_printf(j, "{\"backward\":%d,\"loss_sum\":", w->nbwd);
    if (w->loss_known && w->nbwd)
        tpd_str_printf(j, "%.17g", w->loss);
    else
        tpd_str_puts(j, "null");
    tpd_str_puts(j, ",\"lr\":");
    if (w->has_lr)
        tpd_str_printf(j, "%.17g", w->lr);
    else
        tpd_str_puts(j, "null");
    tpd_str_printf(j, ",\"scheduler_steps\":%d,\"clips\":%d,\"unscales\":%d,\"samples\":%lld}",
                   w->nsched, w->nclip, w->nunscale, (long long)(w->nbatches ? w->samples : -1));
}

static void updates_text(ctx *x, tpd_str *t, int64_t upto)
{
    tpd_str_puts(t, "\nupdates          backward   loss (sum)         lr           sched  clip  "
                    "unscale\n");
    for (int64_t u = 0; u < upto; u++) {
        for (int r = 0; r < 2; r++) {
            const tpd_awins *ws = r ? &x->wm : &x->wf;
            const tpd_awin *w;
            char lr[32] = "-", loss[32] = "-";
            if ((size_t)u >= ws->n) continue;
            w = &ws->v[u];
            if (w->has_lr) snprintf(lr, sizeof lr, "%.6g", w->lr);
            if (w->loss_known && w->nbwd) snprintf(loss, sizeof loss, "%.9g", w->loss);
            tpd_str_printf(t, "  %-3lld %-10s  %-9d  %-17s  %-11s  %-5d  %-4d  %d\n", (long long)u,
                           r ? "micro" : "full", w->nbwd, loss, lr, w->nsched, w->nclip,
                           w->nunscale);
        }
    }
}

static void execs_json(ctx *x, tpd_str *j)
{
    const tpd_exec *ex[2] = {x->F, x->M};
    const tpd_proc *px[2] = {x->pf, x->pm};
    tpd_render_execs_json(j, ex, px, 2);
}

static tp_err finish(ctx *x, tpd_outcome oc, tpd_result *out)
{
    tpd_str t = {0}, j = {0};
    int64_t upto = x->found ? x->update + 1 : x->U;
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "accum: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    tpd_str_printf(&t, "  micro-batches  N=%lld per update, %lld update%s compared\n",
                   (long long)x->N, (long long)x->U, x->U == 1 ? "" : "s");
    tpd_str_puts(&t, "  comparison     ");
    tpd_render_comparison(&t, &x->o);
    tpd_str_puts(&t, "\n");
    if (x->found) {
        tpd_str_printf(&t, "\nfirst divergence  update %lld  %s\n    %-18s %s\n    %-18s %s\n",
                       (long long)x->update, x->path, "micro-batches", tpd_str_cstr(&x->vm),
                       "full batch", tpd_str_cstr(&x->vf));
        out->has_step = true;
        out->step = x->update;
        snprintf(out->path, sizeof out->path, "%s", x->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }
    if (x->pf && x->pm && oc != TPD_ERROR) updates_text(x, &t, upto);

    tpd_str_printf(&j,
                   "{\"schema_version\":1,\"trainparity_version\":\"0.1.0\",\"check\":\"accum\","
                   "\"run\":%lld,\"outcome\":\"%s\",\"comparison\":",
                   (long long)x->run->id, tpd_outcome_name(oc));
    tpd_render_comparison_json(&j, &x->o);
    tpd_str_printf(&j, ",\"micro\":%lld,\"updates\":%lld,\"first_divergence\":", (long long)x->N,
                   (long long)x->U);
    if (x->found) {
        tpd_str_printf(&j, "{\"update\":%lld,\"step\":%lld,\"path\":", (long long)x->update,
                       (long long)x->update);
        tpd_str_jsonz(&j, x->path);
        tpd_str_puts(&j, ",\"micro\":");
        tpd_str_jsonz(&j, tpd_str_cstr(&x->vm));
        tpd_str_puts(&j, ",\"full\":");
        tpd_str_jsonz(&j, tpd_str_cstr(&x->vf));
        tpd_str_puts(&j, "}");
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_puts(&j, ",\"explanation\":[");
    tpd_str_puts(&j, x->why.json.s ? x->why.json.s : "");
    tpd_str_puts(&j, "],\"evidence\":{\"executions\":");
    execs_json(x, &j);
    tpd_str_puts(&j, ",\"updates\":[");
    for (int64_t u = 0; x->pf && x->pm && u < upto; u++) {
        tpd_str_printf(&j, "%s{\"update\":%lld,\"full\":", u ? "," : "", (long long)u);
        if ((size_t)u < x->wf.n)
            win_json(&j, &x->wf.v[u]);
        else
            tpd_str_puts(&j, "null");
        tpd_str_puts(&j, ",\"micro\":");
        if ((size_t)u < x->wm.n)
            win_json(&j, &x->wm.v[u]);
        else
            tpd_str_puts(&j, "null");
        tpd_str_puts(&j, "}");
    }
    tpd_str_puts(&j, "]}}\n");
    out->text = tpd_str_steal(&t);
    out->json = tpd_str_steal(&j);
    if (out->text == NULL || out->json == NULL || x->oom) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}

static void ctx_free(ctx *x)
{
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_str_free(&x->vm);
    tpd_str_free(&x->vf);
    tpd_arena_destroy(x->a);
}

static tpd_outcome judge(ctx *x)
{
    tpd_str rngs = {0};
    char buf[1024];
    const char *problem;
    if ((problem = exec_problem(x->F, x->pf, "reference (full-batch)", buf, sizeof buf)) ||
        (problem = exec_problem(x->M, x->pm, "micro-batch", buf, sizeof buf))) {
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
    switch (initial_differs(x, &rngs)) {
    case INIT_STATE:
        tpd_str_free(&rngs);
        return TPD_ABSTAIN;
    case INIT_RNG:
        tpd_str_printf(&x->head,
                       "  %s differed at the first backward: judged by the updates (see why)\n",
                       rngs.s);
        break;
    case INIT_SAME:
        break;
    }
    for (int64_t u = 0; u < x->U; u++) {
        if (tpd_actx_phase_steps(x, u) || tpd_actx_phase_loss(x, u) || tpd_actx_phase_grad(x, u) ||
            tpd_actx_phase_state(x, u) || tpd_actx_phase_model(x, u) ||
            tpd_actx_phase_sched(x, u)) {
            if (rngs.len == 0) return TPD_FAIL;
            if (x->explained) {
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward (the micro-batch run draws in "
                             "smaller pieces); the cause above does not depend on random draws",
                             rngs.s);
                tpd_str_free(&rngs);
                return TPD_FAIL;
            }
            /* what the phase made of the difference assumed equal draws */
            tpd_why_free(&x->why);
            /* --disable-dropout given: advising it again would send the
             * user round in circles; what is left is other draws */
            if (param_true(x->run->params, "disable_dropout"))
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward, and the runs differ: random "
                             "draws (random batches, or dropout the agent does not reach; "
                             "--disable-dropout was given) may differ between them, so the "
                             "difference cannot be put down to accumulation; draw batches from "
                             "a seeded generator of their own",
                             rngs.s);
            else
                tpd_actx_why(x, "initial",
                             "%s differed at the first backward, and the runs differ: random "
                             "draws (dropout, random batches) may differ between them, so the "
                             "difference cannot be put down to accumulation; --disable-dropout, "
                             "or draw batches from a seeded generator of their own",
                             rngs.s);
            tpd_str_free(&rngs);
            return TPD_ABSTAIN;
        }
    }
    if (rngs.len)
        tpd_actx_why(x, "initial",
                     "%s differed at the first backward (the micro-batch run draws in smaller "
                     "pieces), yet every update matched: what the RNG fed was the same",
                     rngs.s);
    tpd_str_free(&rngs);
    if (x->unsure) return TPD_ABSTAIN;
    return TPD_PASS;
}

tp_err tpd_verdict_accum(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    tp_err rc;
    memset(&x, 0, sizeof x);
    x.run = r;
    x.o = *o;
    if (!x.o.tolerance) {
        x.o.tolerance = true;
        x.o.rtol = param_num(r->params, "rtol", 1e-4);
        x.o.atol = param_num(r->params, "atol", 1e-6);
    }
    x.N = (int64_t)param_num(r->params, "micro", 1);
    x.U = (int64_t)param_num(r->params, "updates", 2);
    if (x.N < 1) x.N = 1;
    if (x.U < 1) x.U = 1;
    x.F = tpd_obs_exec(r, "full");
    x.M = tpd_obs_exec(r, "micro");
    x.pf = tpd_obs_trainer(x.F);
    x.pm = tpd_obs_trainer(x.M);
    if ((x.a = tpd_arena_create()) == NULL) return TP_ENOMEM;
    rc = finish(&x, judge(&x), out);
    ctx_free(&x);
    return rc;
}
