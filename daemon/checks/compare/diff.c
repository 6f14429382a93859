/* SPDX-License-Identifier: MIT
 * diff.c -- two stored runs' executions compared offline: the sides
 * chosen, the comparison (pair.c), the report as text or JSON.  Exact
 * digests only: a tolerance is the compare check's to declare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/json.h"
#include "daemon/checks/compare/diff.h"
#include "daemon/checks/compare/pair.h"
#include "daemon/checks/render.h"
#include "daemon/obs/bgload.h"
#include "daemon/obs/values.h"

/* The side names, in the text and in the explanation. */
#define NAME_A "A"
#define NAME_B "B"

typedef struct side {
    const tpd_run *r;
    const tpd_exec *e;
    const tpd_proc *p;
} side;

/* exec_ids writes the ids of r's executions, comma-separated, into buf. */
static const char *exec_ids(const tpd_run *r, char *buf, size_t n)
{
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->nexecs && w < n; i++)
        w += (size_t)snprintf(buf + w, n - w, "%s%lld", i ? ", " : "", (long long)r->execs[i].id);
    if (r->nexecs == 0) snprintf(buf, n, "none");
    return buf;
}

/* pick chooses r's execution id (-1: the first whose trainer stepped) and
 * its trainer into *s. */
static tp_err pick(const tpd_run *r, int64_t id, side *s, char *why, size_t whylen)
{
    char ids[256];
    const tpd_exec *e = NULL;
    const tpd_proc *p = NULL;
    for (size_t i = 0; i < r->nexecs && e == NULL; i++) {
        const tpd_proc *t = tpd_obs_trainer(&r->execs[i]);
        if (id >= 0 ? r->execs[i].id == id : t != NULL && t->steps > 0) {
            e = &r->execs[i];
            p = t;
        }
    }
    if (e == NULL && id >= 0) {
        snprintf(why, whylen, "execution %lld is not an execution of run %lld (its executions: %s)",
                 (long long)id, (long long)r->id, exec_ids(r, ids, sizeof ids));
        return TP_EINVAL;
    }
    if (e == NULL) {
        snprintf(why, whylen,
                 "run %lld has no execution that made an optimizer step (its executions: %s)",
                 (long long)r->id, exec_ids(r, ids, sizeof ids));
        return TP_ENOENT;
    }
    if (p == NULL || p->steps <= 0) {
        snprintf(why, whylen, "execution %lld of run %lld made no optimizer step", (long long)id,
                 (long long)r->id);
        return TP_ENOENT;
    }
    s->r = r;
    s->e = e;
    s->p = p;
    return TP_OK;
}

/* ---- text ---- */

static void side_line(tpd_str *t, const char *name, const side *s)
{
    tpd_str_printf(t, "  %s  run %lld", name, (long long)s->r->id);
    if (s->r->name) tpd_str_printf(t, " \"%s\"", s->r->name);
    tpd_str_printf(t, ", execution %lld (%s), %lld step%s", (long long)s->e->id,
                   s->e->role ? s->e->role : "?", (long long)s->p->steps,
                   s->p->steps == 1 ? "" : "s");
    if (s->e->argv_json) {
        tpd_str_puts(t, ": ");
        tpd_golden_argv_text(t, s->e->argv_json);
    }
    tpd_str_puts(t, "\n");
}

