/* SPDX-License-Identifier: MIT
 * aside.h -- moving a baseline's checkpoints out of the way.
 *
 * Resume's baselines must train from scratch even when the script resumes
 * on its own as soon as a checkpoint exists, so the files a baseline saved
 * are moved into the run's folder under .trainparity/ before the next
 * execution starts, together with the files it created beside them (a
 * trainer_state.json, an optimizer file written without torch).  A
 * torch.distributed.checkpoint save is a directory: its files are moved,
 * each unless it predates trainparity-run, and the directory is removed
 * when the execution created it and it is empty.  The agent
 * reports the paths it saved to; a checkpoint saved into a buffer and
 * written to a file by other means (Lightning writes torch.save's bytes
 * through fsspec) is found by its content: a file under the working
 * directory that the execution created or modified, of the buffer's size
 * and with its content digest (digest/ckpt.h).
 *
 * A file that existed before trainparity-run started is never moved (the
 * file stdout is redirected to, a checkpoint left by an earlier run, which
 * the daemon then reports as loaded by a baseline that did not write it),
 * and a file beside a checkpoint is moved only when the execution created
 * it, not merely wrote to it.  Nothing outside the working tree (once
 * symlinks and ".." are resolved) or inside .trainparity/ is ever moved: a
 * save's name is the agent's word, which another local process can forge.
 * Folders under the working directory that the
 * execution created and that are empty once its files are moved are
 * removed.  Nothing else is deleted: a move that crosses file systems
 * copies, then removes the original only after the copy is complete. */
#ifndef TP_TOOLS_EXEC_ASIDE_H
#define TP_TOOLS_EXEC_ASIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/exec/tree.h"

/* tpt_content is a checkpoint saved into a buffer: its content digest and
 * its size in bytes. */
typedef struct tpt_content {
    uint8_t digest[16];
    uint64_t size;
} tpt_content;

typedef struct tpt_aside_spec {
    const char *dest;   /* the run's folder for this execution */
    char *const *paths; /* absolute names of the files it saved to */
    size_t npaths;
    const tpt_content *contents; /* its saves into buffers */
    size_t ncontents;
    const tpt_snapshot *before_tool; /* taken when trainparity-run started */
    const tpt_snapshot *before_exec; /* taken when this execution started */
} tpt_aside_spec;

typedef struct tpt_aside_result {
    int moved;      /* files moved */
    int found;      /* checkpoints found by their content */
    int kept;       /* checkpoints left in place: they predate trainparity-run */
    int outside;    /* saves left alone: outside the working tree, or in
                     * .trainparity/, once symlinks and ".." are resolved */
    bool truncated; /* the search by content did not see every file */
} tpt_aside_result;

/* tpt_aside moves each checkpoint of a (those of its paths that still exist
 * and those found by content) and every regular file the execution created
 * in the same directory under a->dest (created 0700), at dest/<path relative
 * to the working directory, or without its leading '/' outside it).  Source
 * and script files (.py, .sh, ...) and hidden files beside them are never
 * moved, nor any file before_tool had.  Errors (with err): TP_EIO,
 * TP_ENOMEM. */
tp_err tpt_aside(const tpt_aside_spec *a, tpt_aside_result *out, char *err);

#endif
