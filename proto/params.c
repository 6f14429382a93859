/* SPDX-License-Identifier: MIT
 * params.c -- the table of proto/params.def. */
#include <math.h>
#include <string.h>

#include "proto/params.h"

const tp_param_info tp_params[TPP_COUNT] = {
#define TP_PARAM(check, key, type, dflt, meaning) {#check, #key, TP_P_##type, dflt, meaning},
#include "proto/params.def"
#undef TP_PARAM
};

int tp_param_find(const char *check, const char *key, size_t n)
{
    for (int i = 0; i < TPP_COUNT; i++)
        if (strcmp(tp_params[i].check, check) == 0 && strlen(tp_params[i].key) == n &&
            memcmp(tp_params[i].key, key, n) == 0)
            return i;
    return -1;
}

const char *tp_ptype_name(tp_ptype t)
{
    switch (t) {
    case TP_P_INT:
        return "an integer";
    case TP_P_NUM:
        return "a number";
    case TP_P_BOOL:
        return "true or false";
    case TP_P_STR:
        return "a string";
    case TP_P_JSON:
        return "JSON";
    }
    return "?";
}
