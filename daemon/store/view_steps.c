/* SPDX-License-Identifier: MIT
 * view_steps.c -- the "steps" view of query.h: per process of a run, one
 * row per optimizer step (loss, backward count, grad and update norms,
 * learning rates, optimizer steps, update, GradScaler scale), as an aligned
 * text table or as JSON.
 *
 * A process's backward, step and amp events, read in seq order, fold into
 * one row per step index; a row is emitted when the step index changes. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pack.h"
#include "daemon/store/query.h"
#include "daemon/store/table.h"
#include "daemon/store/view.h"
#include "proto/event.h"

/* num_json is v as JSON; the non-finite as the strings "nan", "inf",
 * "-inf" (as the health report writes them), since JSON has no such
 * numbers. */
static json_t *num_json(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

/* One value of a step's list: a number (has: measured) or a word. */
typedef struct item {
    bool has;
    double v;
    const char *word; /* static; NULL: "-" */
} item;

typedef struct items {
    item *a;
    size_t n, cap;
    bool oom;
} items;

static void items_add(items *l, bool has, double v, const char *word)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        item *a = realloc(l->a, cap * sizeof *a);
        if (a == NULL) {
            l->oom = true;
            return;
        }
        l->a = a;
        l->cap = cap;
    }
    l->a[l->n++] = (item){has, v, word};
}

typedef struct step_row {
    bool open;
    int64_t step;
    double loss;
    bool has_loss;
    int64_t nback;
    int64_t nopt;
    items gnorm, unorm, lrs, update;
    bool has_scale;
    double scale;
} step_row;

static void row_start(step_row *r, int64_t step)
{
    r->open = true;
    r->step = step;
    r->loss = 0;
    r->has_loss = false;
    r->nback = r->nopt = 0;
    r->has_scale = false;
    r->gnorm.n = r->unorm.n = r->lrs.n = r->update.n = 0;
}

/* row_add folds one backward, step or GradScaler event into the row. */
static void row_add(step_row *r, const tp_event *e)
{
    const char *phase;
    uint32_t plen;
    double v = 0;
    bool has;
    tp_mpr f;
    uint32_t n;
    if (e->kind == TP_K_AMP) {
        if (tp_body_f64(e, TPF_amp_scale, &v) == TP_OK) {
            r->scale = v;
            r->has_scale = true;
        }
        return;
    }
    if (e->kind == TP_K_BACKWARD) {
        r->nback++;
        if (tp_body_f64(e, TPF_backward_loss, &v) == TP_OK) {
            r->loss += v;
            r->has_loss = true;
        }
        return;
    }
    if (tp_body_str(e, TPF_step_phase, &phase, &plen) != TP_OK) return;
    if (tp_mp_str_eq(phase, plen, "pre")) {
        r->nopt++;
        has = tp_body_f64(e, TPF_step_gnorm, &v) == TP_OK;
        items_add(&r->gnorm, has, v, NULL);
        if (tp_body_find(e, TPF_step_lrs, &f) == TP_OK && tp_mpr_array(&f, &n) == TP_OK) {
            for (uint32_t i = 0; i < n; i++) {
                tp_mptype t;
                int64_t iv;
                if (tp_mpr_peek(&f, &t) != TP_OK) break;
                if (t == TP_MP_INT) {
                    if (tp_mpr_int(&f, &iv) != TP_OK) break;
                    v = (double)iv;
                } else if (tp_mpr_f64(&f, &v) != TP_OK) {
                    break;
                }
                items_add(&r->lrs, true, v, NULL);
            }
        }
    } else if (tp_mp_str_eq(phase, plen, "post")) {
        bool b;
        has = tp_body_f64(e, TPF_step_unorm, &v) == TP_OK;
        items_add(&r->unorm, has, v, NULL);
        if (tp_body_bool(e, TPF_step_skipped, &b) == TP_OK && b)
            items_add(&r->update, false, 0, "skipped");
        else if (tp_body_bool(e, TPF_step_changed, &b) == TP_OK)
            items_add(&r->update, false, 0, b ? "moved" : "none");
        else
            items_add(&r->update, false, 0, NULL);
    }
}

/* items_text writes l comma-separated into b ("-" when empty). */
static const char *items_text(tpd_str *b, const items *l)
{
    tpd_str_reset(b);
    for (size_t i = 0; i < l->n; i++) {
        char num[32];
        if (i) tpd_str_puts(b, ",");
        if (l->a[i].word)
            tpd_str_puts(b, l->a[i].word);
        else
            tpd_str_puts(b, l->a[i].has ? tpd_fmt_g(num, sizeof num, l->a[i].v) : "-");
    }
    return l->n ? tpd_str_cstr(b) : "-";
}

