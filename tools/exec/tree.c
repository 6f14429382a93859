/* SPDX-License-Identifier: MIT
 * tree.c -- a bounded walk of the working directory and snapshots of which
 * regular files it holds. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/base/errbuf.h"
#include "tools/exec/tree.h"

struct tpt_fileid {
    dev_t dev;
    ino_t ino;
};

/* skipped names folders the walk never enters: the tool's own state, version
 * control, environments and caches, none of which holds a checkpoint. */
static int skipped(const char *name)
{
    return name[0] == '.' || strcmp(name, "__pycache__") == 0 || strcmp(name, "node_modules") == 0;
}

typedef struct walk {
    tpt_tree_fn fn;
    void *arg;
    size_t files;
    bool truncated;
} walk;

static int walk_dir(walk *w, char *path, size_t len, size_t cap, int depth)
{
    DIR *d;
    struct dirent *de;
    int r = 0;
    if (depth > TPT_TREE_MAX_DEPTH) {
        w->truncated = true;
        return 0;
    }
    if ((d = opendir(path)) == NULL) return 0;
    while (r == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        size_t nl = strlen(de->d_name);
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (len + 1 + nl + 1 > cap) continue;
        path[len] = '/';
        memcpy(path + len + 1, de->d_name, nl + 1);
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (!skipped(de->d_name)) r = walk_dir(w, path, len + 1 + nl, cap, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            if (w->files >= TPT_TREE_MAX_FILES) {
                w->truncated = true;
                break;
            }
            w->files++;
            r = w->fn(path, &st, w->arg);
        }
    }
    path[len] = '\0';
    closedir(d);
    return r;
}

int tpt_tree_walk(tpt_tree_fn fn, void *arg, bool *truncated)
{
    char path[4096] = ".";
    walk w = {fn, arg, 0, false};
    int r = walk_dir(&w, path, 1, sizeof path, 0);
    if (truncated) *truncated = w.truncated;
    return r;
}

/* ---- snapshots ---- */

typedef struct collect {
    struct tpt_fileid *ids;
    size_t n, cap;
} collect;

static int add_id(const char *path, const struct stat *st, void *arg)
{
    collect *c = arg;
    (void)path;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        struct tpt_fileid *v = realloc(c->ids, cap * sizeof *v);
        if (v == NULL) return -1;
        c->ids = v;
        c->cap = cap;
    }
    c->ids[c->n].dev = st->st_dev;
    c->ids[c->n].ino = st->st_ino;
    c->n++;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    const struct tpt_fileid *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

tp_err tpt_snapshot_take(tpt_snapshot *s, char *err)
{
    collect c = {NULL, 0, 0};
    memset(s, 0, sizeof *s);
    /* The fine clock: a file created before this instant carries an
     * earlier time whether the kernel stamped it with its coarse clock or,
     * as multigrain timestamps do, with a fine-grained one (a coarse
     * instant here could lag a file the shell created just before, the
     * redirect target of the command, and take it for a newer one). */
    clock_gettime(CLOCK_REALTIME, &s->at);
    if (tpt_tree_walk(add_id, &c, &s->truncated) != 0) {
        free(c.ids);
        return tpt_seterr(err, TP_ENOMEM, "out of memory listing the working directory");
    }
    qsort(c.ids, c.n, sizeof *c.ids, cmp_id);
    s->ids = c.ids;
    s->n = c.n;
    return TP_OK;
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* birth gives path's birth time; 0 when the file system keeps none. */
static int birth(const char *path, struct timespec *t)
{
    struct statx sx;
    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 ||
        !(sx.stx_mask & STATX_BTIME))
        return 0;
    t->tv_sec = sx.stx_btime.tv_sec;
    t->tv_nsec = sx.stx_btime.tv_nsec;
    return 1;
}

/* walked says whether the walk reaches path (absolute): under the working
 * directory, through no skipped folder, within the depth bound. */
static int walked(const char *path)
{
    char cwd[4096];
    size_t cl;
    int depth = 0;
    const char *p;
    if (getcwd(cwd, sizeof cwd) == NULL) return 0;
    cl = strlen(cwd);
    if (strncmp(path, cwd, cl) != 0 || path[cl] != '/') return 0;
    for (p = path + cl + 1; *p; depth++) {
        const char *slash = strchr(p, '/');
        char name[256];
        size_t nl;
        if (slash == NULL) return depth <= TPT_TREE_MAX_DEPTH;
        nl = (size_t)(slash - p);
        if (nl == 0 || nl >= sizeof name) return 0;
        memcpy(name, p, nl);
        name[nl] = '\0';
        if (skipped(name) || strcmp(name, "..") == 0) return 0;
        p = slash + 1;
    }
    return 0;
}

bool tpt_snapshot_had(const tpt_snapshot *s, const char *path, const struct stat *st)
{
    struct tpt_fileid key = {st->st_dev, st->st_ino};
    struct timespec b;
    int born = birth(path, &b);
    if (s->n > 0 && bsearch(&key, s->ids, s->n, sizeof key, cmp_id) != NULL)
        return !(born && ts_before(&s->at, &b));
    if (!s->truncated && walked(path)) return false;
    if (born) return ts_before(&b, &s->at);
    return ts_before(&st->st_mtim, &s->at);
}

void tpt_snapshot_free(tpt_snapshot *s)
{
    if (s == NULL) return;
    free(s->ids);
    s->ids = NULL;
    s->n = 0;
}
