/* SPDX-License-Identifier: MIT
 * ctx.h -- what the golden-run verdict's parts share: the judging context
 * of one compare run (verdict.c: preconditions, the comparisons, the
 * report); the comparisons themselves and the explanation of a FAIL are
 * pair.h's.  Internal to the compare verdict. */
#ifndef TP_DAEMON_CHECKS_COMPARE_CTX_H
#define TP_DAEMON_CHECKS_COMPARE_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/compare/pair.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

typedef struct tpd_gctx {
    const tpd_run *run;    /* the compare run */
    const tpd_run *golden; /* the golden run, NULL when it could not be read */
    const tpd_cmp_opts *o;
    bool once; /* D was not run: determinism not checked */
    const tpd_exec *G, *C, *D;
    const tpd_proc *pg, *pc, *pd;
    tpd_gpair gc, cd; /* C against G, D against C */
    tpd_str head;     /* lines under the outcome */
    tpd_why why;      /* the explanation */
} tpd_gctx;

#endif
