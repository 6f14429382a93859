/* SPDX-License-Identifier: MIT
 * token.h -- the shared token of a daemon that listens on the network
 * (trainparity-run --listen).
 *
 * It is $TRAINPARITY_TOKEN when that is set (a job's own secret, which the
 * launcher carries to every host as it carries the rest of the environment);
 * otherwise the one in the project's ./.trainparity/token, made on first use
 * from 128 random bits (getrandom) as 32 hex digits, mode 0600.  A token file
 * that is not a regular file of this user, or that others can read, is
 * refused, as the daemon refuses it. */
#ifndef TP_TOOLS_CLIENT_TOKEN_H
#define TP_TOOLS_CLIENT_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/tp_err.h"

#define TPT_TOKEN_MAX 256 /* the daemon's limit, its final NUL included */

/* tpt_token_get writes the token into out (TPT_TOKEN_MAX bytes): the
 * environment's, else the file at path's, else (when create) a new one
 * written there.  *from_env says which.  Errors (with err): TP_ENOENT (no
 * token and !create), TP_EIO (the file cannot be read or written, or is not
 * private), TP_EINVAL (a token of more than 255 bytes, or with a newline). */
tp_err tpt_token_get(const char *path, bool create, char *out, bool *from_env, char *err);

#endif
