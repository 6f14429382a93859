/* SPDX-License-Identifier: MIT
 * blob.h -- the content-addressed blob store beside the database: tensor
 * bytes sent in blob events, one file per digest, <db>.blobs/ab/cdef...
 * (the 32 hex digits of the XXH3-128 digest, split after two).
 *
 * A file appears whole or not at all (written to a temporary name in the same
 * directory, then renamed), so a reader never sees a torn blob; identical
 * content is stored once.  Directories are created 0700 on first use.  The
 * digest is the agent's claim; the bytes are not rehashed here. */
#ifndef TP_DAEMON_STORE_BLOB_H
#define TP_DAEMON_STORE_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

typedef struct tpd_blobs tpd_blobs; /* opaque */

/* tpd_blobs_open prepares a blob store in directory dir (nothing is created
 * until the first put).  Errors: TP_EINVAL, TP_ENOMEM. */
tp_err tpd_blobs_open(tpd_blobs **bp, const char *dir);
/* tpd_blobs_close releases b.  NULL is a no-op. */
void tpd_blobs_close(tpd_blobs *b);

/* tpd_blobs_dir_for writes "<db_path>.blobs" into out (n bytes).
 * TP_EINVAL when out is too small. */
tp_err tpd_blobs_dir_for(const char *db_path, char *out, size_t n);

/* tpd_blob_path writes the file name of digest into out (n bytes). */
tp_err tpd_blob_path(const tpd_blobs *b, const uint8_t digest[16], char *out, size_t n);

/* tpd_blob_put stores n bytes under digest unless a file for it exists;
 * *created (if not NULL) tells which.  Errors: TP_EIO, TP_EINVAL. */
tp_err tpd_blob_put(tpd_blobs *b, const uint8_t digest[16], const void *p, size_t n, bool *created);

/* tpd_write_all writes the n bytes at buf to fd, across short writes and
 * EINTR; -1 (errno set) on failure. */
int tpd_write_all(int fd, const void *buf, size_t n);

#endif
