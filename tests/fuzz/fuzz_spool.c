/* SPDX-License-Identifier: MIT
 * fuzz_spool.c -- libFuzzer target: bytes as a spool file (frames of a
 * 4-byte big-endian length and one batch, agent/send.c) read by
 * tpd_ingest_spool (daemon/ingest/spool.c: framing, torn and oversized frames,
 * then every batch through ingest) on the scratch store of fuzz_store.h. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[4200];
    tpd_spool_result res;
    char why[512] = "";
    FILE *f;
    if (!path[0]) {
        fuzz_store();
        fuzz_path(path, sizeof path, "1-4242.spool");
    }
    if ((f = fopen(path, "wb")) == NULL) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
    fuzz_begin();
    tpd_ingest_spool(fuzz_ingest(), path, &res, why, sizeof why);
    fuzz_end();
    return 0;
}
