/* SPDX-License-Identifier: MIT
 * follow.c -- the executions other hosts follow (follow.h): the registry
 * and the commands exec.next, exec.done, exec.aside, exec.followers and
 * run.end. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/serve/follow.h"
#include "proto/control.h"

typedef struct fexec {
    int64_t run, exec;
    char *role;
    char key[TP_EXEC_KEY_LEN + 1];
    char **argv, **env;
    size_t nargv, nenv;
    bool finished;
} fexec;

typedef struct frun {
    int64_t run;
    bool ended;
    int64_t aside[TPD_FOLLOW_ASIDE]; /* executions the leader moved aside, in order */
    size_t naside;
} frun;

/* A follower: one `trainparity-run join`, named by its host and pid. */
typedef struct fhost {
    char host[128];
    int64_t pid;
    int64_t run;  /* the run it follows, 0 before its first execution */
    int64_t exec; /* the execution it was last given, 0 none */
    bool done;    /* it said how exec's command ended */
    int64_t status, signal;
    int64_t unsent; /* spool files of exec it could not send */
    bool told_end;  /* it was told the run ended */
} fhost;

struct tpd_follow {
    fexec *execs[TPD_FOLLOW_EXECS]; /* by execution id, oldest first */
    size_t nexecs;
    frun runs[TPD_FOLLOW_RUNS]; /* oldest first */
    size_t nruns;
    fhost hosts[TPD_FOLLOW_HOSTS];
    size_t nhosts;
};

tp_err tpd_follow_create(tpd_follow **fp)
{
    return (*fp = calloc(1, sizeof **fp)) != NULL ? TP_OK : TP_ENOMEM;
}

