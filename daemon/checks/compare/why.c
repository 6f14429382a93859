/* SPDX-License-Identifier: MIT
 * why.c -- the explanation of a first divergence between two trainers
 * (pair.h): only what the observations show of it; a compare FAIL's (C
 * against the golden run G) and an offline diff's (A against B).  What
 * differs and from when on (the same component at the later steps both
 * ran), where the training data streams part, the number of steps each
 * trained, and what matched before the divergence.  No guess at a cause:
 * the two runs are two versions of a script this check has never read. */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/compare/pair.h"
#include "daemon/checks/render.h"

/* What an explanation is built from: the comparison, its rules, and the
 * explanation so far.  The sides are named p->la and p->lb. */
typedef struct ctx {
    tpd_why *why;
    const tpd_gpair *p;
    const tpd_cmp_opts *o;
} ctx;

/* val_text renders v (NULL: absent) into buf. */
static const char *val_text(const tpd_val *v, char *buf, size_t n)
{
    tpd_str b = {0};
    tpd_render_val(&b, v);
    snprintf(buf, n, "%s", b.s ? b.s : "?");
    tpd_str_free(&b);
    return buf;
}

/* A component over the steps from its first divergence on. */
typedef struct course {
    int64_t both;  /* steps at which both runs have it */
    int64_t diffs; /* ... of which it differs */
    int64_t last;  /* the last of those steps */
} course;

/* follow walks path through both sides' timelines from step s0 on, in one
 * pass over each (both are sorted by step): at each step the first item
 * with path on either side. */
static course follow(const ctx *x, const char *path, int64_t s0)
{
    const tpd_items *a = &x->p->a->timeline, *b = &x->p->b->timeline;
    course c = {0, 0, s0};
    size_t jb = 0;
    tpd_eq eq;
    int64_t seen = INT64_MIN;
    for (size_t i = 0; i < a->n; i++) {
        const tpd_item *ia = &a->v[i], *ib = NULL;
        if (ia->step < s0 || ia->step == seen || strcmp(ia->path, path) != 0) continue;
        seen = ia->step;
        while (jb < b->n && b->v[jb].step < ia->step) jb++;
        for (size_t k = jb; k < b->n && b->v[k].step == ia->step && !ib; k++)
            if (strcmp(b->v[k].path, path) == 0) ib = &b->v[k];
        if (ib == NULL) continue;
        eq = tpd_val_eq(&ia->v, &ib->v, x->o);
        /* digests of different kinds: neither shown equal nor different */
        if (eq == TPD_UNSURE && !tpd_digests_comparable(&ia->v, &ib->v)) continue;
        c.both++;
        c.last = ia->step;
        if (eq != TPD_SAME) c.diffs++;
    }
    return c;
}

/* lr_group: path is a param group's learning rate, "optimizer.group[K].lr"
 * (or an optimizer's own prefix before it); *k is K. */
static bool lr_group(const char *path, int *k)
{
    const char *g = strstr(path, "group[");
    size_t n = strlen(path);
    return g != NULL && n > 3 && strcmp(path + n - 3, ".lr") == 0 && sscanf(g, "group[%d]", k) == 1;
}

static void differs(ctx *x, const tpd_div *d)
{
    const char *la = x->p->la, *lb = x->p->lb;
    char va[512], vb[512], what[320];
    course c = follow(x, d->path, d->step_a);
    int k;
    if (lr_group(d->path, &k))
        snprintf(what, sizeof what, "the learning rate of param group %d (%s)", k, d->path);
    else
        snprintf(what, sizeof what, "%s", d->path);
    val_text(d->a ? &d->a->v : NULL, va, sizeof va);
    val_text(d->b ? &d->b->v : NULL, vb, sizeof vb);
    if (c.both > 1 && c.diffs == c.both)
        tpd_why_add(x->why, "differs",
                    "%s differs from step %lld on: at every one of the %lld steps both runs have "
                    "from there (to step %lld); at step %lld %s has %s, %s has %s",
                    what, (long long)d->step_a, (long long)c.both, (long long)c.last,
                    (long long)d->step_a, la, va, lb, vb);
    else if (c.both > 1 && c.diffs == 1)
        tpd_why_add(x->why, "differs",
                    "%s differs at step %lld only (%s has %s, %s has %s): it matches at the %lld "
                    "later steps both runs have",
                    what, (long long)d->step_a, la, va, lb, vb, (long long)(c.both - 1));
    else if (c.both > 1)
        tpd_why_add(x->why, "differs",
                    "%s differs at step %lld (%s has %s, %s has %s), and at %lld of the %lld "
                    "later steps both runs have",
                    what, (long long)d->step_a, la, va, lb, vb, (long long)(c.diffs - 1),
                    (long long)(c.both - 1));
    else
        tpd_why_add(x->why, "differs", "%s differs at step %lld: %s has %s, %s has %s", what,
                    (long long)d->step_a, la, va, lb, vb);
}

