/* SPDX-License-Identifier: MIT
 * verdict.c -- golden-run regression: preconditions (ERROR), C against D
 * (ABSTAIN), C against the golden run G (FAIL or PASS), and the report.
 * The comparisons are pair.c's, the explanation of a FAIL why.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/json.h"
#include "daemon/checks/divergence.h"
#include "daemon/checks/narrow.h"
#include "daemon/checks/compare/ctx.h"
#include "daemon/checks/compare/verdict.h"
#include "daemon/checks/params.h"
#include "daemon/checks/render.h"
#include "daemon/checks/trust.h"

typedef tpd_gctx ctx;

static const char *role_name(const char *role)
{
    switch (role[0]) {
    case 'G':
        return "G (golden)";
    case 'C':
        return "C (this run)";
    case 'D':
        return "D (again)";
    }
    return role;
}

int64_t tpd_golden_against(const tpd_run *r)
{
    tpd_params p;
    int64_t id;
    tpd_params_parse(&p, r->params, NULL, 0);
    id = tpd_param_int(&p, TPP_compare_against);
    tpd_params_clear(&p);
    return id;
}

bool tpd_golden_light(const tpd_run *r)
{
    tpd_params p;
    const char *d;
    bool light;
    tpd_params_parse(&p, r->params, NULL, 0);
    d = tpd_param_str(&p, TPP_compare_digest);
    light = d == NULL || strcmp(d, "full") != 0;
    tpd_params_clear(&p);
    return light;
}

/* ---- the report ---- */

static json_t *first_json(const tpd_gpair *p, const tpd_div *d)
{
    json_t *o = json_object();
    char between[8];
    bool bad = false;
    snprintf(between, sizeof between, "%s-%s", p->la, p->lb);
    bad |= !tpd_jset(o, "between", json_string(between));
    bad |= !tpd_jset(o, "step", tpd_json_int(d->step_a));
    bad |= !tpd_jset(o, "step_other", tpd_json_int(d->step_b));
    bad |= !tpd_jset(o, "path", tpd_json_str(d->path));
    bad |= !tpd_jset(o, "group", json_string(tpd_group_name(d->group)));
    bad |= !tpd_jset(o, "unsure", tpd_json_bool(d->unsure));
    bad |= !tpd_jset(o, p->la, tpd_json_val(d->a ? &d->a->v : NULL));
    bad |= !tpd_jset(o, p->lb, tpd_json_val(d->b ? &d->b->v : NULL));
    return tpd_jdone(o, bad);
}

/* evidence_json: the executions (G first, under that role), the wall time,
 * the golden run and whether determinism was checked. */
static json_t *evidence_json(ctx *x)
{
    tpd_exec g;
    const tpd_exec *ex[3] = {NULL, x->C, x->D};
    const tpd_proc *px[3] = {x->pg, x->pc, x->pd};
    json_t *o = json_object(), *against = json_object();
    bool bad = false;
    if (x->G != NULL) { /* the golden run's "record" execution, as G */
        g = *x->G;
        g.role = "G";
        ex[0] = &g;
    }
    bad |= !tpd_jset(o, "executions", tpd_json_execs(ex, px, 3));
    bad |= !tpd_jset(o, "wall_time", tpd_json_wall(x->run));
    bad |= !tpd_jset(against, "run", tpd_json_int(tpd_golden_against(x->run)));
    bad |= !tpd_jset(against, "name", tpd_json_str(x->golden ? x->golden->name : NULL));
    bad |= !tpd_jset(o, "against", against);
    bad |= !tpd_jset(o, "determinism", json_string(x->once ? "not checked" : "checked"));
    bad |= !tpd_jset(o, "induction", tpd_compare_induction_json(x));
    return tpd_jdone(o, bad);
}

/* report_json builds the JSON report; p and d are the divergence reported
 * (NULL: none), all what differs at its step. */
