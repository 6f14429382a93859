/* SPDX-License-Identifier: MIT
 * phases.c -- the phases of one accumulation update, in the order
 * that decides "first" (optimizer steps, loss accounting, gradients,
 * optimizer state, weights, scheduler), and the likely cause of a
 * difference from the evidence: factors of N in losses and gradients, a
 * gradient that still holds the previous update's, element counts of
 * mean-reduced losses, clipping, GradScaler unscales and scheduler steps per
 * micro-batch, BatchNorm. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/accum/ctx.h"
#include "daemon/checks/render.h"
#include "daemon/obs/values.h"

/* ---- small helpers ---- */

void tpd_actx_why(tpd_actx *x, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tpd_why_vadd(&x->why, kind, fmt, ap);
    va_end(ap);
}

/* diverge records the first divergence: update u, component path. */
static void diverge(tpd_actx *x, int64_t u, const char *path)
{
    x->found = true;
    x->update = u;
    snprintf(x->path, sizeof x->path, "%s", path);
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
static void tensor_cmp(tpd_actx *x, const tpd_val *m, const tpd_val *f, tcmp *t)
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
void tpd_actx_items_at(const tpd_proc *p, int64_t s, size_t *lo, size_t *hi)
{
    const tpd_items *l = &p->timeline;
    size_t i = 0;
    while (i < l->n && l->v[i].step < s) i++;
    *lo = i;
    while (i < l->n && l->v[i].step == s) i++;
    *hi = i;
}

const tpd_item *tpd_actx_find_at(const tpd_proc *p, int64_t s, const char *path)
{
    size_t lo, hi;
    tpd_actx_items_at(p, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (strcmp(p->timeline.v[i].path, path) == 0) return &p->timeline.v[i];
    return NULL;
}

static bool has_step(const tpd_proc *p, int64_t s)
{
    size_t lo, hi;
    tpd_actx_items_at(p, s, &lo, &hi);
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
static bool compare_items(tpd_actx *x, int64_t u, int64_t s, tpd_group g, const char *prefix,
                          tcmp *t, const tpd_item **im, const tpd_item **ifr)
{
    size_t lo, hi;
    memset(t, 0, sizeof *t);
    tpd_actx_items_at(x->pf, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *f = &x->pf->timeline.v[i], *m;
        if (!in_phase(f, g, prefix)) continue;
        m = tpd_actx_find_at(x->pm, s, f->path);
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
            tpd_str k = {0};
            if (!x->unsure &&
                tpd_render_dkinds(&k, &m->v, "the micro-batch run", &f->v, "the full-batch run"))
                tpd_actx_why(x, "digest_kinds",
                             "%s at update %lld: %s, and without the captured values of both "
                             "closeness cannot be shown",
                             f->path, (long long)u, tpd_str_cstr(&k));
            else if (!x->unsure)
                tpd_actx_why(x, "values",
                             "%s at update %lld: the digests differ and its values were "
                             "not captured, so closeness cannot be shown",
                             f->path, (long long)u);
            tpd_str_free(&k);
            x->unsure = true;
            continue;
        }
        diverge(x, u, f->path);
        show_val(&x->vm, &m->v, t, true);
        show_val(&x->vf, &f->v, t, false);
        return true;
    }
    tpd_actx_items_at(x->pm, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *m = &x->pm->timeline.v[i];
        if (!in_phase(m, g, prefix) || tpd_actx_find_at(x->pf, s, m->path) != NULL) continue;
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

/* short_window: the last update of both runs, where the micro-batch run's
 * holds less data than the reference's (have < want, in unit): it lost
 * micro-batches, named with the counts before any factor is looked at,
 * since no normalisation makes less data give the reference's update. */
static void short_window(tpd_actx *x, int64_t u, int64_t have, int64_t want, const char *unit)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    int miss = tpd_missing_micro(m->nbwd, have, want);
    /* element counts of unequal micro-batches (tokens) give no size of one */
    for (int i = 1; i < m->nmean && i < TPD_AWIN_MEANS && !strcmp(unit, "elements"); i++)
        if (m->mean_over[i] != m->mean_over[0]) miss = 0;
    diverge(x, u, "optimizer.steps");
    x->explained = true;
    tpd_str_printf(&x->vm, "1 optimizer step after %d backward call%s over %lld %s", m->nbwd,
                   m->nbwd == 1 ? "" : "s", (long long)have, unit);
    tpd_str_printf(&x->vf, "1 optimizer step after %d backward call%s over %lld %s", f->nbwd,
                   f->nbwd == 1 ? "" : "s", (long long)want, unit);
    if (miss > 0) {
        tpd_str_printf(&x->vf, " (%d micro-batches' worth: %d backward calls expected)",
                       m->nbwd + miss, m->nbwd + miss);
        tpd_actx_why(x, "data",
                     "%s missing: the last update (%lld) of the micro-batch run holds %d "
                     "micro-batch%s (%lld %s) where the reference's covers %lld %s, %d "
                     "micro-batches' worth, so the micro-batch run stops %d micro-batch%s short "
                     "of the reference's data; no normalisation of its losses can make up "
                     "for it: the two runs must see the same samples in each update",
                     miss == 1 ? "a micro-batch is" : "micro-batches are", (long long)u, m->nbwd,
                     m->nbwd == 1 ? "" : "es", (long long)have, unit, (long long)want, unit,
                     m->nbwd + miss, miss, miss == 1 ? "" : "es");
        return;
    }
    tpd_actx_why(x, "data",
                 "the last update (%lld) of the micro-batch run covers %lld %s in %d micro-batch%s "
                 "where the reference's covers %lld %s: the micro-batch run stops short of the "
                 "reference's data, and no normalisation of its losses can make up for it: the "
                 "two runs must see the same samples in each update",
                 (long long)u, (long long)have, unit, m->nbwd, m->nbwd == 1 ? "" : "es",
                 (long long)want, unit);
}

bool tpd_actx_phase_steps(tpd_actx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m;
    int64_t want = x->N * (f->nbwd > 0 ? f->nbwd : 1), have_n, want_n;
    const char *unit;
    if ((size_t)u >= x->wm.n) {
        diverge(x, u, "optimizer.steps");
        tpd_str_printf(&x->vm,
                       "%zu optimizer updates in all, then %d backward calls without a "
                       "step",
                       x->wm.n, x->wm.tail.nbwd);
        tpd_str_printf(&x->vf, "at least %lld updates", (long long)x->U);
        if (x->wm.tail.nbwd > 0)
            tpd_actx_why(x, "optimizer.steps",
                         "the optimizer did not step after the last micro-batch of update %lld: "
                         "the micro-batch run made %zu updates",
                         (long long)u, x->wm.n);
        else
            tpd_actx_why(x, "data",
                         "the micro-batch run ended after %zu updates, with no backward call "
                         "after its last step: its data ran out before the reference's (the two "
                         "runs do not see the same samples)",
                         x->wm.n);
        x->explained = true;
        return true;
    }
    m = &x->wm.v[u];
    if (m->nbwd == want) return false;
    if (m->nbwd < want && (size_t)u + 1 == x->wm.n && (size_t)u + 1 == x->wf.n &&
        x->wm.tail.nbwd == 0) {
        /* the final window of both runs: the data ran out, alike in both
         * unless what the windows counted says otherwise */
        bool counted = tpd_awin_counts(m, f, &have_n, &want_n, &unit);
        if (counted && have_n < want_n) {
            short_window(x, u, have_n, want_n, unit);
            return true;
        }
        /* more samples than the reference's in fewer calls: not the data
         * running out (the call counts speak, below) */
        if (!counted || have_n == want_n || strcmp(unit, "samples") != 0) return false;
    }
    diverge(x, u, "optimizer.steps");
    x->explained = true;
    tpd_str_printf(&x->vm, "1 optimizer step after %d backward call%s", m->nbwd,
                   m->nbwd == 1 ? "" : "s");
    tpd_str_printf(&x->vf, "1 optimizer step after %d backward call%s (x N=%lld: %lld expected)",
                   f->nbwd, f->nbwd == 1 ? "" : "s", (long long)x->N, (long long)want);
    if (m->nbwd < want)
        tpd_actx_why(x, "optimizer.steps",
                     "the optimizer stepped before the last micro-batch: after %d of %lld backward "
                     "calls%s",
                     m->nbwd, (long long)want,
                     m->nbwd == 1 ? " (an optimizer step per micro-batch)" : "");
    else
        tpd_actx_why(x, "optimizer.steps",
                     "the optimizer did not step after the last micro-batch: %d backward calls "
                     "accumulated into update %lld, %lld expected",
                     m->nbwd, (long long)u, (long long)want);
    return true;
}

bool tpd_actx_phase_loss(tpd_actx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    double k;
    tpd_ratio_cause c;
    const char *ct;
    if (!f->loss_known || !m->loss_known || f->nbwd == 0) return false;
    if (fabs(m->loss - f->loss) <= x->o.atol + x->o.rtol * fabs(f->loss)) return false;
    diverge(x, u, "loss_accounting.denominator");
    if (m->nbwd == 1)
        tpd_str_printf(&x->vm, "%.9g (the 1 backpropagated micro-batch loss)", m->loss);
    else
        tpd_str_printf(&x->vm, "%.9g (the sum of %d backpropagated micro-batch losses)", m->loss,
                       m->nbwd);
    tpd_str_printf(&x->vf, "%.9g (the full-batch loss)", f->loss);
    k = f->loss != 0 ? m->loss / f->loss : NAN;
    c = tpd_ratio_cause_of(k, x->N, m->nbwd);
    if ((ct = cause_text(c)) != NULL) {
        char why[256] = "";
        /* the backward count names the window, element counts or not; with
         * one micro-batch k/N is 1/N, and the full updates before it
         * matched, so the losses are divided by N once */
        if (c == TPD_RC_PARTIAL)
            snprintf(why, sizeof why,
                     " (the backward calls name it: this update, the last of both runs, holds %d "
                     "where a full one holds N=%lld%s)",
                     m->nbwd, (long long)x->N,
                     m->nbwd == 1 && u > 0 ? "; the full updates before it matched, so each loss "
                                             "was divided by N once, not twice"
                                           : "");
        tpd_actx_why(x, "loss_accounting",
                     "the micro-batch %s %.6g x the full-batch loss (N=%lld, %d micro-batch%s in "
                     "this update): %s%s",
                     m->nbwd == 1 ? "loss is" : "losses sum to", k, (long long)x->N, m->nbwd,
                     m->nbwd == 1 ? "" : "es", ct, why);
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
            tpd_actx_why(x, "loss_accounting",
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
        tpd_actx_why(
            x, "batchnorm",
            "the model has BatchNorm, which normalises each micro-batch with its own "
            "statistics: the micro-batch losses and gradients differ from the full batch's "
            "even when the loss accounting is right");
        return true;
    }
    /* the last update of both runs with fewer backward calls than N: the
     * backward calls name an incomplete window whatever the factor; a
     * factor other than k/N has no cause the evidence names */
    if (m->nbwd < x->N && (size_t)u + 1 == x->wm.n && (size_t)u + 1 == x->wf.n) {
        tpd_actx_why(x, "loss_accounting",
                     "an incomplete final window: the last update (%lld) of the micro-batch run "
                     "holds %d backward call%s where N=%lld, and its losses sum to %.6g x the "
                     "full-batch loss, not the window's k/N = %.6g; the evidence does not say "
                     "whether this window's losses are normalised otherwise or the reference's "
                     "last update holds other samples (%s)",
                     (long long)u, m->nbwd, m->nbwd == 1 ? "" : "s", (long long)x->N, k,
                     (double)m->nbwd / (double)x->N,
                     m->nmean == m->nbwd ? "the element counts of the losses show no mean of means"
                                         : "the losses said no element counts, so the samples "
                                           "cannot be counted");
        return true;
    }
    /* no factor the evidence explains: say so rather than guess one */
    tpd_actx_why(x, "loss_accounting",
                 "the micro-batch losses sum to %.6g x the full-batch loss (N=%lld, %d "
                 "micro-batch%s in this update) and the evidence names no cause: the factor is "
                 "neither N, 1/N nor an incomplete window's k/N, and %s",
                 k, (long long)x->N, m->nbwd, m->nbwd == 1 ? "" : "es",
                 m->nmean == m->nbwd ? "the element counts of the losses show no mean of means"
                                     : "the losses said no element counts (a loss computed by "
                                       "hand), so a mean of means cannot be told");
    return true;
}

/* scale_cause explains gradients k x the reference's by a GradScaler's
 * scale: the micro-batch run's S (it stepped on still-scaled gradients), or
 * 1/S of the reference's (the reference did). */
static bool scale_cause(tpd_actx *x, int64_t u, double k)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    if (m->has_scale && m->scale > 1 && tpd_near_factor(k, m->scale)) {
        tpd_actx_why(x, "amp",
                     "the gradient is %.6g x the reference's, and %.6g is the GradScaler's scale "
                     "S in this update: the optimizer stepped on gradients still multiplied by S "
                     "(GradScaler.unscale_ ran %d time%s before this step, the reference's %d); "
                     "unscale (GradScaler.unscale_, or scaler.step) before the optimizer steps",
                     k, m->scale, m->nunscale, m->nunscale == 1 ? "" : "s", f->nunscale);
        return true;
    }
    if (f->has_scale && f->scale > 1 && tpd_near_factor(k, 1 / f->scale)) {
        tpd_actx_why(x, "amp",
                     "the reference's gradient is %.6g x the micro-batch run's, and %.6g is the "
                     "reference's GradScaler scale S: the reference stepped on gradients still "
                     "multiplied by S (GradScaler.unscale_ ran %d time%s before its step, the "
                     "micro-batch run's %d)",
                     1 / k, f->scale, f->nunscale, f->nunscale == 1 ? "" : "s", m->nunscale);
        return true;
    }
    return false;
}

/* carry_over: the gradient minus the micro-batch run's previous one is the
 * reference's (zero_grad does not run after the step). */
static bool carry_over(tpd_actx *x, int64_t u, const tpd_item *im, const tcmp *t)
{
    const tpd_item *prev = u > 0 ? tpd_actx_find_at(x->pm, u - 1, im->path) : NULL;
    double *p = NULL;
    size_t np;
    bool yes = false;
    if (prev && tpd_values_read(x->run, &prev->v, &p, &np) == TP_OK && np == t->n) {
        for (size_t i = 0; i < np; i++) p[i] = t->a[i] - p[i];
        yes = tpd_values_within(p, t->b, np, x->o.rtol * 10, x->o.atol * 10, NULL);
    }
    free(p);
    return yes;
}

/* all_zero: the tensor is zero throughout (its values when captured, else
 * its statistics). */
static bool all_zero(const tpd_val *v, const double *vals, size_t n)
{
    if (v->kind != 't') return false;
    if (vals == NULL) return v->stats.maxabs == 0 && v->stats.nonfinite == 0;
    for (size_t i = 0; i < n; i++)
        if (vals[i] != 0) return false;
    return true;
}

/* zero_call names a zero_grad call by its mark's "which". */
static const char *zero_call(const char *which)
{
    return which && strcmp(which, "module") == 0 ? "model.zero_grad" : "optimizer.zero_grad";
}

/* zero_cause writes to buf (the clause after "although N backward calls
 * ran in this update") why update u's gradients were gone at its step in
 * the run of windows ws (zeros: set_to_none=False left zeros, else they were
 * None).  From the marks when the run reported zero_grad calls: the call
 * between the update's last backward and its step, or that none came
 * there; else inferred from the gradients alone (no zero_grad reported: an
 * agent without the zero_grad hook, or .grad cleared by hand).  Returns
 * whether the clause puts it down to zero_grad. */
static bool zero_cause(char *buf, size_t n, const tpd_awins *ws, int64_t u, bool zeros)
{
    const tpd_awin *w = &ws->v[u];
    if (w->zero_at_step) {
        snprintf(buf, n,
                 "zero_grad (%s) was called after the last backward of update %lld and before "
                 "its optimizer step%s, so the step had no gradients to apply",
                 zero_call(w->zero_at_step), (long long)u,
                 zeros ? ", and set_to_none=False leaves zeros" : "");
        return true;
    }
    if (ws->nzero > 0) {
        snprintf(buf, n,
                 "no zero_grad call came between its last backward and its optimizer step (the "
                 "run called zero_grad %d time%s, elsewhere), so the gradients were %s another "
                 "way (.grad %s by hand?) and the step had nothing to apply",
                 ws->nzero, ws->nzero == 1 ? "" : "s", zeros ? "zeroed" : "cleared",
                 zeros ? "zeroed" : "set to None");
        return false;
    }
    snprintf(buf, n,
             "zero_grad ran before the optimizer step instead of after it%s, so the step had "
             "nothing to apply (inferred: the run reported no zero_grad call, so this rests on "
             "the gradients at the step%s)",
             zeros ? " (set_to_none=False leaves zeros)" : "",
             zeros ? "" : ", and only clearing .grad empties them after a backward");
    return true;
}

/* zeroed explains a gradient p that is zero at the micro-batch run's
 * step of update u while the reference's is not: every gradient zero there
 * after backward calls is what zero_grad(set_to_none=False) before the step
 * leaves. */
static void zeroed(tpd_actx *x, int64_t u, const char *p)
{
    const tpd_awin *m = &x->wm.v[u];
    size_t lo, hi, n = 0, zero = 0;
    char cause[512];
    bool zg;
    tpd_actx_items_at(x->pm, u, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *it = &x->pm->timeline.v[i];
        if (!in_phase(it, TPD_G_GRAD, "grad.")) continue;
        n++;
        if (all_zero(&it->v, NULL, 0)) zero++;
    }
    if (zero == n) {
        zg = zero_cause(cause, sizeof cause, &x->wm, u, true);
        tpd_actx_why(x, zg ? "zero_grad" : "grad",
                     "the gradients were all zero at the optimizer step of update %lld in the "
                     "micro-batch run (all %zu parameters) although %d backward call%s ran in "
                     "this update: %s",
                     (long long)u, n, m->nbwd, m->nbwd == 1 ? "" : "s", cause);
    } else
        tpd_actx_why(x, "grad",
                     "%s was zero at the optimizer step of update %lld in the micro-batch run "
                     "(%zu of %zu gradients zero there) although %d backward call%s ran in this "
                     "update: the parameter took no part in its losses, or its gradient was "
                     "zeroed before the step",
                     p, (long long)u, zero, n, m->nbwd, m->nbwd == 1 ? "" : "s");
}

/* carry_text writes the carry-over line for update u of the micro-batch
 * run: from the marks when it reported zero_grad calls (none between the
 * previous step and this update's first backward), else from the values
 * alone. */
static void carry_text(tpd_actx *x, int64_t u)
{
    const tpd_awin *m = &x->wm.v[u];
    if (x->wm.nzero > 0 && m->nzero_lead == 0)
        tpd_actx_why(x, "zero_grad",
                     "carry-over: the gradient minus the previous update's is the reference's "
                     "gradient, and no zero_grad call came between update %lld's optimizer step "
                     "and update %lld's first backward (the run called zero_grad %d time%s, "
                     "elsewhere), so zero_grad does not run after the optimizer step",
                     (long long)u - 1, (long long)u, x->wm.nzero, x->wm.nzero == 1 ? "" : "s");
    else if (x->wm.nzero > 0)
        tpd_actx_why(x, "grad",
                     "carry-over: the gradient minus the previous update's is the reference's "
                     "gradient, although zero_grad was called before update %lld's first "
                     "backward: it did not clear this parameter's gradient (a zero_grad of an "
                     "optimizer or module that does not hold it?)",
                     (long long)u);
    else
        tpd_actx_why(x, "grad",
                     "carry-over: the gradient minus the previous update's is the "
                     "reference's gradient, so zero_grad does not run after the "
                     "optimizer step");
}

/* grad_causes explains a gradient difference of update u. */
static void grad_causes(tpd_actx *x, int64_t u, const tpd_item *im, const tpd_item *ifr,
                        const tcmp *t)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    bool said = false;
    if (all_zero(&im->v, t->a, t->n) && !all_zero(&ifr->v, t->b, t->n) && m->nbwd > 0) {
        zeroed(x, u, im->path);
        said = x->explained = true;
    }
    if (!said && t->a && t->b) {
        double k, resid;
        tpd_values_fit(t->a, t->b, t->n, &k, &resid);
        if (resid < 1e-3) {
            const char *ct = cause_text(tpd_ratio_cause_of(k, x->N, m->nbwd));
            if (ct) {
                tpd_actx_why(x, "grad", "the gradient is %.6g x the reference's: %s", k, ct);
                said = x->explained = true;
            } else if (scale_cause(x, u, k)) {
                said = x->explained = true;
            }
        }
        if (!said && carry_over(x, u, im, t)) {
            carry_text(x, u);
            said = x->explained = true;
        }
    }
    if (m->nclip > f->nclip) {
        tpd_actx_why(x, "grad",
                     "clipping ran per micro-batch: %d clip calls in this update (the reference: "
                     "%d)%s",
                     m->nclip, f->nclip,
                     m->clip_active
                         ? ", and a norm exceeded its threshold, so each partial sum was "
                           "clipped rather than the accumulated gradient"
                         : "");
        said = x->explained = true;
    }
    if (m->nunscale > f->nunscale) {
        tpd_actx_why(x, "grad",
                     "GradScaler.unscale_ ran %d times in this update (the reference: %d): "
                     "unscaling per micro-batch divides what is already unscaled or mixes scaled "
                     "and unscaled gradients; unscale once, at the boundary",
                     m->nunscale, f->nunscale);
        said = x->explained = true;
    }
    if (has_batchnorm(x->pm))
        tpd_actx_why(x, "batchnorm",
                     "the model has BatchNorm, which normalises each micro-batch with its own "
                     "statistics: micro-batch gradients differ from the full batch's even when the "
                     "loss accounting is right");
    else if (!said)
        tpd_actx_why(x, "grad",
                     "the losses are accounted alike but the gradients differ, and the evidence "
                     "names no cause: %s, clipping and GradScaler.unscale_ ran no more often than "
                     "in the reference",
                     t->a && t->b ? "the gradient is no factor of N or of a GradScaler's scale "
                                    "times the reference's, it does not hold the previous "
                                    "update's"
                                  : "the gradients' values were not captured, so no factor "
                                    "could be fitted");
}

/* grad_absent explains a gradient one run has at its optimizer step of
 * update u and the other does not (p: the path; micro: the micro-batch run
 * lacks it). */
static void grad_absent(tpd_actx *x, int64_t u, const char *p, bool micro)
{
    const tpd_proc *has = micro ? x->pf : x->pm, *lacks = micro ? x->pm : x->pf;
    const tpd_awin *w = micro ? &x->wm.v[u] : &x->wf.v[u];
    const char *who = micro ? "the micro-batch run" : "the reference";
    size_t lo, hi, n = 0, gone = 0;
    tpd_actx_items_at(has, u, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const tpd_item *it = &has->timeline.v[i];
        if (!in_phase(it, TPD_G_GRAD, "grad.")) continue;
        n++;
        if (tpd_actx_find_at(lacks, u, it->path) == NULL) gone++;
    }
    x->explained = true; /* random draws do not take a gradient away */
    if (gone == n && w->nbwd > 0) {
        char cause[512];
        bool zg = zero_cause(cause, sizeof cause, micro ? &x->wm : &x->wf, u, false);
        tpd_actx_why(x, zg ? "zero_grad" : "grad",
                     "the gradients were absent at the optimizer step of update %lld in %s (.grad "
                     "None for all %zu parameters) although %d backward call%s ran in this "
                     "update: %s",
                     (long long)u, who, n, w->nbwd, w->nbwd == 1 ? "" : "s", cause);
        return;
    }
    tpd_actx_why(x, "grad",
                 "%s had no gradient at the optimizer step of update %lld in %s (%zu of %zu "
                 "parameters' gradients absent there): the parameter took no part in its "
                 "losses, or its gradient was cleared before the step",
                 p, (long long)u, who, gone, n);
}

bool tpd_actx_phase_grad(tpd_actx *x, int64_t u)
{
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (!compare_items(x, u, u, TPD_G_GRAD, "grad.", &t, &im, &ifr)) return false;
    if (im && ifr)
        grad_causes(x, u, im, ifr, &t);
    else if (ifr)
        grad_absent(x, u, ifr->path, true);
    else if (im)
        grad_absent(x, u, im->path, false);
    tcmp_free(&t);
    return true;
}

bool tpd_actx_phase_state(tpd_actx *x, int64_t u)
{
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (!has_step(x->pf, u + 1) || !has_step(x->pm, u + 1)) return false;
    if (!compare_items(x, u, u + 1, TPD_G_OPTIMIZER, "optimizer.state.", &t, &im, &ifr))
        return false;
    tpd_actx_why(x, "optimizer.state",
                 "the gradients of update %lld agree but the optimizer state after it differs",
                 (long long)u);
    x->explained = true; /* equal gradients: the random draws fed the same update */
    tcmp_free(&t);
    return true;
}

bool tpd_actx_phase_model(tpd_actx *x, int64_t u)
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
        tpd_actx_why(x, "scheduler",
                     "the gradients agree but the learning rate of update %lld was %.6g in the "
                     "micro-batch run and %.6g in the reference: the scheduler stepped %d times "
                     "before this optimizer step (the reference: %d), i.e. per micro-batch",
                     (long long)u, m->lr, f->lr, m->nsched, f->nsched);
        said = true;
    }
    if (m->nclip > f->nclip) {
        tpd_actx_why(x, "clip",
                     "the gradients agree but clipping ran %d times in this update (the "
                     "reference: %d): clipping per micro-batch",
                     m->nclip, f->nclip);
        said = true;
    }
    if (m->skipped != f->skipped) {
        tpd_actx_why(x, "amp", "the GradScaler skipped this update in %s only",
                     m->skipped ? "the micro-batch run" : "the reference");
        said = true;
    }
    if (!said)
        tpd_actx_why(x, "model",
                     "the gradients and optimizer state agree but the weights after "
                     "update %lld differ (clipping or a scheduler stepping per micro-batch, or a "
                     "hyperparameter that depends on the batch)",
                     (long long)u);
    return true;
}

bool tpd_actx_phase_sched(tpd_actx *x, int64_t u)
{
    const tpd_awin *f = &x->wf.v[u], *m = &x->wm.v[u];
    tcmp t;
    const tpd_item *im = NULL, *ifr = NULL;
    if (has_step(x->pf, u + 1) && has_step(x->pm, u + 1) &&
        compare_items(x, u, u + 1, TPD_G_SCHEDULER, "scheduler", &t, &im, &ifr)) {
        tcmp_free(&t);
        x->explained = true;
        tpd_actx_why(x, "scheduler",
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
    tpd_actx_why(x, "scheduler", "the scheduler steps %s per update than the reference does",
                 m->nsched > f->nsched ? "more often" : "less often");
    return true;
}
