/* SPDX-License-Identifier: MIT
 * spool.c -- ingest an execution's spool files, then move them aside. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/frame.h"
#include "proto/mp.h"
#include "tools/base/errbuf.h"
#include "tools/base/paths.h"
#include "tools/client/spool.h"

/* What one request of frames may hold: the network's limit less room for
 * the request's own keys (the command, the token, the bin's header). */
#define FRAMES_MAX (TP_MAX_NET_REQUEST - 4096)

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

/* add adds the counts of one request to *sum. */
static void add(tpt_ingest_info *sum, const tpt_ingest_info *in)
{
    sum->events += in->events;
    sum->bad += in->bad;
    sum->frames += in->frames;
    sum->dup += in->dup;
    sum->torn += in->torn;
}

/* flush sends the frames gathered in chunk, if any, and empties it. */
static tp_err flush(tpt_client *c, tp_buf *chunk, tpt_ingest_info *sum, char *err)
{
    tpt_ingest_info in;
    tp_err rc;
    if (chunk->len == 0) return TP_OK;
    if ((rc = tpt_ingest_frames(c, chunk->data, chunk->len, &in, err)) != TP_OK) return rc;
    add(sum, &in);
    tp_buf_reset(chunk);
    return TP_OK;
}

/* send_file has a daemon on another host store the spool file at path: its
 * whole frames, read here, as many to a request as the network's limit
 * takes (tpt_ingest_frames).  A torn last frame is counted, as the daemon
 * counts one in a file it reads.  A frame longer than a request can carry
 * is TP_EINVAL: the file must then be stored on the daemon's host. */
static tp_err send_file(tpt_client *c, const char *path, tpt_ingest_info *sum, char *err)
{
    uint8_t *frame = NULL;
    size_t cap = 0;
    tp_buf chunk;
    struct stat sb;
    off_t left;
    long long nth = 0;
    tp_err rc = TP_OK;
    FILE *f = fopen(path, "rb");
    memset(sum, 0, sizeof *sum);
    if (f == NULL) return tpt_seterr(err, TP_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return tpt_seterr(err, TP_EIO, "cannot read %s: %s", path, strerror(errno));
    }
    left = sb.st_size;
    tp_buf_init(&chunk);
    for (;; nth++) {
        uint32_t len;
        uint8_t hdr[4];
        tp_frame_rc fr = tp_frame_read(f, &left, FRAMES_MAX - 4, &frame, &cap, &len);
        if (fr == TP_FRAME_END) break;
        if (fr == TP_FRAME_TORN) {
            sum->torn = 1;
            break;
        }
        if (fr == TP_FRAME_EIO) {
            rc = tpt_seterr(err, TP_EIO, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (fr == TP_FRAME_LONG) {
            rc = tpt_seterr(err, TP_EINVAL,
                            "frame %lld is %lu bytes, more than a request to a daemon on another "
                            "host carries: copy the file to the daemon's host and run "
                            "trainparity-daemon ingest FILE there",
                            nth, (unsigned long)len);
            goto out;
        }
        if (fr == TP_FRAME_ENOMEM) goto oom;
        if (chunk.len + 4 + len > FRAMES_MAX && (rc = flush(c, &chunk, sum, err)) != TP_OK)
            goto out;
        hdr[0] = (uint8_t)(len >> 24), hdr[1] = (uint8_t)(len >> 16);
        hdr[2] = (uint8_t)(len >> 8), hdr[3] = (uint8_t)len;
        tp_buf_append(&chunk, hdr, 4);
        tp_buf_append(&chunk, frame, len);
        if (chunk.oom) goto oom;
    }
    rc = flush(c, &chunk, sum, err);
    goto out;
oom:
    rc = tpt_seterr(err, TP_ENOMEM, "out of memory");
out:
    tp_buf_free(&chunk);
    free(frame);
    fclose(f);
    return rc;
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
        /* a daemon on another host cannot read the file: its frames go */
        rc = tp_url_local(tpt_client_url(c)) ? tpt_ingest(c, from, &in, why)
                                             : send_file(c, from, &in, why);
        if (rc != TP_OK) {
            tpt_seterr(err, rc, "cannot ingest %s: %s", from, why);
            goto fail;
        }
        if (rename(from, to) != 0) {
            rc = tpt_seterr(err, TP_EIO, "ingested %s but cannot move it to %s: %s", from, done,
                            strerror(errno));
            goto fail;
        }
        if (sum != NULL) add(sum, &in);
        if (nfiles != NULL) (*nfiles)++;
    }
fail:
    for (i = 0; names[i] != NULL; i++) free(names[i]);
    free(names);
    return rc;
}

tp_err tpt_spool_pending(const char *spool, int64_t exec, int *n, char *err)
{
    char **names;
    tp_err rc;
    *n = 0;
    if ((rc = list(spool, exec, &names, err)) != TP_OK || names == NULL) return rc;
    while (names[*n] != NULL) free(names[(*n)++]);
    free(names);
    return TP_OK;
}
