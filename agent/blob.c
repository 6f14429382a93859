/* SPDX-License-Identifier: MIT
 * blob.c -- ships each distinct tensor's bytes once (an open-addressing set
 * of digests, grown at half load). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agent/blob.h"
#include "agent/emit.h"
#include "proto/event.h"

static uint8_t (*set)[16];
static size_t cap, used;

static size_t slot(const uint8_t d[16], size_t c)
{
    uint64_t h;
    memcpy(&h, d, 8);
    return (size_t)(h & (c - 1));
}

static int is_empty(const uint8_t e[16])
{
    static const uint8_t zero[16];
    return memcmp(e, zero, 16) == 0;
}

/* insert returns 1 when d was new, 0 when present, -1 on allocation failure. */
static int insert(const uint8_t d[16])
{
    size_t i;
    if (used * 2 >= cap) {
        size_t ncap = cap ? cap * 2 : 1024;
        uint8_t(*nset)[16] = calloc(ncap, 16);
        if (nset == NULL) return -1;
        for (size_t k = 0; k < cap; k++) {
            if (is_empty(set[k])) continue;
            for (i = slot(set[k], ncap); !is_empty(nset[i]); i = (i + 1) & (ncap - 1)) {}
            memcpy(nset[i], set[k], 16);
        }
        free(set);
        set = nset;
        cap = ncap;
    }
    for (i = slot(d, cap); !is_empty(set[i]); i = (i + 1) & (cap - 1))
        if (memcmp(set[i], d, 16) == 0) return 0;
    memcpy(set[i], d, 16);
    used++;
    return 1;
}

int tpa_blob_ship(const uint8_t d[16], const void *data, size_t n, const char *dtype,
                  const int64_t *shape, int ndim)
{
    tp_buf b;
    int fresh = insert(d);
    if (fresh <= 0) return fresh;
    tp_buf_init(&b);
    tp_mp_map(&b, 4);
    tp_mp_cstr(&b, TP_KEY(blob, digest));
    tp_mp_bin(&b, d, 16);
    tp_mp_cstr(&b, TP_KEY(blob, data));
    tp_mp_bin(&b, data, n);
    tp_mp_cstr(&b, TP_KEY(blob, dtype));
    tp_mp_cstr(&b, dtype);
    tp_mp_cstr(&b, TP_KEY(blob, shape));
    tp_mp_array(&b, (uint32_t)ndim);
    for (int i = 0; i < ndim; i++) tp_mp_int(&b, shape[i]);
    tpa_emit_commit(TP_K_BLOB, &b);
    tp_buf_free(&b);
    return 0;
}
