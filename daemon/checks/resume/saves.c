/* SPDX-License-Identifier: MIT
 * saves.c -- what A and R save after the aligned point, compared entry by
 * entry: a save of A's after step c and R's save of the same file at the
 * same step (R's numbering from r0), the same occurrence among the saves of
 * that file at that step, must hold the same entries with the same
 * content.  An entry whose content differs between A's and B's save of the
 * same file (a timestamp, a path) says nothing and is left out; so is a
 * file one of them did not save (a difference in the steps trained is
 * found elsewhere).  Only tensors and numbers are compared: strings,
 * booleans and opaque objects in a checkpoint are what a resumed run is
 * told differently (nanoGPT's config holds init_from="resume", an argparse
 * Namespace resume=True, HF's TrainingArguments resume_from_checkpoint),
 * and an entry only one side holds counts for a tensor alone.  This catches what no snapshot
 * digests: an EMA kept in a plain dict of tensors and exported at the end, a counter saved as a
 * Python number. */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/resume/ctx.h"

typedef tpd_rctx ctx;

static bool same_name(const tpd_ckpt *a, const tpd_ckpt *b)
{
    if (a->name == NULL || b->name == NULL) return a->name == b->name;
    return !strcmp(tpd_resume_base(a->name), tpd_resume_base(b->name));
}

/* occurrence: how many saves of s's file p made at s's step before s. */
static int occurrence(const tpd_proc *p, const tpd_ckpt *s)
{
    int k = 0;
    for (size_t i = 0; i < p->nckpts && &p->ckpts[i] != s; i++)
        k += !p->ckpts[i].load && p->ckpts[i].step == s->step && same_name(&p->ckpts[i], s);
    return k;
}

/* counterpart finds p's save of a's file at step, the occ-th of them. */
static const tpd_ckpt *counterpart(const tpd_proc *p, const tpd_ckpt *a, int64_t step, int occ)
{
    for (size_t i = 0; i < p->nckpts; i++) {
        const tpd_ckpt *s = &p->ckpts[i];
        if (s->load || s->step != step || !same_name(s, a)) continue;
        if (occ-- == 0) return s;
    }
    return NULL;
}

static const tpd_item *entry(const tpd_ckpt *s, const char *path)
{
    for (size_t i = 0; i < s->manifest.n; i++)
        if (!strcmp(s->manifest.v[i].path, path)) return &s->manifest.v[i];
    return NULL;
}

/* compared: an entry a save comparison looks at (a tensor or a number),
 * but a scheduler's count of its step() calls, which a scheduler made again
 * after a load starts anew (tpd_bookkeeping). */
static bool compared(const tpd_item *e)
{
    return e != NULL && !tpd_step_count_path(e->path) &&
           (e->v.kind == 't' ||
            (e->v.kind == 'v' && (e->v.vtype == TP_V_INT || e->v.vtype == TP_V_FLOAT)));
}

/* differs: a's entry (or the absence of one, a NULL) differs from o's. */
static bool differs(const tpd_item *a, const tpd_item *o, const tpd_cmp_opts *opt)
{
    if (a == NULL || o == NULL) return a != o;
    return tpd_val_eq(&a->v, &o->v, opt) != TPD_SAME;
}

/* first_entry finds the first entry in which sa and sr differ and sa and sb
 * agree (sb NULL: B made no such save, so nothing is left out). */
static bool first_entry(const ctx *x, const tpd_ckpt *sa, const tpd_ckpt *sr, const tpd_ckpt *sb,
                        const tpd_item **ea, const tpd_item **er)
{
    for (int side = 0; side < 2; side++) {
        const tpd_ckpt *from = side ? sr : sa;
        for (size_t i = 0; i < from->manifest.n; i++) {
            const char *path = from->manifest.v[i].path;
            const tpd_item *a = entry(sa, path), *r = entry(sr, path);
            if (a != NULL && r != NULL ? !compared(a) || !compared(r)
                                       : from->manifest.v[i].v.kind != 't')
                continue;
            if (!differs(a, r, x->o)) continue;
            if (sb != NULL && differs(a, entry(sb, path), x->o)) continue;
            *ea = a;
            *er = r;
            return true;
        }
    }
    return false;
}

bool tpd_resume_saves(tpd_rctx *x, tpd_div *d)
{
    memset(d, 0, sizeof *d);
    if (x->pi == NULL || x->pr == NULL || x->loaded == NULL) return false;
    for (size_t i = 0; i < x->pa->nckpts; i++) {
        const tpd_ckpt *sa = &x->pa->ckpts[i], *sr, *sb;
        const tpd_item *ea = NULL, *er = NULL;
        int occ;
        if (sa->load || sa->step <= x->c || sa->manifest.n == 0) continue;
        occ = occurrence(x->pa, sa);
        sr = counterpart(x->pr, sa, sa->step - x->c + x->r0, occ);
        if (sr == NULL || sr->seq < x->loaded->seq) continue;
        if (tpd_same_ckpt(sa, sr)) continue;
        sb = x->pb != NULL ? counterpart(x->pb, sa, sa->step, occ) : NULL;
        if (!first_entry(x, sa, sr, sb, &ea, &er)) continue;
        snprintf(x->save_path, sizeof x->save_path, "file[%s].%s", tpd_resume_base(sa->name),
                 (ea ? ea : er)->path);
        d->found = true;
        d->step_a = sa->step;
        d->step_b = sr->step;
        d->group = TPD_G_OTHER;
        d->path = x->save_path;
        d->a = ea;
        d->b = er;
        x->save_a = sa;
        x->save_b = sb;
        return true;
    }
    return false;
}

void tpd_resume_explain_save(tpd_rctx *x, const tpd_div *d)
{
    const char *entry_path = (d->a ? d->a : d->b)->path;
    const char *file = tpd_resume_base(x->save_a->name);
    tpd_why_add(&x->why, "saved_differs",
                "A and R saved %s at step %lld (R's step %lld) with different content: its entry "
                "%s %s%s; every component the agent digests matched at every step compared, so "
                "the state behind this entry is outside what the snapshots see (tensors kept "
                "in a plain dict or list, a Python attribute): look for what the script saves "
                "under that key, and whether the checkpoint restores it",
                file, (long long)d->step_a, (long long)d->step_b, entry_path,
                d->a == NULL   ? "is only in R's"
                : d->b == NULL ? "is only in A's"
                               : "differs",
                x->save_b != NULL ? " (B's save agrees with A's)" : "");
}
