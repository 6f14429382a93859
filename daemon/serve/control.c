/* SPDX-License-Identifier: MIT
 * control.c -- the control socket's commands: the command table, the
 * handlers of the built-in commands and the dispatch (the token, then the
 * handler); reqrep.c checks requests and writes replies. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/text.h"
#include "daemon/checks/judge.h"
#include "daemon/checks/params.h"
#include "daemon/serve/control.h"
#include "daemon/serve/follow.h"
#include "daemon/serve/lease.h"
#include "daemon/store/query.h"

#include "tp_version.h"

struct tpd_control {
    tpd_store *store;
    tpd_ingest *ingest;
    char *token;
    bool shutdown;
    tpd_lease *lease;     /* the processes attached (attach/detach) */
    tpd_follow *follow;   /* the executions other hosts follow */
    tpd_backlog *backlog; /* batches received and not stored yet (serve.c); NULL */
    double pruned_ms;     /* when tpd_control_tick last pruned the lease */
};

/* store_fail words a store error for the reply. */
static tp_err store_fail(tpd_control *c, tpd_reply *r, tp_err err)
{
    return tpd_reply_fail(r, err, "%s: %s", tp_strerror(err), tpd_store_errmsg(c->store));
}

/* ---- commands ---- */

static tp_err cmd_ping(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    tpd_reply_cstr(r, TPR_ping_version, TP_VERSION);
    tpd_reply_cstr(r, TPR_ping_db, tpd_store_path(c->store));
    tpd_reply_int(r, TPR_ping_pid, (int64_t)getpid());
    tpd_reply_int(r, TPR_ping_attached, tpd_lease_count(c->lease));
    return TP_OK;
}

/* cmd_run_create makes a run.  Its created_ns is the check's start (the
 * wall time a report gives, checks/render.h): started_ago_ns (optional) says how
 * long ago, on the tool's monotonic clock, the tool started it; a duration
 * rather than a time, so that a daemon on another host, whose clock differs,
 * still places it right.  params (optional), the check's declaration, is
 * stored as given once it parses as a JSON object. */
static tp_err cmd_run_create(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    char *name = NULL, *check = NULL, *params = NULL;
    int64_t run = 0, now = tpd_now_ns(), ago = 0;
    bool has_ago;
    tp_err err;
    if ((err = tpd_req_opt_str(q, r, TPA_run_create_name, &name)) != TP_OK) goto out;
    if ((err = tpd_req_need_str(q, r, TPA_run_create_check, &check)) != TP_OK) goto out;
    if ((err = tpd_req_opt_str(q, r, TPA_run_create_params, &params)) != TP_OK) goto out;
    if (params != NULL) {
        /* the checks read the params as a JSON object (checks/params.h):
         * what they could not read is refused now, not at the verdict */
        char why[256];
        tpd_params par;
        err = tpd_params_parse(&par, params, why, sizeof why);
        if (err == TP_OK) err = tpd_params_check(&par, check, why, sizeof why);
        tpd_params_clear(&par);
        if (err != TP_OK) {
            tpd_reply_fail(r, err, "argument 'params': %s", why);
            goto out;
        }
    }
    if ((err = tpd_req_opt_int(q, r, TPA_run_create_started_ago_ns, &ago, &has_ago)) != TP_OK)
        goto out;
    if (ago < 0 || ago > now) {
        err = tpd_reply_fail(r, TP_EINVAL, "argument 'started_ago_ns' is out of range");
        goto out;
    }
    if ((err = tpd_store_run_create_at(c->store, name, check, params, now - ago, &run)) != TP_OK) {
        store_fail(c, r, err);
        goto out;
    }
    tpd_reply_int(r, TPR_run_create_run, run);
out:
    free(name);
    free(check);
    free(params);
    return err;
}

/* cmd_run_find names a stored run: the run "run" (an id), or the latest run
 * called "name" whose check is "check" (optional: any check).  Replies
 * found; when found, the run's id, check and name (nil when it has none).
 * A check that judges its run against another (compare, against a golden
 * run) resolves what the user named before it runs anything. */
