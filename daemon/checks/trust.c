/* SPDX-License-Identifier: MIT
 * trust.c -- the rule for trusting an execution's events (see trust.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/trust.h"

/* status_hint explains an exit status the shell or launcher gives a command
 * it could not run (127: not found, 126: not executable) when no Python
 * process of it was seen: " (...)", else "". */
static const char *status_hint(int64_t status, bool seen)
{
    if (seen) return "";
    if (status == 127) return " (the command was not found)";
    if (status == 126) return " (the command could not be executed)";
    return "";
}

/* What can be wrong with one process. */
typedef enum { CRASHED, NO_BYE, LOST, HOOK_ERROR } proc_fault;

/* proc_problem writes the sentence for fault f of process q into buf. */
static const char *proc_problem(const tpd_trust *t, const tpd_proc *q, proc_fault f, char *buf,
                                size_t n)
{
    const char *who = t->who_procs ? t->who : "", *sep = t->who_procs ? ": " : "";
    char name[64];
    if (t->ranks)
        snprintf(name, sizeof name, "process %lld (rank %lld)", (long long)q->pid,
                 (long long)q->rank);
    else
        snprintf(name, sizeof name, "process %lld", (long long)q->pid);
    switch (f) {
    case CRASHED:
        snprintf(buf, n, "%s%s%s crashed with an uncaught %.400s", who, sep, name,
                 q->bye_exc ? q->bye_exc : "exception");
        break;
    case NO_BYE:
        snprintf(buf, n, "%s%s%s ended without reporting its last events (no bye)", who, sep, name);
        break;
    case LOST:
        snprintf(buf, n, "%s%s%s lost events (%lld sent, %lld stored, %lld dropped)", who, sep,
                 name, (long long)q->sent, (long long)q->nevents, (long long)q->dropped);
        break;
    case HOOK_ERROR:
        snprintf(buf, n, "%s%sa hook of the agent reported an error in %s: %.600s", who, sep, name,
                 q->first_error ? q->first_error : "(unknown)");
        break;
    }
    return buf;
}

static bool crashed(const tpd_proc *q)
{
    return q->bye_exc != NULL || (q->bye_reason && strcmp(q->bye_reason, "exception") == 0);
}

const char *tpd_exec_problem(const tpd_exec *e, const tpd_trust *t, char *buf, size_t n)
{
    const tpd_proc *p;
    bool failed, stepped;
    if (e == NULL) {
        snprintf(buf, n, "%s is missing", t->who);
        return buf;
    }
    p = tpd_obs_trainer(e);
    stepped = p != NULL && p->steps != 0;
    if (e->has_signal && e->signal != 0) {
        snprintf(buf, n, "%s was killed by signal %lld", t->who, (long long)e->signal);
        return buf;
    }
    for (size_t i = 0; t->crash && i < e->nprocs; i++)
        if (crashed(&e->procs[i])) return proc_problem(t, &e->procs[i], CRASHED, buf, n);
    failed = e->has_status && e->status != 0 &&
             !(t->interrupt && p && p->bye_reason && strcmp(p->bye_reason, "interrupt") == 0);
    if (t->steps && !stepped && !failed) {
        snprintf(buf, n, "%s ran no optimizer step: nothing was observed to compare", t->who);
        return buf;
    }
    if (failed) {
        snprintf(buf, n, "%s exited with status %lld%s%s%s%s", t->who, (long long)e->status,
                 status_hint(e->status, p != NULL), p && p->bye_exc ? " after an uncaught " : "",
                 p && p->bye_exc ? p->bye_exc : "",
                 t->steps && !stepped ? " before any optimizer step" : "");
        return buf;
    }
    if (t->trainer && p == NULL) {
        snprintf(buf, n, "%s ran no Python process the agent saw", t->who);
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if (!q->has_bye) return proc_problem(t, q, NO_BYE, buf, n);
        if (q->dropped > 0 || q->nevents < q->sent || q->nevents < q->max_seq + 1)
            return proc_problem(t, q, LOST, buf, n);
        if (q->errors > 0 || q->first_error) return proc_problem(t, q, HOOK_ERROR, buf, n);
    }
    return NULL;
}
