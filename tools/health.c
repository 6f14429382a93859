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

static const char *max_norm_s;

static const tpt_optx extra[] = {
    {"max-grad-norm", "X", "FAIL when a step's total gradient L2 norm is above X", &max_norm_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "health",
    "[--max-grad-norm X] [options] -- CMD...",
    "Training health: runs CMD once under the agent and tabulates every optimizer\n"
    "step (loss, gradient norm, update norm, learning rates, skipped, gradients\n"
    "with non-finite values, GradScaler scale).  FAIL (1) at the first step with\n"
    "a non-finite loss, a non-finite gradient applied, an update that moved no\n"
    "parameter though no GradScaler skipped it, or a gradient norm above\n"
    "--max-grad-norm; or a non-finite parameter at exit.  PASS (0) otherwise,\n"
    "ERROR (3) when the command fails, loses events or makes no optimizer step.",
    TPT_O_NAME | TPT_O_JSON | TPT_O_CMD,
    extra,
};

/* params_json is the run's params (daemon/checks/health/verdict.h) as
 * JSON, malloc'ed; NULL when out of memory. */
static char *params_json(bool has_max, double max)
{
    json_t *o = has_max ? json_pack("{s:f}", "max_grad_norm", max) : json_object();
    char *s = o != NULL ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

int tpt_cmd_health(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *params;
    char *env[] = {"TRAINPARITY_UPDATE_NORM=1", NULL};
    tpt_session *s = NULL;
    tpt_exec_spec es = {"health", NULL, env, 0};
    tpt_exec_result res;
    tpt_opts o;
    double max = 0;
    int64_t run;
    int st;

    max_norm_s = NULL;
    if ((st = tpt_opts_cli(&spec, argc, argv, &o)) >= 0) return st;
    if (max_norm_s != NULL) {
        char *end;
        errno = 0;
        max = strtod(max_norm_s, &end);
        if (errno || end == max_norm_s || *end || !isfinite(max) || max <= 0) {
            tpt_error("health: --max-grad-norm wants a number > 0, not '%s'", max_norm_s);
            fprintf(stderr, "(see '%s health --help')\n", TPT_PROG);
            return TPT_EXIT_USAGE;
        }
    }
    if ((params = params_json(max_norm_s != NULL, max)) == NULL) {
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
