/* SPDX-License-Identifier: MIT
 * decl.c -- reads a coverage run's declaration from its params.
 *
 * jansson parses the params (checks/params.h); this holds them to the one
 * shape decl.h describes: an object whose values are strings, integers,
 * true, false, null, or an array of [lo, hi] integer pairs.  The params come
 * over the control socket, so they are checked, not trusted; keys it does
 * not know are skipped when their values are such scalars.  What the
 * declaration keeps is copied into the arena, and the tree is released. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/coverage/decl.h"
#include "daemon/checks/params.h"

static const char *const policies[] = {"exactly_once", "at_least_once", "no_cross_rank_overlap",
                                       "expected_padding"};

const char *tpd_cov_policy_name(tpd_cov_policy p)
{
    return (unsigned)p < sizeof policies / sizeof policies[0] ? policies[p] : "?";
}

bool tpd_cov_policy_parse(const char *s, tpd_cov_policy *p)
{
    for (size_t i = 0; s && i < sizeof policies / sizeof policies[0]; i++)
        if (strcmp(s, policies[i]) == 0) {
            *p = (tpd_cov_policy)i;
            return true;
        }
    return false;
}

typedef struct rd {
    tpd_arena *a;
    char *why;
    size_t whylen;
} rd;

#define BAD(x, ...) (snprintf((x)->why, (x)->whylen, __VA_ARGS__), TP_EINVAL)

/* opt_int reads an integer >= min, or null (leaving *v and setting *has false). */
static tp_err opt_int(rd *x, const char *key, json_t *j, int64_t min, int64_t *v, bool *has)
{
    *has = false;
    if (json_is_null(j)) return TP_OK;
    if (!json_is_integer(j)) return BAD(x, "\"%s\" wants an integer or null", key);
    if (json_integer_value(j) < min)
        return BAD(x, "\"%s\" wants an integer >= %lld", key, (long long)min);
    *v = json_integer_value(j);
    *has = true;
    return TP_OK;
}

/* opt_bool reads true, false or null (false). */
static tp_err opt_bool(rd *x, const char *key, json_t *j, bool *v)
{
    if (json_is_null(j)) return *v = false, TP_OK;
    if (!json_is_boolean(j)) return BAD(x, "\"%s\" wants true, false or null", key);
    *v = json_is_true(j);
    return TP_OK;
}

/* opt_str copies a string into the arena, or reads null as NULL. */
static tp_err opt_str(rd *x, const char *key, json_t *j, const char **out)
{
    if (json_is_null(j)) {
        *out = NULL;
        return TP_OK;
    }
    if (!json_is_string(j)) return BAD(x, "\"%s\" wants a string or null", key);
    /* jansson refuses \u0000 (no JSON_ALLOW_NUL): the length is strlen's */
    if ((*out = tpd_arena_strndup(x->a, json_string_value(j), json_string_length(j))) == NULL)
        return TP_ENOMEM;
    return TP_OK;
}

/* ranges reads [[lo, hi], ...] (inclusive, sorted, disjoint) or null.  An
 * empty array declares no ranges. */
static tp_err ranges(rd *x, json_t *j, tpd_cov_decl *d)
{
    tpd_cov_range *v;
    size_t n;
    if (json_is_null(j)) return TP_OK;
    if (!json_is_array(j)) return BAD(x, "\"universe_ranges\" wants an array of [lo, hi]");
    if ((n = json_array_size(j)) == 0) {
        d->ranges = NULL;
        d->nranges = 0;
        return TP_OK;
    }
    if (n > SIZE_MAX / sizeof *v || (v = tpd_arena_alloc(x->a, n * sizeof *v)) == NULL)
        return TP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *pair = json_array_get(j, i), *lo = json_array_get(pair, 0),
               *hi = json_array_get(pair, 1);
        if (!json_is_array(pair) || json_array_size(pair) != 2)
            return BAD(x, "\"universe_ranges\" wants [lo, hi] pairs");
        if (!json_is_integer(lo) || !json_is_integer(hi))
            return BAD(x, "\"universe_ranges\" wants integer [lo, hi] pairs");
        v[i].lo = json_integer_value(lo);
        v[i].hi = json_integer_value(hi);
        if (v[i].hi < v[i].lo || (i > 0 && v[i].lo <= v[i - 1].hi))
            return BAD(x, "\"universe_ranges\" must be sorted, disjoint [lo, hi] pairs");
    }
    d->ranges = v;
    d->nranges = n;
    return TP_OK;
}

