/* SPDX-License-Identifier: MIT
 * render.h -- observed values as report text and as JSON. */
#ifndef TP_DAEMON_CHECKS_RENDER_H
#define TP_DAEMON_CHECKS_RENDER_H

#include "daemon/base/json.h"
#include "daemon/base/text.h"
#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_render_val appends a one-line description of v ("absent" for NULL);
 * a tensor's digest kind follows its digest when it is not "xxh3". */
void tpd_render_val(tpd_str *b, const tpd_val *v);
/* tpd_render_hex appends the first n bytes of a digest as hex. */
void tpd_render_hex(tpd_str *b, const uint8_t *d, int n);
/* tpd_render_comparison appends "exact (equal digests)" or the tolerance. */
void tpd_render_comparison(tpd_str *b, const tpd_cmp_opts *o);
/* tpd_render_dkinds appends why the digests of tensors a (of run la) and b
 * (of run lb) cannot be compared, when that is so (tpd_digests_comparable),
 * and returns true: "the digests are of different kinds (dev1 on the
 * device in A, xxh3 on the host in R) and cannot be compared", or "the
 * agent could not digest it in R (digest kind none)".  Otherwise (a or b
 * NULL, not both tensors, comparable digests) it appends nothing and
 * returns false. */
bool tpd_render_dkinds(tpd_str *t, const tpd_val *a, const char *la, const tpd_val *b,
                       const char *lb);
/* tpd_why_dkinds adds to w, of kind "digest_kinds", why d, an unsure
 * divergence between runs la and lb, could not be judged when the reason
 * is its tensors' digests (tpd_render_dkinds): its path and step (d's
 * step_a), the reason, and what would decide it.  Returns whether that is
 * the reason (and it added the line). */
bool tpd_why_dkinds(tpd_why *w, const tpd_div *d, const char *la, const char *lb);

/* The JSON forms, as jansson values (daemon/base/json.h: a new reference,
 * NULL when an allocation failed), for the reports of docs/report-schema.md. */

/* tpd_json_val is v as a JSON object: {"kind": "tensor", dtype, shape,
 * digest (32 hex digits), sum, l2, maxabs (null when not finite),
 * nonfinite, and digest_kind when it is not "xxh3"}, {"kind": "digest",
 * digest, items}, {"kind": "ids", digest,
 * count, first (up to 8 ids)} or {"kind": "value", value}; null for NULL. */
json_t *tpd_json_val(const tpd_val *v);
/* tpd_json_comparison is {"mode": "exact"} or {"mode": "tolerance", rtol,
 * atol}. */
json_t *tpd_json_comparison(const tpd_cmp_opts *o);
/* tpd_json_argv is an execution's stored argv (a JSON array of strings),
 * null when there is none or it does not parse. */
json_t *tpd_json_argv(const char *argv_json);

/* tpd_json_exec_cost sets, in e's JSON object o, "wall_s" (seconds from
 * exec.create to the exec.finish that closed it; null while it is not
 * finished), "processes" (one {pid, rank, events} per process that
 * reported, rank null when not known, events the number stored for it) and
 * "events" (their sum); false on failure.  The counts are
 * processes.nevents, which ingest keeps equal to the process's rows in
 * events. */
bool tpd_json_exec_cost(json_t *o, const tpd_exec *e);

/* tpd_json_wall is the check's wall time: "check_s", from r->created_ns
 * (when trainparity-run started the check, as it said in run.create) to
 * r->judged_ns (when the daemon had read the run for the verdict);
 * "executions_s", the sum of the wall_s of r's finished executions;
 * "ratio", check_s / executions_s (null when no execution finished).  A
 * check runs its executions one after another, so the ratio is at least 1;
 * the rest is TrainParity's own time.  null when r is NULL, was built by
 * hand or is judged again after its check (judge.h; no judged_ns). */
json_t *tpd_json_wall(const tpd_run *r);

/* tpd_json_execs is the executions ex[0..n-1] (NULL ones are left out) as
 * an array: role, id ("execution"), argv, exit status or signal, the
 * optimizer steps of their trainer process px[i] when known, and their
 * cost (tpd_json_exec_cost). */
json_t *tpd_json_execs(const tpd_exec *const *ex, const tpd_proc *const *px, size_t n);

#endif