/* items_json is l as a JSON array: numbers, words, null for "-". */
static json_t *items_json(const items *l)
{
    json_t *a = json_array();
    bool bad = false;
    for (size_t i = 0; i < l->n; i++) {
        if (l->a[i].word)
            bad |= !tpd_jpush(a, json_string(l->a[i].word));
        else
            bad |= !tpd_jpush(a, l->a[i].has ? num_json(l->a[i].v) : json_null());
    }
    return tpd_jdone(a, bad);
}

typedef struct steps_out {
    bool json;
    tpd_table t;   /* text */
    json_t *procs; /* JSON: the processes with steps */
    json_t *rows;  /* JSON: the current process's rows */
    tpd_str lists[4];
    bool bad;
} steps_out;

static void row_emit(step_row *r, steps_out *so)
{
    char step[24], loss[32], nback[24], nopt[24], scale[32];
    if (!r->open) return;
    r->open = false;
    so->bad |= r->gnorm.oom || r->unorm.oom || r->lrs.oom || r->update.oom;
    if (so->json) {
        json_t *o = json_object();
        bool bad = false;
        bad |= !tpd_jset(o, "step", tpd_json_int(r->step));
        bad |= !tpd_jset(o, "loss", r->has_loss ? num_json(r->loss) : json_null());
        bad |= !tpd_jset(o, "backward", tpd_json_int(r->nback));
        bad |= !tpd_jset(o, "grad_norm", items_json(&r->gnorm));
        bad |= !tpd_jset(o, "update_norm", items_json(&r->unorm));
        bad |= !tpd_jset(o, "lr", items_json(&r->lrs));
        bad |= !tpd_jset(o, "optimizer_steps", tpd_json_int(r->nopt));
        bad |= !tpd_jset(o, "update", items_json(&r->update));
        bad |= !tpd_jset(o, "scale", r->has_scale ? num_json(r->scale) : json_null());
        so->bad |= bad || !tpd_jpush(so->rows, o);
        return;
    }
    snprintf(step, sizeof step, "%lld", (long long)r->step);
    snprintf(nback, sizeof nback, "%lld", (long long)r->nback);
    snprintf(nopt, sizeof nopt, "%lld", (long long)r->nopt);
    tpd_table_row(
        &so->t, (const char *const[]){
                    step, r->has_loss ? tpd_fmt_g(loss, sizeof loss, r->loss) : "-", nback,
                    items_text(&so->lists[0], &r->gnorm), items_text(&so->lists[1], &r->unorm),
                    items_text(&so->lists[2], &r->lrs), nopt, items_text(&so->lists[3], &r->update),
                    r->has_scale ? tpd_fmt_g(scale, sizeof scale, r->scale) : "-"});
}

/* process_steps adds the step table of one process (a row of ps) to so. */
static tp_err process_steps(tpd_store *s, sqlite3_stmt *ev, sqlite3_stmt *ps, step_row *r,
                            steps_out *so, char *why, size_t whylen)
{
    static const char *const heads[] = {"STEP", "LOSS",      "BACKWARD", "GNORM", "UNORM",
                                        "LR",   "OPT_STEPS", "UPDATE",   "SCALE"};
    int64_t exec = sqlite3_column_int64(ps, 0), pid = sqlite3_column_int64(ps, 2);
    bool header = false;
    tp_buf scratch; /* a packed body, unpacked */
    tp_err err = TP_OK;
    int rc;
    tp_buf_init(&scratch);
    sqlite3_reset(ev);
    sqlite3_bind_int64(ev, 1, exec);
    sqlite3_bind_int64(ev, 2, pid);
    r->open = false;
    while ((rc = sqlite3_step(ev)) == SQLITE_ROW) {
        tp_event e;
        const char *k = tpd_view_col_text(ev, 1, "");
        memset(&e, 0, sizeof e);
        e.step = sqlite3_column_int64(ev, 0);
        e.kind = tp_kind_parse(k, strlen(k));
        if ((err = tpd_body_read(tpd_store_leafdict(s), sqlite3_column_blob(ev, 2),
                                 (size_t)sqlite3_column_bytes(ev, 2), &scratch, &e.body,
                                 &e.body_len)) != TP_OK) {
            if (why)
                snprintf(why, whylen, "process %lld: a packed body cannot be read", (long long)pid);
            break;
        }
        if (e.body == NULL) continue;
        if (!header) {
            header = true;
            if (so->json) {
                json_t *p = json_object();
                so->rows = json_array();
                so->bad |= !tpd_jset(p, "execution", tpd_json_int(exec));
                so->bad |= !tpd_jset(p, "role", tpd_view_col_json(ps, 1));
                so->bad |= !tpd_jset(p, "pid", tpd_json_int(pid));
                so->bad |= !tpd_jset(p, "rank", tpd_view_col_json(ps, 3));
                so->bad |= !tpd_jset(p, "steps", json_incref(so->rows));
                so->bad |= !tpd_jpush(so->procs, p);
            } else {
                char line[512];
                snprintf(line, sizeof line, "exec %lld [%s] process %lld rank %s", (long long)exec,
                         tpd_view_col_text(ps, 1, "-"), (long long)pid,
                         tpd_view_col_text(ps, 3, "?"));
                tpd_table_text(&so->t, line);
                tpd_table_row(&so->t, heads);
            }
        }
        if (r->open && r->step != e.step) row_emit(r, so);
        if (!r->open) row_start(r, e.step);
        row_add(r, &e);
    }
    tp_buf_free(&scratch);
    if (err != TP_OK) return err;
    row_emit(r, so);
    if (so->rows) {
        json_decref(so->rows);
        so->rows = NULL;
    }
    if (rc != SQLITE_DONE) return tpd_view_dbfail(s, rc, why, whylen);
    return TP_OK;
}

