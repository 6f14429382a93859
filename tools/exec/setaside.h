/* SPDX-License-Identifier: MIT
 * setaside.h -- moving what one execution saved out of the way, so that the
 * next one trains from scratch (resume's baselines; aside.h says what is
 * moved and what never is). */
#ifndef TP_TOOLS_EXEC_SETASIDE_H
#define TP_TOOLS_EXEC_SETASIDE_H

#include <stdint.h>

#include "tools/client/client.h"
#include "tools/exec/session.h"
#include "tools/exec/tree.h"

/* tpt_set_aside asks the daemon what execution exec (of role, in run) saved
 * and moves it into .trainparity/runs/<run>/<role>/ (tpt_aside), saying
 * what it did under tag (tpt_progress); tool is a snapshot of the working
 * directory taken when the command started, before one taken as the
 * execution started.  A save that this host does not have (another host's)
 * is passed over.  Returns 0, or -1 after saying why (tpt_error). */
int tpt_set_aside(tpt_client *c, const char *tag, int64_t run, const char *role, int64_t exec,
                  const tpt_snapshot *tool, const tpt_snapshot *before);

/* tpt_session_aside is tpt_set_aside in session s; on the network (a
 * daemon that other hosts' followers reach: tpt_daemon_on_network) it also
 * has the hosts that follow the check move aside what the execution saved
 * there.  Returns 0, or -1 after saying why. */
int tpt_session_aside(tpt_session *s, const char *tag, int64_t run, const char *role, int64_t exec,
                      const tpt_snapshot *tool, const tpt_snapshot *before);

#endif
