/* SPDX-License-Identifier: MIT
 * divergence.h -- every component that differs at the first divergent step,
 * for the reports of the verdicts that compare two runs.
 *
 * tpd_compare stops at the first divergence; a report also says what else
 * differs at that step, each with both values, and for tensors whose values
 * were captured (--capture values) the largest element-wise errors, which
 * statistics alone cannot give.  Items are matched as tpd_compare matches
 * them: by group, component path and occurrence within the step. */
#ifndef TP_DAEMON_CHECKS_DIVERGENCE_H
#define TP_DAEMON_CHECKS_DIVERGENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/obs/obs.h"
#include "proto/tp_err.h"

/* One differing component.  a is the reference side (the uninterrupted run);
 * a NULL value is absent on that side. */
typedef struct tpd_divergence {
    tpd_group group;
    const char *path;
    const tpd_val *a, *b;
    bool unsure;     /* equality could not be justified (a tolerance, or
                      * digests of different kinds: tpd_val_eq) */
    bool has_errors; /* both are tensors of one dtype and shape, captured */
    double max_abs;  /* max |b_i - a_i| */
    double max_rel;  /* max |b_i - a_i| / |a_i| where a_i != 0 */
} tpd_divergence;

typedef struct tpd_divergences {
    tpd_divergence *v; /* malloc'ed */
    size_t n, cap;
} tpd_divergences;

/* tpd_divergences_at fills *out (zero-initialised) with first, when it is
 * found, then every other component that differs under o between the items
 * of a at step sa and those of b at step sb: a's items in timeline order,
 * then those only b has.  first may lie outside the timelines (the training
 * data stream, the number of steps); a NULL a or b lists first alone.
 * Errors are computed from the blob store of r (NULL: none).  Errors:
 * TP_ENOMEM, then *out is freed. */
tp_err tpd_divergences_at(tpd_divergences *out, const tpd_run *r, const tpd_div *first,
                          const tpd_items *a, int64_t sa, const tpd_items *b, int64_t sb,
                          const tpd_cmp_opts *o);

/* tpd_divergences_free releases d's array and empties it.  NULL is a no-op. */
void tpd_divergences_free(tpd_divergences *d);

/* tpd_json_divergences is d as a jansson array (NULL when an allocation
 * failed) of objects {"path", "group", "unsure", la: value, lb: value}
 * (render.h's tpd_json_val), with "max_abs_error" and "max_rel_error" when
 * computed (null when infinite). */
json_t *tpd_json_divergences(const tpd_divergences *d, const char *la, const char *lb);

/* tpd_divergence_errors_text appends "max |error| X, max relative Y" for
 * one divergence whose errors were computed, nothing otherwise. */
void tpd_divergence_errors_text(tpd_str *t, const tpd_divergence *v);

/* tpd_divergences_others_text appends an indented line naming the
 * components of d after the first ("N other components differ at this step:
 * ..."), at most max of them; nothing when there are none. */
void tpd_divergences_others_text(tpd_str *t, const tpd_divergences *d, size_t max);

#endif
