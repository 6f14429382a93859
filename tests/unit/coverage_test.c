/* SPDX-License-Identifier: MIT
 * coverage_test.c -- the coverage auditor and verdict from hand-built
 * batches: every policy, every violation path, the order that decides
 * "first", universes of ranges and unknown ones, whole counts and examples
 * past the first violation, exact padding, string IDs, and the verdict's
 * ERROR / ABSTAIN / PASS rules; the declaration read from the run's params
 * (decl.h; the params reader itself: params_test.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/coverage/audit.h"
#include "daemon/checks/coverage/decl.h"
#include "daemon/checks/coverage/verdict.h"
#include "daemon/checks/params.h"
#include "daemon/obs/batch.h"

/* ---- one epoch built by hand ---- */

#define MAXB 64

typedef struct ep {
    tpd_batch b[MAXB];
    int64_t ids[MAXB][8];
    const tpd_batch *v[MAXB];
    size_t first[9];
    size_t n;
    int64_t nranks;
    tpd_cov_epoch e;
} ep;

static void ep_init(ep *x, int64_t nranks)
{
    memset(x, 0, sizeof *x);
    x->nranks = nranks;
}

/* add appends a batch of rank r (ranks in order: 0's batches first). */
static void add(ep *x, int64_t r, const int64_t *ids, uint32_t n)
{
    tpd_batch *b = &x->b[x->n];
    uint32_t pos = 0;
    for (size_t i = 0; i < x->n; i++) pos += x->b[i].rank == r;
    memcpy(x->ids[x->n], ids, n * sizeof *ids);
    b->rank = r;
    b->pos = pos;
    b->n = n;
    b->ids = x->ids[x->n];
    b->has_ids = true;
    x->v[x->n++] = b;
}

static const tpd_cov_epoch *done(ep *x, bool complete)
{
    size_t k = 0;
    for (int64_t r = 0; r < x->nranks; r++) {
        x->first[r] = k;
        while (k < x->n && x->b[k].rank == r) k++;
    }
    x->first[x->nranks] = k;
    x->e.epoch = 0;
    x->e.nranks = x->nranks;
    x->e.batches = x->v;
    x->e.first = x->first;
    x->e.complete = complete;
    return &x->e;
}

/* deal fills x as a DistributedSampler over 0..n-1 (no shuffle) would,
 * padding by wrapping around, batches of bs. */
static void deal(ep *x, int64_t n, int64_t world, uint32_t bs)
{
    int64_t total = (n + world - 1) / world * world;
    ep_init(x, world);
    for (int64_t r = 0; r < world; r++) {
        int64_t buf[8];
        uint32_t k = 0;
        for (int64_t g = r; g < total; g += world) {
            buf[k++] = g % n;
            if (k == bs) add(x, r, buf, k), k = 0;
        }
        if (k) add(x, r, buf, k);
    }
}

static tpd_cov_universe upto(int64_t n)
{
    tpd_cov_universe u = {true, n, NULL, 0};
    return u;
}

static tpd_cov_finding audit(tpd_cov_policy p, tpd_cov_universe u, int64_t padding,
                             const tpd_cov_epoch *e)
{
    tpd_cov_auditor *a = NULL;
    tpd_cov_finding f;
    tpd_cov_counts c;
    ck_assert_int_eq(tpd_cov_auditor_create(&a, p, &u, padding), TP_OK);
    ck_assert_int_eq(tpd_cov_audit(a, e, &f, &c), TP_OK);
    tpd_cov_auditor_destroy(a);
    return f;
}

#define PATH_IS(f, p) ck_assert_str_eq((f).path ? (f).path : "(none)", p)

START_TEST(test_coverage_exactly_once_passes)
{
    ep x;
    deal(&x, 12, 4, 2);
    tpd_cov_finding f = audit(TPD_COV_EXACTLY_ONCE, upto(12), 0, done(&x, true));
    ck_assert_ptr_null(f.path);
}
END_TEST

START_TEST(test_coverage_missing_in_complete_epoch_only)
{
    ep x;
    int64_t a[] = {0, 1, 2}, b[] = {4, 6};
    ep_init(&x, 1);
    add(&x, 0, a, 3);
    add(&x, 0, b, 2);
    tpd_cov_finding f = audit(TPD_COV_EXACTLY_ONCE, upto(8), 0, done(&x, true));
    PATH_IS(f, "coverage.missing");
    ck_assert_int_eq(f.nmissing, 3);
    ck_assert_int_eq(f.nshown, 3);
    ck_assert_int_eq(f.missing[0], 3);
    ck_assert_int_eq(f.missing[1], 5);
    ck_assert_int_eq(f.missing[2], 7);
    f = audit(TPD_COV_EXACTLY_ONCE, upto(8), 0, done(&x, false));
    ck_assert_ptr_null(f.path); /* an epoch not seen complete proves nothing missing */
}
END_TEST

START_TEST(test_coverage_same_and_cross_rank_duplicates)
{
    ep x;
    int64_t a[] = {0, 1}, b[] = {2, 1}, c[] = {3, 0};
    ep_init(&x, 2);
    add(&x, 0, a, 2);
    add(&x, 0, b, 2); /* 1 again on rank 0 */
    add(&x, 1, c, 2);
    tpd_cov_finding f = audit(TPD_COV_EXACTLY_ONCE, upto(4), 0, done(&x, true));
    PATH_IS(f, "coverage.same_rank_duplicate");
    ck_assert_int_eq(f.rank, 0);
    ck_assert_int_eq(f.pos, 1);
    ck_assert_int_eq(f.item, 1);
    ck_assert_int_eq(f.id, 1);
    ck_assert(f.has_prev);
    ck_assert_int_eq(f.prev_rank, 0);
    ck_assert_int_eq(f.prev_pos, 0);
    ck_assert_int_eq(f.prev_item, 1);

    ep_init(&x, 2);
    int64_t d[] = {0, 1}, e[] = {2, 0};
    add(&x, 0, d, 2);
    add(&x, 1, e, 2);
    f = audit(TPD_COV_EXACTLY_ONCE, upto(3), 0, done(&x, true));
    PATH_IS(f, "coverage.cross_rank_duplicate");
    ck_assert_int_eq(f.rank, 1);
    ck_assert_int_eq(f.item, 1);
    ck_assert_int_eq(f.prev_rank, 0);
    ck_assert(!f.has_worker); /* unknown, never worker 0 */
}
END_TEST

