/* SPDX-License-Identifier: MIT
 * ranks.c -- the other ranks of a multi-rank run against the trainer
 * (obs.h's tpd_obs_trainer: the lowest rank that stepped), step by step:
 * in a data-parallel run every replica starts from the same parameters and
 * steps with the same all-reduced gradients and the same learning rates, so
 * they stay bit-identical.  A rank whose model parameters (at the start of
 * a step), gradients (as its optimizer stepped) or learning rates differ
 * from the trainer's has drifted.
 *
 * Only replicas are compared: processes whose model parameters in their
 * first snapshot are the trainer's, path for path and digest for digest
 * (DDP broadcasts rank 0's at construction).  Sharded or model-parallel
 * ranks (FSDP, a pipeline) hold other tensors and are not compared; the
 * report says so. */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"

typedef tpd_hctx ctx;

/* first_model_step: the lowest step holding model tensors, or -1. */
static int64_t first_model_step(const tpd_proc *p)
{
    for (size_t i = 0; i < p->timeline.n; i++)
        if (p->timeline.v[i].group == TPD_G_MODEL) return p->timeline.v[i].step;
    return -1;
}

/* first_diff: the first tensor of a whose path b holds with another
 * digest (*other: b's), or NULL; tensors of one side only are not
 * compared, nor tensors whose digests cannot be (tpd_digests_comparable). */
static const tpd_item *first_diff(tpd_hspan a, tpd_hspan b, const tpd_item **other)
{
    for (size_t i = 0; i < a.n; i++) {
        const tpd_item *o = tpd_hspan_find(b, i, a.v[i].path);
        if (o == NULL || a.v[i].v.kind != 't' || o->v.kind != 't' ||
            !tpd_digests_comparable(&a.v[i].v, &o->v))
            continue;
        if (memcmp(a.v[i].v.digest, o->v.digest, TP_DIGEST_LEN) != 0) {
            *other = o;
            return &a.v[i];
        }
    }
    return NULL;
}

/* replica: q's first model snapshot is p's, path for path, digest for
 * digest (digests of one kind: equal ones of different kinds cannot be
 * told). */
static bool replica(const tpd_proc *p, const tpd_proc *q)
{
    int64_t sp = first_model_step(p), sq = first_model_step(q);
    tpd_hspan a, b;
    const tpd_item *o;
    if (sp < 0 || sp != sq) return false;
    a = tpd_hspan_of(&p->timeline, sp, TPD_G_MODEL);
    b = tpd_hspan_of(&q->timeline, sq, TPD_G_MODEL);
    if (a.n == 0 || a.n != b.n) return false;
    for (size_t i = 0; i < a.n; i++)
        if ((o = tpd_hspan_find(b, i, a.v[i].path)) == NULL ||
            !tpd_digests_comparable(&a.v[i].v, &o->v))
            return false;
    return first_diff(a, b, &o) == NULL;
}

/* step_pre: q's pre event of optimizer opt at step, or NULL.  *cur is
 * where the search starts: marks are in emission order, their steps never
 * go down, and the rows ask for steps that never go down either, so it
 * only moves forward (one pass over q's marks for the whole run). */
static const tpd_mark *step_pre(const tpd_proc *q, size_t *cur, int64_t step, int64_t opt)
{
    while (*cur < q->nmarks && q->marks[*cur].step < step) (*cur)++;
    for (size_t i = *cur; i < q->nmarks && q->marks[i].step == step; i++) {
        const tpd_mark *m = &q->marks[i];
        if (m->kind == TP_K_STEP && m->n == opt && m->op != NULL && strcmp(m->op, "pre") == 0)
            return m;
    }
    return NULL;
}

static bool lrs_differ(const tpd_hrow *w, const tpd_mark *m)
{
    if (m == NULL || m->nlrs == 0 || w->nlrs == 0) return false;
    if (m->nlrs != w->nlrs) return true;
    for (uint32_t i = 0; i < w->nlrs; i++)
        if (m->lrs[i] != w->lrs[i]) return true;
    return false;
}

/* on_host writes " on host H" into out when q and p ran on different hosts
 * (a job across hosts: the rank alone does not say where to look), else "". */
static const char *on_host(char *out, size_t n, const tpd_proc *q, const tpd_proc *p)
{
    out[0] = '\0';
    if (q->host != NULL && p->host != NULL && strcmp(q->host, p->host) != 0)
        snprintf(out, n, " on host %s", q->host);
    return out;
}

