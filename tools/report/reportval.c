/* SPDX-License-Identifier: MIT
 * reportval.c -- the members of a verdict's JSON report in words, one line
 * at a time.  The values are read generically where the checks differ: a
 * kind this does not know is shown as its JSON. */
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report/reportval.h"

void tpt_lprintf(tpt_line *l, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (l->n >= sizeof l->s - 1) return;
    va_start(ap, fmt);
    w = vsnprintf(l->s + l->n, sizeof l->s - l->n, fmt, ap);
    va_end(ap);
    if (w > 0) l->n += (size_t)w;
    if (l->n >= sizeof l->s) l->n = sizeof l->s - 1;
}

void tpt_put_json(tpt_line *l, const json_t *v)
{
    char *s;
    if (v == NULL) {
        tpt_lprintf(l, "-");
    } else if (json_is_string(v)) {
        tpt_lprintf(l, "%s", json_string_value(v));
    } else if (json_is_integer(v)) {
        tpt_lprintf(l, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        tpt_lprintf(l, "%.9g", json_real_value(v));
    } else if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL) {
        tpt_lprintf(l, "%s", s);
        free(s);
    }
}

void tpt_put_member(tpt_line *l, const json_t *o, const char *key, const char *label)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) return;
    tpt_lprintf(l, " %s ", label);
    tpt_put_json(l, v);
}

void tpt_put_val(tpt_line *l, const json_t *v)
{
    const char *kind = json_string_value(json_object_get(v, "kind"));
    if (v == NULL || json_is_null(v)) {
        tpt_lprintf(l, "absent");
    } else if (kind && !strcmp(kind, "tensor")) {
        const json_t *shape = json_object_get(v, "shape");
        size_t i;
        const json_t *d;
        tpt_lprintf(l, "tensor ");
        tpt_put_json(l, json_object_get(v, "dtype"));
        tpt_lprintf(l, " [");
        json_array_foreach(shape, i, d)
            tpt_lprintf(l, "%s%lld", i ? ", " : "", (long long)json_integer_value(d));
        tpt_lprintf(l, "]");
        tpt_put_member(l, v, "sum", "sum");
        tpt_put_member(l, v, "l2", "l2");
        tpt_put_member(l, v, "maxabs", "maxabs");
        tpt_put_member(l, v, "nonfinite", "nonfinite");
        tpt_put_member(l, v, "digest", "digest");
        tpt_put_member(l, v, "digest_kind", "of kind"); /* only when not xxh3 (docs/gpu.md) */
    } else if (kind && !strcmp(kind, "digest")) {
        tpt_lprintf(l, "digest ");
        tpt_put_json(l, json_object_get(v, "digest"));
        tpt_put_member(l, v, "items", "items");
    } else if (kind && !strcmp(kind, "ids")) {
        tpt_lprintf(l, "sample ids:");
        tpt_put_member(l, v, "count", "count");
        tpt_put_member(l, v, "first", "first");
        tpt_put_member(l, v, "digest", "digest");
    } else if (kind && !strcmp(kind, "value")) {
        const json_t *x = json_object_get(v, "value");
        if (json_is_string(x)) {
            char *s = json_dumps(x, JSON_ENCODE_ANY);
            tpt_lprintf(l, "%s", s ? s : "?");
            free(s);
        } else {
            tpt_put_json(l, x);
        }
    } else {
        tpt_put_json(l, v);
    }
}

bool tpt_is_val(const json_t *v)
{
    return json_is_null(v) || (json_is_object(v) && json_is_string(json_object_get(v, "kind")));
}

const char *tpt_role_what(const char *role)
{
    static const struct {
        const char *role, *what;
    } t[] = {{"A", "uninterrupted"},
             {"B", "uninterrupted, again"},
             {"I", "interrupted after its save"},
             {"R", "resumed from I's checkpoint"},
             {"G", "the golden run"},
             {"C", "the command"},
             {"D", "the command, again"},
             {"micro", "accumulating micro-batches"},
             {"full", "full batches"},
             {"health", "the training"}};
    for (size_t i = 0; role && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(role, t[i].role)) return t[i].what;
    return NULL;
}

const char *tpt_jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && s[0] ? s : NULL;
}
