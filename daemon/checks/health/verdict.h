/* SPDX-License-Identifier: MIT
 * verdict.h -- the training-health verdict of one unmodified run.
 *
 * A run of check "health" holds one execution, role "health", run with
 * TRAINPARITY_UPDATE_NORM=1 (the agent measures each update's norm and
 * whether any parameter changed; with TRAINPARITY_UPDATE_EVERY=N, at every
 * Nth step).  Its params (JSON) may say "max_grad_norm" (--max-grad-norm),
 * "max_skipped" (--max-skipped, 0.25 by default), "min_loss_decrease",
 * "lr_expect" and "lr_expect_file", "every" (bounds.c).
 *
 * The telemetry is one row per optimizer step per optimizer (telemetry.c).
 * First, optimizer coverage from the cover events (optcover.c):
 * optimizer[K].params, then a parameter never updated, then one updated
 * twice.  Then step by step, and within a step in this order:
 *   scaler.step, scaler.scale, clip
 *                 a GradScaler misuse (amp.c);
 *   loss          a backward call of the step had a non-finite loss (a step
 *                 a GradScaler skipped is left out: its loss is scaled);
 *   grad.<param>  a step not skipped by a GradScaler applied a gradient
 *                 holding non-finite values;
 *   grad_norm     --max-grad-norm X: a step not skipped by a GradScaler
 *                 had a total gradient L2 norm above X (or not finite);
 *   optimizer[K]  optimizer K's step was not skipped by a GradScaler and
 *                 no parameter changed (a leading learning-rate-0 warmup
 *                 excepted, telemetry.c);
 *   lr            --lr-expect: the step's learning rates are not the
 *                 declared ones (bounds.c);
 *   a tensor's path, optimizer[K].lr
 *                 another rank, a replica, differs from the trainer
 *                 (ranks.c);
 * then over the run: scaler.skipped (amp.c), lr (a declared step never
 * made) and loss_decrease (bounds.c), and model.<param>: the final
 * snapshot holds a non-finite parameter.  The first one found is the FAIL,
 * its path the first divergence's.
 *
 * ERROR: the execution is not trustworthy (checks/trust.h: it crashed,
 * failed, lost events, a hook reported an error) or made no optimizer step.
 * PASS otherwise. */
#ifndef TP_DAEMON_CHECKS_HEALTH_VERDICT_H
#define TP_DAEMON_CHECKS_HEALTH_VERDICT_H

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_verdict_health judges run r; o is not used (the checks are not
 * comparisons).  Pure.  Errors: TP_ENOMEM. */
tp_err tpd_verdict_health(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);

#endif
