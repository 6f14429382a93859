/* SPDX-License-Identifier: MIT
 * verdict.h -- the golden-run regression verdict (trainparity-run compare).
 *
 * A run of check "compare" names its golden run in its params ({"against":
 * RUN_ID}): a run of check "record", whose one execution ("record") is G.
 * The compare run holds C and D: the same command run twice, each a fresh
 * process; with {"once": true} in its params, D only when C alone FAILs
 * (the verdict then asks for it: result.h, second).  C is compared with G step
 * by step from step 0 (no interruption, so step k of one is step k of the
 * other) by the resume check's rules (checks/lockstep.h, the training data
 * stream, the number of steps); C with D likewise, to tell a regression
 * from a script that differs from itself.
 *
 * ERROR: the golden run cannot be read, is not a record run, or is not
 * whole (its command failed, crashed, stepped no optimizer, lost events);
 * C or D failed likewise.
 * ABSTAIN: C and D differ at or before the first divergence of C from G
 * (at any step when C matches G), or a declared tolerance cannot be
 * justified from statistics.
 * FAIL: the first divergence of C from G, what else differs at that step,
 * and what the observations show of it.  PASS otherwise. */
#ifndef TP_DAEMON_CHECKS_COMPARE_VERDICT_H
#define TP_DAEMON_CHECKS_COMPARE_VERDICT_H

#include <stdint.h>

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_golden_against is the id of the golden run that run r names in its
 * params ("against"), or -1 when it names none.  Pure. */
int64_t tpd_golden_against(const tpd_run *r);

/* tpd_golden_light says whether r's C and D ran in the induction mode (its
 * params' "digest": induction, also when absent): light at most steps, so
 * that the golden run is better loaded after r, with tpd_golden_drop.
 * Pure. */
bool tpd_golden_light(const tpd_run *r);

/* tpd_golden_drop lists, ascending, the steps at which every C of r (C, and
 * C2 when a narrowing reran it) is light: the lockstep compares none of the
 * golden run's model and optimizer state there, so its load can leave that
 * out (tpd_obs_keep).  malloc'ed, *n steps; NULL with *n 0 when there are
 * none or memory is short (then nothing is left out). */
int64_t *tpd_golden_drop(const tpd_run *r, size_t *n);

/* tpd_verdict_compare judges compare run r against its golden run g, loaded
 * by the caller (NULL when it could not be: gwhy then says why, and the
 * verdict is ERROR).  Pure: reads r and g, writes *out.
 * Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_verdict_compare(const tpd_run *r, const tpd_run *g, const char *gwhy,
                           const tpd_cmp_opts *o, tpd_result *out);

#endif