START_TEST(test_coverage_first_violation_is_rank_major)
{
    ep x;
    int64_t a[] = {0, 1}, b[] = {9, 2}, c[] = {3, 3};
    ep_init(&x, 2);
    add(&x, 0, a, 2);
    add(&x, 0, b, 2); /* rank 0 position 1: 9 is outside 0..3 */
    add(&x, 1, c, 2); /* rank 1 position 0: a duplicate, but later in order */
    tpd_cov_finding f = audit(TPD_COV_EXACTLY_ONCE, upto(4), 0, done(&x, true));
    PATH_IS(f, "coverage.unexpected_id");
    ck_assert_int_eq(f.rank, 0);
    ck_assert_int_eq(f.pos, 1);
    ck_assert_int_eq(f.id, 9);
    ck_assert(!f.has_prev);
}
END_TEST

START_TEST(test_coverage_at_least_once_allows_repeats)
{
    ep x;
    deal(&x, 10, 3, 2); /* padded: 0 and 1 twice */
    tpd_cov_finding f = audit(TPD_COV_AT_LEAST_ONCE, upto(10), 0, done(&x, true));
    ck_assert_ptr_null(f.path);
    f = audit(TPD_COV_AT_LEAST_ONCE, upto(11), 0, done(&x, true));
    PATH_IS(f, "coverage.missing");
    ck_assert_int_eq(f.missing[0], 10);
}
END_TEST

START_TEST(test_coverage_no_cross_rank_overlap)
{
    ep x;
    int64_t a[] = {5, 5}, b[] = {7, 8}, c[] = {9, 5};
    tpd_cov_universe unknown = {false, 0, NULL, 0};
    ep_init(&x, 2);
    add(&x, 0, a, 2); /* a same-rank repeat is allowed */
    add(&x, 1, b, 2);
    tpd_cov_finding f = audit(TPD_COV_NO_CROSS_RANK_OVERLAP, unknown, 0, done(&x, true));
    ck_assert_ptr_null(f.path);
    add(&x, 1, c, 2);
    f = audit(TPD_COV_NO_CROSS_RANK_OVERLAP, unknown, 0, done(&x, true));
    PATH_IS(f, "coverage.cross_rank_duplicate");
    ck_assert_int_eq(f.rank, 1);
    ck_assert_int_eq(f.pos, 1);
    ck_assert_int_eq(f.id, 5);
    ck_assert_int_eq(f.prev_rank, 0);
    /* the same with a known universe, and missing IDs do not matter */
    f = audit(TPD_COV_NO_CROSS_RANK_OVERLAP, upto(100), 0, done(&x, true));
    PATH_IS(f, "coverage.cross_rank_duplicate");
}
END_TEST

START_TEST(test_coverage_expected_padding)
{
    ep x;
    deal(&x, 10, 3, 2); /* total 12: 0 and 1 repeated */
    tpd_cov_finding f = audit(TPD_COV_EXPECTED_PADDING, upto(10), 2, done(&x, true));
    ck_assert_ptr_null(f.path);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(10), 1, done(&x, true));
    PATH_IS(f, "coverage.padding_exceeded");
    ck_assert(!f.wrap); /* padding 1 wraps onto 0 alone: 1 may not repeat */
    ck_assert_int_eq(f.id, 1);
    ck_assert_int_eq(f.repeats, 2);
    ck_assert_int_eq(f.allowed, 1);
    ck_assert(!f.per_id);

    /* a repeat of an ID that is not a wrap-around one */
    int64_t a[] = {0, 1, 2}, b[] = {3, 2};
    ep_init(&x, 1);
    add(&x, 0, a, 3);
    add(&x, 0, b, 2);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(4), 1, done(&x, true));
    PATH_IS(f, "coverage.padding_exceeded");
    ck_assert(!f.wrap);
    ck_assert_int_eq(f.id, 2);

    /* padding 2 over wrap IDs {0, 1}: each may repeat once, not 0 twice */
    int64_t c[] = {0, 1, 2}, d[] = {0, 0};
    ep_init(&x, 1);
    add(&x, 0, c, 3);
    add(&x, 0, d, 2);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(3), 2, done(&x, true));
    PATH_IS(f, "coverage.padding_exceeded");
    ck_assert(f.per_id);
    ck_assert_int_eq(f.repeats, 2);
    ck_assert_int_eq(f.allowed, 1);

    /* 2 samples over 4 ranks: the padding of 2 wraps onto both IDs */
    deal(&x, 2, 4, 1);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(2), 2, done(&x, true));
    ck_assert_ptr_null(f.path);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(2), 0, done(&x, true));
    PATH_IS(f, "coverage.padding_exceeded");
    /* and missing IDs still fail */
    deal(&x, 10, 3, 2);
    f = audit(TPD_COV_EXPECTED_PADDING, upto(12), 2, done(&x, true));
    PATH_IS(f, "coverage.missing");
}
END_TEST

START_TEST(test_coverage_universe_of_ranges)
{
    static const tpd_cov_range rg[] = {{100, 103}, {200, 201}};
    tpd_cov_universe u = {true, 6, rg, 2};
    ep x;
    int64_t a[] = {100, 101, 103}, b[] = {200, 201}, c[] = {150};
    ep_init(&x, 1);
    add(&x, 0, a, 3);
    add(&x, 0, b, 2);
    tpd_cov_finding f = audit(TPD_COV_EXACTLY_ONCE, u, 0, done(&x, true));
    PATH_IS(f, "coverage.missing");
    ck_assert_int_eq(f.nmissing, 1);
    ck_assert_int_eq(f.missing[0], 102);
    add(&x, 0, c, 1);
    f = audit(TPD_COV_EXACTLY_ONCE, u, 0, done(&x, true));
    PATH_IS(f, "coverage.unexpected_id");
    ck_assert_int_eq(f.id, 150);
}
END_TEST

