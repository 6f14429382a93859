/* SPDX-License-Identifier: MIT
 * divergence.c -- every component that differs at one aligned step, with
 * both values and captured-value errors (see divergence.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/divergence.h"
#include "daemon/checks/render.h"
#include "daemon/obs/values.h"

/* step_slice finds [lo, hi) of the items of step s in l (sorted by step). */
static void step_slice(const tpd_items *l, int64_t s, size_t *lo, size_t *hi)
{
    size_t i = 0;
    while (i < l->n && l->v[i].step < s) i++;
    *lo = i;
    while (i < l->n && l->v[i].step == s) i++;
    *hi = i;
}

static bool same_item(const tpd_item *x, const tpd_item *y)
{
    return x->group == y->group && strcmp(x->path, y->path) == 0;
}

/* nth_of counts the items like l->v[k] in [lo, k): its occurrence. */
static size_t nth_of(const tpd_items *l, size_t lo, size_t k)
{
    size_t n = 0;
    for (size_t j = lo; j < k; j++) n += same_item(&l->v[j], &l->v[k]);
    return n;
}

/* find_nth finds in [lo, hi) of l the occ-th item like x, or NULL. */
static const tpd_item *find_nth(const tpd_items *l, size_t lo, size_t hi, const tpd_item *x,
                                size_t occ)
{
    for (size_t j = lo; j < hi; j++)
        if (same_item(&l->v[j], x) && occ-- == 0) return &l->v[j];
    return NULL;
}

/* errors fills v's element-wise errors when both sides are tensors of one
 * dtype and shape whose values r's blob store holds. */
static tp_err errors(tpd_divergence *v, const tpd_run *r)
{
    double *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    tp_err rc;
    if (r == NULL || v->a == NULL || v->b == NULL || v->a->kind != 't' || v->b->kind != 't' ||
        !v->a->blob || !v->b->blob || v->a->ndim != v->b->ndim ||
        strcmp(v->a->dtype ? v->a->dtype : "", v->b->dtype ? v->b->dtype : "") != 0 ||
        memcmp(v->a->shape, v->b->shape, sizeof(int64_t) * v->a->ndim) != 0)
        return TP_OK;
    /* a blob that cannot be read leaves the errors out: the report still
     * holds both values' statistics */
    if ((rc = tpd_values_read(r, v->a, &a, &na)) == TP_OK &&
        (rc = tpd_values_read(r, v->b, &b, &nb)) == TP_OK && na == nb) {
        tpd_values_errors(a, b, na, &v->max_abs, &v->max_rel);
        v->has_errors = true;
    }
    free(a);
    free(b);
    return rc == TP_ENOMEM ? TP_ENOMEM : TP_OK;
}

static tp_err push(tpd_divergences *d, const tpd_run *r, tpd_group g, const char *path,
                   const tpd_val *a, const tpd_val *b, bool unsure)
{
    tpd_divergence *v;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        tpd_divergence *nv = realloc(d->v, cap * sizeof *nv);
        if (nv == NULL) return TP_ENOMEM;
        d->v = nv;
        d->cap = cap;
    }
    v = &d->v[d->n++];
    memset(v, 0, sizeof *v);
    v->group = g;
    v->path = path;
    v->a = a;
    v->b = b;
    v->unsure = unsure;
    return errors(v, r);
}

/* is_first: the item pair (x, y) is the divergence already listed first. */
static bool is_first(const tpd_div *first, const tpd_item *x, const tpd_item *y)
{
    return first != NULL && first->found && first->a == x && first->b == y;
}

tp_err tpd_divergences_at(tpd_divergences *out, const tpd_run *r, const tpd_div *first,
                          const tpd_items *a, int64_t sa, const tpd_items *b, int64_t sb,
                          const tpd_cmp_opts *o)
{
    size_t alo, ahi, blo, bhi;
    tp_err rc = TP_OK;
    bool lit;
    if (first != NULL && first->found)
        rc = push(out, r, first->group, first->path, first->a ? &first->a->v : NULL,
                  first->b ? &first->b->v : NULL, first->unsure);
    if (rc != TP_OK || a == NULL || b == NULL) goto end;
    step_slice(a, sa, &alo, &ahi);
    step_slice(b, sb, &blo, &bhi);
    /* as in the lockstep: a light step on either side compares no induced
     * component */
    lit = tpd_light(a, sa) || tpd_light(b, sb);
    for (size_t k = alo; k < ahi && rc == TP_OK; k++) {
        const tpd_item *x = &a->v[k], *y;
        tpd_eq eq;
        if (lit && tpd_induced(x)) continue;
        y = find_nth(b, blo, bhi, x, nth_of(a, alo, k));
        eq = y ? tpd_val_eq(&x->v, &y->v, o) : TPD_DIFF;
        if (eq == TPD_SAME || is_first(first, x, y)) continue;
        rc = push(out, r, x->group, x->path, &x->v, y ? &y->v : NULL, eq == TPD_UNSURE);
    }
    for (size_t k = blo; k < bhi && rc == TP_OK; k++) {
        const tpd_item *y = &b->v[k];
        if ((lit && tpd_induced(y)) || find_nth(a, alo, ahi, y, nth_of(b, blo, k)) != NULL ||
            is_first(first, NULL, y))
            continue;
        rc = push(out, r, y->group, y->path, NULL, &y->v, false);
    }
end:
    if (rc != TP_OK) tpd_divergences_free(out);
    return rc;
}

void tpd_divergences_free(tpd_divergences *d)
{
    if (d == NULL) return;
    free(d->v);
    memset(d, 0, sizeof *d);
}

void tpd_divergence_errors_text(tpd_str *t, const tpd_divergence *v)
{
    if (v->has_errors)
        tpd_str_printf(t, "max |error| %.9g, max relative error %.9g", v->max_abs, v->max_rel);
}

void tpd_divergences_others_text(tpd_str *t, const tpd_divergences *d, size_t max)
{
    if (d->n < 2) return;
    tpd_str_printf(t, "    %zu other component%s differ%s at this step:", d->n - 1,
                   d->n > 2 ? "s" : "", d->n > 2 ? "" : "s");
    for (size_t i = 1; i < d->n && i <= max; i++)
        tpd_str_printf(t, "%s %s", i > 1 ? "," : "", d->v[i].path);
    tpd_str_puts(t, d->n - 1 > max ? ", ...\n" : "\n");
}

json_t *tpd_json_divergences(const tpd_divergences *d, const char *la, const char *lb)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (size_t i = 0; i < d->n; i++) {
        const tpd_divergence *v = &d->v[i];
        json_t *o = json_pack("{s:o, s:s, s:b}", "path", tpd_json_str(v->path), "group",
                              tpd_group_name(v->group), "unsure", v->unsure);
        bad |= !tpd_jset(o, la, tpd_json_val(v->a));
        bad |= !tpd_jset(o, lb, tpd_json_val(v->b));
        if (v->has_errors) {
            bad |= !tpd_jset(o, "max_abs_error", tpd_json_num(v->max_abs));
            bad |= !tpd_jset(o, "max_rel_error", tpd_json_num(v->max_rel));
        }
        bad |= !tpd_jpush(a, o);
    }
    return tpd_jdone(a, bad);
}
