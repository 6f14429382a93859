/* SPDX-License-Identifier: MIT
 * follow.c -- the control calls of followers and of the leader that waits
 * for them (follow.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "tools/base/errbuf.h"
#include "tools/client/follow.h"

/* who writes the follower's host and pid, the arguments ha and pa. */
static void who(tp_buf *req, tp_arg ha, tp_arg pa, const char *host, int64_t pid)
{
    tpt_arg_str(req, ha, host);
    tpt_arg_int(req, pa, pid);
}

/* strs reads the reply's array of strings key into a NULL-terminated
 * array of copies (absent: an empty one). */
static tp_err strs(const tp_buf *rep, tp_res key, char ***out)
{
    tp_mpr v;
    uint32_t n = 0, i, len;
    const char *s;
    char **a;
    tp_err rc = tpt_reply_find(rep, key, &v);
    if (rc != TP_OK && rc != TP_ENOENT) return rc;
    if (rc == TP_OK && tp_mpr_array(&v, &n) != TP_OK) return TP_EPROTO;
    if ((a = calloc((size_t)n + 1, sizeof *a)) == NULL) return TP_ENOMEM;
    *out = a;
    for (i = 0; i < n; i++) {
        if (tp_mpr_str(&v, &s, &len) != TP_OK || memchr(s, '\0', len) != NULL) return TP_EPROTO;
        if ((a[i] = malloc((size_t)len + 1)) == NULL) return TP_ENOMEM;
        memcpy(a[i], s, len);
        a[i][len] = '\0';
    }
    return TP_OK;
}

static tp_err ints(const tp_buf *rep, tp_res key, int64_t **out, size_t *n)
{
    tp_mpr v;
    uint32_t len = 0, i;
    tp_err rc = tpt_reply_find(rep, key, &v);
    *n = 0;
    if (rc == TP_ENOENT) return TP_OK;
    if (rc != TP_OK || tp_mpr_array(&v, &len) != TP_OK) return TP_EPROTO;
    if ((*out = calloc((size_t)len + 1, sizeof **out)) == NULL) return TP_ENOMEM;
    for (i = 0; i < len; i++)
        if (tp_mpr_int(&v, &(*out)[i]) != TP_OK) return TP_EPROTO;
    *n = len;
    return TP_OK;
}

void tpt_next_free(tpt_next *n)
{
    for (size_t i = 0; n->argv != NULL && n->argv[i] != NULL; i++) free(n->argv[i]);
    for (size_t i = 0; n->env != NULL && n->env[i] != NULL; i++) free(n->env[i]);
    free(n->argv);
    free(n->env);
    free(n->aside);
    memset(n, 0, sizeof *n);
}

tp_err tpt_follow_next(tpt_client *c, const char *host, int64_t pid, int64_t run, int64_t after,
                       int64_t asided, tpt_next *out, char *err)
{
    tp_buf req, rep;
    tp_err rc;
    memset(out, 0, sizeof *out);
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_next);
    who(&req, TPA_exec_next_host, TPA_exec_next_pid, host, pid);
    tpt_arg_int(&req, TPA_exec_next_run, run);
    tpt_arg_int(&req, TPA_exec_next_after, after);
    tpt_arg_int(&req, TPA_exec_next_asided, asided);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) != TP_OK) goto out;
    tpt_reply_copy(&rep, TPR_exec_next_state, out->state, sizeof out->state);
    if (tpt_reply_int(&rep, TPR_exec_next_run, &out->run) == TP_EPROTO ||
        (rc = ints(&rep, TPR_exec_next_aside, &out->aside, &out->naside)) != TP_OK) {
        rc = tpt_seterr(err, TP_EPROTO, "malformed reply to exec.next");
        goto out;
    }
    if (strcmp(out->state, "exec") == 0) {
        const char *k;
        uint32_t klen;
        if (tpt_reply_int(&rep, TPR_exec_next_exec, &out->exec) != TP_OK ||
            tpt_reply_str(&rep, TPR_exec_next_key, &k, &klen) != TP_OK || klen != TP_EXEC_KEY_LEN ||
            tpt_reply_bool(&rep, TPR_exec_next_finished, &out->finished) != TP_OK ||
            strs(&rep, TPR_exec_next_argv, &out->argv) != TP_OK ||
            strs(&rep, TPR_exec_next_env, &out->env) != TP_OK || out->argv[0] == NULL) {
            rc = tpt_seterr(err, TP_EPROTO, "malformed reply to exec.next");
            goto out;
        }
        memcpy(out->key, k, klen);
        tpt_reply_copy(&rep, TPR_exec_next_role, out->role, sizeof out->role);
    } else if (strcmp(out->state, "wait") != 0 && strcmp(out->state, "end") != 0) {
        rc = tpt_seterr(err, TP_EPROTO, "exec.next answered the state '%s'", out->state);
    }
