/* SPDX-License-Identifier: MIT
 * verdict.h -- the gradient-accumulation parity verdict.
 *
 * A run of check "accum" holds two executions, by role: "full" (the
 * reference: one full batch per optimizer update) and "micro" (N
 * micro-batches per update), with tensor values captured.  Its params (JSON)
 * say "micro" (N), "updates" (U), the declared "rtol"/"atol" and
 * "disable_dropout" (--disable-dropout: dropout was off in both executions).
 *
 * ERROR: an execution failed, lost events or reported a hook error; the
 * reference made fewer than U updates.
 * ABSTAIN: the initial states (model, optimizer, scheduler, scaler at the
 * first backward, an RNG the runs seeded differently) differ; an RNG seeded
 * alike but drawn by micro-batch differed and an update differs for a reason
 * random draws could produce; or equality needs values that were not
 * captured.
 * FAIL: for each of the first U updates, in this order, the first phase that
 * differs: optimizer.steps, loss_accounting.denominator, grad.<param>,
 * optimizer.state.*, model.<param> after the update, scheduler.* -- with the
 * likely cause the evidence supports, or a line saying the evidence names
 * none.  PASS otherwise.  The report's evidence holds the declared
 * equivalence (N, U, the two commands, the normalisation assumed) and how
 * the initial states were compared. */
#ifndef TP_DAEMON_CHECKS_ACCUM_VERDICT_H
#define TP_DAEMON_CHECKS_ACCUM_VERDICT_H

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_verdict_accum judges run r.  Pure but for reading captured values
 * from r->blobs.  o: the declared comparison (without a tolerance, the one
 * in r's params, else rtol=1e-4 atol=1e-6).  Errors: TP_ENOMEM. */
tp_err tpd_verdict_accum(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);

#endif
