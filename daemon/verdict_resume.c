/* SPDX-License-Identifier: MIT
 * verdict_resume.c -- resume parity: preconditions (ERROR), the baselines
 * (ABSTAIN), R against A (FAIL or PASS) and the explanation of a FAIL from
 * the evidence: the state R had after loading against the state I had when
 * it saved, the restores R performed after the load, the checkpoint's
 * contents, and the RNGs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/provenance.h"
#include "daemon/render.h"
#include "daemon/stream.h"
#include "daemon/text.h"
#include "daemon/verdict_resume.h"

#define MAX_EXAMPLES 4

typedef struct ctx {
    const tpd_run *run;
    const tpd_cmp_opts *o;
    const tpd_exec *A, *B, *I, *R;
    const tpd_proc *pa, *pb, *pi, *pr;
    const tpd_ckpt *armed;  /* I's save that armed the interruption */
    const tpd_ckpt *loaded; /* R's first load of one of I's checkpoints */
    const tpd_ckpt *saved;  /* the save of I's that it matches */
    int64_t c;              /* the step of that save, in A's numbering */
    int64_t r0;             /* R's step at the load */
    tpd_str head;           /* lines under the outcome */
    tpd_why why;            /* the explanation */
    /* the training data streams' first divergences, A-B and A-R */
    tpd_stream_div sab, sra;
} ctx;

/* ---- small helpers ---- */

static const char *role_name(const char *role)
{
    switch (role[0]) {
    case 'A':
        return "A (uninterrupted)";
    case 'B':
        return "B (uninterrupted)";
    case 'I':
        return "I (interrupted)";
    case 'R':
        return "R (resumed)";
    }
    return role;
}

static const char *base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : (path ? path : "a buffer");
}

