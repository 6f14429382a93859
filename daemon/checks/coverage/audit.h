/* SPDX-License-Identifier: MIT
 * audit.h -- the coverage audit of one epoch: every rank's observed
 * sample IDs against one policy, the first violation in (rank, position)
 * order.  Pure computation over in-memory batches; verdict.c
 * decides which epochs, ranks and universe, and writes the report.
 *
 * Policies (per epoch, across ranks):
 *   exactly_once          every ID of the universe observed exactly once
 *   at_least_once         every ID of the universe observed at least once
 *   no_cross_rank_overlap no ID observed on two ranks (a universe is optional)
 *   expected_padding      every ID at least once; at most `padding` repeated
 *                         observations, each of a wrap-around ID: one of the
 *                         first n = min(padding, universe) IDs of the epoch in
 *                         the sampler's order, the j-th of them repeated at
 *                         most (padding - 1 - j) / n + 1 times.  Both padding
 *                         samplers repeat their order's first IDs cyclically:
 *                         a DistributedSampler and accelerate's
 *                         BatchSamplerShard with even_batches; what differs is
 *                         how they deal the order to the ranks (tpd_cov_deal),
 *                         which the audit undoes to find the order's first IDs
 * An ID outside a known universe is always a violation.  IDs never observed
 * are looked for only in a complete epoch.  With padding_exact
 * (tpd_cov_opts), a complete epoch with fewer repeated
 * observations than `padding` is one too (coverage.padding_short).
 *
 * The first violation decides the outcome; the audit still walks every
 * observation, so the counts are whole and each kind of anomaly keeps its
 * first examples (tpd_cov_examples).
 *
 * Cost: O(observations + universe / 64) per epoch for a universe 0..n-1
 * (two bitmaps of n bits), O(observations * log ranges) for a universe of
 * ranges, O(observations) expected for an unknown universe (a hash table). */
#ifndef TP_DAEMON_CHECKS_COVERAGE_AUDIT_H
#define TP_DAEMON_CHECKS_COVERAGE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/checks/coverage/decl.h"
#include "daemon/obs/obs.h"

typedef struct tpd_cov_universe {
    bool known;
    int64_t n;                   /* number of IDs */
    const tpd_cov_range *ranges; /* NULL: the IDs 0..n-1 */
    size_t nranges;
} tpd_cov_universe;

/* How a sampler deals the epoch's order to W ranks: which place of the
 * order rank r's k-th sample holds. */
typedef enum tpd_cov_deal {
    TPD_COV_DEAL_SAMPLES = 0, /* a DistributedSampler: k * W + r */
    TPD_COV_DEAL_BATCHES,     /* BatchSamplerShard: whole batches of B in turn,
                               * ((k / B) * W + r) * B + k % B */
    TPD_COV_DEAL_SPLIT,       /* BatchSamplerShard, split_batches: slice r of
                               * every batch of B, S = B / W:
                               * (k / S) * B + r * S + k % S */
} tpd_cov_deal;

/* What an audit does beyond its policy; zero-initialised is the default. */
typedef struct tpd_cov_opts {
    bool padding_exact; /* expected_padding: fewer repeats than the padding fail too */
    int examples;       /* examples kept of each kind of anomaly */
    bool count_only;    /* a known universe gives only its count n, not which IDs
                         * (string IDs): an epoch with fewer distinct IDs misses
                         * n - distinct (unnamed), one with more holds unexpected ones */
    tpd_cov_deal deal;  /* expected_padding: how the order was dealt */
    int64_t deal_batch; /* B, for TPD_COV_DEAL_BATCHES and _SPLIT (>= 1; else
                         * the audit takes TPD_COV_DEAL_SAMPLES) */
} tpd_cov_opts;

/* One epoch of one loader as the ranks saw it. */
typedef struct tpd_cov_epoch {
    uint32_t epoch;
    int64_t nranks;                  /* ranks 0..nranks-1 */
    const tpd_batch *const *batches; /* rank 0's first, each rank's in position order */
    const size_t *first;             /* rank r: batches[first[r]] .. batches[first[r + 1] - 1] */
    bool complete;                   /* every rank's iterator ended: look for missing IDs */
} tpd_cov_epoch;

#define TPD_COV_SHOWN 8

