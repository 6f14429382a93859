/* SPDX-License-Identifier: MIT
 * optcover.c -- optimizer coverage, from the cover events (obs/optcover.c):
 * which tensors each optimizer steps, and which parameters of the live
 * modules held a gradient just before its first step, when its param groups
 * changed, and when a parameter first held a gradient.  Checked in this
 * order, the first one found is the failure (verdict.h):
 *   optimizer[K].params  at its first step none of optimizer K's tensors
 *                        held a gradient, while parameters that did are in
 *                        no optimizer (built for another copy of the model);
 *   <param>              a parameter held a gradient and is in no
 *                        optimizer (never updated), unless the snapshots
 *                        show its value changed anyway: at an optimizer's
 *                        first step, or at a later cover event (the agent
 *                        sends one when a parameter first holds a gradient,
 *                        one unfrozen with requires_grad_(True)), judged at
 *                        the first cover that lists it with a gradient;
 *   <param>              a tensor is twice in one optimizer's groups, or in
 *                        two optimizers that both stepped with no backward
 *                        call between (its gradient applied twice). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"

typedef tpd_hctx ctx;

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static bool has_id(const int64_t *v, size_t n, int64_t id)
{
    return n > 0 && bsearch(&id, v, n, sizeof *v, cmp_id) != NULL;
}

/* ids_of: the identities of n tensors, sorted; NULL when n is 0 or out of
 * memory (then x->oom). */
static int64_t *ids_of(ctx *x, const tpd_tensor_ref *t, size_t n)
{
    int64_t *v;
    if (n == 0) return NULL;
    if ((v = tpd_arena_alloc(x->a, sizeof *v * n)) == NULL) {
        x->oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) v[i] = t[i].id;
    qsort(v, n, sizeof *v, cmp_id);
    return v;
}

/* held: every tensor of every cover event, sorted, once each (the tensors
 * some optimizer held at some step). */
typedef struct held {
    int64_t *ids;
    size_t n;
    size_t nopts; /* optimizers with a cover event */
} held;

static void held_build(ctx *x, held *h)
{
    size_t n = 0;
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < x->p->ncovers; i++) n += x->p->covers[i].nparams;
    if (n > 0 && (h->ids = tpd_arena_alloc(x->a, sizeof *h->ids * n)) == NULL) {
        x->oom = true;
        return;
    }
    for (size_t i = 0; i < x->p->ncovers; i++) {
        const tpd_cover *c = &x->p->covers[i];
        size_t k = 0;
        while (k < i && x->p->covers[k].opt != c->opt) k++;
        h->nopts += k == i;
        for (uint32_t j = 0; j < c->nparams; j++) h->ids[h->n++] = c->params[j].id;
    }
    if (h->n > 1) qsort(h->ids, h->n, sizeof *h->ids, cmp_id);
    if (h->n > 1) { /* one entry per tensor */
        size_t k = 1;
        for (size_t i = 1; i < h->n; i++)
            if (h->ids[i] != h->ids[k - 1]) h->ids[k++] = h->ids[i];
        h->n = k;
    }
}

bool tpd_health_cover_first(const ctx *x, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (x->p->covers[k].opt == x->p->covers[i].opt) return false;
    return true;
}

/* row_after: the row of optimizer opt's step that follows event seq (a
 * cover event goes out just before its step's pre event); nrows if none. */
static size_t row_after(const ctx *x, uint64_t seq, int64_t opt)
{
    for (size_t i = 0; i < x->nrows; i++)
        if (x->rows[i].pre_seq > seq && x->rows[i].opt == opt) return i;
    return x->nrows;
}

static void name_text(tpd_str *t, const tpd_tensor_ref *r)
{
    if (r->name[0])
        tpd_str_puts(t, r->name);
    else
        tpd_str_printf(t, "a tensor of shape %s that belongs to no live module", r->shape);
}

/* list_text appends up to 4 names of the refs marked in pick, then "and N
 * more". */
static void list_text(tpd_str *t, const tpd_tensor_ref *r, const bool *pick, size_t n)
{
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pick[i]) continue;
        if (total++ < 4) {
            tpd_str_puts(t, shown++ ? ", " : "");
            name_text(t, &r[i]);
        }
    }
    if (total > shown) tpd_str_printf(t, " and %zu more", total - shown);
}

static void cover_found(ctx *x, const tpd_cover *c, const char *path)
{
    size_t row = row_after(x, c->seq, c->opt);
    tpd_hctx_found(x, row, row < x->nrows ? x->rows[row].step : c->step, path);
}

/* ---- built for another copy ---- */

