/* SPDX-License-Identifier: MIT
 * control.c -- the tables of proto/control.def and their lookups. */
#include <stdbool.h>
#include <string.h>

#include "proto/control.h"

#define TP_CMD(id, name, meaning) {name, meaning},
#define TP_ARG(id, key, type, need, meaning)
#define TP_RES(id, key, type, meaning)
const tp_cmd_info tp_cmds[TPC_COUNT] = {
#include "proto/control.def"
};
#undef TP_CMD
#undef TP_ARG

#define TP_CMD(id, name, meaning)
#define TP_ARG(id, key, type, need, meaning) {TPC_##id, #key, TP_C_##type, need, meaning},
#define NEED                                 true
#define OPT                                  false
const tp_field_info tp_args[TPA_COUNT] = {
#include "proto/control.def"
};
#undef NEED
#undef OPT
#undef TP_ARG
#undef TP_RES

#define TP_ARG(id, key, type, need, meaning)
#define TP_RES(id, key, type, meaning) {TPC_##id, #key, TP_C_##type, false, meaning},
const tp_field_info tp_ress[TPR_COUNT] = {
#include "proto/control.def"
};
#undef TP_CMD
#undef TP_ARG
#undef TP_RES

int tp_cmd_find(const char *name, size_t n, char *check, size_t len)
{
    size_t k = sizeof TP_EVIDENCE_SUFFIX - 1;
    for (int i = 0; i < TPC_COUNT; i++)
        if (i != TPC_evidence && strlen(tp_cmds[i].name) == n &&
            memcmp(tp_cmds[i].name, name, n) == 0)
            return i;
    if (n <= k || memcmp(name + n - k, TP_EVIDENCE_SUFFIX, k) != 0) return -1;
    if (check != NULL) {
        if (n - k >= len || memchr(name, '\0', n - k) != NULL) return -1;
        memcpy(check, name, n - k);
        check[n - k] = '\0';
    }
    return TPC_evidence;
}

int tp_arg_find(tp_cmd cmd, const char *key, size_t n)
{
    for (int i = 0; i < TPA_COUNT; i++)
        if (tp_args[i].cmd == cmd && strlen(tp_args[i].key) == n &&
            memcmp(tp_args[i].key, key, n) == 0)
            return i;
    return -1;
}

const char *tp_ctype_name(tp_ctype t)
{
    switch (t) {
    case TP_C_INT:
        return "an integer";
    case TP_C_NUM:
        return "a number";
    case TP_C_BOOL:
        return "a boolean";
    case TP_C_STR:
        return "a string";
    case TP_C_STRS:
        return "an array of strings";
    case TP_C_INTS:
        return "an array of integers";
    case TP_C_BIN:
        return "bytes";
    }
    return "?";
}