static void add_why(ctx *x, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_why(ctx *x, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tpd_why_vadd(&x->why, kind, fmt, ap);
    va_end(ap);
}

static void val_str(const tpd_val *v, char *buf, size_t n)
{
    tpd_str b = {0};
    tpd_render_val(&b, v);
    snprintf(buf, n, "%s", b.s ? b.s : "?");
    tpd_str_free(&b);
}

/* ---- the report ---- */

static void execs_json(ctx *x, tpd_str *j)
{
    const tpd_exec *ex[4] = {x->A, x->B, x->I, x->R};
    const tpd_proc *px[4] = {x->pa, x->pb, x->pi, x->pr};
    tpd_render_execs_json(j, ex, px, 4);
}

static void window_json(ctx *x, tpd_str *j)
{
    int first = 1;
    tpd_str_puts(j, "[");
    for (size_t i = 0; x->pi && x->armed && i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (s->load || s->seq < x->armed->seq) continue;
        tpd_str_printf(j, "%s{\"name\":", first ? "" : ",");
        tpd_str_jsonz(j, s->name);
        tpd_str_puts(j, ",\"api\":");
        tpd_str_jsonz(j, s->api);
        tpd_str_printf(j, ",\"step\":%lld,\"digest\":", (long long)s->step);
        if (s->has_digest) {
            tpd_str_puts(j, "\"");
            tpd_render_hex(j, s->digest, 16);
            tpd_str_puts(j, "\"");
        } else {
            tpd_str_puts(j, "null");
        }
        tpd_str_puts(j, "}");
        first = 0;
    }
    tpd_str_puts(j, "]");
}

static tp_err finish(ctx *x, tpd_outcome oc, const tpd_cmp_result *cmp, const char *vs,
                     tpd_result *out)
{
    tpd_str t = {0}, j = {0};
    const tpd_div *d = cmp && cmp->first.found          ? &cmp->first
                       : cmp && cmp->first_unsure.found ? &cmp->first_unsure
                                                        : NULL;
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "resume: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    tpd_str_puts(&t, "  comparison  ");
    tpd_render_comparison(&t, x->o);
    tpd_str_puts(&t, "\n");
    if (d != NULL) {
        const char *la = role_name(x->A->role), *lb = role_name(vs);
        tpd_str_printf(&t, "\nfirst divergence%s  step %lld",
                       vs[0] == 'B' ? " between the baselines" : "", (long long)d->step_a);
        if (vs[0] == 'R') tpd_str_printf(&t, " (R's step %lld)", (long long)d->step_b);
        tpd_str_printf(&t, "  %s\n    %-18s ", d->path, la);
        tpd_render_val(&t, d->a ? &d->a->v : NULL);
        tpd_str_printf(&t, "\n    %-18s ", lb);
        tpd_render_val(&t, d->b ? &d->b->v : NULL);
        tpd_str_puts(&t, "\n");
        out->has_step = true;
        out->step = d->step_a;
        snprintf(out->path, sizeof out->path, "%s", d->path);
    }
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }

    tpd_str_printf(&j,
                   "{\"schema_version\":1,\"trainparity_version\":\"0.1.0\",\"check\":\"resume\","
                   "\"run\":%lld,\"outcome\":\"%s\",\"comparison\":",
                   (long long)x->run->id, tpd_outcome_name(oc));
    tpd_render_comparison_json(&j, x->o);
    tpd_str_puts(&j, ",\"first_divergence\":");
    if (d != NULL) {
        tpd_str_printf(&j, "{\"between\":\"A-%s\",\"step\":%lld,\"step_other\":%lld,\"path\":", vs,
                       (long long)d->step_a, (long long)d->step_b);
        tpd_str_jsonz(&j, d->path);
        tpd_str_puts(&j, ",\"group\":");
        tpd_str_jsonz(&j, tpd_group_name(d->group));
        tpd_str_printf(&j, ",\"unsure\":%s,\"A\":", d->unsure ? "true" : "false");
        tpd_render_val_json(&j, d->a ? &d->a->v : NULL);
        tpd_str_printf(&j, ",\"%s\":", vs);
        tpd_render_val_json(&j, d->b ? &d->b->v : NULL);
        tpd_str_puts(&j, "}");
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_puts(&j, ",\"explanation\":[");
    tpd_str_puts(&j, x->why.json.s ? x->why.json.s : "");
    tpd_str_puts(&j, "],\"evidence\":{\"executions\":");
    execs_json(x, &j);
    tpd_str_printf(&j,
                   ",\"aligned_step\":%lld,\"resumed_from_step\":%lld,\"window\":", (long long)x->c,
                   (long long)x->r0);
    window_json(x, &j);
    tpd_str_puts(&j, ",\"loaded\":");
    if (x->loaded) {
        tpd_str_puts(&j, "{\"name\":");
        tpd_str_jsonz(&j, x->loaded->name);
        tpd_str_puts(&j, ",\"via\":");
        tpd_str_jsonz(&j, x->loaded->via);
        tpd_str_puts(&j, "}");
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_puts(&j, "}}\n");
    out->text = tpd_str_steal(&t);
    out->json = tpd_str_steal(&j);
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_stream_div_free(&x->sab);
    tpd_stream_div_free(&x->sra);
    if (out->text == NULL || out->json == NULL) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}

static tp_err error(ctx *x, tpd_result *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err error(ctx *x, tpd_result *out, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tpd_str_printf(&x->head, "  %s\n", line);
    return finish(x, TPD_ERROR, NULL, "R", out);
}

/* ---- preconditions ---- */

/* exec_problem describes why execution e (role) cannot be used, or NULL. */
static const char *exec_problem(const tpd_exec *e, const tpd_proc *p, char *buf, size_t n)
{
    const char *who = role_name(e->role);
    if (e->has_signal && e->signal != 0) {
        snprintf(buf, n, "%s was killed by signal %lld", who, (long long)e->signal);
        return buf;
    }
    if (p == NULL || p->steps == 0) {
        if (e->has_status && e->status != 0 &&
            !(p && p->bye_reason && !strcmp(p->bye_reason, "interrupt")))
            snprintf(buf, n, "%s exited with status %lld%s%s%s before any optimizer step", who,
                     (long long)e->status, tpd_status_hint(e->status, p != NULL),
                     p && p->bye_exc ? " after an uncaught " : "",
                     p && p->bye_exc ? p->bye_exc : "");
        else
            snprintf(buf, n, "%s ran no optimizer step: nothing was observed to compare", who);
        return buf;
    }
    if (e->has_status && e->status != 0 &&
        !(p->bye_reason && !strcmp(p->bye_reason, "interrupt"))) {
        snprintf(buf, n, "%s exited with status %lld%s%s", who, (long long)e->status,
                 p->bye_exc ? " after an uncaught " : "", p->bye_exc ? p->bye_exc : "");
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        int64_t stored = q->nevents;
        if (!q->has_bye) {
            snprintf(buf, n, "%s: process %lld ended without reporting its last events (no bye)",
                     who, (long long)q->pid);
            return buf;
        }
        if (q->dropped > 0 || stored < q->sent || stored < q->max_seq + 1) {
            snprintf(buf, n, "%s: process %lld lost events (%lld sent, %lld stored, %lld dropped)",
                     who, (long long)q->pid, (long long)q->sent, (long long)stored,
                     (long long)q->dropped);
            return buf;
        }
        if (q->errors > 0 || q->first_error) {
            snprintf(buf, n, "%s: a hook of the agent reported an error in process %lld: %.600s",
                     who, (long long)q->pid, q->first_error ? q->first_error : "(unknown)");
            return buf;
        }
    }
    return NULL;
}

static bool same_digest(const tpd_ckpt *a, const tpd_ckpt *b)
{
    return a->has_digest && b->has_digest && memcmp(a->digest, b->digest, TP_DIGEST_LEN) == 0;
}

/* foreign_load finds a load of p's that no earlier save of p's explains. */
static const tpd_ckpt *foreign_load(const tpd_proc *p)
{
    for (size_t i = 0; i < p->nckpts; i++) {
        const tpd_ckpt *l = &p->ckpts[i];
        bool mine = false;
        if (!l->load || l->error) continue;
        for (size_t k = 0; k < i && !mine; k++) {
            const tpd_ckpt *s = &p->ckpts[k];
            mine = !s->load &&
                   (same_digest(s, l) || (s->name && l->name && strcmp(s->name, l->name) == 0));
        }
        if (!mine) return l;
    }
    return NULL;
}

static void head_lines(ctx *x)
{
    tpd_str_printf(&x->head, "  executions  A %lld steps, B %lld steps", (long long)x->pa->steps,
                   (long long)x->pb->steps);
    if (x->armed)
        tpd_str_printf(&x->head, ", I ended after its save at step %lld", (long long)x->c);
    if (x->pr) tpd_str_printf(&x->head, ", R %lld steps", (long long)x->pr->steps);
    tpd_str_puts(&x->head, "\n");
    if (x->armed) {
        int n = 0, buffers = 0;
        tpd_str_puts(&x->head, "  window      I saved");
        for (size_t i = 0; i < x->pi->nckpts; i++) {
            const tpd_ckpt *s = &x->pi->ckpts[i];
            if (s->load || s->seq < x->armed->seq) continue;
            if (s->name == NULL)
                buffers++;
            else
                tpd_str_printf(&x->head, "%s %s", n++ ? "," : "", base(s->name));
        }
        if (buffers)
            tpd_str_printf(&x->head, "%s %d checkpoint%s into a buffer", n ? "," : "", buffers,
                           buffers > 1 ? "s" : "");
        tpd_str_printf(&x->head, " at step %lld before the agent ended it\n", (long long)x->c);
    }
    if (x->loaded) {
        tpd_str_printf(&x->head, "  checkpoint  R loaded %s (%s, via %s) = I's save at step %lld\n",
                       x->loaded->name ? x->loaded->name : "a buffer",
                       x->loaded->api ? x->loaded->api : "?", x->loaded->via ? x->loaded->via : "?",
                       (long long)x->c);
    }
}

/* ---- explanations of a FAIL ---- */

/* What R restored after the checkpoint load.  A restore counts as one from
 * the checkpoint only when its content came from one of I's files
 * (provenance.h); the others (an object reloading its own state, an RNG
 * state kept in memory) are kept apart, with the function that made them. */
typedef struct restored {
    bool module, optimizer, scheduler, scaler;
    const char *other[TPD_G__COUNT]; /* group: caller of a restore from elsewhere */
    bool other_seen[TPD_G__COUNT];
    bool rng_set[4]; /* torch_cpu, cuda, python, numpy */
    bool rng_seeded[4];
    bool rng_seed_known[4];
    int64_t rng_seed[4];
    bool rng_other[4]; /* set from a state no file of I's holds */
    const char *rng_other_caller[4];
} restored;

static int rng_index(const char *obj)
{
    if (obj == NULL) return -1;
    if (strncmp(obj, "rng.torch_cpu", 13) == 0) return 0;
    if (strncmp(obj, "rng.cuda", 8) == 0) return 1;
    if (strncmp(obj, "rng.python", 10) == 0) return 2;
    if (strncmp(obj, "rng.numpy", 9) == 0) return 3;
    return -1;
}

/* from_checkpoint reports whether restore r put back content of one of I's
 * files in the window.  A restore without a manifest (an agent that did not
 * send one) is taken to come from the checkpoint, as before. */
static bool from_checkpoint(ctx *x, const tpd_restore *r)
{
    const tpd_ckpt *l;
    if (!r->has_manifest) return true;
    if ((l = tpd_restore_source(x->pr, r)) == NULL) return false;
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (!s->load && s->seq >= x->armed->seq && same_digest(s, l)) return true;
    }
    return false;
}

static void collect_restores(ctx *x, restored *rs)
{
    memset(rs, 0, sizeof *rs);
    for (size_t i = 0; i < x->pr->nrestores; i++) {
        const tpd_restore *r = &x->pr->restores[i];
        bool ours;
        tpd_group g = TPD_G_OTHER;
        int k;
        if (r->seq < x->loaded->seq || r->what == NULL) continue;
        ours = from_checkpoint(x, r);
        if (!strcmp(r->what, "rng") && (k = rng_index(r->obj)) >= 0) {
            if (r->op && !strcmp(r->op, "seed")) {
                rs->rng_seeded[k] = true;
                rs->rng_seed_known[k] = r->has_seed;
                rs->rng_seed[k] = r->seed;
                rs->rng_set[k] = false; /* a later seed undoes an earlier restore */
            } else if (ours) {
                rs->rng_set[k] = true;
                rs->rng_seeded[k] = false;
            } else {
                rs->rng_other[k] = true;
                rs->rng_other_caller[k] = r->caller;
            }
            continue;
        }
        if (!strcmp(r->what, "module"))
            g = TPD_G_MODEL;
        else if (!strcmp(r->what, "optimizer"))
            g = TPD_G_OPTIMIZER;
        else if (!strcmp(r->what, "scheduler"))
            g = TPD_G_SCHEDULER;
        else if (!strcmp(r->what, "scaler"))
            g = TPD_G_SCALER;
        if (g == TPD_G_OTHER) continue;
        if (!ours) {
            rs->other_seen[g] = true;
            rs->other[g] = r->caller;
            continue;
        }
        rs->module |= g == TPD_G_MODEL;
        rs->optimizer |= g == TPD_G_OPTIMIZER;
        rs->scheduler |= g == TPD_G_SCHEDULER;
        rs->scaler |= g == TPD_G_SCALER;
    }
}

static bool group_restored(const restored *rs, tpd_group g)
{
    switch (g) {
    case TPD_G_MODEL:
        return rs->module;
    case TPD_G_OPTIMIZER:
        return rs->optimizer;
    case TPD_G_SCHEDULER:
        return rs->scheduler;
    case TPD_G_SCALER:
        return rs->scaler;
    default:
        return true;
    }
}

static const char *group_noun(tpd_group g)
{
    switch (g) {
    case TPD_G_MODEL:
        return "the model";
    case TPD_G_OPTIMIZER:
        return "the optimizer state";
    case TPD_G_SCHEDULER:
        return "the scheduler state";
    case TPD_G_SCALER:
        return "the GradScaler state";
    default:
        return tpd_group_name(g);
    }
}

/* reference picks what I had at the aligned point: its start-of-step
 * snapshot of step c (taken just before it was ended) when it exists, else its
 * snapshot at the save.  *same_point says the former. */
static const tpd_items *reference(ctx *x, int64_t *step, bool *same_point)
{
    static tpd_items none;
    for (size_t i = 0; i < x->pi->timeline.n; i++)
        if (x->pi->timeline.v[i].step == x->c && x->pi->timeline.v[i].group == TPD_G_MODEL) {
            *step = x->c;
            *same_point = true;
            return &x->pi->timeline;
        }
    for (size_t i = 0; i < x->pi->nsnaps; i++)
        if (!strcmp(x->pi->snaps[i].why, "save") && x->pi->snaps[i].step == x->c) {
            *step = x->c;
            *same_point = false;
            return &x->pi->snaps[i].items;
        }
    *same_point = false;
    *step = 0;
    return &none;
}

static const tpd_items *save_snapshot(ctx *x)
{
    for (size_t i = 0; i < x->pi->nsnaps; i++)
        if (!strcmp(x->pi->snaps[i].why, "save") && x->pi->snaps[i].step == x->c)
            return &x->pi->snaps[i].items;
    return NULL;
}

/* explain_after_load lists the components whose state R had at its first
 * step differs from I's at the same point, group by group. */
static bool explain_after_load(ctx *x, const restored *rs)
{
    int64_t rstep;
    bool same_point, any = false;
    /* same_point false: the reference is I's snapshot at the save, before the
     * forward pass that R's first snapshot follows; buffers updated in the
     * forward pass (batch-norm statistics) may then differ legitimately. */
    const tpd_items *ref = reference(x, &rstep, &same_point);
    tpd_cmp_opts exact = *x->o;
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++) {
        char lines[2048] = "";
        size_t used = 0;
        int ndiff = 0, nseen = 0;
        if (g == TPD_G_RNG) continue; /* RNGs are explained on their own */
        for (size_t i = 0; i < ref->n; i++) {
            const tpd_item *a = &ref->v[i], *b;
            char va[256], vb[256];
            if (a->step != rstep || (int)a->group != g) continue;
            nseen++;
            b = NULL;
            for (size_t k = 0; k < x->pr->timeline.n; k++) {
                const tpd_item *y = &x->pr->timeline.v[k];
                if (y->step == x->r0 && !strcmp(y->path, a->path)) {
                    b = y;
                    break;
                }
            }
            if (b != NULL && tpd_val_eq(&a->v, &b->v, &exact) == TPD_SAME) continue;
            ndiff++;
            if (ndiff > MAX_EXAMPLES) continue;
            val_str(b ? &b->v : NULL, vb, sizeof vb);
            val_str(&a->v, va, sizeof va);
            used +=
                (size_t)snprintf(lines + used, used < sizeof lines ? sizeof lines - used : 0,
                                 "\n      %s: %s after loading, %s when saved", a->path, vb, va);
            if (used >= sizeof lines) used = sizeof lines - 1;
        }
        if (ndiff == 0) continue;
        any = true;
        if (!group_restored(rs, (tpd_group)g) && rs->other_seen[g])
            add_why(x, "not_restored",
                    "%s was never loaded from the checkpoint: the %s load_state_dict after the "
                    "checkpoint load%s%s%s put back a state that no file of I's holds (the "
                    "object's own state, or one built in memory) (%d of %d components differ "
                    "from when it was saved)%s",
                    group_noun((tpd_group)g), tpd_group_name((tpd_group)g),
                    rs->other[g] ? ", by " : "", rs->other[g] ? rs->other[g] : "",
                    rs->other[g] ? "," : "", ndiff, nseen, lines);
        else if (!group_restored(rs, (tpd_group)g))
            add_why(x, "not_restored",
                    "%s was never loaded: no %s load_state_dict after the checkpoint load "
                    "(%d of %d components differ from when it was saved)%s",
                    group_noun((tpd_group)g), tpd_group_name((tpd_group)g), ndiff, nseen, lines);
        else
            add_why(x, "differs_after_load",
                    "%s was loaded, but %d of %d components differ from when it was saved "
                    "(changed after loading, or loaded from another state)%s",
                    group_noun((tpd_group)g), ndiff, nseen, lines);
    }
    return any;
}

/* ends_with reports whether path ends with key at a name boundary. */
static bool ends_with(const char *path, const char *key)
{
    size_t n = strlen(path), kl = strlen(key);
    return n >= kl && !strcmp(path + n - kl, key) &&
           (n == kl || path[n - kl - 1] == '.' || path[n - kl - 1] == ']');
}

/* manifest_has reports whether any of I's checkpoint files in the window
 * holds a leaf whose path ends with key and, when v is given, whose digest
 * equals v's.  Both are needed for tensors: equal small tensors (a counter
 * of 4 and Adam's step of 4) are common. */
static bool manifest_has(ctx *x, const tpd_val *v, const char *key)
{
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (s->load || s->seq < x->armed->seq) continue;
        for (size_t k = 0; k < s->manifest.n; k++) {
            const tpd_item *m = &s->manifest.v[k];
            if (key != NULL && !ends_with(m->path, key)) continue;
            if (v == NULL) return true;
            if ((m->v.kind == 't' || m->v.kind == 'd') && m->v.kind == v->kind &&
                !memcmp(m->v.digest, v->digest, TP_DIGEST_LEN))
                return true;
        }
    }
    return false;
}

