/* SPDX-License-Identifier: MIT
 * session.c -- the agent, the spool directory and the daemon of one
 * trainparity-run invocation. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/base/errbuf.h"
#include "tools/client/follow.h"
#include "tools/base/paths.h"
#include "tools/exec/session.h"

struct tpt_session {
    tpt_daemon *daemon;
    char agent[PATH_MAX];
    char spool[PATH_MAX];
    int64_t run; /* the run of the last execution, 0 none */
};

tp_err tpt_session_open(tpt_session **sp, char *err)
{
    tpt_session *s;
    tp_err rc;

    if ((s = calloc(1, sizeof(*s))) == NULL) return tpt_seterr(err, TP_ENOMEM, "out of memory");
    if ((rc = tpt_find_agent(s->agent, sizeof(s->agent), err)) != TP_OK) goto fail;
    if (strpbrk(s->agent, ": ") != NULL) {
        rc = tpt_seterr(err, TP_EINVAL, "agent path %s holds ':' or ' ' (not for LD_PRELOAD)",
                        s->agent);
        goto fail;
    }
    if ((rc = tpt_state_dir("spool", s->spool, sizeof(s->spool), err)) != TP_OK) goto fail;
    if ((rc = tpt_daemon_open(&s->daemon, err)) != TP_OK) goto fail;
    *sp = s;
    return TP_OK;
fail:
    tpt_session_close(s, NULL);
    return rc;
}

void tpt_session_ran(tpt_session *s, int64_t run)
{
    s->run = run;
}

/* end_followers tells the hosts that follow the run (trainparity-run join)
 * that it is over, and waits, up to TPT_FOLLOWERS_END_MS, until each was
 * told: the daemon may stop once this command ends. */
static void end_followers(tpt_session *s)
{
    long long until = tpt_now_ms() + TPT_FOLLOWERS_END_MS;
    char err[TPT_ERR_LEN];
    int64_t untold = 0;
    if (s->run <= 0 || s->daemon == NULL || !tpt_daemon_on_network(s->daemon)) return;
    for (;;) {
        if (tpt_follow_end(tpt_session_client(s), s->run, &untold, err) != TP_OK) {
            tpt_error("cannot tell the hosts that follow run %lld that it ended: %s",
                      (long long)s->run, err);
            return;
        }
        if (untold == 0) return;
        if (tpt_now_ms() >= until) break;
        tpt_sleep_ms(TPT_FOLLOW_POLL_MS);
    }
    tpt_error("%lld host(s) that follow run %lld did not ask for its end within %d s",
              (long long)untold, (long long)s->run, TPT_FOLLOWERS_END_MS / 1000);
}

tp_err tpt_session_close(tpt_session *s, char *err)
{
    tp_err rc;
    if (s == NULL) return TP_OK;
    end_followers(s);
    rc = tpt_daemon_close(s->daemon, err);
    free(s);
    return rc;
}

tpt_client *tpt_session_client(tpt_session *s)
{
    return tpt_daemon_client(s->daemon);
}

tpt_daemon *tpt_session_daemon(tpt_session *s)
{
    return s->daemon;
}

const char *tpt_session_agent(const tpt_session *s)
{
    return s->agent;
}

const char *tpt_session_spool(const tpt_session *s)
{
    return s->spool;
}
