/* SPDX-License-Identifier: MIT
 * follow.h -- the control calls by which other hosts follow a check's
 * executions (trainparity-run join) and its leader waits for them
 * (daemon/serve/follow.h; proto/control.h says the fields). */
#ifndef TP_TOOLS_CLIENT_FOLLOW_H
#define TP_TOOLS_CLIENT_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/control.h"
#include "proto/tp_err.h"
#include "tools/client/client.h"
#include "tools/base/launch.h"

/* How often a follower asks for the next execution, and a leader whether
 * its followers' commands ended. */
#define TPT_FOLLOW_POLL_MS 250

typedef struct tpt_next {
    char state[8];  /* "wait", "exec" or "end" */
    int64_t run;    /* 0 while no run is followed */
    int64_t *aside; /* executions to move aside first */
    size_t naside;
    int64_t exec; /* "exec": the execution to run */
    char role[64];
    char key[TP_EXEC_KEY_LEN + 1];
    char **argv, **env; /* NULL-terminated; each string and array malloc'ed */
    bool finished;      /* it ended before this host was given it */
} tpt_next;

/* tpt_follow_next asks what the follower (host, pid) is to do after
 * execution after (0: none yet) of run (0: the newest not ended), having
 * moved asided executions aside.  *out is reset first; tpt_next_free it. */
tp_err tpt_follow_next(tpt_client *c, const char *host, int64_t pid, int64_t run, int64_t after,
                       int64_t asided, tpt_next *out, char *err);
void tpt_next_free(tpt_next *n);

/* tpt_follow_done says how the follower's command of exec ended, how many
 * spool files of exec its host holds that it could not send, and whether
 * it is leaving (it follows no further execution: the check's end does not
 * wait for it). */
tp_err tpt_follow_done(tpt_client *c, const char *host, int64_t pid, int64_t exec,
                       const tpt_exit *e, int unsent, bool leaving, char *err);

/* tpt_follow_aside tells the followers that the checkpoints exec saved were
 * moved aside, for them to do the same. */
tp_err tpt_follow_aside(tpt_client *c, int64_t run, int64_t exec, char *err);

typedef struct tpt_followers {
    int64_t running;   /* followers whose command of the execution runs */
    char waiting[512]; /* them: "host1 (pid 12), ..." */
    char failed[512];  /* those whose command failed: "host1 (pid 12): status 1" */
    tpt_exit first;    /* the first of those (status -1, signal 0: none) */
    char unsent[512];  /* those holding spool files they could not send: "host1 (pid 12): 2" */
} tpt_followers;

/* tpt_follow_followers asks after the followers of exec. */
tp_err tpt_follow_followers(tpt_client *c, int64_t exec, tpt_followers *out, char *err);

/* tpt_follow_end says run is over; *untold is how many of its followers
 * have not yet been told. */
tp_err tpt_follow_end(tpt_client *c, int64_t run, int64_t *untold, char *err);

#endif
