/* SPDX-License-Identifier: MIT
 * params.h -- a run's params: the JSON object trainparity-run declares at
 * run.create (the check's options: accum's "micro" and tolerances, the
 * coverage declaration of coverage/decl.h), parsed once and read by key.
 *
 * Every key is declared once, in proto/params.def, and named through its
 * identifier (TPP_<check>_<key>).  The params come over the control
 * socket, so they are checked, not trusted: run.create refuses what does
 * not parse here or does not hold to the declaration (serve/control.c), and
 * a reader gets the declared default for a key that is absent or of
 * another type (a database written before the declaration).  The struct is the caller's to embed
 * (on the stack, for the time of one verdict); its tree is jansson's, which coverage/decl.c walks.
 */
#ifndef TP_DAEMON_CHECKS_PARAMS_H
#define TP_DAEMON_CHECKS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/params.h"
#include "proto/tp_err.h"

struct json_t;

typedef struct tpd_params {
    struct json_t *root; /* the object; NULL when empty or unparsed */
} tpd_params;

/* tpd_params_parse parses json (NUL-terminated UTF-8) into *p, which it
 * always initialises: on error *p reads as an empty object, every getter
 * giving its default.  Duplicate keys are refused, as in the wire's maps.
 * Errors (why, when not NULL, gets a reason): TP_EINVAL (json is NULL, is
 * not JSON, or is not an object), TP_ENOMEM.  Release *p with
 * tpd_params_clear whatever the result.  Thread-safe on distinct p. */
tp_err tpd_params_parse(tpd_params *p, const char *json, char *why, size_t whylen);

/* tpd_params_clear releases what p holds and empties it; an empty or
 * zeroed p is a no-op. */
void tpd_params_clear(tpd_params *p);

/* tpd_params_check holds p to proto/params.def: every key must be a
 * parameter of check, its value of the declared type or null (absent).
 * run.create refuses what fails, so that a misspelt key (a tool and a
 * daemon of two versions) is an error, never a silent default.  Errors
 * (why gets a reason naming the key and the check's parameters):
 * TP_EINVAL. */
tp_err tpd_params_check(const tpd_params *p, const char *check, char *why, size_t whylen);

/* The readers: parameter k's value when p has it, of its type, else its
 * default (proto/params.def; NAN, no default: 0, false).
 * tpd_param_num reads an integer as a number too; tpd_param_int a real's
 * integral part when it fits in int64_t. */
bool tpd_param_has(const tpd_params *p, tp_param k); /* present, not null */
double tpd_param_num(const tpd_params *p, tp_param k);
int64_t tpd_param_int(const tpd_params *p, tp_param k);
bool tpd_param_bool(const tpd_params *p, tp_param k);
/* tpd_param_str is k's string, else NULL; tpd_param_json k's value, else
 * NULL; both live as long as p's tree (until tpd_params_clear). */
const char *tpd_param_str(const tpd_params *p, tp_param k);
struct json_t *tpd_param_json(const tpd_params *p, tp_param k);

#endif
