/* SPDX-License-Identifier: MIT
 * telemetry.c -- the health check's table: one row per optimizer step per
 * optimizer, from the trainer's marks (obs/marks.c) in emission order.
 *
 * A row opens at a step's pre event (gradient norm, learning rates; its
 * gradients with non-finite values come from the timeline) and closes at the post event of the same
 * optimizer (update norm, changed, skipped).  The gradient norm is the
 * agent's, over the gradients of that optimizer's parameters that held one
 * at the step (ngrads of nparams): a parameter in no optimizer is in no
 * row's norm.  The backward calls and GradScaler calls that carry the same
 * step index belong to it: its loss is the last backward's, its scale the
 * one GradScaler.update reported after it (else the last a GradScaler call
 * of the step reported).
 * Two optimizers stepping in one iteration have two step indices (the agent
 * counts every optimizer step), so the second one's row has no backward. */
#include <math.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"

bool tpd_hrow_skipped(const tpd_hrow *w)
{
    return w->scaler_skipped || (w->has_changed && !w->changed);
}

/* What the step being filled has seen so far: its backward calls and
 * GradScaler scales. */
typedef struct acc {
    int64_t step;
    int nbwd, bad_bwd;
    bool has_loss, has_scale, loss_unscaled;
    double loss, bad_loss, scale;
} acc;

static void acc_at(acc *c, int64_t step)
{
    if (c->step == step) return;
    memset(c, 0, sizeof *c);
    c->step = step;
}

static tp_err open_row(tpd_hctx *x, size_t *cap, const tpd_mark *m, const acc *c)
{
    tpd_hrow *w = tpd_arena_grow(x->a, x->rows, cap, x->nrows + 1, sizeof *w);
    if (w == NULL) return TP_ENOMEM;
    x->rows = w;
    w = &x->rows[x->nrows++];
    memset(w, 0, sizeof *w);
    w->step = m->step;
    w->opt = m->n;
    w->nbwd = c->nbwd;
    w->has_loss = c->has_loss;
    w->loss_unscaled = c->loss_unscaled;
    w->loss = c->loss;
    w->bad_bwd = c->bad_bwd;
    w->bad_loss = c->bad_loss;
    w->has_scale = c->has_scale;
    w->scale = c->scale;
    w->has_gnorm = m->has_gnorm;
    w->gnorm = m->gnorm;
    w->nlrs = m->nlrs;
    w->lrs = m->lrs;
    w->nparams = m->nparams;
    w->ngrads = m->ngrads;
    w->pre_seq = m->seq;
    w->scaler_skipped = m->flag; /* GradScaler's skipped pre says so too */
    w->scaler = m->scaler;
    return TP_OK;
}

static void close_row(tpd_hctx *x, const tpd_mark *m)
{
    for (size_t i = x->nrows; i-- > 0;) {
        tpd_hrow *w = &x->rows[i];
        if (w->opt != m->n || w->has_post) continue;
        w->has_post = true;
        w->scaler_skipped = w->scaler_skipped || m->flag;
        w->has_unorm = m->has_unorm;
        w->unorm = m->unorm;
        w->has_changed = m->has_changed;
        w->changed = m->changed;
        return;
    }
}

/* tpd_hctx_row_of is the row opened by the pre event of seq, or NULL; rows are in
 * the order of their pre events. */
tpd_hrow *tpd_hctx_row_of(tpd_hctx *x, uint64_t seq)
{
    size_t lo = 0, hi = x->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->rows[mid].pre_seq == seq) return &x->rows[mid];
        if (x->rows[mid].pre_seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* nonfinite_grads gives each row the gradients of its pre event that hold
 * non-finite values: obs.c filed them in the timeline (group grad, ord
 * from the event's seq), the first in the event's leaf order. */
static void nonfinite_grads(tpd_hctx *x)
{
    for (size_t i = 0; i < x->p->timeline.n; i++) {
        const tpd_item *it = &x->p->timeline.v[i];
        tpd_hrow *w;
        if (it->group != TPD_G_GRAD || it->v.kind != 't' || it->v.stats.nonfinite == 0) continue;
        if ((w = tpd_hctx_row_of(x, TPD_ORD_SEQ(it->ord))) == NULL) continue;
        if (w->nonfinite_grads++ == 0 || it->ord < w->nonfinite_ord) {
            w->nonfinite_grad = it->path;
            w->nonfinite_ord = it->ord;
            w->nonfinite_vals = it->v.stats.nonfinite;
        }
    }
}

static bool moved(const tpd_hrow *w)
{
    return !w->scaler_skipped && w->has_changed && w->changed;
}

bool tpd_hrow_lrs_zero(const tpd_hrow *w)
{
    for (uint32_t i = 0; i < w->nlrs; i++)
        if (w->lrs[i] != 0) return false;
    return w->nlrs > 0;
}

/* warmup marks an optimizer's leading steps that ran with every learning
 * rate 0 and moved nothing, when a later step of the same optimizer moved a
 * parameter: a warmup schedule starting at 0 (transformers' linear, cosine
 * and constant warmups). */
static void warmup(tpd_hctx *x)
{
    for (size_t i = 0; i < x->nrows; i++) {
        tpd_hrow *w = &x->rows[i];
        bool before = false, after = false;
        if (!tpd_hrow_lrs_zero(w) || !w->has_changed || w->changed) continue;
        for (size_t k = 0; k < x->nrows && !before; k++) {
            if (x->rows[k].opt != w->opt || !moved(&x->rows[k])) continue;
            if (k < i)
                before = true;
            else
                after = true;
        }
        w->warmup = !before && after;
    }
}

tp_err tpd_hctx_rows(tpd_hctx *x)
{
    size_t cap = 0;
    acc c;
    memset(&c, 0, sizeof c);
    c.step = -1;
    for (size_t i = 0; x->p != NULL && i < x->p->nmarks; i++) {
        const tpd_mark *m = &x->p->marks[i];
        switch (m->kind) {
        case TP_K_BACKWARD:
            acc_at(&c, m->step);
            c.nbwd++;
            c.has_loss = m->has_f;
            c.loss = m->f;
            /* GradScaler.scale's output: the loss it scaled, exactly (the
             * scale is a power of two), unless the product overflowed */
            c.loss_unscaled = m->scaled == 1 && c.has_scale && c.scale > 0 && isfinite(m->f);
            if (c.loss_unscaled) c.loss = m->f / c.scale;
            if (m->has_f && !isfinite(m->f) && c.bad_bwd == 0) {
                c.bad_bwd = c.nbwd;
                c.bad_loss = m->f;
            }
            break;
        case TP_K_AMP:
            if (m->op != NULL && strcmp(m->op, "update") == 0) {
                /* the scale after the step: update() follows the step it
                 * concludes, under the next step's index */
                if (x->nrows > 0 && m->has_f) {
                    x->rows[x->nrows - 1].has_scale = true;
                    x->rows[x->nrows - 1].scale = m->f;
                }
                break;
            }
            acc_at(&c, m->step);
            if (m->has_f) {
                c.has_scale = true;
                c.scale = m->f;
            }
            break;
        case TP_K_STEP:
            acc_at(&c, m->step);
            if (m->op != NULL && strcmp(m->op, "pre") == 0) {
                if (open_row(x, &cap, m, &c) != TP_OK) return TP_ENOMEM;
            } else if (m->op != NULL && strcmp(m->op, "post") == 0) {
                close_row(x, m);
            }
            break;
        default:
            break;
        }
    }
    if (x->p != NULL) nonfinite_grads(x);
    tpd_health_moved(x);
    warmup(x);
    return TP_OK;
}
