/* SPDX-License-Identifier: MIT
 * trust.h -- whether a check may trust an execution's events: the one rule
 * every check applies to each of its executions before it judges, and
 * whose answer (a problem) makes the verdict ERROR.
 *
 * The rule, in this order; the first problem found is the one named:
 *   1. the execution exists;
 *   2. it was not killed by a signal;
 *   3. crash: no process of it ended with an uncaught exception (named
 *      with its process, before the exit status that follows from it);
 *   4. steps: its trainer (tpd_obs_trainer) made an optimizer step; a
 *      failed exit is then named as the reason there is none;
 *   5. it exited with status 0 -- or with any status when the trainer's
 *      goodbye says the agent ended it on request ("interrupt") and the
 *      check expects that (interrupt); a failed exit is named with the
 *      trainer's uncaught exception, or else that of the lowest rank (of
 *      any process, without ranks) that ended with one, and with the
 *      lowest that ended without a goodbye;
 *   6. trainer: the agent saw a Python process of it;
 *   7. every process said goodbye, lost no event (every event sent was
 *      stored, none dropped, no sequence gap at the end), and no hook of
 *      the agent reported an error;
 *   8. every rank of the world its processes were launched in (their
 *      largest WORLD_SIZE) reached the daemon: a rank none of whose
 *      processes was seen (its host could not reach the daemon, and its
 *      spool folder is not this host's) is named.
 * A process that ran on another host than the daemon's (its hello's host)
 * is named with that host, and for rule 7 with where its spool file is.
 * Rules 3 to 6 marked by name apply when the check's tpd_trust asks: what a
 * check expects of an execution depends on its role in the check (a
 * resumed training must have stepped; a launcher's ranks may each crash;
 * resume's I ends by the agent's interruption). */
#ifndef TP_DAEMON_CHECKS_TRUST_H
#define TP_DAEMON_CHECKS_TRUST_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/obs/obs.h"

/* tpd_trust is what one check expects of one of its executions. */
typedef struct tpd_trust {
    const char *who; /* the execution in sentences: "R (resumed)", "the command" */
    bool who_procs;  /* sentences about one process start "<who>: " too */
    bool ranks;      /* they name the process's rank: "process P (rank R)" */
    bool crash;      /* rule 3 */
    bool steps;      /* rule 4 */
    bool interrupt;  /* rule 5: the agent's interruption is an expected end */
    bool trainer;    /* rule 6 */
} tpd_trust;

/* tpd_exec_problem applies the rule to execution e (NULL: missing) as t
 * asks.  Returns NULL when e can be trusted, else buf (n bytes) holding the
 * sentence that says why not.  Pure, but for this host's name (uname). */
const char *tpd_exec_problem(const tpd_exec *e, const tpd_trust *t, char *buf, size_t n);

/* tpd_foreign_load finds the first checkpoint that p loaded and nothing
 * explains: no earlier save of p's of the same content (digest) or file
 * name, and no load of ref's (the process p is held against: the golden
 * run's trainer; NULL: none) of the same content or file name.  A load that
 * failed is none.  Such a load (a checkpoint an earlier run left, found by
 * a script that resumes on its own) is the cause of whatever else differs
 * in p, so a check names it as its ERROR.  NULL when there is none or p is
 * NULL.  Pure. */
const tpd_ckpt *tpd_foreign_load(const tpd_proc *p, const tpd_proc *ref);

/* tpd_same_ckpt says whether a and b are one checkpoint: both have a
 * content digest and the two are equal. */
bool tpd_same_ckpt(const tpd_ckpt *a, const tpd_ckpt *b);

#endif
