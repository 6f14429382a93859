/* SPDX-License-Identifier: MIT
 * torchser.h -- libtorch's serialization symbols, interposed: per-record
 * digests of checkpoints as PyTorchStreamWriter::writeRecord /
 * PyTorchStreamReader::getRecord see them.
 *
 * A Python-side save or load opens a collector on its thread; the C++ hooks
 * append (name, size, digest) to it without allocating and without Python.
 * When torch reaches neither hook (another build, legacy saves, mmap loads),
 * the collector stays empty and the caller digests the file instead. */
#ifndef TP_AGENT_TORCHSER_H
#define TP_AGENT_TORCHSER_H

#include <stdbool.h>
#include <stddef.h>

#include "digest/ckpt.h"

typedef struct tpa_reccol {
    tp_record *recs; /* capacity max, owned by the caller */
    size_t n;
    size_t max;
    bool overflow;
} tpa_reccol;

/* tpa_torchser_collect sets this thread's collector (NULL to stop collecting). */
void tpa_torchser_collect(tpa_reccol *c);
/* tpa_torchser_status says which hooks were reached so far: "writer+reader",
 * "writer", "reader" or "none". */
const char *tpa_torchser_status(void);

#endif
