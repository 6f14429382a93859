/* SPDX-License-Identifier: MIT
 * resume.c -- trainparity-run resume: resume parity of an unmodified script.
 *
 * Four executions, each a fresh process under the agent: A and B run the
 * command uninterrupted (what they save is moved aside after each, so a
 * script that resumes on its own trains from scratch every time); I runs it
 * until the first checkpoint save at or after optimizer step K, and the agent
 * ends it at the next training-step boundary; R runs the resume command.
 * The daemon then judges the run (daemon/checks/resume/verdict.c).  With
 * --once, B runs after R, and only when the verdict without it, narrowed
 * if it asks for that, is not a PASS.
 *
 * A, B, I and R digest the model's tensors and the optimizer's state at
 * boundaries only (--digest induction, the default; docs/induction.md).  When the daemon finds the
 * first divergence after a light step, the state may have diverged unseen before it: the
 * checkpoints of I and R are moved aside, A (and B when the baselines
 * differ) rerun as A2 (B2) with every tensor digested over those steps,
 * and the run is judged again. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/params.h"
#include "tools/exec/setaside.h"
#include "tools/base/cli.h"
#include "tools/cmd/cmds.h"
#include "tools/client/ctl.h"
#include "tools/cmd/verdict.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/base/opts.h"
#include "tools/base/paths.h"
#include "tools/exec/session.h"
#include "tools/exec/tree.h"
#include "tools/base/words.h"

static const char *at_s, *resume_cmd, *resume_args, *digest_s, *once_s;

static const tpt_optx extra[] = {
    {"at", "K",
     "interrupt after the first checkpoint saved at or after optimizer step K "
     "(default: the first save)",
     &at_s},
    {"resume-cmd", "CMD",
     "the command that resumes (a shell command line); default: CMD "
     "itself, for scripts that resume when a checkpoint exists",
     &resume_cmd},
    {"resume-args", "ARGS", "arguments appended to CMD to make it resume", &resume_args},
    {"once", NULL,
     "run B, the second uninterrupted execution, only when R does not simply match A (to tell a "
     "resume "
     "that loses state from a script that differs from itself): a PASS in three executions, "
     "its determinism not checked",
     &once_s},
    {"digest", "MODE",
     "induction (default): A, B and I digest the model and optimizer state at boundaries and "
     "rerun A with every tensor digested where a divergence needs it; full: every tensor at "
     "every step",
     &digest_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "resume",
    "[options] -- CMD...",
    "Resume parity: runs CMD twice uninterrupted (A, B), once until the agent\n"
    "ends it after a checkpoint save (I), then the resume command in a fresh\n"
    "process (R), and compares R with A from the step the checkpoint was saved.\n"
    "PASS (0), FAIL (1) with the first divergence and its likely cause, ABSTAIN\n"
    "(2) when A and B already differ, ERROR (3) when an execution fails.\n"
    "With --once, B runs only when R does not simply match A.",
    TPT_O_NAME | TPT_O_CAPTURE | TPT_O_JSON | TPT_O_JUNIT | TPT_O_HTML | TPT_O_RTOL | TPT_O_ATOL |
        TPT_O_SAMPLE_ID | TPT_O_CMD | TPT_O_LISTEN,
    extra,
};

typedef struct plan {
    tpt_opts o;
    long long at;
    char **resume; /* R's command */
    char *owned;   /* allocation behind resume, if any */
    char capture[64], interrupt[64];
    char *sample;    /* TRAINPARITY_SAMPLE_ID=..., or NULL */
    char digest[64]; /* TRAINPARITY_DIGEST=... for A, B and I */
    char full[96];   /* TRAINPARITY_FULL_STEPS=LO-HI for A2 and B2, "" before */
    bool once;       /* --once: B after R, when R does not simply match A */
} plan;

/* env_of fills env (room for 6) with the settings of A, B, A2 and B2. */
static void env_of(const plan *p, char **env)
{
    int n = 0;
    env[n++] = (char *)p->capture;
    env[n++] = (char *)p->digest;
    if (p->full[0]) env[n++] = (char *)p->full;
    if (p->sample) env[n++] = p->sample;
    env[n] = NULL;
}

