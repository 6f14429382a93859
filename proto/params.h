/* SPDX-License-Identifier: MIT
 * params.h -- the run parameters of proto/params.def: an identifier for
 * each (TPP_<check>_<key>), its key, type and default, so that the tools
 * that write a run's params and the checks that read them name every key
 * the same way, and a misspelt one does not build.  What the daemon does
 * with a run's params: daemon/checks/params.h. */
#ifndef TP_PROTO_PARAMS_H
#define TP_PROTO_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum tp_ptype {
    TP_P_INT = 1, /* an integer */
    TP_P_NUM,     /* a number, integer or real */
    TP_P_BOOL,    /* true or false */
    TP_P_STR,     /* a string */
    TP_P_JSON,    /* any JSON value, read by its check's own code */
} tp_ptype;

typedef enum tp_param {
#define TP_PARAM(check, key, type, dflt, meaning) TPP_##check##_##key,
#include "proto/params.def"
#undef TP_PARAM
    TPP_COUNT
} tp_param;

typedef struct tp_param_info {
    const char *check; /* "accum", ... (the run's check) */
    const char *key;   /* "micro", ... */
    tp_ptype type;
    double dflt;         /* what a reader gets when it is absent; NAN: none */
    const char *meaning; /* one line, for docs/params.md */
} tp_param_info;

/* tp_params[p] describes parameter p; TPP_COUNT entries. */
extern const tp_param_info tp_params[TPP_COUNT];

/* TPP_KEY(p) is parameter p's key, for the JSON the tools write. */
#define TPP_KEY(p) (tp_params[(p)].key)

/* tp_param_find is check's parameter named key (n bytes), or -1 when check
 * declares none of that name. */
int tp_param_find(const char *check, const char *key, size_t n);

/* tp_ptype_name is "an integer", "a number", "true or false", "a string" or
 * "JSON", for messages. */
const char *tp_ptype_name(tp_ptype t);

#endif
