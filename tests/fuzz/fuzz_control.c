/* SPDX-License-Identifier: MIT
 * fuzz_control.c -- libFuzzer target: bytes as a control request
 * (daemon/serve/control.c: request checking, every command's arguments, the
 * store and the verdict engines behind them) on the scratch store of
 * fuzz_store.h, which holds run 1 and execution 1 with a batch of every
 * event kind.  A fresh handler per input, so no lease carries over; it has
 * no ingest context, so "ingest" reads no file (fuzz_spool does that). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/serve/control.h"
#include "proto/event.h"
#include "tests/fuzz/fuzz_store.h"
#include "tests/unit/batches.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* LLVMFuzzerInitialize stores a batch of every kind in execution 1, and a
 * bye, so that query, seen and verdict have something to read. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    tp_header h = {
        .run = FUZZ_RUN, .exec = FUZZ_EXEC, .pid = FUZZ_PID, .key = FUZZ_KEY, .key_len = 32};
    char why[512];
    tb t;
    uint64_t seq;
    (void)argc, (void)argv;
    tp_buf_init(&t.buf);
    t.off = tp_enc_batch_begin(&t.buf, &h);
    t.n = 0;
    seq = tb_all(&t, 0);
    tb_bye(&t, seq, seq + 1, 0);
    tb_end(&t);
    if (tpd_ingest_message(fuzz_ingest(), t.buf.data, t.buf.len, NULL, why, sizeof why) != TP_OK)
        abort(); /* the harness is out of date with the schema */
    tb_free(&t);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpd_control *c = NULL;
    bool proven;
    tp_buf reply;
    tp_buf_init(&reply);
    if (tpd_control_create(&c, fuzz_store(), NULL, NULL) != TP_OK) abort();
    fuzz_begin();
    tpd_control_handle(c, data, size, true, &proven, &reply);
    fuzz_end();
    tpd_control_destroy(c);
    tp_buf_free(&reply);
    return 0;
}