static tp_err cmd_run_find(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    char *name = NULL, *check = NULL, *found_check = NULL, *found_name = NULL;
    int64_t run = 0, id = 0;
    bool has_run;
    tp_err err;
    if ((err = tpd_req_opt_int(q, r, TPA_run_find_run, &run, &has_run)) != TP_OK) return err;
    if ((err = tpd_req_opt_str(q, r, TPA_run_find_name, &name)) != TP_OK) goto out;
    if ((err = tpd_req_opt_str(q, r, TPA_run_find_check, &check)) != TP_OK) goto out;
    if (has_run == (name != NULL)) {
        err = tpd_reply_fail(r, TP_EINVAL, "give one of 'run' and 'name'");
        goto out;
    }
    /* an id below 1 names no run (ids start at 1) */
    err = has_run && run <= 0 ? TP_ENOENT
                              : tpd_store_run_find(c->store, has_run ? run : 0, name, check, &id,
                                                   &found_check, &found_name);
    if (err == TP_OK) {
        tpd_reply_bool(r, TPR_run_find_found, true);
        tpd_reply_int(r, TPR_run_find_run, id);
        tpd_reply_cstr(r, TPR_run_find_check, found_check);
        tpd_reply_cstr(r, TPR_run_find_name, found_name);
    } else if (err == TP_ENOENT) {
        tpd_reply_bool(r, TPR_run_find_found, false);
        err = TP_OK;
    } else if (err == TP_ENOMEM) {
        tpd_reply_fail(r, err, "out of memory");
    } else {
        store_fail(c, r, err);
    }
out:
    free(found_check);
    free(found_name);
    free(name);
    free(check);
    return err;
}

/* cmd_exec_create makes an execution and its key (store/store.h), which only
 * this reply carries: trainparity-run hands it to the agent. */
static tp_err cmd_exec_create(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    char *role = NULL, key[TP_EXEC_KEY_LEN + 1], **env = NULL, **args = NULL;
    size_t nenv = 0, nargs = 0;
    int64_t run, exec = 0;
    tpd_str argv;
    tp_mpr f;
    tp_err err;
    tpd_str_init(&argv);
    if ((err = tpd_req_need_int(q, r, TPA_exec_create_run, &run)) != TP_OK) goto out;
    if ((err = tpd_req_opt_str(q, r, TPA_exec_create_role, &role)) != TP_OK) goto out;
    err = tpd_req_find(q, TPA_exec_create_argv, &f);
    if (err == TP_OK && tpd_json_strs(&argv, &f) != TP_OK) err = TP_EPROTO;
    if (err == TP_EPROTO) {
        err = tpd_reply_fail(r, TP_EINVAL, "argument 'argv' is not an array of strings");
        goto out;
    }
    if (argv.oom) {
        err = tpd_reply_fail(r, TP_ENOMEM, "out of memory");
        goto out;
    }
    /* env: the variables of an execution other hosts follow (follow.h) */
    err = tpd_follow_strs(q, TPA_exec_create_env, &env, &nenv);
    if (err == TP_OK) err = tpd_follow_strs(q, TPA_exec_create_argv, &args, &nargs);
    if (err == TP_ENOMEM) {
        err = tpd_reply_fail(r, err, "out of memory");
        goto out;
    }
    if (err == TP_EPROTO) {
        err = tpd_reply_fail(r, TP_EINVAL, "argument 'env' is not an array of strings");
        goto out;
    }
    err = tpd_store_exec_create_keyed(c->store, run, role, argv.s, &exec, key);
    if (err == TP_ENOENT) {
        tpd_reply_fail(r, err, "no run %lld", (long long)run);
        goto out;
    }
    if (err == TP_EIO) {
        tpd_reply_fail(r, err, "no random source for the execution's key");
        goto out;
    }
    if (err != TP_OK) {
        store_fail(c, r, err);
        goto out;
    }
    if (env != NULL &&
        (err = tpd_follow_exec(c->follow, run, exec, role, key, args, nargs, env, nenv)) != TP_OK) {
        env = args = NULL, nenv = nargs = 0;
        tpd_reply_fail(r, err, "out of memory");
        goto out;
    }
    env = args = NULL, nenv = nargs = 0; /* the registry's now */
    tpd_reply_int(r, TPR_exec_create_exec, exec);
    tpd_reply_str(r, TPR_exec_create_key, key, TP_EXEC_KEY_LEN);
out:
    tpd_follow_strs_free(env, nenv);
    tpd_follow_strs_free(args, nargs);
    tpd_str_free(&argv);
    free(role);
    return err;
}

/* stored_in counts the events of (exec, pid) with a seq in lo..hi that the
 * store has (tpd_backlog_stored_fn). */
static int64_t stored_in(void *store, int64_t exec, int64_t pid, int64_t lo, int64_t hi)
{
    return tpd_store_events_in(store, exec, pid, lo, hi);
}

