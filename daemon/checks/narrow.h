/* SPDX-License-Identifier: MIT
 * narrow.h -- what the verdicts of checks that run in the induction mode
 * share (docs/induction.md: the state digested at boundaries, the inputs
 * at every step; a divergence after a light step narrowed by reruns that
 * digest every tensor over a window): the execution that stands for a
 * role, how many of a trainer's steps digested the state, and which steps
 * a rerun digested where the first run was light. */
#ifndef TP_DAEMON_CHECKS_NARROW_H
#define TP_DAEMON_CHECKS_NARROW_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/obs/obs.h"

/* tpd_standing is the execution of r that stands for role: its rerun
 * (role rerun, "A2" for "A") when one ran, and *first, when asked, then
 * gets the first one's trainer; else role's own execution (NULL: none). */
const tpd_exec *tpd_standing(const tpd_run *r, const char *role, const char *rerun,
                             const tpd_proc **first);

/* tpd_full_counts gives how many of p's steps had a full start-of-step
 * snapshot (*full), of all its steps (*all). */
void tpd_full_counts(const tpd_proc *p, int64_t *full, int64_t *all);

/* tpd_rerun_window finds the steps the rerun r digested whole where the
 * first run f had been light: from *lo to *hi; false when there are none. */
bool tpd_rerun_window(const tpd_proc *f, const tpd_proc *r, int64_t *lo, int64_t *hi);

/* tpd_last_state is the last step s of a, from a0 to end (a's numbering),
 * at which both a and b (its step s - a0 + b0) hold model or optimizer
 * state (tpd_state_steps): where the two runs' state was last compared;
 * -1 when nowhere (or out of memory). */
int64_t tpd_last_state(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0, int64_t end);

/* tpd_narrowed_text appends a report's "narrowed" line: the reruns (as
 * "A2, I2, R2") digested every tensor at steps lo to hi (in the numbering
 * named by numbering, "" when it goes without saying). */
void tpd_narrowed_text(tpd_str *t, const char *reruns, int64_t lo, int64_t hi,
                       const char *numbering);

/* tpd_unseen_text appends a report's "state" line when the state was last
 * compared at step last (-1: not to be said) before the end, and its
 * "unseen" line when a rerun was still light from step from to to (unseen). */
void tpd_unseen_text(tpd_str *t, int64_t last, bool unseen, int64_t from, int64_t to);

#endif
