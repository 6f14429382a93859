/* SPDX-License-Identifier: MIT
 * verdict.c -- resume parity: preconditions (ERROR), the baselines
 * (ABSTAIN), R against A (FAIL or PASS), and the report.  The explanation
 * of a FAIL is why.c's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/divergence.h"
#include "daemon/checks/narrow.h"
#include "daemon/checks/params.h"
#include "daemon/checks/render.h"
#include "daemon/checks/resume/ctx.h"
#include "daemon/checks/resume/verdict.h"
#include "daemon/checks/trust.h"

typedef tpd_rctx ctx;

/* ---- small helpers ---- */

static const char *role_name(const char *role)
{
    switch (role[0]) {
    case 'A':
        return "A (uninterrupted)";
    case 'B':
        return "B (uninterrupted)";
    case 'I':
        return "I (interrupted)";
    case 'R':
        return "R (resumed)";
    }
    return role;
}

const char *tpd_resume_base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : (path ? path : "a buffer");
}

/* ---- the report ---- */

/* evidence_json is the report's evidence: the executions, the check's wall
 * time, the aligned step, I's saves in the window, R's load and its state
 * after the load against I's (why.c). */
static json_t *evidence_json(ctx *x)
{
    const tpd_exec *ex[4] = {x->A, x->B, x->I, x->R};
    const tpd_proc *px[4] = {x->pa, x->pb, x->pi, x->pr};
    json_t *o = json_object(), *win = json_array(), *loaded = json_null();
    bool bad = win == NULL;
    for (size_t i = 0; x->pi && x->armed && i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (s->load || s->seq < x->armed->seq) continue;
        bad |=
            !tpd_jpush(win, json_pack("{s:o, s:o, s:I, s:o}", "name", tpd_json_str(s->name), "api",
                                      tpd_json_str(s->api), "step", (json_int_t)s->step, "digest",
                                      s->has_digest ? tpd_json_hex(s->digest, 16) : json_null()));
    }
    if (x->loaded)
        loaded = json_pack("{s:o, s:o}", "name", tpd_json_str(x->loaded->name), "via",
                           tpd_json_str(x->loaded->via));
    bad |= !tpd_jset(o, "executions", tpd_json_execs(ex, px, 4));
    bad |= !tpd_jset(o, "wall_time", tpd_json_wall(x->run));
    bad |= !tpd_jset(o, "aligned_step", tpd_json_int(x->c));
    bad |= !tpd_jset(o, "resumed_from_step", tpd_json_int(x->r0));
    bad |= !tpd_jset(o, "window", win);
    bad |= !tpd_jset(o, "loaded", loaded);
    bad |= !tpd_jset(o, "state_after_load", tpd_resume_after_load_json(x));
    bad |= !tpd_jset(o, "induction", tpd_resume_induction_json(x));
    return tpd_jdone(o, bad);
}

/* first_json is the first divergence d between A and vs, null when none. */
static json_t *first_json(const tpd_div *d, const char *vs)
{
    char between[8];
    json_t *o;
    bool bad;
    if (d == NULL) return json_null();
    snprintf(between, sizeof between, "A-%s", vs);
    o = json_pack("{s:s, s:I, s:I, s:o, s:s, s:b}", "between", between, "step",
                  (json_int_t)d->step_a, "step_other", (json_int_t)d->step_b, "path",
                  tpd_json_str(d->path), "group", tpd_group_name(d->group), "unsure", d->unsure);
    bad = !tpd_jset(o, "A", tpd_json_val(d->a ? &d->a->v : NULL));
    bad |= !tpd_jset(o, vs, tpd_json_val(d->b ? &d->b->v : NULL));
    return tpd_jdone(o, bad);
}

/* steps_text describes one side of a divergence in the number of steps:
 * k is 0 for A, 1 for the other run. */
static void steps_text(ctx *x, tpd_str *t, int k)
{
    int64_t n = x->steps[k].v.i, s0 = x->steps_from[k];
    tpd_str_printf(t, "%lld optimizer step%s from the aligned point", (long long)n,
                   n == 1 ? "" : "s");
    if (n == 1)
        tpd_str_printf(t, " (its step %lld)", (long long)s0);
    else if (n > 1)
        tpd_str_printf(t, " (its steps %lld to %lld)", (long long)s0, (long long)(s0 + n - 1));
}

