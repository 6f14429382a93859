/* SPDX-License-Identifier: MIT
 * exec.c -- create, run, ingest and finish one execution. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/control.h"
#include "tools/base/cli.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/client/follow.h"
#include "tools/client/spool.h"

enum { E_PRELOAD, E_DAEMON, E_CONTROL, E_RUN, E_EXEC, E_KEY, E_ROLE, E_SPOOL, E_PIDNS, E_OURS };

void tpt_agent_env_free(char **env, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) free(env[i]);
    free(env);
}

/* kv returns "key=a", or "key=a:b" when b is not NULL (free() it). */
static char *kv(const char *key, const char *a, const char *b)
{
    size_t n = strlen(key) + 1 + strlen(a) + (b != NULL ? strlen(b) + 1 : 0) + 1;
    char *p = malloc(n);
    if (p == NULL) return NULL;
    if (b != NULL)
        snprintf(p, n, "%s=%s:%s", key, a, b);
    else
        snprintf(p, n, "%s=%s", key, a);
    return p;
}

/* The check variables, as names without a value: tpt_launch removes them
 * from the caller's environment, and a check's own "KEY=VALUE" (later in
 * the array) sets them again. */
static char *const check_vars[] = {TP_ENV_CHECK_VARS};
#define NCHECK (sizeof check_vars / sizeof check_vars[0])

char **tpt_agent_env(const tpt_agent_vars *a, size_t *n)
{
    const char *old = getenv("LD_PRELOAD");
    size_t extra = 0, ours = E_OURS + (a->token[0] != '\0'), i;
    char num[2][32], pidns[160];
    char **env;

    while (a->extra != NULL && a->extra[extra] != NULL) extra++;
    if ((env = calloc(ours + NCHECK + extra + 1, sizeof(*env))) == NULL) return NULL;
    snprintf(num[0], sizeof(num[0]), "%lld", (long long)a->run);
    snprintf(num[1], sizeof(num[1]), "%lld", (long long)a->exec);
    env[E_PRELOAD] = kv("LD_PRELOAD", a->agent, old != NULL && old[0] != '\0' ? old : NULL);
    env[E_DAEMON] = kv(TP_ENV_DAEMON, a->daemon, NULL);
    env[E_CONTROL] = kv(TP_ENV_CONTROL, a->control, NULL);
    env[E_RUN] = kv(TP_ENV_RUN, num[0], NULL);
    env[E_EXEC] = kv(TP_ENV_EXEC, num[1], NULL);
    env[E_KEY] = kv(TP_ENV_EXEC_KEY, a->key, NULL);
    env[E_ROLE] = kv(TP_ENV_ROLE, a->role, NULL);
    env[E_SPOOL] = kv(TP_ENV_SPOOL, a->spool, NULL);
    /* the agents of another pid space (another host, a container) tag their
     * pids with it (proto/control.h); "" when /proc does not say */
    if (tp_pidns(pidns, sizeof pidns) != TP_OK) pidns[0] = '\0';
    env[E_PIDNS] = kv(TP_ENV_PIDNS, pidns, NULL);
    if (ours > E_OURS) env[E_OURS] = kv(TP_ENV_TOKEN, a->token, NULL);
    for (i = 0; i < ours; i++) {
        if (env[i] == NULL) {
            tpt_agent_env_free(env, ours);
            return NULL;
        }
    }
    /* The names and the caller's strings are borrowed, not copied: only ours
     * are freed. */
    for (i = 0; i < NCHECK; i++) env[ours + i] = check_vars[i];
    for (i = 0; i < extra; i++) env[ours + NCHECK + i] = a->extra[i];
    *n = ours;
    return env;
}

/* make_env is tpt_agent_env for an execution of this host's session. */
static char **make_env(tpt_session *s, int64_t run, int64_t exec, const char *key,
                       const tpt_exec_spec *spec, size_t *n)
{
    tpt_daemon *d = tpt_session_daemon(s);
    tpt_agent_vars a = {tpt_session_agent(s),
                        tpt_daemon_ingest(d),
                        tpt_daemon_control(d),
                        tpt_daemon_token(d),
                        tpt_session_spool(s),
                        run,
                        exec,
                        key,
                        spec->role,
                        spec->env};
    return tpt_agent_env(&a, n);
}

