/* SPDX-License-Identifier: MIT
 * render.h -- observed values as report text and as JSON. */
#ifndef TP_DAEMON_CHECKS_RENDER_H
#define TP_DAEMON_CHECKS_RENDER_H

#include "daemon/base/text.h"
#include "daemon/checks/compare.h"
#include "daemon/obs/obs.h"

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

/* tpd_render_exec_cost_json appends, inside e's JSON object, the members
 * "wall_s" (seconds from exec.create to the exec.finish that closed it;
 * null while it is not finished), "processes" (one {pid, rank, events} per
 * process that reported, rank null when not known, events the number stored
 * for it) and "events" (their sum).  The counts are processes.nevents, which
 * ingest keeps equal to the process's rows in events. */
void tpd_render_exec_cost_json(tpd_str *j, const tpd_exec *e);

/* tpd_render_wall_json appends the check's wall time as an object:
 * "check_s", from r->created_ns (when trainparity-run started the check, as
 * it said in run.create) to r->judged_ns (when the daemon had read the run
 * for the verdict); "executions_s", the sum of the wall_s of r's finished
 * executions; "ratio", check_s / executions_s (null when no execution
 * finished).  A check runs its executions one after another, so the ratio is
 * at least 1; the rest is TrainParity's own time.  null when r is NULL or was
 * built by hand (no judged_ns). */
void tpd_render_wall_json(tpd_str *j, const tpd_run *r);

/* tpd_render_execs_json writes the executions ex[0..n-1] (NULL ones are
 * left out) as a JSON array: role, id, argv, exit status or signal, the
 * optimizer steps of their trainer process px[i] when known, and their cost
 * (tpd_render_exec_cost_json). */
void tpd_render_execs_json(tpd_str *j, const tpd_exec *const *ex, const tpd_proc *const *px,
                           size_t n);

#endif
