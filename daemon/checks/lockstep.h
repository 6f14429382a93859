/* SPDX-License-Identifier: MIT
 * lockstep.h -- the first divergence between two timelines.
 *
 * Two processes' timelines are walked in lockstep from aligned steps; within
 * a step, groups go in the order data, model, optimizer, scheduler, scaler,
 * rng, loss, grad, update, and items are matched by component path.
 * At a step that was light on either side (induction mode, obs.h), the
 * induced components (model tensors, optimizer state) are not compared.
 * A module no optimizer trains (module[<name>]: an EMA, a teacher, a copy
 * made for evaluation) is compared where both sides hold it: one side
 * that holds a module the other does not (a copy one run made and the
 * other did not yet) is not a divergence, its tensors differing is.
 * Comparison is exact (equal digests) unless the user declared a tolerance.
 * With a tolerance, a tensor whose digest differs is judged from its
 * statistics: they can prove a difference (FAIL) but never equality, so such
 * an item is "unsure" (ABSTAIN) unless its values were captured.  Two
 * tensors whose digests cannot be compared (of different kinds, a GPU's and
 * the host's, or one the agent could not make: tpd_digests_comparable) are
 * unsure too, with or without a tolerance, unless their values were
 * captured. */
#ifndef TP_DAEMON_CHECKS_LOCKSTEP_H
#define TP_DAEMON_CHECKS_LOCKSTEP_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

typedef struct tpd_cmp_opts {
    bool tolerance; /* false: exact */
    double rtol, atol;
    /* the run whose blob store holds the captured values of the tensors
     * compared (--capture values), or NULL: with a tolerance, a tensor whose
     * digest differs and whose statistics prove nothing is then judged
     * element by element instead of unsure */
    const tpd_run *values;
} tpd_cmp_opts;

typedef enum tpd_eq { TPD_SAME, TPD_DIFF, TPD_UNSURE } tpd_eq;

/* tpd_val_eq compares two values under o: exact digests, or within o's
 * tolerance of b (the values when both were captured and o->values says
 * where, otherwise what the statistics prove).  Tensors of one dtype and
 * shape whose digests are not comparable (tpd_digests_comparable) are
 * judged from their captured values alone, byte for byte when o is exact;
 * TPD_UNSURE when those are not both at hand. */
tpd_eq tpd_val_eq(const tpd_val *a, const tpd_val *b, const tpd_cmp_opts *o);

typedef struct tpd_div {
    bool found;
    bool unsure;    /* equality could not be justified */
    int64_t step_a; /* the step in a's numbering */
    int64_t step_b; /* the step in b's numbering */
    tpd_group group;
    const char *path;
    const tpd_item *a; /* NULL when absent in a */
    const tpd_item *b; /* NULL when absent in b */
} tpd_div;

typedef struct tpd_cmp_result {
    tpd_div first;        /* the first divergence, RNG rule applied */
    tpd_div first_rng;    /* the first RNG divergence, reported or not */
    tpd_div first_other;  /* the first divergence outside the RNG */
    tpd_div first_unsure; /* the first item whose equality could not be justified */
    int64_t steps;        /* aligned steps compared */
} tpd_cmp_result;

/* tpd_compare compares a from step a0 with b from step b0 (to the end of both).
 * RNG rule: a difference in an RNG state alone does not diverge the runs (a
 * script that draws no random numbers does not care); when the runs diverge
 * elsewhere, an RNG difference that came first is the first divergence. */
void tpd_compare(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0,
                 const tpd_cmp_opts *o, tpd_cmp_result *out);

/* tpd_light_between says whether a step from `from` to `to` (inclusive, a's
 * numbering; b's step b0 aligned with a's a0) was light in a or in b (the
 * induction mode, docs/induction.md), and *first receives the first such
 * step.  Where one was, tpd_compare compared no induced component there, so
 * a divergence of the state may have begun there unseen. */
bool tpd_light_between(const tpd_items *a, int64_t a0, const tpd_items *b, int64_t b0, int64_t from,
                       int64_t to, int64_t *first);

/* The component path of a divergence in the number of optimizer steps. */
#define TPD_STEPS_PATH "steps"

/* tpd_compare_steps makes the number of optimizer steps cmp's first
 * divergence when the two runs trained a different number from their
 * aligned steps a0 and b0 (na and nb), unless something other than an RNG
 * diverged within the steps both trained.  Past the last step of the
 * shorter run, the lockstep comparison pits a training step of one against
 * the state after the last step of the other, so what differs there says
 * only that one run stopped; and an RNG that differed while nothing else
 * did mattered to no step both trained (the RNG rule).  steps[0] and
 * steps[1] receive the two counts (path TPD_STEPS_PATH), which the
 * divergence points at: they must live as long as cmp.  Returns whether it
 * did. */
bool tpd_compare_steps(tpd_cmp_result *cmp, tpd_item steps[2], int64_t a0, int64_t na, int64_t b0,
                       int64_t nb);

/* tpd_find finds the k-th item (from 0) with path at step in l, or NULL. */
const tpd_item *tpd_find(const tpd_items *l, int64_t step, const char *path);

#endif
