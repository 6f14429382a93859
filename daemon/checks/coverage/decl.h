/* SPDX-License-Identifier: MIT
 * decl.h -- what a coverage run declared: the policy, the universe of
 * sample IDs, the padding, the window.  trainparity-run writes it as the
 * run's params (JSON) at run.create; the verdict reads it back from there, so
 * a stored run can be judged again without its command line:
 *
 *   {"policy": "exactly_once", "loader": 0, "epochs": 2, "universe": 10,
 *    "universe_file": "ids.txt", "universe_ranges": [[0, 4], [7, 11]],
 *    "padding": 2, "padding_exact": true, "examples": 5,
 *    "sample_id": "batch[\"id\"]"}
 *
 * Every key but policy may be absent or null; without "loader" the verdict
 * audits the loader the training consumed (loader.c).  "universe" alone means the
 * IDs 0..universe-1; with "universe_ranges" (inclusive, sorted, disjoint)
 * the IDs are those ranges and "universe" is their count. */
#ifndef TP_DAEMON_CHECKS_COVERAGE_DECL_H
#define TP_DAEMON_CHECKS_COVERAGE_DECL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/arena.h"
#include "proto/params.h"
#include "proto/tp_err.h"

typedef enum tpd_cov_policy {
    TPD_COV_EXACTLY_ONCE = 0,
    TPD_COV_AT_LEAST_ONCE,
    TPD_COV_NO_CROSS_RANK_OVERLAP,
    TPD_COV_EXPECTED_PADDING,
} tpd_cov_policy;

/* examples of each anomaly a report shows by default (proto/params.def) */
#define TPD_COV_EXAMPLES ((int64_t)tp_params[TPP_coverage_examples].dflt)

/* tpd_cov_policy_name is "exactly_once", ... */
const char *tpd_cov_policy_name(tpd_cov_policy p);
/* tpd_cov_policy_parse maps a name to its policy; false when unknown. */
bool tpd_cov_policy_parse(const char *s, tpd_cov_policy *p);

/* An inclusive range of sample IDs. */
typedef struct tpd_cov_range {
    int64_t lo, hi;
} tpd_cov_range;

typedef struct tpd_cov_decl {
    tpd_cov_policy policy;
    bool has_loader;             /* declared (else the one the training consumed) */
    int64_t loader;              /* the DataLoader audited (creation order) */
    int64_t epochs;              /* the window: epochs 0..epochs-1; 0: every epoch seen */
    bool has_universe;           /* declared (else len(dataset), when there is one) */
    int64_t universe;            /* its number of IDs */
    const tpd_cov_range *ranges; /* NULL: the IDs 0..universe-1 */
    size_t nranges;
    const char *universe_file; /* where the ranges came from (report only), or NULL */
    bool has_padding;          /* declared (else DistributedSampler's, or none) */
    int64_t padding;           /* repeated observations allowed per epoch */
    bool padding_exact;        /* exactly `padding` repeats, not at most */
    int64_t examples;          /* examples shown of each anomaly (default TPD_COV_EXAMPLES) */
    const char *sample_id;     /* the --sample-id expression, or NULL */
} tpd_cov_decl;

/* tpd_cov_decl_parse reads a declaration from json (NUL-terminated) into *d;
 * strings and ranges are copied into a, and nothing else outlives the call.
 * Errors (why gets a reason): TP_EINVAL (not a JSON object, a key given
 * twice, a missing or unknown policy, a value of the wrong type or out of
 * range, an unknown key whose value is not a string, an integer, true,
 * false or null, ranges not sorted and disjoint), TP_ENOMEM. */
tp_err tpd_cov_decl_parse(tpd_arena *a, const char *json, tpd_cov_decl *d, char *why,
                          size_t whylen);

#endif
