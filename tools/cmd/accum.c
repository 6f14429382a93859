/* SPDX-License-Identifier: MIT
 * accum.c -- trainparity-run accum: gradient-accumulation parity.
 *
 * Two executions, each a fresh process under the agent with tensor values
 * captured (a tolerance comparison of gradients and weights needs them:
 * micro-batch and full-batch sums are never bit-identical): "full" runs the
 * reference command (one backward per optimizer update), then "micro" runs
 * CMD (N micro-batch backward calls per update).  The user declares the
 * relation; the daemon tests it (daemon/checks/accum/verdict.c).
 *
 * The verdict reads the first U updates only: the state before each (steps
 * 0 to U) and the gradients at each.  So every tensor is digested, and its
 * values captured, at those steps alone; after them the executions run in
 * the induction mode (docs/induction.md) and capture nothing, at the cost
 * of resume's executions however long the command trains. */
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
#include "tools/base/words.h"

/* The declared default: summation order differs between a full batch and
 * its micro-batches, so exact equality is never the relation to test. */
#define DEFAULT_RTOL    1e-4
#define DEFAULT_ATOL    1e-6
#define DEFAULT_UPDATES 2

static const char *micro_s, *updates_s, *reference, *no_dropout;

static const tpt_optx extra[] = {
    {"micro", "N", "micro-batches per optimizer update in CMD (required)", &micro_s},
    {"updates", "U", "optimizer updates to compare (default 2)", &updates_s},
    {"reference", "CMD_FULL",
     "the full-batch command, one backward per update (a shell command line; required)",
     &reference},
    {"disable-dropout", NULL, "make dropout the identity in both executions (nothing else changes)",
     &no_dropout},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "accum",
    "--micro N [--updates U] --reference CMD_FULL [options] -- CMD_MICRO...",
    "Gradient-accumulation parity: runs CMD_FULL (one full batch per optimizer\n"
    "update) and CMD_MICRO (N micro-batches per update), each in a fresh process\n"
    "with tensor values captured, and compares the first U updates: optimizer\n"
    "steps, loss accounting, gradients, optimizer state, weights, scheduler.\n"
    "The comparison is rtol=1e-4, atol=1e-6 unless --rtol/--atol say otherwise.\n"
    "PASS (0), FAIL (1) at the first phase that differs with its likely cause,\n"
    "ABSTAIN (2) when the initial states differ, ERROR (3) when an execution\n"
    "fails or the reference makes fewer than U updates.",
    TPT_O_NAME | TPT_O_JSON | TPT_O_JUNIT | TPT_O_HTML | TPT_O_RTOL | TPT_O_ATOL | TPT_O_CMD |
        TPT_O_LISTEN,
    extra,
};

typedef struct plan {
    tpt_opts o;
    long long micro, updates;
    double rtol, atol;
    char **full; /* the reference command: sh -c CMD_FULL (one allocation) */
} plan;

static int count_opt(const char *name, const char *s, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    if (errno || end == s || *end || *out < 1 || *out > 1000000) {
        tpt_error("accum: --%s wants a whole number >= 1, not '%s'", name, s);
        return -1;
    }
    return 0;
}

static int parse_plan(plan *p, int argc, char **argv)
{
    char err[TPT_ERR_LEN];
    int st;
    micro_s = updates_s = reference = no_dropout = NULL;
    memset(p, 0, sizeof *p);
    if ((st = tpt_cmd_opts(&spec, argc, argv, &p->o)) >= 0) return st;
    if (micro_s == NULL || reference == NULL) {
        tpt_error("accum: %s is required", micro_s == NULL ? "--micro N" : "--reference CMD_FULL");
        fprintf(stderr, "(see '%s accum --help')\n", TPT_PROG);
        return TPT_EXIT_USAGE;
    }
    if (count_opt("micro", micro_s, &p->micro) != 0) return TPT_EXIT_USAGE;
    p->updates = DEFAULT_UPDATES;
    if (updates_s != NULL && count_opt("updates", updates_s, &p->updates) != 0)
        return TPT_EXIT_USAGE;
    p->rtol = p->o.rtol_set ? p->o.rtol : DEFAULT_RTOL;
    p->atol = p->o.atol_set ? p->o.atol : DEFAULT_ATOL;
    {
        char *sh[] = {"sh", "-c", (char *)reference};
        if (tpt_words(sh, 3, "", &p->full, err) != TP_OK) {
            tpt_error("accum: %s", err);
            return TPT_EXIT_USAGE;
        }
    }
    return -1;
}

static int run_one(tpt_session *s, int64_t run, const char *role, char **argv, char **env)
{
    tpt_exec_spec es = {role, argv, env, 0};
    tpt_exec_result res;
    return tpt_exec_one(s, "accum", run, &es, &res);
}

/* params_json is the run's params (daemon/checks/accum/verdict.h) as JSON,
 * malloc'ed; NULL when out of memory. */
static char *params_json(const plan *p)
{
    json_t *o = json_pack("{s:I, s:I, s:b, s:f, s:f}", TPP_KEY(TPP_accum_micro),
                          (json_int_t)p->micro, TPP_KEY(TPP_accum_updates), (json_int_t)p->updates,
                          TPP_KEY(TPP_accum_disable_dropout), no_dropout != NULL,
                          TPP_KEY(TPP_accum_rtol), p->rtol, TPP_KEY(TPP_accum_atol), p->atol);
    char *s = o != NULL ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

int tpt_cmd_accum(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *params, full[96], until[64];
    /* values: the gradients and weights are compared within a tolerance,
     * at the steps the verdict reads (full, until); loss counts: the
     * elements each mean-reduced loss averaged over */
    char *env[] = {"TRAINPARITY_CAPTURE=values",
                   "TRAINPARITY_LOSS_COUNTS=1",
                   "TRAINPARITY_DIGEST=induction",
                   full,
                   until,
                   NULL,
                   NULL};
    tpt_session *s = NULL;
    tpt_tolerance tol;
    plan p;
    int64_t run;
    int st;

    if ((st = parse_plan(&p, argc, argv)) >= 0) return st;
    snprintf(full, sizeof full, "TRAINPARITY_FULL_STEPS=0-%lld", p.updates);
    snprintf(until, sizeof until, "TRAINPARITY_CAPTURE_UNTIL=%lld", p.updates);
    if (no_dropout != NULL) env[5] = "TRAINPARITY_DISABLE_DROPOUT=1";
    if ((params = params_json(&p)) == NULL) {
        tpt_error("accum: out of memory");
        free(p.full);
        return TPT_EXIT_ERROR;
    }
    if (tpt_session_open(&s, err) != TP_OK) {
        tpt_error("%s", err);
        free(params);
        free(p.full);
        return TPT_EXIT_ERROR;
    }
    st = TPT_EXIT_ERROR;
    if (tpt_run_create(tpt_session_client(s), p.o.name, "accum", params, &run, err) != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        goto done;
    }
    tpt_progress("accum", "run %lld", (long long)run);
    if (run_one(s, run, "full", p.full, env) != 0) goto done;
    if (run_one(s, run, "micro", p.o.cmd, env) != 0) goto done;
    tol.declared = true;
    tol.rtol = p.rtol;
    tol.atol = p.atol;
    st = tpt_judge(tpt_session_client(s), run, &tol, &p.o);
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    free(params);
    free(p.full);
    return st;
}
