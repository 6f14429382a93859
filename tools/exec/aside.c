/* SPDX-License-Identifier: MIT
 * aside.c -- moves files under a folder of the run, never deleting one; finds
 * a checkpoint saved into a buffer by its content. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest/ckpt.h"
#include "tools/exec/aside.h"
#include "tools/base/errbuf.h"

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
    if (errno == ENOENT) return 0; /* gone since: another host moved it (a shared folder) */
    if (errno == EXDEV && copy_file(src, to) == 0 && unlink(src) == 0) return 1;
    tpt_seterr(err, TP_EIO, "cannot move %s aside to %s: %s", src, to, strerror(errno));
    return -1;
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
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

/* ---- checkpoints found by content ---- */

typedef struct finder {
    const tpt_aside_spec *a;
    char cwd[4096];
    char **found; /* malloc'ed absolute names */
    size_t n, cap;
} finder;

static int same_content(const char *path, const struct stat *st, void *arg)
{
    finder *f = arg;
    const tpt_snapshot *ex = f->a->before_exec;
    tp_ckpt_digest cd;
    char abs[8192];
    int match = 0;
    size_t i;
    for (i = 0; i < f->a->ncontents; i++)
        if ((uint64_t)st->st_size == f->a->contents[i].size) break;
    if (i == f->a->ncontents) return 0;
    snprintf(abs, sizeof abs, "%s/%s", f->cwd, path + 2); /* path is "./..." */
    /* only what this execution wrote: created, or modified since it began */
    if (ts_before(&st->st_mtim, &ex->at) && tpt_snapshot_had(ex, abs, st)) return 0;
    if (tp_ckpt_digest_file(path, &cd) != 0) return 0;
    for (i = 0; i < f->a->ncontents && !match; i++)
        match = cd.have && (uint64_t)st->st_size == f->a->contents[i].size &&
                memcmp(cd.out, f->a->contents[i].digest, sizeof cd.out) == 0;
    free(cd.records);
    if (!match) return 0;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        char **v = realloc(f->found, cap * sizeof *v);
        if (v == NULL) return -1;
        f->found = v;
        f->cap = cap;
    }
    if ((f->found[f->n] = strdup(abs)) == NULL) return -1;
    f->n++;
    return 0;
}

/* ---- moving ---- */

/* confined resolves path (symlinks, "..") into real and reports whether it
 * lies in the working tree, outside the tool's own .trainparity/ folder.  A
 * save's name is the agent's word: a name through a symlink, with "..", or
 * forged by another local process must never make the tool move, or sweep
 * beside, a file outside the tree (or the database). */
static int confined(const char *path, char real[PATH_MAX])
{
    char cwd[PATH_MAX];
    size_t cl;
    if (realpath(path, real) == NULL || getcwd(cwd, sizeof cwd) == NULL) return 0;
    cl = strlen(cwd);
    if (cl == 1) cl = 0; /* the tree is / */
    if (strncmp(real, cwd, cl) != 0 || real[cl] != '/') return 0;
    return strncmp(real + cl, "/.trainparity/", 14) != 0;
}

/* aside_file moves the regular file path (st: its lstat), a checkpoint's,
 * unless it predates trainparity-run: 0 moved, 1 kept, -1 with err. */
static int aside_file(const tpt_aside_spec *a, const char *path, const struct stat *st,
                      tpt_aside_result *out, char *err)
{
    int r;
    if (tpt_snapshot_had(a->before_tool, path, st)) {
        out->kept++;
        return 1;
    }
    if ((r = move_one(a->dest, path, err)) < 0) return -1;
    out->moved += r;
    return 0;
}

/* aside_dir moves the files of checkpoint directory path (a
 * torch.distributed.checkpoint save: .metadata and its .distcp files),
 * each unless it predates trainparity-run, then removes the directory when
 * the execution created it and it is empty; 0, or -1 with err. */
