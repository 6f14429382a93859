/* SPDX-License-Identifier: MIT
 * gaps.c -- sequence bookkeeping: the highest contiguous seq of a process
 * (the control command "seen") and the missing ranges (the gaps table).
 *
 * processes.nevents counts distinct stored events and processes.max_seq is
 * the highest, so nevents == max_seq + 1 proves there is no gap without
 * reading the events; otherwise one ordered scan of the (exec_id, pid, seq)
 * index finds them. */
#include <string.h>

#include "daemon/store/store.h"

static tp_err dberr(int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    return e == TP_OK ? TP_EDB : e;
}

typedef struct proc_info {
    bool found;
    int64_t nevents;
    int64_t max_seq; /* -1 when none */
    bool bye;
} proc_info;

static tp_err proc_read(tpd_store *s, int64_t exec, int64_t pid, proc_info *pi)
{
    static const char sql[] = "SELECT nevents, coalesce(max_seq, -1), bye_reason IS NOT NULL"
                              " FROM processes WHERE exec_id = ?1 AND pid = ?2";
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    memset(pi, 0, sizeof *pi);
    pi->max_seq = -1;
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        pi->found = true;
        pi->nevents = sqlite3_column_int64(st, 0);
        pi->max_seq = sqlite3_column_int64(st, 1);
        pi->bye = sqlite3_column_int(st, 2) != 0;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? TP_OK : dberr(rc);
}

/* walk scans the seqs of (exec, pid) in order.  With fn, it reports every
 * gap; without, it stops at the first and *contig receives the last seq
 * before it. */
static tp_err walk(tpd_store *s, int64_t exec, int64_t pid, tpd_gap_fn fn, void *arg, int64_t *n,
                   int64_t *contig)
{
    static const char sql[] = "SELECT seq FROM events WHERE exec_id = ?1 AND pid = ?2 ORDER BY seq";
    sqlite3_stmt *st = NULL;
    int64_t expect = 0, ngaps = 0;
    int rc = sqlite3_prepare_v2(tpd_store_db(s), sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return dberr(rc);
    sqlite3_bind_int64(st, 1, exec);
    sqlite3_bind_int64(st, 2, pid);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0);
        if (seq > expect) {
            if (fn == NULL) break;
            fn(arg, expect, seq - 1);
            ngaps++;
        }
        expect = seq + 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return dberr(rc);
    if (n) *n = ngaps;
    if (contig) *contig = expect - 1;
    return TP_OK;
}

tp_err tpd_store_seen(tpd_store *s, int64_t exec, int64_t pid, int64_t *seq, bool *bye)
{
    proc_info pi;
    int64_t contig = -1;
    tp_err err = proc_read(s, exec, pid, &pi);
    if (err != TP_OK) return err;
    if (pi.found && pi.max_seq >= 0) {
        if (pi.nevents == pi.max_seq + 1)
            contig = pi.max_seq;
        else if ((err = walk(s, exec, pid, NULL, NULL, NULL, &contig)) != TP_OK)
            return err;
    }
    *seq = contig;
    *bye = pi.bye;
    return TP_OK;
}

tp_err tpd_store_process_gaps(tpd_store *s, int64_t exec, int64_t pid, tpd_gap_fn fn, void *arg,
                              int64_t *n)
{
    proc_info pi;
    tp_err err = proc_read(s, exec, pid, &pi);
    if (err != TP_OK) return err;
    if (!pi.found || pi.max_seq < 0 || pi.nevents == pi.max_seq + 1) {
        if (n) *n = 0;
        return TP_OK;
    }
    return walk(s, exec, pid, fn, arg, n, NULL);
}

typedef struct gap_ins {
    sqlite3_stmt *st;
    int64_t exec, pid;
    int rc;
} gap_ins;

static void insert_gap(void *arg, int64_t first, int64_t last)
{
    gap_ins *g = arg;
    if (g->rc != SQLITE_DONE) return;
    sqlite3_reset(g->st);
    sqlite3_bind_int64(g->st, 1, g->exec);
    sqlite3_bind_int64(g->st, 2, g->pid);
    sqlite3_bind_int64(g->st, 3, first);
    sqlite3_bind_int64(g->st, 4, last);
    g->rc = sqlite3_step(g->st);
}

tp_err tpd_store_gaps_compute(tpd_store *s, int64_t exec, int64_t *ngaps)
{
    sqlite3 *db = tpd_store_db(s);
    sqlite3_stmt *del = NULL, *procs = NULL;
    gap_ins g = {NULL, exec, 0, SQLITE_DONE};
    bool own = !tpd_store_in_txn(s);
    int64_t total = 0;
    tp_err err = TP_OK;
    int rc;
    if (own && (err = tpd_store_begin(s)) != TP_OK) return err;
    rc = sqlite3_prepare_v2(db, "DELETE FROM gaps WHERE exec_id = ?1", -1, &del, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT pid FROM processes WHERE exec_id = ?1 ORDER BY pid", -1,
                                &procs, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO gaps(exec_id, pid, first_seq, last_seq)"
                                " VALUES(?1, ?2, ?3, ?4)",
                                -1, &g.st, NULL);
    if (rc != SQLITE_OK) goto fail;
    sqlite3_bind_int64(del, 1, exec);
    if ((rc = sqlite3_step(del)) != SQLITE_DONE) goto fail;
    sqlite3_bind_int64(procs, 1, exec);
    while ((rc = sqlite3_step(procs)) == SQLITE_ROW) {
        int64_t n = 0;
        g.pid = sqlite3_column_int64(procs, 0);
        err = tpd_store_process_gaps(s, exec, g.pid, insert_gap, &g, &n);
        if (err != TP_OK) goto out;
        if (g.rc != SQLITE_DONE) {
            rc = g.rc;
            goto fail;
        }
        total += n;
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(del);
    sqlite3_finalize(procs);
    sqlite3_finalize(g.st);
    del = procs = g.st = NULL;
    if (own && (err = tpd_store_commit(s)) != TP_OK) return err;
    if (ngaps) *ngaps = total;
    return TP_OK;
fail:
    err = dberr(rc);
out:
    sqlite3_finalize(del);
    sqlite3_finalize(procs);
    sqlite3_finalize(g.st);
    if (own) tpd_store_rollback(s);
    return err;
}