/* cmd_exec_finish records how exec's command ended and answers pending
 * while its events may still come; then its counts.  Events the daemon
 * received and could not store (ingest/backlog.h) are waited for like a process
 * without a bye, and reported as "unstored" with the database's reason;
 * the execution is marked finished only once none waits (or the wait is
 * over), as ingest refuses a new process of a finished execution.  When the
 * database cannot even record the finish, an execution with unstored
 * events still gets its counts (those stored), the loss being the news. */
static tp_err cmd_exec_finish(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t exec, status = 0, sig = 0, wait_ms = 0, ngaps = 0, unstored;
    bool has_status, has_sig, has_wait;
    tpd_backlog_info un = {0, 0, NULL};
    tpd_exec_state st;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_exec_finish_exec, &exec)) != TP_OK) return err;
    if ((err = tpd_req_opt_int(q, r, TPA_exec_finish_status, &status, &has_status)) != TP_OK)
        return err;
    if ((err = tpd_req_opt_int(q, r, TPA_exec_finish_signal, &sig, &has_sig)) != TP_OK) return err;
    if ((err = tpd_req_opt_int(q, r, TPA_exec_finish_wait_ms, &wait_ms, &has_wait)) != TP_OK)
        return err;
    err = tpd_store_exec_state(c->store, exec, &st);
    if (err == TP_ENOENT) return tpd_reply_fail(r, err, "no execution %lld", (long long)exec);
    if (err != TP_OK) return store_fail(c, r, err);
    if (c->backlog) tpd_backlog_exec(c->backlog, exec, stored_in, c->store, &un);
    if (un.waiting > 0 && tpd_backlog_waited(c->backlog, exec) < (double)wait_ms) {
        tpd_reply_bool(r, TPR_exec_finish_pending, true);
        return TP_OK;
    }
    unstored = un.waiting + un.lost;
    err = tpd_store_exec_finish(c->store, exec, has_status ? &status : NULL, has_sig ? &sig : NULL);
    if (err == TP_OK) err = tpd_store_exec_state(c->store, exec, &st);
    if (err != TP_OK && unstored == 0) return store_fail(c, r, err);
    /* An agent has the daemon confirm its last events before its process
     * exits, so only a process without a bye can still be in flight; a
     * command in which no process reported (not Python, or no torch) has
     * nothing coming.  With events unstored the wait is over already (a
     * bye may be among them), and the execution incomplete anyway. */
    if (err == TP_OK && unstored == 0 && st.with_bye < st.processes &&
        (tpd_now_ns() - st.finished_ns) / 1000000 < wait_ms) {
        tpd_reply_bool(r, TPR_exec_finish_pending, true);
        return TP_OK;
    }
    tpd_follow_finished(c->follow, exec);
    if (err == TP_OK) err = tpd_store_gaps_compute(c->store, exec, &ngaps);
    if (err != TP_OK && unstored == 0) return store_fail(c, r, err);
    if (err != TP_OK) ngaps = st.gaps; /* as last computed */
    tpd_reply_bool(r, TPR_exec_finish_pending, false);
    tpd_reply_bool(r, TPR_exec_finish_complete, st.with_bye == st.processes && unstored == 0);
    tpd_reply_int(r, TPR_exec_finish_processes, st.processes);
    tpd_reply_int(r, TPR_exec_finish_events, st.events);
    tpd_reply_int(r, TPR_exec_finish_gaps, ngaps);
    tpd_reply_int(r, TPR_exec_finish_dropped, st.dropped);
    tpd_reply_int(r, TPR_exec_finish_unstored, unstored);
    if (unstored > 0) tpd_reply_cstr(r, TPR_exec_finish_unstored_why, un.why ? un.why : "unknown");
    return TP_OK;
}

/* cmd_seen answers an agent's acknowledgement request (agent/send.c), and
 * tells it with end that its execution is over: a process of it said bye
 * "interrupt" (resume's I), on which an agent that was asked to interrupt
 * ends its process too, whatever it is blocked in. */
static tp_err cmd_seen(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t exec, pid, seq = -1;
    bool bye = false, end = false;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_seen_exec, &exec)) != TP_OK) return err;
    if ((err = tpd_req_need_int(q, r, TPA_seen_pid, &pid)) != TP_OK) return err;
    if ((err = tpd_store_seen(c->store, exec, pid, &seq, &bye)) != TP_OK ||
        (err = tpd_store_exec_interrupted(c->store, exec, &end)) != TP_OK)
        return store_fail(c, r, err);
    tpd_reply_int(r, TPR_seen_seq, seq);
    tpd_reply_bool(r, TPR_seen_bye, bye);
    tpd_reply_bool(r, TPR_seen_end, end);
    return TP_OK;
}

