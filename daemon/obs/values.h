/* SPDX-License-Identifier: MIT
 * values.h -- captured tensor values: a leaf whose bytes went to the blob
 * store (TRAINPARITY_CAPTURE=values) read back as doubles, and the
 * element-wise comparisons a tolerance needs.  Statistics can prove two
 * tensors differ but never that they are close; values can do both. */
#ifndef TP_DAEMON_OBS_VALUES_H
#define TP_DAEMON_OBS_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/obs/obs.h"
#include "proto/tp_err.h"

/* tpd_values_locate points r->blobs at the blob store beside the database
 * at db_path (<db_path>.blobs), copied into r's arena.  Errors: TP_EINVAL
 * (a path too long), TP_ENOMEM. */
tp_err tpd_values_locate(tpd_run *r, const char *db_path);

/* tpd_values_decode converts nbytes of little-endian elements of dtype
 * ("float32", "float64", "float16", "bfloat16", "int64", "int32", ...) into
 * n doubles at out (malloc'ed; free() it).  Errors: TP_EINVAL (a dtype it
 * does not know), TP_EPROTO (nbytes is not a whole number of elements),
 * TP_ENOMEM.  Pure. */
tp_err tpd_values_decode(const char *dtype, const void *bytes, size_t nbytes, double **out,
                         size_t *n);

/* tpd_values_read reads the captured values of tensor v of run r.  *out is
 * malloc'ed (free() it).  Errors: TP_ENOENT (not captured, no blob store
 * known, or a digest of kind "none"), TP_EIO (the blob file is
 * unreadable), TP_EPROTO (its size does not match v's shape), and those of
 * tpd_values_decode. */
tp_err tpd_values_read(const tpd_run *r, const tpd_val *v, double **out, size_t *n);

/* tpd_values_bytes reads the captured bytes of tensor v of run r, as the
 * agent shipped them (no check against v's dtype and shape).  *out is
 * malloc'ed (free() it).  Errors: TP_ENOENT (not captured, no blob store
 * known, or a digest of kind "none", which names no blob), TP_EIO,
 * TP_ENOMEM. */
tp_err tpd_values_bytes(const tpd_run *r, const tpd_val *v, uint8_t **out, size_t *n);

/* tpd_values_within is true when |a_i - b_i| <= atol + rtol |b_i| for every
 * i (b is the reference; NaN equals only NaN).  Otherwise *worst (if not
 * NULL) is the index that exceeds its bound the most.  Pure. */
bool tpd_values_within(const double *a, const double *b, size_t n, double rtol, double atol,
                       size_t *worst);

/* tpd_values_fit fits a = k b by least squares: *k is the ratio and *resid
 * the residual norm relative to |a| (0: a is exactly k b; 1: unrelated).
 * With b all zero, *k is 0 and *resid 1.  Pure. */
void tpd_values_fit(const double *a, const double *b, size_t n, double *k, double *resid);

/* tpd_values_errors measures b against the reference a, element by element:
 * *max_abs is the largest |b_i - a_i|, *max_rel the largest
 * |b_i - a_i| / |a_i| over the elements where a_i is not zero (0 when there
 * is none: a relative error of a zero is not defined).  An element that is
 * NaN on one side only, or infinite and unequal, makes both infinite; NaN on
 * both sides is equal.  Pure. */
void tpd_values_errors(const double *a, const double *b, size_t n, double *max_abs,
                       double *max_rel);

#endif