static bool check_copy(ctx *x, const held *h, size_t ci)
{
    const tpd_cover *c = &x->p->covers[ci];
    int64_t *graded;
    bool *orphan;
    size_t norphans = 0, nnamed = 0;
    char path[64];
    size_t row;
    if (c->nparams == 0 || !tpd_health_cover_first(x, ci)) return false;
    if (c->ngraded == 0) return false; /* no gradient anywhere: the update check's */
    /* the step's own count of its tensors with a gradient (plain tensors
     * too), else the modules' parameters that held one */
    row = row_after(x, c->seq, c->opt);
    if (row < x->nrows && x->rows[row].ngrads >= 0) {
        if (x->rows[row].ngrads > 0) return false;
    } else {
        graded = ids_of(x, c->graded, c->ngraded);
        for (uint32_t j = 0; j < c->nparams; j++)
            if (has_id(graded, c->ngraded, c->params[j].id)) return false;
    }
    if ((orphan = tpd_arena_alloc(x->a, sizeof *orphan * c->ngraded)) == NULL) {
        x->oom = true;
        return false;
    }
    for (uint32_t j = 0; j < c->ngraded; j++)
        norphans += orphan[j] = !has_id(h->ids, h->n, c->graded[j].id);
    if (norphans == 0) return false;
    for (uint32_t j = 0; j < c->nparams; j++) nnamed += c->params[j].name[0] != 0;
    snprintf(path, sizeof path, "optimizer[%lld].params", (long long)c->opt);
    cover_found(x, c, path);
    tpd_str_printf(&x->value, "%u tensor%s, none holding a gradient at its first step", c->nparams,
                   c->nparams == 1 ? "" : "s");
    tpd_why_add(&x->why, "coverage",
                "at the first step of optimizer[%lld] (%s, step %lld) none of its %u tensor%s "
                "held a gradient",
                (long long)c->opt, c->cls, (long long)c->step, c->nparams,
                c->nparams == 1 ? "" : "s");
    if (nnamed == 0)
        tpd_why_add(&x->why, "coverage", "none of them is a parameter of a module still alive");
    else {
        tpd_str l = {0};
        bool *named = tpd_arena_alloc(x->a, sizeof *named * c->nparams);
        if (named == NULL) {
            x->oom = true;
            return true;
        }
        for (uint32_t j = 0; j < c->nparams; j++) named[j] = c->params[j].name[0] != 0;
        list_text(&l, c->params, named, c->nparams);
        tpd_why_add(&x->why, "coverage", "%zu of them are parameters of live modules: %s", nnamed,
                    tpd_str_cstr(&l));
        tpd_str_free(&l);
    }
    {
        tpd_str l = {0};
        list_text(&l, c->graded, orphan, c->ngraded);
        tpd_why_add(&x->why, "coverage",
                    "%zu parameter%s held gradients then and %s in no optimizer's param groups: %s",
                    norphans, norphans == 1 ? "" : "s", norphans == 1 ? "is" : "are",
                    tpd_str_cstr(&l));
        tpd_str_free(&l);
    }
    if (norphans == c->nparams) {
        uint32_t k = 0, j;
        for (j = 0; j < c->ngraded && k < c->nparams; j++) {
            if (!orphan[j]) continue;
            if (strcmp(c->graded[j].shape, c->params[k].shape) != 0) break;
            k++;
        }
        if (k == c->nparams)
            tpd_why_add(&x->why, "coverage",
                        "their shapes equal those of optimizer[%lld]'s tensors one for one, in "
                        "order, as for a copy of the same model (a deepcopy, a model re-created or "
                        "reloaded after the optimizer was built)",
                        (long long)c->opt);
    }
    return true;
}

/* ---- never updated ---- */

/* snap_tensor: model tensor path in the first start-of-step snapshot at or
 * after step (*step gets its step), or in the final one. */
static const tpd_val *snap_tensor(const ctx *x, const char *path, bool final, int64_t *step)
{
    if (final) {
        for (size_t i = x->p->nsnaps; i-- > 0;) {
            const tpd_snap *s = &x->p->snaps[i];
            if (s->why == NULL || strcmp(s->why, "final") != 0) continue;
            for (size_t k = 0; k < s->items.n; k++)
                if (s->items.v[k].v.kind == 't' && strcmp(s->items.v[k].path, path) == 0)
                    return &s->items.v[k].v;
            return NULL;
        }
        return NULL;
    }
    for (size_t k = 0; k < x->p->timeline.n; k++) {
        const tpd_item *it = &x->p->timeline.v[k];
        if (it->step < *step || it->group != TPD_G_MODEL || it->v.kind != 't') continue;
        if (strcmp(it->path, path) != 0) continue;
        *step = it->step;
        return &it->v;
    }
    return NULL;
}