static void tensor_found(ctx *x, size_t row, const tpd_proc *q, const tpd_item *mine,
                         const tpd_item *theirs, const char *what)
{
    char qh[160], ph[160];
    tpd_hctx_found(x, row, mine->step, mine->path);
    tpd_str_printf(&x->value, "rank %lld's differs from rank %lld's", (long long)q->rank,
                   (long long)x->p->rank);
    tpd_why_add(&x->why, "ranks",
                "at step %lld, %s %s of rank %lld%s differs from rank %lld's%s (L2 norm %.9g on "
                "rank %lld, %.9g on rank %lld)",
                (long long)mine->step, what, mine->path, (long long)q->rank,
                on_host(qh, sizeof qh, q, x->p), (long long)x->p->rank,
                on_host(ph, sizeof ph, x->p, q), theirs->v.stats.l2, (long long)q->rank,
                mine->v.stats.l2, (long long)x->p->rank);
    tpd_why_add(&x->why, "ranks",
                "the two ranks' model parameters were identical at their first snapshot (step "
                "%lld): replicas, which data-parallel training keeps identical",
                (long long)first_model_step(x->p));
}

/* drift_at: the first difference of q from the trainer at row i's step
 * (once per step: the step's first row).  True when found. */
static bool drift_at(ctx *x, size_t i, const tpd_proc *q, size_t *cur)
{
    const tpd_hrow *w = &x->rows[i];
    const tpd_item *mine, *theirs = NULL;
    const tpd_mark *m;
    if (i == 0 || x->rows[i - 1].step != w->step) {
        tpd_hspan a = tpd_hspan_of(&x->p->timeline, w->step, TPD_G_MODEL);
        tpd_hspan b = tpd_hspan_of(&q->timeline, w->step, TPD_G_MODEL);
        if ((mine = first_diff(a, b, &theirs)) != NULL) {
            tensor_found(x, i, q, mine, theirs, "the model parameter");
            tpd_why_add(&x->why, "ranks",
                        "their gradients and learning rates were the same at every step before");
            return true;
        }
        a = tpd_hspan_of(&x->p->timeline, w->step, TPD_G_GRAD);
        b = tpd_hspan_of(&q->timeline, w->step, TPD_G_GRAD);
        if ((mine = first_diff(a, b, &theirs)) != NULL) {
            tensor_found(x, i, q, mine, theirs, "the gradient");
            tpd_why_add(&x->why, "ranks",
                        "the gradient is the one optimizer[%lld] stepped with, after any "
                        "all-reduce",
                        (long long)w->opt);
            return true;
        }
    }
    m = step_pre(q, cur, w->step, w->opt);
    if (lrs_differ(w, m)) {
        char path[64], qh[160], ph[160];
        snprintf(path, sizeof path, "optimizer[%lld].lr", (long long)w->opt);
        tpd_hctx_found(x, i, w->step, path);
        tpd_str_printf(&x->value, "rank %lld's learning rates differ from rank %lld's",
                       (long long)q->rank, (long long)x->p->rank);
        tpd_why_add(&x->why, "ranks",
                    "at step %lld optimizer[%lld] of rank %lld%s stepped with learning rate %g "
                    "(group 0) where rank %lld's%s had %g",
                    (long long)w->step, (long long)w->opt, (long long)q->rank,
                    on_host(qh, sizeof qh, q, x->p), m->lrs[0], (long long)x->p->rank,
                    on_host(ph, sizeof ph, x->p, q), w->lrs[0]);
        return true;
    }
    return false;
}

void tpd_health_ranks_scan(ctx *x)
{
    x->nreplicas = x->nothers = 0;
    if (x->ex == NULL || x->p == NULL || x->p->rank < 0 || x->ex->nprocs < 2) return;
    x->mark_at = tpd_arena_alloc(x->a, sizeof *x->mark_at * x->ex->nprocs);
    if ((x->replica = tpd_arena_alloc(x->a, sizeof *x->replica * x->ex->nprocs)) == NULL ||
        x->mark_at == NULL) {
        x->oom = true;
        return;
    }
    for (size_t k = 0; k < x->ex->nprocs; k++) {
        const tpd_proc *q = &x->ex->procs[k];
        if (q == x->p || q->rank < 0 || q->steps == 0) continue;
        x->replica[k] = replica(x->p, q);
        if (x->replica[k])
            x->nreplicas++;
        else
            x->nothers++;
    }
}

bool tpd_health_ranks_step(ctx *x, size_t i)
{
    for (size_t k = 0; x->nreplicas > 0 && k < x->ex->nprocs; k++)
        if (x->replica[k] && drift_at(x, i, &x->ex->procs[k], &x->mark_at[k])) return true;
    return false;
}
