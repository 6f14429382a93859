/* SPDX-License-Identifier: MIT
 * join.c -- trainparity-run join: follow, on this host, the executions of a
 * check that another host runs with --listen (docs/multinode.md).
 *
 * Where no launcher of the check's host starts the command on the others
 * (a Kubernetes PyTorchJob starts every pod itself), each other host runs
 * `trainparity-run join tcp://HOST:PORT`: it asks the check's daemon for
 * each execution in turn (exec.next), runs its command here with the
 * execution's key and variables and the agent of this host, sends the
 * daemon what this host's agents spooled for want of it, says how it ended
 * (exec.done), moves aside what it saved here when the check does
 * (exec.aside), and ends with the run (run.end).  The command is the one
 * the check runs, resume's own for R included: every host runs the same
 * image, as a PyTorchJob's pods do. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "tools/base/cli.h"
#include "tools/cmd/cmds.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/client/follow.h"
#include "tools/client/spool.h"
#include "tools/base/opts.h"
#include "tools/base/paths.h"
#include "tools/exec/setaside.h"
#include "tools/client/token.h"
#include "tools/exec/tree.h"

#define JOIN_CALL_MS 10000 /* one request's timeout */
#define JOIN_RAN     64    /* executions remembered for their asides */

static const char *wait_s;

