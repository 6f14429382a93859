/* SPDX-License-Identifier: MIT
 * report.c -- the health report, text and JSON: what was checked, the
 * first failure, the explanation, the telemetry (text: the rows around the
 * first failure, or the whole table; JSON: every row) and the execution
 * (ctx.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"
#include "daemon/checks/render.h"

typedef tpd_hctx ctx;

#define SHOW_ALL 40 /* a table of at most this many rows is shown whole */

static const char *skipped_name(const tpd_hrow *w)
{
    if (w->scaler_skipped) return "scaler";
    if (w->warmup) return "warmup";
    if (w->has_changed && !w->changed) return "unchanged";
    if (!w->has_post || !w->has_changed) return "?";
    return "no";
}

static void num(char *out, size_t n, bool has, double v)
{
    if (has)
        snprintf(out, n, "%.6g", v);
    else
        snprintf(out, n, "-");
}

static bool same_lrs(const tpd_hrow *w)
{
    for (uint32_t i = 1; i < w->nlrs; i++)
        if (w->lrs[i] != w->lrs[0]) return false;
    return true;
}

static void row_text(tpd_str *t, const tpd_hrow *w)
{
    char loss[32], gn[32], un[32], sc[32], nf[32], lr[48] = "-";
    num(loss, sizeof loss, w->has_loss, w->loss);
    num(gn, sizeof gn, w->has_gnorm, w->gnorm);
    num(un, sizeof un, w->has_unorm, w->unorm);
    num(sc, sizeof sc, w->has_scale, w->scale);
    snprintf(nf, sizeof nf, "%u", w->nonfinite_grads);
    if (w->nlrs > 1 && same_lrs(w)) {
        snprintf(lr, sizeof lr, "%.4g (x%u)", w->lrs[0], w->nlrs);
    } else if (w->nlrs > 0) {
        size_t k = 0;
        for (uint32_t i = 0; i < w->nlrs && k < sizeof lr; i++)
            k += (size_t)snprintf(lr + k, sizeof lr - k, "%s%.4g", i ? "," : "", w->lrs[i]);
    }
    tpd_str_printf(t, "  %-5lld %-3lld %-12s %-12s %-12s %-16s %-9s %-9s %s\n", (long long)w->step,
                   (long long)w->opt, loss, gn, un, lr, skipped_name(w), nf, sc);
}

static void table_text(ctx *x, tpd_str *t)
{
    size_t lo = 0, hi = x->nrows, n = 0, k = 0;
    for (size_t i = 0; i < x->nrows; i++) n += tpd_health_bounds_shown(x, i);
    if (x->found) {
        size_t at = x->row < x->nrows ? x->row : x->nrows - 1;
        lo = at >= 2 ? at - 2 : 0;
        hi = at + 3 < x->nrows ? at + 3 : x->nrows;
        tpd_str_printf(t, "\ntelemetry (rows %zu to %zu of %zu, around the first failure)\n", lo,
                       hi - 1, x->nrows);
    } else if (n < x->nrows) {
        tpd_str_printf(t, "\ntelemetry (%zu of %zu rows: the steps that are multiples of %lld)\n",
                       n, x->nrows, (long long)x->every);
    } else {
        tpd_str_printf(t, "\ntelemetry (%zu row%s)\n", x->nrows, x->nrows == 1 ? "" : "s");
    }
    tpd_str_printf(t, "  %-5s %-3s %-12s %-12s %-12s %-16s %-9s %-9s %s\n", "step", "opt", "loss",
                   "grad_norm", "update_norm", "lr", "skipped", "nonfinite", "scale");
    for (size_t i = lo; i < hi; i++) {
        /* --every N: the rows of the steps that are multiples of N (bounds.c) */
        if (!x->found && !tpd_health_bounds_shown(x, i)) continue;
        if (!x->found && n > SHOW_ALL && k >= SHOW_ALL / 2 && k < n - SHOW_ALL / 2) {
            if (k++ == SHOW_ALL / 2) tpd_str_printf(t, "  ... %zu rows ...\n", n - SHOW_ALL);
            continue;
        }
        k++;
        row_text(t, &x->rows[i]);
    }
    /* what the agent sums (optim.py, _step_pre): a parameter in no
     * optimizer is in no row's norm, however large its gradient */
    tpd_str_puts(t, "  grad_norm: the L2 norm of the gradients of the row's optimizer's "
                    "parameters that held one at the step; a parameter in no optimizer is in "
                    "none\n");
}

