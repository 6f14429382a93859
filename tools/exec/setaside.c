/* SPDX-License-Identifier: MIT
 * setaside.c -- moving what an execution saved out of the way (setaside.h):
 * the daemon's list of its saves, then tpt_aside. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/exec/aside.h"
#include "tools/base/cli.h"
#include "tools/client/ctl.h"
#include "tools/client/daemon.h"
#include "tools/client/follow.h"
#include "tools/base/errbuf.h"
#include "tools/base/paths.h"
#include "tools/exec/setaside.h"

typedef struct saves {
    char *text;   /* the daemon's answer, which paths point into */
    char **paths; /* files saved to */
    size_t npaths;
    tpt_content *contents; /* buffers saved into */
    size_t ncontents;
} saves;

static void saves_free(saves *v)
{
    free(v->text);
    free(v->paths);
    free(v->contents);
}

/* parse_content reads "buffer <32 hex digits> <size>". */
static int parse_content(const char *line, tpt_content *c)
{
    const char *p = line + 7;
    char *end;
    unsigned long long size;
    for (int i = 0; i < 16; i++, p += 2) {
        unsigned hi, lo;
        if (sscanf(p, "%1x%1x", &hi, &lo) != 2) return -1;
        c->digest[i] = (uint8_t)(hi << 4 | lo);
    }
    if (*p != ' ') return -1;
    errno = 0;
    size = strtoull(p + 1, &end, 10);
    if (errno || *end || size == 0) return -1;
    c->size = size;
    return 0;
}

/* saved asks the daemon what an execution saved: the files it saved to, and
 * the digest and size of each buffer it saved into. */
static tp_err saved(tpt_client *c, int64_t exec, saves *v, char *err)
{
    char *line, *save = NULL;
    size_t nlines = 1;
    tp_err rc;
    memset(v, 0, sizeof *v);
    if ((rc = tpt_query(c, "saves", exec, &v->text, err)) != TP_OK) return rc;
    for (const char *p = v->text; *p; p++) nlines += *p == '\n';
    v->paths = malloc((nlines + 1) * sizeof *v->paths);
    v->contents = malloc(nlines * sizeof *v->contents);
    if (v->paths == NULL || v->contents == NULL) {
        saves_free(v);
        return tpt_seterr(err, TP_ENOMEM, "out of memory");
    }
    for (line = strtok_r(v->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '/')
            v->paths[v->npaths++] = line;
        else if (strncmp(line, "buffer ", 7) == 0 &&
                 parse_content(line, &v->contents[v->ncontents]) == 0)
            v->ncontents++;
    }
    v->paths[v->npaths] = NULL;
    return TP_OK;
}

int tpt_set_aside(tpt_client *c, const char *tag, int64_t run, const char *role, int64_t exec,
                  const tpt_snapshot *tool, const tpt_snapshot *before)
{
    char err[TPT_ERR_LEN], dest[4096], sub[64];
    tpt_aside_result ar = {0, 0, 0, 0, false};
    saves v;
    if (saved(c, exec, &v, err) != TP_OK) {
        tpt_error("%s: cannot list its checkpoints: %s", role, err);
        return -1;
    }
    if (v.npaths > 0 || v.ncontents > 0) {
        tpt_aside_spec a = {dest, v.paths, v.npaths, v.contents, v.ncontents, tool, before};
        /* .trainparity/runs/<run>/<role>, one level at a time */
        tp_err rc = tpt_state_dir("runs", dest, sizeof dest, err);
        snprintf(sub, sizeof sub, "runs/%lld", (long long)run);
        if (rc == TP_OK) rc = tpt_state_dir(sub, dest, sizeof dest, err);
        snprintf(sub, sizeof sub, "runs/%lld/%s", (long long)run, role);
        if (rc == TP_OK) rc = tpt_state_dir(sub, dest, sizeof dest, err);
        if (rc == TP_OK) rc = tpt_aside(&a, &ar, err);
        if (rc != TP_OK) {
            tpt_error("%s: cannot move its checkpoints aside: %s", role, err);
            saves_free(&v);
            return -1;
        }
    }
    if (ar.found > 0)
        tpt_progress(tag, "%s: found %d file(s) holding what it saved into a buffer", role,
                     ar.found);
    if (ar.moved > 0)
        tpt_progress(tag, "%s: moved %d file(s) it saved aside to %s", role, ar.moved, dest);
    if (ar.kept > 0)
        tpt_progress(tag,
                     "%s: left %d checkpoint(s) in place: they existed before trainparity-run "
                     "started",
                     role, ar.kept);
    if (ar.outside > 0)
        tpt_progress(tag,
                     "%s: left %d saved file(s) alone: outside the working directory (once "
                     "symlinks and \"..\" are resolved), or in .trainparity/",
                     role, ar.outside);
    if (ar.truncated)
        tpt_progress(tag,
                     "%s: too many files under the working directory to search them all for "
                     "what it saved into a buffer",
                     role);
    saves_free(&v);
    return 0;
}

int tpt_session_aside(tpt_session *s, const char *tag, int64_t run, const char *role, int64_t exec,
                      const tpt_snapshot *tool, const tpt_snapshot *before)
{
    char err[TPT_ERR_LEN];
    if (tpt_set_aside(tpt_session_client(s), tag, run, role, exec, tool, before) != 0) return -1;
    if (!tpt_daemon_on_network(tpt_session_daemon(s))) return 0;
    if (tpt_follow_aside(tpt_session_client(s), run, exec, err) == TP_OK) return 0;
    tpt_error("%s: cannot have the hosts that follow the check move its checkpoints aside: %s",
              role, err);
    return -1;
}
