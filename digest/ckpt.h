/* SPDX-License-Identifier: MIT
 * ckpt.h -- the content digest of a checkpoint, the same whichever way it was
 * written or read: from libtorch's per-record digests (agent/torchser.c), from a
 * torch.save zip archive in memory or on disk, or, for any other file
 * (safetensors, legacy saves), from its whole bytes.  See proto/SCHEMA.md. */
#ifndef TP_DIGEST_CKPT_H
#define TP_DIGEST_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_RECORD_NAME 200

typedef struct tp_record {
    char name[TP_RECORD_NAME]; /* without the archive folder: "data.pkl", "data/0" */
    uint64_t size;
    uint8_t d[16];
} tp_record;

/* tp_records_digest combines the records that carry content (data.pkl and
 * data/<key>) in name order.  Returns false when data.pkl is not among them. */
bool tp_records_digest(const tp_record *r, size_t n, uint8_t out[16]);

typedef struct tp_ckpt_digest {
    bool have;       /* out is valid */
    bool zip;        /* a torch zip archive: records are filled */
    uint64_t nbytes; /* size of the file or buffer */
    uint8_t out[16];
    tp_record *records; /* malloc'ed (zip only); free() it */
    size_t nrecords;
} tp_ckpt_digest;

/* tp_ckpt_digest_mem digests n bytes at p (a zip archive or anything). */
void tp_ckpt_digest_mem(const uint8_t *p, size_t n, tp_ckpt_digest *cd);
/* tp_ckpt_digest_file maps and digests a file.  Returns 0, or -1 (errno set)
 * when the file cannot be read. */
int tp_ckpt_digest_file(const char *path, tp_ckpt_digest *cd);

#endif
