/* SPDX-License-Identifier: MIT
 * ctl.c -- typed wrappers of the daemon's control commands. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/client/ctl.h"
#include "tools/base/errbuf.h"

#define INGEST_TIMEOUT_MS (10 * 60 * 1000)
#define FINISH_POLL_MS    20
#define FINISH_SLACK_MS   10000

/* missing says that the daemon's reply lacks result k. */
static tp_err missing(char *err, tp_res k)
{
    return tpt_seterr(err, TP_EPROTO, "daemon's reply to %s lacks \"%s\"", TPC_NAME(tp_ress[k].cmd),
                      TPR_KEY(k));
}

tp_err tpt_ping(tpt_client *c, tpt_ping_info *out, char *err)
{
    tp_buf req, rep;
    tpt_ping_info pi;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_ping);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    tpt_reply_copy(&rep, TPR_ping_version, pi.version, sizeof(pi.version));
    tpt_reply_copy(&rep, TPR_ping_db, pi.db, sizeof(pi.db));
    if (tpt_reply_int(&rep, TPR_ping_pid, &pi.pid) != TP_OK) pi.pid = -1;
    if (out != NULL) *out = pi;
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_run_create(tpt_client *c, const char *name, const char *check, const char *params,
                      int64_t *run, char *err)
{
    int64_t ago = tpt_started_ago_ns();
    tp_buf req, rep;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_run_create);
    tpt_arg_str(&req, TPA_run_create_name, name);
    tpt_arg_str(&req, TPA_run_create_check, check);
    tpt_arg_str(&req, TPA_run_create_params, params != NULL ? params : "{}");
    if (ago >= 0) { /* the run is dated from our start (cli.h) */
        tpt_arg_int(&req, TPA_run_create_started_ago_ns, ago);
    }
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_run_create_run, run) != TP_OK)
        rc = missing(err, TPR_run_create_run);
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_run_find(tpt_client *c, int64_t run, const char *name, const char *check,
                    tpt_run_info *out, char *err)
{
    tp_buf req, rep;
    tpt_run_info ri;
    tp_err rc;

    memset(&ri, 0, sizeof ri);
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_run_find);
    if (name == NULL) {
        tpt_arg_int(&req, TPA_run_find_run, run);
    } else {
        tpt_arg_str(&req, TPA_run_find_name, name);
        if (check != NULL) {
            tpt_arg_str(&req, TPA_run_find_check, check);
        }
    }
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_bool(&rep, TPR_run_find_found, &ri.found) != TP_OK) {
        rc = missing(err, TPR_run_find_found);
        goto fail;
    }
    if (ri.found && tpt_reply_int(&rep, TPR_run_find_run, &ri.run) != TP_OK) {
        rc = missing(err, TPR_run_find_run);
        goto fail;
    }
    tpt_reply_copy(&rep, TPR_run_find_check, ri.check, sizeof ri.check);
    tpt_reply_copy(&rep, TPR_run_find_name, ri.name, sizeof ri.name);
    *out = ri;
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_exec_create(tpt_client *c, int64_t run, const char *role, char *const argv[],
                       char *const env[], int64_t *exec, char key[TP_EXEC_KEY_LEN + 1], char *err)
{
    tp_buf req, rep;
    uint32_t n = 0, ne = 0, i, klen = 0;
    const char *k = NULL;
    int64_t id;
    tp_err rc;

    while (argv != NULL && argv[n] != NULL) n++;
    while (env != NULL && env[ne] != NULL) ne++;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_create);
    tpt_arg_int(&req, TPA_exec_create_run, run);
    tpt_arg_str(&req, TPA_exec_create_role, role);
    tpt_arg_strs(&req, TPA_exec_create_argv, argv, n);
    if (env != NULL) tpt_arg_strs(&req, TPA_exec_create_env, env, ne);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_exec_create_exec, &id) != TP_OK) {
        rc = missing(err, TPR_exec_create_exec);
        goto fail;
    }
    if (tpt_reply_str(&rep, TPR_exec_create_key, &k, &klen) != TP_OK || klen != TP_EXEC_KEY_LEN) {
        rc = missing(err, TPR_exec_create_key);
        goto fail;
    }
    for (i = 0; i < klen; i++) {
        if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f'))) {
            rc = missing(err, TPR_exec_create_key);
            goto fail;
        }
    }
    *exec = id;
    memcpy(key, k, klen);
    key[klen] = '\0';
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_exec_finish(tpt_client *c, int64_t exec, int status, int sig, int wait_ms,
                       tpt_finish *out, char *err)
{
    long long deadline = tpt_now_ms() + wait_ms + FINISH_SLACK_MS;
    tp_buf req, rep;
    tpt_finish f;
    bool pending;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_finish);
    tpt_arg_int(&req, TPA_exec_finish_exec, exec);
    if (status >= 0) tpt_arg_int(&req, TPA_exec_finish_status, status);
    if (sig > 0) tpt_arg_int(&req, TPA_exec_finish_signal, sig);
    tpt_arg_int(&req, TPA_exec_finish_wait_ms, wait_ms);
    for (;;) {
        if ((rc = tpt_client_call(c, &req, &rep, err)) != TP_OK) goto fail;
        if (tpt_reply_bool(&rep, TPR_exec_finish_pending, &pending) != TP_OK) {
            rc = missing(err, TPR_exec_finish_pending);
            goto fail;
        }
        if (!pending) break;
        if (tpt_now_ms() > deadline) {
            rc = tpt_seterr(err, TP_ETIMEDOUT,
                            "daemon still waits for the events of execution %lld", (long long)exec);
            goto fail;
        }
        tpt_sleep_ms(FINISH_POLL_MS);
    }
    if (tpt_reply_bool(&rep, TPR_exec_finish_complete, &f.complete) != TP_OK) {
        rc = missing(err, TPR_exec_finish_complete);
        goto fail;
    }
    /* Counts are informative; a daemon that omits one reports 0. */
    if (tpt_reply_int(&rep, TPR_exec_finish_processes, &f.processes) != TP_OK) f.processes = 0;
    if (tpt_reply_int(&rep, TPR_exec_finish_events, &f.events) != TP_OK) f.events = 0;
    if (tpt_reply_int(&rep, TPR_exec_finish_gaps, &f.gaps) != TP_OK) f.gaps = 0;
    if (tpt_reply_int(&rep, TPR_exec_finish_dropped, &f.dropped) != TP_OK) f.dropped = 0;
    if (tpt_reply_int(&rep, TPR_exec_finish_unstored, &f.unstored) != TP_OK) f.unstored = 0;
    tpt_reply_copy(&rep, TPR_exec_finish_unstored_why, f.unstored_why, sizeof(f.unstored_why));
    if (f.unstored > 0 && f.unstored_why[0] == '\0')
        snprintf(f.unstored_why, sizeof(f.unstored_why), "no reason given");
    *out = f;
