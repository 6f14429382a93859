/* SPDX-License-Identifier: MIT
 * reportval.h -- the members of a verdict's JSON report
 * (docs/report-schema.md) in words, one line at a time: what the HTML page
 * shows in its cells. */
#ifndef TP_TOOLS_REPORT_REPORTVAL_H
#define TP_TOOLS_REPORT_REPORTVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A growing line of text, cut at its size.  Start it as {.n = 0}; set n to
 * 0 to reuse it. */
typedef struct tpt_line {
    char s[1536];
    size_t n;
} tpt_line;

/* tpt_lprintf appends to l; what does not fit is cut. */
void tpt_lprintf(tpt_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tpt_put_json appends v: a string as it is, a number in full, anything
 * else as compact JSON; "-" for NULL. */
void tpt_put_json(tpt_line *l, const json_t *v);

/* tpt_put_member appends " label value" when o has key (not null). */
void tpt_put_member(tpt_line *l, const json_t *o, const char *key, const char *label);

/* tpt_put_val appends a value of the report (docs/report-schema.md,
 * Values) in one line: every member it has, in words; "absent" for null. */
void tpt_put_val(tpt_line *l, const json_t *v);

/* tpt_is_val says whether v is a value of the report (or null, an absent
 * side). */
bool tpt_is_val(const json_t *v);

/* tpt_role_what describes an execution's role ("A", "R", "health", ...)
 * in a few words; NULL for a role it does not know (and for NULL). */
const char *tpt_role_what(const char *role);

/* tpt_jstr is o's member key when it is a non-empty string, else NULL. */
const char *tpt_jstr(const json_t *o, const char *key);

#endif
