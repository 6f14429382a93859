/* SPDX-License-Identifier: MIT
 * trust.c -- the rule for trusting an execution's events (see trust.h). */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

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

/* elsewhere tells whether process q ran on another host than this daemon's
 * (as its hello named them). */
static bool elsewhere(const tpd_proc *q)
{
    struct utsname u;
    return q->host != NULL && uname(&u) == 0 && strcmp(q->host, u.nodename) != 0;
}

#define UNSEEN_WORLD_MAX 1048576 /* ranks looked for, at most */
#define UNSEEN_NAMED     8       /* ranks named, at most */

/* What can be wrong with one process. */
typedef enum { CRASHED, NO_BYE, LOST, HOOK_ERROR } proc_fault;

/* proc_name names process q in buf: its pid, its rank when t asks or when
 * it ran on another host, and that host. */
static void proc_name(const tpd_trust *t, const tpd_proc *q, char *buf, size_t n)
{
    int w;
    if (t->ranks || (elsewhere(q) && q->rank >= 0))
        w = snprintf(buf, n, "process %lld (rank %lld)", (long long)q->pid, (long long)q->rank);
    else
        w = snprintf(buf, n, "process %lld", (long long)q->pid);
    if (elsewhere(q) && w > 0 && (size_t)w < n)
        snprintf(buf + w, n - (size_t)w, " on host %.200s", q->host);
}

/* proc_problem writes the sentence for fault f of process q into buf. */
static const char *proc_problem(const tpd_trust *t, const tpd_exec *e, const tpd_proc *q,
                                proc_fault f, char *buf, size_t n)
{
    const char *who = t->who_procs ? t->who : "", *sep = t->who_procs ? ": " : "";
    char name[400];
    proc_name(t, q, name, sizeof name);
    switch (f) {
    case CRASHED:
        snprintf(buf, n, "%s%s%s crashed with an uncaught %.400s", who, sep, name,
                 q->bye_exc ? q->bye_exc : "exception");
        break;
    case NO_BYE:
        if (elsewhere(q) && q->spool != NULL)
            /* what its agent could not send went to a spool on that host */
            snprintf(
                buf, n,
                "%s%s%s ended without reporting its last events (no bye); unless it was "
                "killed, its agent wrote what it could not send to %.200s:%.600s/%lld-%lld.spool, "
                "a folder this host does not see: run `trainparity-daemon ingest` on that "
                "file where the daemon runs, or give the hosts a shared folder "
                "(docs/multinode.md)",
                who, sep, name, q->host, q->spool, (long long)e->id, (long long)q->pid);
        else
            snprintf(buf, n, "%s%s%s ended without reporting its last events (no bye)", who, sep,
                     name);
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

/* ranked_peer is q, a process without its bye, or, when q has no rank and
 * ran on another host, the first process with a rank there that has no bye
 * either: the one a user knows their job by. */
static const tpd_proc *ranked_peer(const tpd_exec *e, const tpd_proc *q)
{
    if (q->rank >= 0 || !elsewhere(q)) return q;
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *o = &e->procs[i];
        if (!o->has_bye && o->rank >= 0 && o->host != NULL && strcmp(o->host, q->host) == 0)
            return o;
    }
    return q;
}

static bool crashed(const tpd_proc *q)
{
    return q->bye_exc != NULL || (q->bye_reason && strcmp(q->bye_reason, "exception") == 0);
}

/* first_of finds, among the processes of e with a rank (all of them when
 * none has one: a launcher's end follows from its ranks'), the one of
 * lowest rank (the first, without ranks) that ended with an uncaught
 * exception (exc) or without a bye (!exc), and how many more did. */
static const tpd_proc *first_of(const tpd_exec *e, bool exc, size_t *more)
{
    const tpd_proc *first = NULL;
    bool ranked = false;
    for (size_t i = 0; i < e->nprocs && !ranked; i++) ranked = e->procs[i].rank >= 0;
    *more = 0;
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if ((ranked && q->rank < 0) || (exc ? !crashed(q) : q->has_bye)) continue;
        if (first != NULL) (*more)++;
        if (first == NULL || q->rank < first->rank) first = q;
    }
    return first;
}

/* how_ended appends to buf what the processes of failed execution e show of
 * how they ended: unless its trainer's uncaught exception is named already
 * (named), one that ended with an uncaught exception; then one that ended
 * without a bye (its agent's exit hook never ran); each the lowest rank,
 * with how many more did the same.  Which of them ended first the events do not say:
 * a launcher ends the other ranks when one fails, and they end without a
 * bye too.  Nothing more when every one said bye without an exception. */