/* unknown accepts the value of a key this reader does not know when it is
 * a scalar of the declared shape. */
static tp_err unknown(rd *x, const char *key, json_t *j)
{
    if (json_is_null(j) || json_is_boolean(j) || json_is_string(j) || json_is_integer(j))
        return TP_OK;
    return BAD(x,
               "\"%s\" is not a key of the declaration, and its value is not a string, an "
               "integer, true, false or null",
               key);
}

static tp_err value(rd *x, const char *key, json_t *j, tpd_cov_decl *d, bool *policy)
{
    bool has;
    const char *s;
    tp_err rc;
    if (strcmp(key, TPP_KEY(TPP_coverage_policy)) == 0) {
        if (!json_is_null(j) && !json_is_string(j)) return BAD(x, "\"policy\" wants a string");
        s = json_string_value(j);
        if (!tpd_cov_policy_parse(s, &d->policy))
            return BAD(x, "unknown policy '%s'", s ? s : "null");
        *policy = true;
        return TP_OK;
    }
    if (strcmp(key, TPP_KEY(TPP_coverage_loader)) == 0)
        return opt_int(x, key, j, 0, &d->loader, &d->has_loader);
    if (strcmp(key, TPP_KEY(TPP_coverage_epochs)) == 0)
        return opt_int(x, key, j, 1, &d->epochs, &has);
    if (strcmp(key, TPP_KEY(TPP_coverage_universe)) == 0)
        return opt_int(x, key, j, 0, &d->universe, &d->has_universe);
    if (strcmp(key, TPP_KEY(TPP_coverage_padding)) == 0)
        return opt_int(x, key, j, 0, &d->padding, &d->has_padding);
    if (strcmp(key, TPP_KEY(TPP_coverage_padding_exact)) == 0)
        return opt_bool(x, key, j, &d->padding_exact);
    if (strcmp(key, TPP_KEY(TPP_coverage_examples)) == 0) {
        if ((rc = opt_int(x, key, j, 0, &d->examples, &has)) != TP_OK) return rc;
        if (!has) d->examples = TPD_COV_EXAMPLES;
        if (d->examples > 1000000) return BAD(x, "\"examples\" wants at most 1000000");
        return TP_OK;
    }
    if (strcmp(key, TPP_KEY(TPP_coverage_universe_file)) == 0)
        return opt_str(x, key, j, &d->universe_file);
    if (strcmp(key, TPP_KEY(TPP_coverage_sample_id)) == 0) return opt_str(x, key, j, &d->sample_id);
    if (strcmp(key, TPP_KEY(TPP_coverage_universe_ranges)) == 0) return ranges(x, j, d);
    return unknown(x, key, j);
}

tp_err tpd_cov_decl_parse(tpd_arena *a, const char *json, tpd_cov_decl *d, char *why, size_t whylen)
{
    char scratch[8];
    rd x = {a, why ? why : scratch, why ? whylen : sizeof scratch};
    tpd_cov_decl out;
    tpd_params par;
    bool policy = false;
    const char *key;
    json_t *j;
    tp_err rc;
    memset(&out, 0, sizeof out);
    out.examples = TPD_COV_EXAMPLES;
    if ((rc = tpd_params_parse(&par, json, x.why, x.whylen)) != TP_OK) goto done;
    json_object_foreach(par.root, key, j)
    {
        if ((rc = value(&x, key, j, &out, &policy)) != TP_OK) goto done;
    }
    if (!policy) {
        rc = BAD(&x, "the params declare no policy");
        goto done;
    }
    if (out.ranges != NULL) {
        uint64_t n = 0;
        for (size_t i = 0; i < out.nranges; i++) {
            uint64_t w = (uint64_t)out.ranges[i].hi - (uint64_t)out.ranges[i].lo + 1;
            if (w == 0 || w > (uint64_t)INT64_MAX - n) {
                rc = BAD(&x, "the universe is too large");
                goto done;
            }
            n += w;
        }
        out.universe = (int64_t)n;
        out.has_universe = true;
    }
    *d = out;
done:
    if (rc == TP_ENOMEM) snprintf(x.why, x.whylen, "out of memory");
    tpd_params_clear(&par);
    return rc;
}