/* first_lines writes the first divergence d into the text report: its step,
 * component and both values, the errors of captured values, and the other
 * components that differ at that step (all). */
static void first_lines(ctx *x, tpd_str *t, const tpd_div *d, const char *vs,
                        const tpd_divergences *all)
{
    const char *la = role_name(x->A->role), *lb = role_name(vs);
    bool counted = d->a == &x->steps[0];
    tpd_str_printf(t, "\nfirst divergence%s  step %lld",
                   vs[0] == 'B' ? " between the baselines" : "", (long long)d->step_a);
    if (vs[0] == 'R') tpd_str_printf(t, " (R's step %lld)", (long long)d->step_b);
    tpd_str_printf(t, "  %s\n    %-18s ", d->path, la);
    if (counted)
        steps_text(x, t, 0);
    else
        tpd_render_val(t, d->a ? &d->a->v : NULL);
    tpd_str_printf(t, "\n    %-18s ", lb);
    if (counted)
        steps_text(x, t, 1);
    else
        tpd_render_val(t, d->b ? &d->b->v : NULL);
    tpd_str_puts(t, "\n");
    if (all->n && all->v[0].has_errors) {
        tpd_str_puts(t, "    captured values    ");
        tpd_divergence_errors_text(t, &all->v[0]);
        tpd_str_puts(t, "\n");
    }
    tpd_divergences_others_text(t, all, 6);
}

/* divergences lists every component that differs at d's step (checks/divergence.h);
 * a divergence in the number of steps alone, since past the last step of
 * the shorter run the two sides are not comparable. */
static tp_err divergences(ctx *x, const tpd_div *d, const char *vs, tpd_divergences *all)
{
    const tpd_proc *po = vs[0] == 'B' ? x->pb : x->pr;
    bool counted = d->a == &x->steps[0];
    return tpd_divergences_at(all, x->run, d, counted ? NULL : &x->pa->timeline, d->step_a,
                              counted ? NULL : &po->timeline, d->step_b, x->o);
}

static tp_err finish(ctx *x, tpd_outcome oc, const tpd_cmp_result *cmp, const char *vs,
                     tpd_result *out)
{
    tpd_str t = {0};
    json_t *j;
    bool bad;
    tpd_divergences all = {0};
    const tpd_div *d = cmp && cmp->first.found          ? &cmp->first
                       : cmp && cmp->first_unsure.found ? &cmp->first_unsure
                                                        : NULL;
    tp_err rc = d ? divergences(x, d, vs, &all) : TP_OK;
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    out->narrow = x->narrow;
    out->narrow_b = x->narrow_b;
    out->narrow_from = x->narrow_from;
    out->narrow_to = x->narrow_to;
    out->narrow_r = x->narrow_r;
    out->narrow_r_from = x->narrow_r_from;
    out->narrow_r_to = x->narrow_r_to;
    /* --once: B runs only when R alone does not PASS, to tell a resume
     * that loses state from a script that differs from itself */
    out->second = x->once && (oc == TPD_FAIL || oc == TPD_ABSTAIN);
    if (x->once && oc == TPD_FAIL)
        tpd_why_add(&x->why, "determinism_not_checked",
                    "determinism was not checked (--once): a script that differs from itself "
                    "would show the same way");
    tpd_str_printf(&t, "resume: %s\n", tpd_outcome_name(oc));
    tpd_resume_induction_text(x);
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    tpd_str_puts(&t, "  comparison  ");
    tpd_render_comparison(&t, x->o);
    tpd_str_puts(&t, "\n");
    if (d != NULL) {
        first_lines(x, &t, d, vs, &all);
        out->has_step = true;
        out->step = d->step_a;
        snprintf(out->path, sizeof out->path, "%s", d->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }

    j = tpd_report_new("resume", x->run->id, oc);
    bad = !tpd_jset(j, "comparison", tpd_json_comparison(x->o));
    bad |= !tpd_jset(j, "first_divergence", first_json(d, vs));
    bad |= !tpd_jset(j, "divergences", tpd_json_divergences(&all, "A", vs));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(&x->why));
    bad |= !tpd_jset(j, "evidence", evidence_json(x));
    out->text = tpd_str_steal(&t);
    out->json = tpd_json_dump(tpd_jdone(j, bad));
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_stream_div_free(&x->sab);
    tpd_stream_div_free(&x->sra);
    tpd_divergences_free(&all);
    if (rc != TP_OK || out->text == NULL || out->json == NULL) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}

