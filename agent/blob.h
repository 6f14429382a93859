/* SPDX-License-Identifier: MIT
 * blob.h -- tensor bytes for the daemon's blob store (TRAINPARITY_CAPTURE=values).
 * Each distinct digest is shipped once per process, as a `blob` event. */
#ifndef TP_AGENT_BLOB_H
#define TP_AGENT_BLOB_H

#include <stddef.h>
#include <stdint.h>

/* tpa_blob_ship emits the bytes of a tensor with digest d unless this process
 * already shipped them.  Returns 0 when the bytes are (now) shipped, -1 when
 * they could not be (allocation failure).  GIL held. */
int tpa_blob_ship(const uint8_t d[16], const void *data, size_t n, const char *dtype,
                  const int64_t *shape, int ndim);

#endif
