/* SPDX-License-Identifier: MIT
 * fuzz_store.h -- the scratch store the fuzz targets share: a database in a
 * private folder of the process under $TMPDIR (tests/fuzz/run.sh gives each
 * run a folder of its own), removed when the process exits, holding run 1
 * ("record") and its execution 1 with the key FUZZ_KEY, whose batches the
 * seed corpus carries (tests/fuzz/corpus.c).  Each input runs inside a
 * transaction that is rolled back, so the database never grows and every
 * input meets the same store. */
#ifndef TP_TESTS_FUZZ_STORE_H
#define TP_TESTS_FUZZ_STORE_H

#include <stddef.h>

#include "daemon/ingest/ingest.h"
#include "daemon/store/store.h"

#define FUZZ_RUN  1
#define FUZZ_EXEC 1
#define FUZZ_PID  4242
/* the execution's key (TP_EXEC_KEY_LEN hex digits) */
#define FUZZ_KEY "00112233445566778899aabbccddeeff"

/* fuzz_store opens the store on first use (aborts when it cannot: the
 * harness is broken, not the input) and returns it. */
tpd_store *fuzz_store(void);
/* fuzz_ingest is an ingest context on fuzz_store() (no token). */
tpd_ingest *fuzz_ingest(void);
/* fuzz_path writes "<the process's folder>/name" into out. */
void fuzz_path(char *out, size_t n, const char *name);
/* fuzz_begin opens the input's transaction; fuzz_end rolls it back and,
 * every few thousand inputs, removes the blob files stored meanwhile. */
void fuzz_begin(void);
void fuzz_end(void);

#endif