void tpd_follow_strs_free(char **v, size_t n)
{
    if (v == NULL) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void fexec_free(fexec *e)
{
    if (e == NULL) return;
    free(e->role);
    tpd_follow_strs_free(e->argv, e->nargv);
    tpd_follow_strs_free(e->env, e->nenv);
    free(e);
}

void tpd_follow_destroy(tpd_follow *f)
{
    if (f == NULL) return;
    for (size_t i = 0; i < f->nexecs; i++) fexec_free(f->execs[i]);
    free(f);
}

tp_err tpd_follow_strs(const tpd_req *q, tp_arg key, char ***out, size_t *n)
{
    tp_mpr v;
    uint32_t len, i, slen;
    const char *s;
    char **a;
    tp_err err = tpd_req_find(q, key, &v);
    if (err != TP_OK) return err;
    if (tp_mpr_array(&v, &len) != TP_OK) return TP_EPROTO;
    if ((a = calloc((size_t)len + 1, sizeof *a)) == NULL) return TP_ENOMEM;
    for (i = 0; i < len; i++) {
        err = tp_mpr_str(&v, &s, &slen);
        if (err == TP_OK && memchr(s, '\0', slen) != NULL) err = TP_EPROTO;
        if (err == TP_OK && (a[i] = malloc((size_t)slen + 1)) == NULL) err = TP_ENOMEM;
        if (err != TP_OK) {
            tpd_follow_strs_free(a, i);
            return err;
        }
        memcpy(a[i], s, slen);
        a[i][slen] = '\0';
    }
    *out = a;
    *n = len;
    return TP_OK;
}

static frun *run_of(tpd_follow *f, int64_t run)
{
    for (size_t i = 0; i < f->nruns; i++)
        if (f->runs[i].run == run) return &f->runs[i];
    return NULL;
}

/* run_add returns run's entry, made when missing (the oldest forgotten
 * when full). */
static frun *run_add(tpd_follow *f, int64_t run)
{
    frun *r = run_of(f, run);
    if (r != NULL) return r;
    if (f->nruns == TPD_FOLLOW_RUNS) {
        memmove(&f->runs[0], &f->runs[1], (f->nruns - 1) * sizeof f->runs[0]);
        f->nruns--;
    }
    r = &f->runs[f->nruns++];
    memset(r, 0, sizeof *r);
    r->run = run;
    return r;
}

tp_err tpd_follow_exec(tpd_follow *f, int64_t run, int64_t exec, const char *role, const char *key,
                       char **argv, size_t nargv, char **env, size_t nenv)
{
    fexec *e = calloc(1, sizeof *e);
    if (e == NULL || (e->role = strdup(role != NULL ? role : "")) == NULL) {
        free(e);
        tpd_follow_strs_free(argv, nargv);
        tpd_follow_strs_free(env, nenv);
        return TP_ENOMEM;
    }
    e->run = run;
    e->exec = exec;
    snprintf(e->key, sizeof e->key, "%s", key);
    e->argv = argv, e->nargv = nargv;
    e->env = env, e->nenv = nenv;
    if (f->nexecs == TPD_FOLLOW_EXECS) {
        fexec_free(f->execs[0]);
        memmove(&f->execs[0], &f->execs[1], (f->nexecs - 1) * sizeof f->execs[0]);
        f->nexecs--;
    }
    f->execs[f->nexecs++] = e; /* ids only grow: the array stays sorted */
    run_add(f, run);
    return TP_OK;
}

static fexec *exec_of(tpd_follow *f, int64_t exec)
{
    for (size_t i = 0; i < f->nexecs; i++)
        if (f->execs[i]->exec == exec) return f->execs[i];
    return NULL;
}

void tpd_follow_finished(tpd_follow *f, int64_t exec)
{
    fexec *e = exec_of(f, exec);
    if (e != NULL) e->finished = true;
}

/* host_of returns the follower (host, pid), made when missing and add;
 * NULL when there is no room (a follower of an ended run that was told so
 * makes room). */
static fhost *host_of(tpd_follow *f, const char *host, int64_t pid, bool add)
{
    fhost *h;
    size_t i;
    for (i = 0; i < f->nhosts; i++)
        if (f->hosts[i].pid == pid && strcmp(f->hosts[i].host, host) == 0) return &f->hosts[i];
    if (!add) return NULL;
    if (f->nhosts < TPD_FOLLOW_HOSTS) {
        h = &f->hosts[f->nhosts++];
    } else {
        for (h = NULL, i = 0; i < f->nhosts && h == NULL; i++)
            if (f->hosts[i].told_end) h = &f->hosts[i];
        if (h == NULL) return NULL;
    }
    memset(h, 0, sizeof *h);
    snprintf(h->host, sizeof h->host, "%s", host);
    h->pid = pid;
    return h;
}

/* who reads a follower's host and pid, the arguments ha and pa. */
static tp_err who(const tpd_req *q, tpd_reply *r, tp_arg ha, tp_arg pa, char **host, int64_t *pid)
{
    tp_err err = tpd_req_need_str(q, r, ha, host);
    if (err == TP_OK && (err = tpd_req_need_int(q, r, pa, pid)) != TP_OK) {
        free(*host);
        *host = NULL;
    }
    return err;
}

/* newest_open is the newest run that has not ended, or NULL. */
static frun *newest_open(tpd_follow *f)
{
    for (size_t i = f->nruns; i > 0; i--)
        if (!f->runs[i - 1].ended) return &f->runs[i - 1];
    return NULL;
}

/* key_asides replies the executions the follower is still to move aside:
 * fr's from the asided-th on. */
static void key_asides(tpd_reply *r, const frun *fr, int64_t asided)
{
    size_t from = (uint64_t)asided < fr->naside ? (size_t)asided : fr->naside;
    tpd_reply_ints(r, TPR_exec_next_aside, fr->aside + from, fr->naside - from);
}

/* exec.next run after host pid asided -> state ("wait", "exec", "end"),
 * run, aside (executions to move aside first, from the asided-th on); for
 * "exec": exec, role, key, argv, env, finished. */
tp_err tpd_follow_cmd_next(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    tpd_follow *f = tpd_control_follow(c);
    int64_t run = 0, after = 0, pid, asided = 0;
    char *host = NULL;
    fexec *next = NULL;
    frun *fr;
    fhost *h;
    tp_err err;
    if ((err = who(q, r, TPA_exec_next_host, TPA_exec_next_pid, &host, &pid)) != TP_OK) return err;
    (void)tpd_req_int(q, TPA_exec_next_run, &run); /* absent: 0 (their types checked) */
    (void)tpd_req_int(q, TPA_exec_next_after, &after);
    if (tpd_req_int(q, TPA_exec_next_asided, &asided) == TP_OK && asided < 0) {
        free(host);
        return tpd_reply_fail(r, TP_EINVAL, "argument 'asided' is negative");
    }
    h = host_of(f, host, pid, true);
    free(host);
    if (h == NULL)
        return tpd_reply_fail(r, TP_EFULL, "more than %d hosts follow this daemon's runs",
                              TPD_FOLLOW_HOSTS);
    fr = run > 0 ? run_of(f, run) : newest_open(f);
    if (fr == NULL) {
        tpd_reply_cstr(r, TPR_exec_next_state, "wait");
        return TP_OK;
    }
    h->run = fr->run;
    tpd_reply_int(r, TPR_exec_next_run, fr->run);
    key_asides(r, fr, asided);
    for (size_t i = 0; i < f->nexecs && next == NULL; i++)
        if (f->execs[i]->run == fr->run && f->execs[i]->exec > after) next = f->execs[i];
    if (next != NULL) {
        h->exec = next->exec;
        h->done = false;
        h->unsent = 0;
        tpd_reply_cstr(r, TPR_exec_next_state, "exec");
        tpd_reply_int(r, TPR_exec_next_exec, next->exec);
        tpd_reply_cstr(r, TPR_exec_next_role, next->role);
        tpd_reply_cstr(r, TPR_exec_next_key, next->key);
        tpd_reply_cstrs(r, TPR_exec_next_argv, next->argv, next->nargv);
        tpd_reply_cstrs(r, TPR_exec_next_env, next->env, next->nenv);
        tpd_reply_bool(r, TPR_exec_next_finished, next->finished);
    } else if (fr->ended) {
        h->told_end = true;
        tpd_reply_cstr(r, TPR_exec_next_state, "end");
    } else {
        tpd_reply_cstr(r, TPR_exec_next_state, "wait");
    }
    return TP_OK;
}

/* exec.done exec host pid status signal [unsent] [leaving] -> (nothing):
 * how the follower's command of exec ended, and how many spool files of it
 * the follower holds that it could not send; leaving, it is as good as told
 * the run ended (run.end does not wait for it). */
tp_err tpd_follow_cmd_done(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t exec, pid, status, sig, unsent = 0;
    char *host = NULL;
    bool has;
    fhost *h;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_exec_done_exec, &exec)) != TP_OK ||
        (err = tpd_req_need_int(q, r, TPA_exec_done_status, &status)) != TP_OK ||
        (err = tpd_req_need_int(q, r, TPA_exec_done_signal, &sig)) != TP_OK ||
        (err = tpd_req_opt_int(q, r, TPA_exec_done_unsent, &unsent, &has)) != TP_OK)
        return err;
    if (unsent < 0) return tpd_reply_fail(r, TP_EINVAL, "unsent must not be negative");
    if ((err = who(q, r, TPA_exec_done_host, TPA_exec_done_pid, &host, &pid)) != TP_OK) return err;
    h = host_of(tpd_control_follow(c), host, pid, false);
    free(host);
    if (h == NULL || h->exec != exec)
        return tpd_reply_fail(r, TP_ENOENT, "this follower was not given execution %lld",
                              (long long)exec);
    h->done = true;
    h->status = status;
    h->signal = sig;
    h->unsent = unsent;
    if (tpd_req_flag(q, TPA_exec_done_leaving)) h->told_end = true;
    return TP_OK;
}