/* within is the part of a component path after its root ("model.fc.w" and
 * "model[1].fc.w" give "fc.w"); for optimizer state, the state's own name
 * ("...exp_avg" gives "exp_avg"), since checkpoints key it by index. */
static const char *within(const char *path, tpd_group g)
{
    const char *p;
    if (g == TPD_G_OPTIMIZER) {
        p = strrchr(path, '.');
        return p ? p + 1 : path;
    }
    p = strchr(path, '.');
    return p ? p + 1 : path;
}

static bool explain_manifest(ctx *x)
{
    const tpd_items *snap = save_snapshot(x);
    bool sched = false, scaler = false, any = false;
    char model[1024] = "", opt[512] = "", rng[256] = "";
    int nmodel = 0, nopt = 0;
    if (snap == NULL) return false;
    for (size_t i = 0; i < snap->n; i++) {
        const tpd_item *a = &snap->v[i];
        switch (a->group) {
        case TPD_G_MODEL:
            if (a->v.kind == 't' && !manifest_has(x, &a->v, within(a->path, a->group)) &&
                nmodel++ < MAX_EXAMPLES)
                snprintf(model + strlen(model), sizeof model - strlen(model), "%s%s",
                         nmodel > 1 ? ", " : "", a->path);
            break;
        case TPD_G_OPTIMIZER:
            if (a->v.kind == 't' && !strncmp(a->path, "optimizer", 9) &&
                strstr(a->path, ".state.") && !manifest_has(x, &a->v, within(a->path, a->group)) &&
                nopt++ < MAX_EXAMPLES)
                snprintf(opt + strlen(opt), sizeof opt - strlen(opt), "%s%s", nopt > 1 ? ", " : "",
                         a->path);
            break;
        case TPD_G_SCHEDULER:
            sched = true;
            break;
        case TPD_G_SCALER:
            scaler = true;
            break;
        case TPD_G_RNG:
            if (!manifest_has(x, &a->v, NULL))
                snprintf(rng + strlen(rng), sizeof rng - strlen(rng), "%s%s", rng[0] ? ", " : "",
                         a->path);
            break;
        default:
            break;
        }
    }
    if (nmodel) {
        any = true;
        add_why(x, "not_in_checkpoint",
                "the checkpoint does not hold %d model tensor(s) the training has: %s%s "
                "(state outside the state_dict, such as a non-persistent buffer, is not saved)",
                nmodel, model, nmodel > MAX_EXAMPLES ? ", ..." : "");
    }
    if (nopt) {
        any = true;
        add_why(x, "not_in_checkpoint", "the checkpoint does not hold the optimizer state: %s%s",
                opt, nopt > MAX_EXAMPLES ? ", ..." : "");
    }
    if (sched && !manifest_has(x, NULL, "last_epoch")) {
        any = true;
        add_why(x, "not_in_checkpoint", "the checkpoint holds no scheduler state (no last_epoch)");
    }
    if (scaler && !manifest_has(x, NULL, "_growth_tracker")) {
        any = true;
        add_why(x, "not_in_checkpoint", "the checkpoint holds no GradScaler state");
    }
    if (rng[0])
        add_why(x, "rng_not_in_checkpoint", "the checkpoint does not hold the RNG state of %s",
                rng);
    return any;
}