fail:
    tp_buf_free(&req);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_seen(tpt_client *c, int64_t exec, int64_t pid, tpt_seen_info *out, char *err)
{
    tp_buf req, rep;
    tpt_seen_info s;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_seen);
    tpt_arg_int(&req, TPA_seen_exec, exec);
    tpt_arg_int(&req, TPA_seen_pid, pid);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_seen_seq, &s.seq) != TP_OK) s.seq = -1;
    if (tpt_reply_bool(&rep, TPR_seen_bye, &s.bye) != TP_OK) s.bye = false;
    *out = s;
fail:
    tp_buf_free(&rep);
    return rc;
}

/* ingest asks the daemon to store what req (an ingest request) names. */
static tp_err ingest(tpt_client *c, tp_buf *req, tpt_ingest_info *out, char *err)
{
    tp_buf rep;
    tpt_ingest_info in;
    bool torn;
    int old;
    tp_err rc;

    tp_buf_init(&rep);
    old = tpt_client_timeout(c, INGEST_TIMEOUT_MS);
    rc = tpt_client_ask(c, req, &rep, err);
    tpt_client_timeout(c, old);
    if (rc != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_ingest_events, &in.events) != TP_OK) {
        rc = missing(err, TPR_ingest_events);
        goto fail;
    }
    if (tpt_reply_int(&rep, TPR_ingest_bad, &in.bad) != TP_OK) in.bad = 0;
    if (tpt_reply_int(&rep, TPR_ingest_frames, &in.frames) != TP_OK) in.frames = 0;
    if (tpt_reply_int(&rep, TPR_ingest_dup, &in.dup) != TP_OK) in.dup = 0;
    if (tpt_reply_bool(&rep, TPR_ingest_torn, &torn) == TP_OK)
        in.torn = torn;
    else if (tpt_reply_int(&rep, TPR_ingest_torn, &in.torn) != TP_OK)
        in.torn = 0;
    if (out != NULL) *out = in;
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_ingest(tpt_client *c, const char *path, tpt_ingest_info *out, char *err)
{
    tp_buf req;
    tp_buf_init(&req);
    tpt_req_begin(&req, TPC_ingest);
    tpt_arg_str(&req, TPA_ingest_path, path);
    return ingest(c, &req, out, err);
}

tp_err tpt_ingest_frames(tpt_client *c, const void *frames, size_t n, tpt_ingest_info *out,
                         char *err)
{
    tp_buf req;
    tp_buf_init(&req);
    tpt_req_begin(&req, TPC_ingest);
    tpt_arg_bin(&req, TPA_ingest_frames, frames, n);
    return ingest(c, &req, out, err);
}

