/* SPDX-License-Identifier: MIT
 * report.c -- the accumulation report, text and JSON: the declared
 * equivalence, whether the initial states were verified equal, the first
 * divergence and every component that differs in its update, the
 * explanation, the executions and the updates side by side (ctx.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/accum/ctx.h"
#include "daemon/checks/divergence.h"
#include "daemon/checks/render.h"

typedef tpd_actx ctx;

static int64_t init_total(const ctx *x)
{
    int64_t n = 0;
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++) n += x->init_cmp[g];
    return n;
}

/* init_text: the line of the report that says whether the initial states
 * were verified equal, and from what. */
static void init_text(ctx *x, tpd_str *t)
{
    bool first = true;
    if (init_total(x) == 0) {
        tpd_str_puts(t, "  initial state  not verified: no state was captured at the first "
                        "backward\n");
        return;
    }
    /* what differs, or an RNG judged by the updates, has its own line */
    if (x->init_diff > 0 || x->init_rngs.len) return;
    tpd_str_puts(t, "  initial state  verified equal at the first backward, before any step "
                    "(values compared exactly: ");
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++) {
        if (x->init_cmp[g] == 0) continue;
        tpd_str_printf(t, "%s%s %lld", first ? "" : ", ", tpd_group_name((tpd_group)g),
                       (long long)x->init_cmp[g]);
        first = false;
    }
    tpd_str_puts(t, ")\n");
}

/* init_evidence: the evidence of the initial states. */
static json_t *init_evidence(ctx *x)
{
    json_t *o = json_object(), *cmp = json_object();
    bool bad = false;
    bad |=
        !tpd_jset(o, "verified_equal",
                  tpd_json_bool(init_total(x) > 0 && x->init_diff == 0 && x->init_rngs.len == 0));
    bad |=
        !tpd_jset(o, "at", json_string("the first backward, before any optimizer step (update 0)"));
    bad |= !tpd_jset(o, "comparison", json_string("exact (equal digests)"));
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++)
        if (g != TPD_G_MODULE || x->init_cmp[g] > 0) /* untrained modules: when there are any */
            bad |= !tpd_jset(cmp, tpd_group_name((tpd_group)g), tpd_json_int(x->init_cmp[g]));
    bad |= !tpd_jset(o, "compared", cmp);
    bad |= !tpd_jset(o, "not_compared",
                     json_pack("{s:I}", "batchnorm_running_stats", (json_int_t)x->init_skipped));
    bad |= !tpd_jset(o, "differ", json_incref(x->init_differ));
    bad |= !tpd_jset(o, "rng_judged_by_updates", json_incref(x->init_rngj));
    return tpd_jdone(o, bad);
}

/* declared_json: the equivalence the user declared, as the tool tests it. */
static json_t *declared_json(ctx *x)
{
    char rel[160];
    snprintf(rel, sizeof rel,
             "update u of the command (N=%lld backward calls) is update u of the reference (one "
             "full batch)",
             (long long)x->N);
    return json_pack("{s:I, s:I, s:b, s:o, s:o, s:s, s:s}", "micro", (json_int_t)x->N, "updates",
                     (json_int_t)x->U, "disable_dropout", x->disable_dropout, "reference",
                     tpd_json_argv(x->F ? x->F->argv_json : NULL), "command",
                     tpd_json_argv(x->M ? x->M->argv_json : NULL), "relation", rel, "normalisation",
                     "the losses the command backpropagates in an update sum to the reference's "
                     "full-batch loss (each divided by N, or by the update's element count); the "
                     "gradients at the step and the weights after it equal the reference's "
                     "within the comparison");
}

static json_t *win_json(const tpd_awin *w)
{
    return json_pack("{s:i, s:o, s:o, s:i, s:i, s:i, s:I}", "backward", w->nbwd, "loss_sum",
                     w->loss_known && w->nbwd ? tpd_json_num(w->loss) : json_null(), "lr",
                     w->has_lr ? tpd_json_num(w->lr) : json_null(), "scheduler_steps", w->nsched,
                     "clips", w->nclip, "unscales", w->nunscale, "samples",
                     (json_int_t)(w->nbatches ? w->samples : -1));
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

/* keep_only keeps the entries of d from index from on whose group is g, or,
 * for g TPD_G__COUNT, one of the groups of the state after a step. */
static void keep_only(tpd_divergences *d, size_t from, tpd_group g)
{
    size_t k = from;
    for (size_t i = from; i < d->n; i++) {
        tpd_group h = d->v[i].group;
        bool keep = g != TPD_G__COUNT ? h == g
                                      : h == TPD_G_OPTIMIZER || h == TPD_G_MODEL ||
                                            h == TPD_G_SCHEDULER || h == TPD_G_SCALER;
        if (keep) d->v[k++] = d->v[i];
    }
    d->n = k;
}

/* update_divergences lists every component that differs in the first
 * divergent update u, as the phases compare them: the gradients at its
 * step (step u of both timelines), then the optimizer, model, scheduler and
 * GradScaler state after it (step u + 1).  Losses, batches and RNGs are left
 * out: a micro-batch run has N of them where the reference has one. */
static tp_err update_divergences(ctx *x, tpd_divergences *all)
{
    size_t n;
    tp_err rc;
    if (!x->found || x->pf == NULL || x->pm == NULL) return TP_OK;
    rc = tpd_divergences_at(all, x->run, NULL, &x->pf->timeline, x->update, &x->pm->timeline,
                            x->update, &x->o);
    if (rc != TP_OK) return rc;
    keep_only(all, 0, TPD_G_GRAD);
    n = all->n;
    rc = tpd_divergences_at(all, x->run, NULL, &x->pf->timeline, x->update + 1, &x->pm->timeline,
                            x->update + 1, &x->o);
    if (rc == TP_OK) keep_only(all, n, TPD_G__COUNT);
    return rc;
}

/* updates_json: the updates 0..upto-1 side by side, as the report shows
 * them (a side without the update: null). */
static json_t *updates_json(ctx *x, int64_t upto)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (int64_t u = 0; x->pf && x->pm && u < upto; u++)
        bad |= !tpd_jpush(a, json_pack("{s:I, s:o, s:o}", "update", (json_int_t)u, "full",
                                       (size_t)u < x->wf.n ? win_json(&x->wf.v[u]) : json_null(),
                                       "micro",
                                       (size_t)u < x->wm.n ? win_json(&x->wm.v[u]) : json_null()));
    return tpd_jdone(a, bad);
}