/* run_one runs one execution; a command that cannot start, or whose events
 * did not all reach the store (tpt_exec_run's error), is reported here.
 * Returns 0 when it ran (whatever its status) and was recorded whole. */
static int run_one(tpt_session *s, int64_t run, const char *role, char **argv, char **env,
                   tpt_exec_result *res)
{
    tpt_exec_spec es = {role, argv, env, 0};
    return tpt_exec_one(s, "resume", run, &es, res);
}

/* aside moves what execution exec (of role) saved out of the way, on this
 * host and the hosts that follow the check (tpt_session_aside). */
static int aside(tpt_session *s, int64_t run, const char *role, int64_t exec,
                 const tpt_snapshot *tool, const tpt_snapshot *before)
{
    return tpt_session_aside(s, "resume", run, role, exec, tool, before);
}

/* baseline runs A or B (or their reruns A2, B2) and moves what it saved out
 * of the way (aside). */
static int baseline(tpt_session *s, int64_t run, const char *role, plan *p,
                    const tpt_snapshot *tool, const tpt_snapshot *before)
{
    char *env[6];
    tpt_exec_result res;
    bool ran;
    env_of(p, env);
    ran = run_one(s, run, role, p->o.cmd, env, &res) == 0;
    if (!ran && !tpt_exec_cut(&res)) return -1;
    return aside(s, run, role, res.exec, tool, before) == 0 && ran ? 0 : -1;
}

static int parse_plan(plan *p, int argc, char **argv)
{
    char err[TPT_ERR_LEN], *end;
    int st;
    at_s = resume_cmd = resume_args = digest_s = once_s = NULL;
    memset(p, 0, sizeof *p);
    if ((st = tpt_cmd_opts(&spec, argc, argv, &p->o)) >= 0) return st;
    if (at_s != NULL) {
        errno = 0;
        p->at = strtoll(at_s, &end, 10);
        if (errno || *end || p->at < 0) {
            tpt_error("resume: --at wants a step number >= 0, not '%s'", at_s);
            return TPT_EXIT_USAGE;
        }
    }
    if (digest_s != NULL && strcmp(digest_s, "induction") != 0 && strcmp(digest_s, "full") != 0) {
        tpt_error("resume: --digest wants induction or full, not '%s'", digest_s);
        return TPT_EXIT_USAGE;
    }
    if (resume_cmd && resume_args) {
        tpt_error("resume: give --resume-cmd or --resume-args, not both");
        return TPT_EXIT_USAGE;
    }
    if (resume_cmd) {
        char *sh[] = {"sh", "-c", (char *)resume_cmd};
        if (tpt_words(sh, 3, "", &p->resume, err) != TP_OK) {
            tpt_error("resume: %s", err);
            return TPT_EXIT_USAGE;
        }
        p->owned = (char *)p->resume;
    } else if (resume_args) {
        if (tpt_words(p->o.cmd, p->o.ncmd, resume_args, &p->resume, err) != TP_OK) {
            tpt_error("resume: --resume-args: %s", err);
            return TPT_EXIT_USAGE;
        }
        p->owned = (char *)p->resume;
    } else {
        p->resume = p->o.cmd;
    }
    if (p->o.sample_id && asprintf(&p->sample, "TRAINPARITY_SAMPLE_ID=%s", p->o.sample_id) < 0) {
        tpt_error("resume: out of memory");
        free(p->owned);
        return TPT_EXIT_ERROR;
    }
    p->once = once_s != NULL;
    snprintf(p->capture, sizeof p->capture, "TRAINPARITY_CAPTURE=%s", p->o.capture);
    snprintf(p->interrupt, sizeof p->interrupt, "TRAINPARITY_INTERRUPT_AT=%lld", p->at);
    snprintf(p->digest, sizeof p->digest, "TRAINPARITY_DIGEST=%s",
             digest_s != NULL ? digest_s : "induction");
    return -1;
}

