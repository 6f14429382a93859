/* SPDX-License-Identifier: MIT
 * health.c -- trainparity-run health: the training health of one run.
 *
 * One execution, role "health", a fresh process under the agent with
 * update norms measured (TRAINPARITY_UPDATE_NORM=1: the agent reports each
 * update's norm and whether any parameter changed).  The daemon builds the
 * per-step telemetry and judges it (daemon/checks/health/verdict.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/cmds.h"
#include "tools/ctl.h"
#include "tools/errbuf.h"
#include "tools/exec.h"
#include "tools/opts.h"
#include "tools/session.h"

static const char *max_norm_s, *max_skipped_s;

static const tpt_optx extra[] = {
    {"max-grad-norm", "X", "FAIL when a step's total gradient L2 norm is above X", &max_norm_s},
    {"max-skipped", "F",
     "FAIL when a GradScaler skips more than this fraction of the steps after its first skipped "
     "run (default 0.25)",
     &max_skipped_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "health",
    "[--max-grad-norm X] [--max-skipped F] [options] -- CMD...",
    "Training health: runs CMD once under the agent and tabulates every optimizer\n"
    "step (loss, gradient norm, update norm, learning rates, skipped, gradients\n"
    "with non-finite values, GradScaler scale).  FAIL (1) when a parameter that\n"
    "gets gradients is in no optimizer, a tensor is updated twice per step, an\n"
    "optimizer holds tensors no backward reaches; at the first step that misuses\n"
    "a GradScaler (a direct optimizer.step after scale(), GradScaler.step without\n"
    "scale(), clipping before unscale_()), has a non-finite loss, applies a\n"
    "non-finite gradient, has a gradient norm above --max-grad-norm or moves no\n"
    "parameter though no GradScaler skipped it; when a GradScaler skips more than\n"
    "--max-skipped of the steps; or at a non-finite parameter at exit.  PASS (0)\n"
    "otherwise, ERROR (3) when the command fails, loses events or makes no\n"
    "optimizer step.",
    TPT_O_NAME | TPT_O_JSON | TPT_O_CMD,
    extra,
};

/* params_json is the run's params (daemon/checks/health/verdict.h) as
 * JSON, malloc'ed; NULL when out of memory.  A bound not given is left
 * out. */
static char *params_json(bool has_max, double max, bool has_skipped, double skipped)
{
    json_t *o = json_object();
    char *s = NULL;
    if (o != NULL && (!has_max || json_object_set_new(o, "max_grad_norm", json_real(max)) == 0) &&
        (!has_skipped || json_object_set_new(o, "max_skipped", json_real(skipped)) == 0))
        s = json_dumps(o, JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* number parses option opt's value s into *v, within (lo, hi] (lo excluded
 * when open_lo); false after saying why. */
static bool number(const char *opt, const char *s, double lo, bool open_lo, double hi,
                   const char *want, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(*v) || *v < lo || (open_lo && *v == lo) || *v > hi) {
        tpt_error("health: --%s wants %s, not '%s'", opt, want, s);
        fprintf(stderr, "(see '%s health --help')\n", TPT_PROG);
        return false;
    }
    return true;
}

int tpt_cmd_health(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *params;
    char *env[] = {"TRAINPARITY_UPDATE_NORM=1", NULL};
    tpt_session *s = NULL;
    tpt_exec_spec es = {"health", NULL, env, 0};
    tpt_exec_result res;
    tpt_opts o;
    double max = 0, skipped = 0;
    int64_t run;
    int st;

    max_norm_s = max_skipped_s = NULL;
    if ((st = tpt_opts_cli(&spec, argc, argv, &o)) >= 0) return st;
    if (max_norm_s != NULL &&
        !number("max-grad-norm", max_norm_s, 0, true, INFINITY, "a number > 0", &max))
        return TPT_EXIT_USAGE;
    if (max_skipped_s != NULL &&
        !number("max-skipped", max_skipped_s, 0, false, 1, "a fraction from 0 to 1", &skipped))
        return TPT_EXIT_USAGE;
    if ((params = params_json(max_norm_s != NULL, max, max_skipped_s != NULL, skipped)) == NULL) {
        tpt_error("health: out of memory");
        return TPT_EXIT_ERROR;
    }
    if (tpt_session_open(&s, err) != TP_OK) {
        tpt_error("%s", err);
        free(params);
        return TPT_EXIT_ERROR;
    }
    st = TPT_EXIT_ERROR;
    if (tpt_run_create(tpt_session_client(s), o.name, "health", params, &run, err) != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        goto done;
    }
    tpt_progress("health", "run %lld", (long long)run);
    es.argv = o.cmd;
    if (tpt_exec_one(s, "health", run, &es, &res) != 0) goto done;
    st = tpt_judge(tpt_session_client(s), run, NULL, o.json);
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    free(params);
    return st;
}
