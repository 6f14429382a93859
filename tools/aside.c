/* SPDX-License-Identifier: MIT
 * aside.c -- moves files under a folder of the run, never deleting one. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/aside.h"
#include "tools/errbuf.h"

/* Files that belong to the user's project, not to a training run. */
static const char *const keep_ext[] = {".py",   ".sh",  ".md",    ".txt", ".cfg", ".toml",
                                       ".yaml", ".yml", ".ipynb", ".c",   ".h",   NULL};

static int kept(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot == NULL) return 0;
    for (int i = 0; keep_ext[i]; i++)
        if (strcmp(dot, keep_ext[i]) == 0) return 1;
    return 0;
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY | O_CLOEXEC), out;
    ssize_t n;
    if (in < 0) return -1;
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        close(in);
        return -1;
    }
    while ((n = read(in, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                n = -1;
                goto done;
            }
            off += w;
        }
done:
    close(in);
    if (fsync(out) != 0) n = -1;
    if (close(out) != 0) n = -1;
    return n < 0 ? -1 : 0;
}

/* move_one moves src to dest/<src relative to the working directory, or
 * without its leading '/' when outside it>; 1 when moved, 0 when src is gone. */
static int move_one(const char *dest, const char *src, char *err)
{
    char to[8192], dir[8192], cwd[4096];
    const char *rel = src[0] == '/' ? src + 1 : src;
    struct stat st;
    char *slash;
    size_t cl;
    if (lstat(src, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (getcwd(cwd, sizeof cwd) != NULL && (cl = strlen(cwd)) > 1 && strncmp(src, cwd, cl) == 0 &&
        src[cl] == '/')
        rel = src + cl + 1;
    snprintf(to, sizeof to, "%s/%s", dest, rel);
    snprintf(dir, sizeof dir, "%s", to);
    if ((slash = strrchr(dir, '/')) != NULL) *slash = '\0';
    if (mkdirs(dir) != 0) {
        tpt_seterr(err, TP_EIO, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (rename(src, to) == 0) return 1;
    if (errno == EXDEV && copy_file(src, to) == 0 && unlink(src) == 0) return 1;
    tpt_seterr(err, TP_EIO, "cannot move %s aside to %s: %s", src, to, strerror(errno));
    return -1;
}

/* created_since reports whether directory path was created at or after
 * since (its birth time, where the file system keeps one). */
static int created_since(const char *path, const struct timespec *since)
{
    struct statx sx;
    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 ||
        !(sx.stx_mask & STATX_BTIME))
        return 0;
    return sx.stx_btime.tv_sec > since->tv_sec ||
           (sx.stx_btime.tv_sec == since->tv_sec &&
            sx.stx_btime.tv_nsec >= (uint32_t)since->tv_nsec);
}

/* prune removes the directories of path, innermost first, that the execution
 * created and that are empty now that its files are moved: a folder such as
 * checkpoint-8/ left behind would still look like a checkpoint to a script
 * that globs for them.  Nothing that holds a file is touched. */
static void prune(const char *path, const struct timespec *since)
{
    char dir[4096], cwd[4096];
    char *slash;
    if (getcwd(cwd, sizeof cwd) == NULL) return;
    snprintf(dir, sizeof dir, "%s", path);
    while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        if (strcmp(dir, cwd) == 0 || strncmp(dir, cwd, strlen(cwd)) != 0) return;
        if (!created_since(dir, since) || rmdir(dir) != 0) return;
    }
}

tp_err tpt_aside(const char *dest, char *const paths[], size_t n, const struct timespec *since,
                 int *moved, char *err)
{
    int count = 0, r;
    for (size_t i = 0; i < n; i++) {
        char dir[4096];
        char *slash;
        DIR *d;
        struct dirent *de;
        if (paths[i] == NULL || paths[i][0] != '/') continue;
        if ((r = move_one(dest, paths[i], err)) < 0) return TP_EIO;
        count += r;
        snprintf(dir, sizeof dir, "%s", paths[i]);
        if ((slash = strrchr(dir, '/')) == NULL) continue;
        *slash = '\0';
        if ((d = opendir(dir[0] ? dir : "/")) == NULL) continue;
        while ((de = readdir(d)) != NULL) {
            char p[8192];
            struct stat st;
            if (de->d_name[0] == '.' || kept(de->d_name)) continue;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            if (st.st_mtim.tv_sec < since->tv_sec ||
                (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))
                continue;
            if ((r = move_one(dest, p, err)) < 0) {
                closedir(d);
                return TP_EIO;
            }
            count += r;
        }
        closedir(d);
    }
    for (size_t i = 0; i < n; i++)
        if (paths[i] != NULL && paths[i][0] == '/') prune(paths[i], since);
    *moved = count;
    return TP_OK;
}
