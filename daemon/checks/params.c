/* SPDX-License-Identifier: MIT
 * params.c -- a run's params through jansson: parsed once, read by key. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
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

/* of_type says whether v is of type t. */
static bool of_type(json_t *v, tp_ptype t)
{
    switch (t) {
    case TP_P_INT:
        return json_is_integer(v);
    case TP_P_NUM:
        return json_is_number(v);
    case TP_P_BOOL:
        return json_is_boolean(v);
    case TP_P_STR:
        return json_is_string(v);
    case TP_P_JSON:
        return true;
    }
    return false;
}

/* known lists check's parameters into out, "a, b, c" ("none" when none). */
static void known(const char *check, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < TPP_COUNT && len < n; i++)
        if (strcmp(tp_params[i].check, check) == 0)
            len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "", tp_params[i].key);
    if (out[0] == '\0') snprintf(out, n, "none");
}

tp_err tpd_params_check(const tpd_params *p, const char *check, char *why, size_t whylen)
{
    char scratch[8], names[512];
    const char *key;
    json_t *v;
    if (why == NULL) why = scratch, whylen = sizeof scratch;
    if (p == NULL || p->root == NULL) return TP_OK;
    json_object_foreach(p->root, key, v)
    {
        int k = tp_param_find(check, key, strlen(key));
        if (k < 0) {
            known(check, names, sizeof names);
            snprintf(why, whylen, "'%.64s' is not a parameter of %.32s (its parameters: %s)", key,
                     check, names);
            return TP_EINVAL;
        }
        if (!json_is_null(v) && !of_type(v, tp_params[k].type)) {
            snprintf(why, whylen, "'%s' of %s wants %s", key, check,
                     tp_ptype_name(tp_params[k].type));
            return TP_EINVAL;
        }
    }
    return TP_OK;
}

bool tpd_param_has(const tpd_params *p, tp_param k)
{
    json_t *v = get(p, TPP_KEY(k));
    return v != NULL && !json_is_null(v);
}

/* dflt is k's default, 0 when it has none. */
static double dflt(tp_param k)
{
    return isnan(tp_params[k].dflt) ? 0 : tp_params[k].dflt;
}

double tpd_param_num(const tpd_params *p, tp_param k)
{
    json_t *v = get(p, TPP_KEY(k));
    return json_is_number(v) ? json_number_value(v) : tp_params[k].dflt;
}

int64_t tpd_param_int(const tpd_params *p, tp_param k)
{
    json_t *v = get(p, TPP_KEY(k));
    double d;
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (!json_is_real(v)) return (int64_t)dflt(k);
    /* [-2^63, 2^63): the reals whose integral part an int64_t holds */
    d = json_real_value(v);
    return isfinite(d) && d >= -0x1p63 && d < 0x1p63 ? (int64_t)d : (int64_t)dflt(k);
}

bool tpd_param_bool(const tpd_params *p, tp_param k)
{
    json_t *v = get(p, TPP_KEY(k));
    return json_is_boolean(v) ? json_is_true(v) : dflt(k) != 0;
}

const char *tpd_param_str(const tpd_params *p, tp_param k)
{
    return json_string_value(get(p, TPP_KEY(k)));
}

json_t *tpd_param_json(const tpd_params *p, tp_param k)
{
    return get(p, TPP_KEY(k));
}