static const tpt_optx extra[] = {
    {"wait", "SECONDS",
     "give up when the check's daemon has not answered for this long (default 600): before "
     "the check starts, or after its host is gone",
     &wait_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "join",
    "[options] tcp://HOST:PORT",
    "Follows, on this host, the executions of a check run on another host with\n"
    "--listen tcp://HOST:PORT (a Kubernetes PyTorchJob's worker pods): runs each\n"
    "execution's command here, under the agent, until the check ends.  The token\n"
    "is $TRAINPARITY_TOKEN, else ./.trainparity/token.  Exit 0 when every\n"
    "execution ran here, 3 (ERROR) when one could not, or the daemon went silent.",
    TPT_O_ARGS,
    extra,
};

/* An execution this host ran, for moving aside what it saved. */
typedef struct ran {
    int64_t exec;
    char role[64];
    tpt_snapshot before;
} ran;

typedef struct follower {
    tpt_client *c;
    char url[512], control[512], token[TPT_TOKEN_MAX];
    char agent[PATH_MAX], spool[PATH_MAX], host[128];
    int64_t pid, run, after, asided;
    long long wait_ms, heard_ms; /* the bound; when the daemon last answered */
    tpt_snapshot tool;
    ran ran[JOIN_RAN];
    int nran;
    bool failed;
} follower;

/* set_up reads the options and finds what following needs. */
static int set_up(follower *f, int argc, char **argv)
{
    char err[TPT_ERR_LEN], tokfile[PATH_MAX], *end;
    struct utsname u;
    bool from_env;
    tpt_opts o;
    long wait = 600;
    int st;

    wait_s = NULL;
    if ((st = tpt_cmd_opts(&spec, argc, argv, &o)) >= 0) return st;
    if (o.nargs != 1 || strncmp(o.args[0], "tcp://", 6) != 0) {
        tpt_error("join: give the check's network URL, tcp://HOST:PORT (its --listen)");
        return TPT_EXIT_USAGE;
    }
    if (wait_s != NULL) {
        errno = 0;
        wait = strtol(wait_s, &end, 10);
        if (errno || *end || wait <= 0) {
            tpt_error("join: --wait wants a number of seconds > 0, not '%s'", wait_s);
            return TPT_EXIT_USAGE;
        }
    }
    f->wait_ms = wait * 1000LL;
    snprintf(f->url, sizeof f->url, "%s", o.args[0]);
    if (tp_url_control(f->url, f->control, sizeof f->control) != TP_OK) {
        tpt_error("join: '%s' is not a tcp://HOST:PORT URL", f->url);
        return TPT_EXIT_USAGE;
    }
    if (tpt_state_dir(NULL, tokfile, sizeof tokfile, err) != TP_OK ||
        strlen(tokfile) + sizeof "/token" > sizeof tokfile) {
        tpt_error("join: %s", err);
        return TPT_EXIT_ERROR;
    }
    strcat(tokfile, "/token");
    if (tpt_token_get(tokfile, false, f->token, &from_env, err) != TP_OK) {
        tpt_error("join: no token for the check's daemon (%s): set TRAINPARITY_TOKEN to the "
                  "check's",
                  err);
        return TPT_EXIT_ERROR;
    }
    if (tpt_find_agent(f->agent, sizeof f->agent, err) != TP_OK ||
        tpt_state_dir("spool", f->spool, sizeof f->spool, err) != TP_OK ||
        tpt_snapshot_take(&f->tool, err) != TP_OK) {
        tpt_error("join: %s", err);
        return TPT_EXIT_ERROR;
    }
    snprintf(f->host, sizeof f->host, "%s", uname(&u) == 0 ? u.nodename : "?");
    f->pid = (int64_t)getpid();
    if (tpt_client_open(&f->c, f->control, JOIN_CALL_MS) != TP_OK ||
        tpt_client_token(f->c, f->token) != TP_OK) {
        tpt_error("join: cannot open a connection to %s", f->control);
        return TPT_EXIT_ERROR;
    }
    return -1;
}

/* silent says whether the daemon has not answered for longer than the
 * bound, saying so. */
static bool silent(follower *f, const char *err)
{
    if (tpt_now_ms() - f->heard_ms < f->wait_ms) return false;
    tpt_error("join: no answer from %s for %lld s (%s): %s", f->control, f->wait_ms / 1000,
              f->after > 0 ? "the check's host is gone" : "no check started there", err);
    return true;
}

/* set_aside moves aside, here, what the executions in n->aside saved (those
 * this host ran). */
static void set_aside(follower *f, const tpt_next *n)
{
    for (size_t i = 0; i < n->naside; i++, f->asided++) {
        for (int j = 0; j < f->nran; j++) {
            ran *r = &f->ran[j];
            if (r->exec == n->aside[i] &&
                tpt_set_aside(f->c, "join", f->run, r->role, r->exec, &f->tool, &r->before) != 0)
                f->failed = true;
        }
    }
}

/* done says how the command ended, and how many spool files of it this
 * host holds unsent, until the daemon takes it, refuses it or is silent;
 * when a signal stopped join, that it leaves (the check then does not wait
 * for it to ask for the run's end). */
static void done(follower *f, int64_t exec, const tpt_exit *e, int unsent)
{
    char err[TPT_ERR_LEN];
    bool leaving = tpt_launch_stopped() != 0;
    tp_err rc;
    while ((rc = tpt_follow_done(f->c, f->host, f->pid, exec, e, unsent, leaving, err)) != TP_OK) {
        if (rc == TP_EINVAL) { /* refused: asking again gets the same answer */
            tpt_error("join: %s refused how execution %lld ended: %s", f->control, (long long)exec,
                      err);
            f->failed = true;
            return;
        }
        if (silent(f, err)) {
            f->failed = true;
            return;
        }
        tpt_sleep_ms(TPT_FOLLOW_POLL_MS);
    }
    f->heard_ms = tpt_now_ms();
}

/* forward sends the daemon what this host's agents spooled for exec, that
 * the check's daemon cannot read here (tpt_spool_ingest: the files' frames
 * go over the control socket), before done(): the check finishes an
 * execution only once its followers are done.  A file not sent stays, and
 * join exits 3.  Returns how many files of exec stay unsent (1 when the
 * folder cannot be read; a file stored but not moved aside counts too):
 * done() tells the check, which then counts the
 * execution incomplete instead of judging it on the other hosts' processes
 * alone. */
static int forward(follower *f, int64_t exec)
{
    char err[TPT_ERR_LEN];
    tpt_ingest_info in = {0, 0, 0, 0, 0};
    int nfiles = 0, unsent = 0;
    if (tpt_spool_ingest(f->c, f->spool, exec, &in, &nfiles, err) != TP_OK) {
        tpt_error("join: %s", err);
        f->failed = true;
        if (tpt_spool_pending(f->spool, exec, &unsent, err) != TP_OK) {
            tpt_error("join: %s", err);
            unsent = 1;
        }
    }
    if (nfiles > 0)
        tpt_progress("join", "sent %d spool file%s: %lld events stored", nfiles,
                     nfiles == 1 ? "" : "s", (long long)in.events);
    return unsent;
}

/* run_exec runs n's command here as its execution. */
static void run_exec(follower *f, const tpt_next *n)
{
    char err[TPT_ERR_LEN], shown[512];
    tpt_agent_vars a = {f->agent, f->url,  f->control, f->token, f->spool,
                        n->run,   n->exec, n->key,     n->role,  n->env};
    tpt_exit e = {TPT_EXIT_NOTFOUND, 0};
    char **env;
    size_t nown = 0;
    ran *r;
    long long t0 = tpt_now_ms();

    if (n->finished) {
        tpt_error("join: execution %lld (%s) ended before this host was given it: not run here",
                  (long long)n->exec, n->role);
        f->failed = true;
        return;
    }
    if (f->nran == JOIN_RAN) { /* the oldest is forgotten: its asides are done by now */
        tpt_snapshot_free(&f->ran[0].before);
        memmove(&f->ran[0], &f->ran[1], (JOIN_RAN - 1) * sizeof f->ran[0]);
        f->nran--;
    }
    r = &f->ran[f->nran];
    memset(r, 0, sizeof *r);
    r->exec = n->exec;
    snprintf(r->role, sizeof r->role, "%s", n->role);
    if (tpt_snapshot_take(&r->before, err) != TP_OK) {
        tpt_error("join: %s", err);
        f->failed = true;
    }
    f->nran++;
    tpt_argv_join(n->argv, shown, sizeof shown);
    tpt_progress("join", "run %lld, %s: running %s", (long long)n->run, n->role, shown);
    if ((env = tpt_agent_env(&a, &nown)) == NULL) {
        tpt_error("join: out of memory");
        f->failed = true;
    } else if (tpt_launch(n->argv, env, NULL, &e, NULL, err) != TP_OK) {
        tpt_error("join: %s: %s", n->role, err);
        f->failed = true;
    } else {
        tpt_progress("join", "%s: exited with status %d after %.1f s", n->role, tpt_exit_code(&e),
                     (double)(tpt_now_ms() - t0) / 1000.0);
    }
    tpt_agent_env_free(env, nown);
    done(f, n->exec, &e, forward(f, n->exec));
}

int tpt_cmd_join(int argc, char **argv)
{
    char err[TPT_ERR_LEN];
    follower *f = calloc(1, sizeof *f);
    int st;
    if (f == NULL) {
        tpt_error("join: out of memory");
        return TPT_EXIT_ERROR;
    }
    if ((st = set_up(f, argc, argv)) >= 0) goto out;
    tpt_progress("join", "following the check at %s as %s", f->url, f->host);
    f->heard_ms = tpt_now_ms();
    for (;;) {
        tpt_next n;
        tp_err rc = tpt_follow_next(f->c, f->host, f->pid, f->run, f->after, f->asided, &n, err);
        if (rc == TP_EINVAL) { /* the daemon refused: a wrong token, ... */
            tpt_error("join: %s refused: %s", f->control, err);
            f->failed = true;
            break;
        }
        if (rc != TP_OK) {
            if (silent(f, err)) {
                f->failed = true;
                break;
            }
            tpt_sleep_ms(TPT_FOLLOW_POLL_MS);
            continue;
        }
        f->heard_ms = tpt_now_ms();
        if (n.run > 0) f->run = n.run;
        set_aside(f, &n);
        if (strcmp(n.state, "end") == 0) {
            tpt_next_free(&n);
            break;
        }
        if (strcmp(n.state, "exec") == 0) {
            f->after = n.exec;
            run_exec(f, &n);
            if (tpt_launch_stopped() != 0) { /* the pod is told to end: so does join */
                tpt_error("join: %s reached %s while %s ran: following no further execution",
                          tpt_signal_name(tpt_launch_stopped()), TPT_PROG, n.role);
                f->failed = true;
                tpt_next_free(&n);
                break;
            }
        } else {
            tpt_sleep_ms(TPT_FOLLOW_POLL_MS);
        }
        tpt_next_free(&n);
    }
    tpt_progress("join", "run %lld ended", (long long)f->run);
    st = f->failed ? TPT_EXIT_ERROR : 0;
out:
    for (int i = 0; i < f->nran; i++) tpt_snapshot_free(&f->ran[i].before);
    tpt_snapshot_free(&f->tool);
    tpt_client_close(f->c);
    free(f);
    return st;
}