static char *report_json(ctx *x, tpd_outcome oc, const tpd_gpair *p, const tpd_div *d,
                         const tpd_divergences *all)
{
    json_t *j = tpd_report_new("compare", x->run->id, oc);
    bool bad = !tpd_jset(j, "comparison", tpd_json_comparison(x->o));
    bad |= !tpd_jset(j, "first_divergence", d ? first_json(p, d) : json_null());
    bad |= !tpd_jset(j, "divergences", tpd_json_divergences(all, p ? p->la : "G", p ? p->lb : "C"));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(&x->why));
    bad |= !tpd_jset(j, "evidence", evidence_json(x));
    return tpd_json_dump(tpd_jdone(j, bad));
}

static void free_ctx(ctx *x)
{
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_golden_pair_free(&x->gc);
    tpd_golden_pair_free(&x->cd);
}

/* finish writes the report of outcome oc, whose divergence (if any) is p's
 * first (tpd_golden_first), and frees x. */
static tp_err finish(ctx *x, tpd_outcome oc, const tpd_gpair *p, tpd_result *out)
{
    tpd_str t = {0};
    tpd_divergences all = {0};
    const tpd_div *d = p ? tpd_golden_first(p) : NULL;
    tp_err rc = TP_OK;
    if (d != NULL) rc = tpd_golden_divergences(&all, x->run, p, d, x->o);
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    out->narrow = x->narrow;
    out->narrow_b = x->narrow_d;
    out->narrow_from = x->narrow_from;
    out->narrow_to = x->narrow_to;
    /* --once: D runs only when C alone FAILs (result.h) */
    out->second = x->once && oc == TPD_FAIL;
    tpd_str_printf(&t, "compare: %s\n", tpd_outcome_name(oc));
    tpd_compare_induction_text(x);
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    tpd_str_puts(&t, "  comparison  ");
    tpd_render_comparison(&t, x->o);
    tpd_str_puts(&t, "\n");
    if (d != NULL) {
        tpd_golden_first_text(&t, p, d, &all, p->la[0] == 'C' ? " between C and D" : "",
                              role_name(p->la), role_name(p->lb));
        out->has_step = true;
        out->step = d->step_a;
        snprintf(out->path, sizeof out->path, "%s", d->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the observations)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }
    out->text = tpd_str_steal(&t);
    if (rc == TP_OK) out->json = report_json(x, oc, p, d, &all);
    tpd_divergences_free(&all);
    free_ctx(x);
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
    return finish(x, TPD_ERROR, NULL, out);
}

/* ---- preconditions ---- */

/* exec_problem applies the trust rule (checks/trust.h) to e: it ran a
 * Python training that made an optimizer step, exited 0 and lost nothing. */
static const char *exec_problem(const tpd_exec *e, const char *who, char *buf, size_t n)
{
    const tpd_trust t = {
        .who = who, .who_procs = true, .crash = true, .steps = true, .trainer = true};
    return tpd_exec_problem(e, &t, buf, n);
}

/* golden_wrote says whether g (the golden run's trainer) saved checkpoint l. */
static bool golden_wrote(const tpd_proc *g, const tpd_ckpt *l)
{
    for (size_t i = 0; g != NULL && i < g->nckpts; i++)
        if (!g->ckpts[i].load && tpd_same_ckpt(&g->ckpts[i], l)) return true;
    return false;
}

static void head_lines(ctx *x)
{
    const tpd_run *g = x->golden;
    tpd_str_printf(&x->head, "  golden      run %lld", (long long)g->id);
    if (g->name) tpd_str_printf(&x->head, " \"%s\"", g->name);
    if (x->G->argv_json) {
        tpd_str_puts(&x->head, ": ");
        tpd_golden_argv_text(&x->head, x->G->argv_json);
    }
    tpd_str_printf(&x->head, "\n  executions  G %lld steps, C %lld steps", (long long)x->pg->steps,
                   (long long)x->pc->steps);
    if (x->pd) tpd_str_printf(&x->head, ", D %lld steps", (long long)x->pd->steps);
    tpd_str_puts(&x->head, "\n");
}

