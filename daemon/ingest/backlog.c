/* SPDX-License-Identifier: MIT
 * backlog.c -- messages not committed yet, in a ring: the held ones (in the
 * open transaction) first, then the waiting ones, in arrival order.
 *
 * The ring doubles when full; tpd_backlog_reserve grows it ahead of a hold,
 * so the message of a successful store always has a slot.  A waiting
 * message carries the seq range of its batch (an agent's batch holds
 * consecutive seqs), learnt by decoding it when it starts to wait (a held
 * one only if its transaction fails: the common path decodes nothing
 * twice).  Lost batches leave their ranges in a tally per (exec, pid),
 * searched linearly (losses are rare and few processes lose at once) and
 * compacted when it fills; past MAX_TALLIES, or without memory, they go to
 * counts every execution reports, so a loss is never hidden.
 *
 * What exec.finish reports is counted from the ranges, not the messages:
 * an agent sends a batch again while it is not acknowledged, so the same
 * events may wait (or be lost) twice, and some may be in the store already
 * (from a spool file, or an earlier copy); the union of the ranges, less
 * what the store has (the caller's stored function), is what is missing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/ingest/backlog.h"
#include "proto/event.h"

#define MAX_TALLIES 4096
#define MAX_SPANS   4096 /* per tally, after compaction */
#define MAX_CLOCKS  256
#define SEQ_MAX     ((uint64_t)INT64_MAX)

typedef struct span {
    int64_t pid;
    uint64_t lo, hi; /* seqs, inclusive */
} span;

typedef struct entry {
    nng_msg *m;
    int64_t exec, pid;
    uint64_t nevents;
    uint64_t lo, hi; /* its seqs, when ranged */
    bool ranged;     /* decoded: lo and hi are known */
} entry;

typedef struct tally {
    int64_t exec, pid;
    span *spans; /* lost seq ranges (pid unused) */
    size_t nspans, cap;
    int64_t raw; /* lost events whose range is not kept */
    char why[TPD_BACKLOG_WHY];
} tally;

typedef struct clock_ {
    int64_t exec;
    double first_ms;
} clock_;