static void data_order(ctx *x, const tpd_div *d)
{
    const tpd_stream_div *sd = &x->p->sd;
    const char *la = x->p->la, *lb = x->p->lb;
    char va[512], vb[512];
    char from[96];
    if (sd->compared == 0)
        snprintf(from, sizeof from, "from the first sample of the stream on");
    else
        snprintf(from, sizeof from, "from sample %llu of the stream on (the %llu before it match)",
                 (unsigned long long)sd->pos_a, (unsigned long long)sd->compared);
    if (d->a && d->b)
        tpd_why_add(x->why, "data_order",
                    "the training data differ %s: the batch %s fetched at step %lld holds %s "
                    "where %s's samples at the same positions are %s",
                    from, lb, (long long)d->step_b, val_text(&d->b->v, vb, sizeof vb), la,
                    val_text(&d->a->v, va, sizeof va));
    else if (d->a)
        tpd_why_add(x->why, "data_order",
                    "%s's training stream ends after %llu samples, where %s's goes on (%s from "
                    "step %lld)",
                    lb, (unsigned long long)sd->compared, la, val_text(&d->a->v, va, sizeof va),
                    (long long)d->step_a);
    else
        tpd_why_add(x->why, "data_order",
                    "%s's training stream goes on after %s's %llu samples (%s at step %lld)", lb,
                    la, (unsigned long long)sd->compared, val_text(&d->b->v, vb, sizeof vb),
                    (long long)d->step_b);
}

static void step_count(ctx *x, const tpd_div *d)
{
    const char *la = x->p->la, *lb = x->p->lb;
    int64_t ng = d->a->v.i, nc = d->b->v.i;
    tpd_why_add(x->why, "step_count",
                "%s trained %lld optimizer step%s where %s trained %lld: %s %s %lld step%s %s, "
                "and what both trained (steps 0 to %lld) matched%s",
                lb, (long long)nc, nc == 1 ? "" : "s", la, (long long)ng, lb,
                nc < ng ? "stopped" : "trained", (long long)(nc < ng ? ng - nc : nc - ng),
                (nc < ng ? ng - nc : nc - ng) == 1 ? "" : "s", nc < ng ? "early" : "more",
                (long long)(d->step_a - 1),
                x->p->cmp.first_rng.found ? " (an RNG state aside)" : "");
}

/* group_text names what a group holds, in a sentence. */
static const char *group_text(tpd_group g)
{
    static const char *const t[TPD_G__COUNT] = {
        [TPD_G_DATA] = "the sample ids",
        [TPD_G_MODEL] = "the weights",
        [TPD_G_MODULE] = "the modules no optimizer trains",
        [TPD_G_OPTIMIZER] = "the optimizer state",
        [TPD_G_SCHEDULER] = "the scheduler",
        [TPD_G_SCALER] = "the GradScaler",
        [TPD_G_RNG] = "the RNG states",
        [TPD_G_LOSS] = "the loss",
        [TPD_G_GRAD] = "the gradients",
        [TPD_G_UPDATE] = "the update",
        [TPD_G_OTHER] = "the rest",
    };
    return t[g];
}

/* before says what matched before d: the steps before its own in full, and
 * at its step the groups that come before its group and that side a had there
 * (the sample ids when the streams had not parted by then), the model's and
 * optimizer's state not where either side was light (not compared). */
static void before(ctx *x, const tpd_div *d)
{
    const tpd_items *a = &x->p->a->timeline;
    bool lit = tpd_light(a, d->step_a) || tpd_light(&x->p->b->timeline, d->step_b);
    const tpd_stream_div *sd = &x->p->sd;
    bool has[TPD_G__COUNT] = {false};
    tpd_str s = {0};
    int n = 0, total = 0;
    if (d->group != TPD_G_DATA && sd->compared > 0 && (!sd->d.found || sd->d.step_a > d->step_a))
        has[TPD_G_DATA] = true;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].step == d->step_a && a->v[i].group < d->group &&
            !(lit && tpd_induced(&a->v[i])))
            has[a->v[i].group] = true;
    for (int g = 0; g < TPD_G__COUNT; g++) total += has[g];
    for (int g = 0; g < TPD_G__COUNT; g++) {
        if (!has[g]) continue;
        n++;
        tpd_str_printf(&s, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", group_text(g));
    }
    if (d->step_a > 0 && total > 0)
        tpd_why_add(x->why, "matched_before",
                    "steps 0 to %lld matched in full, and at step %lld %s matched before it",
                    (long long)(d->step_a - 1), (long long)d->step_a, s.s);
    else if (d->step_a > 0)
        tpd_why_add(x->why, "matched_before", "steps 0 to %lld matched in full",
                    (long long)(d->step_a - 1));
    else if (total > 0)
        tpd_why_add(x->why, "matched_before", "at step 0 %s matched before it", s.s);
    tpd_str_free(&s);
    if (d->group == TPD_G_MODEL && d->step_a == 0)
        tpd_why_add(x->why, "initial_state",
                    "%s differs at step 0, before any update: the model was initialised or "
                    "loaded differently",
                    d->path);
    else if (d->group == TPD_G_MODEL)
        tpd_why_add(x->why, "update",
                    "everything compared at step %lld matched, the loss and the gradients "
                    "included, and %s differs after it: what that step wrote (the optimizer's "
                    "update, or a buffer written beside it)",
                    (long long)(d->step_a - 1), d->path);
}

void tpd_golden_explain(tpd_why *w, const tpd_gpair *p, const tpd_div *d, const tpd_cmp_opts *o)
{
    ctx c = {w, p, o}, *x = &c;
    if (strcmp(d->path, TPD_STEPS_PATH) == 0 && d->a && d->b) {
        step_count(x, d);
        return;
    }
    if (d->group == TPD_G_DATA)
        data_order(x, d);
    else
        differs(x, d);
    if (d->group == TPD_G_RNG && p->cmp.first_other.found)
        tpd_why_add(w, "rng_first",
                    "the RNG state differs before anything else does: the first other divergence "
                    "is %s at step %lld",
                    p->cmp.first_other.path, (long long)p->cmp.first_other.step_a);
    before(x, d);
}