static const char *seed_call(int k)
{
    static const char *calls[] = {"torch.manual_seed", "torch.cuda.manual_seed", "random.seed",
                                  "numpy.random.seed"};
    return calls[k];
}

static const char *set_call(int k)
{
    static const char *calls[] = {"torch.set_rng_state", "torch.cuda.set_rng_state",
                                  "random.setstate", "numpy.random.set_state"};
    return calls[k];
}

static bool explain_rng(ctx *x, const restored *rs, const tpd_div *d)
{
    int k = rng_index(d->path);
    if (d->group != TPD_G_RNG || k < 0) return false;
    if (rs->rng_seeded[k]) {
        char seed[32] = "";
        if (rs->rng_seed_known[k]) snprintf(seed, sizeof seed, "%lld", (long long)rs->rng_seed[k]);
        add_why(x, "rng_reseeded",
                "%s was re-seeded after loading: %s(%s) after the checkpoint load starts the "
                "random stream over instead of continuing it",
                d->path, seed_call(k), seed);
    } else if (!rs->rng_set[k] && rs->rng_other[k]) {
        add_why(x, "rng_not_restored",
                "%s was not restored from the checkpoint: the %s after the checkpoint load%s%s%s "
                "put back a state that no file of I's holds (a state kept in memory), and the "
                "runs diverge afterwards",
                d->path, set_call(k), rs->rng_other_caller[k] ? ", by " : "",
                rs->rng_other_caller[k] ? rs->rng_other_caller[k] : "",
                rs->rng_other_caller[k] ? "," : "");
    } else if (!rs->rng_set[k]) {
        add_why(x, "rng_not_restored",
                "%s was not restored after loading: no %s after the checkpoint load, and the "
                "runs diverge afterwards",
                d->path, set_call(k));
    } else {
        add_why(x, "rng_differs",
                "%s was restored after loading, but to a different state than the one it had "
                "at this point (random numbers drawn between the load and the first step?)",
                d->path);
    }
    return true;
}

