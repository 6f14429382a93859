/* SPDX-License-Identifier: MIT
 * frame.c -- a spool file's frames, read one at a time (frame.h). */
#include <stdlib.h>

#include "proto/frame.h"

tp_frame_rc tp_frame_read(FILE *f, off_t *left, size_t max, uint8_t **buf, size_t *cap,
                          uint32_t *len)
{
    uint8_t hdr[4];
    size_t got = fread(hdr, 1, 4, f);
    if (got == 0 && feof(f)) return TP_FRAME_END;
    if (got < 4) return ferror(f) ? TP_FRAME_EIO : TP_FRAME_TORN;
    *left -= 4;
    *len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (*len > max) return TP_FRAME_LONG;
    if ((off_t)*len > *left) return TP_FRAME_TORN;
    if (*len > *cap) {
        uint8_t *p = realloc(*buf, *len);
        if (p == NULL) return TP_FRAME_ENOMEM;
        *buf = p;
        *cap = *len;
    }
    if (fread(*buf, 1, *len, f) < *len) return ferror(f) ? TP_FRAME_EIO : TP_FRAME_TORN;
    *left -= *len;
    return TP_FRAME_OK;
}
