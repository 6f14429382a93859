/* SPDX-License-Identifier: MIT
 * devjob.h -- the agent's side of device digests: CUDA tensors digested on
 * their GPU by libtpagent_cuda.so (agent/cuda/tpcuda.h, docs/gpu.md).
 *
 * The library is opened the first time a walk meets a CUDA tensor, so a
 * process that never puts a tensor on a GPU never loads it, nor anything
 * CUDA.  Where it cannot be opened (not built, no kernel image for the GPU,
 * TRAINPARITY_DEVICE_DIGEST=0) or a launch fails, CUDA tensors are copied
 * to the host and digested there, as before: their leaves say which.  One
 * thread digests on the device, the first that meets a CUDA tensor; the
 * others' CUDA tensors are copied to the host. */
#ifndef TP_AGENT_DEVJOB_H
#define TP_AGENT_DEVJOB_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/cuda/devdigest.h"
#include "agent/pyapi.h"
#include "digest/digest.h"

/* tpa_dev_ready opens the library and the CUDA runtime on the first call
 * and answers whether device digests are on.  GIL held. */
bool tpa_dev_ready(void);

/* tpa_dev_stream gives torch's current stream on device dev (a
 * cudaStream_t).  0, or -1 with a Python exception set.  GIL held. */
int tpa_dev_stream(int dev, void **stream);

/* tpa_dev_enqueue launches the digest of nbytes at device pointer p:
 * its slot, or -1 (then the caller digests a host copy). */
int tpa_dev_enqueue(const void *p, size_t nbytes, tp_dtype dt, int dev, void *stream);

/* tpa_dev_collect waits for the slots enqueued since the last collect and
 * writes them to out[0..n).  0, or -1 when none is valid. */
int tpa_dev_collect(tpa_dev1_part *out, size_t n);

/* tpa_dev_finish turns a slot's result into the leaf's digest and
 * statistics (tp_digest_device). */
void tpa_dev_finish(const char *dtype_name, const int64_t *shape, int ndim, size_t nbytes,
                    tp_dtype dt, const tpa_dev1_part *r, uint8_t out[16], tp_stats *st);

#endif
