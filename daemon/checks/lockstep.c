/* SPDX-License-Identifier: MIT
 * lockstep.c -- lockstep comparison of two timelines (see lockstep.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/lockstep.h"
#include "daemon/obs/values.h"

/* stats_prove_diff: with |a_i - b_i| <= atol + rtol |b_i| for every element,
 * the statistics obey the bounds below (Cauchy-Schwarz for the sum, the
 * triangle inequality for the norms); a violated bound proves a difference. */
static bool stats_prove_diff(const tpd_val *a, const tpd_val *b, const tpd_cmp_opts *o)
{
    const tp_stats *x = &a->stats, *y = &b->stats;
    double n = 1, slack = 1e-9;
    for (uint32_t i = 0; i < a->ndim; i++) n *= (double)a->shape[i];
    if (x->nonfinite != y->nonfinite) return true;
    if (isnan(x->sum) || isnan(y->sum)) return false;
    if (fabs(x->maxabs - y->maxabs) > (o->atol + o->rtol * y->maxabs) * (1 + slack) + slack)
        return true;
    if (fabs(x->sum - y->sum) > (n * o->atol + o->rtol * sqrt(n) * y->l2) * (1 + slack) + slack)
        return true;
    if (fabs(x->l2 - y->l2) > sqrt(n) * (o->atol + o->rtol * y->maxabs) * (1 + slack) + slack)
        return true;
    return false;
}

static bool close_enough(double x, double y, const tpd_cmp_opts *o)
{
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    if (x == y) return true;
    if (!o->tolerance) return false;
    return fabs(x - y) <= o->atol + o->rtol * fabs(y);
}

static bool numeric(const tpd_val *v, double *d)
{
    if (v->vtype == TP_V_FLOAT)
        *d = v->f;
    else if (v->vtype == TP_V_INT)
        *d = (double)v->i;
    else
        return false;
    return true;
}

/* values_within judges two tensors from their captured values: TPD_UNSURE
 * when either was not captured (or cannot be read). */
static tpd_eq values_within(const tpd_val *a, const tpd_val *b, const tpd_cmp_opts *o)
{
    double *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    tpd_eq eq = TPD_UNSURE;
    if (o->values != NULL && tpd_values_read(o->values, a, &x, &nx) == TP_OK &&
        tpd_values_read(o->values, b, &y, &ny) == TP_OK && nx == ny)
        eq = tpd_values_within(x, y, nx, o->rtol, o->atol, NULL) ? TPD_SAME : TPD_DIFF;
    free(x);
    free(y);
    return eq;
}

/* bytes_equal judges two tensors of one dtype and shape exactly from their
 * captured bytes, which is what an equal digest of one kind says:
 * TPD_UNSURE when either was not captured (or cannot be read). */
static tpd_eq bytes_equal(const tpd_val *a, const tpd_val *b, const tpd_cmp_opts *o)
{
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    tpd_eq eq = TPD_UNSURE;
    if (o->values != NULL && tpd_values_bytes(o->values, a, &x, &nx) == TP_OK &&
        tpd_values_bytes(o->values, b, &y, &ny) == TP_OK && nx == ny)
        eq = memcmp(x, y, nx) == 0 ? TPD_SAME : TPD_DIFF;
    free(x);
    free(y);
    return eq;
}

tpd_eq tpd_val_eq(const tpd_val *a, const tpd_val *b, const tpd_cmp_opts *o)
{
    if (a->kind != b->kind) return TPD_DIFF;
    switch (a->kind) {
    case 't':
        if (strcmp(a->dtype ? a->dtype : "", b->dtype ? b->dtype : "") != 0) return TPD_DIFF;
        if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * a->ndim) != 0)
            return TPD_DIFF;
        /* digests of different kinds, or not made at all ("none"), say
         * nothing either way; nor do the statistics, which the device and
         * the host sum in different orders: only captured values can */
        if (!tpd_digests_comparable(a, b))
            return o->tolerance ? values_within(a, b, o) : bytes_equal(a, b, o);
        if (memcmp(a->digest, b->digest, TP_DIGEST_LEN) == 0) return TPD_SAME;
        if (!o->tolerance) return TPD_DIFF;
        if (stats_prove_diff(a, b, o)) return TPD_DIFF;
        return values_within(a, b, o);
    case 'd':
    case 'i':
        return a->n == b->n && memcmp(a->digest, b->digest, TP_DIGEST_LEN) == 0 ? TPD_SAME
                                                                                : TPD_DIFF;
    default: {
        double x, y;
        if (numeric(a, &x) && numeric(b, &y)) return close_enough(x, y, o) ? TPD_SAME : TPD_DIFF;
        if (a->vtype != b->vtype) return TPD_DIFF;
        switch (a->vtype) {
        case TP_V_NIL:
            return TPD_SAME;
        case TP_V_BOOL:
            return a->b == b->b ? TPD_SAME : TPD_DIFF;
        case TP_V_STR:
            return strcmp(a->s, b->s) == 0 ? TPD_SAME : TPD_DIFF;
        default:
            return TPD_DIFF;
        }
    }
    }
}