/* ---- the verdict ---- */

/* what the determinism line adds when --once ran D (second) */
#define ONCE_D "; --once: D ran because C differs from G"

tp_err tpd_verdict_compare(const tpd_run *r, const tpd_run *g, const char *gwhy,
                           const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    char buf[1024], who[64];
    const char *why;
    const tpd_div *dgc, *dcd;
    tpd_params params;
    bool once;
    memset(&x, 0, sizeof x);
    x.run = r;
    x.golden = g;
    x.o = o;
    tpd_params_parse(&params, r->params, NULL, 0);
    once = tpd_param_bool(&params, TPP_compare_once);
    tpd_params_clear(&params);
    /* reruns that narrowed an induction-mode divergence stand in for the
     * first executions (induction.c) */
    x.C = tpd_standing(r, "C", "C2", &x.pc0);
    /* with --once, D runs only when C alone FAILs: it then tells a
     * regression from a script that differs from itself, as without */
    x.D = tpd_standing(r, "D", "D2", &x.pd0);
    x.once = once && x.D == NULL;
    x.pc = x.C ? tpd_obs_trainer(x.C) : NULL;
    x.pd = x.D ? tpd_obs_trainer(x.D) : NULL;
    if (tpd_golden_against(r) < 0) return error(&x, out, "the run names no golden run");
    if (g == NULL)
        return error(&x, out, "the golden run %lld cannot be read: %s",
                     (long long)tpd_golden_against(r), gwhy ? gwhy : "?");
    if (g->check == NULL || strcmp(g->check, "record") != 0)
        return error(&x, out,
                     "the golden run %lld is a '%s' run: only a run stored by 'trainparity-run "
                     "record' is one execution to compare with",
                     (long long)g->id, g->check ? g->check : "?");
    x.G = tpd_obs_exec(g, "record");
    x.pg = x.G ? tpd_obs_trainer(x.G) : NULL;
    snprintf(who, sizeof who, "G (golden run %lld)", (long long)g->id);
    if ((why = exec_problem(x.G, who, buf, sizeof buf)))
        return error(&x, out, "the golden run is not whole: %s", why);
    /* C or D that loaded a checkpoint of an earlier run (a script that
     * resumes on its own, finding what record left) starts elsewhere than
     * G did: that is the cause of whatever else differs, so it is named */
    for (int k = 0; k < 2; k++) {
        const tpd_proc *p = k ? x.pd : x.pc;
        const tpd_ckpt *f = tpd_foreign_load(p, x.pg);
        if (f != NULL)
            return error(&x, out,
                         "%s loaded %s, a checkpoint it did not write and the golden run did not "
                         "load (%s): move it away so that %s starts as the golden run did",
                         role_name(k ? "D" : "C"), f->name ? f->name : "a buffer",
                         golden_wrote(x.pg, f) ? "the golden run wrote it: record leaves what it "
                                                 "saves in place"
                                               : "left from an earlier run?",
                         k ? "D" : "C");
    }
    if ((why = exec_problem(x.C, role_name("C"), buf, sizeof buf)) ||
        (!x.once && (why = exec_problem(x.D, role_name("D"), buf, sizeof buf))))
        return error(&x, out, "%s", why);
    head_lines(&x);

    if (tpd_golden_pair(&x.gc, "G", x.pg, "C", x.pc, o) != TP_OK ||
        (!x.once && tpd_golden_pair(&x.cd, "C", x.pc, "D", x.pd, o) != TP_OK)) {
        free_ctx(&x);
        memset(out, 0, sizeof *out);
        return TP_ENOMEM;
    }
    dgc = tpd_golden_first(&x.gc);
    dcd = x.once ? NULL : tpd_golden_first(&x.cd);
    /* under the induction mode, a divergence after a light step is
     * narrowed before it is judged; and when nothing diverged, an end
     * whose state was not compared (no other outcome depends on it) */
    if (dgc != NULL) tpd_compare_locate(&x, &x.gc, false);
    if (dcd != NULL) tpd_compare_locate(&x, &x.cd, true);
    if (dgc == NULL && dcd == NULL) {
        tpd_compare_anchor(&x, &x.gc, false);
        if (!x.once) tpd_compare_anchor(&x, &x.cd, true);
    }
    if (x.once)
        tpd_str_puts(&x.head, "  determinism not checked (--once: C ran once)\n");
    else if (dcd == NULL)
        tpd_str_printf(&x.head,
                       "  determinism C and D match at every step (%lld steps compared%s)\n",
                       (long long)x.cd.cmp.steps, once ? ONCE_D : "");
    else
        tpd_str_printf(&x.head, "  determinism C and D %s from step %lld (%s%s)\n",
                       dcd->unsure ? "may differ" : "differ", (long long)dcd->step_a, dcd->path,
                       once ? ONCE_D : "");

    /* C's own numbering on both sides: G-C's step_b, C-D's step_a */
    if (dcd != NULL && (dgc == NULL || dcd->step_a <= dgc->step_b)) {
        if (x.cd.cmp.first.found)
            tpd_why_add(&x.why, "nondeterministic",
                        "C and D, the same command run twice, differ at step %lld (%s)%s: the "
                        "script differs from itself (the clock, the pid, unseeded randomness, "
                        "nondeterministic kernels), so a difference from the golden run cannot "
                        "be told from it",
                        (long long)dcd->step_a, dcd->path,
                        dgc ? ", at or before C's first divergence from G" : "");
        else if (!tpd_why_dkinds(&x.why, dcd, "C", "D"))
            tpd_why_add(&x.why, "values_needed",
                        "C and D may differ within the declared tolerance at step %lld (%s), and "
                        "statistics alone cannot show they do not",
                        (long long)dcd->step_a, dcd->path);
        return finish(&x, TPD_ABSTAIN, &x.cd, out);
    }
    if (x.gc.cmp.first.found) {
        tpd_golden_explain(&x.why, &x.gc, dgc, x.o);
        if (dcd != NULL)
            tpd_why_add(&x.why, "nondeterministic_later",
                        "C and D differ too, from step %lld on (%s): after this divergence",
                        (long long)dcd->step_a, dcd->path);
        if (x.once)
            tpd_why_add(&x.why, "determinism_not_checked",
                        "determinism was not checked (--once): a script that differs from "
                        "itself would show the same way");
        return finish(&x, TPD_FAIL, &x.gc, out);
    }
    if (dgc != NULL) {
        if (!tpd_why_dkinds(&x.why, dgc, "G", "C"))
            tpd_why_add(&x.why, "values_needed",
                        "with the declared tolerance, equality of %s at step %lld cannot be shown "
                        "from statistics alone",
                        dgc->path, (long long)dgc->step_a);
        return finish(&x, TPD_ABSTAIN, &x.gc, out);
    }
    tpd_str_printf(&x.head, "  C matched G at every step (%lld steps compared",
                   (long long)x.gc.cmp.steps);
    if (x.gc.sd.compared)
        tpd_str_printf(&x.head, ", %llu samples of the training stream",
                       (unsigned long long)x.gc.sd.compared);
    tpd_str_puts(&x.head, ")\n");
    if (x.gc.cmp.first_rng.found)
        tpd_why_add(&x.why, "rng_unused",
                    "%s differs at step %lld, but no observation depends on it: the runs do not "
                    "diverge, so it does not matter",
                    x.gc.cmp.first_rng.path, (long long)x.gc.cmp.first_rng.step_a);
    return finish(&x, TPD_PASS, NULL, out);
}