tp_err tpd_view_steps(tpd_store *s, int64_t run, bool js, tpd_str *out, char *why, size_t whylen)
{
    static const char procs_sql[] = "SELECT e.id, e.role, p.pid, p.rank"
                                    " FROM executions e JOIN processes p ON p.exec_id = e.id"
                                    " WHERE e.run_id = ?1 ORDER BY e.id, p.pid";
    static const char ev_sql[] =
        "SELECT step, kind, body FROM events WHERE exec_id = ?1 AND pid = ?2"
        " AND kind IN ('backward', 'step', 'amp') ORDER BY seq";
    static const int minw[] = {6, 12, 8, 12, 12, 16, 9, 12, 0};
    sqlite3_stmt *ps = NULL, *ev = NULL;
    step_row r;
    steps_out so;
    tpd_str head;
    tp_err err;
    int rc;
    tpd_str_init(&head);
    memset(&r, 0, sizeof r);
    memset(&so, 0, sizeof so);
    so.json = js;
    tpd_table_init(&so.t, 9, minw, 0, "  ");
    for (int i = 0; i < 4; i++) tpd_str_init(&so.lists[i]);
    if (js) {
        so.procs = json_array();
        err = tpd_view_run_row(s, run, &ps, why, whylen); /* only to say "no run" */
        sqlite3_finalize(ps);
        ps = NULL;
    } else {
        err = tpd_view_run_header(s, run, &head, why, whylen);
    }
    if (err != TP_OK) goto out;
    if ((err = tpd_view_prepare(s, procs_sql, &ps, why, whylen)) != TP_OK) goto out;
    if ((err = tpd_view_prepare(s, ev_sql, &ev, why, whylen)) != TP_OK) goto out;
    sqlite3_bind_int64(ps, 1, run);
    while ((rc = sqlite3_step(ps)) == SQLITE_ROW)
        if ((err = process_steps(s, ev, ps, &r, &so, why, whylen)) != TP_OK) goto out;
    if (rc != SQLITE_DONE) {
        err = tpd_view_dbfail(s, rc, why, whylen);
    } else if (js) {
        json_t *root = json_pack("{s:I, s:O}", "run", (json_int_t)run, "processes", so.procs);
        err = tpd_view_put_json(tpd_jdone(root, so.bad), out, why, whylen);
    } else {
        tpd_str_append(out, head.s ? head.s : "", head.len);
        tpd_table_print(&so.t, out);
        if (so.t.n == 0) tpd_str_puts(out, "(no steps recorded)\n");
    }
out:
    tpd_str_free(&head);
    for (int i = 0; i < 4; i++) tpd_str_free(&so.lists[i]);
    tpd_table_free(&so.t);
    json_decref(so.procs);
    json_decref(so.rows);
    free(r.gnorm.a);
    free(r.unorm.a);
    free(r.lrs.a);
    free(r.update.a);
    sqlite3_finalize(ps);
    sqlite3_finalize(ev);
    return err;
}

tp_err tpd_query_steps(tpd_store *s, int64_t run, tpd_str *out, char *why, size_t whylen)
{
    return tpd_view_steps(s, run, false, out, why, whylen);
}
