/* SPDX-License-Identifier: MIT
 * params.c -- a run's params through jansson: parsed once, read by key. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/params.h"

tp_err tpd_params_parse(tpd_params *p, const char *json, char *why, size_t whylen)
{
    char scratch[8];
    json_error_t e;
    json_t *root;
    if (why == NULL) why = scratch, whylen = sizeof scratch;
    p->root = NULL;
    if (json == NULL) {
        snprintf(why, whylen, "the run has no params");
        return TP_EINVAL;
    }
    /* any value, so that a number or a string is told apart from bad text */
    memset(&e, 0, sizeof e);
    root = json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (root == NULL) {
        /* an allocation that fails before parsing starts leaves e as it was */
        if (json_error_code(&e) == json_error_out_of_memory || e.text[0] == '\0') {
            snprintf(why, whylen, "out of memory");
            return TP_ENOMEM;
        }
        if (json_error_code(&e) == json_error_duplicate_key)
            snprintf(why, whylen, "the params name a key twice (%s)", e.text);
        else
            snprintf(why, whylen, "the params are not JSON: %s (line %d, column %d)", e.text,
                     e.line, e.column);
        return TP_EINVAL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(why, whylen, "the params are not a JSON object");
        return TP_EINVAL;
    }
    p->root = root;
    return TP_OK;
}

void tpd_params_clear(tpd_params *p)
{
    if (p == NULL) return;
    json_decref(p->root);
    p->root = NULL;
}

/* get is key's value, or NULL. */
static json_t *get(const tpd_params *p, const char *key)
{
    return p != NULL && p->root != NULL ? json_object_get(p->root, key) : NULL;
}

double tpd_params_num(const tpd_params *p, const char *key, double dflt)
{
    json_t *v = get(p, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

int64_t tpd_params_int(const tpd_params *p, const char *key, int64_t dflt)
{
    json_t *v = get(p, key);
    double d;
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (!json_is_real(v)) return dflt;
    /* [-2^63, 2^63): the reals whose integral part an int64_t holds */
    d = json_real_value(v);
    return isfinite(d) && d >= -0x1p63 && d < 0x1p63 ? (int64_t)d : dflt;
}

bool tpd_params_bool(const tpd_params *p, const char *key, bool dflt)
{
    json_t *v = get(p, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

const char *tpd_params_str(const tpd_params *p, const char *key)
{
    return json_string_value(get(p, key));
}