json_t *tpd_hjson_num(bool has, double v)
{
    if (!has) return json_null();
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *row_json(const tpd_hrow *w)
{
    json_t *o = json_object(), *lrs = json_array();
    bool bad = lrs == NULL;
    for (uint32_t i = 0; i < w->nlrs; i++) bad |= !tpd_jpush(lrs, tpd_hjson_num(true, w->lrs[i]));
    bad |= !tpd_jset(o, "step", tpd_json_int(w->step));
    bad |= !tpd_jset(o, "opt", tpd_json_int(w->opt));
    bad |= !tpd_jset(o, "backward", tpd_json_int(w->nbwd));
    bad |= !tpd_jset(o, "loss", tpd_hjson_num(w->has_loss, w->loss));
    bad |= !tpd_jset(o, "loss_unscaled", tpd_json_bool(w->loss_unscaled));
    bad |= !tpd_jset(o, "grad_norm", tpd_hjson_num(w->has_gnorm, w->gnorm));
    bad |= !tpd_jset(o, "update_norm", tpd_hjson_num(w->has_unorm, w->unorm));
    bad |= !tpd_jset(o, "lrs", lrs);
    bad |= !tpd_jset(o, "skipped", tpd_json_bool(tpd_hrow_skipped(w)));
    bad |= !tpd_jset(o, "skipped_by",
                     w->scaler_skipped               ? json_string("scaler")
                     : w->has_changed && !w->changed ? json_string("unchanged")
                                                     : json_null());
    bad |= !tpd_jset(o, "changed", w->has_changed ? tpd_json_bool(w->changed) : json_null());
    bad |= !tpd_jset(o, "changed_from",
                     !w->has_changed       ? json_null()
                     : w->changed_by_snaps ? json_string("snapshots")
                                           : json_string("update"));
    bad |= !tpd_jset(o, "nonfinite_grads", tpd_json_int(w->nonfinite_grads));
    bad |= !tpd_jset(o, "first_nonfinite_grad", tpd_json_str(w->nonfinite_grad));
    bad |= !tpd_jset(o, "scale", tpd_hjson_num(w->has_scale, w->scale));
    bad |= !tpd_jset(o, "params", tpd_json_int(w->nparams));
    bad |= !tpd_jset(o, "grads", tpd_json_int(w->ngrads));
    return tpd_jdone(o, bad);
}

static void checks_text(ctx *x, tpd_str *t)
{
    tpd_str_puts(t, "  checks         optimizer coverage; GradScaler use; finite loss, gradients "
                    "applied and final parameters; every update not skipped by a GradScaler "
                    "moves a parameter");
    if (x->has_max) tpd_str_printf(t, "; gradient norm <= %g (--max-grad-norm)", x->max_grad_norm);
    tpd_health_bounds_checks(x, t);
    tpd_str_printf(t, "; at most %g of the steps skipped by a GradScaler\n", x->max_skipped);
}

static int64_t ngroups(const tpd_cover *c)
{
    int64_t g = 0;
    for (uint32_t i = 0; i < c->nparams; i++)
        if (c->params[i].group + 1 > g) g = c->params[i].group + 1;
    return g;
}

/* optimizers_text: each optimizer's tensors and groups, as its last cover
 * event said. */
static void optimizers_text(const ctx *x, tpd_str *t)
{
    const char *sep = "  optimizers     ";
    for (size_t k = 0; x->p != NULL && k < x->p->ncovers; k++) {
        const tpd_cover *c;
        int64_t g;
        if (!tpd_health_cover_first(x, k)) continue;
        c = tpd_health_cover_at(x, x->p->covers[k].opt, UINT64_MAX);
        g = ngroups(c);
        tpd_str_printf(t, "%soptimizer[%lld] %s, %u tensor%s in %lld group%s", sep,
                       (long long)c->opt, c->cls, c->nparams, c->nparams == 1 ? "" : "s",
                       (long long)g, g == 1 ? "" : "s");
        sep = "; ";
    }
    if (sep[0] == ';') tpd_str_puts(t, "\n");
}

static json_t *optimizers_json(const ctx *x)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (size_t k = 0; x->p != NULL && k < x->p->ncovers; k++) {
        const tpd_cover *c;
        if (!tpd_health_cover_first(x, k)) continue;
        c = tpd_health_cover_at(x, x->p->covers[k].opt, UINT64_MAX);
        bad |= !tpd_jpush(a, json_pack("{s:I, s:o, s:I, s:I}", "opt", (json_int_t)c->opt, "class",
                                       tpd_json_str(c->cls), "tensors", (json_int_t)c->nparams,
                                       "groups", (json_int_t)ngroups(c)));
    }
    return tpd_jdone(a, bad);
}

/* ranks_text: which other ranks were compared with the trainer (ranks.c). */
static void ranks_text(const ctx *x, tpd_str *t)
{
    if (x->nreplicas > 0)
        tpd_str_printf(t,
                       "  ranks          %zu other rank%s compared with rank %lld at every step "
                       "(parameters, gradients, learning rates)\n",
                       x->nreplicas, x->nreplicas == 1 ? "" : "s", (long long)x->p->rank);
    if (x->nothers > 0)
        tpd_str_printf(t,
                       "  ranks          %zu other rank%s not compared: %s first parameters "
                       "differ from rank %lld's (not replicas)\n",
                       x->nothers, x->nothers == 1 ? "" : "s", x->nothers == 1 ? "its" : "their",
                       (long long)x->p->rank);
}