/* params_json is the run's params as JSON, malloc'ed; NULL when out of
 * memory. */
static char *params_json(const plan *p)
{
    json_t *o =
        json_pack("{s:I, s:s, s:b, s:f, s:f, s:b}", TPP_KEY(TPP_resume_at), (json_int_t)p->at,
                  TPP_KEY(TPP_resume_capture), p->o.capture, TPP_KEY(TPP_resume_tolerance),
                  p->o.rtol_set || p->o.atol_set, TPP_KEY(TPP_resume_rtol), p->o.rtol,
                  TPP_KEY(TPP_resume_atol), p->o.atol, TPP_KEY(TPP_resume_once), p->once);
    char *s = o != NULL ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

/* retake replaces *snap with a snapshot of the working directory now. */
static int retake(tpt_snapshot *snap)
{
    char err[TPT_ERR_LEN];
    tpt_snapshot_free(snap);
    if (tpt_snapshot_take(snap, err) == TP_OK) return 0;
    tpt_error("%s", err);
    return -1;
}

/* narrow runs the reruns the verdict v asks for (docs/induction.md): what
 * I and R saved is moved aside; when R was light where it matters, I and R
 * run again (I2, R2: the same commands, R2 digesting every tensor over
 * its window) and what they saved is moved aside; then A2 (and B2) from
 * scratch, every tensor digested over A's window.  asided: I and R were
 * moved aside already (before B ran, --once).  Returns 0 when all ran. */
static int narrow(tpt_session *s, int64_t run, plan *p, const tpt_verdict_info *v,
                  const tpt_snapshot *tool, const tpt_snapshot *before_i, int64_t iexec,
                  int64_t rexec, bool asided)
{
    char rfull[96], *ienv[5], *renv[5];
    tpt_snapshot before = {{0, 0}, NULL, 0, false};
    tpt_exec_result res;
    int rc = -1;
    tpt_progress("resume",
                 "the first divergence lies after a light step: rerunning %s%s with every tensor "
                 "digested at steps %lld to %lld",
                 v->narrow_r ? "I, R and A" : "A", v->narrow_b ? " and B" : "",
                 (long long)v->narrow_from, (long long)v->narrow_to);
    snprintf(p->full, sizeof p->full, "TRAINPARITY_FULL_STEPS=%lld-%lld", (long long)v->narrow_from,
             (long long)v->narrow_to);
    snprintf(rfull, sizeof rfull, "TRAINPARITY_FULL_STEPS=%lld-%lld", (long long)v->narrow_r_from,
             (long long)v->narrow_r_to);
    ienv[0] = p->capture, ienv[1] = p->interrupt, ienv[2] = p->digest, ienv[3] = p->sample;
    ienv[4] = NULL;
    renv[0] = p->capture, renv[1] = p->digest, renv[2] = rfull, renv[3] = p->sample;
    renv[4] = NULL;
    if (!asided && (aside(s, run, "I", iexec, tool, before_i) != 0 ||
                    aside(s, run, "R", rexec, tool, before_i) != 0))
        return -1;
    if (v->narrow_r) {
        if (retake(&before) != 0) goto out;
        if (run_one(s, run, "I2", p->o.cmd, ienv, &res) != 0) goto out;
        iexec = res.exec;
        if (run_one(s, run, "R2", p->resume, renv, &res) != 0) goto out;
        if (aside(s, run, "I2", iexec, tool, &before) != 0 ||
            aside(s, run, "R2", res.exec, tool, &before) != 0)
            goto out;
    }
    if (retake(&before) != 0 || baseline(s, run, "A2", p, tool, &before) != 0) goto out;
    if (v->narrow_b && (retake(&before) != 0 || baseline(s, run, "B2", p, tool, &before) != 0))
        goto out;
    rc = 0;
out:
    tpt_snapshot_free(&before);
    return rc;
}

int tpt_cmd_resume(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *params = NULL;
    char *ienv[5], *renv[4];
    tpt_session *s = NULL;
    tpt_exec_result res;
    tpt_tolerance tol;
    tpt_snapshot tool, before_b = {{0, 0}, NULL, 0, false}, before_i = {{0, 0}, NULL, 0, false};
    tpt_verdict_info v;
    int64_t iexec, rexec;
    bool b_ran = false, narrowed = false; /* B ran (--once), the reruns ran */
    int rc;
    plan p;
    int64_t run;
    int st;

    if ((st = parse_plan(&p, argc, argv)) >= 0) return st;
    if (tpt_snapshot_take(&tool, err) != TP_OK) {
        tpt_error("%s", err);
        free(p.owned);
        free(p.sample);
        return TPT_EXIT_ERROR;
    }
    ienv[0] = p.capture, ienv[1] = p.interrupt, ienv[2] = p.digest, ienv[3] = p.sample;
    ienv[4] = NULL;
    renv[0] = p.capture, renv[1] = p.digest, renv[2] = p.sample, renv[3] = NULL;
    if ((params = params_json(&p)) == NULL) snprintf(err, sizeof err, "resume: out of memory");
    if (params == NULL || tpt_session_open(&s, err) != TP_OK) {
        tpt_error("%s", err);
        tpt_snapshot_free(&tool);
        free(params);
        free(p.owned);
        free(p.sample);
        return TPT_EXIT_ERROR;
    }
    st = TPT_EXIT_ERROR;
    if (tpt_run_create(tpt_session_client(s), p.o.name, "resume", params, &run, err) != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        goto done;
    }
    tpt_progress("resume", "run %lld", (long long)run);
    /* The pre-start snapshot is taken before anything else happens: nothing
     * that existed then (the file stdout is redirected to, a checkpoint of
     * an earlier run) is ever moved aside. */
    if (baseline(s, run, "A", &p, &tool, &tool) != 0) goto done;
    if (!p.once && (retake(&before_b) != 0 || baseline(s, run, "B", &p, &tool, &before_b) != 0))
        goto done;
    if (tpt_snapshot_take(&before_i, err) != TP_OK) {
        tpt_error("%s", err);
        goto done;
    }
    if (run_one(s, run, "I", p.o.cmd, ienv, &res) != 0) goto done;
    iexec = res.exec;
    if (run_one(s, run, "R", p.resume, renv, &res) != 0) goto done;
    rexec = res.exec;
    tol.declared = p.o.rtol_set || p.o.atol_set;
    tol.rtol = p.o.rtol;
    tol.atol = p.o.atol;
    /* Ask for the verdict until it asks for nothing more: a narrowing (once),
     * or, with --once, B when the verdict without it is not a PASS: from
     * scratch, after what I and R saved is moved aside (unless a narrowing
     * moved it), every tensor digested over the reruns' window if they ran
     * (env_of) */
    for (;;) {
        if (tpt_plan(tpt_session_client(s), run, &tol, &v) != 0) goto done;
        if (v.second && !b_ran) {
            b_ran = true;
            tpt_verdict_info_free(&v);
            tpt_progress("resume", "R did not simply match A: running B (--once), to tell a "
                                   "resume that loses state from a script that differs from "
                                   "itself");
            if ((!narrowed && (aside(s, run, "I", iexec, &tool, &before_i) != 0 ||
                               aside(s, run, "R", rexec, &tool, &before_i) != 0)) ||
                retake(&before_b) != 0 || baseline(s, run, "B", &p, &tool, &before_b) != 0)
                goto done;
            continue;
        }
        if (!v.narrow || narrowed) break;
        narrowed = true;
        rc = narrow(s, run, &p, &v, &tool, &before_i, iexec, rexec, b_ran);
        tpt_verdict_info_free(&v);
        if (rc != 0) goto done;
    }
    st = tpt_report_planned(tpt_session_client(s), run, &v, &tol, &p.o);
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    tpt_snapshot_free(&tool);
    tpt_snapshot_free(&before_b);
    tpt_snapshot_free(&before_i);
    free(params);
    free(p.owned);
    free(p.sample);
    return st;
}
