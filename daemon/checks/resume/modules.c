/* SPDX-License-Identifier: MIT
 * modules.c -- the explanation of a resume FAIL for the modules no
 * optimizer trains (module[<name>]: an EMA, a teacher): for each whose
 * state R had after loading differs from I's when it saved, whether the
 * checkpoint holds it, whether R loaded it, and whether it changed during
 * A's training (a module rebuilt from the restored weights then differs
 * from the one that was averaged up to the save). */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/resume/ctx.h"

typedef tpd_rctx ctx;

/* in_module reports whether path is a component of module[name]. */
static bool in_module(const char *path, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(path, "module[", 7) && !strncmp(path + 7, name, n) && path[7 + n] == ']';
}

/* r_at finds R's component path at its first step after the load. */
static const tpd_item *r_at(const ctx *x, const char *path)
{
    for (size_t k = 0; k < x->pr->timeline.n; k++) {
        const tpd_item *y = &x->pr->timeline.v[k];
        if (y->step == x->r0 && !strcmp(y->path, path)) return y;
    }
    return NULL;
}

/* changed_in finds two steps of p's timeline between which a tensor of
 * module[name] changed (*from, *to); false when none did. */
static bool changed_in(const tpd_proc *p, const char *name, int64_t *from, int64_t *to)
{
    const tpd_items *l = &p->timeline;
    for (size_t i = 0; i < l->n; i++) {
        const tpd_item *a = &l->v[i];
        if (a->group != TPD_G_MODULE || a->v.kind != 't' || !in_module(a->path, name)) continue;
        for (size_t k = i + 1; k < l->n; k++) {
            const tpd_item *b = &l->v[k];
            if (b->step == a->step || b->group != TPD_G_MODULE || strcmp(b->path, a->path))
                continue;
            if (tpd_digests_comparable(&a->v, &b->v) &&
                memcmp(a->v.digest, b->v.digest, TP_DIGEST_LEN) != 0) {
                *from = a->step;
                *to = b->step;
                return true;
            }
            break; /* a's next occurrence: the same digest, look from there */
        }
    }
    return false;
}

/* loaded_into: how R restored module[name] after the load: 1 from one of
 * I's files, -1 from elsewhere, 0 not at all. */
static int loaded_into(const ctx *x, const char *name)
{
    int how = 0;
    for (size_t i = 0; i < x->pr->nrestores; i++) {
        const tpd_restore *r = &x->pr->restores[i];
        if (r->seq < x->loaded->seq || r->what == NULL || strcmp(r->what, "module") ||
            r->obj == NULL || !in_module(r->obj, name))
            continue;
        how = tpd_resume_from_checkpoint(x, r) ? 1 : -1;
    }
    return how;
}

static void explain_one(ctx *x, const tpd_module *m, const tpd_items *ref, int64_t rstep)
{
    int nseen = 0, ndiff = 0, nheld = 0, ntensors = 0, how;
    const char *first = NULL;
    char changed[128] = "";
    int64_t from, to;
    for (size_t i = 0; i < ref->n; i++) {
        const tpd_item *a = &ref->v[i], *b;
        tpd_eq eq;
        if (a->step != rstep || a->group != TPD_G_MODULE || !in_module(a->path, m->name)) continue;
        if (a->v.kind == 't') {
            ntensors++;
            nheld += tpd_resume_manifest_has(x, &a->v, tpd_resume_within(a->path, a->group));
        }
        if ((b = r_at(x, a->path)) == NULL) continue;
        eq = tpd_val_eq(&a->v, &b->v, x->o);
        if (eq == TPD_UNSURE && !tpd_digests_comparable(&a->v, &b->v)) continue;
        nseen++;
        if (eq == TPD_SAME) continue;
        if (ndiff++ == 0) first = a->path;
    }
    if (ndiff == 0) return;
    if (changed_in(x->pa, m->name, &from, &to))
        snprintf(changed, sizeof changed,
                 " whose tensors change during training (A's differ between steps %lld and %lld)",
                 (long long)from, (long long)to);
    how = loaded_into(x, m->name);
    if (ntensors > 0 && nheld == 0)
        tpd_why_add(&x->why, "module_not_in_checkpoint",
                    "the checkpoint does not hold the state of `%s`, %s %s%s: R built it anew "
                    "instead of restoring it, and %d of its %d components differ after the load "
                    "from when I saved (first %s)",
                    m->name, strchr("AEIOU", m->cls[0]) ? "an" : "a", m->cls, changed, ndiff, nseen,
                    first);
    else if (how == 0)
        tpd_why_add(&x->why, "module_not_restored",
                    "`%s` (%s%s) was never loaded: no load_state_dict of it after the checkpoint "
                    "load, and %d of its %d components differ from when I saved (first %s)",
                    m->name, m->cls, changed, ndiff, nseen, first);
    else if (how < 0)
        tpd_why_add(&x->why, "module_not_restored",
                    "`%s` (%s%s) was loaded from a state that no file of I's holds, and %d of its "
                    "%d components differ from when I saved (first %s)",
                    m->name, m->cls, changed, ndiff, nseen, first);
    else
        tpd_why_add(&x->why, "module_differs_after_load",
                    "`%s` (%s) was loaded, but %d of its %d components differ from when I saved "
                    "(first %s: changed after loading, or loaded from another state)",
                    m->name, m->cls, ndiff, nseen, first);
}

bool tpd_resume_explain_modules(tpd_rctx *x)
{
    int64_t rstep;
    bool same_point;
    int before = x->why.n;
    const tpd_items *ref;
    if (x->pi == NULL || x->pr == NULL || x->loaded == NULL) return false;
    ref = tpd_resume_reference(x, &rstep, &same_point);
    for (size_t k = 0; k < x->pi->nmodules; k++) explain_one(x, &x->pi->modules[k], ref, rstep);
    return x->why.n > before;
}