START_TEST(test_coverage_auditor_reused_across_epochs)
{
    tpd_cov_universe u = upto(6);
    tpd_cov_auditor *a = NULL;
    tpd_cov_finding f;
    tpd_cov_counts c;
    ep x;
    deal(&x, 6, 2, 2);
    ck_assert_int_eq(tpd_cov_auditor_create(&a, TPD_COV_EXACTLY_ONCE, &u, 0), TP_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tpd_cov_audit(a, done(&x, true), &f, &c), TP_OK);
        ck_assert_ptr_null(f.path);
        ck_assert_int_eq(c.observations, 6);
        ck_assert_int_eq(c.distinct, 6);
    }
    tpd_cov_auditor_destroy(a);
    tpd_cov_auditor_destroy(NULL);
    u.n = INT64_MAX;
    ck_assert_int_eq(tpd_cov_auditor_create(&a, TPD_COV_EXACTLY_ONCE, &u, 0), TP_EINVAL);
}
END_TEST

/* audit_all audits e with options o into *f and *c, keeping a's examples. */
static tpd_cov_auditor *audit_all(tpd_cov_policy p, tpd_cov_universe u, int64_t padding,
                                  const tpd_cov_opts *o, const tpd_cov_epoch *e, tpd_cov_finding *f,
                                  tpd_cov_counts *c)
{
    tpd_cov_auditor *a = NULL;
    ck_assert_int_eq(tpd_cov_auditor_open(&a, p, &u, padding, o), TP_OK);
    ck_assert_int_eq(tpd_cov_audit(a, e, f, c), TP_OK);
    return a;
}

START_TEST(test_coverage_counts_go_on_after_the_first_violation)
{
    tpd_cov_opts o = {false, 2, false, TPD_COV_DEAL_SAMPLES, 0};
    tpd_cov_finding f;
    tpd_cov_counts c;
    size_t n;
    ep x;
    /* rank 0: 0 1 1 9; rank 1: 0 2 0 8 -- 3, 4, 5 never seen; 8 and 9 outside */
    int64_t a[] = {0, 1, 1, 9}, b[] = {0, 2, 0, 8};
    ep_init(&x, 2);
    add(&x, 0, a, 4);
    add(&x, 1, b, 4);
    tpd_cov_auditor *au = audit_all(TPD_COV_EXACTLY_ONCE, upto(6), 0, &o, done(&x, true), &f, &c);
    PATH_IS(f, "coverage.same_rank_duplicate"); /* the first stays the outcome */
    ck_assert_int_eq(f.id, 1);
    ck_assert_int_eq(c.observations, 8);
    ck_assert_int_eq(c.distinct, 3);
    ck_assert_int_eq(c.unexpected, 2);
    ck_assert_int_eq(c.repeats, 3);
    ck_assert_int_eq(c.same_rank, 2); /* 1 on rank 0; 0 again on rank 1 */
    ck_assert_int_eq(c.cross_rank, 1);
    ck_assert_int_eq(c.missing, 3);
    ck_assert_int_eq(c.violations, 5);
    const tpd_cov_example *e = tpd_cov_examples(au, TPD_COV_K_MISSING, &n);
    ck_assert_uint_eq(n, 2); /* the first 2 of 3 */
    ck_assert_int_eq(e[0].id, 3);
    ck_assert_int_eq(e[1].id, 4);
    e = tpd_cov_examples(au, TPD_COV_K_CROSS_RANK, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(e[0].id, 0);
    ck_assert_int_eq(e[0].rank, 1);
    ck_assert(e[0].has_prev);
    ck_assert_int_eq(e[0].prev_rank, 0);
    e = tpd_cov_examples(au, TPD_COV_K_SAME_RANK, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(e[1].id, 0);
    ck_assert_int_eq(e[1].rank, 1);
    ck_assert_int_eq(e[1].prev_rank, 0); /* first observed in the epoch on rank 0 */
    e = tpd_cov_examples(au, TPD_COV_K_UNEXPECTED, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(e[0].id, 9);
    ck_assert_int_eq(e[1].id, 8);
    tpd_cov_auditor_destroy(au);
}
END_TEST

START_TEST(test_coverage_padding_exact)
{
    tpd_cov_opts exact = {true, 0, false, TPD_COV_DEAL_SAMPLES, 0};
    tpd_cov_finding f;
    tpd_cov_counts c;
    ep x;
    deal(&x, 9, 2, 2); /* total 10: the sampler pads 1 */
    tpd_cov_auditor *a =
        audit_all(TPD_COV_EXPECTED_PADDING, upto(9), 2, NULL, done(&x, true), &f, &c);
    ck_assert_ptr_null(f.path); /* at most 2 */
    ck_assert_int_eq(c.repeats, 1);
    tpd_cov_auditor_destroy(a);
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(9), 2, &exact, done(&x, true), &f, &c);
    PATH_IS(f, "coverage.padding_short");
    ck_assert_int_eq(f.repeats, 1);
    ck_assert_int_eq(f.allowed, 2);
    tpd_cov_auditor_destroy(a);
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(9), 1, &exact, done(&x, true), &f, &c);
    ck_assert_ptr_null(f.path); /* exactly 1 */
    tpd_cov_auditor_destroy(a);
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(9), 2, &exact, done(&x, false), &f, &c);
    ck_assert_ptr_null(f.path); /* an epoch not seen complete may pad more yet */
    tpd_cov_auditor_destroy(a);
}
END_TEST

START_TEST(test_coverage_count_only_universe)
{
    tpd_cov_opts o = {false, 5, true, TPD_COV_DEAL_SAMPLES, 0};
    tpd_cov_universe u = {true, 4, NULL, 0};
    tpd_cov_finding f;
    tpd_cov_counts c;
    size_t n;
    ep x;
    /* interned string IDs need not be 0..n-1: a count says how many */
    int64_t a[] = {70, 71, 72};
    ep_init(&x, 1);
    add(&x, 0, a, 3);
    tpd_cov_auditor *au = audit_all(TPD_COV_EXACTLY_ONCE, u, 0, &o, done(&x, true), &f, &c);
    PATH_IS(f, "coverage.missing");
    ck_assert_int_eq(f.nmissing, 1);
    ck_assert_int_eq(f.nshown, 0); /* unnamed */
    ck_assert_int_eq(c.unexpected, 0);
    tpd_cov_examples(au, TPD_COV_K_MISSING, &n);
    ck_assert_uint_eq(n, 0);
    tpd_cov_auditor_destroy(au);
    int64_t b[] = {73, 74};
    add(&x, 0, b, 2);
    au = audit_all(TPD_COV_EXACTLY_ONCE, u, 0, &o, done(&x, true), &f, &c);
    PATH_IS(f, "coverage.unexpected_id");
    ck_assert_int_eq(f.rank, -1);
    ck_assert_int_eq(f.nextra, 1);
    ck_assert_int_eq(c.unexpected, 1);
    tpd_cov_auditor_destroy(au);
}
END_TEST

