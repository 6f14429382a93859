/* SPDX-License-Identifier: MIT
 * aside.h -- moving a baseline's checkpoints out of the way.
 *
 * Resume's baselines must train from scratch even when the script resumes
 * on its own as soon as a checkpoint exists, so the files a baseline saved
 * (the agent reports their paths) are moved into the run's folder under
 * .trainparity/ before the next execution starts, together with the files
 * written beside them during that execution (a trainer_state.json, an
 * optimizer file written without torch).  Folders under the working
 * directory that the execution created and that are empty once its files
 * are moved are removed.  Nothing else is deleted: a move that
 * crosses file systems copies, then removes the original only after the
 * copy is complete. */
#ifndef TP_TOOLS_ASIDE_H
#define TP_TOOLS_ASIDE_H

#include <stddef.h>
#include <time.h>

#include "proto/tp_err.h"

/* tpt_aside moves each path in paths (absolute, n of them) that still exists,
 * and every regular file in the same directory modified at or after since,
 * under dest (created 0700) at dest/<path without its leading '/'>.  Source
 * and script files (.py, .sh, ...) beside them are never moved.  *moved
 * receives the number of files moved.  Errors (with err): TP_EIO. */
tp_err tpt_aside(const char *dest, char *const paths[], size_t n, const struct timespec *since,
                 int *moved, char *err);

#endif