static int aside_dir(const tpt_aside_spec *a, const char *path, tpt_aside_result *out, char *err)
{
    DIR *d = opendir(path);
    struct dirent *de;
    struct stat st;
    char inner[PATH_MAX + 4];
    if (d == NULL) return 0;
    while ((de = readdir(d)) != NULL) {
        char p[8192];
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (aside_file(a, p, &st, out, err) < 0) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    snprintf(inner, sizeof inner, "%s/.", path); /* prune starts at its folder */
    prune(inner, &a->before_exec->at);
    return 0;
}

/* aside_one moves checkpoint path (a file, or a DCP directory's files) and
 * the files the execution created beside it; 0, or -1 with err. */
static int aside_one(const tpt_aside_spec *a, const char *name, tpt_aside_result *out, char *err)
{
    char dir[4096], path[PATH_MAX];
    char *slash;
    DIR *d;
    struct dirent *de;
    struct stat st;
    int r;
    if (name == NULL || name[0] != '/' || lstat(name, &st) != 0) return 0;
    if (!confined(name, path)) {
        out->outside++;
        return 0;
    }
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        if (aside_dir(a, path, out, err) != 0) return -1;
    } else if (!S_ISREG(st.st_mode)) {
        return 0;
    } else if ((r = aside_file(a, path, &st, out, err)) != 0) {
        return r < 0 ? -1 : 0; /* kept: the user's, and nothing beside it is this run's */
    }
    snprintf(dir, sizeof dir, "%s", path);
    if ((slash = strrchr(dir, '/')) == NULL) return 0;
    *slash = '\0';
    if ((d = opendir(dir[0] ? dir : "/")) == NULL) return 0;
    while ((de = readdir(d)) != NULL) {
        char p[8192];
        if (de->d_name[0] == '.' || kept(de->d_name)) continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        /* created by this execution: written to is not enough (a log the
         * user redirects to, a file of theirs the script appends to) */
        if (tpt_snapshot_had(a->before_exec, p, &st) || tpt_snapshot_had(a->before_tool, p, &st))
            continue;
        if ((r = move_one(a->dest, p, err)) < 0) {
            closedir(d);
            return -1;
        }
        out->moved += r;
    }
    closedir(d);
    return 0;
}

tp_err tpt_aside(const tpt_aside_spec *a, tpt_aside_result *out, char *err)
{
    finder f;
    tp_err rc = TP_OK;
    tpt_aside_result res = {0, 0, 0, 0, false};
    memset(&f, 0, sizeof f);
    f.a = a;
    if (a->ncontents > 0) {
        if (getcwd(f.cwd, sizeof f.cwd) == NULL) {
            rc = tpt_seterr(err, TP_EIO, "cannot tell the working directory: %s", strerror(errno));
            goto done;
        }
        if (tpt_tree_walk(same_content, &f, &res.truncated) != 0) {
            rc = tpt_seterr(err, TP_ENOMEM, "out of memory");
            goto done;
        }
        res.found = (int)f.n;
    }
    for (size_t i = 0; i < a->npaths; i++)
        if (aside_one(a, a->paths[i], &res, err) != 0) {
            rc = TP_EIO;
            goto done;
        }
    for (size_t i = 0; i < f.n; i++)
        if (aside_one(a, f.found[i], &res, err) != 0) {
            rc = TP_EIO;
            goto done;
        }
    for (size_t i = 0; i < a->npaths; i++) {
        char real[PATH_MAX];
        /* the folder the checkpoint was in: gone with it, or still there */
        if (a->paths[i] != NULL && a->paths[i][0] == '/' && !strstr(a->paths[i], "/../") &&
            !strstr(a->paths[i], "/./") && realpath(a->paths[i], real) == NULL)
            prune(a->paths[i], &a->before_exec->at);
    }
    for (size_t i = 0; i < f.n; i++) prune(f.found[i], &a->before_exec->at);
    *out = res;
done:
    for (size_t i = 0; i < f.n; i++) free(f.found[i]);
    free(f.found);
    return rc;
}