static tp_err error(ctx *x, tpd_result *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err error(ctx *x, tpd_result *out, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tpd_str_printf(&x->head, "  %s\n", line);
    return finish(x, TPD_ERROR, NULL, "R", out);
}

/* ---- preconditions ---- */

/* exec_problem applies the trust rule (checks/trust.h) to execution e: each
 * of the four must have made an optimizer step, and a training that the
 * agent ended on request (I, by design) has exited as expected. */
static const char *exec_problem(const tpd_exec *e, char *buf, size_t n)
{
    const tpd_trust t = {
        .who = role_name(e->role), .who_procs = true, .steps = true, .interrupt = true};
    return tpd_exec_problem(e, &t, buf, n);
}

/* head_lines writes the lines under the outcome; once: --once was given. */
static void head_lines(ctx *x, bool once)
{
    tpd_str_printf(&x->head, "  executions  A %lld steps", (long long)x->pa->steps);
    if (x->pb) tpd_str_printf(&x->head, ", B %lld steps", (long long)x->pb->steps);
    if (x->armed)
        tpd_str_printf(&x->head, ", I ended after its save at step %lld", (long long)x->c);
    if (x->pr) tpd_str_printf(&x->head, ", R %lld steps", (long long)x->pr->steps);
    tpd_str_puts(&x->head, "\n");
    if (x->once)
        tpd_str_puts(&x->head, "  determinism not checked (--once: B did not run)\n");
    else if (once)
        tpd_str_puts(&x->head, "  determinism A and B compared (--once: B ran because R did not "
                               "simply match A)\n");
    if (x->armed) {
        int n = 0, buffers = 0;
        tpd_str_puts(&x->head, "  window      I saved");
        for (size_t i = 0; i < x->pi->nckpts; i++) {
            const tpd_ckpt *s = &x->pi->ckpts[i];
            if (s->load || s->seq < x->armed->seq) continue;
            if (s->name == NULL)
                buffers++;
            else
                tpd_str_printf(&x->head, "%s %s", n++ ? "," : "", tpd_resume_base(s->name));
        }
        if (buffers)
            tpd_str_printf(&x->head, "%s %d checkpoint%s into a buffer", n ? "," : "", buffers,
                           buffers > 1 ? "s" : "");
        tpd_str_printf(&x->head, " at step %lld before the agent ended it\n", (long long)x->c);
    }
    if (x->loaded) {
        tpd_str_printf(&x->head, "  checkpoint  R loaded %s (%s, via %s) = I's save at step %lld\n",
                       x->loaded->name ? x->loaded->name : "a buffer",
                       x->loaded->api ? x->loaded->api : "?", x->loaded->via ? x->loaded->via : "?",
                       (long long)x->c);
    }
}

/* ---- the verdict ---- */

/* with_steps applies the step-count rule (tpd_compare_steps) to cmp, whose
 * runs trained na and nb steps from a0 and b0; x->steps holds the counts. */
static void with_steps(ctx *x, tpd_cmp_result *cmp, int64_t a0, int64_t na, int64_t b0, int64_t nb)
{
    x->steps_from[0] = a0;
    x->steps_from[1] = b0;
    tpd_compare_steps(cmp, x->steps, a0, na, b0, nb);
}

static tp_err nomem(ctx *x, tpd_result *out)
{
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_stream_div_free(&x->sab);
    tpd_stream_div_free(&x->sra);
    memset(out, 0, sizeof *out);
    return TP_ENOMEM;
}

/* ---- DDP's reduction order ----
 *
 * DistributedDataParallel all-reduces the gradients in buckets it builds at
 * construction, and rebuilds them in the order the gradients became ready
 * after its first iteration.  R's first step after its load is its DDP's
 * first iteration, while A's step at the same point reduces in the rebuilt
 * buckets: the offsets differ, so does gloo's or NCCL's order of summing
 * the ranks' contributions, and on more than two ranks a sum depends on its
 * order (tests/e2e/ddp_reduction_order.py shows it without the tool: every
 * rank's local gradients bit-identical, the reduced ones a few ulps apart,
 * identical again when R's buckets are rebuilt before its load).  From
 * there R's tensors drift from A's by rounding.  The rule (reduction_order)
 * takes a first divergence for that only when the evidence leaves nothing
 * else: R's first step of its process against a later step of A's, on more
 * than two ranks; on every rank, nothing but the gradients differs at that
 * step (loss, RNG, scheduler, learning rates; rank 0's model and optimizer
 * state); every rank's gradients are equal to rank 0's within each run (they
 * were all-reduced); and they differ from A's by no more than RO_RTOL of
 * their scale.  The rest of the run is then compared within DRIFT_RTOL of
 * the tensors' statistics and every other value exactly: a divergence
 * there FAILs as any other; none ABSTAINs, since statistics cannot show
 * equality (a declared tolerance with --capture values can). */

/* the gradients at that step: their statistics within this part of their
 * scale (stats_prove_diff's bounds, lockstep.c); a reordered sum of a few
 * float32 terms is a few ulps (6e-8) of the largest term */
#define RO_RTOL 1e-5
/* the tensors from the step after: rounding compounds over the steps */
#define DRIFT_RTOL 1e-3

/* step_items is [*lo, *hi) of l's items of step s (l is sorted by step). */
static void step_items(const tpd_items *l, int64_t s, size_t *lo, size_t *hi)
{
    size_t a = 0, b = l->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (l->v[m].step < s)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (a < l->n && l->v[a].step == s) a++;
    *hi = a;
}

/* rank_proc is e's process of rank k that stepped the most, or NULL. */
static const tpd_proc *rank_proc(const tpd_exec *e, int64_t k)
{
    const tpd_proc *best = NULL;
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *p = &e->procs[i];
        if (p->rank == k && p->steps > 0 && (best == NULL || p->steps > best->steps)) best = p;
    }
    return best;
}

