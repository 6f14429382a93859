/* SPDX-License-Identifier: MIT
 * result.h -- what a verdict engine returns: an outcome, the first
 * divergence (step and component path) and the report as text and JSON. */
#ifndef TP_DAEMON_CHECKS_RESULT_H
#define TP_DAEMON_CHECKS_RESULT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/json.h"
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
    /* a verdict the induction mode left open (docs/induction.md): the
     * state may have diverged unseen before the first divergence found, so
     * the baselines are to be rerun (A; B too when narrow_b) with every
     * tensor digested from step narrow_from to narrow_to, as executions A2
     * and B2, and the run judged again */
    bool narrow, narrow_b;
    int64_t narrow_from, narrow_to;
    /* and I and R rerun (I2, R2), R2 digesting every tensor from its step
     * narrow_r_from to narrow_r_to */
    bool narrow_r;
    int64_t narrow_r_from, narrow_r_to;
    /* --once: the second baseline has not run and the verdict without it
     * is not a PASS (compare: C FAILs against the golden run, D is to run;
     * resume: R does not match A, B is to run); the check runs it and asks
     * again, so that a script that differs from itself ABSTAINs instead of
     * failing (the report as it stands says determinism was not checked) */
    bool second;
} tpd_result;

/* TPD_REPORT_SCHEMA is the schema_version of the JSON reports
 * (docs/report-schema.md). */
#define TPD_REPORT_SCHEMA 1

/* tpd_report_new starts a check's JSON report: {"schema_version",
 * "trainparity_version", "check", "run", "outcome"}, in that order; NULL
 * when an allocation failed. */
json_t *tpd_report_new(const char *check, int64_t run, tpd_outcome oc);

/* tpd_result_clear frees text and json and zeroes r.  NULL is a no-op. */
void tpd_result_clear(tpd_result *r);

/* The explanation of a verdict ("why"), built line by line: text lines
 * "  - LINE" and JSON objects {"kind": KIND, "text": LINE}.  Zero-initialised
 * is empty. */
typedef struct tpd_why {
    tpd_str text;
    json_t *items; /* the JSON objects; NULL while empty */
    bool oom;      /* an allocation failed: items is incomplete */
    int n;
} tpd_why;

/* tpd_why_vadd appends one line, formatted from fmt and ap. */
void tpd_why_vadd(tpd_why *w, const char *kind, const char *fmt, va_list ap);
/* tpd_why_add appends one line, formatted from fmt. */
void tpd_why_add(tpd_why *w, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tpd_why_json is a new reference to w's explanation as a JSON array
 * (empty when w is); NULL when an allocation failed, now or while it was
 * built. */
json_t *tpd_why_json(const tpd_why *w);
/* tpd_why_free frees w's text and JSON and empties it. */
void tpd_why_free(tpd_why *w);

#endif