/* report_json: the JSON report of outcome oc, with the components that
 * differ in the first divergent update (all); NULL when out of memory. */
static json_t *report_json(ctx *x, tpd_outcome oc, const tpd_divergences *all, int64_t upto)
{
    const tpd_exec *ex[2] = {x->F, x->M};
    const tpd_proc *px[2] = {x->pf, x->pm};
    json_t *j = tpd_report_new("accum", x->run->id, oc), *ev = json_object();
    bool bad = false;
    bad |= !tpd_jset(j, "comparison", tpd_json_comparison(&x->o));
    bad |= !tpd_jset(j, "micro", tpd_json_int(x->N));
    bad |= !tpd_jset(j, "updates", tpd_json_int(x->U));
    bad |=
        !tpd_jset(j, "first_divergence",
                  x->found ? json_pack("{s:I, s:I, s:o, s:o, s:o}", "update", (json_int_t)x->update,
                                       "step", (json_int_t)x->update, "path", tpd_json_str(x->path),
                                       "micro", tpd_json_str(tpd_str_cstr(&x->vm)), "full",
                                       tpd_json_str(tpd_str_cstr(&x->vf)))
                           : json_null());
    bad |= !tpd_jset(j, "divergences", tpd_json_divergences(all, "full", "micro"));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(&x->why));
    bad |= !tpd_jset(ev, "declared", declared_json(x));
    bad |= !tpd_jset(ev, "initial_state", x->judged_init ? init_evidence(x) : json_null());
    bad |= !tpd_jset(ev, "executions", tpd_json_execs(ex, px, 2));
    bad |= !tpd_jset(ev, "wall_time", tpd_json_wall(x->run));
    bad |= !tpd_jset(ev, "updates", updates_json(x, upto));
    bad |= !tpd_jset(j, "evidence", ev);
    return tpd_jdone(j, bad);
}

/* divergences_text names the components of all (at most max). */
static void divergences_text(tpd_str *t, const tpd_divergences *all, size_t max)
{
    if (all->n == 0) return;
    tpd_str_printf(t, "    %zu component%s differ%s in this update:", all->n,
                   all->n == 1 ? "" : "s", all->n == 1 ? "s" : "");
    for (size_t i = 0; i < all->n && i < max; i++)
        tpd_str_printf(t, "%s %s", i ? "," : "", all->v[i].path);
    tpd_str_puts(t, all->n > max ? ", ...\n" : "\n");
}

tp_err tpd_actx_finish(ctx *x, tpd_outcome oc, tpd_result *out)
{
    tpd_str t = {0};
    tpd_divergences all = {0};
    tp_err rc = update_divergences(x, &all);
    int64_t upto = x->found ? x->update + 1 : x->U;
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "accum: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    tpd_str_printf(&t, "  micro-batches  N=%lld per update, %lld update%s compared\n",
                   (long long)x->N, (long long)x->U, x->U == 1 ? "" : "s");
    if (x->judged_init) init_text(x, &t);
    tpd_str_puts(&t, "  comparison     ");
    tpd_render_comparison(&t, &x->o);
    tpd_str_puts(&t, "\n");
    if (x->found) {
        tpd_str_printf(&t, "\nfirst divergence  update %lld  %s\n    %-18s %s\n    %-18s %s\n",
                       (long long)x->update, x->path, "micro-batches", tpd_str_cstr(&x->vm),
                       "full batch", tpd_str_cstr(&x->vf));
        divergences_text(&t, &all, 6);
        out->has_step = true;
        out->step = x->update;
        snprintf(out->path, sizeof out->path, "%s", x->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }
    if (x->pf && x->pm && oc != TPD_ERROR) updates_text(x, &t, upto);

    out->json = tpd_json_dump(report_json(x, oc, &all, upto));
    out->text = tpd_str_steal(&t);
    tpd_divergences_free(&all);
    if (rc != TP_OK || out->text == NULL || out->json == NULL || x->oom) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}
