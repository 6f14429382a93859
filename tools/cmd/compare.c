/* SPDX-License-Identifier: MIT
 * compare.c -- trainparity-run compare: golden-run regression.
 *
 * The golden run is a run stored by `trainparity-run record` (named with
 * --name, or given by id).  CMD runs twice, each time a fresh process under
 * the agent (executions C and D; with --once, D only when C alone FAILs,
 * which the daemon's verdict asks for), and the daemon compares
 * C with the golden run's execution step by step from step 0, and C with D
 * to tell a regression from a script that differs from itself
 * (daemon/checks/compare/verdict.c).  The golden run is resolved before
 * anything runs: a name or id that names no run is a usage error (64), a
 * run that is not a record run an ERROR (3).
 *
 * C and D digest the model and optimizer state at boundaries only
 * (--digest induction, the default; docs/induction.md), the golden run
 * every tensor at every step.  The golden run's last step is made one of
 * their boundaries: a script whose model and optimizer are gone by its exit
 * then still has its state compared at the end without a rerun.  When the
 * daemon finds a divergence after a light step, the state may have
 * diverged unseen before it: C (and D when C and D differ) rerun as C2 (D2)
 * with every tensor digested over those steps, and the run is judged
 * again.
 *
 * What each execution saved is moved aside after it (into
 * .trainparity/runs/<run>/<role>/, as resume's baselines), so that the
 * next one trains from scratch even when the script resumes on its own
 * from a checkpoint it finds. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/params.h"
#include "tools/base/cli.h"
#include "tools/cmd/cmds.h"
#include "tools/client/ctl.h"
#include "tools/cmd/verdict.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/base/opts.h"
#include "tools/exec/session.h"
#include "tools/exec/setaside.h"
#include "tools/exec/tree.h"

static const char *against_s, *once_s, *digest_s;

static const tpt_optx extra[] = {
    {"against", "NAME|RUN_ID",
     "the golden run: the latest run recorded with --name NAME, or the run RUN_ID "
     "(required)",
     &against_s},
    {"once", NULL,
     "run CMD once, and a second time only when it differs from the golden run (to tell "
     "a regression from a script that differs from itself): a PASS in half the time, "
     "its determinism not checked",
     &once_s},
    {"digest", "MODE",
     "induction (default): C and D digest the model and optimizer state at boundaries and "
     "are rerun with every tensor digested where a divergence needs it; full: every tensor at "
     "every step",
     &digest_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "compare",
    "--against NAME|RUN_ID [options] -- CMD...",
    "Golden-run regression: runs CMD twice (C, D), each in a fresh process under\n"
    "the agent, and compares C step by step with a run stored by\n"
    "'trainparity-run record' (the golden run, G) from step 0: data, model,\n"
    "optimizer, scheduler, scaler, rng, loss and gradients, exact unless\n"
    "--rtol/--atol declare a tolerance.  PASS (0) when the trajectories match,\n"
    "FAIL (1) with the first divergence, ABSTAIN (2) when C and D already differ\n"
    "at or before it (or a tolerance cannot be justified from statistics),\n"
    "ERROR (3) when an execution fails or the golden run is not a whole record\n"
    "run, 64 when NAME|RUN_ID names no run.  C and D digest the model and\n"
    "optimizer state at boundaries only (--digest induction); a divergence found\n"
    "after a step they did not digest is narrowed by rerunning C (and D) as C2\n"
    "(D2) with every tensor digested over those steps.",
    TPT_O_NAME | TPT_O_CAPTURE | TPT_O_JSON | TPT_O_JUNIT | TPT_O_HTML | TPT_O_RTOL | TPT_O_ATOL |
        TPT_O_CMD | TPT_O_LISTEN,
    extra,
};

/* numeric: s is a run id (digits only); a name that is all digits is read
 * as an id. */
static bool numeric(const char *s, int64_t *id)
{
    char *end;
    long long v;
    if (s[0] < '0' || s[0] > '9') return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *id = v;
    return true;
}

/* resolve finds the golden run that against names.  Returns -1 with *g
 * filled, or the exit status after saying why on stderr. */
