/* SPDX-License-Identifier: MIT
 * accum_win.h -- a process's optimizer updates as accumulation windows: what
 * happened between one optimizer step and the next (backward calls and the
 * losses they backpropagated, scheduler steps, clipping, GradScaler
 * unscales, DataLoader samples), built from its marks in emission order. */
#ifndef TP_DAEMON_ACCUM_WIN_H
#define TP_DAEMON_ACCUM_WIN_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/obs.h"

#define TPD_AWIN_MEANS 16 /* element counts kept per window */

/* One update: the marks after the previous optimizer step, up to and
 * including this one's post phase (the tail: those after the last step). */
typedef struct tpd_awin {
    int nbwd;        /* backward calls */
    double loss;     /* the sum of their losses */
    bool loss_known; /* every backward said its loss */
    int nmean;       /* backward calls that said mean_over (first TPD_AWIN_MEANS kept) */
    int64_t mean_over[TPD_AWIN_MEANS];
    double losses[TPD_AWIN_MEANS]; /* the first backward losses */
    int nsched;                    /* scheduler steps */
    int nclip;                     /* clip_grad_norm_/_value_ calls */
    bool clip_active;              /* a clip saw a norm above its max */
    double clip_max, clip_norm;    /* of the first active clip, else the last */
    int nunscale;                  /* GradScaler.unscale_ calls (explicit or by its step) */
    bool has_lr;
    double lr;       /* group 0's learning rate at the step */
    bool skipped;    /* the step was skipped (GradScaler found inf) */
    int64_t samples; /* DataLoader samples (-1: a batch without a size, or none) */
    int nbatches;
} tpd_awin;

typedef struct tpd_awins {
    tpd_awin *v; /* completed updates, in order */
    size_t n;
    tpd_awin tail; /* after the last optimizer step */
} tpd_awins;

/* tpd_awins_build builds p's windows from p->marks, counting the steps of
 * optimizer 0 only; memory from a.  Errors: TP_ENOMEM. */
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
 * nbwd backward calls in this one (within 1e-3 relative).  Pure. */
tpd_ratio_cause tpd_ratio_cause_of(double k, int64_t N, int nbwd);

/* tpd_mean_of_means is true when the micro-batch losses l[0..n) with element
 * counts t[0..n) are unequal-count means whose element-weighted average,
 * scaled by n (undoing a division by the micro-batches), is the full-batch
 * loss full within rtol/atol: a mean of per-micro-batch means.  Pure. */
bool tpd_mean_of_means(const double *l, const int64_t *t, int n, double full, double rtol,
                       double atol);

#endif
