/* SPDX-License-Identifier: MIT
 * ctx.h -- what the resume verdict's parts share: the judging context
 * of one run (verdict.c: preconditions, comparison, the report) and
 * the explanation of a FAIL (why.c).  Internal to the resume verdict. */
#ifndef TP_DAEMON_CHECKS_RESUME_CTX_H
#define TP_DAEMON_CHECKS_RESUME_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/checks/resume/stream.h"
#include "daemon/checks/trust.h"
#include "daemon/obs/obs.h"

typedef struct tpd_rctx {
    const tpd_run *run;
    const tpd_cmp_opts *o;
    const tpd_exec *A, *B, *I, *R;
    const tpd_proc *pa, *pb, *pi, *pr;
    bool once;              /* B was not run (--once): the baselines not compared */
    const tpd_ckpt *armed;  /* I's save that armed the interruption */
    const tpd_ckpt *loaded; /* R's first load of one of I's checkpoints */
    const tpd_ckpt *saved;  /* the save of I's that it matches */
    int64_t c;              /* the step of that save, in A's numbering */
    int64_t r0;             /* R's step at the load */
    /* the optimizer steps A and R trained from the aligned point (A from c,
     * R from r0); when they differ, and nothing diverged within the steps
     * both trained, the number of steps is the first divergence (steps
     * holds its two values, TPD_STEPS_PATH) */
    int64_t na, nr;
    tpd_item steps[2];
    int64_t steps_from[2]; /* the aligned steps the counts start from */
    tpd_str head;          /* lines under the outcome */
    tpd_why why;           /* the explanation */
    /* the training data streams' first divergences, A-B and A-R */
    tpd_stream_div sab, sra;
    /* induction (induction.c): the first baselines, when reruns (A2, B2)
     * stand in for them; a narrowing asked for; steps that stayed light */
    const tpd_proc *pa0, *pb0, *pr0;
    bool narrow, narrow_b, narrow_r, unseen;
    int64_t narrow_from, narrow_to, narrow_r_from, narrow_r_to, unseen_from, unseen_to;
    /* a PASS's anchors (tpd_resume_anchors): the last step, in A's
     * numbering, at which both runs' model and optimizer state was compared
     * (-1: none), and the step after the last both trained */
    int64_t state_last, state_end;
    /* a save after the aligned point whose content differs (saves.c): A's,
     * B's of the same file (NULL: none), and the divergence's path */
    const tpd_ckpt *save_a, *save_b;
    char save_path[512];
} tpd_rctx;

/* tpd_resume_locate decides whether cmp's first divergence (or first
 * unsure item) between A (from a0) and other (from b0; B when vs_b, else
 * R) is where a run digesting every tensor at every step would find it:
 * when a step up to it was light, the state may have diverged there
 * unseen, and x asks for a narrowing (the baselines rerun with full digests
 * over those steps) or, when the reruns ran already, notes the steps that
 * are still unseen (induction.c). */
void tpd_resume_locate(tpd_rctx *x, const tpd_cmp_result *cmp, int64_t a0, const tpd_items *other,
                       int64_t b0, bool vs_b);

/* tpd_resume_anchors checks, for a comparison that found no divergence,
 * what the induction rests on: A's state at the aligned step was digested
 * (else x asks to narrow that step), and where the state was last compared
 * on both sides (x->state_last; an end without it is said in the report). */
void tpd_resume_anchors(tpd_rctx *x);

/* tpd_resume_induction_text adds the report's lines on the digest mode to
 * x->head (nothing for a run that digested every tensor at every step). */
void tpd_resume_induction_text(tpd_rctx *x);

/* tpd_resume_induction_json is the report's evidence.induction: JSON null
 * for a run without light steps; NULL when an allocation failed. */
json_t *tpd_resume_induction_json(const tpd_rctx *x);

/* tpd_resume_explain adds to x->why what the evidence says of R's first
 * divergence from A, cmp->first: the state R had after loading against I's
 * when it saved, where each restore's content came from, what the
 * checkpoint holds, the RNGs and the data position (why.c). */
void tpd_resume_explain(tpd_rctx *x, const tpd_cmp_result *cmp);

/* tpd_resume_after_load_json is the report's evidence.state_after_load
 * (docs/report-schema.md): per component group, model to rng, whether R's
 * state at its first step after the load equals I's at the aligned point,
 * how many components were compared and differ, a few that do, and how R
 * restored the group after the load (why.c).  JSON null when R loaded none
 * of I's checkpoints; NULL when an allocation failed. */
json_t *tpd_resume_after_load_json(tpd_rctx *x);

/* tpd_resume_explain_modules adds a line for each module no optimizer
 * trains (module[<name>]) whose state R had after loading differs from
 * I's when it saved: the checkpoint does not hold it, R never loaded it,
 * or loaded another state (modules.c).  True when it added one. */
bool tpd_resume_explain_modules(tpd_rctx *x);

/* tpd_resume_explain_data explains a first divergence in the training data
 * (x->sra): whether R's sample there is one A had already trained on in the
 * same epoch (R repeats samples: its place was lost) or not (the order may
 * differ where the place was right), with the ids (data.c). */
void tpd_resume_explain_data(tpd_rctx *x);

/* tpd_resume_saves finds, when R matched A at every step, the first save
 * of A's after the aligned point whose entries differ from R's save of the
 * same file at the same step, where B's save agrees with A's (saves.c):
 * state no snapshot digests.  It fills d (group other, path
 * file[<name>].<entry>) and returns true; false when every such save
 * matched.  tpd_resume_explain_save says what it found. */
bool tpd_resume_saves(tpd_rctx *x, tpd_div *d);
void tpd_resume_explain_save(tpd_rctx *x, const tpd_div *d);

/* Shared by why.c and modules.c:
 * tpd_resume_from_checkpoint reports whether restore r put back content of
 * one of I's files in the window (a restore without a manifest, from an
 * agent that sent none, counts as one);
 * tpd_resume_reference picks what I had at the aligned point: its
 * start-of-step snapshot of step c when it exists (*same_point), else its
 * snapshot at the save;
 * tpd_resume_manifest_has reports whether one of I's checkpoint files in
 * the window holds a leaf whose path ends with key and, when v is given,
 * whose digest equals v's;
 * tpd_resume_within is the part of a component path after its root, as a
 * checkpoint keys it. */
bool tpd_resume_from_checkpoint(const tpd_rctx *x, const tpd_restore *r);
const tpd_items *tpd_resume_reference(const tpd_rctx *x, int64_t *step, bool *same_point);
bool tpd_resume_manifest_has(const tpd_rctx *x, const tpd_val *v, const char *key);
const char *tpd_resume_within(const char *path, tpd_group g);

/* tpd_resume_base is the file name of path, or "a buffer" for NULL. */
const char *tpd_resume_base(const char *path);

#endif