/* holds_state reports whether checkpoint s holds training state: a tensor
 * or array, an RNG state (a digest leaf), or the counters of a scheduler or
 * GradScaler, whose state dicts hold no tensor.  A file without manifest
 * (an agent that sent none) is taken to hold some. */
static bool holds_state(const tpd_ckpt *s)
{
    static const char *const keys[] = {"last_epoch", "_step_count", "_growth_tracker", NULL};
    if (s->manifest.n == 0) return true;
    for (size_t i = 0; i < s->manifest.n; i++) {
        const tpd_item *m = &s->manifest.v[i];
        if (m->v.kind == 't' || m->v.kind == 'd') return true;
        for (int k = 0; keys[k]; k++)
            if (ends_with(m->path, keys[k])) return true;
    }
    return false;
}

static void explain(ctx *x, const tpd_cmp_result *cmp)
{
    restored rs;
    const tpd_div *d = &cmp->first;
    bool told = false;
    collect_restores(x, &rs);
    told |= explain_rng(x, &rs, d);
    told |= explain_after_load(x, &rs);
    told |= explain_manifest(x);
    /* the files I saved that R never loaded, among those that hold training
     * state (not a pickled configuration such as HF's training_args.bin) */
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        bool loaded = false;
        if (s->load || s->seq < x->armed->seq || !s->has_digest || !holds_state(s)) continue;
        for (size_t k = 0; k < x->pr->nckpts && !loaded; k++)
            loaded = x->pr->ckpts[k].load && same_digest(&x->pr->ckpts[k], s);
        if (!loaded && s->name)
            add_why(x, "not_loaded", "R never loaded %s, which I saved at step %lld", base(s->name),
                    (long long)s->step);
        else if (!loaded)
            add_why(x, "not_loaded",
                    "R never loaded the checkpoint I saved into a buffer at step %lld (whatever "
                    "file its bytes were written to)",
                    (long long)s->step);
    }
    if (d->group == TPD_G_DATA)
        add_why(x, "data_position",
                "R's training data differs from A's at sample %llu of the training stream (R's "
                "sample %llu): the data pipeline did not resume where it was (did the loader "
                "restart its epoch, skip too many or too few batches, or its sampler lose its "
                "position?)",
                (unsigned long long)x->sra.pos_a, (unsigned long long)x->sra.pos_b);
    if (!told && d->group != TPD_G_DATA)
        add_why(x, "outside_checkpoint",
                "everything the checkpoint restored matches the state when it was saved, yet the "
                "runs diverge: look outside the checkpoint -- the data pipeline position, plain "
                "Python attributes (a step counter, a hand-written schedule), nondeterministic "
                "kernels%s",
                x->pr != NULL && x->pr->world > 1
                    ? "; or another rank's state: this check follows rank 0, and every rank's "
                      "data and RNG feed the gradients the ranks average"
                    : "");
}

