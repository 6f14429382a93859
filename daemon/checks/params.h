/* SPDX-License-Identifier: MIT
 * params.h -- a run's params: the JSON object trainparity-run declares at
 * run.create (the check's options: accum's "micro" and tolerances, the
 * coverage declaration of coverage/decl.h), parsed once and read by key.
 *
 * The params come over the control socket, so they are checked, not
 * trusted: run.create refuses what does not parse here (serve/control.c),
 * and a reader gets its default for a key that is absent or of another
 * type.  The struct is the caller's to embed (on the stack, for the time of
 * one verdict); its tree is jansson's, which coverage/decl.c walks. */
#ifndef TP_DAEMON_CHECKS_PARAMS_H
#define TP_DAEMON_CHECKS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* tpd_params_num is key's number (an integer or a real), else dflt. */
double tpd_params_num(const tpd_params *p, const char *key, double dflt);

/* tpd_params_int is key's integer, or a real's integral part when it fits
 * in int64_t, else dflt. */
int64_t tpd_params_int(const tpd_params *p, const char *key, int64_t dflt);

/* tpd_params_bool is key's true or false, else dflt. */
bool tpd_params_bool(const tpd_params *p, const char *key, bool dflt);

/* tpd_params_str is key's string, else NULL; it lives as long as p's
 * tree (until tpd_params_clear). */
const char *tpd_params_str(const tpd_params *p, const char *key);

#endif
