/* SPDX-License-Identifier: MIT
 * health.c -- trainparity-run health: the training health of one run.
 *
 * One execution, role "health", a fresh process under the agent with
 * update norms measured (TRAINPARITY_UPDATE_NORM=1: the agent reports each
 * update's norm and whether any parameter changed; with --every N,
 * TRAINPARITY_UPDATE_EVERY=N: on the steps that are multiples of N only).
 * The daemon builds the per-step telemetry and judges it
 * (daemon/checks/health/verdict.h, the declared bounds bounds.c).  The
 * --lr-expect file is read and checked here and travels in the run's
 * params. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/params.h"
#include "proto/control.h"
#include "tools/base/cli.h"
#include "tools/cmd/cmds.h"
#include "tools/client/ctl.h"
#include "tools/cmd/verdict.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/cmd/lrfile.h"
#include "tools/base/opts.h"
#include "tools/exec/session.h"

static const char *max_norm_s, *max_skipped_s, *min_decrease_s, *lr_file, *every_s;

static const tpt_optx extra[] = {
    {"max-grad-norm", "X", "FAIL when a step's total gradient L2 norm is above X", &max_norm_s},
    {"max-skipped", "F",
     "FAIL when a GradScaler skips more than this fraction of the steps after its first skipped "
     "run (default 0.25)",
     &max_skipped_s},
    {"min-loss-decrease", "R",
     "FAIL when the mean loss of the last quarter of the steps is not at least a fraction R "
     "(0 < R < 1) below the first quarter's (needs 8 steps with a loss)",
     &min_decrease_s},
    {"lr-expect", "FILE",
     "FAIL at the first step whose learning rates differ from FILE's (lines 'STEP LR [LR...]', "
     "one LR per param group; relative tolerance 1e-6), or at a declared step never made",
     &lr_file},
    {"every", "N",
     "measure update norms (a copy of the parameters per step) on the steps that are multiples "
     "of N only; the text table shows those rows",
     &every_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "health",
    "[--max-grad-norm X] [--max-skipped F] [--min-loss-decrease R] [--lr-expect FILE] "
    "[--every N] [options] -- CMD...",
    "Training health: runs CMD once under the agent and tabulates every optimizer\n"
    "step (loss, gradient norm, update norm, learning rates, skipped, gradients\n"
    "with non-finite values, GradScaler scale).  FAIL (1) when a parameter that\n"
    "gets gradients is in no optimizer, a tensor is updated twice per step, an\n"
    "optimizer holds tensors no backward reaches; at the first step that misuses\n"
    "a GradScaler (a direct optimizer.step after scale(), GradScaler.step without\n"
    "scale(), clipping before unscale_()), has a non-finite loss, applies a\n"
    "non-finite gradient, has a gradient norm above --max-grad-norm or moves no\n"
    "parameter though no GradScaler skipped it; when a GradScaler skips more than\n"
    "--max-skipped of the steps; at the first step whose learning rates differ\n"
    "from --lr-expect's or a declared step never made; when the loss decreased\n"
    "less than --min-loss-decrease; or at a non-finite parameter at exit.  PASS (0)\n"
    "otherwise, ERROR (3) when the command fails, loses events or makes no\n"
    "optimizer step.",
    TPT_O_NAME | TPT_O_JSON | TPT_O_JUNIT | TPT_O_HTML | TPT_O_CMD | TPT_O_LISTEN,
    extra,
};

/* The declared bounds, as given (has_*: the option was). */
typedef struct bounds {
    bool has_max, has_skipped, has_decrease;
    double max, skipped, decrease;
    long long every;         /* 0: not given */
    const tpt_lr_table *lrs; /* NULL: not given */
} bounds;

/* set adds key (v, whose reference it takes) to o unless bad already;
 * true when it failed. */
static bool set(json_t *o, const char *key, json_t *v, bool bad)
{
    if (bad) {
        json_decref(v);
        return true;
    }
    return v == NULL || json_object_set_new(o, key, v) != 0;
}

/* params_json is the run's params (daemon/checks/health/verdict.h,
 * bounds.c) as JSON, malloc'ed; NULL when out of memory.  A bound not
 * given is left out; the --lr-expect file's name only when it is UTF-8. */
