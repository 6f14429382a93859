/* SPDX-License-Identifier: MIT
 * marks.c -- files a process's training calls (backward, optimizer
 * step, scheduler step, GradScaler call, clipping, zero_grad, DataLoader
 * batch) in emission order, for the checks that reason about the order of calls:
 * gradient accumulation counts backward calls between optimizer steps and
 * the clipping, unscaling, scheduler steps and zero_grad calls within each
 * update. */
#include <string.h>

#include "daemon/obs/obs.h"

static const char *op_of(tpd_arena *a, const tp_event *e, tp_field key, bool *oom)
{
    const char *s;
    uint32_t n;
    char *c;
    if (tp_body_str(e, key, &s, &n) != TP_OK) return NULL;
    c = tpd_arena_strndup(a, s, n);
    if (c == NULL) *oom = true;
    return c;
}

/* first_lr reads the first element of the step's "lrs" array. */
static bool first_lr(const tp_event *e, double *lr)
{
    tp_mpr r;
    tp_mptype t;
    uint32_t n;
    int64_t i;
    if (tp_body_find(e, TPF_step_lrs, &r) != TP_OK || tp_mpr_peek(&r, &t) != TP_OK ||
        t != TP_MP_ARRAY)
        return false;
    if (tp_mpr_array(&r, &n) != TP_OK || n == 0 || tp_mpr_peek(&r, &t) != TP_OK) return false;
    if (t == TP_MP_INT) {
        if (tp_mpr_int(&r, &i) != TP_OK) return false;
        *lr = (double)i;
        return true;
    }
    return tp_mpr_f64(&r, lr) == TP_OK;
}

/* step_extra reads what only the health check needs of a step event (obs.h):
 * the learning rates of pre, the update's norm and change of post (the
 * gradients are read once, into the timeline, by obs.c).  Errors:
 * TP_ENOMEM, TP_EPROTO (a body the schema would reject). */
static tp_err step_extra(tpd_arena *a, const tp_event *e, tpd_mark *m)
{
    tp_mpr r;
    tp_mptype t;
    uint32_t n;
    bool b;
    const char *via;
    m->has_gnorm = tp_body_f64(e, TPF_step_gnorm, &m->gnorm) == TP_OK;
    m->has_unorm = tp_body_f64(e, TPF_step_unorm, &m->unorm) == TP_OK;
    m->has_changed = tp_body_bool(e, TPF_step_changed, &b) == TP_OK;
    m->changed = m->has_changed && b;
    if (tp_body_str(e, TPF_step_via, &via, &n) == TP_OK)
        m->scaler = n == 6 && memcmp(via, "scaler", 6) == 0;
    if (tp_body_int(e, TPF_step_nparams, &m->nparams) != TP_OK) m->nparams = -1;
    if (tp_body_int(e, TPF_step_ngrads, &m->ngrads) != TP_OK) m->ngrads = -1;
    if (tp_body_find(e, TPF_step_lrs, &r) == TP_OK && tp_mpr_peek(&r, &t) == TP_OK &&
        t == TP_MP_ARRAY) {
        double *v;
        if (tp_mpr_array(&r, &n) != TP_OK) return TP_EPROTO;
        if (n > 0) {
            if ((v = tpd_arena_alloc(a, sizeof *v * n)) == NULL) return TP_ENOMEM;
            for (uint32_t i = 0; i < n; i++) {
                int64_t k;
                if (tp_mpr_peek(&r, &t) != TP_OK) return TP_EPROTO;
                if (t == TP_MP_INT) {
                    if (tp_mpr_int(&r, &k) != TP_OK) return TP_EPROTO;
                    v[i] = (double)k;
                } else if (tp_mpr_f64(&r, &v[i]) != TP_OK) {
                    return TP_EPROTO;
                }
            }
            m->lrs = v;
            m->nlrs = n;
        }
    }
    return TP_OK;
}

tp_err tpd_proc_add_mark(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    tpd_mark m, *v;
    bool b, oom = false;
    memset(&m, 0, sizeof m);
    m.seq = e->seq;
    m.step = e->step;
    m.kind = e->kind;
    m.scaled = -1;
    switch (e->kind) {
    case TP_K_BACKWARD:
        if (tp_body_int(e, TPF_backward_count, &m.n) != TP_OK) m.n = 0;
        m.has_f = tp_body_f64(e, TPF_backward_loss, &m.f) == TP_OK;
        if (tp_body_int(e, TPF_backward_mean_over, &m.mean_over) != TP_OK) m.mean_over = -1;
        m.scaled = tp_body_bool(e, TPF_backward_scaled, &b) == TP_OK ? (signed char)b : -1;
        break;
    case TP_K_STEP:
        m.op = op_of(a, e, TPF_step_phase, &oom);
        if (tp_body_int(e, TPF_step_opt, &m.n) != TP_OK) m.n = 0;
        m.flag = tp_body_bool(e, TPF_step_skipped, &b) == TP_OK && b;
        m.has_f = m.op != NULL && strcmp(m.op, "pre") == 0 && first_lr(e, &m.f);
        if (!oom) {
            tp_err rc = step_extra(a, e, &m);
            if (rc != TP_OK) return rc;
        }
        break;
    case TP_K_SCHED:
        if (tp_body_int(e, TPF_sched_sched, &m.n) != TP_OK) m.n = 0;
        break;
    case TP_K_AMP:
        m.op = op_of(a, e, TPF_amp_op, &oom);
        m.has_f = tp_body_f64(e, TPF_amp_scale, &m.f) == TP_OK;
        m.flag = tp_body_bool(e, TPF_amp_found_inf, &b) == TP_OK && b;
        break;
    case TP_K_CLIP:
        m.op = op_of(a, e, TPF_clip_op, &oom);
        m.has_f = tp_body_f64(e, TPF_clip_norm, &m.f) == TP_OK;
        m.has_max = tp_body_f64(e, TPF_clip_max, &m.max) == TP_OK;
        break;
    case TP_K_ZERO_GRAD:
        m.op = op_of(a, e, TPF_zero_grad_which, &oom);
        if (tp_body_int(e, TPF_zero_grad_opt, &m.n) != TP_OK) m.n = -1; /* a module's */
        m.flag = tp_body_bool(e, TPF_zero_grad_set_to_none, &b) == TP_OK && b;
        break;
    case TP_K_BATCH:
        if (tp_body_bool(e, TPF_batch_end, &b) == TP_OK && b) return TP_OK; /* an epoch's end */
        if (tp_body_int(e, TPF_batch_size, &m.n) != TP_OK) m.n = -1;
        break;
    default:
        return TP_OK;
    }
    if (oom) return TP_ENOMEM;
    v = tpd_arena_grow(a, p->marks, &p->marks_cap, p->nmarks + 1, sizeof *v);
    if (v == NULL) return TP_ENOMEM;
    p->marks = v;
    p->marks[p->nmarks++] = m;
    return TP_OK;
}