/* shared_env returns what the agents of every host need, for the hosts
 * that follow the check (trainparity-run join): spec's variables and the
 * tool's pid space, in a NULL-terminated array whose last string only is
 * owned; NULL when the check is not on the network (tpt_daemon_on_network)
 * or out of memory (*oom). */
static char **shared_env(tpt_session *s, const tpt_exec_spec *spec, bool *oom)
{
    size_t n = 0, i;
    char pidns[160], **env;
    *oom = false;
    if (!tpt_daemon_on_network(tpt_session_daemon(s))) return NULL;
    while (spec->env != NULL && spec->env[n] != NULL) n++;
    if ((env = calloc(n + 2, sizeof *env)) == NULL) goto oom;
    for (i = 0; i < n; i++) env[i] = spec->env[i];
    if (tp_pidns(pidns, sizeof pidns) != TP_OK) pidns[0] = '\0';
    if ((env[n] = kv(TP_ENV_PIDNS, pidns, NULL)) != NULL) return env;
    free(env);
oom:
    *oom = true;
    return NULL;
}

static void shared_free(char **env)
{
    size_t n = 0;
    if (env == NULL) return;
    while (env[n] != NULL) n++;
    free(env[n - 1]);
    free(env);
}

/* wait_followers waits, up to TPT_FOLLOWERS_WAIT_MS, until no follower
 * runs the command of execution res->exec any more, and says which did not
 * end or failed; a follower's failure becomes the execution's when this
 * host's command succeeded.  A follower that holds spool files of it that
 * it could not send leaves the execution without what its agents spooled:
 * TP_ENOENT (with err; res->unsent names them), and the check must not
 * judge it as if whole. */
static tp_err wait_followers(tpt_session *s, tpt_exec_result *res, char *err)
{
    int64_t exec = res->exec;
    tpt_exit *exit = &res->exit;
    long long until = tpt_now_ms() + TPT_FOLLOWERS_WAIT_MS;
    char why[TPT_ERR_LEN];
    tpt_followers f;
    for (;;) {
        if (tpt_follow_followers(tpt_session_client(s), exec, &f, why) != TP_OK) {
            tpt_error("cannot ask after the hosts that follow execution %lld: %s", (long long)exec,
                      why);
            return TP_OK;
        }
        if (f.running == 0) break;
        if (tpt_now_ms() >= until) {
            tpt_error("execution %lld: still running on %s %d s after this host's command "
                      "ended; going on without it",
                      (long long)exec, f.waiting, TPT_FOLLOWERS_WAIT_MS / 1000);
            break;
        }
        tpt_sleep_ms(TPT_FOLLOW_POLL_MS);
    }
    if (f.failed[0] != '\0') {
        tpt_error("execution %lld: the command failed on %s", (long long)exec, f.failed);
        if (exit->status == 0 && exit->signal == 0) *exit = f.first;
    }
    if (f.unsent[0] == '\0') return TP_OK;
    snprintf(res->unsent, sizeof res->unsent, "%s", f.unsent);
    return tpt_seterr(err, TP_ENOENT,
                      "execution %lld is incomplete: spool files its agents wrote on another "
                      "host were not sent (%s); store them on the daemon's host "
                      "(trainparity-daemon ingest FILE) and judge the run again",
                      (long long)exec, f.unsent);
}

/* The daemon's watch while the command runs: a private daemon that died is
 * restarted at once, so the agents have one to redial; the first error (it
 * could not be) is kept. */
typedef struct watch {
    tpt_daemon *d;
    tp_err rc;
    char err[TPT_ERR_LEN];
} watch;

static void on_tick(void *arg)
{
    watch *w = arg;
    if (w->rc == TP_OK) w->rc = tpt_daemon_check(w->d, w->err);
}

