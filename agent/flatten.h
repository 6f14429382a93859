/* SPDX-License-Identifier: MIT
 * flatten.h -- Python state (state dicts, checkpoints, RNG states) to leaves.
 *
 * tpa_flat_add walks a Python object: dicts and objects' __dict__ by key,
 * lists and tuples by index, tensors and NumPy arrays to tensor leaves
 * (digest + statistics over their memory, see digest/digest.h), scalars to value
 * leaves.  A list or tuple of more than 16 scalars becomes one digest leaf;
 * in a manifest every tuple also gets a digest leaf of its own, so an RNG
 * state saved inside a checkpoint can be recognised, and a list, tuple,
 * NumPy uint8 vector or bytes of exactly a torch RNG state's length also the
 * tensor leaf of those bytes as that state.  Each node's canonical
 * digest is computed bottom-up on the way.  Called with the GIL held; it
 * releases the GIL while hashing large tensors.  The walk is flatten.c, its
 * tensor leaves tensorleaf.c, its RNG states rngstate.c (flatten_int.h). */
#ifndef TP_AGENT_FLATTEN_H
#define TP_AGENT_FLATTEN_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/pyapi.h"
#include "proto/mp.h"

#define TPA_PATH_MAX     2048
#define TPA_FLAT_DEVICES 16 /* CUDA devices a walk digests on (devjob.h) */

/* The Python types the walker recognises, registered by the glue at boot.
 * Any of them may be NULL (NumPy not imported yet). */
typedef struct tpa_types {
    PyObject *tensor;  /* torch.Tensor */
    PyObject *marker;  /* glue's Digest(obj): always one digest leaf */
    PyObject *ndarray; /* numpy.ndarray */
} tpa_types;

extern tpa_types tpa_types_reg;

typedef struct tpa_flat {
    tp_buf *out; /* leaves are appended here, inside an array32 */
    size_t count_off;
    uint32_t nleaves;
    uint32_t max_leaves;
    bool manifest;       /* digest leaves for tuples */
    struct tpa_job *job; /* not NULL: defer hashing large tensors to it (job.h) */
    /* Sums of squared L2 norms of the tensor leaves: those hashed at once,
     * and, apart, those large enough to be deferred (deferred or not), so
     * that a gradient norm adds them in the same order either way. */
    double sq_sum, sq_large;
    /* torch's current stream per CUDA device, fetched once per walk */
    void *stream[TPA_FLAT_DEVICES];
    unsigned have_stream;
    char path[TPA_PATH_MAX];
    size_t plen;
} tpa_flat;

/* tpa_flat_begin opens a leaves array in out (no deferred hashing; set
 * f->job afterwards to defer). */
void tpa_flat_begin(tpa_flat *f, tp_buf *out, bool manifest);
/* tpa_flat_add flattens obj under the path prefix ("" for the root).
 * Returns 0, or -1 with a Python exception set. */
int tpa_flat_add(tpa_flat *f, const char *prefix, PyObject *obj);
/* tpa_flat_end closes the array (patches its count). */
void tpa_flat_end(tpa_flat *f);

/* tpa_value_digest is the canonical digest of obj, without leaves.
 * Returns 0, or -1 with a Python exception set. */
int tpa_value_digest(PyObject *obj, uint8_t out[16]);

/* tpa_tensor_bytes gives read access to a CPU tensor's contiguous bytes:
 * *keep holds a reference that keeps them alive (Py_DecRef it when done).
 * Returns 0, or -1 with a Python exception set.  GIL held. */
int tpa_tensor_bytes(PyObject *t, PyObject **keep, const void **data, size_t *nbytes);

#endif