/* grads_within says whether p's gradients at step sp and q's at sq are the
 * same components, each equal under o (o exact) or not proven different
 * by its statistics (o a tolerance without values); false when p has none.
 * *worst, when given, receives p's item whose statistics differ most. */
static bool grads_within(const tpd_proc *p, int64_t sp, const tpd_proc *q, int64_t sq,
                         const tpd_cmp_opts *o, const tpd_item **worst, const tpd_item **worst_q)
{
    size_t plo, phi, qlo, qhi, n = 0, nq = 0;
    double gap = -1;
    step_items(&p->timeline, sp, &plo, &phi);
    step_items(&q->timeline, sq, &qlo, &qhi);
    for (size_t j = qlo; j < qhi; j++) nq += q->timeline.v[j].group == TPD_G_GRAD;
    for (size_t i = plo; i < phi; i++) {
        const tpd_item *a = &p->timeline.v[i], *b = NULL;
        tpd_eq eq;
        if (a->group != TPD_G_GRAD) continue;
        for (size_t j = qlo; j < qhi && b == NULL; j++)
            if (q->timeline.v[j].group == TPD_G_GRAD && strcmp(q->timeline.v[j].path, a->path) == 0)
                b = &q->timeline.v[j];
        if (b == NULL || a->v.kind != 't') return false;
        eq = tpd_val_eq(&a->v, &b->v, o);
        if (o->tolerance ? eq == TPD_DIFF : eq != TPD_SAME) return false;
        n++;
        if (worst != NULL) {
            double d = fabs(a->v.stats.sum - b->v.stats.sum) / (fabs(b->v.stats.sum) + 1e-300);
            if (d > gap) {
                gap = d;
                *worst = a;
                *worst_q = b;
            }
        }
    }
    return n > 0 && n == nq;
}

