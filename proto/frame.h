/* SPDX-License-Identifier: MIT
 * frame.h -- the frames of a spool file (proto/SCHEMA.md): a 4-byte
 * big-endian length, then that many bytes of one batch.  The agent writes
 * them (agent/send.c); the daemon stores a file's (daemon/ingest/spool.c)
 * and a tool sends a daemon on another host a file's
 * (tools/client/spool.c), each reading them with tp_frame_read. */
#ifndef TP_PROTO_FRAME_H
#define TP_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

typedef enum tp_frame_rc {
    TP_FRAME_OK,     /* a whole frame: *len bytes at *buf */
    TP_FRAME_END,    /* the file ends between two frames */
    TP_FRAME_TORN,   /* the file ends inside a frame, or its length header */
    TP_FRAME_LONG,   /* its length, *len, is over max: its bytes are not read */
    TP_FRAME_EIO,    /* a read failed (errno says why) */
    TP_FRAME_ENOMEM, /* *buf could not grow */
} tp_frame_rc;

/* tp_frame_read reads the next frame of f into *buf (grown with realloc to
 * *cap bytes; free() it).  *left counts down the bytes f has left: a length
 * beyond them is TP_FRAME_TORN before anything is allocated, so a torn or
 * hostile length costs no memory; one over max is TP_FRAME_LONG, checked
 * first (the next frame's start is then unknown: stop reading). */
tp_frame_rc tp_frame_read(FILE *f, off_t *left, size_t max, uint8_t **buf, size_t *cap,
                          uint32_t *len);

#endif
