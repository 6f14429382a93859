/* SPDX-License-Identifier: MIT
 * paths.c -- the project state directory, the daemon binary, the agent. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/base/errbuf.h"
#include "tools/base/paths.h"

tp_err tpt_private_dir(const char *path, char *err)
{
    struct stat st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return tpt_seterr(err, TP_EIO, "cannot create %s: %s", path, strerror(errno));
    if (lstat(path, &st) != 0)
        return tpt_seterr(err, TP_EIO, "cannot inspect %s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tpt_seterr(err, TP_EINVAL, "%s exists and is not a directory", path);
    if (st.st_uid != geteuid())
        return tpt_seterr(err, TP_EINVAL, "%s belongs to another user", path);
    if ((st.st_mode & 0777) != 0700 && chmod(path, 0700) != 0)
        return tpt_seterr(err, TP_EIO, "cannot make %s private: %s", path, strerror(errno));
    return TP_OK;
}

tp_err tpt_state_dir(const char *sub, char *out, size_t n, char *err)
{
    char cwd[PATH_MAX], path[PATH_MAX];
    int w;
    tp_err rc;

    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return tpt_seterr(err, TP_EIO, "cannot get the working directory: %s", strerror(errno));
    w = snprintf(path, sizeof(path), "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, TPT_DIR);
    if (w < 0 || (size_t)w >= sizeof(path))
        return tpt_seterr(err, TP_EINVAL, "working directory path too long");
    if ((rc = tpt_private_dir(path, err)) != TP_OK) return rc;
    if (sub != NULL) {
        size_t len = strlen(path);
        w = snprintf(path + len, sizeof(path) - len, "/%s", sub);
        if (w < 0 || (size_t)w >= sizeof(path) - len)
            return tpt_seterr(err, TP_EINVAL, "working directory path too long");
        if ((rc = tpt_private_dir(path, err)) != TP_OK) return rc;
    }
    if (strlen(path) >= n) return tpt_seterr(err, TP_EINVAL, "path too long: %s", path);
    strcpy(out, path);
    return TP_OK;
}

tp_err tpt_self_dir(char *out, size_t n, char *err)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;
    if (len < 0) return tpt_seterr(err, TP_EIO, "cannot read /proc/self/exe: %s", strerror(errno));
    exe[len] = '\0';
    slash = strrchr(exe, '/');
    if (slash == NULL) return tpt_seterr(err, TP_EIO, "odd /proc/self/exe: %s", exe);
    *slash = '\0';
    if ((size_t)(slash - exe) >= n) return tpt_seterr(err, TP_EINVAL, "path too long: %s", exe);
    strcpy(out, slash == exe ? "/" : exe);
    return TP_OK;
}

/* executable_at writes dir/name into out when that is an executable file. */
static int executable_at(const char *dir, size_t dlen, const char *name, char *out, size_t n)
{
    struct stat st;
    int w = snprintf(out, n, "%.*s/%s", (int)dlen, dir, name);
    if (w < 0 || (size_t)w >= n) return 0;
    return stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0;
}

tp_err tpt_find_daemon(char *out, size_t n, char *err)
{
    char dir[PATH_MAX];
    const char *p, *path = getenv("PATH");

    if (tpt_self_dir(dir, sizeof(dir), NULL) == TP_OK &&
        executable_at(dir, strlen(dir), TPT_DAEMON_BIN, out, n))
        return TP_OK;
    for (p = path; p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && executable_at(p, len, TPT_DAEMON_BIN, out, n)) return TP_OK;
        p = colon != NULL ? colon + 1 : NULL;
    }
    return tpt_seterr(err, TP_ENOENT, "cannot find %s next to trainparity-run or on PATH",
                      TPT_DAEMON_BIN);
}

tp_err tpt_find_agent(char *out, size_t n, char *err)
{
    char dir[PATH_MAX], cand[PATH_MAX + 32], abs[PATH_MAX];
    const char *env = getenv(TPT_ENV_AGENT);
    tp_err rc;

    if (env != NULL && env[0] != '\0') {
        if (strlen(env) >= sizeof(cand))
            return tpt_seterr(err, TP_EINVAL, "%s is too long", TPT_ENV_AGENT);
        strcpy(cand, env);
    } else {
        if ((rc = tpt_self_dir(dir, sizeof(dir), err)) != TP_OK) return rc;
        snprintf(cand, sizeof(cand), "%s/../lib/%s", dir, TPT_AGENT_LIB);
    }
    if (realpath(cand, abs) == NULL || access(abs, R_OK) != 0) {
        if (env != NULL && env[0] != '\0')
            return tpt_seterr(err, TP_ENOENT, "agent %s (from %s): %s", cand, TPT_ENV_AGENT,
                              strerror(errno));
        return tpt_seterr(err, TP_ENOENT, "agent not found at %s (build target tpagent, or set %s)",
                          cand, TPT_ENV_AGENT);
    }
    if (strlen(abs) >= n) return tpt_seterr(err, TP_EINVAL, "agent path too long: %s", abs);
    strcpy(out, abs);
    return TP_OK;
}
