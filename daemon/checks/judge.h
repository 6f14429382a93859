/* SPDX-License-Identifier: MIT
 * judge.h -- verdicts: load a run's observations, run the engine of its
 * check (the check table, judge.c), store the verdict; and a check's
 * evidence file. */
#ifndef TP_DAEMON_CHECKS_JUDGE_H
#define TP_DAEMON_CHECKS_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"
#include "daemon/store/store.h"

/* tpd_judge judges run under the declared comparison o and stores the
 * verdict (unless s is read-only, or plan is true and the verdict asks for
 * a narrowing: result.h, narrow).  On success *out holds the result (clear
 * it with tpd_result_clear).  Errors (why gets a reason): TP_ENOENT (no such
 * run), TP_EINVAL (no verdict engine for the run's check), TP_ENOMEM,
 * TP_EDB, TP_EPROTO (a stored event no longer decodes). */
tp_err tpd_judge(tpd_store *s, int64_t run, const tpd_cmp_opts *o, bool plan, tpd_result *out,
                 char *why, size_t whylen);

/* tpd_judge_again judges run again from what s holds, as trainparity-run's
 * verdict request did: under the tolerance its params declare (resume and
 * compare: --rtol, --atol; accum reads its own), with no narrowing asked
 * (a run narrowed holds its reruns, which the verdict weighs).  The
 * report's wall time is null: the check's own is in its stored verdict.
 * Stores the verdict unless s is read-only.  Errors as tpd_judge's; TP_ENOENT with
 * "there is no run N". */
tp_err tpd_judge_again(tpd_store *s, int64_t run, tpd_result *out, char *why, size_t whylen);

/* tpd_judge_has_evidence says whether check (NULL: none) writes an evidence
 * file: every observation its verdict weighed, too large for the report. */
bool tpd_judge_has_evidence(const char *check);

/* tpd_judge_evidence writes check's evidence file for run r into *out
 * (malloc'ed; the format is the check's).  Errors (why gets a reason):
 * TP_EINVAL (no evidence for that check, or r cannot be audited),
 * TP_ENOMEM. */
tp_err tpd_judge_evidence(const char *check, const tpd_run *r, char **out, char *why,
                          size_t whylen);

#endif