/* graded_before: an earlier cover event than ci lists tensor id among the
 * parameters that held a gradient. */
static bool graded_before(const ctx *x, size_t ci, int64_t id)
{
    for (size_t k = 0; k < ci; k++)
        for (uint32_t j = 0; j < x->p->covers[k].ngraded; j++)
            if (x->p->covers[k].graded[j].id == id) return true;
    return false;
}

/* orphan: cover ci's graded tensor j is in no optimizer's groups and is
 * judged there: at an optimizer's first step every such one (as before any
 * later cover), at a later cover only one that no earlier cover lists with
 * a gradient (it started to receive gradients then). */
static bool orphan(const ctx *x, const held *h, size_t ci, bool first, uint32_t j)
{
    const tpd_cover *c = &x->p->covers[ci];
    if (has_id(h->ids, h->n, c->graded[j].id)) return false;
    return first || !graded_before(x, ci, c->graded[j].id);
}

static bool check_left_out(ctx *x, const held *h, size_t ci)
{
    const tpd_cover *c = &x->p->covers[ci];
    bool first = tpd_health_cover_first(x, ci);
    for (uint32_t j = 0; j < c->ngraded; j++) {
        const tpd_tensor_ref *g = &c->graded[j];
        const tpd_val *d0 = NULL, *d1 = NULL;
        int64_t s0 = c->step;
        bool *out;
        size_t nout = 0;
        if (!orphan(x, h, ci, first, j)) continue;
        if (g->name[0]) {
            d0 = snap_tensor(x, g->name, false, &s0);
            d1 = snap_tensor(x, g->name, true, NULL);
        }
        /* digests that cannot be compared tell nothing, as when one is missing */
        if (d0 != NULL && d1 != NULL && !tpd_digests_comparable(d0, d1)) d0 = d1 = NULL;
        /* moved by something other than an optimizer: not this check's */
        if (d0 != NULL && d1 != NULL && memcmp(d0->digest, d1->digest, TP_DIGEST_LEN) != 0)
            continue;
        if ((out = tpd_arena_alloc(x->a, sizeof *out * c->ngraded)) == NULL) {
            x->oom = true;
            return false;
        }
        for (uint32_t k = 0; k < c->ngraded; k++) nout += out[k] = orphan(x, h, ci, first, k);
        cover_found(x, c, g->name[0] ? g->name : "model");
        if (first)
            tpd_str_puts(&x->value, "held a gradient; in no optimizer's param groups");
        else
            tpd_str_printf(&x->value,
                           "started to receive gradients at step %lld; in no optimizer's param "
                           "groups",
                           (long long)c->step);
        {
            tpd_str n = {0};
            name_text(&n, g);
            if (first)
                tpd_why_add(&x->why, "coverage",
                            "%s held a gradient at step %lld, before optimizer[%lld]'s first step, "
                            "and is in none of the param groups of the %zu optimizer%s that "
                            "stepped (%zu tensor%s in all)",
                            tpd_str_cstr(&n), (long long)c->step, (long long)c->opt, h->nopts,
                            h->nopts == 1 ? "" : "s", h->n, h->n == 1 ? "" : "s");
            else {
                tpd_why_add(&x->why, "coverage",
                            "%s started to receive gradients at step %lld: it held one when "
                            "optimizer[%lld] stepped then and none at the optimizer steps before "
                            "(as a frozen parameter unfrozen with requires_grad_(True))",
                            tpd_str_cstr(&n), (long long)c->step, (long long)c->opt);
                tpd_why_add(&x->why, "coverage",
                            "it was never added to an optimizer (add_param_group): it is in none "
                            "of the param groups of the %zu optimizer%s that stepped (%zu "
                            "tensor%s in all)",
                            h->nopts, h->nopts == 1 ? "" : "s", h->n, h->n == 1 ? "" : "s");
            }
            tpd_str_free(&n);
        }
        if (nout > 1) {
            tpd_str l = {0};
            list_text(&l, c->graded, out, c->ngraded);
            tpd_why_add(&x->why, "coverage", "%zu parameters that %s are in no optimizer: %s", nout,
                        first ? "held gradients" : "started to receive gradients then",
                        tpd_str_cstr(&l));
            tpd_str_free(&l);
        }
        if (d0 != NULL && d1 != NULL)
            tpd_why_add(&x->why, "coverage",
                        "its value at exit equals its value at step %lld (the same digest): no "
                        "step moved it",
                        (long long)s0);
        if (!first)
            tpd_why_add(&x->why, "coverage",
                        "its gradient is in no row's grad_norm: that norm is over the gradients of "
                        "the stepping optimizer's own parameters that held one");
        return true;
    }
    return false;
}

