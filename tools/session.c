/* SPDX-License-Identifier: MIT
 * session.c -- the agent, the spool directory and the daemon of one
 * trainparity-run invocation. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tools/errbuf.h"
#include "tools/paths.h"
#include "tools/session.h"

struct tpt_session {
    tpt_daemon *daemon;
    char agent[PATH_MAX];
    char spool[PATH_MAX];
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

tp_err tpt_session_close(tpt_session *s, char *err)
{
    tp_err rc;
    if (s == NULL) return TP_OK;
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
