/* SPDX-License-Identifier: MIT
 * tree.h -- the regular files under the working directory, walked within
 * bounds, and which of them existed at a given moment.
 *
 * Resume moves a baseline's checkpoints aside, and must never take a file
 * that was the user's before the command started (the file stdout is
 * redirected to, a checkpoint left by an earlier run).  A snapshot records
 * the (device, inode) of every regular file when it is taken; a file whose
 * birth time (where the file system keeps one) is later than the snapshot
 * is new even if it reuses an inode number of a file deleted since.
 *
 * The walk skips hidden folders (.trainparity, .git, .venv), __pycache__ and
 * node_modules, follows no symbolic link, and stops after TPT_TREE_MAX_FILES
 * files or TPT_TREE_MAX_DEPTH levels: a working directory that holds a data
 * set costs a bounded time, at the price of not seeing all of it. */
#ifndef TP_TOOLS_EXEC_TREE_H
#define TP_TOOLS_EXEC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "proto/tp_err.h"

#define TPT_TREE_MAX_FILES 200000
#define TPT_TREE_MAX_DEPTH 32

/* tpt_tree_fn is called with each regular file's path (relative to the
 * working directory, "./" first) and lstat; a nonzero return ends the walk
 * with that value. */
typedef int (*tpt_tree_fn)(const char *path, const struct stat *st, void *arg);

/* tpt_tree_walk calls fn for the regular files under the working directory,
 * within the bounds above.  Returns fn's nonzero value, or 0; *truncated
 * (may be NULL) says whether a bound was reached. */
int tpt_tree_walk(tpt_tree_fn fn, void *arg, bool *truncated);

typedef struct tpt_snapshot {
    struct timespec at; /* when it was taken (the file system's clock) */
    struct tpt_fileid *ids;
    size_t n;
    bool truncated; /* some files were not seen: they count as existing */
} tpt_snapshot;

/* tpt_snapshot_take records the regular files that exist now.  Free it with
 * tpt_snapshot_free.  Errors (with err): TP_ENOMEM. */
tp_err tpt_snapshot_take(tpt_snapshot *s, char *err);

/* tpt_snapshot_had says whether the file at path (absolute; st: its lstat)
 * existed when s was taken: it was seen then, unless its birth time is
 * later (a new file that reuses a deleted one's inode).  For a file the walk
 * could not have seen (outside the working directory, or the walk was
 * truncated) its birth time decides, or where the file system keeps none,
 * whether it was left unmodified since. */
bool tpt_snapshot_had(const tpt_snapshot *s, const char *path, const struct stat *st);

/* tpt_snapshot_free releases what s holds.  NULL is a no-op. */
void tpt_snapshot_free(tpt_snapshot *s);

#endif