/* ---- updated twice ---- */

static bool twice_found(ctx *x, const tpd_tensor_ref *r, size_t row, int64_t step)
{
    char path[256];
    snprintf(path, sizeof path, "%s", r->name[0] ? r->name : "model");
    tpd_hctx_found(x, row, step, path);
    return true;
}

static bool check_dup(ctx *x, size_t ci)
{
    const tpd_cover *c = &x->p->covers[ci];
    for (uint32_t j = 0; j < c->nparams; j++)
        for (uint32_t k = j + 1; k < c->nparams; k++) {
            size_t row;
            tpd_str n = {0};
            if (c->params[j].id != c->params[k].id) continue;
            row = row_after(x, c->seq, c->opt);
            twice_found(x, &c->params[j], row, row < x->nrows ? x->rows[row].step : c->step);
            tpd_str_printf(&x->value, "twice in optimizer[%lld]'s param groups", (long long)c->opt);
            name_text(&n, &c->params[j]);
            tpd_why_add(&x->why, "coverage",
                        "%s is in optimizer[%lld]'s param groups twice (group %lld, place %u; "
                        "group %lld, place %u)",
                        tpd_str_cstr(&n), (long long)c->opt, (long long)c->params[j].group, j,
                        (long long)c->params[k].group, k);
            tpd_str_free(&n);
            return true;
        }
    return false;
}

const tpd_cover *tpd_health_cover_at(const tpd_hctx *x, int64_t opt, uint64_t seq)
{
    const tpd_cover *r = NULL;
    for (size_t i = 0; x->p != NULL && i < x->p->ncovers && x->p->covers[i].seq < seq; i++)
        if (x->p->covers[i].opt == opt) r = &x->p->covers[i];
    return r;
}

/* check_shared: rows a < b, steps of two optimizers with no backward call
 * between (b's step and every row up to it had none). */
static bool check_shared(ctx *x, size_t a, size_t b)
{
    const tpd_hrow *ra = &x->rows[a], *rb = &x->rows[b];
    const tpd_cover *ca = tpd_health_cover_at(x, ra->opt, rb->pre_seq);
    const tpd_cover *cb = tpd_health_cover_at(x, rb->opt, rb->pre_seq);
    int64_t *ids;
    if (ca == NULL || cb == NULL) return false;
    ids = ids_of(x, ca->params, ca->nparams);
    for (uint32_t j = 0; j < cb->nparams; j++) {
        const tpd_tensor_ref *r = &cb->params[j];
        tpd_str n = {0};
        int64_t ga = -1;
        if (!has_id(ids, ca->nparams, r->id)) continue;
        for (uint32_t k = 0; k < ca->nparams; k++)
            if (ca->params[k].id == r->id) ga = ca->params[k].group;
        twice_found(x, r, b, rb->step);
        tpd_str_printf(
            &x->value, "in optimizer[%lld] and optimizer[%lld], stepped at steps %lld and %lld",
            (long long)ra->opt, (long long)rb->opt, (long long)ra->step, (long long)rb->step);
        name_text(&n, r);
        tpd_why_add(&x->why, "coverage",
                    "%s is in optimizer[%lld] (group %lld) and in optimizer[%lld] (group %lld)",
                    tpd_str_cstr(&n), (long long)ra->opt, (long long)ga, (long long)rb->opt,
                    (long long)r->group);
        tpd_why_add(&x->why, "coverage",
                    "optimizer[%lld] stepped at step %lld and optimizer[%lld] at step %lld with "
                    "no backward call between: both applied the same gradient to it",
                    (long long)ra->opt, (long long)ra->step, (long long)rb->opt,
                    (long long)rb->step);
        tpd_str_free(&n);
        return true;
    }
    return false;
}

static bool check_iterations(ctx *x)
{
    size_t start = 0;
    for (size_t b = 1; b < x->nrows; b++) {
        if (x->rows[b].nbwd > 0) {
            start = b;
            continue;
        }
        for (size_t a = start; a < b; a++)
            if (x->rows[a].opt != x->rows[b].opt && check_shared(x, a, b)) return true;
    }
    return false;
}

bool tpd_health_cover(ctx *x)
{
    held h;
    if (x->p == NULL || x->p->ncovers == 0) return false;
    held_build(x, &h);
    if (x->oom) return false;
    for (size_t i = 0; i < x->p->ncovers; i++)
        if (check_copy(x, &h, i)) return true;
    for (size_t i = 0; i < x->p->ncovers; i++)
        if (check_left_out(x, &h, i)) return true;
    for (size_t i = 0; i < x->p->ncovers; i++)
        if (check_dup(x, i)) return true;
    return check_iterations(x);
}