/* slice finds [lo, hi) of the items of step s in l, starting the search at *i. */
static void slice(const tpd_items *l, size_t *i, int64_t s, size_t *lo, size_t *hi)
{
    while (*i < l->n && l->v[*i].step < s) (*i)++;
    *lo = *i;
    while (*i < l->n && l->v[*i].step == s) (*i)++;
    *hi = *i;
}

/* occurrence counts the items before k in [lo, k) with the same path. */
static size_t occurrence(const tpd_items *l, size_t lo, size_t k)
{
    size_t n = 0;
    for (size_t j = lo; j < k; j++)
        if (l->v[j].group == l->v[k].group && tpd_same_path(&l->v[j], &l->v[k])) n++;
    return n;
}

/* match finds in [lo, hi) of l the occ-th item of x's group with x's path. */
static size_t match(const tpd_items *l, size_t lo, size_t hi, size_t guess, const tpd_item *x,
                    size_t occ)
{
    if (guess >= lo && guess < hi && l->v[guess].group == x->group && occ == 0 &&
        tpd_same_path(&l->v[guess], x))
        return guess;
    for (size_t j = lo; j < hi; j++)
        if (l->v[j].group == x->group && tpd_same_path(&l->v[j], x) && occ-- == 0) return j;
    return (size_t)-1;
}

static void note(tpd_div *d, int64_t sa, int64_t sb, tpd_group g, const char *path,
                 const tpd_item *a, const tpd_item *b, bool unsure)
{
    if (d->found) return;
    d->found = true;
    d->unsure = unsure;
    d->step_a = sa;
    d->step_b = sb;
    d->group = g;
    d->path = path;
    d->a = a;
    d->b = b;
}

/* judge_pair compares x, of a, with y, its match in b, at aligned steps
 * sa and sb: an unsure pair is noted as the first unsure, a different one
 * in d. */
static void judge_pair(const tpd_item *x, const tpd_item *y, int64_t sa, int64_t sb,
                       const tpd_cmp_opts *o, tpd_div *d, tpd_cmp_result *out)
{
    tpd_eq eq = tpd_val_eq(&x->v, &y->v, o);
    if (eq == TPD_UNSURE)
        note(&out->first_unsure, sa, sb, x->group, x->path, x, y, true);
    else if (eq == TPD_DIFF)
        note(d, sa, sb, x->group, x->path, x, y, false);
}

/* same_shape says whether the step slices [alo, ahi) of a and [blo, bhi)
 * of b hold the same components in the same order, so that the k-th item
 * of one is matched with the k-th of the other: what match finds then,
 * in one pass instead of a search per item. */
static bool same_shape(const tpd_items *a, size_t alo, size_t ahi, const tpd_items *b, size_t blo,
                       size_t bhi)
{
    if (ahi - alo != bhi - blo) return false;
    for (size_t k = 0; k < ahi - alo; k++) {
        const tpd_item *x = &a->v[alo + k], *y = &b->v[blo + k];
        if (x->group != y->group || x->anchor != y->anchor || !tpd_same_path(x, y)) return false;
    }
    return true;
}

/* compare_same compares the items of group g at one step whose slices
 * have the same shape (same_shape), the k-th of a with the k-th of b, as
 * tpd_compare's general walk would match them. */
static void compare_same(const tpd_items *a, size_t alo, size_t ahi, const tpd_items *b, size_t blo,
                         int g, bool lit, int64_t sa, int64_t sb, const tpd_cmp_opts *o, tpd_div *d,
                         tpd_cmp_result *out)
{
    for (size_t k = alo; k < ahi; k++) {
        const tpd_item *x = &a->v[k];
        if ((int)x->group != g || (lit && tpd_induced(x))) continue;
        judge_pair(x, &b->v[blo + (k - alo)], sa, sb, o, d, out);
        if (d->found && d == &out->first_other) return;
    }
}

