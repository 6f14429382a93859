/* SPDX-License-Identifier: MIT
 * token.c -- the shared token of a network daemon: the environment's, or
 * the project's token file, made once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/control.h"
#include "tools/base/errbuf.h"
#include "tools/client/token.h"

#define RANDOM_BYTES 16

/* check_token holds a token to what the daemon reads: one line of 1 to
 * TPT_TOKEN_MAX - 1 bytes. */
static tp_err check_token(const char *tok, const char *where, char *err)
{
    size_t n = strlen(tok);
    if (n == 0 || n >= TPT_TOKEN_MAX || strchr(tok, '\n') != NULL)
        return tpt_seterr(err, TP_EINVAL, "the token in %s must be one line of 1 to %d bytes",
                          where, TPT_TOKEN_MAX - 1);
    return TP_OK;
}

/* read_file reads the token in path; TP_ENOENT when there is none. */
static tp_err read_file(const char *path, char *out, char *err)
{
    struct stat st;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    tp_err rc = TP_OK;

    if (fd < 0 && errno == ENOENT) return TP_ENOENT;
    if (fd < 0) return tpt_seterr(err, TP_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        close(fd);
        return tpt_seterr(err, TP_EIO,
                          "the token file %s must be a regular file of yours, "
                          "readable by you only (chmod 600)",
                          path);
    }
    got = read(fd, out, TPT_TOKEN_MAX);
    close(fd);
    if (got < 0) return tpt_seterr(err, TP_EIO, "cannot read %s: %s", path, strerror(errno));
    if (got == TPT_TOKEN_MAX) got = TPT_TOKEN_MAX - 1, rc = TP_EINVAL;
    out[got] = '\0';
    if (got > 0 && out[got - 1] == '\n') out[--got] = '\0';
    return rc == TP_OK ? check_token(out, path, err) : check_token("", path, err);
}

/* make_file writes a new random token to path (0600, never over a file). */
static tp_err make_file(const char *path, char *out, char *err)
{
    unsigned char r[RANDOM_BYTES];
    size_t got = 0;
    ssize_t w;
    int fd, i;

    while (got < sizeof r) {
        ssize_t k = getrandom(r + got, sizeof r - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return tpt_seterr(err, TP_EIO, "getrandom: %s", strerror(errno));
        got += (size_t)k;
    }
    for (i = 0; i < RANDOM_BYTES; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        return tpt_seterr(err, TP_EIO, "cannot create %s: %s", path, strerror(errno));
    w = write(fd, out, 2 * RANDOM_BYTES);
    if (close(fd) != 0 || w != 2 * RANDOM_BYTES) {
        unlink(path);
        return tpt_seterr(err, TP_EIO, "cannot write %s", path);
    }
    return TP_OK;
}

tp_err tpt_token_get(const char *path, bool create, char *out, bool *from_env, char *err)
{
    const char *env = getenv(TP_ENV_TOKEN);
    tp_err rc;

    *from_env = env != NULL && env[0] != '\0';
    if (*from_env) {
        if ((rc = check_token(env, "$" TP_ENV_TOKEN, err)) != TP_OK) return rc;
        strcpy(out, env);
        return TP_OK;
    }
    if ((rc = read_file(path, out, err)) != TP_ENOENT) return rc;
    if (!create) return tpt_seterr(err, TP_ENOENT, "no token in %s", path);
    /* two commands may make it at once: the one that lost reads the other's */
    if ((rc = make_file(path, out, err)) != TP_OK && read_file(path, out, NULL) == TP_OK)
        return TP_OK;
    return rc;
}
