/* SPDX-License-Identifier: MIT
 * tpcuda.h -- libtpagent_cuda.so: digests of CUDA tensors computed on the
 * device (devdigest.h), launched through the CUDA runtime that torch has
 * loaded into the process.
 *
 * The library links no CUDA library: tpcu_open finds the CUDA runtime
 * already loaded (torch's), so a process pays for nothing it did not load
 * itself, and the runtime's version is whatever torch was built with.  The
 * agent (devjob.c) opens the library only when it meets a CUDA tensor, so
 * a CPU-only process never loads it.
 *
 * Use, from one thread at a time: tpcu_open once; then per event any number
 * of tpcu_enqueue, each launching the kernels on the given stream after the
 * work already queued there, and one tpcu_collect, which waits for them and
 * hands the results back in the order enqueued. */
#ifndef TP_AGENT_CUDA_TPCUDA_H
#define TP_AGENT_CUDA_TPCUDA_H

#include <stddef.h>

#include "agent/cuda/devdigest.h"

#define TPCU_EXPORT __attribute__((visibility("default")))

/* tpcu_open finds the process's CUDA runtime and loads the kernels for the
 * device's architecture.  0, or -1 with a one-line reason in why (no CUDA
 * runtime loaded, no kernel image for the device...). */
TPCU_EXPORT int tpcu_open(char *why, size_t whylen);

/* tpcu_enqueue launches the digest of the nbytes at dptr (device memory of
 * device dev, elements of kind dt, TPA_DEV1_*) on stream (a cudaStream_t; NULL:
 * the legacy default stream).  Returns its slot (0, 1, ... since the last
 * collect), or -1 with why. */
TPCU_EXPORT int tpcu_enqueue(const void *dptr, size_t nbytes, int dt, int dev, void *stream,
                             char *why, size_t whylen);

/* tpcu_collect waits for every digest enqueued since the last collect and
 * writes slot i's result to out[i] (n slots).  0, or -1 with why (then no
 * result is valid). */
TPCU_EXPORT int tpcu_collect(tpa_dev1_part *out, size_t n, char *why, size_t whylen);

/* tpcu_reference computes on the host what the kernels compute (ref.c). */
TPCU_EXPORT void tpcu_reference(const void *data, size_t nbytes, int dt, tpa_dev1_part *out);

/* tpcu_images names the kernel images built in, e.g. "sm_80 sm_90 compute_80". */
TPCU_EXPORT const char *tpcu_images(void);

#endif
