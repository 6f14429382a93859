/* SPDX-License-Identifier: MIT
 * amp.c -- GradScaler misuse, from the trainer's marks in emission order.
 * A scaler's iteration runs from one update() to the next; within it:
 *   scaler.step     an optimizer stepped directly (not through
 *                   GradScaler.step) after a scale(): it applied gradients
 *                   still multiplied by the scale;
 *   scaler.scale    GradScaler.step ran with no scale() since the last
 *                   update(), or after a backward call on a tensor scale()
 *                   did not return: it divided gradients that were never
 *                   scaled;
 *   clip            gradients were clipped after a scale() and before any
 *                   unscale_(): the bound applied to scaled gradients.
 * Each is found at the step it concerns (the next step, for a clip), and
 * checked there before the other checks of the step (verdict.c).  Over the
 * run, scaler.skipped: more than --max-skipped of the steps after the first
 * run of skipped ones (the scaler lowering its initial scale) were skipped.
 * A scaler that never calls update() is not a case here: torch raises at
 * its second step() ("step() has already been called since the last
 * update()"), and the run is an ERROR. */
#include <math.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"

typedef tpd_hctx ctx;

static bool op_is(const tpd_mark *m, const char *op)
{
    return m->op != NULL && strcmp(m->op, op) == 0;
}

void tpd_health_amp_scan(ctx *x)
{
    bool scaled = false, unscaled = false, has_clip = false, plain = false;
    double scale = NAN;
    tpd_mark clip;
    memset(&clip, 0, sizeof clip);
    for (size_t i = 0; x->p != NULL && i < x->p->nmarks; i++) {
        const tpd_mark *m = &x->p->marks[i];
        tpd_hrow *w;
        if (m->kind == TP_K_BACKWARD) {
            plain = plain || m->scaled == 0;
        } else if (m->kind == TP_K_AMP) {
            if (op_is(m, "scale")) {
                scaled = true;
                scale = m->has_f ? m->f : NAN;
            } else if (op_is(m, "unscale")) {
                unscaled = true;
            } else if (op_is(m, "update")) {
                scaled = unscaled = false;
            }
        } else if (m->kind == TP_K_CLIP) {
            if (scaled && !unscaled && !has_clip) {
                has_clip = true;
                clip = *m;
            }
        } else if (m->kind == TP_K_STEP && op_is(m, "pre")) {
            if ((w = tpd_hctx_row_of(x, m->seq)) == NULL) continue;
            w->amp_scale = scale;
            if (has_clip) {
                w->amp = TPD_AMP_CLIP;
                w->amp_has_norm = clip.has_f;
                w->amp_norm = clip.f;
                w->amp_max = clip.has_max ? clip.max : NAN;
            } else if (!m->scaler && scaled) {
                w->amp = TPD_AMP_DIRECT;
                w->amp_unscaled = unscaled;
            } else if (m->scaler && (!scaled || plain)) {
                w->amp = TPD_AMP_NOSCALE;
                w->amp_bwd_plain = scaled && plain;
            }
            has_clip = plain = false;
        }
    }
}

