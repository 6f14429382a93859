/* SPDX-License-Identifier: MIT
 * decl.c -- reads a coverage run's declaration from its params.
 *
 * A small strict JSON reader for the one shape decl.h describes: an
 * object whose values are strings, integers, null, or an array of [lo, hi]
 * pairs.  The params come over the control socket, so they are checked, not
 * trusted; keys it does not know are skipped when their values are scalars. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/coverage/decl.h"

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
    const char *p;
    tpd_arena *a;
    char *why;
    size_t whylen;
} rd;

#define BAD(x, ...) (snprintf((x)->why, (x)->whylen, __VA_ARGS__), TP_EINVAL)

static void ws(rd *x)
{
    while (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r') x->p++;
}

static bool lit(rd *x, const char *w)
{
    size_t n = strlen(w);
    ws(x);
    if (strncmp(x->p, w, n) != 0) return false;
    x->p += n;
    return true;
}

/* str reads a JSON string into the arena (escapes \" \\ \/ \n \t \r \b \f
 * and \u00XX; other \u escapes are refused: the tools never write them). */
static tp_err str(rd *x, char **out)
{
    size_t n = 0;
    const char *s;
    char *d;
    ws(x);
    if (*x->p != '"') return BAD(x, "a string was expected");
    s = ++x->p;
    while (*x->p && *x->p != '"') x->p += *x->p == '\\' && x->p[1] ? 2 : 1;
    if (*x->p != '"') return BAD(x, "an unterminated string");
    if ((d = tpd_arena_alloc(x->a, (size_t)(x->p - s) + 1)) == NULL) return TP_ENOMEM;
    for (; s < x->p; s++) {
        if (*s != '\\') {
            d[n++] = *s;
            continue;
        }
        switch (*++s) {
        case 'n':
            d[n++] = '\n';
            break;
        case 't':
            d[n++] = '\t';
            break;
        case 'r':
            d[n++] = '\r';
            break;
        case 'b':
            d[n++] = '\b';
            break;
        case 'f':
            d[n++] = '\f';
            break;
        case 'u': {
            unsigned v;
            if (x->p - s < 5 || sscanf(s + 1, "%4x", &v) != 1 || v == 0 || v > 0x7f)
                return BAD(x, "an unsupported \\u escape");
            d[n++] = (char)v;
            s += 4;
            break;
        }
        default:
            d[n++] = *s; /* " \ / */
        }
    }
    d[n] = '\0';
    x->p++;
    *out = d;
    return TP_OK;
}

static tp_err integer(rd *x, int64_t *v)
{
    char *end;
    long long n;
    ws(x);
    errno = 0;
    n = strtoll(x->p, &end, 10);
    if (end == x->p || errno != 0 || *end == '.' || *end == 'e' || *end == 'E')
        return BAD(x, "an integer was expected");
    x->p = end;
    *v = n;
    return TP_OK;
}

/* opt_int reads an integer >= min, or null (leaving *has false). */
static tp_err opt_int(rd *x, const char *key, int64_t min, int64_t *v, bool *has)
{
    tp_err rc;
    *has = false;
    if (lit(x, "null")) return TP_OK;
    if ((rc = integer(x, v)) != TP_OK) return BAD(x, "\"%s\" wants an integer or null", key);
    if (*v < min) return BAD(x, "\"%s\" wants an integer >= %lld", key, (long long)min);
    *has = true;
    return rc;
}

/* opt_bool reads true, false or null (false). */
static tp_err opt_bool(rd *x, const char *key, bool *v)
{
    if (lit(x, "true")) return *v = true, TP_OK;
    if (lit(x, "false") || lit(x, "null")) return *v = false, TP_OK;
    return BAD(x, "\"%s\" wants true, false or null", key);
}

static tp_err opt_str(rd *x, const char **out)
{
    char *s = NULL;
    tp_err rc;
    if (lit(x, "null")) {
        *out = NULL;
        return TP_OK;
    }
    rc = str(x, &s);
    *out = s;
    return rc;
}