static int resolve(tpt_session *s, const char *against, tpt_run_info *g)
{
    char err[TPT_ERR_LEN];
    int64_t id = 0;
    bool by_id = numeric(against, &id);
    if (tpt_run_find(tpt_session_client(s), id, by_id ? NULL : against, by_id ? NULL : "record", g,
                     err) != TP_OK) {
        tpt_error("compare: cannot look the golden run up: %s", err);
        return TPT_EXIT_ERROR;
    }
    if (!g->found) {
        if (by_id)
            tpt_error("compare: --against %s: there is no run %s", against, against);
        else
            tpt_error("compare: --against %s: no run was recorded under that name (store one "
                      "with '%s record --name %s -- CMD')",
                      against, TPT_PROG, against);
        return TPT_EXIT_USAGE;
    }
    if (strcmp(g->check, "record") != 0) {
        tpt_error("compare: run %lld is a '%s' run, not one 'trainparity-run record' stored: "
                  "it has no single execution to compare with",
                  (long long)g->run, g->check);
        return TPT_EXIT_ERROR;
    }
    return -1;
}

/* params_json is the run's params (daemon/checks/compare/verdict.h) as JSON,
 * malloc'ed; NULL when out of memory. */
static char *params_json(const tpt_opts *o, int64_t against, bool once, const char *digest)
{
    json_t *p = json_pack("{s:I, s:s, s:b, s:s, s:b, s:f, s:f}", TPP_KEY(TPP_compare_against),
                          (json_int_t)against, TPP_KEY(TPP_compare_capture), o->capture,
                          TPP_KEY(TPP_compare_once), once, TPP_KEY(TPP_compare_digest), digest,
                          TPP_KEY(TPP_compare_tolerance), o->rtol_set || o->atol_set,
                          TPP_KEY(TPP_compare_rtol), o->rtol, TPP_KEY(TPP_compare_atol), o->atol);
    char *s = p != NULL ? json_dumps(p, JSON_PRESERVE_ORDER) : NULL;
    json_decref(p);
    return s;
}

/* golden_steps is how many optimizer steps the golden run's trainer made,
 * from the stored run (query run: its execution's processes, each with its
 * count of step events, a pre and a post per optimizer step); -1 when that
 * cannot be read. */
static int64_t golden_steps(tpt_session *s, int64_t golden)
{
    char err[TPT_ERR_LEN], *text = NULL;
    json_t *j, *e, *p;
    size_t i, k;
    int64_t best = -1;
    if (tpt_query_json(tpt_session_client(s), "run", golden, &text, err) != TP_OK) return -1;
    j = json_loads(text, 0, NULL);
    free(text);
    json_array_foreach(json_object_get(j, "executions"), i, e)
    {
        json_array_foreach(json_object_get(e, "processes"), k, p)
        {
            json_t *n = json_object_get(json_object_get(p, "kinds"), "step");
            if (json_is_integer(n) && json_integer_value(n) / 2 > best)
                best = json_integer_value(n) / 2;
        }
    }
    json_decref(j);
    return best;
}

/* run_one runs CMD as execution role, then moves what it saved aside
 * (tpt_session_aside; tool: the working directory when the check started).
 * Returns 0 when it ran (whatever its status) and was recorded whole. */
static int run_one(tpt_session *s, int64_t run, const char *role, char **cmd, char **env,
                   const tpt_snapshot *tool)
{
    char err[TPT_ERR_LEN];
    tpt_snapshot before = {{0, 0}, NULL, 0, false};
    tpt_exec_spec es = {role, cmd, env, 0};
    tpt_exec_result res;
    bool ran, asided = false;
    if (tpt_snapshot_take(&before, err) != TP_OK) {
        tpt_error("%s", err);
        return -1;
    }
    ran = tpt_exec_one(s, "compare", run, &es, &res) == 0;
    if (ran || tpt_exec_cut(&res))
        asided = tpt_session_aside(s, "compare", run, role, res.exec, tool, &before) == 0;
    tpt_snapshot_free(&before);
    return ran && asided ? 0 : -1;
}

/* narrow runs the reruns the verdict v asks for (docs/induction.md): C
 * again as C2, and D as D2 when v->narrow_b, every tensor digested from
 * step narrow_from to narrow_to (the setting written to full, FULL_LEN
 * bytes).  Returns 0 when they ran. */
#define FULL_LEN 96
static int narrow(tpt_session *s, int64_t run, const tpt_opts *o, char **env,
                  const tpt_verdict_info *v, const tpt_snapshot *tool, char *full)
{
    /* the window replaces the golden run's last step as a boundary: that
     * one anchors a PASS, and a narrowing follows a divergence */
    char *renv[] = {env[0], env[1], full, NULL};
    tpt_progress("compare",
                 "the first divergence lies after a light step: rerunning %s with every tensor "
                 "digested at steps %lld to %lld",
                 v->narrow_b ? "C and D" : "C", (long long)v->narrow_from, (long long)v->narrow_to);
    snprintf(full, FULL_LEN, "TRAINPARITY_FULL_STEPS=%lld-%lld", (long long)v->narrow_from,
             (long long)v->narrow_to);
    for (int i = 0; i < (v->narrow_b ? 2 : 1); i++)
        if (run_one(s, run, i ? "D2" : "C2", o->cmd, renv, tool) != 0) return -1;
    return 0;
}