static void how_ended(const tpd_trust *t, const tpd_exec *e, bool named, char *buf, size_t n)
{
    const tpd_proc *q;
    size_t more, w = 0;
    char name[480];
    tpd_trust r = *t;
    if (!named && (q = first_of(e, true, &more)) != NULL) {
        r.ranks = q->rank >= 0;
        proc_name(&r, q, name, sizeof name);
        w = (size_t)snprintf(buf, n, "; %s ended with an uncaught %.200s", name,
                             q->bye_exc ? q->bye_exc : "exception");
        if (more > 0 && w < n) w += (size_t)snprintf(buf + w, n - w, " (and %zu more did)", more);
    }
    if (w >= n || (q = first_of(e, false, &more)) == NULL) return;
    r.ranks = q->rank >= 0;
    proc_name(&r, q, name, sizeof name);
    w += (size_t)snprintf(buf + w, n - w, "; %s", name);
    if (more > 0 && w < n) w += (size_t)snprintf(buf + w, n - w, " and %zu more", more);
    if (w < n) snprintf(buf + w, n - w, " ended without a bye (killed, crashed or os._exit)");
}

/* seen tells whether a process of e has rank r. */
static bool seen(const tpd_exec *e, int64_t r)
{
    for (size_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].rank == r) return true;
    return false;
}

/* unseen_ranks names the ranks of the world e's processes were launched in
 * of which no process reached the daemon (rule 8), or returns NULL. */
static const char *unseen_ranks(const tpd_exec *e, const tpd_trust *t, char *buf, size_t n)
{
    int64_t world = 0, missing = 0, first = -1;
    size_t w;
    for (size_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].rank >= 0 && e->procs[i].world > world) world = e->procs[i].world;
    if (world > UNSEEN_WORLD_MAX) world = UNSEEN_WORLD_MAX;
    for (int64_t r = 0; r < world; r++)
        if (!seen(e, r)) {
            if (missing++ == 0) first = r;
        }
    if (missing == 0) return NULL;
    w = (size_t)snprintf(buf, n, "%s: no event from rank %lld", t->who, (long long)first);
    for (int64_t r = first + 1, k = 1; r < world && k < UNSEEN_NAMED && w < n; r++)
        if (!seen(e, r)) {
            w += (size_t)snprintf(buf + w, n - w, ", %lld", (long long)r);
            k++;
        }
    if (w < n && missing > UNSEEN_NAMED)
        w +=
            (size_t)snprintf(buf + w, n - w, " and %lld more", (long long)(missing - UNSEEN_NAMED));
    if (w < n)
        snprintf(buf + w, n - w,
                 " of the %lld ranks its processes were launched in reached the daemon: no "
                 "process of %s was seen (a host that cannot reach the daemon keeps what its "
                 "agents could not send in its own spool folder; docs/multinode.md)",
                 (long long)world, missing > 1 ? "theirs" : "its");
    return buf;
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
        if (crashed(&e->procs[i])) return proc_problem(t, e, &e->procs[i], CRASHED, buf, n);
    failed = e->has_status && e->status != 0 &&
             !(t->interrupt && p && p->bye_reason && strcmp(p->bye_reason, "interrupt") == 0);
    if (t->steps && !stepped && !failed) {
        snprintf(buf, n, "%s ran no optimizer step: nothing was observed to compare", t->who);
        return buf;
    }
    if (failed) {
        int w = snprintf(buf, n, "%s exited with status %lld%s%s%s%s", t->who, (long long)e->status,
                         status_hint(e->status, p != NULL),
                         p && p->bye_exc ? " after an uncaught " : "",
                         p && p->bye_exc ? p->bye_exc : "",
                         t->steps && !stepped ? " before any optimizer step" : "");
        if (w > 0 && (size_t)w < n) how_ended(t, e, p && p->bye_exc, buf + w, n - (size_t)w);
        return buf;
    }
    if (t->trainer && p == NULL) {
        snprintf(buf, n, "%s ran no Python process the agent saw", t->who);
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if (!q->has_bye) return proc_problem(t, e, ranked_peer(e, q), NO_BYE, buf, n);
        if (q->dropped > 0 || q->nevents < q->sent || q->nevents < q->max_seq + 1)
            return proc_problem(t, e, q, LOST, buf, n);
        if (q->errors > 0 || q->first_error) return proc_problem(t, e, q, HOOK_ERROR, buf, n);
    }
    return unseen_ranks(e, t, buf, n);
}

bool tpd_same_ckpt(const tpd_ckpt *a, const tpd_ckpt *b)
{
    return a->has_digest && b->has_digest && memcmp(a->digest, b->digest, TP_DIGEST_LEN) == 0;
}

/* explains says whether checkpoint c of p's (saves: load false), or of
 * ref's when ref is p's reference, is l or its file. */
static bool explains(const tpd_ckpt *c, const tpd_ckpt *l)
{
    return tpd_same_ckpt(c, l) || (c->name && l->name && strcmp(c->name, l->name) == 0);
}

const tpd_ckpt *tpd_foreign_load(const tpd_proc *p, const tpd_proc *ref)
{
    if (p == NULL) return NULL;
    for (size_t i = 0; i < p->nckpts; i++) {
        const tpd_ckpt *l = &p->ckpts[i];
        bool known = false;
        if (!l->load || l->error) continue;
        for (size_t k = 0; k < i && !known; k++)
            known = !p->ckpts[k].load && explains(&p->ckpts[k], l);
        for (size_t k = 0; ref != NULL && k < ref->nckpts && !known; k++)
            known = ref->ckpts[k].load && !ref->ckpts[k].error && explains(&ref->ckpts[k], l);
        if (!known) return l;
    }
    return NULL;
}