out:
    if (rc != TP_OK) tpt_next_free(out);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_follow_done(tpt_client *c, const char *host, int64_t pid, int64_t exec,
                       const tpt_exit *e, int unsent, bool leaving, char *err)
{
    tp_buf req, rep;
    tp_err rc;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_done);
    who(&req, TPA_exec_done_host, TPA_exec_done_pid, host, pid);
    tpt_arg_int(&req, TPA_exec_done_exec, exec);
    tpt_arg_int(&req, TPA_exec_done_status, e->status);
    tpt_arg_int(&req, TPA_exec_done_signal, e->signal);
    if (unsent > 0) tpt_arg_int(&req, TPA_exec_done_unsent, unsent);
    if (leaving) tpt_arg_bool(&req, TPA_exec_done_leaving, true);
    rc = tpt_client_ask(c, &req, &rep, err);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_follow_aside(tpt_client *c, int64_t run, int64_t exec, char *err)
{
    tp_buf req, rep;
    tp_err rc;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_aside);
    tpt_arg_int(&req, TPA_exec_aside_run, run);
    tpt_arg_int(&req, TPA_exec_aside_exec, exec);
    rc = tpt_client_ask(c, &req, &rep, err);
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_follow_followers(tpt_client *c, int64_t exec, tpt_followers *out, char *err)
{
    tp_buf req, rep;
    int64_t st = -1, sig = 0;
    tp_err rc;
    memset(out, 0, sizeof *out);
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_exec_followers);
    tpt_arg_int(&req, TPA_exec_followers_exec, exec);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) == TP_OK &&
        (tpt_reply_int(&rep, TPR_exec_followers_running, &out->running) != TP_OK ||
         tpt_reply_int(&rep, TPR_exec_followers_status, &st) != TP_OK ||
         tpt_reply_int(&rep, TPR_exec_followers_signal, &sig) != TP_OK))
        rc = tpt_seterr(err, TP_EPROTO, "malformed reply to exec.followers");
    tpt_reply_copy(&rep, TPR_exec_followers_waiting, out->waiting, sizeof out->waiting);
    tpt_reply_copy(&rep, TPR_exec_followers_failed, out->failed, sizeof out->failed);
    tpt_reply_copy(&rep, TPR_exec_followers_unsent, out->unsent, sizeof out->unsent);
    out->first.status = (int)st;
    out->first.signal = (int)sig;
    tp_buf_free(&rep);
    return rc;
}

tp_err tpt_follow_end(tpt_client *c, int64_t run, int64_t *untold, char *err)
{
    tp_buf req, rep;
    tp_err rc;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_begin(&req, TPC_run_end);
    tpt_arg_int(&req, TPA_run_end_run, run);
    if ((rc = tpt_client_ask(c, &req, &rep, err)) == TP_OK &&
        tpt_reply_int(&rep, TPR_run_end_untold, untold) != TP_OK)
        rc = tpt_seterr(err, TP_EPROTO, "malformed reply to run.end");
    tp_buf_free(&rep);
    return rc;
}
