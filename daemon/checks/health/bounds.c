/* SPDX-License-Identifier: MIT
 * bounds.c -- the expectations a user declares (tools/cmd/health.c puts them
 * in the run's params):
 *   "min_loss_decrease" R  the mean loss of the last quarter of the steps
 *                          with a finite loss is at least a fraction R
 *                          below the first quarter's (path loss_decrease,
 *                          after the steps; at least MIN_LOSS_ROWS such
 *                          steps, else not checked, which the report says);
 *   "lr_expect" [[step, [lr, ...]], ...]  each declared step's learning
 *                          rates, one per param group, within a relative
 *                          LR_RTOL (path lr, at the step; a declared step
 *                          the run never made: path lr, after the steps),
 *                          "lr_expect_file" the file they came from;
 *   "every" N              update norms measured at the steps that are
 *                          multiples of N only (the agent's
 *                          TRAINPARITY_UPDATE_EVERY): the text table
 *                          shows those rows.
 * Params that are absent or malformed declare nothing (params.h). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/health/ctx.h"
#include "daemon/checks/params.h"

typedef tpd_hctx ctx;

#define MIN_LOSS_ROWS 8 /* steps with a loss --min-loss-decrease needs */
#define LR_RTOL       1e-6
#define LR_RTOL_S     "1e-6" /* as the report says it */

/* One declared step of --lr-expect. */
struct tpd_lr_expect {
    int64_t step;
    uint32_t nlrs;
    bool seen; /* a row of that step was checked */
    double *lrs;
};

static int cmp_step(const void *a, const void *b)
{
    const struct tpd_lr_expect *p = a, *q = b;
    return p->step < q->step ? -1 : p->step > q->step;
}

/* lr_entry reads one [step, [lr, ...]] into e (lrs in x's arena); false
 * when it is not one. */
static bool lr_entry(ctx *x, json_t *j, struct tpd_lr_expect *e)
{
    json_t *s = json_array_get(j, 0), *l = json_array_get(j, 1);
    size_t n;
    if (!json_is_array(j) || json_array_size(j) != 2 || !json_is_integer(s) || !json_is_array(l))
        return false;
    if ((n = json_array_size(l)) == 0 || n > UINT32_MAX) return false;
    e->step = json_integer_value(s);
    e->nlrs = (uint32_t)n;
    e->seen = false;
    if ((e->lrs = tpd_arena_alloc(x->a, n * sizeof *e->lrs)) == NULL) {
        x->oom = true;
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(l, i);
        if (!json_is_number(v) || !isfinite(json_number_value(v))) return false;
        e->lrs[i] = json_number_value(v);
    }
    return true;
}

/* lr_expect reads "lr_expect", sorted by step; a malformed one, or one
 * that names a step twice, declares nothing. */
static void lr_expect(ctx *x, json_t *a)
{
    size_t n = json_array_size(a);
    struct tpd_lr_expect *v;
    if (!json_is_array(a) || n == 0) return;
    if ((v = tpd_arena_alloc(x->a, n * sizeof *v)) == NULL) {
        x->oom = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!lr_entry(x, json_array_get(a, i), &v[i])) return;
    qsort(v, n, sizeof *v, cmp_step);
    for (size_t i = 1; i < n; i++)
        if (v[i].step == v[i - 1].step) return;
    x->lr_expect = v;
    x->nlr_expect = n;
}

void tpd_health_bounds_parse(ctx *x, const struct tpd_params *par)
{
    double r = tpd_param_num(par, TPP_health_min_loss_decrease);
    const char *file = tpd_param_str(par, TPP_health_lr_expect_file);
    int64_t every = tpd_param_int(par, TPP_health_every);
    x->has_min_decrease = isfinite(r) && r > 0 && r < 1;
    x->min_decrease = r;
    x->every = every > 1 ? every : 0;
    if (par->root == NULL) return;
    lr_expect(x, tpd_param_json(par, TPP_health_lr_expect));
    if (x->nlr_expect > 0 && file != NULL && (x->lr_file = tpd_arena_strdup(x->a, file)) == NULL)
        x->oom = true;
}

/* ---- --lr-expect ---- */

