/* SPDX-License-Identifier: MIT
 * windows.c -- optimizer updates as accumulation windows (windows.h). */
#include <math.h>
#include <string.h>

#include "daemon/checks/accum/windows.h"

static void win_init(tpd_awin *w)
{
    memset(w, 0, sizeof *w);
    w->loss_known = true;
}

static void add_mark(tpd_awin *w, const tpd_mark *m)
{
    switch (m->kind) {
    case TP_K_BACKWARD:
        w->zero_last = NULL;
        if (w->nbwd < TPD_AWIN_MEANS) w->losses[w->nbwd] = m->has_f ? m->f : NAN;
        w->nbwd++;
        if (m->has_f)
            w->loss += m->f;
        else
            w->loss_known = false;
        if (m->mean_over >= 0) {
            if (w->nmean < TPD_AWIN_MEANS) w->mean_over[w->nmean] = m->mean_over;
            w->nmean++;
            w->mean_total += m->mean_over;
        }
        break;
    case TP_K_STEP:
        if (m->op && strcmp(m->op, "pre") == 0) w->zero_at_step = w->zero_last;
        if (m->op && strcmp(m->op, "pre") == 0 && m->has_f) w->has_lr = true, w->lr = m->f;
        if (m->flag) w->skipped = true;
        break;
    case TP_K_SCHED:
        w->nsched++;
        break;
    case TP_K_CLIP:
        w->nclip++;
        if (!w->clip_active) {
            w->clip_max = m->has_max ? m->max : NAN;
            w->clip_norm = m->has_f ? m->f : NAN;
            w->clip_active = m->has_f && m->has_max && m->f > m->max;
        }
        break;
    case TP_K_AMP:
        if (m->op && strcmp(m->op, "unscale") == 0) w->nunscale++;
        if (m->op && strcmp(m->op, "scale") == 0 && m->has_f) w->has_scale = true, w->scale = m->f;
        break;
    case TP_K_ZERO_GRAD:
        w->nzero++;
        if (w->nbwd == 0) w->nzero_lead++;
        w->zero_last = m->op ? m->op : "optimizer";
        break;
    case TP_K_BATCH:
        w->nbatches++;
        if (m->n < 0 || w->samples < 0)
            w->samples = -1;
        else
            w->samples += m->n;
        break;
    default:
        break;
    }
}

tp_err tpd_awins_build(tpd_arena *a, const tpd_proc *p, tpd_awins *out)
{
    size_t cap = 0;
    tpd_awin cur;
    memset(out, 0, sizeof *out);
    win_init(&cur);
    for (size_t i = 0; i < p->nmarks; i++) {
        const tpd_mark *m = &p->marks[i];
        if (m->kind == TP_K_ZERO_GRAD) out->nzero++;
        if (m->kind == TP_K_STEP && m->n != 0) continue; /* another optimizer */
        if (m->kind == TP_K_ZERO_GRAD && m->n > 0) continue;
        add_mark(&cur, m);
        if (m->kind == TP_K_STEP && m->op && strcmp(m->op, "post") == 0) {
            tpd_awin *v = tpd_arena_grow(a, out->v, &cap, out->n + 1, sizeof *v);
            if (v == NULL) return TP_ENOMEM;
            out->v = v;
            out->v[out->n++] = cur;
            win_init(&cur);
        }
    }
    out->tail = cur;
    return TP_OK;
}

bool tpd_near_factor(double k, double t)
{
    return fabs(k - t) <= 1e-3 * fabs(t);
}

bool tpd_awin_counts(const tpd_awin *m, const tpd_awin *f, int64_t *have, int64_t *want,
                     const char **unit)
{
    if (m->nbatches && f->nbatches && m->samples >= 0 && f->samples >= 0) {
        *have = m->samples, *want = f->samples, *unit = "samples";
        return true;
    }
    if (m->nbwd && f->nbwd && m->nmean == m->nbwd && f->nmean == f->nbwd) {
        *have = m->mean_total, *want = f->mean_total, *unit = "elements";
        return true;
    }
    return false;
}

int tpd_missing_micro(int nbwd, int64_t have, int64_t want)
{
    int64_t per;
    if (nbwd <= 0 || have <= 0 || have >= want || have % nbwd != 0) return 0;
    per = have / nbwd;
    if (want % per != 0 || want / per - nbwd > 1 << 20) return 0;
    return (int)(want / per - nbwd);
}

tpd_ratio_cause tpd_ratio_cause_of(double k, int64_t N, int nbwd)
{
    if (N > 1 && tpd_near_factor(k, (double)N)) return TPD_RC_NOT_DIVIDED;
    /* before 1/N, which k/N is for one micro-batch: divided by N twice,
     * one micro-batch gives 1/N^2 */
    if (nbwd > 0 && nbwd < N && tpd_near_factor(k, (double)nbwd / (double)N)) return TPD_RC_PARTIAL;
    if (N > 1 && tpd_near_factor(k, 1.0 / (double)N)) return TPD_RC_TWICE;
    return TPD_RC_NONE;
}

bool tpd_mean_of_means(const double *l, const int64_t *t, int n, double full, double rtol,
                       double atol)
{
    double num = 0, den = 0, w;
    bool unequal = false;
    if (n < 2) return false;
    for (int i = 0; i < n; i++) {
        if (t[i] <= 0 || isnan(l[i])) return false;
        if (t[i] != t[0]) unequal = true;
        num += (double)t[i] * l[i];
        den += (double)t[i];
    }
    if (!unequal) return false;
    w = (double)n * num / den;
    return fabs(w - full) <= atol + rtol * fabs(full);
}