/* query asks for the view what of id, as JSON when json. */
static tp_err query(tpt_client *c, const char *what, int64_t id, bool json, char **text, char *err)
{
    tp_buf req, rep;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_query);
    tpt_arg_str(&req, TPA_query_what, what);
    tpt_arg_int(&req, TPA_query_id, id);
    if (json) {
        tpt_arg_bool(&req, TPA_query_json, true);
    }
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    rc = tpt_reply_strdup(&rep, TPR_query_text, text);
    if (rc == TP_ENOMEM)
        tpt_seterr(err, rc, "out of memory");
    else if (rc != TP_OK)
        rc = missing(err, TPR_query_text);
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_query(tpt_client *c, const char *what, int64_t id, char **text, char *err)
{
    return query(c, what, id, false, text, err);
}

tp_err tpt_query_json(tpt_client *c, const char *what, int64_t id, char **text, char *err)
{
    return query(c, what, id, true, text, err);
}

static tp_err verdict(tpt_client *c, int64_t run, const tpt_tolerance *tol, bool plan,
                      tpt_verdict_info *out, char *err)
{
    tp_buf req, rep;
    tpt_verdict_info v;
    tp_err rc;

    memset(&v, 0, sizeof v);
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_verdict);
    tpt_arg_int(&req, TPA_verdict_run, run);
    if (plan) {
        tpt_arg_bool(&req, TPA_verdict_plan, true);
    }
    if (tol && tol->declared) {
        tpt_arg_f64(&req, TPA_verdict_rtol, tol->rtol);
        tpt_arg_f64(&req, TPA_verdict_atol, tol->atol);
    }
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if ((rc = tpt_reply_strdup(&rep, TPR_verdict_outcome, &v.outcome)) != TP_OK) {
        if (rc != TP_ENOMEM) rc = missing(err, TPR_verdict_outcome);
        goto fail;
    }
    if ((rc = tpt_reply_strdup(&rep, TPR_verdict_text, &v.text)) == TP_ENOMEM ||
        (rc = tpt_reply_strdup(&rep, TPR_verdict_json, &v.json)) == TP_ENOMEM)
        goto fail;
    if (plan && tpt_reply_int(&rep, TPR_verdict_narrow_from, &v.narrow_from) == TP_OK &&
        tpt_reply_int(&rep, TPR_verdict_narrow_to, &v.narrow_to) == TP_OK) {
        v.narrow = true;
        if (tpt_reply_bool(&rep, TPR_verdict_narrow_b, &v.narrow_b) != TP_OK) v.narrow_b = false;
        v.narrow_r = tpt_reply_int(&rep, TPR_verdict_narrow_r_from, &v.narrow_r_from) == TP_OK &&
                     tpt_reply_int(&rep, TPR_verdict_narrow_r_to, &v.narrow_r_to) == TP_OK;
    }
    if (plan && tpt_reply_bool(&rep, TPR_verdict_second, &v.second) != TP_OK) v.second = false;
    rc = TP_OK;
    *out = v;
    tp_buf_free(&rep);
    return TP_OK;
fail:
    if (rc == TP_ENOMEM) tpt_seterr(err, rc, "out of memory");
    tpt_verdict_info_free(&v);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_verdict(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *out,
                   char *err)
{
    return verdict(c, run, tol, false, out, err);
}

tp_err tpt_verdict_plan(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *out,
                        char *err)
{
    return verdict(c, run, tol, true, out, err);
}

void tpt_verdict_info_free(tpt_verdict_info *v)
{
    if (v == NULL) return;
    free(v->outcome);
    free(v->text);
    free(v->json);
    v->outcome = v->text = v->json = NULL;
}

tp_err tpt_shutdown(tpt_client *c, char *err)
{
    tp_buf req, rep;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_shutdown);
    rc = tpt_client_ask(c, &req, &rep, err);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_attach(tpt_client *c, int64_t pid, bool owner, int64_t *attached, char *err)
{
    tp_buf req, rep;
    int64_t n;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_attach);
    tpt_arg_int(&req, TPA_attach_pid, pid);
    tpt_arg_bool(&req, TPA_attach_owner, owner);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_attach_attached, &n) != TP_OK) {
        rc = missing(err, TPR_attach_attached);
        goto fail;
    }
    if (attached != NULL) *attached = n;
fail:
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_detach(tpt_client *c, int64_t pid, int64_t *attached, bool *exiting, char *err)
{
    tp_buf req, rep;
    int64_t n;
    bool ex;
    tp_err rc;

    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_detach);
    tpt_arg_int(&req, TPA_detach_pid, pid);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto fail;
    if (tpt_reply_int(&rep, TPR_detach_attached, &n) != TP_OK) {
        rc = missing(err, TPR_detach_attached);
        goto fail;
    }
    if (tpt_reply_bool(&rep, TPR_detach_exiting, &ex) != TP_OK) {
        rc = missing(err, TPR_detach_exiting);
        goto fail;
    }
    if (attached != NULL) *attached = n;
    if (exiting != NULL) *exiting = ex;
fail:
    tp_buf_free(&rep);
    return rc;
}