/* exec.aside run exec -> (nothing): the leader moved aside what exec saved;
 * the followers that ran it do the same before their next execution. */
tp_err tpd_follow_cmd_aside(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t run, exec;
    frun *fr;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_exec_aside_run, &run)) != TP_OK ||
        (err = tpd_req_need_int(q, r, TPA_exec_aside_exec, &exec)) != TP_OK)
        return err;
    if ((fr = run_of(tpd_control_follow(c), run)) == NULL)
        return tpd_reply_fail(r, TP_ENOENT, "no run %lld is followed", (long long)run);
    if (fr->naside == TPD_FOLLOW_ASIDE)
        return tpd_reply_fail(r, TP_EFULL, "more than %d executions of run %lld moved aside",
                              TPD_FOLLOW_ASIDE, (long long)run);
    fr->aside[fr->naside++] = exec;
    return TP_OK;
}

/* exec.followers exec -> running (followers given exec whose command has
 * not ended), waiting (them, "host (pid N)", comma-separated), failed (those
 * whose command ended otherwise than with status 0: "host (pid N): status
 * S" or "...: signal S"), status, signal (the first of those: -1 and 0 when
 * none), unsent (those done that hold spool files of exec they could not
 * send: "host (pid N): K"). */
tp_err tpd_follow_cmd_followers(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    tpd_follow *f = tpd_control_follow(c);
    int64_t exec, running = 0, status = -1, sig = 0;
    tpd_str waiting, failed, unsent;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_exec_followers_exec, &exec)) != TP_OK) return err;
    tpd_str_init(&waiting);
    tpd_str_init(&failed);
    tpd_str_init(&unsent);
    for (size_t i = 0; i < f->nhosts; i++) {
        const fhost *h = &f->hosts[i];
        if (h->exec != exec) continue;
        if (!h->done) {
            running++;
            tpd_str_printf(&waiting, "%s%s (pid %lld)", waiting.len ? ", " : "", h->host,
                           (long long)h->pid);
        } else if (h->status != 0 || h->signal != 0) {
            if (status == -1 && sig == 0) status = h->status, sig = h->signal;
            tpd_str_printf(&failed, "%s%s (pid %lld): %s %lld", failed.len ? ", " : "", h->host,
                           (long long)h->pid, h->signal ? "signal" : "status",
                           (long long)(h->signal ? h->signal : h->status));
        }
        if (h->done && h->unsent > 0)
            tpd_str_printf(&unsent, "%s%s (pid %lld): %lld", unsent.len ? ", " : "", h->host,
                           (long long)h->pid, (long long)h->unsent);
    }
    tpd_reply_int(r, TPR_exec_followers_running, running);
    tpd_reply_cstr(r, TPR_exec_followers_waiting, tpd_str_cstr(&waiting));
    tpd_reply_cstr(r, TPR_exec_followers_failed, tpd_str_cstr(&failed));
    tpd_reply_int(r, TPR_exec_followers_status, status);
    tpd_reply_int(r, TPR_exec_followers_signal, sig);
    tpd_reply_cstr(r, TPR_exec_followers_unsent, tpd_str_cstr(&unsent));
    err = waiting.oom || failed.oom || unsent.oom ? tpd_reply_fail(r, TP_ENOMEM, "out of memory")
                                                  : TP_OK;
    tpd_str_free(&waiting);
    tpd_str_free(&failed);
    tpd_str_free(&unsent);
    return err;
}

/* run.end run -> untold (followers of run not yet told it ended): the check
 * is over; the leader asks until none is left, or its bound. */
tp_err tpd_follow_cmd_end(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    tpd_follow *f = tpd_control_follow(c);
    int64_t run, untold = 0;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_run_end_run, &run)) != TP_OK) return err;
    run_add(f, run)->ended = true;
    for (size_t i = 0; i < f->nhosts; i++)
        untold += f->hosts[i].run == run && !f->hosts[i].told_end;
    tpd_reply_int(r, TPR_run_end_untold, untold);
    return TP_OK;
}