/* ---- the verdict ---- */

/* with_data merges the first divergence of the training data streams (sd,
 * stream.h) into cmp: the earlier in A's steps is the first, the data on a
 * tie (data comes first within a step).  An RNG divergence before it is the
 * first, as the RNG rule has it (tpd_compare walks on to the end when it
 * finds no other divergence, so its first_rng is then the earliest). */
static void with_data(tpd_cmp_result *cmp, const tpd_stream_div *sd)
{
    if (!sd->d.found || (cmp->first.found && cmp->first.step_a < sd->d.step_a)) return;
    if (!cmp->first_other.found || sd->d.step_a <= cmp->first_other.step_a)
        cmp->first_other = sd->d;
    cmp->first =
        cmp->first_rng.found && cmp->first_rng.step_a < sd->d.step_a ? cmp->first_rng : sd->d;
}

static tp_err nomem(ctx *x, tpd_result *out)
{
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    tpd_stream_div_free(&x->sab);
    tpd_stream_div_free(&x->sra);
    memset(out, 0, sizeof *out);
    return TP_ENOMEM;
}

tp_err tpd_verdict_resume(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    char buf[1024];
    const char *why;
    tpd_cmp_result ab, ra;
    const tpd_ckpt *foreign;
    memset(&x, 0, sizeof x);
    x.run = r;
    x.o = o;
    x.A = tpd_obs_exec(r, "A");
    x.B = tpd_obs_exec(r, "B");
    x.I = tpd_obs_exec(r, "I");
    x.R = tpd_obs_exec(r, "R");
    if (!x.A || !x.B || !x.I || !x.R)
        return error(&x, out, "the run lacks one of its four executions (A, B, I, R)");
    x.pa = tpd_obs_trainer(x.A);
    x.pb = tpd_obs_trainer(x.B);
    x.pi = tpd_obs_trainer(x.I);
    x.pr = tpd_obs_trainer(x.R);
    /* A baseline that loaded a checkpoint it did not write is the cause of
     * whatever else is wrong with it (a self-resuming script that found a
     * finished run's checkpoint runs no step), so it is named first. */
    for (int k = 0; k < 2; k++) {
        const tpd_proc *p = k ? x.pb : x.pa;
        if (p != NULL && (foreign = foreign_load(p)) != NULL)
            return error(&x, out,
                         "%s loaded %s, a checkpoint it did not write (left from an earlier run?): "
                         "move it away so that the baselines start from scratch",
                         role_name(k ? "B" : "A"), foreign->name ? foreign->name : "a buffer");
    }
    if ((why = exec_problem(x.A, x.pa, buf, sizeof buf)) ||
        (why = exec_problem(x.B, x.pb, buf, sizeof buf)))
        return error(&x, out, "%s", why);
    /* I: the save that armed the interruption */
    if (x.pi != NULL)
        for (size_t i = 0; i < x.pi->nckpts && !x.armed; i++)
            if (x.pi->ckpts[i].armed) x.armed = &x.pi->ckpts[i];
    if (x.armed == NULL) {
        if ((why = exec_problem(x.I, x.pi, buf, sizeof buf))) return error(&x, out, "%s", why);
        return error(&x, out, "I saved no checkpoint at or after step %lld: nothing to resume from",
                     (long long)(x.pi && x.pi->has_interrupt_at ? x.pi->interrupt_at : 0));
    }
    x.c = x.armed->step;
    if (x.pi->bye_reason == NULL || strcmp(x.pi->bye_reason, "interrupt") != 0) {
        if ((why = exec_problem(x.I, x.pi, buf, sizeof buf))) return error(&x, out, "%s", why);
        return error(&x, out,
                     "I reached no training step after its save at step %lld (the last one?): "
                     "there is nothing left to resume; pass --at with an earlier step",
                     (long long)x.c);
    }
    if ((why = exec_problem(x.I, x.pi, buf, sizeof buf)) ||
        (why = exec_problem(x.R, x.pr, buf, sizeof buf)))
        return error(&x, out, "%s", why);
    /* R: the load that aligns it */
    for (size_t i = 0; i < x.pr->nckpts && !x.loaded; i++) {
        const tpd_ckpt *l = &x.pr->ckpts[i];
        if (!l->load) continue;
        for (size_t k = 0; k < x.pi->nckpts; k++) {
            const tpd_ckpt *s = &x.pi->ckpts[k];
            if (!s->load && s->seq >= x.armed->seq && same_digest(s, l)) {
                x.loaded = l;
                x.saved = s;
                break;
            }
        }
    }
    if (x.loaded == NULL) {
        tpd_str l = {0};
        for (size_t i = 0; i < x.pr->nckpts; i++)
            if (x.pr->ckpts[i].load)
                tpd_str_printf(&l, "%s%s", l.len ? ", " : "", base(x.pr->ckpts[i].name));
        error(&x, out, "R loaded no checkpoint of I's (I saved %s at step %lld; R loaded %s)",
              base(x.armed->name), (long long)x.c, l.len ? l.s : "nothing");
        tpd_str_free(&l);
        return out->text ? TP_OK : TP_ENOMEM;
    }
    x.c = x.saved->step;
    x.r0 = x.loaded->step;
    head_lines(&x);

    tpd_compare(&x.pa->timeline, 0, &x.pb->timeline, 0, o, &ab);
    if (tpd_stream_compare(x.pa, 0, x.pb, 0, &x.sab) != TP_OK) return nomem(&x, out);
    with_data(&ab, &x.sab);
    if (ab.first.found || ab.first_unsure.found) {
        if (ab.first.found)
            add_why(&x, "nondeterministic",
                    "the two uninterrupted runs differ, so nondeterminism in the training itself "
                    "(the clock, the pid, unseeded randomness, nondeterministic kernels) prevents "
                    "a judgment of the resume");
        else
            add_why(&x, "values_needed",
                    "the baselines may differ within the declared tolerance, and statistics alone "
                    "cannot show they do not: rerun with --capture values");
        return finish(&x, TPD_ABSTAIN, &ab, "B", out);
    }
    tpd_compare(&x.pa->timeline, x.c, &x.pr->timeline, x.r0, o, &ra);
    if (tpd_stream_compare(x.pa, x.c, x.pr, x.r0, &x.sra) != TP_OK) return nomem(&x, out);
    with_data(&ra, &x.sra);
    if (ra.first.found) {
        explain(&x, &ra);
        return finish(&x, TPD_FAIL, &ra, "R", out);
    }
    if (ra.first_unsure.found) {
        add_why(&x, "values_needed",
                "with the declared tolerance, equality of %s cannot be shown from statistics "
                "alone: rerun with --capture values",
                ra.first_unsure.path);
        return finish(&x, TPD_ABSTAIN, &ra, "R", out);
    }
    tpd_str_printf(&x.head, "  R matched A at every step from %lld on (%lld steps compared",
                   (long long)x.c, (long long)ra.steps);
    if (x.sra.compared)
        tpd_str_printf(&x.head, ", %llu samples of the training stream",
                       (unsigned long long)x.sra.compared);
    tpd_str_puts(&x.head, ")\n");
    if (ra.first_rng.found)
        add_why(&x, "rng_unused",
                "%s differs at step %lld, but no observation depends on it: the runs do not "
                "diverge, so it does not matter",
                ra.first_rng.path, (long long)ra.first_rng.step_a);
    return finish(&x, TPD_PASS, NULL, "R", out);
}
