/* SPDX-License-Identifier: MIT
 * ctx.h -- what the health verdict's parts share: the telemetry rows
 * (telemetry.c), the judging context (verdict.c) and the report
 * (report.c).  Internal to the health verdict. */
#ifndef TP_DAEMON_CHECKS_HEALTH_CTX_H
#define TP_DAEMON_CHECKS_HEALTH_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* A GradScaler misuse at a step (amp.c). */
typedef enum tpd_amp_misuse {
    TPD_AMP_NONE = 0,
    TPD_AMP_DIRECT,  /* optimizer.step() directly after scale() */
    TPD_AMP_NOSCALE, /* GradScaler.step with no scale() since the last update() */
    TPD_AMP_CLIP     /* clipping after scale(), before any unscale_() */
} tpd_amp_misuse;

/* One optimizer step of one optimizer: its pre and post events, the
 * backward calls and GradScaler calls of the same step index. */
typedef struct tpd_hrow {
    int64_t step, opt;
    bool has_post;
    int nbwd;           /* backward calls of the step */
    bool has_loss;      /* the last backward's loss was reported */
    double loss;        /* the last backward's loss */
    bool loss_unscaled; /* it was GradScaler.scale's output: loss is it divided by the scale */
    bool warmup; /* learning rate 0, nothing moved, before the optimizer's first step that moved */
    int bad_bwd; /* the first backward (1-based) with a non-finite loss, 0: none */
    double bad_loss; /* its loss */
    bool has_gnorm;  /* pre: the L2 norm of the gradients of its optimizer's parameters */
    double gnorm;
    bool has_unorm; /* post: the update's L2 norm */
    double unorm;
    bool has_changed, changed;       /* post: any parameter changed */
    bool changed_by_snaps;           /* changed was read from snapshot digests (moved.c) */
    int64_t snap_before, snap_after; /* their steps */
    bool scaler_skipped;             /* post: a GradScaler skipped the step */
    uint32_t nlrs;
    const double *lrs;          /* pre: each group's learning rate */
    int64_t nparams, ngrads;    /* pre: -1 when not said */
    uint64_t pre_seq;           /* the pre event's seq */
    uint32_t nonfinite_grads;   /* gradients holding non-finite values */
    const char *nonfinite_grad; /* the first, or NULL */
    uint64_t nonfinite_ord;     /* its timeline ord */
    uint64_t nonfinite_vals;    /* its non-finite values */
    bool has_scale;             /* the GradScaler's scale after the step (its update()),
                                 * else the last one seen in the step */
    double scale;
    bool scaler;              /* pre: it ran through GradScaler.step */
    tpd_amp_misuse amp;       /* the GradScaler misuse found at the step (amp.c) */
    double amp_scale;         /* the scale of the scale() call it concerns */
    bool amp_unscaled;        /* direct: unscale_() ran before the step */
    bool amp_bwd_plain;       /* noscale: a backward of the step took a tensor
                               * GradScaler.scale did not return */
    bool amp_has_norm;        /* clip: the norm clip_grad_norm_ returned */
    double amp_norm, amp_max; /* clip: it, and the bound */
} tpd_hrow;

