/* SPDX-License-Identifier: MIT
 * windows.h -- a process's optimizer updates as accumulation windows: what
 * happened between one optimizer step and the next (backward calls and the
 * losses they backpropagated, scheduler steps, clipping, GradScaler
 * unscales, zero_grad calls, DataLoader samples), built from its marks in
 * emission order. */
#ifndef TP_DAEMON_CHECKS_ACCUM_WINDOWS_H
#define TP_DAEMON_CHECKS_ACCUM_WINDOWS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

#define TPD_AWIN_MEANS 16 /* element counts kept per window */

/* One update: the marks after the previous optimizer step, up to and
 * including this one's post phase (the tail: those after the last step). */
typedef struct tpd_awin {
    int nbwd;        /* backward calls */
    double loss;     /* the sum of their losses */
    bool loss_known; /* every backward said its loss */
    int nmean;       /* backward calls that said mean_over (first TPD_AWIN_MEANS kept) */
    int64_t mean_over[TPD_AWIN_MEANS];
    int64_t mean_total;            /* the sum of all the counts said */
    double losses[TPD_AWIN_MEANS]; /* the first backward losses */
    int nsched;                    /* scheduler steps */
    int nclip;                     /* clip_grad_norm_/_value_ calls */
    bool clip_active;              /* a clip saw a norm above its max */
    double clip_max, clip_norm;    /* of the first active clip, else the last */
    int nunscale;                  /* GradScaler.unscale_ calls (explicit or by its step) */
    bool has_scale;
    double scale; /* the GradScaler's scale of the last GradScaler.scale call */
    bool has_lr;
    double lr;       /* group 0's learning rate at the step */
    bool skipped;    /* the step was skipped (GradScaler found inf) */
    int64_t samples; /* DataLoader samples (-1: a batch without a size, or none) */
    int nbatches;
    int nzero;                /* zero_grad calls (optimizer 0's, or a module's) */
    int nzero_lead;           /* those before the first backward */
    const char *zero_last;    /* "optimizer" or "module": the latest zero_grad
                               * since the last backward; NULL when none */
    const char *zero_at_step; /* zero_last as the step began: a zero_grad
                               * between the last backward and the step */
} tpd_awin;

typedef struct tpd_awins {
    tpd_awin *v; /* completed updates, in order */
    size_t n;
    tpd_awin tail; /* after the last optimizer step */
    int nzero;     /* zero_grad calls in the whole process: 0 when none were
                    * made or the agent does not report them */
} tpd_awins;

/* tpd_awins_build builds p's windows from p->marks, counting the steps and
 * zero_grad calls of optimizer 0 only (and modules' zero_grad calls);
 * memory from a.  Errors: TP_ENOMEM. */
tp_err tpd_awins_build(tpd_arena *a, const tpd_proc *p, tpd_awins *out);

/* What a ratio of micro-batch to full-batch quantities (loss sums,
 * gradients) points at. */
typedef enum tpd_ratio_cause {
    TPD_RC_NONE = 0,    /* no recognised factor */
    TPD_RC_NOT_DIVIDED, /* k = N: the losses were not divided by N */
    TPD_RC_TWICE,       /* k = 1/N: divided by N twice */
    TPD_RC_PARTIAL,     /* k = nbwd/N with nbwd < N: an incomplete window divided by N */
} tpd_ratio_cause;

/* tpd_ratio_cause_of classifies ratio k for N micro-batches per update and
 * nbwd backward calls in this one (within 1e-3 relative).  An update of
 * one micro-batch at 1/N is an incomplete window divided by N once (twice
 * would give 1/N^2), not TPD_RC_TWICE.  Pure. */
tpd_ratio_cause tpd_ratio_cause_of(double k, int64_t N, int nbwd);

/* tpd_awin_counts says how much data micro-batch window m and the
 * reference's window f took, in the same unit: *unit "samples" when both
 * drew DataLoader batches with a size, else "elements" when every backward
 * of both said the element count of its mean-reduced loss; *have is m's,
 * *want f's.  False when the two cannot be counted alike.  Pure. */
bool tpd_awin_counts(const tpd_awin *m, const tpd_awin *f, int64_t *have, int64_t *want,
                     const char **unit);

/* tpd_missing_micro: a window of nbwd equal micro-batches holding have
 * (samples, elements) where the reference's holds want covers want / (have
 * / nbwd) micro-batches' worth; the number missing from it, or 0 when
 * have >= want or want is not a whole number of such micro-batches.  Pure. */
int tpd_missing_micro(int nbwd, int64_t have, int64_t want);

/* tpd_near_factor: k is t within 1e-3 relative.  Pure. */
bool tpd_near_factor(double k, double t);

/* tpd_mean_of_means is true when the micro-batch losses l[0..n) with element
 * counts t[0..n) are unequal-count means whose element-weighted average,
 * scaled by n (undoing a division by the micro-batches), is the full-batch
 * loss full within rtol/atol: a mean of per-micro-batch means.  Pure. */
bool tpd_mean_of_means(const double *l, const int64_t *t, int n, double full, double rtol,
                       double atol);

#endif
