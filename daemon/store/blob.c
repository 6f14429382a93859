/* SPDX-License-Identifier: MIT
 * blob.c -- content-addressed blob files: temporary file + rename. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/store/blob.h"

struct tpd_blobs {
    char *dir;
    bool made_root;
    uint8_t made[256 / 8]; /* subdirectories known to exist */
};

tp_err tpd_blobs_open(tpd_blobs **bp, const char *dir)
{
    tpd_blobs *b;
    if (bp == NULL || dir == NULL || dir[0] == '\0') return TP_EINVAL;
    b = calloc(1, sizeof *b);
    if (b == NULL || (b->dir = strdup(dir)) == NULL) {
        free(b);
        return TP_ENOMEM;
    }
    *bp = b;
    return TP_OK;
}

void tpd_blobs_close(tpd_blobs *b)
{
    if (b == NULL) return;
    free(b->dir);
    free(b);
}

tp_err tpd_blobs_dir_for(const char *db_path, char *out, size_t n)
{
    int w = snprintf(out, n, "%s.blobs", db_path);
    return w < 0 || (size_t)w >= n ? TP_EINVAL : TP_OK;
}

tp_err tpd_blob_path(const tpd_blobs *b, const uint8_t digest[16], char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char h[33];
    int w;
    for (int i = 0; i < 16; i++) {
        h[2 * i] = hex[digest[i] >> 4];
        h[2 * i + 1] = hex[digest[i] & 15];
    }
    h[32] = '\0';
    w = snprintf(out, n, "%s/%.2s/%s", b->dir, h, h + 2);
    return w < 0 || (size_t)w >= n ? TP_EINVAL : TP_OK;
}

static int mkdir_0700(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* make_dirs creates the root and the digest's subdirectory once. */
static tp_err make_dirs(tpd_blobs *b, const uint8_t digest[16], const char *file)
{
    char sub[4096];
    const char *slash = strrchr(file, '/');
    if (b->made[digest[0] / 8] & (1u << (digest[0] % 8))) return TP_OK;
    if (!b->made_root) {
        if (mkdir_0700(b->dir) != 0) return TP_EIO;
        b->made_root = true;
    }
    if (slash == NULL || (size_t)(slash - file) >= sizeof sub) return TP_EINVAL;
    memcpy(sub, file, (size_t)(slash - file));
    sub[slash - file] = '\0';
    if (mkdir_0700(sub) != 0) return TP_EIO;
    b->made[digest[0] / 8] |= (uint8_t)(1u << (digest[0] % 8));
    return TP_OK;
}

int tpd_write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

tp_err tpd_blob_put(tpd_blobs *b, const uint8_t digest[16], const void *p, size_t n, bool *created)
{
    char file[4096], tmp[4096 + 16];
    struct stat sb;
    tp_err err;
    int fd;
    if ((err = tpd_blob_path(b, digest, file, sizeof file)) != TP_OK) return err;
    if (stat(file, &sb) == 0) {
        if (created) *created = false;
        return TP_OK;
    }
    if ((err = make_dirs(b, digest, file)) != TP_OK) return err;
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", file);
    fd = mkstemp(tmp);
    if (fd < 0) {
        /* the subdirectory may have been removed behind our back: once more */
        b->made[digest[0] / 8] &= (uint8_t) ~(1u << (digest[0] % 8));
        b->made_root = false;
        if ((err = make_dirs(b, digest, file)) != TP_OK) return err;
        snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", file);
        if ((fd = mkstemp(tmp)) < 0) return TP_EIO;
    }
    if (tpd_write_all(fd, p, n) != 0) {
        close(fd);
        unlink(tmp);
        return TP_EIO;
    }
    if (close(fd) != 0 || rename(tmp, file) != 0) {
        unlink(tmp);
        return TP_EIO;
    }
    if (created) *created = true;
    return TP_OK;
}