/* accelerate's BatchSamplerShard with even_batches, 13 samples in batches
 * of 4 over 2 ranks (fixtures/coverage/hf_trainer_padding.py's epoch 0):
 * the order 5 12 11 7 | 4 1 2 9 | 8 10 6 3 | 0, dealt whole batches in
 * turn, the last filled with the order's first 3. */
START_TEST(test_coverage_expected_padding_accelerate_deal)
{
    ep x;
    tpd_cov_opts o = {false, 5, false, TPD_COV_DEAL_BATCHES, 4};
    tpd_cov_finding f;
    tpd_cov_counts c;
    int64_t r0a[] = {5, 12, 11, 7}, r0b[] = {8, 10, 6, 3}, r1a[] = {4, 1, 2, 9},
            r1b[] = {0, 5, 12, 11};
    ep_init(&x, 2);
    add(&x, 0, r0a, 4);
    add(&x, 0, r0b, 4);
    add(&x, 1, r1a, 4);
    add(&x, 1, r1b, 4);
    tpd_cov_auditor *a =
        audit_all(TPD_COV_EXPECTED_PADDING, upto(13), 3, &o, done(&x, true), &f, &c);
    ck_assert_ptr_null(f.path);
    ck_assert_int_eq(c.repeats, 3);
    tpd_cov_auditor_destroy(a);
    /* dealt as a DistributedSampler deals (rank r's k-th: k * 2 + r), the
     * order's first 3 would be 5, 4 and 12: 11 is no wrap-around ID */
    f = audit(TPD_COV_EXPECTED_PADDING, upto(13), 3, done(&x, true));
    PATH_IS(f, "coverage.padding_exceeded");
    ck_assert(!f.wrap);
    ck_assert_int_eq(f.id, 11);
    /* split_batches: every batch of 4 split in 2, the last (4) filled with
     * the order's first 3 (0 1 2): rank 0 0 1 | 4 0, rank 1 2 3 | 1 2 */
    int64_t s0a[] = {0, 1}, s0b[] = {4, 0}, s1a[] = {2, 3}, s1b[] = {1, 2};
    tpd_cov_opts so = {false, 5, false, TPD_COV_DEAL_SPLIT, 4};
    ep_init(&x, 2);
    add(&x, 0, s0a, 2);
    add(&x, 0, s0b, 2);
    add(&x, 1, s1a, 2);
    add(&x, 1, s1b, 2);
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(5), 3, &so, done(&x, true), &f, &c);
    ck_assert_ptr_null(f.path);
    tpd_cov_auditor_destroy(a);
    /* dealt whole batches of 2 in turn, the first 3 are 0 1 2 as well; as
     * batches of 4 the first 3 are 0 1 4: 2 is no wrap-around ID */
    so.deal = TPD_COV_DEAL_BATCHES;
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(5), 3, &so, done(&x, true), &f, &c);
    PATH_IS(f, "coverage.padding_exceeded");
    ck_assert_int_eq(f.id, 2);
    tpd_cov_auditor_destroy(a);
    /* a batch size of 0 is no deal: the DistributedSampler's */
    so.deal_batch = 0;
    a = audit_all(TPD_COV_EXPECTED_PADDING, upto(5), 3, &so, done(&x, true), &f, &c);
    ck_assert_ptr_null(f.path); /* k * 2 + r: 0 2 1, the same three */
    tpd_cov_auditor_destroy(a);
}
END_TEST

/* ---- the verdict, from a run built by hand ---- */

typedef struct world {
    tpd_run run;
    tpd_exec ex;
    tpd_proc pr[3];
    tpd_batch b[3][16];
    int64_t ids[3][16][4];
} world;

/* wbatch appends to process p a batch of loader 0 (end: an epoch's end). */
static void wbatch(world *w, int p, uint32_t epoch, bool end, const int64_t *ids, uint32_t n)
{
    tpd_proc *q = &w->pr[p];
    tpd_batch *b = &w->b[p][q->nbatches];
    memset(b, 0, sizeof *b);
    b->seq = q->nbatches;
    b->epoch = epoch;
    b->end = end;
    b->rank = p;
    b->world = (int64_t)w->ex.nprocs;
    b->has_dataset_len = true;
    b->dataset_len = 4;
    b->sampler = "DistributedSampler";
    b->id_source = "sampler";
    if (!end) {
        memcpy(w->ids[p][q->nbatches], ids, n * sizeof *ids);
        b->ids = w->ids[p][q->nbatches];
        b->n = n;
        b->has_ids = true;
    }
    for (size_t i = 0; i < q->nbatches; i++) b->pos += !w->b[p][i].end && w->b[p][i].epoch == epoch;
    q->batches = w->b[p];
    q->nbatches++;
}

/* two_ranks: ranks 0 and 1 cover 0..3 in one epoch. */
static void two_ranks(world *w, const char *params)
{
    int64_t r0[] = {0, 2}, r1[] = {1, 3};
    memset(w, 0, sizeof *w);
    w->run.id = 7;
    w->run.check = "coverage";
    w->run.params = params;
    w->run.execs = &w->ex;
    w->run.nexecs = 1;
    w->ex.role = "coverage";
    w->ex.argv_json = "[\"torchrun\"]";
    w->ex.finished = w->ex.has_status = true;
    w->ex.procs = w->pr;
    w->ex.nprocs = 2;
    for (int p = 0; p < 2; p++) {
        w->pr[p].pid = 100 + p;
        w->pr[p].rank = p;
        w->pr[p].has_bye = true;
        w->pr[p].bye_reason = "exit";
        w->pr[p].sent = w->pr[p].nevents = 10;
        w->pr[p].max_seq = 9;
    }
    wbatch(w, 0, 0, false, r0, 2);
    wbatch(w, 0, 0, true, NULL, 0);
    wbatch(w, 1, 0, false, r1, 2);
    wbatch(w, 1, 0, true, NULL, 0);
}

