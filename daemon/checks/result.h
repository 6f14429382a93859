/* SPDX-License-Identifier: MIT
 * result.h -- what a verdict engine returns: an outcome, the first
 * divergence (step and component path) and the report as text and JSON. */
#ifndef TP_DAEMON_CHECKS_RESULT_H
#define TP_DAEMON_CHECKS_RESULT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"

typedef enum tpd_outcome { TPD_PASS = 0, TPD_FAIL, TPD_ABSTAIN, TPD_ERROR } tpd_outcome;

/* tpd_outcome_name is "PASS", "FAIL", "ABSTAIN" or "ERROR". */
const char *tpd_outcome_name(tpd_outcome o);

typedef struct tpd_result {
    tpd_outcome outcome;
    bool has_step;
    int64_t step;   /* the first divergence's step (the reference run's numbering) */
    char path[256]; /* its component path, "" when none */
    char *text;     /* human report, malloc'ed */
    char *json;     /* JSON report, malloc'ed */
} tpd_result;

/* tpd_result_clear frees text and json and zeroes r.  NULL is a no-op. */
void tpd_result_clear(tpd_result *r);

/* The explanation of a verdict ("why"), built line by line: text lines
 * "  - LINE" and JSON objects {"kind": KIND, "text": LINE}, comma-separated
 * (the caller writes the brackets).  Zero-initialised is empty. */
typedef struct tpd_why {
    tpd_str text, json;
    int n;
} tpd_why;

/* tpd_why_vadd appends one line, formatted from fmt and ap. */
void tpd_why_vadd(tpd_why *w, const char *kind, const char *fmt, va_list ap);
/* tpd_why_add appends one line, formatted from fmt. */
void tpd_why_add(tpd_why *w, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tpd_why_free frees w's text and JSON and empties it. */
void tpd_why_free(tpd_why *w);

#endif
