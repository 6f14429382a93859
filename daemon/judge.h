/* SPDX-License-Identifier: MIT
 * judge.h -- verdicts: load a run's observations, run the engine of its
 * check, store the verdict. */
#ifndef TP_DAEMON_JUDGE_H
#define TP_DAEMON_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/compare.h"
#include "daemon/result.h"
#include "daemon/store.h"

/* tpd_judge judges run under the declared comparison o and stores the
 * verdict (unless s is read-only).  On success *out holds the result (clear
 * it with tpd_result_clear).  Errors (why gets a reason): TP_ENOENT (no such
 * run), TP_EINVAL (no verdict engine for the run's check), TP_ENOMEM,
 * TP_EDB, TP_EPROTO (a stored event no longer decodes). */
tp_err tpd_judge(tpd_store *s, int64_t run, const tpd_cmp_opts *o, tpd_result *out, char *why,
                 size_t whylen);

#endif