static tpd_result judge(world *w)
{
    tpd_cmp_opts o;
    tpd_result r;
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(tpd_verdict_coverage(&w->run, &o, &r), TP_OK);
    ck_assert_ptr_nonnull(r.text);
    ck_assert_ptr_nonnull(r.json);
    return r;
}

START_TEST(test_coverage_verdict_pass_names_window_and_world)
{
    world w;
    two_ranks(&w, "{\"policy\": \"exactly_once\", \"loader\": 0}");
    tpd_result r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "world size 2"));
    ck_assert_ptr_nonnull(strstr(r.text, "len(dataset)"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"world_size\":2"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"first_divergence\":null"));
    tpd_result_clear(&r);
}
END_TEST

START_TEST(test_coverage_verdict_fail_path)
{
    world w;
    int64_t dup[] = {0};
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    /* rank 1 sees 0 again in a second epoch that both ranks finish */
    int64_t r0[] = {0, 1, 2, 3};
    wbatch(&w, 0, 1, false, r0, 4);
    wbatch(&w, 0, 1, true, NULL, 0);
    wbatch(&w, 1, 1, false, dup, 1);
    wbatch(&w, 1, 1, true, NULL, 0);
    tpd_result r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_str_eq(r.path, "coverage.cross_rank_duplicate");
    ck_assert_ptr_nonnull(strstr(r.json, "\"epoch\":1"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"worker\":null"));
    tpd_result_clear(&r);
}
END_TEST

START_TEST(test_coverage_verdict_abstains)
{
    world w;
    tpd_result r;
    /* no universe: the dataset has no len() and none is declared */
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < w.pr[p].nbatches; i++) w.b[p][i].has_dataset_len = false;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    ck_assert_ptr_nonnull(strstr(r.text, "universe"));
    tpd_result_clear(&r);
    /* ... which no_cross_rank_overlap does not need */
    two_ranks(&w, "{\"policy\": \"no_cross_rank_overlap\"}");
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < w.pr[p].nbatches; i++) w.b[p][i].has_dataset_len = false;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    tpd_result_clear(&r);
    /* a window of 2 epochs, one seen */
    two_ranks(&w, "{\"policy\": \"exactly_once\", \"epochs\": 2}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    ck_assert_ptr_nonnull(strstr(r.text, "epoch 1 was not seen complete"));
    tpd_result_clear(&r);
    /* rank 1 never finished its epoch */
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    w.pr[1].nbatches = 1;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    ck_assert_ptr_nonnull(strstr(r.text, "rank 1"));
    tpd_result_clear(&r);
}
END_TEST

START_TEST(test_coverage_verdict_errors)
{
    world w;
    tpd_result r;
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    w.pr[1].has_bye = false; /* rank 1 died */
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    tpd_result_clear(&r);
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    w.pr[0].dropped = 3;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    tpd_result_clear(&r);
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    w.ex.status = 1;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    tpd_result_clear(&r);
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    w.ex.nprocs = 1; /* world 2, rank 1 absent */
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    ck_assert_ptr_nonnull(strstr(r.text, "rank 1"));
    tpd_result_clear(&r);
    two_ranks(&w, "{\"policy\": \"sometimes\"}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    tpd_result_clear(&r);
}
END_TEST

/* strs makes process p's batches carry the string "s<id>" for each ID. */
static void strs(world *w, tpd_arena *a, int p)
{
    for (size_t i = 0; i < w->pr[p].nbatches; i++) {
        tpd_batch *b = &w->b[p][i];
        char buf[4][16];
        const char *v[4];
        if (b->end) continue;
        for (uint32_t j = 0; j < b->n; j++) {
            snprintf(buf[j], sizeof buf[j], "s%lld", (long long)b->ids[j]);
            v[j] = buf[j];
        }
        b->id_source = "expr";
        ck_assert_int_eq(tpd_batch_set_strs(a, b, v, NULL, b->n), TP_OK);
    }
}

START_TEST(test_coverage_verdict_string_ids)
{
    tpd_arena *a = tpd_arena_create();
    world w;
    tpd_result r;
    int64_t dup[] = {2};
    /* the same strings from two processes get the same key, and a count */
    two_ranks(&w, "{\"policy\": \"exactly_once\", \"universe\": 4}");
    strs(&w, a, 0);
    strs(&w, a, 1);
    ck_assert_ptr_nonnull(tpd_batch_strs(&w.b[0][0]));
    ck_assert_ptr_null(tpd_batch_strs(&w.b[0][1])); /* an end: no IDs */
    ck_assert_str_eq(tpd_batch_strs(&w.b[1][0])[1], "s3");
    ck_assert_int_eq(w.b[0][0].ids[0], tpd_batch_id_key("s0", 2));
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "a count of string IDs"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"id_kind\":\"string\""));
    tpd_result_clear(&r);
    /* "s2" twice: named by its string */
    two_ranks(&w, "{\"policy\": \"exactly_once\", \"universe\": 4}");
    wbatch(&w, 1, 0, false, dup, 1);
    w.b[1][2] = w.b[1][1]; /* keep the end last */
    w.b[1][1].end = false;
    w.b[1][1].has_ids = true;
    w.b[1][1].n = 1;
    w.b[1][1].ids = w.ids[1][2];
    w.ids[1][2][0] = 2;
    w.b[1][1].pos = 1;
    strs(&w, a, 0);
    strs(&w, a, 1);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_str_eq(r.path, "coverage.cross_rank_duplicate");
    ck_assert_ptr_nonnull(strstr(r.text, "ID \"s2\""));
    ck_assert_ptr_nonnull(strstr(r.json, "\"id\":\"s2\""));
    ck_assert_ptr_nonnull(strstr(r.json, "\"explanation\":[{"));
    tpd_result_clear(&r);
    /* strings on one rank, integers on the other: ERROR */
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    strs(&w, a, 0);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    ck_assert_ptr_nonnull(strstr(r.text, "strings on rank 0 and integers on rank 1"));
    tpd_result_clear(&r);
    /* a universe file lists integers: no use for strings */
    two_ranks(&w, "{\"policy\": \"exactly_once\", \"universe_ranges\": [[0, 3]]}");
    strs(&w, a, 0);
    strs(&w, a, 1);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    tpd_result_clear(&r);
    tpd_arena_destroy(a);
}
END_TEST