struct tpd_backlog {
    entry *ring;
    size_t cap, head, count; /* count = held + waiting */
    size_t held;
    size_t bytes, max_bytes; /* of the waiting messages */
    char why[TPD_BACKLOG_WHY];
    tally *tallies;
    size_t ntallies, tcap;
    int64_t anywhere; /* events lost without a tally */
    char why_anywhere[TPD_BACKLOG_WHY];
    clock_ clocks[MAX_CLOCKS];
    size_t nclocks;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int64_t clamp(uint64_t n)
{
    return n > SEQ_MAX ? INT64_MAX : (int64_t)n;
}

tp_err tpd_backlog_create(tpd_backlog **bp, size_t max_bytes)
{
    tpd_backlog *b;
    if (bp == NULL) return TP_EINVAL;
    if ((b = calloc(1, sizeof *b)) == NULL) return TP_ENOMEM;
    b->max_bytes = max_bytes ? max_bytes : TPD_BACKLOG_MAX;
    *bp = b;
    return TP_OK;
}

/* at is the i-th entry from the oldest. */
static entry *at(tpd_backlog *b, size_t i)
{
    return &b->ring[(b->head + i) % b->cap];
}

void tpd_backlog_destroy(tpd_backlog *b)
{
    if (b == NULL) return;
    for (size_t i = 0; i < b->count; i++) nng_msg_free(at(b, i)->m);
    for (size_t i = 0; i < b->ntallies; i++) free(b->tallies[i].spans);
    free(b->ring);
    free(b->tallies);
    free(b);
}

/* grow makes room for one more entry, keeping the order. */
static tp_err grow(tpd_backlog *b)
{
    size_t ncap;
    entry *r;
    if (b->count < b->cap) return TP_OK;
    ncap = b->cap ? b->cap * 2 : 64;
    if ((r = malloc(ncap * sizeof *r)) == NULL) return TP_ENOMEM;
    for (size_t i = 0; i < b->count; i++) r[i] = *at(b, i);
    free(b->ring);
    b->ring = r;
    b->cap = ncap;
    b->head = 0;
    return TP_OK;
}

/* append puts e behind everything (room was made). */
static void append(tpd_backlog *b, const entry *e)
{
    b->ring[(b->head + b->count) % b->cap] = *e;
    b->count++;
}

/* decode reads m's batch: its (exec, pid), events and seq range. */
static tp_err decode(nng_msg *m, entry *e, char *why, size_t whylen)
{
    tp_batch batch;
    tp_err err = tp_batch_decode(nng_msg_body(m), nng_msg_len(m), &batch, why, whylen);
    if (err != TP_OK) return err;
    e->m = m;
    e->exec = batch.hdr.exec;
    e->pid = batch.hdr.pid;
    e->nevents = batch.n;
    e->lo = SEQ_MAX;
    e->hi = 0;
    for (size_t i = 0; i < batch.n; i++) {
        uint64_t s = batch.ev[i].seq > SEQ_MAX ? SEQ_MAX : batch.ev[i].seq;
        if (s < e->lo) e->lo = s;
        if (s > e->hi) e->hi = s;
    }
    e->ranged = batch.n > 0;
    tp_batch_free(&batch);
    return TP_OK;
}

/* ---- spans ---- */

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* merge sorts s and merges overlapping or adjacent spans of a pid; returns
 * how many are left. */
static size_t merge(span *s, size_t n)
{
    size_t k = 0;
    if (n == 0) return 0;
    qsort(s, n, sizeof *s, span_cmp);
    for (size_t i = 1; i < n; i++) {
        if (s[i].pid == s[k].pid && s[i].lo <= s[k].hi + 1) {
            if (s[i].hi > s[k].hi) s[k].hi = s[i].hi;
        } else {
            s[++k] = s[i];
        }
    }
    return k + 1;
}

/* ---- lost events ---- */

/* lost_anywhere adds n events lost that no tally can hold: every
 * execution reports them. */
static void lost_anywhere(tpd_backlog *b, uint64_t n, const char *why)
{
    b->anywhere += clamp(n);
    snprintf(b->why_anywhere, sizeof b->why_anywhere, "%s", why);
}

/* find_tally returns the tally of (exec, pid), made if missing; NULL when
 * there is no room. */
static tally *find_tally(tpd_backlog *b, int64_t exec, int64_t pid)
{
    tally *t;
    for (size_t i = 0; i < b->ntallies; i++)
        if (b->tallies[i].exec == exec && b->tallies[i].pid == pid) return &b->tallies[i];
    if (b->ntallies == MAX_TALLIES) return NULL;
    if (b->ntallies == b->tcap) {
        size_t ncap = b->tcap ? b->tcap * 2 : 8;
        tally *nt = realloc(b->tallies, ncap * sizeof *nt);
        if (nt == NULL) return NULL;
        b->tallies = nt, b->tcap = ncap;
    }
    t = &b->tallies[b->ntallies++];
    memset(t, 0, sizeof *t);
    t->exec = exec;
    t->pid = pid;
    return t;
}

/* count_lost records e's events as lost, with why. */
static void count_lost(tpd_backlog *b, const entry *e, const char *why)
{
    tally *t = find_tally(b, e->exec, e->pid);
    if (t == NULL) {
        lost_anywhere(b, e->nevents, why);
        return;
    }
    snprintf(t->why, sizeof t->why, "%s", why);
    if (!e->ranged) {
        t->raw += clamp(e->nevents);
        return;
    }
    if (t->nspans == t->cap) t->nspans = merge(t->spans, t->nspans);
    if (t->nspans == t->cap && t->cap < MAX_SPANS) {
        size_t ncap = t->cap ? t->cap * 2 : 4;
        span *ns = realloc(t->spans, ncap * sizeof *ns);
        if (ns != NULL) t->spans = ns, t->cap = ncap;
    }
    if (t->nspans == t->cap) {
        t->raw += clamp(e->nevents);
        return;
    }
    t->spans[t->nspans++] = (span){e->pid, e->lo, e->hi};
}

/* ---- the open transaction ---- */

tp_err tpd_backlog_reserve(tpd_backlog *b)
{
    return grow(b);
}

void tpd_backlog_hold(tpd_backlog *b, nng_msg *m, int64_t exec, int64_t pid, uint64_t nevents)
{
    entry e = {m, exec, pid, nevents, 0, 0, false};
    /* the caller reserved; held messages come before any waiting one */
    if (b->count == b->cap || b->count != b->held) {
        count_lost(b, &e, "internal error: a message held out of order");
        nng_msg_free(m);
        return;
    }
    append(b, &e);
    b->held++;
}

void tpd_backlog_take(tpd_backlog *b)
{
    if (b->held == b->count) return;
    b->bytes -= nng_msg_len(at(b, b->held)->m);
    b->held++;
}

size_t tpd_backlog_held(const tpd_backlog *b)
{
    return b->held;
}

size_t tpd_backlog_committed(tpd_backlog *b)
{
    size_t n = b->held;
    for (size_t i = 0; i < n; i++) nng_msg_free(at(b, i)->m);
    if (n > 0) b->head = (b->head + n) % b->cap;
    b->count -= n;
    b->held = 0;
    return n;
}

void tpd_backlog_abandoned(tpd_backlog *b, const char *why)
{
    for (size_t i = 0; i < b->held; i++) {
        entry *e = at(b, i), d;
        char dummy[64];
        /* stored once already, so it decodes; without memory it waits
         * unranged */
        if (!e->ranged && decode(e->m, &d, dummy, sizeof dummy) == TP_OK) *e = d;
        b->bytes += nng_msg_len(e->m);
    }
    b->held = 0;
    if (why && why != b->why) snprintf(b->why, sizeof b->why, "%s", why);
}

/* ---- waiting ---- */

tp_err tpd_backlog_push(tpd_backlog *b, nng_msg *m, const char *reason, char *why, size_t whylen)
{
    size_t len = nng_msg_len(m);
    entry e;
    tp_err err;
    if (reason && reason != b->why) snprintf(b->why, sizeof b->why, "%s", reason);
    if ((err = decode(m, &e, why, whylen)) == TP_EPROTO || err == TP_EVERSION) {
        nng_msg_free(m);
        return err;
    }
    if (err != TP_OK) { /* no memory even to decode it: whose it is is unknown */
        snprintf(why, whylen, "%s; no memory to keep a batch for a retry", b->why);
        lost_anywhere(b, 1, why);
        nng_msg_free(m);
        return TP_ENOMEM;
    }
    if (b->bytes + len > b->max_bytes) {
        snprintf(why, whylen, "%s; the daemon's backlog was full (%zu MiB waiting)", b->why,
                 b->bytes >> 20);
        err = TP_EFULL;
    } else if ((err = grow(b)) != TP_OK) {
        snprintf(why, whylen, "%s; no memory to keep a batch for a retry", b->why);
    }
    if (err != TP_OK) {
        count_lost(b, &e, why);
        nng_msg_free(m);
        return err;
    }
    append(b, &e);
    b->bytes += len;
    return TP_OK;
}

tp_err tpd_backlog_lose(tpd_backlog *b, nng_msg *m, const char *why)
{
    char dummy[64];
    entry e;
    tp_err err = decode(m, &e, dummy, sizeof dummy);
    nng_msg_free(m);
    if (err == TP_EPROTO || err == TP_EVERSION) return err;
    if (err == TP_OK)
        count_lost(b, &e, why);
    else
        lost_anywhere(b, 1, why);
    return TP_OK;
}

size_t tpd_backlog_waiting(const tpd_backlog *b)
{
    return b->count - b->held;
}

size_t tpd_backlog_bytes(const tpd_backlog *b)
{
    return b->bytes;
}

const char *tpd_backlog_reason(const tpd_backlog *b)
{
    return b->why;
}

nng_msg *tpd_backlog_next(tpd_backlog *b)
{
    return b->held < b->count ? at(b, b->held)->m : NULL;
}

void tpd_backlog_drop(tpd_backlog *b, bool lost, const char *why)
{
    entry *e;
    if (b->held == b->count) return;
    e = at(b, b->held);
    if (lost) count_lost(b, e, why);
    b->bytes -= nng_msg_len(e->m);
    nng_msg_free(e->m);
    /* the held ones (at most a transaction's) move up into its slot */
    for (size_t i = b->held; i > 0; i--) *at(b, i) = *at(b, i - 1);
    b->head = (b->head + 1) % b->cap;
    b->count--;
}

size_t tpd_backlog_lose_all(tpd_backlog *b, const char *why)
{
    size_t n = 0;
    while (tpd_backlog_waiting(b) > 0) {
        tpd_backlog_drop(b, true, why);
        n++;
    }
    return n;
}

/* ---- what exec.finish reports ---- */

/* missing counts the seqs of the merged spans s that the store lacks. */
static int64_t missing(const span *s, size_t n, int64_t exec, tpd_backlog_stored_fn stored,
                       void *arg)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t len = clamp(s[i].hi - s[i].lo + 1), have = 0;
        if (stored) have = stored(arg, exec, s[i].pid, clamp(s[i].lo), clamp(s[i].hi));
        if (have < 0 || have > len) have = 0; /* cannot tell: missing */
        total += len - have;
    }
    return total;
}

