/* SPDX-License-Identifier: MIT
 * verdict_accum.c -- gradient-accumulation parity: preconditions (ERROR),
 * the initial states (ABSTAIN), then update by update the phases in the
 * order that decides "first" (optimizer steps, loss accounting, gradients,
 * optimizer state, weights, scheduler) and the likely cause of a FAIL from
 * the evidence: factors of N in losses and gradients, a gradient that still
 * holds the previous update's, element counts of mean-reduced losses,
 * clipping, GradScaler unscales and scheduler steps per micro-batch,
 * BatchNorm. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/accum_win.h"
#include "daemon/render.h"
#include "daemon/text.h"
#include "daemon/values.h"
#include "daemon/verdict_accum.h"

typedef struct ctx {
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
    tpd_str why;    /* explanation, text */
    tpd_str jwhy;   /* explanation, JSON array items */
    int nwhy;
    bool oom;
} ctx;

/* ---- small helpers ---- */

static void add_why(ctx *x, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_why(ctx *x, const char *kind, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tpd_str_printf(&x->why, "  - %s\n", line);
    tpd_str_printf(&x->jwhy, "%s{\"kind\":", x->nwhy ? "," : "");
    tpd_str_jsonz(&x->jwhy, kind);
    tpd_str_puts(&x->jwhy, ",\"text\":");
    tpd_str_jsonz(&x->jwhy, line);
    tpd_str_puts(&x->jwhy, "}");
    x->nwhy++;
}

/* diverge records the first divergence: update u, component path. */
static void diverge(ctx *x, int64_t u, const char *path)
{
    x->found = true;
    x->update = u;
    snprintf(x->path, sizeof x->path, "%s", path);
}

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
        snprintf(buf, n, "the %s execution exited with status %lld%s%s", who, (long long)e->status,
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

/* ---- tensors ---- */

typedef struct tcmp {
    tpd_eq eq;
    double *a, *b; /* values (micro, full) when both were captured; free() */
    size_t n;
    size_t worst; /* DIFF with values: the element furthest outside */
} tcmp;

static void tcmp_free(tcmp *t)
{
    free(t->a);
    free(t->b);
    t->a = t->b = NULL;
}

/* tensor_cmp compares micro's m with the reference's f under the declared
 * tolerance: equal digests are equal; otherwise values decide when both were
 * captured, and statistics can only prove a difference. */
static void tensor_cmp(ctx *x, const tpd_val *m, const tpd_val *f, tcmp *t)
{
    memset(t, 0, sizeof *t);
    if (m->kind != 't' || f->kind != 't') {
        t->eq = tpd_val_eq(m, f, &x->o);
        return;
    }
    t->eq = tpd_val_eq(m, f, &x->o);
    if (t->eq == TPD_SAME || m->ndim != f->ndim ||
        memcmp(m->shape, f->shape, sizeof m->shape[0] * m->ndim) != 0)
        return; /* same digest, or not the same shape: values add nothing */
    /* values decide closeness, and explain a difference statistics proved;
     * without them what the statistics say stands */
    if (tpd_values_read(x->run, m, &t->a, &t->n) == TP_OK) {
        size_t nb;
        if (tpd_values_read(x->run, f, &t->b, &nb) == TP_OK && nb == t->n) {
            t->eq = tpd_values_within(t->a, t->b, t->n, x->o.rtol, x->o.atol, &t->worst) ? TPD_SAME
                                                                                         : TPD_DIFF;
            return;
        }
    }
    tcmp_free(t);
}

static void show_val(tpd_str *b, const tpd_val *v, const tcmp *t, bool micro)
{
    tpd_render_val(b, v);
    if (t && t->a && t->b && t->eq == TPD_DIFF)
        tpd_str_printf(b, "; element [%zu] = %.9g", t->worst,
                       micro ? t->a[t->worst] : t->b[t->worst]);
}

/* items_at lists [lo, hi) of p's timeline items at step s. */
static void items_at(const tpd_proc *p, int64_t s, size_t *lo, size_t *hi)
{
    const tpd_items *l = &p->timeline;
    size_t i = 0;
    while (i < l->n && l->v[i].step < s) i++;
    *lo = i;
    while (i < l->n && l->v[i].step == s) i++;
    *hi = i;
}

static const tpd_item *find_at(const tpd_proc *p, int64_t s, const char *path)
{
    size_t lo, hi;
    items_at(p, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (strcmp(p->timeline.v[i].path, path) == 0) return &p->timeline.v[i];
    return NULL;
}

static bool has_step(const tpd_proc *p, int64_t s)
{
    size_t lo, hi;
    items_at(p, s, &lo, &hi);
    return hi > lo;
}

static bool has_batchnorm(const tpd_proc *p)
{
    for (size_t i = 0; i < p->timeline.n; i++)
        if (p->timeline.v[i].group == TPD_G_MODEL && strstr(p->timeline.v[i].path, "running_mean"))
            return true;
    return false;
}

static bool in_phase(const tpd_item *it, tpd_group g, const char *prefix)
{
    return it->group == g && strncmp(it->path, prefix, strlen(prefix)) == 0;
}

/* compare_items compares the reference's items of group g under prefix at
 * step sf with micro's at step sm; the first difference (or an item only
 * one has) is the divergence of update u.  Returns true when it diverged;
 * *t holds the comparison of the diverging pair (values freed by caller). */
static bool compare_items(ctx *x, int64_t u, int64_t s, tpd_group g, const char *prefix, tcmp *t,
                          const tpd_item **im, const tpd_item **ifr)
{
    size_t lo, hi;
    memset(t, 0, sizeof *t);
    items_at(x->pf, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *f = &x->pf->timeline.v[i], *m;
        if (!in_phase(f, g, prefix)) continue;
        m = find_at(x->pm, s, f->path);
        *im = m, *ifr = f;
        if (m == NULL) {
            diverge(x, u, f->path);
            tpd_str_puts(&x->vm, "absent");
            tpd_render_val(&x->vf, &f->v);
            return true;
        }
        tensor_cmp(x, &m->v, &f->v, t);
        if (t->eq == TPD_SAME) {
            tcmp_free(t);
            continue;
        }
        if (t->eq == TPD_UNSURE) {
            if (!x->unsure)
                add_why(x, "values",
                        "%s at update %lld: the digests differ and its values were "
                        "not captured, so closeness cannot be shown",
                        f->path, (long long)u);
            x->unsure = true;
            continue;
        }
        diverge(x, u, f->path);
        show_val(&x->vm, &m->v, t, true);
        show_val(&x->vf, &f->v, t, false);
        return true;
    }
    items_at(x->pm, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *m = &x->pm->timeline.v[i];
        if (!in_phase(m, g, prefix) || find_at(x->pf, s, m->path) != NULL) continue;
        *im = m, *ifr = NULL;
        diverge(x, u, m->path);
        tpd_render_val(&x->vm, &m->v);
        tpd_str_puts(&x->vf, "absent");
        return true;
    }
    return false;
}

/* ---- the phases of one update ---- */

static const char *cause_text(tpd_ratio_cause c)
{
    switch (c) {
    case TPD_RC_NOT_DIVIDED:
        return "not divided by N: each micro-batch loss is backpropagated whole, so the update "
               "sums N full-size contributions";
    case TPD_RC_TWICE:
        return "divided by N twice (e.g. the loss divided by N and the gradients or the "
               "learning rate scaled by 1/N again)";
    case TPD_RC_PARTIAL:
        return "an incomplete final window: this update has fewer micro-batches than N and "
               "each was still divided by N; divide by the micro-batches (or samples, tokens) "
               "the update really has";
    default:
        return NULL;
    }
}

static bool phase_steps(ctx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m;
    int64_t want = x->N * (f->nbwd > 0 ? f->nbwd : 1);
    if ((size_t)u >= x->wm.n) {
        diverge(x, u, "optimizer.steps");
        tpd_str_printf(&x->vm,
                       "%zu optimizer updates in all, then %d backward calls without a "
                       "step",
                       x->wm.n, x->wm.tail.nbwd);
        tpd_str_printf(&x->vf, "at least %lld updates", (long long)x->U);
        add_why(x, "optimizer.steps",
                "the optimizer did not step after the last micro-batch of update %lld: the "
                "micro-batch run made %zu updates",
                (long long)u, x->wm.n);
        x->explained = true;
        return true;
    }
    m = &x->wm.v[u];
    if (m->nbwd == want) return false;
    if (m->nbwd < want && (size_t)u + 1 == x->wm.n && (size_t)u + 1 == x->wf.n &&
        x->wm.tail.nbwd == 0 &&
        (m->samples < 0 || f->samples < 0 || m->nbatches == 0 || f->nbatches == 0 ||
         m->samples == f->samples))
        return false; /* the final window of both runs: the data ran out */
    diverge(x, u, "optimizer.steps");
    x->explained = true;
    tpd_str_printf(&x->vm, "1 optimizer step after %d backward calls", m->nbwd);
    tpd_str_printf(&x->vf, "1 optimizer step after %d backward call%s (x N=%lld: %lld expected)",
                   f->nbwd, f->nbwd == 1 ? "" : "s", (long long)x->N, (long long)want);
    if (m->nbwd < want)
        add_why(x, "optimizer.steps",
                "the optimizer stepped before the last micro-batch: after %d of %lld backward "
                "calls%s",
                m->nbwd, (long long)want,
                m->nbwd == 1 ? " (an optimizer step per micro-batch)" : "");
    else
        add_why(x, "optimizer.steps",
                "the optimizer did not step after the last micro-batch: %d backward calls "
                "accumulated into update %lld, %lld expected",
                m->nbwd, (long long)u, (long long)want);
    return true;
}

static bool phase_loss(ctx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    double k;
    tpd_ratio_cause c;
    const char *ct;
    if (!f->loss_known || !m->loss_known || f->nbwd == 0) return false;
    if (fabs(m->loss - f->loss) <= x->o.atol + x->o.rtol * fabs(f->loss)) return false;
    diverge(x, u, "loss_accounting.denominator");
    tpd_str_printf(&x->vm, "%.9g (the sum of %d backpropagated micro-batch losses)", m->loss,
                   m->nbwd);
    tpd_str_printf(&x->vf, "%.9g (the full-batch loss)", f->loss);
    k = f->loss != 0 ? m->loss / f->loss : NAN;
    c = tpd_ratio_cause_of(k, x->N, m->nbwd);
    if ((ct = cause_text(c)) != NULL) {
        add_why(x, "loss_accounting",
                "the micro-batch losses sum to %.6g x the full-batch loss "
                "(N=%lld, %d micro-batches in this update): %s",
                k, (long long)x->N, m->nbwd, ct);
        x->explained = true;
        return true;
    }
    if (m->nmean == m->nbwd && m->nbwd <= TPD_AWIN_MEANS && m->nbwd > 1) {
        bool unequal = false;
        char counts[256];
        size_t o = 0;
        for (int i = 0; i < m->nmean; i++) {
            if (m->mean_over[i] != m->mean_over[0]) unequal = true;
            o += (size_t)snprintf(counts + o, sizeof counts - o, "%s%lld", i ? ", " : "",
                                  (long long)m->mean_over[i]);
            if (o >= sizeof counts) o = sizeof counts - 1;
        }
        if (unequal) {
            bool fits = tpd_mean_of_means(m->losses, m->mean_over, m->nbwd, f->loss, 1e-3, 1e-9);
            add_why(x, "loss_accounting",
                    "mean of means: each micro-batch loss is a mean over its own elements "
                    "(%s) and the micro-batches hold unequal counts, so short ones weigh more "
                    "than in the full batch%s; normalise by the total element count of the "
                    "update",
                    counts,
                    fits ? " (weighting the micro-batch means by their counts reproduces the "
                           "full-batch loss)"
                         : "");
            x->explained = fits;
            return true;
        }
    }
    if (has_batchnorm(x->pm)) {
        add_why(x, "batchnorm",
                "the model has BatchNorm, which normalises each micro-batch with its own "
                "statistics: the micro-batch losses and gradients differ from the full batch's "
                "even when the loss accounting is right");
        return true;
    }
    add_why(x, "loss_accounting",
            "the micro-batch losses sum to %.6g x the full-batch loss (N=%lld): the losses are "
            "not normalised as one full batch would be",
            k, (long long)x->N);
    return true;
}

/* grad_causes explains a gradient difference of update u. */
static void grad_causes(ctx *x, int64_t u, const tpd_item *im, const tcmp *t)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    bool said = false;
    if (t->a && t->b) {
        double k, resid;
        tpd_values_fit(t->a, t->b, t->n, &k, &resid);
        if (resid < 1e-3) {
            const char *ct = cause_text(tpd_ratio_cause_of(k, x->N, m->nbwd));
            if (ct) {
                add_why(x, "grad", "the gradient is %.6g x the reference's: %s", k, ct);
                said = x->explained = true;
            }
        }
        if (!said && u > 0) {
            const tpd_item *prev = find_at(x->pm, u - 1, im->path);
            double *p = NULL;
            size_t np;
            if (prev && tpd_values_read(x->run, &prev->v, &p, &np) == TP_OK && np == t->n) {
                for (size_t i = 0; i < np; i++) p[i] = t->a[i] - p[i];
                if (tpd_values_within(p, t->b, np, x->o.rtol * 10, x->o.atol * 10, NULL)) {
                    add_why(x, "grad",
                            "carry-over: the gradient minus the previous update's is the "
                            "reference's gradient, so zero_grad does not run after the "
                            "optimizer step");
                    said = x->explained = true;
                }
            }
            free(p);
        }
    }
    if (m->nclip > f->nclip) {
        add_why(x, "grad",
                "clipping ran per micro-batch: %d clip calls in this update (the reference: "
                "%d)%s",
                m->nclip, f->nclip,
                m->clip_active ? ", and a norm exceeded its threshold, so each partial sum was "
                                 "clipped rather than the accumulated gradient"
                               : "");
        said = x->explained = true;
    }
    if (m->nunscale > f->nunscale) {
        add_why(x, "grad",
                "GradScaler.unscale_ ran %d times in this update (the reference: %d): "
                "unscaling per micro-batch divides what is already unscaled or mixes scaled "
                "and unscaled gradients; unscale once, at the boundary",
                m->nunscale, f->nunscale);
        said = x->explained = true;
    }
    if (has_batchnorm(x->pm))
        add_why(x, "batchnorm",
                "the model has BatchNorm, which normalises each micro-batch with its own "
                "statistics: micro-batch gradients differ from the full batch's even when the "
                "loss accounting is right");
    else if (!said)
        add_why(x, "grad", "the losses are accounted alike but the gradients differ");
}

static bool phase_grad(ctx *x, int64_t u)
{
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (!compare_items(x, u, u, TPD_G_GRAD, "grad.", &t, &im, &ifr)) return false;
    if (im && ifr) grad_causes(x, u, im, &t);
    tcmp_free(&t);
    return true;
}

static bool phase_state(ctx *x, int64_t u)
{
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (!has_step(x->pf, u + 1) || !has_step(x->pm, u + 1)) return false;
    if (!compare_items(x, u, u + 1, TPD_G_OPTIMIZER, "optimizer.state.", &t, &im, &ifr))
        return false;
    add_why(x, "optimizer.state",
            "the gradients of update %lld agree but the optimizer state after it differs",
            (long long)u);
    x->explained = true; /* equal gradients: the random draws fed the same update */
    tcmp_free(&t);
    return true;
}

static bool phase_model(ctx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    bool said = false;
    if (!has_step(x->pf, u + 1) || !has_step(x->pm, u + 1)) return false;
    if (!compare_items(x, u, u + 1, TPD_G_MODEL, "model", &t, &im, &ifr)) return false;
    tcmp_free(&t);
    x->explained = true; /* equal gradients: the random draws fed the same update */
    if (m->has_lr && f->has_lr && fabs(m->lr - f->lr) > 1e-12 + 1e-9 * fabs(f->lr)) {
        add_why(x, "scheduler",
                "the gradients agree but the learning rate of update %lld was %.6g in the "
                "micro-batch run and %.6g in the reference: the scheduler stepped %d times "
                "before this optimizer step (the reference: %d), i.e. per micro-batch",
                (long long)u, m->lr, f->lr, m->nsched, f->nsched);
        said = true;
    }
    if (m->nclip > f->nclip) {
        add_why(x, "clip",
                "the gradients agree but clipping ran %d times in this update (the "
                "reference: %d): clipping per micro-batch",
                m->nclip, f->nclip);
        said = true;
    }
    if (m->skipped != f->skipped) {
        add_why(x, "amp", "the GradScaler skipped this update in %s only",
                m->skipped ? "the micro-batch run" : "the reference");
        said = true;
    }
    if (!said)
        add_why(x, "model",
                "the gradients and optimizer state agree but the weights after "
                "update %lld differ (clipping or a scheduler stepping per micro-batch, or a "
                "hyperparameter that depends on the batch)",
                (long long)u);
    return true;
}

static bool phase_sched(ctx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (has_step(x->pf, u + 1) && has_step(x->pm, u + 1) &&
        compare_items(x, u, u + 1, TPD_G_SCHEDULER, "scheduler", &t, &im, &ifr)) {
        tcmp_free(&t);
        x->explained = true;
        add_why(x, "scheduler",
                "the scheduler stepped %d times during update %lld (the "
                "reference: %d)",
                m->nsched, (long long)u, f->nsched);
        return true;
    }
    if (m->nsched == f->nsched) return false;
    diverge(x, u, "scheduler.steps");
    x->explained = true;
    tpd_str_printf(&x->vm, "%d scheduler steps", m->nsched);
    tpd_str_printf(&x->vf, "%d scheduler step%s", f->nsched, f->nsched == 1 ? "" : "s");
    add_why(x, "scheduler", "the scheduler steps %s per update than the reference does",
            m->nsched > f->nsched ? "more often" : "less often");
    return true;
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
    items_at(x->pf, 0, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *f = &x->pf->timeline.v[i], *m;
        if (f->group < TPD_G_MODEL || f->group > TPD_G_RNG) continue;
        /* the forward before the first backward updated BatchNorm's running
         * statistics from batches of different sizes: not an initial state */
        if (f->group == TPD_G_MODEL &&
            (strstr(f->path, ".running_") || strstr(f->path, ".num_batches_tracked")))
            continue;
        m = find_at(x->pm, 0, f->path);
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
        add_why(x, "initial",
                "an RNG differs at the first backward and the two runs did not seed it alike; "
                "seed both runs alike");
    add_why(x, "initial",
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
    bool first = true;
    tpd_str_puts(j, "[");
    for (int i = 0; i < 2; i++) {
        if (ex[i] == NULL) continue;
        tpd_str_printf(j, "%s{\"role\":", first ? "" : ",");
        tpd_str_jsonz(j, ex[i]->role);
        tpd_str_printf(j, ",\"execution\":%lld,\"argv\":%s", (long long)ex[i]->id,
                       ex[i]->argv_json ? ex[i]->argv_json : "null");
        if (ex[i]->has_status) tpd_str_printf(j, ",\"exit_status\":%lld", (long long)ex[i]->status);
        if (px[i]) tpd_str_printf(j, ",\"steps\":%lld", (long long)px[i]->steps);
        tpd_str_puts(j, "}");
        first = false;
    }
    tpd_str_puts(j, "]");
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
    if (x->nwhy) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.s);
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
    tpd_str_puts(&j, x->jwhy.s ? x->jwhy.s : "");
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
    tpd_str_free(&x->why);
    tpd_str_free(&x->jwhy);
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
        if (phase_steps(x, u) || phase_loss(x, u) || phase_grad(x, u) || phase_state(x, u) ||
            phase_model(x, u) || phase_sched(x, u)) {
            if (rngs.len == 0) return TPD_FAIL;
            if (x->explained) {
                add_why(x, "initial",
                        "%s differed at the first backward (the micro-batch run draws in "
                        "smaller pieces); the cause above does not depend on random draws",
                        rngs.s);
                tpd_str_free(&rngs);
                return TPD_FAIL;
            }
            /* what the phase made of the difference assumed equal draws */
            tpd_str_free(&x->why);
            tpd_str_free(&x->jwhy);
            x->nwhy = 0;
            add_why(x, "initial",
                    "%s differed at the first backward, and the runs differ: random draws "
                    "(dropout, random batches) may differ between them, so the difference "
                    "cannot be put down to accumulation; --disable-dropout, or draw batches "
                    "from a seeded generator of their own",
                    rngs.s);
            tpd_str_free(&rngs);
            return TPD_ABSTAIN;
        }
    }
    if (rngs.len)
        add_why(x, "initial",
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
