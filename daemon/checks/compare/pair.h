/* SPDX-License-Identifier: MIT
 * pair.h -- two executions' trainers compared in lockstep from step 0, by
 * the resume check's rules: the timelines (checks/lockstep.h), the training
 * data streams (checks/resume/stream.h) and the number of optimizer steps.
 *
 * What the compare verdict (verdict.c: G against C, C against D) and the
 * offline diff of two stored runs (diff.c) share: the comparison and its
 * first divergence, the components that differ at its step, the lines a
 * text report gives it, and what the observations show of it (why.c).
 * Nothing is interrupted, so step k of one side is step k of the other.
 * Pure functions of loaded observations (obs/obs.h). */
#ifndef TP_DAEMON_CHECKS_COMPARE_PAIR_H
#define TP_DAEMON_CHECKS_COMPARE_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/divergence.h"
#include "daemon/checks/result.h"
#include "daemon/checks/resume/stream.h"
#include "daemon/obs/obs.h"

/* One lockstep comparison of two trainers from step 0: the timelines, the
 * training data streams and the number of steps.  Its divergences point
 * into it (steps): it is not copied once compared. */
typedef struct tpd_gpair {
    const char *la, *lb; /* the two sides' names: "G", "C"; "C", "D"; "A", "B" */
    const tpd_proc *a, *b;
    tpd_cmp_result cmp;
    tpd_stream_div sd; /* the data streams' first divergence */
    tpd_item steps[2]; /* the two step counts, when they are the divergence */
} tpd_gpair;

/* tpd_golden_pair compares the trainers a and b (named la and lb in
 * reports; the strings must outlive p) from step 0 to the end of both
 * under o into *p: the timelines, then the first divergence of the data
 * streams merged in (the earlier in a's steps; the data on a tie), then the
 * number of optimizer steps when they differ and nothing but an RNG state
 * diverged within the steps both trained.  Free with tpd_golden_pair_free.
 * Errors: TP_ENOMEM (then *p holds nothing to free). */
tp_err tpd_golden_pair(tpd_gpair *p, const char *la, const tpd_proc *a, const char *lb,
                       const tpd_proc *b, const tpd_cmp_opts *o);

/* tpd_golden_pair_free releases what p holds (the data streams'
 * divergence).  A zeroed p is a no-op. */
void tpd_golden_pair_free(tpd_gpair *p);

/* tpd_golden_first is p's first divergence (RNG rule applied), else its
 * first item whose equality could not be justified, else NULL (the two
 * match). */
const tpd_div *tpd_golden_first(const tpd_gpair *p);

/* tpd_golden_counted is true when d, one of p's divergences, is the number
 * of optimizer steps (TPD_STEPS_PATH), whose values are counts, not
 * observations. */
bool tpd_golden_counted(const tpd_gpair *p, const tpd_div *d);

/* tpd_golden_divergences fills *all (zero-initialised) with d, p's first
 * divergence, and every other component that differs at its step
 * (tpd_divergences_at), errors of captured values from r's blob store.
 * Errors: TP_ENOMEM, then *all is freed. */
tp_err tpd_golden_divergences(tpd_divergences *all, const tpd_run *r, const tpd_gpair *p,
                              const tpd_div *d, const tpd_cmp_opts *o);

/* tpd_golden_first_text appends the lines of a text report that give d,
 * p's first divergence: "first divergence<title>  step S  PATH", one line
 * per side headed na and nb (a count of steps as "N optimizer steps", an
 * observation as checks/render.h renders it), the errors of captured
 * values, and the other components that differ at that step (all). */
void tpd_golden_first_text(tpd_str *t, const tpd_gpair *p, const tpd_div *d,
                           const tpd_divergences *all, const char *title, const char *na,
                           const char *nb);

/* tpd_golden_argv_text appends the stored argv (a JSON array of strings)
 * as words, quoting those that hold a space or a quote; nothing for NULL
 * or what does not parse. */
void tpd_golden_argv_text(tpd_str *t, const char *argv_json);

/* tpd_golden_explain adds to w what the observations show of d, p's first
 * divergence, naming the sides p->la and p->lb (why.c): from which step on
 * the component differs, where the data streams part, the number of steps
 * each trained, what matched before it.  Never a guess at a cause. */
void tpd_golden_explain(tpd_why *w, const tpd_gpair *p, const tpd_div *d, const tpd_cmp_opts *o);

#endif