START_TEST(test_coverage_verdict_counts_and_rule)
{
    world w;
    tpd_result r;
    char *ev = NULL, why[256];
    two_ranks(&w, "{\"policy\": \"expected_padding\", \"padding\": 1, \"padding_exact\": true}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_str_eq(r.path, "coverage.padding_short");
    ck_assert_ptr_nonnull(strstr(r.text, "exactly 1 repeated observation(s) per epoch"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"rule\":\"exactly\",\"observed\":[0]"));
    ck_assert_ptr_nonnull(strstr(r.json, "padding rule applied: exactly 1"));
    tpd_result_clear(&r);
    two_ranks(&w, "{\"policy\": \"expected_padding\", \"padding\": 1}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "at most 1 repeated observation(s) per epoch"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"counts\":{\"observations\":4,\"unique\":4"));
    tpd_result_clear(&r);
    /* the evidence file: a line per ID, in ID order */
    ck_assert_int_eq(tpd_coverage_evidence(&w.run, &ev, why, sizeof why), TP_OK);
    ck_assert_ptr_nonnull(strstr(ev, "{\"id\":0,\"occurrences\":[{\"epoch\":0,\"rank\":0,"
                                     "\"position\":0,\"item\":0,\"worker\":null}]}\n{\"id\":1,"));
    free(ev);
    two_ranks(&w, "{\"policy\": \"sometimes\"}");
    ck_assert_int_eq(tpd_coverage_evidence(&w.run, &ev, why, sizeof why), TP_EINVAL);
}
END_TEST

/* train_and_eval: two_ranks' batches are the training's, DataLoader 1,
 * with a backward after each rank's batch; then DataLoader 0, an
 * evaluation that gives every rank IDs 0 and 1, with no backward. */
static tpd_mark marks[2][2];

static void train_and_eval(world *w, const char *params)
{
    int64_t ev[] = {0, 1};
    two_ranks(w, params);
    for (int p = 0; p < 2; p++) {
        w->b[p][0].loader = w->b[p][1].loader = 1;
        wbatch(w, p, 0, false, ev, 2);
        wbatch(w, p, 0, true, NULL, 0);
        w->b[p][2].pos = 0;
        w->b[p][3].pos = 1;
        for (size_t i = 0; i < w->pr[p].nbatches; i++) w->b[p][i].seq = 10 * i;
        memset(marks[p], 0, sizeof marks[p]);
        marks[p][0].seq = 5; /* between the training's batch and its end */
        marks[p][0].kind = TP_K_BACKWARD;
        w->pr[p].marks = marks[p];
        w->pr[p].nmarks = 1;
    }
}

START_TEST(test_coverage_verdict_audits_the_training_loader)
{
    world w;
    tpd_result r;
    train_and_eval(&w, "{\"policy\": \"exactly_once\"}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "loader      1, the only DataLoader whose batches fed "
                                         "backward calls (0 was iterated too"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"loader\":1,\"loader_from\":\"the only DataLoader"));
    ck_assert_ptr_nonnull(strstr(r.json, "{\"loader\":0,\"processes\":2,\"batches\":2,"
                                         "\"backward\":0,\"training\":false,\"audited\":false}"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"backward\":2,\"training\":true,\"audited\":true}"));
    ck_assert_ptr_nonnull(strstr(r.json, "audited DataLoader 1: the only DataLoader"));
    tpd_result_clear(&r);
    /* --loader 0 audits the evaluation, which every rank saw whole */
    train_and_eval(&w, "{\"policy\": \"exactly_once\", \"loader\": 0}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_str_eq(r.path, "coverage.cross_rank_duplicate");
    ck_assert_ptr_nonnull(strstr(r.text, "loader      0, declared (--loader 0)"));
    tpd_result_clear(&r);
    /* a loader no process iterated: ERROR, naming those that were */
    train_and_eval(&w, "{\"policy\": \"exactly_once\", \"loader\": 7}");
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ERROR);
    ck_assert_ptr_nonnull(strstr(r.text, "no process iterated DataLoader 7 (no batch observed); "
                                         "iterated: 0 (2 batch(es), no backward) and 1 (2 "
                                         "batch(es), fed backward calls)"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"loader\":null"));
    tpd_result_clear(&r);
    /* a backward within the evaluation too: no telling which, ABSTAIN */
    train_and_eval(&w, "{\"policy\": \"exactly_once\"}");
    for (int p = 0; p < 2; p++) {
        marks[p][1].seq = 25;
        marks[p][1].kind = TP_K_BACKWARD;
        w.pr[p].nmarks = 2;
    }
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    ck_assert_ptr_nonnull(strstr(r.text, "more than one fed backward calls: say which one to "
                                         "audit with --loader L"));
    tpd_result_clear(&r);
    /* no backward at all: the same */
    train_and_eval(&w, "{\"policy\": \"exactly_once\"}");
    w.pr[0].nmarks = w.pr[1].nmarks = 0;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_ABSTAIN);
    ck_assert_ptr_nonnull(strstr(r.text, "no backward call followed the batches of any"));
    tpd_result_clear(&r);
    /* one loader, not DataLoader 0: audited, and said */
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < w.pr[p].nbatches; i++) w.b[p][i].loader = 2;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "loader      2, the only DataLoader iterated; "
                                         "DataLoaders 0..1, created before it, were never "
                                         "iterated"));
    tpd_result_clear(&r);
    /* the only one, DataLoader 0: no explanation line for it */
    two_ranks(&w, "{\"policy\": \"exactly_once\"}");
    r = judge(&w);
    ck_assert_ptr_nonnull(strstr(r.text, "loader      0, the only DataLoader iterated\n"));
    ck_assert_ptr_null(strstr(r.json, "audited DataLoader"));
    tpd_result_clear(&r);
}
END_TEST

/* shard makes two_ranks' world accelerate's: 5 samples, the order 0..4 in
 * batches of 2 dealt in turn, even_batches filling the last from the
 * order's first 3: rank 0 0 1 | 4 0, rank 1 2 3 | 1 2. */