static tp_err ranges(rd *x, tpd_cov_decl *d)
{
    tpd_cov_range *v = NULL;
    size_t cap = 0, n = 0;
    tp_err rc;
    if (lit(x, "null")) return TP_OK;
    if (!lit(x, "[")) return BAD(x, "\"universe_ranges\" wants an array of [lo, hi]");
    while (!lit(x, "]")) {
        tpd_cov_range r;
        if (n > 0 && !lit(x, ",")) return BAD(x, "a ',' was expected in \"universe_ranges\"");
        if (!lit(x, "[")) return BAD(x, "\"universe_ranges\" wants [lo, hi] pairs");
        if ((rc = integer(x, &r.lo)) != TP_OK) return rc;
        if (!lit(x, ",")) return BAD(x, "\"universe_ranges\" wants [lo, hi] pairs");
        if ((rc = integer(x, &r.hi)) != TP_OK) return rc;
        if (!lit(x, "]")) return BAD(x, "\"universe_ranges\" wants [lo, hi] pairs");
        if (r.hi < r.lo || (n > 0 && r.lo <= v[n - 1].hi))
            return BAD(x, "\"universe_ranges\" must be sorted, disjoint [lo, hi] pairs");
        if ((v = tpd_arena_grow(x->a, v, &cap, n + 1, sizeof *v)) == NULL) return TP_ENOMEM;
        v[n++] = r;
    }
    d->ranges = v;
    d->nranges = n;
    return TP_OK;
}

/* skip_scalar skips the value of a key this reader does not know. */
static tp_err skip_scalar(rd *x)
{
    char *s;
    int64_t v;
    if (lit(x, "null") || lit(x, "true") || lit(x, "false")) return TP_OK;
    ws(x);
    if (*x->p == '"') return str(x, &s);
    return integer(x, &v);
}

static tp_err value(rd *x, const char *key, tpd_cov_decl *d, bool *policy)
{
    bool has;
    const char *s;
    tp_err rc;
    if (strcmp(key, "policy") == 0) {
        if ((rc = opt_str(x, &s)) != TP_OK) return rc;
        if (!tpd_cov_policy_parse(s, &d->policy))
            return BAD(x, "unknown policy '%s'", s ? s : "null");
        *policy = true;
        return TP_OK;
    }
    if (strcmp(key, "loader") == 0) return opt_int(x, key, 0, &d->loader, &has);
    if (strcmp(key, "epochs") == 0) return opt_int(x, key, 1, &d->epochs, &has);
    if (strcmp(key, "universe") == 0) return opt_int(x, key, 0, &d->universe, &d->has_universe);
    if (strcmp(key, "padding") == 0) return opt_int(x, key, 0, &d->padding, &d->has_padding);
    if (strcmp(key, "padding_exact") == 0) return opt_bool(x, key, &d->padding_exact);
    if (strcmp(key, "examples") == 0) {
        if ((rc = opt_int(x, key, 0, &d->examples, &has)) != TP_OK) return rc;
        if (!has) d->examples = TPD_COV_EXAMPLES;
        if (d->examples > 1000000) return BAD(x, "\"examples\" wants at most 1000000");
        return TP_OK;
    }
    if (strcmp(key, "universe_file") == 0) return opt_str(x, &d->universe_file);
    if (strcmp(key, "sample_id") == 0) return opt_str(x, &d->sample_id);
    if (strcmp(key, "universe_ranges") == 0) return ranges(x, d);
    return skip_scalar(x);
}

tp_err tpd_cov_decl_parse(tpd_arena *a, const char *json, tpd_cov_decl *d, char *why, size_t whylen)
{
    char scratch[8];
    rd x = {json ? json : "", a, why ? why : scratch, why ? whylen : sizeof scratch};
    tpd_cov_decl out;
    bool policy = false;
    int64_t count = 0;
    tp_err rc;
    memset(&out, 0, sizeof out);
    out.examples = TPD_COV_EXAMPLES;
    if (!lit(&x, "{")) return BAD(&x, "the params are not a JSON object");
    while (!lit(&x, "}")) {
        char *key;
        if (count++ > 0 && !lit(&x, ",")) return BAD(&x, "a ',' was expected between members");
        if ((rc = str(&x, &key)) != TP_OK) return rc;
        if (!lit(&x, ":")) return BAD(&x, "a ':' was expected after \"%s\"", key);
        if ((rc = value(&x, key, &out, &policy)) != TP_OK) return rc;
    }
    ws(&x);
    if (*x.p != '\0') return BAD(&x, "trailing characters after the params");
    if (!policy) return BAD(&x, "the params declare no policy");
    if (out.ranges != NULL) {
        uint64_t n = 0;
        for (size_t i = 0; i < out.nranges; i++) {
            uint64_t w = (uint64_t)out.ranges[i].hi - (uint64_t)out.ranges[i].lo + 1;
            if (w == 0 || w > (uint64_t)INT64_MAX - n) return BAD(&x, "the universe is too large");
            n += w;
        }
        out.universe = (int64_t)n;
        out.has_universe = true;
    }
    *d = out;
    return TP_OK;
}
