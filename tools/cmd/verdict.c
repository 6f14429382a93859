/* SPDX-License-Identifier: MIT
 * verdict.c -- a run's verdict, printed and written as its reports
 * (verdict.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/base/errbuf.h"
#include "tools/cmd/verdict.h"
#include "tools/report/html.h"
#include "tools/report/junit.h"

/* html writes the HTML page, with the run's steps (the "steps" view as JSON)
 * for its plots when the daemon gives them; else the page says why not. */
static int html(tpt_client *c, int64_t run, const tpt_verdict_info *v, const tpt_opts *o)
{
    char err[TPT_ERR_LEN], why[512] = "", *steps = NULL;
    int rc;
    if (c == NULL) {
        snprintf(why, sizeof why, "No plot: no daemon to ask for the steps.");
    } else if (tpt_query_json(c, "steps", run, &steps, err) != TP_OK) {
        snprintf(why, sizeof why, "No plot: the daemon did not give this run's steps (%.400s).",
                 err);
        steps = NULL;
    }
    rc = tpt_html_write(o->html, o, run, v, steps, why);
    free(steps);
    return rc;
}

int tpt_report(tpt_client *c, int64_t run, tpt_verdict_info *vp, const tpt_opts *o)
{
    tpt_verdict_info v = *vp;
    int st;
    printf("run %lld\n%s", (long long)run, v.text ? v.text : "");
    fflush(stdout);
    st = tpt_outcome_status(v.outcome);
    if (o->json != NULL && tpt_write_report(o->json, v.json) != 0) st = TPT_EXIT_ERROR;
    if (o->junit != NULL && tpt_junit_write(o->junit, o, run, &v) != 0) st = TPT_EXIT_ERROR;
    if (o->html != NULL && html(c, run, &v, o) != 0) st = TPT_EXIT_ERROR;
    tpt_verdict_info_free(vp);
    return st;
}

int tpt_plan(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *v)
{
    char err[TPT_ERR_LEN];
    if (tpt_verdict_plan(c, run, tol, v, err) == TP_OK) return 0;
    tpt_error("cannot judge run %lld: %s", (long long)run, err);
    return -1;
}

int tpt_report_planned(tpt_client *c, int64_t run, tpt_verdict_info *v, const tpt_tolerance *tol,
                       const tpt_opts *o)
{
    if (!v->narrow && !v->second) return tpt_report(c, run, v, o);
    tpt_verdict_info_free(v);
    return tpt_judge(c, run, tol, o);
}

int tpt_judge(tpt_client *c, int64_t run, const tpt_tolerance *tol, const tpt_opts *o)
{
    tpt_verdict_info v;
    char err[TPT_ERR_LEN];
    memset(&v, 0, sizeof v);
    if (tpt_verdict(c, run, tol, &v, err) != TP_OK) {
        tpt_error("cannot judge run %lld: %s", (long long)run, err);
        tpt_verdict_info_free(&v);
        return TPT_EXIT_ERROR;
    }
    return tpt_report(c, run, &v, o);
}
