/* SPDX-License-Identifier: MIT
 * ctx.h -- what the health verdict's parts share: the telemetry rows
 * (telemetry.c), the judging context (verdict.c) and the report
 * (report.c).  Internal to the health verdict. */
#ifndef TP_DAEMON_CHECKS_HEALTH_CTX_H
#define TP_DAEMON_CHECKS_HEALTH_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* One optimizer step of one optimizer: its pre and post events, the
 * backward calls and GradScaler calls of the same step index. */
typedef struct tpd_hrow {
    int64_t step, opt;
    bool has_post;
    int nbwd;        /* backward calls of the step */
    bool has_loss;   /* the last backward's loss was reported */
    double loss;     /* the last backward's loss */
    int bad_bwd;     /* the first backward (1-based) with a non-finite loss, 0: none */
    double bad_loss; /* its loss */
    bool has_gnorm;  /* pre: the total gradient L2 norm */
    double gnorm;
    bool has_unorm; /* post: the update's L2 norm */
    double unorm;
    bool has_changed, changed; /* post: any parameter changed */
    bool scaler_skipped;       /* post: a GradScaler skipped the step */
    uint32_t nlrs;
    const double *lrs;          /* pre: each group's learning rate */
    int64_t nparams, ngrads;    /* pre: -1 when not said */
    uint64_t pre_seq;           /* the pre event's seq */
    uint32_t nonfinite_grads;   /* gradients holding non-finite values */
    const char *nonfinite_grad; /* the first, or NULL */
    uint64_t nonfinite_ord;     /* its timeline ord */
    uint64_t nonfinite_vals;    /* its non-finite values */
    bool has_scale;             /* the last GradScaler scale seen in the step */
    double scale;
} tpd_hrow;

typedef struct tpd_hctx {
    const tpd_run *run;
    const tpd_exec *ex;
    const tpd_proc *p;
    bool has_max;
    double max_grad_norm;
    tpd_hrow *rows;
    size_t nrows;
    bool final_seen;       /* a final snapshot was found */
    int64_t final_tensors; /* model tensors it holds */
    /* the first failure */
    bool found;
    size_t row; /* its row; nrows for the final snapshot */
    int64_t step;
    char path[256];
    tpd_str value; /* what was observed there, one line */
    tpd_str head;  /* lines under the outcome */
    tpd_why why;
    tpd_arena *a;
    bool oom;
} tpd_hctx;

/* tpd_hctx_rows builds x->rows from x->p (telemetry.c).  Errors: TP_ENOMEM. */
tp_err tpd_hctx_rows(tpd_hctx *x);

/* tpd_hrow_skipped: the step moved nothing, by a GradScaler's decision or
 * because no parameter changed. */
bool tpd_hrow_skipped(const tpd_hrow *w);

/* tpd_hctx_finish writes the report of outcome oc into *out (report.c).
 * Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_hctx_finish(tpd_hctx *x, tpd_outcome oc, tpd_result *out);

#endif