/* has_loss says whether p reported a loss at step s. */
static bool has_loss(const tpd_proc *p, int64_t s)
{
    size_t lo, hi;
    step_items(&p->timeline, s, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (p->timeline.v[i].group == TPD_G_LOSS) return true;
    return false;
}

/* reduction_order applies the rule above to R's first divergence d from
 * A; true when DDP's reduction order explains it, then *wa and *wr are the
 * gradient of rank 0 whose sums differ most, A's and R's. */
static bool reduction_order(const ctx *x, const tpd_div *d, const tpd_item **wa,
                            const tpd_item **wr)
{
    static const tpd_cmp_opts exact = {0};
    const tpd_cmp_opts ro = {.tolerance = true, .rtol = RO_RTOL};
    int64_t w = x->pr->world;
    if (!d->found || d->group != TPD_G_GRAD || d->step_a != x->c || d->step_b != x->r0 ||
        x->r0 != 0 || x->c <= 0 || w <= 2 || x->pa->world != w || x->pa->rank != 0 ||
        x->pr->rank != 0)
        return false;
    if (!grads_within(x->pa, x->c, x->pr, x->r0, &ro, wa, wr)) return false;
    for (int64_t k = 0; k < w; k++) {
        const tpd_proc *a = rank_proc(x->A, k), *r = rank_proc(x->R, k);
        tpd_cmp_result c;
        if (a == NULL || r == NULL || !has_loss(a, x->c) || !has_loss(r, x->r0)) return false;
        tpd_compare(&a->timeline, x->c, &r->timeline, x->r0, x->o, &c);
        /* nothing but the gradients differs at that step */
        if (c.first_rng.found && c.first_rng.step_a <= x->c) return false;
        if (c.first_other.found &&
            (c.first_other.step_a < x->c ||
             (c.first_other.step_a == x->c && c.first_other.group != TPD_G_GRAD)))
            return false;
        /* the gradients were all-reduced: each run's equal on every rank,
         * and A's and R's apart by what an order explains */
        if (!grads_within(x->pa, x->c, a, x->c, &exact, NULL, NULL) ||
            !grads_within(x->pr, x->r0, r, x->r0, &exact, NULL, NULL) ||
            !grads_within(a, x->c, r, x->r0, &ro, NULL, NULL))
            return false;
    }
    return true;
}

/* reduction_order_why says what the rule found (ddp_reduction_order). */
static void reduction_order_why(ctx *x, const tpd_item *wa, const tpd_item *wr)
{
    tpd_why_add(&x->why, "ddp_reduction_order",
                "R's step %lld is its DDP's first iteration, which all-reduces the gradients in "
                "the buckets DistributedDataParallel builds at construction, where A's step %lld "
                "all-reduced them in the buckets it rebuilt after its first iteration "
                "(_rebuild_buckets): on %lld ranks a sum of the ranks' gradients depends on its "
                "order.  At that step every rank's loss, RNG, scheduler and learning rates (and "
                "rank 0's model and optimizer state) are %s in A and R, every rank's "
                "gradients equal rank 0's within each run, and they differ from A's by rounding "
                "alone (%s: sum %.9g in A, %.9g in R; every statistic within %g of its scale): "
                "DDP's reduction order explains the difference, not the checkpoint",
                (long long)x->r0, (long long)x->c, (long long)x->pr->world,
                x->o->tolerance ? "equal within the declared tolerance" : "bit-identical", wa->path,
                wa->v.stats.sum, wr->v.stats.sum, RO_RTOL);
}

tp_err tpd_verdict_resume(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    char buf[1024];
    const char *why;
    tpd_cmp_result ab, ra, rb;
    const tpd_ckpt *foreign;
    const tpd_item *wa = NULL, *wr = NULL;
    tpd_params params;
    bool once;
    memset(&x, 0, sizeof x);
    x.run = r;
    x.o = o;
    /* reruns that narrowed an induction-mode divergence stand in for the
     * first executions (induction.c) */
    x.A = tpd_standing(r, "A", "A2", &x.pa0);
    x.B = tpd_standing(r, "B", "B2", &x.pb0);
    x.I = tpd_standing(r, "I", "I2", NULL);
    x.R = tpd_standing(r, "R", "R2", &x.pr0);
    /* with --once, B runs only when R alone does not PASS (second) */
    tpd_params_parse(&params, r->params, NULL, 0);
    once = tpd_param_bool(&params, TPP_resume_once);
    x.once = once && x.B == NULL;
    tpd_params_clear(&params);
    if (!x.A || (!x.B && !x.once) || !x.I || !x.R)
        return error(&x, out, "the run lacks one of its four executions (A, B, I, R)");
    x.pa = tpd_obs_trainer(x.A);
    x.pb = tpd_obs_trainer(x.B);
    x.pi = tpd_obs_trainer(x.I);
    x.pr = tpd_obs_trainer(x.R);
    /* A baseline that loaded a checkpoint it did not write is the cause of
     * whatever else is wrong with it (a self-resuming script that found a
     * finished run's checkpoint runs no step), so it is named first. */
    for (int k = 0; k < 2; k++) {
        const tpd_proc *p = k ? x.pb : x.pa;
        if (p != NULL && (foreign = tpd_foreign_load(p, NULL)) != NULL)
            return error(&x, out,
                         "%s loaded %s, a checkpoint it did not write (left from an earlier run?): "
                         "move it away so that the baselines start from scratch",
                         role_name(k ? "B" : "A"), foreign->name ? foreign->name : "a buffer");
    }
    if ((why = exec_problem(x.A, buf, sizeof buf)) ||
        (x.B && (why = exec_problem(x.B, buf, sizeof buf))))
        return error(&x, out, "%s", why);
    /* I: the save that armed the interruption */
    if (x.pi != NULL)
        for (size_t i = 0; i < x.pi->nckpts && !x.armed; i++)
            if (x.pi->ckpts[i].armed) x.armed = &x.pi->ckpts[i];
    if (x.armed == NULL) {
        if ((why = exec_problem(x.I, buf, sizeof buf))) return error(&x, out, "%s", why);
        return error(&x, out, "I saved no checkpoint at or after step %lld: nothing to resume from",
                     (long long)(x.pi && x.pi->has_interrupt_at ? x.pi->interrupt_at : 0));
    }
    x.c = x.armed->step;
    if (x.pi->bye_reason == NULL || strcmp(x.pi->bye_reason, "interrupt") != 0) {
        if ((why = exec_problem(x.I, buf, sizeof buf))) return error(&x, out, "%s", why);
        return error(&x, out,
                     "I reached no training step after its save at step %lld (the last one?): "
                     "there is nothing left to resume; pass --at with an earlier step",
                     (long long)x.c);
    }
    if ((why = exec_problem(x.I, buf, sizeof buf)) || (why = exec_problem(x.R, buf, sizeof buf)))
        return error(&x, out, "%s", why);
    /* R: the load that aligns it */
    for (size_t i = 0; i < x.pr->nckpts && !x.loaded; i++) {
        const tpd_ckpt *l = &x.pr->ckpts[i];
        if (!l->load) continue;
        for (size_t k = 0; k < x.pi->nckpts; k++) {
            const tpd_ckpt *s = &x.pi->ckpts[k];
            if (!s->load && s->seq >= x.armed->seq && tpd_same_ckpt(s, l)) {
                x.loaded = l;
                x.saved = s;
                break;
            }
        }
    }
    if (x.loaded == NULL) {
        tpd_str l = {0};
        for (size_t i = 0; i < x.pr->nckpts; i++)
            if (x.pr->ckpts[i].load)
                tpd_str_printf(&l, "%s%s", l.len ? ", " : "", tpd_resume_base(x.pr->ckpts[i].name));
        error(&x, out, "R loaded no checkpoint of I's (I saved %s at step %lld; R loaded %s)",
              tpd_resume_base(x.armed->name), (long long)x.c, l.len ? l.s : "nothing");
        tpd_str_free(&l);
        return out->text ? TP_OK : TP_ENOMEM;
    }
    x.c = x.saved->step;
    x.r0 = x.loaded->step;
    head_lines(&x, once);

    /* the baselines: B, when it ran (with --once, only once R alone did not
     * PASS) */
    if (x.pb != NULL) {
        tpd_compare(&x.pa->timeline, 0, &x.pb->timeline, 0, o, &ab);
        if (tpd_stream_compare(x.pa, 0, x.pb, 0, &x.sab) != TP_OK) return nomem(&x, out);
        tpd_stream_merge(&ab, &x.sab);
        with_steps(&x, &ab, 0, x.pa->steps, 0, x.pb->steps);
        if (ab.first.found || ab.first_unsure.found) {
            tpd_resume_locate(&x, &ab, 0, &x.pb->timeline, 0, true);
            if (ab.first.found)
                tpd_why_add(
                    &x.why, "nondeterministic",
                    "the two uninterrupted runs differ, so nondeterminism in the training itself "
                    "(the clock, the pid, unseeded randomness, nondeterministic kernels) prevents "
                    "a judgment of the resume");
            else if (!tpd_why_dkinds(&x.why, &ab.first_unsure, "A", "B"))
                tpd_why_add(
                    &x.why, "values_needed",
                    "the baselines may differ within the declared tolerance, and statistics alone "
                    "cannot show they do not: rerun with --capture values");
            return finish(&x, TPD_ABSTAIN, &ab, "B", out);
        }
    }
    tpd_compare(&x.pa->timeline, x.c, &x.pr->timeline, x.r0, o, &ra);
    if (tpd_stream_compare(x.pa, x.c, x.pr, x.r0, &x.sra) != TP_OK) return nomem(&x, out);
    tpd_stream_merge(&ra, &x.sra);
    x.na = x.pa->steps - x.c;
    x.nr = x.pr->steps - x.r0;
    with_steps(&x, &ra, x.c, x.na, x.r0, x.nr);
    tpd_resume_locate(&x, &ra, x.c, &x.pr->timeline, x.r0, false);
    if (ra.first.found && reduction_order(&x, &ra.first, &wa, &wr)) {
        /* the rest of the run, past DDP's first iteration in R */
        tpd_cmp_opts drift = *o;
        drift.tolerance = true;
        drift.rtol = o->tolerance && o->rtol > DRIFT_RTOL ? o->rtol : DRIFT_RTOL;
        drift.atol = o->tolerance ? o->atol : 0;
        /* captured values are compared element by element only within a
         * declared tolerance: a relative one alone fails elements near 0 */
        drift.values = o->tolerance ? o->values : NULL;
        tpd_compare(&x.pa->timeline, x.c + 1, &x.pr->timeline, x.r0 + 1, &drift, &rb);
        tpd_stream_merge(&rb, &x.sra);
        with_steps(&x, &rb, x.c, x.na, x.r0, x.nr);
        reduction_order_why(&x, wa, wr);
        if (rb.first.found) {
            tpd_resume_locate(&x, &rb, x.c, &x.pr->timeline, x.r0, false);
            tpd_why_add(&x.why, "ddp_reduction_order",
                        "from there R's tensors differ from A's by rounding at least; compared "
                        "within %g of their statistics' scale, and every other value exactly, "
                        "the runs diverge beyond that at step %lld: %s",
                        drift.rtol, (long long)rb.first.step_a, rb.first.path);
            tpd_resume_explain(&x, &rb);
            return finish(&x, TPD_FAIL, &rb, "R", out);
        }
        tpd_why_add(&x.why, "ddp_reduction_order",
                    "from there R's tensors cannot match A's bit for bit: compared within %g of "
                    "their statistics' scale, and every other value exactly, nothing diverged "
                    "to the end (%lld steps compared), but statistics cannot show equality; a "
                    "declared tolerance (--rtol, --atol) with --capture values compares the "
                    "tensors element by element",
                    drift.rtol, (long long)rb.steps + 1);
        return finish(&x, TPD_ABSTAIN, &ra, "R", out);
    }
    if (ra.first.found) {
        tpd_resume_explain(&x, &ra);
        return finish(&x, TPD_FAIL, &ra, "R", out);
    }
    if (ra.first_unsure.found) {
        if (!tpd_why_dkinds(&x.why, &ra.first_unsure, "A", "R"))
            tpd_why_add(&x.why, "values_needed",
                        "with the declared tolerance, equality of %s cannot be shown from "
                        "statistics alone: rerun with --capture values",
                        ra.first_unsure.path);
        return finish(&x, TPD_ABSTAIN, &ra, "R", out);
    }
    if (tpd_resume_saves(&x, &ra.first)) {
        tpd_resume_explain_save(&x, &ra.first);
        return finish(&x, TPD_FAIL, &ra, "R", out);
    }
    tpd_resume_anchors(&x);
    tpd_str_printf(&x.head, "  R matched A at every step from %lld on (%lld steps compared",
                   (long long)x.c, (long long)ra.steps);
    if (x.sra.compared)
        tpd_str_printf(&x.head, ", %llu samples of the training stream",
                       (unsigned long long)x.sra.compared);
    tpd_str_puts(&x.head, ")\n");
    if (ra.first_rng.found)
        tpd_why_add(&x.why, "rng_unused",
                    "%s differs at step %lld, but no observation depends on it: the runs do not "
                    "diverge, so it does not matter",
                    ra.first_rng.path, (long long)ra.first_rng.step_a);
    return finish(&x, TPD_PASS, NULL, "R", out);
}