static void shard(world *w, const char *params, bool even)
{
    int64_t a[] = {0, 1}, b[] = {4, 0}, c[] = {2, 3}, d[] = {1, 2};
    const int64_t *ids[2][2] = {{a, b}, {c, d}};
    two_ranks(w, params);
    for (int p = 0; p < 2; p++) {
        w->pr[p].nbatches = 0;
        wbatch(w, p, 0, false, ids[p][0], 2);
        wbatch(w, p, 0, false, ids[p][1], 2);
        wbatch(w, p, 0, true, NULL, 0);
        for (size_t i = 0; i < w->pr[p].nbatches; i++) {
            tpd_batch *x = &w->b[p][i];
            x->dataset_len = 5;
            x->sampler = "SeedableRandomSampler";
            x->shard = "batches";
            x->shard_batch = 2;
            x->shard_ranks = 2;
            x->shard_even = even;
        }
    }
}

START_TEST(test_coverage_verdict_accelerate_padding)
{
    world w;
    tpd_result r;
    shard(&w, "{\"policy\": \"expected_padding\"}", true);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "at most 3 repeated observation(s) per epoch (not "
                                         "declared: what accelerate's even_batches adds"));
    ck_assert_ptr_nonnull(strstr(r.text, "8 places for 5 samples"));
    ck_assert_ptr_nonnull(strstr(r.json, "\"sampler\":\"BatchSamplerShard\""));
    tpd_result_clear(&r);
    /* without even_batches it pads nothing, so the repeats fail */
    shard(&w, "{\"policy\": \"expected_padding\"}", false);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_str_eq(r.path, "coverage.padding_exceeded");
    ck_assert_ptr_nonnull(strstr(r.text, "pads nothing without even_batches"));
    tpd_result_clear(&r);
    /* a declared padding is located as the shard deals */
    shard(&w, "{\"policy\": \"expected_padding\", \"padding\": 3}", false);
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_PASS);
    ck_assert_ptr_nonnull(strstr(r.text, "(declared; repeats of the epoch's first samples as "
                                         "accelerate's BatchSamplerShard deals them"));
    tpd_result_clear(&r);
    /* a shard over other processes than the ranks has no rule here */
    shard(&w, "{\"policy\": \"expected_padding\"}", true);
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < w.pr[p].nbatches; i++) w.b[p][i].shard_ranks = 1;
    r = judge(&w);
    ck_assert_int_eq(r.outcome, TPD_FAIL);
    ck_assert_ptr_nonnull(strstr(r.text, "deals to other processes than the ranks"));
    tpd_result_clear(&r);
}
END_TEST

/* ---- the declaration, from the run's params ---- */

START_TEST(test_coverage_decl_reads_every_key)
{
    tpd_arena *a = tpd_arena_create();
    tpd_cov_decl d;
    char why[256] = "", json[512];
    /* the example of decl.h; the tree is gone when the strings are read */
    snprintf(json, sizeof json, "%s",
             "{\"policy\": \"expected_padding\", \"loader\": 1, \"epochs\": 2, \"universe\": 10,"
             " \"universe_file\": \"ids.txt\", \"universe_ranges\": [[0, 4], [7, 11]],"
             " \"padding\": 2, \"padding_exact\": true, \"examples\": 7,"
             " \"sample_id\": \"batch[\\\"id\\\"]\\n\\u00e9\"}");
    ck_assert_int_eq(tpd_cov_decl_parse(a, json, &d, why, sizeof why), TP_OK);
    memset(json, 'x', sizeof json - 1);
    ck_assert_int_eq(d.policy, TPD_COV_EXPECTED_PADDING);
    ck_assert(d.has_loader);
    ck_assert_int_eq(d.loader, 1);
    ck_assert_int_eq(d.epochs, 2);
    ck_assert(d.has_universe);
    ck_assert_int_eq(d.universe, 10); /* the ranges' count: 5 + 5 */
    ck_assert_uint_eq(d.nranges, 2);
    ck_assert_int_eq(d.ranges[0].lo, 0);
    ck_assert_int_eq(d.ranges[0].hi, 4);
    ck_assert_int_eq(d.ranges[1].lo, 7);
    ck_assert_int_eq(d.ranges[1].hi, 11);
    ck_assert_str_eq(d.universe_file, "ids.txt");
    ck_assert(d.has_padding);
    ck_assert_int_eq(d.padding, 2);
    ck_assert(d.padding_exact);
    ck_assert_int_eq(d.examples, 7);
    ck_assert_str_eq(d.sample_id, "batch[\"id\"]\n\xc3\xa9");
    /* nulls and defaults; unknown keys with scalar values are skipped */
    ck_assert_int_eq(tpd_cov_decl_parse(a,
                                        "{\"x\": 1, \"policy\": \"no_cross_rank_overlap\", "
                                        "\"universe\": null, \"padding\": null, \"examples\": "
                                        "null, \"padding_exact\": null, \"sample_id\": null, "
                                        "\"universe_ranges\": null, \"y\": \"s\", \"z\": null, "
                                        "\"w\": false, \"v\": -3}",
                                        &d, why, sizeof why),
                     TP_OK);
    ck_assert_int_eq(d.policy, TPD_COV_NO_CROSS_RANK_OVERLAP);
    ck_assert(!d.has_universe && !d.has_padding && !d.padding_exact);
    ck_assert(!d.has_loader); /* the verdict chooses */
    ck_assert_int_eq(d.loader, 0);
    ck_assert_int_eq(d.epochs, 0);
    ck_assert_int_eq(d.examples, TPD_COV_EXAMPLES);
    ck_assert_ptr_null(d.ranges);
    ck_assert_ptr_null(d.sample_id);
    ck_assert_ptr_null(d.universe_file);
    /* an empty array of ranges declares none: the universe stays 0..N-1 */
    ck_assert_int_eq(tpd_cov_decl_parse(a,
                                        "{\"policy\":\"exactly_once\",\"universe\":4,"
                                        "\"universe_ranges\":[]}",
                                        &d, why, sizeof why),
                     TP_OK);
    ck_assert_ptr_null(d.ranges);
    ck_assert(d.has_universe);
    ck_assert_int_eq(d.universe, 4);
    /* why may be NULL */
    ck_assert_int_eq(tpd_cov_decl_parse(a, "{\"policy\": \"at_least_once\"}", &d, NULL, 0), TP_OK);
    ck_assert_int_eq(d.policy, TPD_COV_AT_LEAST_ONCE);
    ck_assert_int_eq(tpd_cov_decl_parse(a, "[]", &d, NULL, 0), TP_EINVAL);
    tpd_arena_destroy(a);
}
END_TEST