static char *params_json(const bounds *b)
{
    json_t *o = json_object();
    char *s = NULL;
    bool bad = o == NULL;
    if (b->has_max) bad = set(o, TPP_KEY(TPP_health_max_grad_norm), json_real(b->max), bad);
    if (b->has_skipped) bad = set(o, TPP_KEY(TPP_health_max_skipped), json_real(b->skipped), bad);
    if (b->has_decrease)
        bad = set(o, TPP_KEY(TPP_health_min_loss_decrease), json_real(b->decrease), bad);
    if (b->lrs != NULL) {
        json_t *name = json_string(lr_file);
        bad = set(o, TPP_KEY(TPP_health_lr_expect), tpt_lr_json(b->lrs), bad);
        if (name != NULL) bad = set(o, TPP_KEY(TPP_health_lr_expect_file), name, bad);
    }
    if (b->every > 0) bad = set(o, TPP_KEY(TPP_health_every), json_integer(b->every), bad);
    if (!bad) s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    return s;
}

/* number parses option opt's value s into *v, within [lo, hi] (lo excluded
 * when open_lo, hi when open_hi); false after saying why. */
static bool number(const char *opt, const char *s, double lo, bool open_lo, double hi, bool open_hi,
                   const char *want, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(*v) || *v < lo || (open_lo && *v == lo) || *v > hi ||
        (open_hi && *v == hi)) {
        tpt_error("health: --%s wants %s, not '%s'", opt, want, s);
        fprintf(stderr, "(see '%s health --help')\n", TPT_PROG);
        return false;
    }
    return true;
}

/* whole parses option opt's value s, a whole number >= 1, into *v; false
 * after saying why. */
static bool whole(const char *opt, const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (errno || end == s || *end || *v < 1) {
        tpt_error("health: --%s wants a whole number >= 1, not '%s'", opt, s);
        fprintf(stderr, "(see '%s health --help')\n", TPT_PROG);
        return false;
    }
    return true;
}

/* parse reads the options into *o and *b (b->lrs into *lrs): an exit
 * status, or -1 to go on. */
static int parse(int argc, char **argv, tpt_opts *o, bounds *b, tpt_lr_table *lrs)
{
    int st;
    max_norm_s = max_skipped_s = min_decrease_s = lr_file = every_s = NULL;
    memset(b, 0, sizeof *b);
    if ((st = tpt_cmd_opts(&spec, argc, argv, o)) >= 0) return st;
    if ((b->has_max = max_norm_s != NULL) &&
        !number("max-grad-norm", max_norm_s, 0, true, INFINITY, false, "a number > 0", &b->max))
        return TPT_EXIT_USAGE;
    if ((b->has_skipped = max_skipped_s != NULL) &&
        !number("max-skipped", max_skipped_s, 0, false, 1, false, "a fraction from 0 to 1",
                &b->skipped))
        return TPT_EXIT_USAGE;
    if ((b->has_decrease = min_decrease_s != NULL) &&
        !number("min-loss-decrease", min_decrease_s, 0, true, 1, true,
                "a fraction between 0 and 1 (both excluded)", &b->decrease))
        return TPT_EXIT_USAGE;
    if (every_s != NULL && !whole("every", every_s, &b->every)) return TPT_EXIT_USAGE;
    if (lr_file != NULL) {
        if (tpt_lr_read(lr_file, lrs) != 0) return TPT_EXIT_USAGE;
        b->lrs = lrs;
    }
    return -1;
}

int tpt_cmd_health(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *params, every_env[64];
    /* no TRAINPARITY_DIGEST: every tensor at every step (the agent's default;
     * one in the caller's environment is removed, tools/exec/exec.h), as
     * health reads moves and coverage from snapshots */
    char *env[] = {TP_ENV_UPDATE_NORM "=1", NULL, NULL};
    tpt_session *s = NULL;
    tpt_exec_spec es = {"health", NULL, env, 0};
    tpt_exec_result res;
    tpt_opts o;
    bounds b;
    tpt_lr_table lrs = {0};
    int64_t run;
    int st;

    if ((st = parse(argc, argv, &o, &b, &lrs)) >= 0) return st;
    params = params_json(&b);
    tpt_lr_free(&lrs);
    if (params == NULL) {
        tpt_error("health: out of memory");
        return TPT_EXIT_ERROR;
    }
    if (b.every > 0) {
        snprintf(every_env, sizeof every_env, TP_ENV_UPDATE_EVERY "=%lld", b.every);
        env[1] = every_env;
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
    st = tpt_judge(tpt_session_client(s), run, NULL, &o);
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    free(params);
    return st;
}