static void text(tpd_str *t, const side *a, const side *b, const tpd_gpair *p, const tpd_div *d,
                 const tpd_divergences *all, const tpd_why *why, const tpd_cmp_opts *o)
{
    char na[48], nb[48];
    tpd_str_printf(t, "diff: %s\n", d ? "differ" : "match");
    side_line(t, NAME_A, a);
    side_line(t, NAME_B, b);
    tpd_str_puts(t, "  comparison  ");
    tpd_render_comparison(t, o);
    tpd_str_puts(t, "\n");
    if (d == NULL)
        tpd_str_printf(t,
                       "  the executions match at every step (%lld steps compared, %llu samples "
                       "of the training data stream)\n",
                       (long long)p->cmp.steps, (unsigned long long)p->sd.compared);
    else {
        /* two executions of one run are told apart by their ids */
        if (a->r->id == b->r->id) {
            snprintf(na, sizeof na, NAME_A " (execution %lld)", (long long)a->e->id);
            snprintf(nb, sizeof nb, NAME_B " (execution %lld)", (long long)b->e->id);
        } else {
            snprintf(na, sizeof na, NAME_A " (run %lld)", (long long)a->r->id);
            snprintf(nb, sizeof nb, NAME_B " (run %lld)", (long long)b->r->id);
        }
        tpd_golden_first_text(t, p, d, all, "", na, nb);
    }
    if (why->n) {
        tpd_str_printf(t, "\n%s\n", d ? "why (from the observations)" : "why");
        tpd_str_puts(t, why->text.s);
    }
}

/* ---- JSON ---- */

static json_t *side_json(const side *s)
{
    json_t *o = json_object(), *argv = NULL;
    bool bad = false;
    if (s->e->argv_json) argv = json_loads(s->e->argv_json, JSON_DECODE_ANY, NULL);
    bad |= !tpd_jset(o, "run", tpd_json_int(s->r->id));
    bad |= !tpd_jset(o, "execution", tpd_json_int(s->e->id));
    bad |= !tpd_jset(o, "role", tpd_json_str(s->e->role));
    bad |= !tpd_jset(o, "argv", argv ? argv : json_null());
    bad |= !tpd_jset(o, "steps", tpd_json_int(s->p->steps));
    return tpd_jdone(o, bad);
}

static json_t *first_json(const tpd_div *d)
{
    json_t *o = json_object();
    bool bad = false;
    bad |= !tpd_jset(o, "step", tpd_json_int(d->step_a));
    bad |= !tpd_jset(o, "step_other", tpd_json_int(d->step_b));
    bad |= !tpd_jset(o, "path", tpd_json_str(d->path));
    bad |= !tpd_jset(o, "group", json_string(tpd_group_name(d->group)));
    bad |= !tpd_jset(o, "a", tpd_json_val(d->a ? &d->a->v : NULL));
    bad |= !tpd_jset(o, "b", tpd_json_val(d->b ? &d->b->v : NULL));
    return tpd_jdone(o, bad);
}

static char *report_json(const side *a, const side *b, const tpd_gpair *p, const tpd_div *d,
                         const tpd_divergences *all, const tpd_why *why)
{
    json_t *j = json_object();
    bool bad = false;
    bad |= !tpd_jset(j, "a", side_json(a));
    bad |= !tpd_jset(j, "b", side_json(b));
    bad |= !tpd_jset(j, "match", tpd_json_bool(d == NULL));
    bad |= !tpd_jset(j, "steps_compared", tpd_json_int(p->cmp.steps));
    bad |= !tpd_jset(j, "samples_compared", tpd_json_int((int64_t)p->sd.compared));
    bad |= !tpd_jset(j, "first_divergence", d ? first_json(d) : json_null());
    bad |= !tpd_jset(j, "divergences", tpd_json_divergences(all, "a", "b"));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(why));
    return tpd_json_dump(tpd_jdone(j, bad));
}

/* ---- the diff ---- */

