/* SPDX-License-Identifier: MIT
 * spool.c -- spool files: the batches an agent wrote while the daemon was
 * unreachable, as frames of a 4-byte big-endian length and one batch, fed to
 * the same ingest code as the socket.
 *
 * The length of a frame is checked against TP_MAX_MESSAGE and against the
 * bytes left in the file before anything is allocated (tp_frame_read), so
 * a torn or hostile frame costs no memory.  A length over the limit cannot
 * be skipped safely (the next frame boundary is unknown), so reading stops
 * there.
 *
 * A path that a control request names is confined to spool files: the name
 * must have the agent's form, and the file is opened without following a
 * symbolic link and checked on the open descriptor (a regular file of the
 * daemon's user), so a request can neither read another file nor learn
 * anything of one but that it is not a spool file. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ingest/ingest.h"
#include "proto/event.h"
#include "proto/frame.h"

#define FRAMES_PER_TXN 256

typedef struct execs {
    int64_t *v;
    size_t n, cap;
} execs;

static int execs_add(execs *x, int64_t id)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i] == id) return 0;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        int64_t *p = realloc(x->v, cap * sizeof *p);
        if (p == NULL) return -1;
        x->v = p;
        x->cap = cap;
    }
    x->v[x->n++] = id;
    return 0;
}

/* ingest_file stores the frames of f, a regular file of size bytes (or
 * bytes in memory), and closes it; from: tpd_ingest_local's.  Reasons
 * quote what the file holds (the decoder's words) only for its owner;
 * otherwise a bad frame is named by its number only. */
static tp_err ingest_file(tpd_ingest *in, FILE *f, off_t size, const char *path, tpd_from from,
                          tpd_spool_result *res, char *why, size_t whylen)
{
    tpd_store *s = NULL;
    tpd_spool_result r;
    execs touched = {NULL, 0, 0};
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t in_txn = 0;
    char reason[256];
    off_t left = size;
    bool own;
    tp_err err = TP_OK;
    memset(&r, 0, sizeof r);
    s = tpd_ingest_store(in);
    own = !tpd_store_in_txn(s);
    if (own && (err = tpd_store_begin(s)) != TP_OK) goto dbfail;
    for (;;) {
        uint32_t len;
        tpd_ingest_result one;
        tp_frame_rc fr = tp_frame_read(f, &left, TP_MAX_MESSAGE, &buf, &cap, &len);
        if (fr == TP_FRAME_END) break;
        if (fr == TP_FRAME_EIO) goto ioerr;
        if (fr == TP_FRAME_ENOMEM) {
            err = TP_ENOMEM;
            snprintf(why, whylen, "out of memory");
            goto fail;
        }
        if (fr == TP_FRAME_TORN) {
            r.torn = true;
            break;
        }
        if (fr == TP_FRAME_LONG) {
            r.bad++;
            if (!why[0] && from == TPD_FROM_OWNER)
                snprintf(why, whylen, "frame %llu: %u bytes exceeds the limit; rest skipped",
                         (unsigned long long)r.frames, len);
            else if (!why[0])
                snprintf(why, whylen, "frame %llu: longer than the limit; rest skipped",
                         (unsigned long long)r.frames);
            tpd_store_counter_add(s, "malformed", 1);
            break;
        }
        r.frames++;
        err = tpd_ingest_local(in, buf, len, from, &one, reason, sizeof reason);
        if (err == TP_EPROTO || err == TP_EVERSION) {
            r.bad++;
            if (!why[0] && from == TPD_FROM_OWNER)
                snprintf(why, whylen, "frame %llu: %s", (unsigned long long)r.frames - 1, reason);
            else if (!why[0])
                snprintf(why, whylen, "frame %llu: malformed or refused batch",
                         (unsigned long long)r.frames - 1);
            err = TP_OK;
        } else if (err != TP_OK) {
            snprintf(why, whylen, "%s", reason);
            goto fail;
        } else {
            r.events += one.events;
            r.dup += one.dup;
            if (execs_add(&touched, one.exec) != 0) {
                err = TP_ENOMEM;
                goto fail;
            }
        }
        if (own && ++in_txn == FRAMES_PER_TXN) {
            in_txn = 0;
            if ((err = tpd_store_commit(s)) != TP_OK || (err = tpd_store_begin(s)) != TP_OK)
                goto dbfail;
        }
    }
    tpd_store_counter_add(s, "spool_frames", (int64_t)r.frames);
    if (r.torn) tpd_store_counter_add(s, "torn", 1);
    for (size_t i = 0; i < touched.n; i++)
        if ((err = tpd_store_gaps_compute(s, touched.v[i], NULL)) != TP_OK) goto dbfail;
    if (own && (err = tpd_store_commit(s)) != TP_OK) goto dbfail;
    fclose(f);
    free(buf);
    free(touched.v);
    if (res) *res = r;
    return TP_OK;
ioerr:
    err = TP_EIO;
    snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
    goto fail;
dbfail:
    snprintf(why, whylen, "database: %s", tpd_store_errmsg(s));
fail:
    if (own) tpd_store_rollback(s);
    fclose(f);
    free(buf);
    free(touched.v);
    return err;
}

tp_err tpd_ingest_spool(tpd_ingest *in, const char *path, tpd_spool_result *res, char *why,
                        size_t whylen)
{
    char dummy[8];
    struct stat sb;
    FILE *f;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return errno == ENOENT ? TP_ENOENT : TP_EIO;
    }
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(why, whylen, "%s is not a regular file", path);
        fclose(f);
        return TP_EIO;
    }
    return ingest_file(in, f, sb.st_size, path, TPD_FROM_OWNER, res, why, whylen);
}

/* digits skips the decimal digits at p (1 to 19 of them); NULL if none. */
static const char *digits(const char *p)
{
    const char *q = p;
    while (*q >= '0' && *q <= '9') q++;
    return q == p || q - p > 19 ? NULL : q;
}

/* spool_name reports whether path's last component is <exec>-<pid>.spool. */
static bool spool_name(const char *path)
{
    const char *slash = strrchr(path, '/'), *p = slash ? slash + 1 : path;
    if ((p = digits(p)) == NULL || *p++ != '-' || (p = digits(p)) == NULL) return false;
    return strcmp(p, ".spool") == 0;
}

tp_err tpd_ingest_spool_confined(tpd_ingest *in, const char *path, tpd_spool_result *res, char *why,
                                 size_t whylen)
{
    char dummy[8];
    struct stat sb;
    FILE *f;
    int fd = -1;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    /* O_NONBLOCK: a FIFO of the right name must not hang the daemon */
    if (!spool_name(path) ||
        (fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 ||
        fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        fcntl(fd, F_SETFL, 0) != 0 || (f = fdopen(fd, "rb")) == NULL) {
        if (fd >= 0) close(fd);
        snprintf(why, whylen, "not a spool file");
        return TP_EINVAL;
    }
    return ingest_file(in, f, sb.st_size, path, TPD_FROM_SPOOL, res, why, whylen);
}

tp_err tpd_ingest_frames(tpd_ingest *in, const void *data, size_t len, tpd_spool_result *res,
                         char *why, size_t whylen)
{
    char dummy[8];
    FILE *f;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if (len == 0) {
        if (res) memset(res, 0, sizeof *res);
        return TP_OK;
    }
    if ((f = fmemopen((void *)data, len, "rb")) == NULL) {
        snprintf(why, whylen, "out of memory");
        return TP_ENOMEM;
    }
    return ingest_file(in, f, (off_t)len, "frames", TPD_FROM_PEER, res, why, whylen);
}