typedef struct tpd_cov_finding {
    const char *path; /* "coverage.missing", ...; NULL when the epoch holds none */
    uint32_t epoch;
    /* an observed violation: where, and the ID */
    int64_t rank;
    uint32_t pos, item;
    int64_t id;
    bool has_worker;
    int64_t worker;
    /* a repeat: the ID's first observation in this epoch */
    bool has_prev;
    int64_t prev_rank;
    uint32_t prev_pos, prev_item;
    /* expected_padding */
    bool wrap;       /* the repeated ID is a wrap-around one */
    int64_t repeats; /* repeated observations so far, this one included */
    int64_t allowed; /* repeats the declaration allows (in all, or of this ID) */
    bool per_id;     /* allowed counts this ID's repeats */
    /* missing */
    int64_t nmissing;
    int64_t missing[TPD_COV_SHOWN]; /* the smallest missing IDs (none: count_only) */
    int nshown;
    /* count_only: distinct IDs observed beyond the universe's count */
    int64_t nextra;
} tpd_cov_finding;

typedef struct tpd_cov_counts {
    int64_t observations; /* IDs observed */
    int64_t distinct;     /* distinct IDs observed (within a known universe) */
    int64_t repeats;      /* repeated observations: observations - distinct - unexpected */
    int64_t same_rank;    /* repeats of an ID the same rank had observed */
    int64_t cross_rank;   /* repeats of an ID only other ranks had observed */
    int64_t unexpected;   /* observations outside a known universe (count_only:
                           * distinct IDs beyond its count) */
    int64_t missing;      /* IDs of a known universe never observed; complete epochs */
    int64_t violations;   /* observations the policy refuses (the first is *f) */
} tpd_cov_counts;

/* The kinds of anomaly whose examples are kept. */
typedef enum tpd_cov_kind {
    TPD_COV_K_MISSING = 0,
    TPD_COV_K_UNEXPECTED,
    TPD_COV_K_SAME_RANK,
    TPD_COV_K_CROSS_RANK,
    TPD_COV_K__COUNT
} tpd_cov_kind;

/* One example: an observation (rank >= 0) or, for a missing ID, the ID and
 * its epoch (rank -1). */
typedef struct tpd_cov_example {
    uint32_t epoch;
    int64_t id;
    int64_t rank;
    uint32_t pos, item;
    bool has_worker;
    int64_t worker;
    bool has_prev; /* a repeat: where the ID was first observed in the epoch */
    int64_t prev_rank;
    uint32_t prev_pos, prev_item;
} tpd_cov_example;

typedef struct tpd_cov_auditor tpd_cov_auditor; /* opaque; scratch reused across epochs */

/* tpd_cov_auditor_create prepares an audit under policy over universe u
 * (copied; u->ranges must outlive the auditor) allowing padding repeats
 * (expected_padding only).  Errors: TP_ENOMEM, TP_EINVAL (a universe too
 * large to hold a bit per ID). */
tp_err tpd_cov_auditor_create(tpd_cov_auditor **ap, tpd_cov_policy policy,
                              const tpd_cov_universe *u, int64_t padding);

/* tpd_cov_auditor_open is tpd_cov_auditor_create with options o (NULL: the
 * defaults).  Errors: as tpd_cov_auditor_create. */
tp_err tpd_cov_auditor_open(tpd_cov_auditor **ap, tpd_cov_policy policy, const tpd_cov_universe *u,
                            int64_t padding, const tpd_cov_opts *o);

/* tpd_cov_audit audits epoch e: *f gets the first violation (f->path NULL
 * when none), *c the counts of the whole epoch; examples add up across the
 * epochs audited.  Errors: TP_ENOMEM. */
tp_err tpd_cov_audit(tpd_cov_auditor *a, const tpd_cov_epoch *e, tpd_cov_finding *f,
                     tpd_cov_counts *c);

/* tpd_cov_examples is the first examples of kind k over the epochs audited
 * so far, in audit order (*n of them; owned by a, valid until its next
 * audit or destroy). */
const tpd_cov_example *tpd_cov_examples(const tpd_cov_auditor *a, tpd_cov_kind k, size_t *n);

/* tpd_cov_auditor_destroy frees a.  NULL is a no-op. */
void tpd_cov_auditor_destroy(tpd_cov_auditor *a);

#endif
