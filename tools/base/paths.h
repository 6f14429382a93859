/* SPDX-License-Identifier: MIT
 * paths.h -- where trainparity-run finds its files: the project's
 * ./.trainparity/ directory, the daemon binary and the agent library. */
#ifndef TP_TOOLS_BASE_PATHS_H
#define TP_TOOLS_BASE_PATHS_H

#include <stddef.h>

#include "proto/tp_err.h"

#define TPT_DIR        ".trainparity" /* per-project state, under the working directory */
#define TPT_DAEMON_BIN "trainparity-daemon"
#define TPT_AGENT_LIB  "libtpagent.so"
#define TPT_ENV_AGENT  "TRAINPARITY_AGENT" /* overrides <bindir>/../lib/libtpagent.so */

/* tpt_private_dir makes sure path is a directory owned by us that nobody
 * else can enter: created mode 0700 when absent; an existing one must be a
 * real directory (not a symlink) owned by this user, and is made 0700.
 * Errors: TP_EIO (with err), TP_EINVAL (someone else's directory). */
tp_err tpt_private_dir(const char *path, char *err);

/* tpt_state_dir writes the absolute path of ./.trainparity (or of sub, a
 * folder inside it, when sub is not NULL) into out (n bytes), creating both
 * 0700.  Errors: TP_EIO, TP_EINVAL (too long). */
tp_err tpt_state_dir(const char *sub, char *out, size_t n, char *err);

/* tpt_self_dir writes the directory of the running executable (from
 * /proc/self/exe) into out.  Errors: TP_EIO, TP_EINVAL (too long). */
tp_err tpt_self_dir(char *out, size_t n, char *err);

/* tpt_find_daemon writes the daemon binary's path into out: the one next to
 * this executable, else the first on PATH.  Errors: TP_ENOENT (with err). */
tp_err tpt_find_daemon(char *out, size_t n, char *err);

/* tpt_find_agent writes the absolute path of the agent library into out:
 * $TRAINPARITY_AGENT when set, else <bindir>/../lib/libtpagent.so.  The file
 * must be readable.  Errors: TP_ENOENT (with err), TP_EINVAL (too long). */
tp_err tpt_find_agent(char *out, size_t n, char *err);

#endif