void tpd_backlog_exec(tpd_backlog *b, int64_t exec, tpd_backlog_stored_fn stored, void *arg,
                      tpd_backlog_info *out)
{
    const char *lost_why = NULL;
    size_t nw = 0, na = 0, nspans = 0;
    int64_t raw_waiting = 0, raw_lost = 0, all;
    span *w = NULL, *a = NULL;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < b->count; i++) {
        const entry *e = at(b, i);
        if (e->exec != exec) continue;
        if (e->ranged)
            nw++;
        else
            raw_waiting += clamp(e->nevents);
    }
    for (size_t i = 0; i < b->ntallies; i++) {
        const tally *t = &b->tallies[i];
        if (t->exec != exec) continue;
        nspans += t->nspans;
        raw_lost += t->raw;
        if (t->nspans > 0 || t->raw > 0) lost_why = t->why;
    }
    if (nw + nspans > 0) {
        w = malloc((nw ? nw : 1) * sizeof *w);
        a = malloc((nw + nspans) * sizeof *a);
    }
    if (nw + nspans > 0 && (w == NULL || a == NULL)) {
        /* no memory to sort them out: every copy counts */
        for (size_t i = 0; i < b->count; i++) {
            const entry *e = at(b, i);
            if (e->exec == exec && e->ranged) raw_waiting += clamp(e->nevents);
        }
        for (size_t i = 0; i < b->ntallies; i++)
            for (size_t j = 0; b->tallies[i].exec == exec && j < b->tallies[i].nspans; j++)
                raw_lost += clamp(b->tallies[i].spans[j].hi - b->tallies[i].spans[j].lo + 1);
        out->waiting = raw_waiting;
        out->lost = raw_lost;
    } else {
        for (size_t i = 0; i < b->count; i++) {
            const entry *e = at(b, i);
            if (e->exec != exec || !e->ranged) continue;
            w[na] = a[na] = (span){e->pid, e->lo, e->hi};
            na++;
        }
        for (size_t i = 0; i < b->ntallies; i++) {
            const tally *t = &b->tallies[i];
            for (size_t j = 0; t->exec == exec && j < t->nspans; j++)
                a[na++] = (span){t->pid, t->spans[j].lo, t->spans[j].hi};
        }
        /* what waits is counted once however often it was sent; what was
         * lost, only where no copy waits and the store lacks it */
        out->waiting = raw_waiting + missing(w, merge(w, nw), exec, stored, arg);
        all = raw_waiting + raw_lost + missing(a, merge(a, na), exec, stored, arg);
        out->lost = all > out->waiting ? all - out->waiting : 0;
    }
    free(w);
    free(a);
    if (b->anywhere > 0) {
        out->lost += b->anywhere;
        if (lost_why == NULL) lost_why = b->why_anywhere;
    }
    out->why = out->lost > 0 && lost_why ? lost_why : out->waiting > 0 ? b->why : NULL;
    if (out->waiting == 0) {
        for (size_t i = 0; i < b->nclocks; i++) {
            if (b->clocks[i].exec != exec) continue;
            b->clocks[i] = b->clocks[--b->nclocks];
            break;
        }
    }
}

double tpd_backlog_waited(tpd_backlog *b, int64_t exec)
{
    double now = now_ms();
    size_t oldest = 0;
    for (size_t i = 0; i < b->nclocks; i++) {
        if (b->clocks[i].exec == exec) return now - b->clocks[i].first_ms;
        if (b->clocks[i].first_ms < b->clocks[oldest].first_ms) oldest = i;
    }
    /* full: the oldest clock restarts, which only lengthens its wait */
    if (b->nclocks == MAX_CLOCKS) b->clocks[oldest] = b->clocks[--b->nclocks];
    b->clocks[b->nclocks].exec = exec;
    b->clocks[b->nclocks].first_ms = now;
    b->nclocks++;
    return 0;
}
