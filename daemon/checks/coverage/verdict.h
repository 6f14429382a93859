/* SPDX-License-Identifier: MIT
 * verdict.h -- the sample-coverage verdict.
 *
 * A run of check "coverage" holds one execution (role "coverage"): the
 * command, maybe a launcher with one process per rank, every rank's agent
 * reporting its DataLoader batches (stable sample IDs per rank, epoch and
 * position).  The run's params hold the declaration (decl.h).
 *
 * The loader audited is the declared one, else the one whose batches the
 * training consumed (loader.c).
 *
 * ERROR: the command failed or was killed, a process lost events, said no
 * goodbye or reported a hook error, no DataLoader (or not the declared one)
 * was iterated, or the ranks do not add up (a rank missing, twice, or
 * disagreeing on the world size).
 * ABSTAIN: none was declared and several loaders could be the training's,
 * the policy needs a universe and none is known (none declared and the
 * dataset has no length), the batches carry no stable IDs, or an epoch of
 * the window was not seen complete on every rank.
 * FAIL: the first violation in (epoch, rank, position) order (audit.h);
 * IDs never observed come after every observation of their epoch.
 * PASS otherwise, naming the window and the world size. */
#ifndef TP_DAEMON_CHECKS_COVERAGE_VERDICT_H
#define TP_DAEMON_CHECKS_COVERAGE_VERDICT_H

#include "daemon/checks/lockstep.h"
#include "daemon/checks/result.h"
#include "daemon/obs/obs.h"

/* tpd_verdict_coverage judges run r (o is not used: coverage compares IDs,
 * exactly).  Pure: reads r, writes *out.  Errors: TP_ENOMEM (then *out is
 * cleared). */
tp_err tpd_verdict_coverage(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);

/* tpd_coverage_evidence writes every observation of r's audited window into
 * *out (malloc'ed), JSON lines: one line per ID, {"id": ID, "occurrences":
 * [{"epoch", "rank", "position", "item", "worker"}, ...]} in (epoch, rank,
 * position, item) order; integer IDs ascending, with every ID of a listed
 * universe (none observed: an empty list), string IDs in the order first
 * observed.  Errors (why gets a reason): TP_EINVAL when the run cannot be
 * audited (its verdict is ERROR or ABSTAIN before the audit), TP_ENOMEM. */
tp_err tpd_coverage_evidence(const tpd_run *r, char **out, char *why, size_t whylen);

#endif