void tpd_compare(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0,
                 const tpd_cmp_opts *o, tpd_cmp_result *out)
{
    size_t ia = 0, ib = 0;
    bool lit, same;
    memset(out, 0, sizeof *out);
    while (ia < a->n && a->v[ia].step < a0) ia++;
    while (ib < b->n && b->v[ib].step < b0) ib++;
    while ((ia < a->n || ib < b->n) && !out->first_other.found) {
        int64_t ra = ia < a->n ? a->v[ia].step - a0 : INT64_MAX;
        int64_t rb = ib < b->n ? b->v[ib].step - b0 : INT64_MAX;
        int64_t s = ra < rb ? ra : rb;
        size_t alo, ahi, blo, bhi;
        slice(a, &ia, s + a0, &alo, &ahi);
        slice(b, &ib, s + b0, &blo, &bhi);
        out->steps++;
        /* a light step on either side compares no induced component */
        lit = tpd_light(a, s + a0) || tpd_light(b, s + b0);
        same = same_shape(a, alo, ahi, b, blo, bhi);
        for (int g = 0; g < TPD_G__COUNT && !out->first_other.found; g++) {
            tpd_div *d = g == TPD_G_RNG ? &out->first_rng : &out->first_other;
            size_t j = blo;
            if (same) {
                compare_same(a, alo, ahi, b, blo, g, lit, s + a0, s + b0, o, d, out);
                continue;
            }
            for (size_t k = alo; k < ahi; k++) {
                const tpd_item *x = &a->v[k];
                size_t m;
                if ((int)x->group != g || (lit && tpd_induced(x))) continue;
                while (j < bhi && (int)b->v[j].group < g) j++;
                m = match(b, blo, bhi, j, x, occurrence(a, alo, k));
                if (m == (size_t)-1) {
                    if (!x->anchor && x->group != TPD_G_MODULE)
                        note(d, s + a0, s + b0, x->group, x->path, x, NULL, false);
                } else {
                    judge_pair(x, &b->v[m], s + a0, s + b0, o, d, out);
                    if (m == j) j++;
                }
                if (d->found && d == &out->first_other) break;
            }
            /* items only b has */
            for (size_t k = blo; k < bhi && !(d->found && d == &out->first_other); k++) {
                const tpd_item *y = &b->v[k];
                if ((int)y->group != g || y->anchor || y->group == TPD_G_MODULE ||
                    (lit && tpd_induced(y)))
                    continue;
                if (match(a, alo, ahi, (size_t)-1, y, occurrence(b, blo, k)) == (size_t)-1)
                    note(d, s + a0, s + b0, y->group, y->path, NULL, y, false);
            }
        }
    }
    if (out->first_other.found)
        out->first = out->first_rng.found ? out->first_rng : out->first_other;
}

bool tpd_light_between(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0, int64_t from,
                       int64_t to, int64_t *first)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < a->nlight; i++)
        if (a->light[i] >= from && a->light[i] <= to) {
            best = a->light[i];
            break;
        }
    for (size_t i = 0; i < b->nlight; i++) {
        int64_t s = b->light[i] - b0 + a0;
        if (s >= from && s <= to) {
            if (s < best) best = s;
            break;
        }
    }
    if (best == INT64_MAX) return false;
    *first = best;
    return true;
}

const tpd_item *tpd_find(const tpd_items *l, int64_t step, const char *path)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].step == step && strcmp(l->v[i].path, path) == 0) return &l->v[i];
    return NULL;
}

bool tpd_compare_steps(tpd_cmp_result *cmp, tpd_item steps[2], int64_t a0, int64_t na, int64_t b0,
                       int64_t nb)
{
    int64_t both = na < nb ? na : nb;
    tpd_div d;
    if (na == nb || (cmp->first_other.found && cmp->first_other.step_a - a0 < both)) return false;
    for (int k = 0; k < 2; k++) {
        tpd_item *it = &steps[k];
        memset(it, 0, sizeof *it);
        it->step = (k ? b0 : a0) + both;
        it->group = TPD_G_OTHER;
        it->path = TPD_STEPS_PATH;
        it->v.kind = 'v';
        it->v.vtype = TP_V_INT;
        it->v.i = k ? nb : na;
    }
    memset(&d, 0, sizeof d);
    d.found = true;
    d.step_a = a0 + both;
    d.step_b = b0 + both;
    d.group = TPD_G_OTHER;
    d.path = TPD_STEPS_PATH;
    d.a = &steps[0];
    d.b = &steps[1];
    cmp->first = cmp->first_other = d;
    return true;
}