/* cmd_ingest stores a spool file the daemon's own user wrote on this host
 * (path: tpd_ingest_spool_confined), where a control socket reachable from
 * the network (the one given a token) reads no file at all; or the frames
 * of one that a tool read on its own host (frames: tpd_ingest_frames), on
 * any control socket, each batch carrying the token as on the ingest
 * socket. */
static tp_err cmd_ingest(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    char *path = NULL, why[512];
    const uint8_t *frames;
    uint32_t n;
    tpd_spool_result res;
    tp_err err;
    if (c->ingest == NULL) return tpd_reply_fail(r, TP_EINVAL, "this daemon cannot ingest");
    /* (tpd_req_command checked the declared types: frames is bytes or absent) */
    if (tpd_req_bin(q, TPA_ingest_frames, &frames, &n) == TP_OK) {
        err = tpd_ingest_frames(c->ingest, frames, n, &res, why, sizeof why);
    } else {
        if (!tpd_req_local(q))
            return tpd_reply_fail(r, TP_EINVAL,
                                  "a spool file is read on a local control socket only: send "
                                  "its frames, or run trainparity-daemon ingest FILE on the "
                                  "daemon's host");
        if ((err = tpd_req_need_str(q, r, TPA_ingest_path, &path)) != TP_OK) return err;
        err = tpd_ingest_spool_confined(c->ingest, path, &res, why, sizeof why);
        free(path);
    }
    if (err != TP_OK) return tpd_reply_fail(r, err, "%s", why);
    tpd_reply_int(r, TPR_ingest_events, (int64_t)res.events);
    tpd_reply_int(r, TPR_ingest_bad, (int64_t)res.bad);
    tpd_reply_bool(r, TPR_ingest_torn, res.torn);
    tpd_reply_int(r, TPR_ingest_frames, (int64_t)res.frames);
    tpd_reply_int(r, TPR_ingest_dup, (int64_t)res.dup);
    if (why[0]) tpd_reply_cstr(r, TPR_ingest_reason, why);
    return TP_OK;
}

/* cmd_query answers a view of the database (store/query.h) as "text":
 * what, id (not for "runs"), and json (optional, false): the view's JSON
 * form instead of its text. */
static tp_err cmd_query(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    char *what = NULL, why[512];
    int64_t id = 0;
    bool has_id;
    tpd_query_opts opts = {0};
    tpd_str out;
    tp_err err;
    if ((err = tpd_req_need_str(q, r, TPA_query_what, &what)) != TP_OK) return err;
    if ((err = tpd_req_opt_int(q, r, TPA_query_id, &id, &has_id)) != TP_OK) goto out;
    if (!has_id && strcmp(what, "runs") != 0) {
        err = tpd_reply_fail(r, TP_EINVAL, "missing argument 'id'");
        goto out;
    }
    opts.json = tpd_req_flag(q, TPA_query_json);
    tpd_str_init(&out);
    err = tpd_query_with(c->store, what, id, &opts, &out, why, sizeof why);
    if (err == TP_OK && out.oom) {
        snprintf(why, sizeof why, "out of memory");
        err = TP_ENOMEM;
    }
    if (err == TP_OK)
        tpd_reply_str(r, TPR_query_text, tpd_str_cstr(&out), out.len);
    else
        tpd_reply_fail(r, err, "%s", why);
    tpd_str_free(&out);
out:
    free(what);
    return err;
}

/* cmd_verdict judges a run (rtol, atol: a declared tolerance).  With plan
 * true, a verdict that asks for a narrowing (result.h) is not stored: the
 * reply says which steps to rerun with full digests (narrow_from,
 * narrow_to; narrow_b: B as well as A; narrow_r_from, narrow_r_to: I and R
 * as well, and R's steps), and the caller asks again once the
 * reruns ran; nor one that asks for --once's second baseline (second:
 * compare's D or resume's B is to run, then the caller asks again). */