/* warmup_text: the leading learning-rate-0 steps not counted as failures. */
static void warmup_text(const ctx *x, tpd_str *t)
{
    size_t n = 0;
    for (size_t i = 0; i < x->nrows; i++) n += x->rows[i].warmup;
    if (n > 0)
        tpd_str_printf(t,
                       "  warmup         %zu step%s with learning rate 0 moved nothing before "
                       "%s optimizer's first step that moved (not failures)\n",
                       n, n == 1 ? "" : "s", n == 1 ? "its" : "their");
}

/* nopts: the distinct optimizers that stepped. */
static size_t nopts(const ctx *x)
{
    size_t n = 0;
    for (size_t i = 0; i < x->nrows; i++) {
        size_t k = 0;
        while (k < i && x->rows[k].opt != x->rows[i].opt) k++;
        n += k == i;
    }
    return n;
}

/* reason_json is the verdict in one sentence: why it could not be judged
 * (the report's head lines), the first failure, or that every check held. */
static json_t *reason_json(const ctx *x, tpd_outcome oc)
{
    char line[1024];
    if (x->head.len > 0) return tpd_json_lines(x->head.s);
    if (x->found)
        snprintf(line, sizeof line, "%s at step %lld: %s", x->path, (long long)x->step,
                 tpd_str_cstr(&x->value));
    else
        snprintf(line, sizeof line, "%s over %zu optimizer step%s",
                 oc == TPD_PASS ? "every check held" : tpd_outcome_name(oc), x->nrows,
                 x->nrows == 1 ? "" : "s");
    return tpd_json_str(line);
}

/* report_json is the JSON report of outcome oc; NULL when out of memory. */
static json_t *report_json(ctx *x, tpd_outcome oc)
{
    const tpd_exec *ex[1] = {x->ex};
    const tpd_proc *px[1] = {x->p};
    tpd_cmp_opts exact = {false, 0, 0, NULL};
    json_t *j = tpd_report_new("health", x->run->id, oc), *bounds = json_object(),
           *ev = json_object(), *rows = json_array();
    bool bad = bounds == NULL || rows == NULL;
    bad |= !tpd_jset(j, "comparison", tpd_json_comparison(&exact));
    bad |= !tpd_jset(bounds, "max_grad_norm", tpd_hjson_num(x->has_max, x->max_grad_norm));
    bad |= !tpd_jset(bounds, "max_skipped", tpd_hjson_num(true, x->max_skipped));
    bad |= bounds == NULL || !tpd_health_bounds_json(x, bounds);
    bad |= !tpd_jset(j, "bounds", bounds);
    bad |= !tpd_jset(
        j, "first_divergence",
        x->found ? json_pack("{s:I, s:o, s:o, s:o}", "step", (json_int_t)x->step, "path",
                             tpd_json_str(x->path), "opt",
                             x->row < x->nrows ? tpd_json_int(x->rows[x->row].opt) : json_null(),
                             "observed", tpd_json_str(tpd_str_cstr(&x->value)))
                 : json_null());
    bad |= !tpd_jset(j, "reason", reason_json(x, oc));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(&x->why));
    bad |= !tpd_jset(ev, "executions", tpd_json_execs(ex, px, 1));
    bad |= !tpd_jset(ev, "wall_time", tpd_json_wall(x->run));
    bad |= !tpd_jset(ev, "final_snapshot",
                     json_pack("{s:b, s:I}", "seen", x->final_seen, "model_tensors",
                               (json_int_t)x->final_tensors));
    bad |= !tpd_jset(j, "evidence", ev);
    bad |= !tpd_jset(j, "optimizers", optimizers_json(x));
    for (size_t i = 0; i < x->nrows; i++) bad |= !tpd_jpush(rows, row_json(&x->rows[i]));
    bad |= !tpd_jset(j, "telemetry", rows);
    return tpd_jdone(j, bad);
}

tp_err tpd_hctx_finish(ctx *x, tpd_outcome oc, tpd_result *out)
{
    tpd_str t = {0};
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "health: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    if (x->nrows > 0) {
        size_t k = nopts(x);
        tpd_str_printf(&t, "  steps          %zu optimizer step%s of %zu optimizer%s\n", x->nrows,
                       x->nrows == 1 ? "" : "s", k, k == 1 ? "" : "s");
        checks_text(x, &t);
        optimizers_text(x, &t);
        ranks_text(x, &t);
        warmup_text(x, &t);
        tpd_health_bounds_head(x, &t);
        if (x->final_seen)
            tpd_str_printf(&t, "  final state    %lld model tensor%s checked at exit\n",
                           (long long)x->final_tensors, x->final_tensors == 1 ? "" : "s");
        else
            tpd_str_puts(&t, "  final state    not checked: no snapshot was taken at exit\n");
    }
    if (x->found) {
        tpd_str_printf(&t, "\nfirst failure  step %lld  %s\n    %s\n", (long long)x->step, x->path,
                       tpd_str_cstr(&x->value));
        out->has_step = true;
        out->step = x->step;
        snprintf(out->path, sizeof out->path, "%s", x->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }
    if (x->nrows > 0) table_text(x, &t);

    out->json = tpd_json_dump(report_json(x, oc));
    out->text = tpd_str_steal(&t);
    if (out->text == NULL || out->json == NULL || x->oom) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}