typedef struct tpd_hctx {
    const tpd_run *run;
    const tpd_exec *ex;
    const tpd_proc *p;
    bool has_max;
    double max_grad_norm;
    double max_skipped; /* --max-skipped, 0.25 by default */
    /* --min-loss-decrease, --lr-expect, --every: bounds.c's (read by
     * tpd_health_bounds_parse) */
    bool has_min_decrease;
    double min_decrease;
    size_t nlr_expect;
    struct tpd_lr_expect *lr_expect; /* arena, by step */
    const char *lr_file;             /* the --lr-expect file's name, or NULL */
    int64_t every;                   /* 0: every step */
    struct {
        int state;            /* 0: not reached, 1: checked, 2: too few steps with a loss */
        size_t rows, quarter; /* steps with a finite loss; a quarter of them */
        size_t last_row;      /* the row of the last quarter's first */
        int64_t first_lo, first_hi, last_lo, last_hi; /* the quarters' steps */
        double first, last, decrease;                 /* their means; (first - last) / |first| */
    } loss;
    tpd_hrow *rows;
    size_t nrows;
    bool *replica;             /* per process of ex: a replica of p (ranks.c) */
    size_t *mark_at;           /* per process of ex: where ranks.c's search of its marks is */
    size_t nreplicas, nothers; /* other ranks compared, and not (not replicas) */
    bool final_seen;           /* a final snapshot was found */
    int64_t final_tensors;     /* model tensors it holds */
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

/* A run of a timeline's items: those of one step and group (span.c). */
typedef struct tpd_hspan {
    const tpd_item *v;
    size_t n;
} tpd_hspan;

/* tpd_hspan_of: the items of step and group g in l (sorted by step, group,
 * ord: obs.h's tpd_items_sort); empty when none. */
tpd_hspan tpd_hspan_of(const tpd_items *l, int64_t step, tpd_group g);
/* tpd_hspan_find: s's item of path, or NULL; hint is where it is when the
 * two sides list the same paths in the same order. */
const tpd_item *tpd_hspan_find(tpd_hspan s, size_t hint, const char *path);

/* tpd_health_moved: whether each step that the agent did not measure (no
 * update norm: --every N) moved its optimizer's parameters, from their
 * digests in the snapshots around it (moved.c). */
void tpd_health_moved(tpd_hctx *x);

/* tpd_hctx_found records the first failure: at row (nrows: none), step,
 * path (verdict.c). */
void tpd_hctx_found(tpd_hctx *x, size_t row, int64_t step, const char *path);

/* tpd_hctx_row_of is the row opened by the pre event of seq, or NULL
 * (telemetry.c). */
tpd_hrow *tpd_hctx_row_of(tpd_hctx *x, uint64_t seq);

/* tpd_health_cover runs the optimizer coverage checks (optcover.c); true when
 * one failed (x->found). */
bool tpd_health_cover(tpd_hctx *x);

/* tpd_health_cover_at: optimizer opt's last cover event before event seq,
 * or NULL (optcover.c). */
const tpd_cover *tpd_health_cover_at(const tpd_hctx *x, int64_t opt, uint64_t seq);

/* tpd_health_amp_scan marks each row's GradScaler misuse (amp.c). */
void tpd_health_amp_scan(tpd_hctx *x);
/* tpd_health_amp_step reports row i's misuse; true when it had one. */
bool tpd_health_amp_step(tpd_hctx *x, size_t i);
/* tpd_health_amp_skipped: more than x->max_skipped of the steps after the
 * first run of skipped ones were skipped by a GradScaler; true when so. */
bool tpd_health_amp_skipped(tpd_hctx *x);

/* bounds.c: the run's declared expectations.  tpd_health_bounds_parse
 * reads them from the run's params (par: a struct tpd_params) into x;
 * tpd_health_bounds_step checks row i (true: a failure, x->found);
 * tpd_health_bounds_run checks the run as a whole after the steps. */
struct tpd_params;
void tpd_health_bounds_parse(tpd_hctx *x, const struct tpd_params *par);
bool tpd_health_bounds_step(tpd_hctx *x, size_t i);
bool tpd_health_bounds_run(tpd_hctx *x);
/* For report.c: tpd_health_bounds_shown says whether row i is in the text
 * table of a run without a failure (--every N: the steps that are multiples
 * of N); _checks appends the declared checks to the "checks" line; _head
 * the lines under the outcome; _json sets the fields of the "bounds"
 * object o (false when out of memory). */
bool tpd_health_bounds_shown(const tpd_hctx *x, size_t i);
void tpd_health_bounds_checks(const tpd_hctx *x, tpd_str *t);
void tpd_health_bounds_head(const tpd_hctx *x, tpd_str *t);
bool tpd_health_bounds_json(const tpd_hctx *x, json_t *o);

/* ranks.c: the other ranks of a multi-rank run against the trainer.
 * tpd_health_ranks_scan finds which processes are replicas of it;
 * tpd_health_ranks_step compares them at row i's step (true: one drifted,
 * x->found). */
void tpd_health_ranks_scan(tpd_hctx *x);
bool tpd_health_ranks_step(tpd_hctx *x, size_t i);

/* tpd_hctx_rows builds x->rows from x->p (telemetry.c).  Errors: TP_ENOMEM. */
tp_err tpd_hctx_rows(tpd_hctx *x);

/* tpd_hrow_skipped: the step moved nothing, by a GradScaler's decision or
 * because no parameter changed. */
bool tpd_hrow_skipped(const tpd_hrow *w);

/* tpd_hrow_lrs_zero: every param group's learning rate was 0 (telemetry.c). */
bool tpd_hrow_lrs_zero(const tpd_hrow *w);

/* tpd_health_cover_first: cover event i is its optimizer's first (optcover.c). */
bool tpd_health_cover_first(const tpd_hctx *x, size_t i);

/* tpd_hjson_num is v as the health report writes a number: null when not
 * has, the string "nan", "inf" or "-inf" when v is not finite (JSON has no
 * such number), else a real; NULL when out of memory (report.c). */
json_t *tpd_hjson_num(bool has, double v);

/* tpd_hctx_finish writes the report of outcome oc into *out (report.c).
 * Errors: TP_ENOMEM (then *out is cleared). */
tp_err tpd_hctx_finish(tpd_hctx *x, tpd_outcome oc, tpd_result *out);

#endif
