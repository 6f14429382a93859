/* SPDX-License-Identifier: MIT
 * json.h -- jansson values from what the daemon holds: text that may not be
 * UTF-8, numbers that may not be finite, digests.  Every report and reply in
 * JSON is built from json_t values (jansson) and dumped once.
 *
 * The builders follow jansson's ownership: a function named *_new or
 * returning json_t * hands the caller a new reference, NULL when an
 * allocation failed.  A NULL value passed to tpd_jset or tpd_jpush makes
 * them fail, so a failure anywhere in a tree surfaces at its root. */
#ifndef TP_DAEMON_BASE_JSON_H
#define TP_DAEMON_BASE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tpd_json_str is s as a JSON string, each byte of it that starts no valid
 * UTF-8 sequence replaced by U+FFFD (jansson refuses invalid UTF-8); null
 * for a NULL s. */
json_t *tpd_json_str(const char *s);
/* tpd_json_lines is the text report lines in s as one JSON string: each
 * line without its leading blanks, lines joined by "; ", no newline; ""
 * for NULL. */
json_t *tpd_json_lines(const char *s);
/* tpd_json_num is x as a JSON real, null when x is not finite (JSON has no
 * NaN or infinity). */
json_t *tpd_json_num(double x);
/* tpd_json_int is x as a JSON integer. */
json_t *tpd_json_int(int64_t x);
/* tpd_json_bool is true or false. */
json_t *tpd_json_bool(bool b);
/* tpd_json_hex is the first n bytes of d as lower-case hex. */
json_t *tpd_json_hex(const uint8_t *d, int n);

/* tpd_jset sets o[key] to v, taking v's reference in every case; false
 * when o or v is NULL or the set failed.  Callers accumulate
 * "bad |= !tpd_jset(...)" and fail once. */
bool tpd_jset(json_t *o, const char *key, json_t *v);
/* tpd_jpush appends v to the array a, taking v's reference; false on
 * failure as tpd_jset. */
bool tpd_jpush(json_t *a, json_t *v);
/* tpd_jdone returns o, or NULL (o released) when bad. */
json_t *tpd_jdone(json_t *o, bool bad);

/* tpd_json_dump returns v as compact JSON text followed by a newline, keys
 * in the order they were set (malloc'ed; NULL on failure).  It releases
 * v's reference in every case. */
char *tpd_json_dump(json_t *v);

#endif
