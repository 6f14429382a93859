/* SPDX-License-Identifier: MIT
 * judge.c -- the check table: every check the daemon judges, one row each,
 * and the dispatch from a run's check to its row.  The only file outside
 * checks/<check>/ that names a check: adding one is its folder and a row
 * here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/accum/verdict.h"
#include "daemon/checks/params.h"
#include "daemon/checks/coverage/verdict.h"
#include "daemon/checks/compare/verdict.h"
#include "daemon/checks/health/verdict.h"
#include "daemon/checks/judge.h"
#include "daemon/checks/resume/verdict.h"
#include "daemon/obs/bgload.h"
#include "daemon/obs/obs.h"
#include "daemon/obs/values.h"
#include "daemon/store/rows.h"

typedef tp_err (*engine_fn)(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);
typedef tp_err (*evidence_fn)(const tpd_run *r, char **out, char *why, size_t whylen);
/* A check that judges its run against another stored run (compare: a
 * golden run) names that run from its own (against_fn: its id, -1 for
 * none); judge loads it beside the run for pair_fn, or passes NULL and the
 * reason it could not.  Where the run holds its state at a few steps only
 * (light_fn, from the run's row), the other is loaded after it instead,
 * leaving out what drop_fn says the verdict does not compare. */
typedef int64_t (*against_fn)(const tpd_run *r);
typedef bool (*light_fn)(const tpd_run *r);
typedef int64_t *(*drop_fn)(const tpd_run *r, size_t *n);
typedef tp_err (*pair_fn)(const tpd_run *r, const tpd_run *ref, const char *refwhy,
                          const tpd_cmp_opts *o, tpd_result *out);

/* The params that hold the tolerance a run's command declared (--rtol,
 * --atol), which trainparity-run puts in its verdict request too: whether
 * one was declared, and its two bounds. */
typedef struct declared {
    tp_param tolerance, rtol, atol;
} declared;

static const declared resume_tol = {TPP_resume_tolerance, TPP_resume_rtol, TPP_resume_atol};
static const declared compare_tol = {TPP_compare_tolerance, TPP_compare_rtol, TPP_compare_atol};

/* A check: its name (the run's check, trainparity-run's subcommand), its
 * verdict engine (fn; or against and pair, for a check that judges its run
 * against another), its evidence file (control command "<check>.evidence")
 * or NULL, and the params of a declared tolerance or NULL (a check that
 * reads its own, as accum does, or has none). */
static const struct engine {
    const char *check;
    engine_fn fn;
    evidence_fn evidence;
    against_fn against;
    pair_fn pair;
    light_fn light;
    drop_fn drop;
    const declared *tol;
} engines[] = {
    {"resume", tpd_verdict_resume, NULL, NULL, NULL, NULL, NULL, &resume_tol},
    {"accum", tpd_verdict_accum, NULL, NULL, NULL, NULL, NULL, NULL},
    {"coverage", tpd_verdict_coverage, tpd_coverage_evidence, NULL, NULL, NULL, NULL, NULL},
    {"health", tpd_verdict_health, NULL, NULL, NULL, NULL, NULL, NULL},
    {"compare", NULL, NULL, tpd_golden_against, tpd_verdict_compare, tpd_golden_light,
     tpd_golden_drop, &compare_tol},
};

static const struct engine *find(const char *check)
{
    for (size_t i = 0; check && i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(check, engines[i].check) == 0) return &engines[i];
    return NULL;
}

/* What a run's row alone says of the run it is judged against. */
typedef struct early {
    int64_t id; /* its id, -1 for none */
    bool after; /* better loaded after the run (light_fn) */
} early;

/* on_row names, from a run's row alone, the run it is judged against:
 * its check's against_fn and light_fn over its parameters. */