START_TEST(test_coverage_decl_refuses_malformed)
{
    /* each is refused with a reason that says what is wrong, and *d is
     * left as it was */
    static const struct {
        const char *json, *why;
    } bad[] = {
        {NULL, "no params"},
        {"", "not JSON"},
        {"{", "not JSON"},
        {"{\"policy\": \"exactly_once\",}", "not JSON"},
        {"{\"policy\": \"exactly_once\"} x", "not JSON"},
        {"{'policy': 'exactly_once'}", "not JSON"},
        {"[\"policy\"]", "not a JSON object"},
        {"\"exactly_once\"", "not a JSON object"},
        {"5", "not a JSON object"},
        {"null", "not a JSON object"},
        {"{}", "no policy"},
        {"{\"loader\": 0}", "no policy"},
        {"{\"policy\": \"sometimes\"}", "unknown policy 'sometimes'"},
        {"{\"policy\": null}", "unknown policy 'null'"},
        {"{\"policy\": 3}", "\"policy\""},
        {"{\"policy\": \"exactly_once\", \"policy\": \"at_least_once\"}", "duplicate"},
        {"{\"policy\": \"exactly_once\", \"loader\": -1}", "\"loader\" wants an integer >= 0"},
        {"{\"policy\": \"exactly_once\", \"epochs\": 0}", "\"epochs\" wants an integer >= 1"},
        {"{\"policy\": \"exactly_once\", \"universe\": 1.5}", "\"universe\" wants an integer"},
        {"{\"policy\": \"exactly_once\", \"universe\": 2.0}", "\"universe\" wants an integer"},
        {"{\"policy\": \"exactly_once\", \"universe\": 1e3}", "\"universe\" wants an integer"},
        {"{\"policy\": \"exactly_once\", \"padding\": \"2\"}", "\"padding\" wants an integer"},
        {"{\"policy\": \"exactly_once\", \"universe\": 99999999999999999999}", "not JSON"},
        {"{\"policy\": \"exactly_once\", \"examples\": 1000001}", "at most 1000000"},
        {"{\"policy\": \"exactly_once\", \"padding_exact\": 1}", "\"padding_exact\" wants true"},
        {"{\"policy\": \"exactly_once\", \"sample_id\": 5}", "\"sample_id\" wants a string"},
        {"{\"policy\": \"exactly_once\", \"universe_file\": []}", "\"universe_file\" wants"},
        {"{\"policy\": \"exactly_once\", \"sample_id\": \"a\\u0000b\"}", "not JSON"},
        {"{\"policy\": \"exactly_once\", \"sample_id\": \"\xff\"}", "not JSON"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": 5}", "an array of [lo, hi]"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [0, 4]}", "[lo, hi] pairs"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[0]]}", "[lo, hi] pairs"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[0, 1, 2]]}", "[lo, hi] pairs"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[0, \"1\"]]}", "integer [lo, hi]"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[0.5, 1]]}", "integer [lo, hi]"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[3, 1]]}", "sorted, disjoint"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[0, 4], [4, 5]]}",
         "sorted, disjoint"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": [[5, 6], [0, 1]]}",
         "sorted, disjoint"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": "
         "[[-9223372036854775808, 9223372036854775807]]}",
         "too large"},
        {"{\"policy\": \"exactly_once\", \"universe_ranges\": "
         "[[-9223372036854775808, 0], [1, 9223372036854775807]]}",
         "too large"},
        {"{\"policy\": \"exactly_once\", \"x\": 1.5}", "\"x\" is not a key"},
        {"{\"policy\": \"exactly_once\", \"x\": [1]}", "\"x\" is not a key"},
        {"{\"policy\": \"exactly_once\", \"x\": {}}", "\"x\" is not a key"},
    };
    tpd_arena *a = tpd_arena_create();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tpd_cov_decl d;
        char why[256] = "";
        memset(&d, 0x5a, sizeof d);
        ck_assert_msg(tpd_cov_decl_parse(a, bad[i].json, &d, why, sizeof why) == TP_EINVAL,
                      "accepted %s", bad[i].json);
        ck_assert_msg(strstr(why, bad[i].why) != NULL, "%s: why is '%s', not '%s'", bad[i].json,
                      why, bad[i].why);
        ck_assert_int_eq(d.loader, 0x5a5a5a5a5a5a5a5a);
    }
    tpd_arena_destroy(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coverage");
    TCase *t = tcase_create("audit");
    tcase_add_test(t, test_coverage_exactly_once_passes);
    tcase_add_test(t, test_coverage_missing_in_complete_epoch_only);
    tcase_add_test(t, test_coverage_same_and_cross_rank_duplicates);
    tcase_add_test(t, test_coverage_first_violation_is_rank_major);
    tcase_add_test(t, test_coverage_at_least_once_allows_repeats);
    tcase_add_test(t, test_coverage_no_cross_rank_overlap);
    tcase_add_test(t, test_coverage_expected_padding);
    tcase_add_test(t, test_coverage_universe_of_ranges);
    tcase_add_test(t, test_coverage_auditor_reused_across_epochs);
    tcase_add_test(t, test_coverage_counts_go_on_after_the_first_violation);
    tcase_add_test(t, test_coverage_padding_exact);
    tcase_add_test(t, test_coverage_count_only_universe);
    tcase_add_test(t, test_coverage_expected_padding_accelerate_deal);
    suite_add_tcase(s, t);
    t = tcase_create("verdict");
    tcase_add_test(t, test_coverage_verdict_pass_names_window_and_world);
    tcase_add_test(t, test_coverage_verdict_fail_path);
    tcase_add_test(t, test_coverage_verdict_abstains);
    tcase_add_test(t, test_coverage_verdict_errors);
    tcase_add_test(t, test_coverage_verdict_string_ids);
    tcase_add_test(t, test_coverage_verdict_counts_and_rule);
    tcase_add_test(t, test_coverage_verdict_audits_the_training_loader);
    tcase_add_test(t, test_coverage_verdict_accelerate_padding);
    suite_add_tcase(s, t);
    t = tcase_create("decl");
    tcase_add_test(t, test_coverage_decl_reads_every_key);
    tcase_add_test(t, test_coverage_decl_refuses_malformed);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
