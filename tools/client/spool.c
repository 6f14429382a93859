/* SPDX-License-Identifier: MIT
 * spool.c -- ingest an execution's spool files, then move them aside. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/errbuf.h"
#include "tools/base/paths.h"
#include "tools/client/spool.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_ours(const char *name, const char *prefix)
{
    size_t n = strlen(name), p = strlen(prefix), s = strlen(".spool");
    return n > p + s && strncmp(name, prefix, p) == 0 && strcmp(name + n - s, ".spool") == 0;
}

/* join writes dir/name into out (n bytes); 0 when it does not fit. */
static int join(char *out, size_t n, const char *dir, const char *name)
{
    size_t d = strlen(dir), m = strlen(name);
    if (d + 1 + m >= n) return 0;
    memcpy(out, dir, d);
    out[d] = '/';
    memcpy(out + d + 1, name, m + 1);
    return 1;
}

/* list returns the names of exec's spool files, sorted, in a NULL-terminated
 * array (free each and the array); *out is NULL for a missing directory. */
static tp_err list(const char *spool, int64_t exec, char ***out, char *err)
{
    char prefix[32], **v = NULL, **nv;
    size_t n = 0, cap = 0;
    struct dirent *e;
    DIR *dir;

    *out = NULL;
    if ((dir = opendir(spool)) == NULL) {
        if (errno == ENOENT) return TP_OK;
        return tpt_seterr(err, TP_EIO, "cannot read %s: %s", spool, strerror(errno));
    }
    snprintf(prefix, sizeof(prefix), "%lld-", (long long)exec);
    while ((e = readdir(dir)) != NULL) {
        if (!is_ours(e->d_name, prefix)) continue;
        if (n + 2 > cap) {
            cap = cap ? cap * 2 : 8;
            if ((nv = realloc(v, cap * sizeof(*v))) == NULL) goto oom;
            v = nv;
        }
        if ((v[n] = strdup(e->d_name)) == NULL) goto oom;
        v[++n] = NULL;
    }
    closedir(dir);
    if (v != NULL) qsort(v, n, sizeof(*v), by_name);
    *out = v;
    return TP_OK;
oom:
    closedir(dir);
    while (n > 0) free(v[--n]);
    free(v);
    return tpt_seterr(err, TP_ENOMEM, "out of memory");
}

tp_err tpt_spool_ingest(tpt_client *c, const char *spool, int64_t exec, tpt_ingest_info *sum,
                        int *nfiles, char *err)
{
    char from[PATH_MAX], done[PATH_MAX], to[PATH_MAX], why[TPT_ERR_LEN];
    char **names;
    tpt_ingest_info in;
    tp_err rc;
    size_t i;

    if ((rc = list(spool, exec, &names, err)) != TP_OK || names == NULL) return rc;
    if (!join(done, sizeof(done), spool, "done")) {
        rc = tpt_seterr(err, TP_EINVAL, "path too long: %s", spool);
        goto fail;
    }
    if ((rc = tpt_private_dir(done, err)) != TP_OK) goto fail;
    for (i = 0; names[i] != NULL; i++) {
        if (!join(from, sizeof(from), spool, names[i]) || !join(to, sizeof(to), done, names[i])) {
            rc = tpt_seterr(err, TP_EINVAL, "path too long: %s/%s", done, names[i]);
            goto fail;
        }
        if ((rc = tpt_ingest(c, from, &in, why)) != TP_OK) {
            tpt_seterr(err, rc, "cannot ingest %s: %s", from, why);
            goto fail;
        }
        if (rename(from, to) != 0) {
            rc = tpt_seterr(err, TP_EIO, "ingested %s but cannot move it to %s: %s", from, done,
                            strerror(errno));
            goto fail;
        }
        if (sum != NULL) {
            sum->events += in.events;
            sum->bad += in.bad;
            sum->frames += in.frames;
            sum->dup += in.dup;
            sum->torn += in.torn;
        }
        if (nfiles != NULL) (*nfiles)++;
    }
fail:
    for (i = 0; names[i] != NULL; i++) free(names[i]);
    free(names);
    return rc;
}
