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
}

/* jnum appends v, null when absent, a string ("nan", "inf", "-inf") when
 * it is not finite (JSON has no such number). */
static void jnum(tpd_str *j, bool has, double v)
{
    if (!has)
        tpd_str_puts(j, "null");
    else if (isnan(v))
        tpd_str_puts(j, "\"nan\"");
    else if (isinf(v))
        tpd_str_puts(j, v > 0 ? "\"inf\"" : "\"-inf\"");
    else
        tpd_str_printf(j, "%.17g", v);
}

static void row_json(tpd_str *j, const tpd_hrow *w)
{
    tpd_str_printf(j, "{\"step\":%lld,\"opt\":%lld,\"backward\":%d,\"loss\":", (long long)w->step,
                   (long long)w->opt, w->nbwd);
    jnum(j, w->has_loss, w->loss);
    tpd_str_printf(j, ",\"loss_unscaled\":%s,\"grad_norm\":", w->loss_unscaled ? "true" : "false");
    jnum(j, w->has_gnorm, w->gnorm);
    tpd_str_puts(j, ",\"update_norm\":");
    jnum(j, w->has_unorm, w->unorm);
    tpd_str_puts(j, ",\"lrs\":[");
    for (uint32_t i = 0; i < w->nlrs; i++) {
        tpd_str_puts(j, i ? "," : "");
        jnum(j, true, w->lrs[i]);
    }
    tpd_str_printf(j, "],\"skipped\":%s,\"skipped_by\":", tpd_hrow_skipped(w) ? "true" : "false");
    if (w->scaler_skipped)
        tpd_str_puts(j, "\"scaler\"");
    else if (w->has_changed && !w->changed)
        tpd_str_puts(j, "\"unchanged\"");
    else
        tpd_str_puts(j, "null");
    tpd_str_printf(j,
                   ",\"changed\":%s,\"changed_from\":%s,\"nonfinite_grads\":%u,"
                   "\"first_nonfinite_grad\":",
                   w->has_changed ? (w->changed ? "true" : "false") : "null",
                   !w->has_changed       ? "null"
                   : w->changed_by_snaps ? "\"snapshots\""
                                         : "\"update\"",
                   w->nonfinite_grads);
    if (w->nonfinite_grad)
        tpd_str_jsonz(j, w->nonfinite_grad);
    else
        tpd_str_puts(j, "null");
    tpd_str_puts(j, ",\"scale\":");
    jnum(j, w->has_scale, w->scale);
    tpd_str_printf(j, ",\"params\":%lld,\"grads\":%lld}", (long long)w->nparams,
                   (long long)w->ngrads);
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

static void optimizers_json(const ctx *x, tpd_str *j)
{
    bool any = false;
    tpd_str_puts(j, ",\"optimizers\":[");
    for (size_t k = 0; x->p != NULL && k < x->p->ncovers; k++) {
        const tpd_cover *c;
        if (!tpd_health_cover_first(x, k)) continue;
        c = tpd_health_cover_at(x, x->p->covers[k].opt, UINT64_MAX);
        tpd_str_printf(j, "%s{\"opt\":%lld,\"class\":", any ? "," : "", (long long)c->opt);
        tpd_str_jsonz(j, c->cls);
        tpd_str_printf(j, ",\"tensors\":%u,\"groups\":%lld}", c->nparams, (long long)ngroups(c));
        any = true;
    }
    tpd_str_puts(j, "]");
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

tp_err tpd_hctx_finish(ctx *x, tpd_outcome oc, tpd_result *out)
{
    tpd_str t = {0}, j = {0};
    const tpd_exec *ex[1] = {x->ex};
    const tpd_proc *px[1] = {x->p};
    tpd_cmp_opts exact = {false, 0, 0};
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

    tpd_str_printf(&j,
                   "{\"schema_version\":1,\"trainparity_version\":\"0.1.0\",\"check\":\"health\","
                   "\"run\":%lld,\"outcome\":\"%s\",\"comparison\":",
                   (long long)x->run->id, tpd_outcome_name(oc));
    tpd_render_comparison_json(&j, &exact);
    tpd_str_puts(&j, ",\"bounds\":{\"max_grad_norm\":");
    jnum(&j, x->has_max, x->max_grad_norm);
    tpd_str_puts(&j, ",\"max_skipped\":");
    jnum(&j, true, x->max_skipped);
    tpd_health_bounds_json(x, &j);
    tpd_str_puts(&j, "},\"first_divergence\":");
    if (x->found) {
        tpd_str_printf(&j, "{\"step\":%lld,\"path\":", (long long)x->step);
        tpd_str_jsonz(&j, x->path);
        tpd_str_puts(&j, ",\"opt\":");
        if (x->row < x->nrows)
            tpd_str_printf(&j, "%lld", (long long)x->rows[x->row].opt);
        else
            tpd_str_puts(&j, "null");
        tpd_str_puts(&j, ",\"observed\":");
        tpd_str_jsonz(&j, tpd_str_cstr(&x->value));
        tpd_str_puts(&j, "}");
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_puts(&j, ",\"reason\":");
    tpd_str_jsonz(&j, tpd_str_cstr(&x->head));
    tpd_str_puts(&j, ",\"explanation\":[");
    tpd_str_puts(&j, x->why.json.s ? x->why.json.s : "");
    tpd_str_puts(&j, "],\"evidence\":{\"executions\":");
    tpd_render_execs_json(&j, ex, px, 1);
    tpd_str_puts(&j, ",\"wall_time\":");
    tpd_render_wall_json(&j, x->run);
    tpd_str_printf(&j, ",\"final_snapshot\":{\"seen\":%s,\"model_tensors\":%lld}}",
                   x->final_seen ? "true" : "false", (long long)x->final_tensors);
    optimizers_json(x, &j);
    tpd_str_puts(&j, ",\"telemetry\":[");
    for (size_t i = 0; i < x->nrows; i++) {
        tpd_str_puts(&j, i ? "," : "");
        row_json(&j, &x->rows[i]);
    }
    tpd_str_puts(&j, "]}\n");
    out->text = tpd_str_steal(&t);
    out->json = tpd_str_steal(&j);
    if (out->text == NULL || out->json == NULL || x->oom) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}
