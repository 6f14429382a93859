/* SPDX-License-Identifier: MIT
 * diff.h -- the executions of two stored runs compared step by step,
 * offline (trainparity-daemon query diff).
 *
 * Each side is one execution of a run: the one named, or by default the
 * run's first execution (by id) whose trainer made an optimizer step; of
 * it, its trainer process as every check picks it (tpd_obs_trainer: rank 0
 * or the only process).  The two are compared from step 0 to the end by
 * the compare verdict's rules (pair.h), exactly: the timelines, the
 * training data stream, the number of steps.  The report says which sides,
 * then that they match at every step, or their first divergence, what else
 * differs at that step and what the observations show of it (why.c).
 * Read-only: nothing is judged or stored. */
#ifndef TP_DAEMON_CHECKS_COMPARE_DIFF_H
#define TP_DAEMON_CHECKS_COMPARE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/obs/obs.h"
#include "daemon/store/store.h"
#include "proto/tp_err.h"

/* One side of a diff: a run and one of its executions (-1: the default). */
typedef struct tpd_diff_side {
    int64_t run;
    int64_t exec;
} tpd_diff_side;

/* tpd_golden_diff_runs compares execution ea of ra with execution eb of rb
 * (-1: each run's default, as diff.h says) and appends the report to out:
 * text, or with json one JSON document and a newline, {"a": {run,
 * execution, role, argv, steps}, "b": {...}, "match", "steps_compared",
 * "samples_compared", "first_divergence": null or {step, step_other, path,
 * group, a, b}, "divergences": [...], "explanation": [...]}.  *match says
 * whether they match.  Errors of captured values come from ra's blob store
 * (none when ra->blobs is NULL).  Pure.
 * Errors: TP_EINVAL (ea or eb is not an execution of its run: the caller's
 * mistake), TP_ENOENT (the execution chosen made no optimizer step, or the
 * run has none that did), with why saying so; TP_ENOMEM.  out is appended
 * to only on success. */
tp_err tpd_golden_diff_runs(const tpd_run *ra, int64_t ea, const tpd_run *rb, int64_t eb, bool json,
                            tpd_str *out, bool *match, char *why, size_t whylen);

/* tpd_golden_diff loads the runs a and b name from s (opened read-only or
 * not: nothing is written) and compares them as tpd_golden_diff_runs does.
 * Errors: those of tpd_golden_diff_runs, and of tpd_obs_load: TP_ENOENT
 * (no such run), TP_EDB, TP_EPROTO, TP_ENOMEM; TP_EIO when the blob store
 * beside the database cannot be named.  why says which and why. */
tp_err tpd_golden_diff(tpd_store *s, tpd_diff_side a, tpd_diff_side b, bool json, tpd_str *out,
                       bool *match, char *why, size_t whylen);

#endif