static tp_err on_row(void *arg, const tpd_run_row *row)
{
    const struct engine *e = find(row->check);
    early *x = arg;
    tpd_run stub;
    memset(&stub, 0, sizeof stub);
    stub.check = row->check;
    stub.params = row->params;
    x->id = e && e->against ? e->against(&stub) : -1;
    x->after = e && e->light && e->light(&stub);
    return TP_OK;
}

/* against_early is the run that run is judged against, from its row, before
 * run is loaded, so that the two can load at once: -1 for none, when the
 * row cannot be read (the run's own load then says why), or when that run
 * is better loaded after it. */
static int64_t against_early(tpd_store *s, int64_t run)
{
    early x = {-1, false};
    if (tpd_rows_run(s, run, on_row, &x, NULL, 0) != TP_OK || x.after) return -1;
    return x.id;
}

/* pair loads the run r is judged against (e->against), leaving out what
 * e->drop says, or takes it from bg when bg loaded that run, and runs
 * e->pair; a run that cannot be loaded is the engine's to report (an ERROR
 * verdict), except for want of memory. */
static tp_err pair(tpd_store *s, const struct engine *e, const tpd_run *r, const tpd_cmp_opts *o,
                   tpd_bgload *bg, tpd_result *out)
{
    char why[512] = "";
    int64_t id = e->against(r);
    tpd_run *ref = NULL;
    tp_err err = TP_OK;
    bool got = id >= 0 && bg->started && bg->run == id &&
               tpd_bgload_finish(bg, &ref, &err, why, sizeof why);
    if (id >= 0 && !got) {
        tpd_obs_keep keep = {NULL, 0};
        int64_t *drop = e->drop ? e->drop(r, &keep.ndrop) : NULL;
        keep.drop = drop;
        err = tpd_obs_load_keeping(s, id, &keep, &ref, why, sizeof why);
        free(drop);
    }
    if (id >= 0 && err == TP_OK) err = tpd_values_locate(ref, tpd_store_path(s));
    if (err == TP_ENOMEM) {
        tpd_obs_free(ref);
        return err;
    }
    if (err != TP_OK) {
        if (!why[0]) snprintf(why, sizeof why, "%s", tp_strerror(err));
        tpd_obs_free(ref);
        ref = NULL;
    }
    err = e->pair(r, ref, why, o, out);
    tpd_obs_free(ref);
    return err;
}

/* judge is tpd_judge, with the run it is judged against loading on bg
 * when bg started.  again: the run is judged after its check ended, whose
 * wall time the report then does not know (render.h, null). */
static tp_err judge(tpd_store *s, int64_t run, const tpd_cmp_opts *o, bool plan, bool again,
                    tpd_bgload *bg, tpd_result *out, char *why, size_t whylen)
{
    tpd_run *r = NULL;
    tpd_result res;
    tpd_verdict v;
    tpd_cmp_opts with;
    const struct engine *e;
    tp_err err = tpd_obs_load(s, run, &r, why, whylen);
    if (err != TP_OK) return err;
    if (again) r->judged_ns = 0;
    /* engines that compare within a tolerance read captured values */
    if ((err = tpd_values_locate(r, tpd_store_path(s))) != TP_OK) {
        snprintf(why, whylen, "%s", tp_strerror(err));
        tpd_obs_free(r);
        return err;
    }
    if ((e = find(r->check)) == NULL) {
        snprintf(why, whylen, "run %lld is a '%s' run: there is no verdict for it", (long long)run,
                 r->check ? r->check : "?");
        tpd_obs_free(r);
        return TP_EINVAL;
    }
    /* a tolerance judges tensors from their captured values, in r's blob
     * store (a golden run is in the same database, so the same store) */
    with = *o;
    with.values = r;
    err = e->pair ? pair(s, e, r, &with, bg, &res) : e->fn(r, &with, &res);
    if (err != TP_OK) {
        snprintf(why, whylen, "%s", tp_strerror(err));
        tpd_obs_free(r);
        return err;
    }
    if (!tpd_store_readonly(s) && !(plan && (res.narrow || res.second))) {
        int64_t id;
        memset(&v, 0, sizeof v);
        v.run = run;
        v.check_kind = (char *)r->check;
        v.outcome = (char *)tpd_outcome_name(res.outcome);
        v.has_step = res.has_step;
        v.step = res.step;
        v.path = res.path[0] ? res.path : NULL;
        v.report = res.json;
        v.text = res.text;
        err = tpd_store_verdict_insert(s, &v, &id);
        if (err != TP_OK) {
            snprintf(why, whylen, "cannot store the verdict: %s", tpd_store_errmsg(s));
            tpd_result_clear(&res);
            tpd_obs_free(r);
            return err;
        }
    }
    tpd_obs_free(r);
    *out = res;
    return TP_OK;
}