int tpt_cmd_compare(int argc, char **argv)
{
    char err[TPT_ERR_LEN], capture[64], digest[64], last[96], full[FULL_LEN], *params = NULL;
    char *env[] = {capture, digest, NULL, NULL};
    char *denv[] = {capture, digest, full, NULL}; /* D after the reruns: their window */
    int64_t gsteps;
    const char *roles[] = {"C", "D"};
    tpt_session *s = NULL;
    tpt_snapshot tool = {{0, 0}, NULL, 0, false};
    tpt_tolerance tol;
    tpt_verdict_info v;
    tpt_run_info g;
    tpt_opts o;
    int64_t run;
    bool d_ran, narrowed = false; /* D ran (always, or --once when C FAILed), reruns ran */
    int rc;
    int st;

    against_s = once_s = digest_s = NULL;
    if ((st = tpt_cmd_opts(&spec, argc, argv, &o)) >= 0) return st;
    if (against_s == NULL || against_s[0] == '\0') {
        tpt_error("compare: --against NAME|RUN_ID is required");
        fprintf(stderr, "(see '%s compare --help')\n", TPT_PROG);
        return TPT_EXIT_USAGE;
    }
    if (digest_s != NULL && strcmp(digest_s, "induction") != 0 && strcmp(digest_s, "full") != 0) {
        tpt_error("compare: --digest wants induction or full, not '%s'", digest_s);
        return TPT_EXIT_USAGE;
    }
    snprintf(capture, sizeof capture, "TRAINPARITY_CAPTURE=%s", o.capture);
    snprintf(digest, sizeof digest, "TRAINPARITY_DIGEST=%s",
             digest_s != NULL ? digest_s : "induction");
    /* taken before anything runs: nothing that existed then (the file
     * stdout is redirected to, an earlier run's checkpoint) is moved */
    if (tpt_snapshot_take(&tool, err) != TP_OK || tpt_session_open(&s, err) != TP_OK) {
        tpt_error("%s", err);
        tpt_snapshot_free(&tool);
        return TPT_EXIT_ERROR;
    }
    if ((st = resolve(s, against_s, &g)) >= 0) goto done;
    st = TPT_EXIT_ERROR;
    if ((params = params_json(&o, g.run, once_s != NULL,
                              digest_s != NULL ? digest_s : "induction")) == NULL) {
        tpt_error("compare: out of memory");
        goto done;
    }
    if (tpt_run_create(tpt_session_client(s), o.name, "compare", params, &run, err) != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        goto done;
    }
    tpt_progress("compare", "run %lld, against run %lld%s%s", (long long)run, (long long)g.run,
                 g.name[0] ? " " : "", g.name);
    if ((gsteps = golden_steps(s, g.run)) > 0) {
        snprintf(last, sizeof last, "TRAINPARITY_FULL_STEPS=%lld-%lld", (long long)gsteps - 1,
                 (long long)gsteps - 1);
        env[2] = last;
    }
    d_ran = once_s == NULL;
    for (int i = 0; i < (d_ran ? 2 : 1); i++)
        if (run_one(s, run, roles[i], o.cmd, env, &tool) != 0) goto done;
    tol.declared = o.rtol_set || o.atol_set;
    tol.rtol = o.rtol;
    tol.atol = o.atol;
    /* Ask for the verdict until it asks for nothing more: a narrowing (once),
     * or, with --once, D when C alone FAILs, every tensor digested over C2's
     * window if the reruns ran */
    for (;;) {
        if (tpt_plan(tpt_session_client(s), run, &tol, &v) != 0) goto done;
        if (v.second && !d_ran) {
            d_ran = true;
            tpt_verdict_info_free(&v);
            tpt_progress("compare", "C differs from the golden run: running D (--once), to "
                                    "tell a regression from a script that differs from itself");
            if (run_one(s, run, "D", o.cmd, narrowed ? denv : env, &tool) != 0) goto done;
            continue;
        }
        if (!v.narrow || narrowed) break;
        narrowed = true;
        rc = narrow(s, run, &o, env, &v, &tool, full);
        tpt_verdict_info_free(&v);
        if (rc != 0) goto done;
    }
    st = tpt_report_planned(tpt_session_client(s), run, &v, &tol, &o);
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    tpt_snapshot_free(&tool);
    free(params);
    return st;
}
