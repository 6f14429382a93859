/* SPDX-License-Identifier: MIT
 * fuzz_ingest.c -- libFuzzer target: bytes as an ingest message.  The
 * strict decoder first (proto/event.c: tp_batch_decode, then every body
 * and leaf read back as the daemon reads them), then the whole ingest path
 * (daemon/ingest/ingest.c: checks, rows, blob files) on the scratch store
 * of fuzz_store.h, where batches of execution 1 with its key are stored. */
#include <stddef.h>
#include <stdint.h>

#include "proto/event.h"
#include "tests/fuzz/fuzz_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* read_back reads what a decoded batch offers, as the daemon does: every
 * field of type leaves (proto/events.def), leaf by leaf. */
static void read_back(const tp_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const tp_event *e = &b->ev[i];
        const tp_body_def *bd = &tp_bodies[tp_kinds[e->kind].body];
        for (unsigned k = 0; k < tp_body_nfields(tp_kinds[e->kind].body); k++) {
            tp_field f = (tp_field)(bd->first + k);
            tp_mpr r;
            uint32_t n;
            tp_leaf l;
            if (!(tp_fields[f].types & TP_T_LEAVES)) continue;
            if (tp_body_find(e, f, &r) != TP_OK || tp_mpr_array(&r, &n) != TP_OK) continue;
            for (uint32_t j = 0; j < n && tp_leaf_read(&r, &l) == TP_OK; j++) {}
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpd_ingest_result res;
    char why[512];
    tp_batch b;
    if (tp_batch_decode(data, size, &b, why, sizeof why) == TP_OK) {
        read_back(&b);
        tp_batch_free(&b);
    }
    fuzz_begin();
    tpd_ingest_message(fuzz_ingest(), data, size, &res, why, sizeof why);
    fuzz_end();
    return 0;
}