/* judge_with_bg is judge with the run it is judged against loading on a
 * thread of its own, where one can be had. */
static tp_err judge_with_bg(tpd_store *s, int64_t run, const tpd_cmp_opts *o, bool plan, bool again,
                            tpd_result *out, char *why, size_t whylen)
{
    tpd_bgload bg;
    int64_t id = against_early(s, run);
    tp_err err, lrc;
    tpd_run *left = NULL;
    char no[8];
    if (id < 0 || !tpd_bgload_start(&bg, tpd_store_path(s), id)) bg.started = false;
    err = judge(s, run, o, plan, again, &bg, out, why, whylen);
    /* a verdict that ended before it needed the other run */
    if (tpd_bgload_finish(&bg, &left, &lrc, no, sizeof no)) tpd_obs_free(left);
    return err;
}

tp_err tpd_judge(tpd_store *s, int64_t run, const tpd_cmp_opts *o, bool plan, tpd_result *out,
                 char *why, size_t whylen)
{
    return judge_with_bg(s, run, o, plan, false, out, why, whylen);
}

/* on_row_tol reads, from a run's row, the tolerance its params declare
 * into the tpd_cmp_opts at arg (left exact when they declare none). */
static tp_err on_row_tol(void *arg, const tpd_run_row *row)
{
    const struct engine *e = find(row->check);
    tpd_cmp_opts *o = arg;
    tpd_params p;
    tp_err err = TP_OK;
    if (e == NULL || e->tol == NULL) return TP_OK;
    /* params that do not parse read as none: run.create checked them */
    if (tpd_params_parse(&p, row->params, NULL, 0) == TP_ENOMEM) err = TP_ENOMEM;
    if (err == TP_OK && tpd_param_bool(&p, e->tol->tolerance)) {
        o->tolerance = true;
        o->rtol = tpd_param_num(&p, e->tol->rtol);
        o->atol = tpd_param_num(&p, e->tol->atol);
    }
    tpd_params_clear(&p);
    return err;
}

tp_err tpd_judge_again(tpd_store *s, int64_t run, tpd_result *out, char *why, size_t whylen)
{
    tpd_cmp_opts o = {false, 0, 0, NULL};
    tp_err err = tpd_rows_run(s, run, on_row_tol, &o, why, whylen);
    if (err == TP_ENOENT) snprintf(why, whylen, "there is no run %lld", (long long)run);
    if (err == TP_ENOMEM) snprintf(why, whylen, "out of memory");
    if (err != TP_OK) return err;
    return judge_with_bg(s, run, &o, false, true, out, why, whylen);
}

bool tpd_judge_has_evidence(const char *check)
{
    const struct engine *e = find(check);
    return e != NULL && e->evidence != NULL;
}

tp_err tpd_judge_evidence(const char *check, const tpd_run *r, char **out, char *why, size_t whylen)
{
    const struct engine *e = find(check);
    if (e == NULL || e->evidence == NULL) {
        snprintf(why, whylen, "the '%s' check keeps no evidence", check ? check : "?");
        return TP_EINVAL;
    }
    return e->evidence(r, out, why, whylen);
}