tp_err tpt_exec_run(tpt_session *s, int64_t run, const tpt_exec_spec *spec, tpt_exec_result *res,
                    char *err)
{
    watch w = {tpt_session_daemon(s), TP_OK, ""};
    tpt_tick tick = {on_tick, &w};
    tpt_client *c = tpt_session_client(s);
    int wait_ms = spec->wait_ms > 0 ? spec->wait_ms : TPT_FINISH_WAIT_MS;
    char why[TPT_ERR_LEN], key[TP_EXEC_KEY_LEN + 1];
    char **env = NULL, **shared;
    size_t nown = 0;
    bool oom;
    tp_err rc, frc;

    memset(res, 0, sizeof(*res));
    res->exec = -1;
    shared = shared_env(s, spec, &oom);
    if (oom) return tpt_seterr(err, TP_ENOMEM, "out of memory");
    rc = tpt_exec_create(c, run, spec->role, spec->argv, shared, &res->exec, key, err);
    shared_free(shared);
    if (rc != TP_OK) return rc;
    tpt_session_ran(s, run);
    if ((env = make_env(s, run, res->exec, key, spec, &nown)) == NULL) {
        rc = tpt_seterr(err, TP_ENOMEM, "out of memory");
        goto finish;
    }
    rc = tpt_launch(spec->argv, env, &tick, &res->exit, &res->spawn_errno, err);
    tpt_agent_env_free(env, nown);
    if (rc != TP_OK) goto finish;
    res->launched = true;
    if (tpt_daemon_on_network(w.d)) rc = wait_followers(s, res, err);
    if (w.rc != TP_OK) { /* no daemon: the spool files stay for a later ingest */
        rc = tpt_seterr(err, w.rc, "%s", w.err);
        goto finish;
    }
    /* this host's spool is stored also when a follower's is missing; the
     * first error is the one reported */
    frc = tpt_spool_ingest(c, tpt_session_spool(s), res->exec, &res->spooled, &res->nspool,
                           rc == TP_OK ? err : why);
    if (rc == TP_OK) rc = frc;
finish:
    /* Always close the execution, also when it never started, so the
     * daemon does not wait for it; the first error is the one reported. */
    frc = tpt_exec_finish(c, res->exec, res->launched ? res->exit.status : -1,
                          res->launched ? res->exit.signal : -1, res->launched ? wait_ms : 0,
                          &res->finish, why);
    if (frc == TP_OK) {
        res->finished = true;
        /* events the daemon received and could not store are lost to
         * every check, never a success; err names them whatever failed
         * first */
        if (res->finish.unstored > 0) {
            char first[TPT_ERR_LEN] = "";
            if (rc != TP_OK && err != NULL) snprintf(first, sizeof(first), "%s; ", err);
            rc = tpt_seterr(err, rc != TP_OK ? rc : TP_EDB,
                            "%sthe daemon could not store %lld events of execution %lld: %s", first,
                            (long long)res->finish.unstored, (long long)res->exec,
                            res->finish.unstored_why);
        }
    } else if (rc == TP_OK) {
        rc = tpt_seterr(err, frc, "%s", why);
    }
    return rc;
}

bool tpt_exec_cut(const tpt_exec_result *res)
{
    return res->launched && tpt_launch_stopped() != 0;
}

int tpt_exec_one(tpt_session *s, const char *tag, int64_t run, const tpt_exec_spec *spec,
                 tpt_exec_result *res)
{
    char err[TPT_ERR_LEN], shown[512], who[64] = "", stored[64] = "";
    bool failed = false;
    long long t0 = tpt_now_ms();
    double secs;
    if (spec->role != NULL && strcmp(spec->role, tag) != 0)
        snprintf(who, sizeof who, "%s: ", spec->role);
    tpt_argv_join(spec->argv, shown, sizeof shown);
    tpt_progress(tag, "%srunning %s", who, shown);
    if (tpt_exec_run(s, run, spec, res, err) != TP_OK) {
        tpt_error("%s%s", who, err);
        failed = true;
        if (!res->launched) return -1;
    }
    secs = (double)(tpt_now_ms() - t0) / 1000.0;
    if (res->finished)
        snprintf(stored, sizeof stored, ", %lld events stored", (long long)res->finish.events);
    if (res->exit.signal > 0)
        tpt_progress(tag, "%skilled by signal %d after %.1f s%s", who, res->exit.signal, secs,
                     stored);
    else
        tpt_progress(tag, "%sexited with status %d after %.1f s%s", who, res->exit.status, secs,
                     stored);
    if (tpt_launch_stopped() != 0) {
        /* told to stop: an execution cut short is no evidence, and the
         * next would run after the user or a time limit said to stop */
        tpt_error("%s: %s reached %s while %s ran: the check stops without a verdict", tag,
                  tpt_signal_name(tpt_launch_stopped()), TPT_PROG,
                  spec->role != NULL ? spec->role : tag);
        return -1;
    }
    return failed ? -1 : 0;
}