static tp_err cmd_verdict(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t run;
    tpd_cmp_opts o = {false, 0, 0, NULL};
    bool has_r, has_a, plan = false;
    tpd_result res;
    char why[512];
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_verdict_run, &run)) != TP_OK) return err;
    if ((err = tpd_req_opt_f64(q, r, TPA_verdict_rtol, &o.rtol, &has_r)) != TP_OK) return err;
    if ((err = tpd_req_opt_f64(q, r, TPA_verdict_atol, &o.atol, &has_a)) != TP_OK) return err;
    plan = tpd_req_flag(q, TPA_verdict_plan);
    o.tolerance = has_r || has_a;
    if ((err = tpd_judge(c->store, run, &o, plan, &res, why, sizeof why)) != TP_OK)
        return tpd_reply_fail(r, err, "%s", why);
    if (plan && res.narrow) {
        tpd_reply_int(r, TPR_verdict_narrow_from, res.narrow_from);
        tpd_reply_int(r, TPR_verdict_narrow_to, res.narrow_to);
        tpd_reply_bool(r, TPR_verdict_narrow_b, res.narrow_b);
        if (res.narrow_r) {
            tpd_reply_int(r, TPR_verdict_narrow_r_from, res.narrow_r_from);
            tpd_reply_int(r, TPR_verdict_narrow_r_to, res.narrow_r_to);
        }
    }
    if (plan && res.second) tpd_reply_bool(r, TPR_verdict_second, true);
    tpd_reply_cstr(r, TPR_verdict_outcome, tpd_outcome_name(res.outcome));
    tpd_reply_cstr(r, TPR_verdict_text, res.text);
    tpd_reply_cstr(r, TPR_verdict_json, res.json);
    if (res.has_step) tpd_reply_int(r, TPR_verdict_step, res.step);
    tpd_reply_cstr(r, TPR_verdict_path, res.path);
    tpd_result_clear(&res);
    return TP_OK;
}

/* cmd_evidence answers "<check>.evidence" for a check that keeps an
 * evidence file (checks/judge.h): for trainparity-run coverage --evidence F,
 * a coverage run's every observation, one JSON line per ID.  Files that
 * large stay out of the stored verdict. */
static tp_err cmd_evidence(tpd_control *c, const tpd_req *q, tpd_reply *r, const char *check)
{
    int64_t run;
    tpd_run *obs = NULL;
    char why[512], *text = NULL;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_evidence_run, &run)) != TP_OK) return err;
    if ((err = tpd_obs_load(c->store, run, &obs, why, sizeof why)) != TP_OK)
        return tpd_reply_fail(r, err, "%s", why);
    err = tpd_judge_evidence(check, obs, &text, why, sizeof why);
    tpd_obs_free(obs);
    if (err != TP_OK) return tpd_reply_fail(r, err, "%s", why);
    tpd_reply_cstr(r, TPR_evidence_evidence, text);
    free(text);
    return TP_OK;
}

/* cmd_shutdown stops the daemon now, whoever is attached (an operator's
 * command; trainparity-run detaches instead). */
static tp_err cmd_shutdown(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    c->shutdown = true;
    return TP_OK;
}

/* cmd_attach makes the process pid a holder of the daemon (lease.h); owner
 * (optional, false): pid started this daemon, which is to exit when the last
 * holder has gone. */
static tp_err cmd_attach(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t pid;
    bool owner = false;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_attach_pid, &pid)) != TP_OK) return err;
    owner = tpd_req_flag(q, TPA_attach_owner);
    err = tpd_lease_attach(c->lease, pid, owner);
    if (err == TP_ENOENT) return tpd_reply_fail(r, err, "no process %lld", (long long)pid);
    if (err == TP_EFULL)
        return tpd_reply_fail(r, err, "%d processes attached already", TPD_LEASE_MAX);
    if (err != TP_OK)
        return tpd_reply_fail(r, err, "cannot attach pid %lld: %s", (long long)pid,
                              tp_strerror(err));
    tpd_reply_int(r, TPR_attach_attached, tpd_lease_count(c->lease));
    return TP_OK;
}

/* cmd_detach drops the process pid (and every holder that is gone); an
 * owned daemon that has no holder left exits after this reply. */
static tp_err cmd_detach(tpd_control *c, const tpd_req *q, tpd_reply *r)
{
    int64_t pid;
    tp_err err;
    if ((err = tpd_req_need_int(q, r, TPA_detach_pid, &pid)) != TP_OK) return err;
    tpd_reply_int(r, TPR_detach_attached, tpd_lease_detach(c->lease, pid));
    if (tpd_lease_over(c->lease)) c->shutdown = true;
    tpd_reply_bool(r, TPR_detach_exiting, c->shutdown);
    return TP_OK;
}