bool tpd_health_amp_step(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i];
    switch (w->amp) {
    case TPD_AMP_DIRECT:
        tpd_hctx_found(x, i, w->step, "scaler.step");
        tpd_str_printf(&x->value, "optimizer[%lld].step() called directly after scale()",
                       (long long)w->opt);
        tpd_why_add(&x->why, "amp",
                    "a GradScaler scaled the loss (scale %g) and optimizer[%lld] then stepped "
                    "directly at step %lld, not through GradScaler.step, with no update() between",
                    w->amp_scale, (long long)w->opt, (long long)w->step);
        tpd_why_add(&x->why, "amp",
                    w->amp_unscaled
                        ? "unscale_() ran before the step, so its gradients were unscaled, but no "
                          "GradScaler.step checked them for inf or NaN"
                        : "no unscale_() came between the scale() and the step: it applied the "
                          "gradients of the scaled loss, multiplied by the scale");
        if (w->has_gnorm)
            tpd_why_add(&x->why, "amp", "the gradient L2 norm the step was given was %g", w->gnorm);
        return true;
    case TPD_AMP_NOSCALE:
        tpd_hctx_found(x, i, w->step, "scaler.scale");
        tpd_str_printf(&x->value, "GradScaler.step(optimizer[%lld]) %s", (long long)w->opt,
                       w->amp_bwd_plain ? "after a backward call on an unscaled loss"
                                        : "with no scale() before it");
        if (w->amp_bwd_plain)
            tpd_why_add(&x->why, "amp",
                        "GradScaler.step ran optimizer[%lld] at step %lld after a backward call "
                        "on a tensor that GradScaler.scale did not return (scale() was called, "
                        "its output not used)",
                        (long long)w->opt, (long long)w->step);
        else
            tpd_why_add(&x->why, "amp",
                        "GradScaler.step ran optimizer[%lld] at step %lld with no "
                        "GradScaler.scale call since the previous update() (or since the start, "
                        "before any)",
                        (long long)w->opt, (long long)w->step);
        tpd_why_add(&x->why, "amp",
                    "its gradients came from a loss that was not scaled, and GradScaler.step "
                    "divides them by its scale before stepping");
        if (w->has_scale) tpd_why_add(&x->why, "amp", "the scale at that step was %g", w->scale);
        return true;
    case TPD_AMP_CLIP:
        tpd_hctx_found(x, i, w->step, "clip");
        if (w->amp_has_norm)
            tpd_str_printf(&x->value, "clipped at norm %g, before unscale_()", w->amp_norm);
        else
            tpd_str_puts(&x->value, "clipped before unscale_()");
        tpd_why_add(&x->why, "amp",
                    "the gradients were clipped after GradScaler.scale (scale %g) and before any "
                    "unscale_(), then optimizer[%lld] stepped at step %lld",
                    w->amp_scale, (long long)w->opt, (long long)w->step);
        if (w->amp_has_norm && !isnan(w->amp_max))
            tpd_why_add(&x->why, "amp",
                        "the norm clipping measured was %g against a bound of %g: the norm of "
                        "the scaled gradients",
                        w->amp_norm, w->amp_max);
        return true;
    default:
        return false;
    }
}

bool tpd_health_amp_skipped(ctx *x)
{
    size_t lead = 0, n, k = 0, first = x->nrows;
    double frac;
    while (lead < x->nrows && x->rows[lead].scaler_skipped) lead++;
    n = x->nrows - lead;
    for (size_t i = lead; i < x->nrows; i++)
        if (x->rows[i].scaler_skipped && k++ == 0) first = i;
    if (n == 0 || k == 0) return false;
    frac = (double)k / (double)n;
    if (frac <= x->max_skipped) return false;
    tpd_hctx_found(x, first, x->rows[first].step, "scaler.skipped");
    tpd_str_printf(&x->value, "%zu of %zu steps skipped (%.0f%%), above --max-skipped %g", k, n,
                   100 * frac, x->max_skipped);
    tpd_why_add(&x->why, "amp",
                "a GradScaler skipped %zu of the %zu optimizer steps from step %lld on (%.0f%%), "
                "the first at step %lld",
                k, n, (long long)x->rows[lead].step, 100 * frac, (long long)x->rows[first].step);
    if (lead > 0)
        tpd_why_add(&x->why, "amp",
                    "the %zu skipped step%s at the start (the scaler lowering its initial scale) "
                    "%s not counted",
                    lead, lead == 1 ? "" : "s", lead == 1 ? "is" : "are");
    for (size_t i = 0; i < x->nrows; i++) {
        if (!x->rows[i].has_scale) continue;
        for (size_t j = x->nrows; j-- > i;) {
            if (!x->rows[j].has_scale) continue;
            tpd_why_add(&x->why, "amp", "the scale went from %g at step %lld to %g at step %lld",
                        x->rows[i].scale, (long long)x->rows[i].step, x->rows[j].scale,
                        (long long)x->rows[j].step);
            break;
        }
        break;
    }
    return true;
}
