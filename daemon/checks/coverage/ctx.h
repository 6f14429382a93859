/* SPDX-License-Identifier: MIT
 * ctx.h -- what the coverage verdict knows while it judges a run, shared
 * by its parts: the verdict (verdict.c: preconditions, the ranks, string
 * IDs, the universe, the padding and the audit), the loader it audits
 * (loader.c), the report (report.c) and the evidence file (evidence.c). */
#ifndef TP_DAEMON_CHECKS_COVERAGE_CTX_H
#define TP_DAEMON_CHECKS_COVERAGE_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/arena.h"
#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/checks/coverage/audit.h"
#include "daemon/checks/coverage/decl.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* One rank as the audited loader saw it. */
typedef struct tpd_cov_rank {
    const tpd_proc *p;
    const tpd_batch *batches; /* p's, or their copies with interned string IDs */
    size_t nb;
    int64_t rank;
    size_t nbatches; /* batches with IDs, all epochs */
    int64_t observations;
    const char *sampler, *id_source;
    bool workers; /* some batch said which worker made it */
} tpd_cov_rank;

/* One DataLoader as the processes of the execution iterated it (loaders
 * are numbered per process in creation order; the same number on every
 * rank is taken for the same loader). */
typedef struct tpd_cov_loader {
    uint32_t loader;
    int64_t procs;    /* processes that iterated it */
    int64_t batches;  /* batches it returned, all processes and epochs */
    int64_t backward; /* backward calls credited to it (checks/passes.h) */
    bool train;       /* a pass of it fed the training */
} tpd_cov_loader;

typedef struct tpd_cctx {
    const tpd_run *run;
    const tpd_exec *ex;
    tpd_arena *a;
    tpd_cov_decl d;
    bool decl_ok;
    int64_t loader;          /* the loader audited; -1 until chosen */
    char loader_from[512];   /* why that one ("" until chosen) */
    tpd_cov_loader *loaders; /* every loader iterated, by number */
    size_t nloaders;
    tpd_cov_rank *ranks; /* by rank */
    int64_t world;
    uint32_t seen_epochs; /* 1 + the highest epoch any rank reported */
    int64_t window;       /* epochs audited: 0..window-1 */
    tpd_cov_universe u;
    const char *u_from; /* "declared", "universe file ...", "len(dataset)" */
    int64_t padding;
    char pad_from[320];
    const char *pad_scheme; /* the sampler whose padding rule applies: "DistributedSampler",
                             * "BatchSamplerShard", or NULL: none known */
    tpd_cov_deal deal;      /* how the sampler deals the IDs to the ranks */
    int64_t deal_batch;     /* and in batches of how many */
    tpd_cov_counts total;
    int64_t audited;   /* epochs audited */
    int64_t *pad_seen; /* expected_padding: repeated observations, per epoch audited */
    const char **strs; /* string IDs: strs[k] is interned ID k; NULL: integer IDs */
    int64_t nstrs;
    tpd_cov_auditor *au; /* the examples, once audited */
    tpd_why why;
    tpd_str head;  /* lines under the outcome */
    bool surveyed; /* universe and padding are known to the report */
} tpd_cctx;

/* tpd_cctx_prepare reads the declaration and the ranks of r, interns string
 * IDs and settles the universe, the padding and the window.  false when the
 * verdict is already said: in *out, or an error in *rc. */
bool tpd_cctx_prepare(tpd_cctx *x, const tpd_run *r, tpd_result *out, tp_err *rc);

/* tpd_cctx_free frees what x holds. */
void tpd_cctx_free(tpd_cctx *x);

/* tpd_cctx_of_loader reports whether b is a batch of the audited loader. */
bool tpd_cctx_of_loader(const tpd_cctx *x, const tpd_batch *b);

/* tpd_cctx_choose_loader settles x->loader and x->loader_from: the declared
 * loader, else the only one iterated, else the only one whose batches fed
 * backward calls (checks/passes.h), and fills x->loaders.  Returns NULL, or
 * why no loader can be audited (into buf) with *oc the outcome: ERROR when
 * none (or not the declared one) was iterated, ABSTAIN when several could
 * be the one.  Errors (*rc): TP_ENOMEM. */
const char *tpd_cctx_choose_loader(tpd_cctx *x, char *buf, size_t n, tpd_outcome *oc, tp_err *rc);

/* tpd_cctx_finish writes the report of outcome oc, with finding f (NULL:
 * none), into *out.  Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_cctx_finish(tpd_cctx *x, tpd_outcome oc, const tpd_cov_finding *f, tpd_result *out);

/* tpd_cctx_say ends the verdict with oc and one line saying why. */
tp_err tpd_cctx_say(tpd_cctx *x, tpd_outcome oc, tpd_result *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* tpd_cctx_put_id writes ID id as the text report shows it: a number, or
 * its string (quoted, JSON-escaped). */
void tpd_cctx_put_id(const tpd_cctx *x, tpd_str *s, int64_t id);
/* tpd_cctx_id_json is ID id as the JSON reports show it: a number, or its
 * string; NULL when out of memory. */
json_t *tpd_cctx_id_json(const tpd_cctx *x, int64_t id);

#endif