static struct tpd_lr_expect *expected(ctx *x, int64_t step)
{
    size_t lo = 0, hi = x->nlr_expect;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->lr_expect[mid].step == step) return &x->lr_expect[mid];
        if (x->lr_expect[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool lr_near(double got, double want)
{
    return fabs(got - want) <= LR_RTOL * fabs(want);
}

static bool lrs_match(const tpd_hrow *w, const struct tpd_lr_expect *e)
{
    if (w->nlrs != e->nlrs) return false;
    for (uint32_t i = 0; i < w->nlrs; i++)
        if (!lr_near(w->lrs[i], e->lrs[i])) return false;
    return true;
}

static void lrs_list(tpd_str *t, const double *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) tpd_str_printf(t, "%s%.9g", i ? ", " : "", v[i]);
}

static const char *lr_source(const ctx *x)
{
    return x->lr_file != NULL ? x->lr_file : "the --lr-expect file";
}

/* last_declared: the last row before i whose step was declared (it
 * matched: the rows are checked in order), or NULL. */
static const tpd_hrow *last_declared(ctx *x, size_t i)
{
    while (i-- > 0)
        if (expected(x, x->rows[i].step) != NULL) return &x->rows[i];
    return NULL;
}

static bool check_lr(ctx *x, size_t i)
{
    const tpd_hrow *w = &x->rows[i], *prev;
    struct tpd_lr_expect *e = expected(x, w->step);
    tpd_str got = {0}, want = {0};
    uint32_t ndiff = 0;
    if (e == NULL) return false;
    e->seen = true;
    if (lrs_match(w, e)) return false;
    lrs_list(&got, w->lrs, w->nlrs);
    lrs_list(&want, e->lrs, e->nlrs);
    tpd_hctx_found(x, i, w->step, "lr");
    tpd_str_printf(&x->value, "lr %s; declared %s (--lr-expect)", tpd_str_cstr(&got),
                   tpd_str_cstr(&want));
    if (w->nlrs != e->nlrs) {
        tpd_why_add(&x->why, "lr",
                    "optimizer[%lld] stepped at step %lld with %u param group%s (learning rate%s "
                    "%s); %s declares %u learning rate%s for step %lld (%s)",
                    (long long)w->opt, (long long)w->step, w->nlrs, w->nlrs == 1 ? "" : "s",
                    w->nlrs == 1 ? "" : "s", tpd_str_cstr(&got), lr_source(x), e->nlrs,
                    e->nlrs == 1 ? "" : "s", (long long)w->step, tpd_str_cstr(&want));
    } else {
        tpd_why_add(&x->why, "lr",
                    "optimizer[%lld] stepped at step %lld with learning rate%s %s; %s declares %s "
                    "for that step",
                    (long long)w->opt, (long long)w->step, w->nlrs == 1 ? "" : "s",
                    tpd_str_cstr(&got), lr_source(x), tpd_str_cstr(&want));
        for (uint32_t g = 0; g < w->nlrs; g++) {
            if (lr_near(w->lrs[g], e->lrs[g])) continue;
            if (++ndiff > 4) continue;
            tpd_why_add(&x->why, "lr",
                        "param group %u: %.9g where %.9g was declared (relative difference "
                        "%.3g, above " LR_RTOL_S ")",
                        g, w->lrs[g], e->lrs[g],
                        e->lrs[g] != 0 ? fabs(w->lrs[g] - e->lrs[g]) / fabs(e->lrs[g]) : INFINITY);
        }
    }
    if ((prev = last_declared(x, i)) != NULL)
        tpd_why_add(&x->why, "lr",
                    "the learning rates of the declared steps before it matched, the last at step "
                    "%lld",
                    (long long)prev->step);
    else
        tpd_why_add(&x->why, "lr", "it is the first declared step the run made");
    tpd_str_free(&got);
    tpd_str_free(&want);
    return true;
}

/* check_lr_missing: a declared step no row had. */
static bool check_lr_missing(ctx *x)
{
    const struct tpd_lr_expect *first = NULL;
    size_t n = 0;
    for (size_t k = 0; k < x->nlr_expect; k++) {
        if (x->lr_expect[k].seen) continue;
        if (n++ == 0) first = &x->lr_expect[k];
    }
    if (first == NULL) return false;
    tpd_hctx_found(x, x->nrows, first->step, "lr");
    tpd_str_printf(&x->value, "declared step %lld not made (--lr-expect)", (long long)first->step);
    tpd_why_add(&x->why, "lr",
                "%s declares learning rates for step %lld; the run made no optimizer step %lld",
                lr_source(x), (long long)first->step, (long long)first->step);
    tpd_why_add(&x->why, "lr",
                "%zu of the %zu declared steps are not in the telemetry, whose %zu row%s %s steps "
                "%lld to %lld",
                n, x->nlr_expect, x->nrows, x->nrows == 1 ? "" : "s", x->nrows == 1 ? "is" : "are",
                (long long)x->rows[0].step, (long long)x->rows[x->nrows - 1].step);
    return true;
}

/* ---- --min-loss-decrease ---- */

static bool has_loss(const tpd_hrow *w)
{
    return w->has_loss && isfinite(w->loss);
}

/* decrease computes x->loss: the means of the first and last quarter of
 * the rows with a finite loss. */
static void decrease(ctx *x)
{
    size_t n = 0, q, k = 0;
    double first = 0, last = 0;
    for (size_t i = 0; i < x->nrows; i++) n += has_loss(&x->rows[i]);
    x->loss.rows = n;
    x->loss.state = n < MIN_LOSS_ROWS ? 2 : 1;
    if (n < MIN_LOSS_ROWS) return;
    x->loss.quarter = q = n / 4;
    for (size_t i = 0; i < x->nrows; i++) {
        const tpd_hrow *w = &x->rows[i];
        if (!has_loss(w)) continue;
        if (k == 0) x->loss.first_lo = w->step;
        if (k == q - 1) x->loss.first_hi = w->step;
        if (k == n - q) {
            x->loss.last_row = i;
            x->loss.last_lo = w->step;
        }
        x->loss.last_hi = w->step;
        if (k < q) first += w->loss;
        if (k >= n - q) last += w->loss;
        k++;
    }
    x->loss.first = first / (double)q;
    x->loss.last = last / (double)q;
    x->loss.decrease = (x->loss.first - x->loss.last) / fabs(x->loss.first);
}

static bool check_decrease(ctx *x)
{
    if (x->loss.state != 1 || x->loss.decrease >= x->min_decrease) return false;
    tpd_hctx_found(x, x->loss.last_row, x->loss.last_lo, "loss_decrease");
    tpd_str_printf(&x->value, "(first - last) / |first| = %.4g < %g (--min-loss-decrease)",
                   x->loss.decrease, x->min_decrease);
    tpd_why_add(&x->why, "loss_decrease",
                "the mean loss of the first %zu of the %zu steps with a finite loss (steps %lld to "
                "%lld) was %.6g; of the last %zu (steps %lld to %lld), %.6g",
                x->loss.quarter, x->loss.rows, (long long)x->loss.first_lo,
                (long long)x->loss.first_hi, x->loss.first, x->loss.quarter,
                (long long)x->loss.last_lo, (long long)x->loss.last_hi, x->loss.last);
    tpd_why_add(&x->why, "loss_decrease",
                "(first - last) / |first| was %.4g, below --min-loss-decrease %g", x->loss.decrease,
                x->min_decrease);
    return true;
}

/* ---- the verdict's hooks ---- */

bool tpd_health_bounds_step(ctx *x, size_t i)
{
    return x->nlr_expect > 0 && check_lr(x, i);
}

bool tpd_health_bounds_run(ctx *x)
{
    if (x->has_min_decrease) decrease(x);
    return check_lr_missing(x) || check_decrease(x);
}

/* ---- the report's ---- */

bool tpd_health_bounds_shown(const ctx *x, size_t i)
{
    return x->every <= 1 || x->rows[i].step % x->every == 0;
}

void tpd_health_bounds_checks(const ctx *x, tpd_str *t)
{
    if (x->has_min_decrease)
        tpd_str_printf(
            t,
            "; mean loss of the last quarter of the steps at least a fraction %g below the first "
            "quarter's (--min-loss-decrease)",
            x->min_decrease);
    if (x->nlr_expect > 0)
        tpd_str_printf(
            t,
            "; learning rates of %zu declared step%s (--lr-expect, relative tolerance " LR_RTOL_S
            ")",
            x->nlr_expect, x->nlr_expect == 1 ? "" : "s");
}

void tpd_health_bounds_head(const ctx *x, tpd_str *t)
{
    if (x->every > 1)
        tpd_str_printf(t,
                       "  update norms   measured at the steps that are multiples of %lld "
                       "(--every %lld); at the others, whether a step moved a parameter comes "
                       "from the snapshots around it\n",
                       (long long)x->every, (long long)x->every);
    if (x->loss.state == 2)
        tpd_str_printf(t,
                       "  loss decrease  not checked: %zu step%s with a finite loss, "
                       "--min-loss-decrease needs %d\n",
                       x->loss.rows, x->loss.rows == 1 ? "" : "s", MIN_LOSS_ROWS);
    else if (x->loss.state == 1)
        tpd_str_printf(t,
                       "  loss decrease  mean loss %.6g over the first %zu steps with a finite "
                       "loss, %.6g over the last %zu: (first - last) / |first| = %.4g\n",
                       x->loss.first, x->loss.quarter, x->loss.last, x->loss.quarter,
                       x->loss.decrease);
}

bool tpd_health_bounds_json(const ctx *x, json_t *o)
{
    bool bad = false;
    bad |= !tpd_jset(o, "min_loss_decrease", tpd_hjson_num(x->has_min_decrease, x->min_decrease));
    bad |= !tpd_jset(o, "loss_decrease",
                     x->loss.state == 0
                         ? json_null()
                         : json_pack("{s:b, s:I, s:I, s:o, s:o, s:o}", "checked",
                                     x->loss.state == 1, "rows", (json_int_t)x->loss.rows,
                                     "quarter", (json_int_t)x->loss.quarter, "first_mean",
                                     tpd_hjson_num(x->loss.state == 1, x->loss.first), "last_mean",
                                     tpd_hjson_num(x->loss.state == 1, x->loss.last), "decrease",
                                     tpd_hjson_num(x->loss.state == 1, x->loss.decrease)));
    bad |= !tpd_jset(o, "lr_expect",
                     x->nlr_expect == 0
                         ? json_null()
                         : json_pack("{s:I, s:f, s:o}", "steps", (json_int_t)x->nlr_expect, "rtol",
                                     LR_RTOL, "file", tpd_json_str(x->lr_file)));
    bad |= !tpd_jset(o, "every", tpd_json_int(x->every > 1 ? x->every : 1));
    return !bad;
}