tp_err tpd_golden_diff_runs(const tpd_run *ra, int64_t ea, const tpd_run *rb, int64_t eb, bool json,
                            tpd_str *out, bool *match, char *why, size_t whylen)
{
    side a, b;
    tpd_cmp_opts o;
    tpd_gpair p;
    tpd_divergences all = {0};
    tpd_why w = {0};
    tpd_str t = {0};
    const tpd_div *d;
    char *j = NULL;
    tp_err rc;
    if ((rc = pick(ra, ea, &a, why, whylen)) != TP_OK ||
        (rc = pick(rb, eb, &b, why, whylen)) != TP_OK)
        return rc;
    memset(&o, 0, sizeof o); /* exact */
    if ((rc = tpd_golden_pair(&p, NAME_A, a.p, NAME_B, b.p, &o)) != TP_OK) goto fail;
    d = tpd_golden_first(&p);
    if (d != NULL) {
        if ((rc = tpd_golden_divergences(&all, ra, &p, d, &o)) != TP_OK) goto fail;
        tpd_golden_explain(&w, &p, d, &o);
    } else if (p.cmp.first_rng.found) {
        tpd_why_add(&w, "rng_unused",
                    "%s differs at step %lld, but no observation depends on it: the executions "
                    "do not diverge, so it does not matter",
                    p.cmp.first_rng.path, (long long)p.cmp.first_rng.step_a);
    }
    if (json) {
        rc = (j = report_json(&a, &b, &p, d, &all, &w)) ? TP_OK : TP_ENOMEM;
        if (rc == TP_OK) tpd_str_puts(&t, j);
    } else {
        text(&t, &a, &b, &p, d, &all, &w, &o);
    }
    if (rc == TP_OK && (t.oom || w.oom)) rc = TP_ENOMEM;
    if (rc == TP_OK) {
        tpd_str_append(out, tpd_str_cstr(&t), t.len);
        *match = d == NULL;
    }
fail:
    if (rc == TP_ENOMEM) snprintf(why, whylen, "%s", tp_strerror(rc));
    free(j);
    tpd_str_free(&t);
    tpd_why_free(&w);
    tpd_divergences_free(&all);
    tpd_golden_pair_free(&p);
    return rc;
}

/* load_both loads runs a and b from s: b on a thread and a connection of
 * its own while a loads here (bgload.h: a long run's load is most of a
 * diff's time); else, or when that connection cannot be opened, one after
 * the other on s.  On error both are NULL and why says which failed. */
static tp_err load_both(tpd_store *s, int64_t a, int64_t b, tpd_run **ra, tpd_run **rb, char *why,
                        size_t whylen)
{
    tpd_bgload bg;
    tp_err rc, rcb = TP_OK;
    char whyb[512] = "";
    bool two = tpd_bgload_start(&bg, tpd_store_path(s), b);
    rc = tpd_obs_load(s, a, ra, why, whylen);
    two = two && tpd_bgload_finish(&bg, rb, &rcb, whyb, sizeof whyb);
    if (two && rc == TP_OK && rcb != TP_OK) {
        rc = rcb;
        snprintf(why, whylen, "%s", whyb);
    }
    if (!two && rc == TP_OK) rc = tpd_obs_load(s, b, rb, why, whylen);
    if (rc != TP_OK) {
        tpd_obs_free(*ra);
        tpd_obs_free(*rb);
        *ra = *rb = NULL;
    }
    return rc;
}

tp_err tpd_golden_diff(tpd_store *s, tpd_diff_side a, tpd_diff_side b, bool json, tpd_str *out,
                       bool *match, char *why, size_t whylen)
{
    tpd_run *ra = NULL, *rb = NULL;
    tp_err rc;
    if ((rc = load_both(s, a.run, b.run, &ra, &rb, why, whylen)) != TP_OK) goto done;
    /* the errors of captured values: the blob store beside the database */
    if ((rc = tpd_values_locate(ra, tpd_store_path(s))) != TP_OK) {
        snprintf(why, whylen, "the blob store of %s: %s", tpd_store_path(s), tp_strerror(rc));
        if (rc != TP_ENOMEM) rc = TP_EIO; /* TP_EINVAL is the caller's mistake */
        goto done;
    }
    rc = tpd_golden_diff_runs(ra, a.exec, rb, b.exec, json, out, match, why, whylen);
done:
    tpd_obs_free(ra);
    tpd_obs_free(rb);
    return rc;
}
