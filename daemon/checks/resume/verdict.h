/* SPDX-License-Identifier: MIT
 * verdict.h -- the resume-parity verdict.
 *
 * A run of check "resume" holds four executions, by role: "A" and "B"
 * (uninterrupted baselines), "I" (ended by the agent at the first
 * training-step boundary after the checkpoint save that armed it) and "R"
 * (resumed in a fresh process); with {"once": true} in its params, B only
 * when R alone does not PASS (the verdict then asks for it: result.h,
 * second).  R is aligned to A through the checkpoint it loaded: the content
 * digest of one of its loads equals a save of I's.
 *
 * ERROR: an execution failed, lost events or reported a hook error; a
 * baseline loaded a checkpoint it did not write; I saved nothing at or after
 * K or left nothing to resume; R loaded no checkpoint of I's.
 * ABSTAIN: A and B differ (nondeterminism), or a declared tolerance cannot be
 * justified without captured values.
 * FAIL: the first divergence between R and A, with the explanation the
 * evidence supports.  PASS otherwise. */
#ifndef TP_DAEMON_CHECKS_RESUME_VERDICT_H
#define TP_DAEMON_CHECKS_RESUME_VERDICT_H

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_verdict_resume judges run r.  Pure: reads r, writes *out.
 * Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_verdict_resume(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);

#endif