/* The handlers, one per command of proto/control.def but the evidence
 * command, which cmd_evidence answers for the check its name gives. */
static const tpd_cmd_fn handlers[TPC_COUNT] = {
    [TPC_ping] = cmd_ping,
    [TPC_run_create] = cmd_run_create,
    [TPC_run_find] = cmd_run_find,
    [TPC_exec_create] = cmd_exec_create,
    [TPC_exec_finish] = cmd_exec_finish,
    [TPC_exec_next] = tpd_follow_cmd_next,
    [TPC_exec_done] = tpd_follow_cmd_done,
    [TPC_exec_aside] = tpd_follow_cmd_aside,
    [TPC_exec_followers] = tpd_follow_cmd_followers,
    [TPC_run_end] = tpd_follow_cmd_end,
    [TPC_seen] = cmd_seen,
    [TPC_ingest] = cmd_ingest,
    [TPC_query] = cmd_query,
    [TPC_verdict] = cmd_verdict,
    [TPC_shutdown] = cmd_shutdown,
    [TPC_attach] = cmd_attach,
    [TPC_detach] = cmd_detach,
};

/* ---- dispatch ---- */

tp_err tpd_control_create(tpd_control **cp, tpd_store *s, tpd_ingest *in, const char *token)
{
    tpd_control *c;
    if (cp == NULL || s == NULL) return TP_EINVAL;
    c = calloc(1, sizeof *c);
    if (c == NULL) return TP_ENOMEM;
    c->store = s;
    c->ingest = in;
    if (tpd_lease_create(&c->lease) != TP_OK) {
        free(c);
        return TP_ENOMEM;
    }
    if (tpd_follow_create(&c->follow) != TP_OK) {
        tpd_lease_destroy(c->lease);
        free(c);
        return TP_ENOMEM;
    }
    if (token && token[0] && (c->token = strdup(token)) == NULL) {
        tpd_follow_destroy(c->follow);
        tpd_lease_destroy(c->lease);
        free(c);
        return TP_ENOMEM;
    }
    *cp = c;
    return TP_OK;
}

void tpd_control_destroy(tpd_control *c)
{
    if (c == NULL) return;
    free(c->token);
    tpd_follow_destroy(c->follow);
    tpd_lease_destroy(c->lease);
    free(c);
}

bool tpd_control_shutdown(const tpd_control *c)
{
    return c->shutdown;
}

void tpd_control_tick(tpd_control *c)
{
    struct timespec ts;
    double now;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    if (now - c->pruned_ms < TPD_LEASE_PRUNE_MS) return;
    c->pruned_ms = now;
    tpd_lease_prune(c->lease);
    if (tpd_lease_over(c->lease)) c->shutdown = true;
}

void tpd_control_set_backlog(tpd_control *c, tpd_backlog *b)
{
    c->backlog = b;
}

tpd_store *tpd_control_store(tpd_control *c)
{
    return c->store;
}

tpd_ingest *tpd_control_ingest(tpd_control *c)
{
    return c->ingest;
}

tpd_follow *tpd_control_follow(tpd_control *c)
{
    return c->follow;
}

/* The request's context while it is handled (tpd_reqrep_answer's arg). */
typedef struct handling {
    tpd_control *c;
    bool *proven;
} handling;

/* run_command checks the request's token, then its command and arguments
 * against their declaration (reqrep.h), and runs its handler. */
static tp_err run_command(void *arg, const tpd_req *q, tpd_reply *r)
{
    handling *h = arg;
    tpd_control *c = h->c;
    char check[64];
    tp_cmd cmd;
    tp_err err;
    if (c->token && !tpd_req_local(q)) {
        if (!tpd_req_token(q, c->token))
            return tpd_reply_fail(r, TP_EINVAL, "missing or wrong token");
        *h->proven = true;
    }
    if ((err = tpd_req_command(q, r, &cmd, check, sizeof check)) != TP_OK) return err;
    if (cmd != TPC_evidence) return handlers[cmd](c, q, r);
    if (!tpd_judge_has_evidence(check))
        return tpd_reply_fail(r, TP_EINVAL, "unknown command '%s%s'", check, TP_EVIDENCE_SUFFIX);
    return cmd_evidence(c, q, r, check);
}

tp_err tpd_control_handle(tpd_control *c, const void *req, size_t len, bool local, bool *proven,
                          tp_buf *reply)
{
    handling h = {c, proven};
    *proven = false;
    return tpd_reqrep_answer(req, len, local, run_command, &h, reply);
}
