/* SPDX-License-Identifier: MIT
 * render.h -- observed values as report text and as JSON. */
#ifndef TP_DAEMON_RENDER_H
#define TP_DAEMON_RENDER_H

#include "daemon/compare.h"
#include "daemon/obs.h"
#include "daemon/text.h"

/* tpd_render_val appends a one-line description of v ("absent" for NULL). */
void tpd_render_val(tpd_str *b, const tpd_val *v);
/* tpd_render_val_json appends v as a JSON object (null for NULL). */
void tpd_render_val_json(tpd_str *b, const tpd_val *v);
/* tpd_render_hex appends the first n bytes of a digest as hex. */
void tpd_render_hex(tpd_str *b, const uint8_t *d, int n);
/* tpd_render_comparison appends "exact (equal digests)" or the tolerance. */
void tpd_render_comparison(tpd_str *b, const tpd_cmp_opts *o);
/* tpd_render_comparison_json appends the declared comparison as JSON. */
void tpd_render_comparison_json(tpd_str *b, const tpd_cmp_opts *o);

/* tpd_render_execs_json writes the executions ex[0..n-1] (NULL ones are
 * left out) as a JSON array: role, id, argv, exit status or signal, and the
 * optimizer steps of their trainer process px[i] when known. */
void tpd_render_execs_json(tpd_str *j, const tpd_exec *const *ex, const tpd_proc *const *px,
                           size_t n);

#endif
