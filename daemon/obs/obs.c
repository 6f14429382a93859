/* SPDX-License-Identifier: MIT
 * obs.c -- builds a run's observations from stored events (see obs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/obs/leafmemo.h"
#include "daemon/obs/obs.h"
#include "daemon/store/rows.h"
#include "daemon/store/store.h"

static const struct {
    const char *name;
    tpd_group g;
} groups[] = {
    {"data", TPD_G_DATA},
    {"model", TPD_G_MODEL},
    {"module", TPD_G_MODULE},
    {"optimizer", TPD_G_OPTIMIZER},
    {"scheduler", TPD_G_SCHEDULER},
    {"scaler", TPD_G_SCALER},
    {"rng", TPD_G_RNG},
    {"loss", TPD_G_LOSS},
    {"grad", TPD_G_GRAD},
    {"update", TPD_G_UPDATE},
};

tpd_group tpd_group_of(const char *path)
{
    size_t n = strcspn(path, ".[");
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (strlen(groups[i].name) == n && strncmp(path, groups[i].name, n) == 0)
            return groups[i].g;
    return TPD_G_OTHER;
}

const char *tpd_group_name(tpd_group g)
{
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (groups[i].g == g) return groups[i].name;
    return "other";
}

/* path_hash is a 32-bit hash of path (XXH3's low bits), never 0 (0: none). */
static uint32_t path_hash(const char *path)
{
    uint32_t h = path ? (uint32_t)XXH3_64bits(path, strlen(path)) : 0;
    return h ? h : 1;
}

tp_err tpd_items_push(tpd_arena *a, tpd_items *l, const tpd_item *it)
{
    if (l->n == l->cap) {
        tpd_item *v = tpd_arena_grow(a, l->v, &l->cap, l->n + 1, sizeof *v);
        if (v == NULL) return TP_ENOMEM;
        l->v = v;
    }
    l->v[l->n] = *it;
    l->v[l->n++].phash = path_hash(it->path);
    return TP_OK;
}

bool tpd_same_path(const tpd_item *a, const tpd_item *b)
{
    if (a->path == b->path) return true;
    if (a->phash && b->phash && a->phash != b->phash) return false;
    return a->path && b->path && strcmp(a->path, b->path) == 0;
}

static int cmp_item(const void *x, const void *y)
{
    const tpd_item *a = x, *b = y;
    if (a->step != b->step) return a->step < b->step ? -1 : 1;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->ord != b->ord) return a->ord < b->ord ? -1 : 1;
    return 0;
}

/* sorted says whether the n items at v are in cmp_item's order. */
static bool sorted(const tpd_item *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_item(&v[i - 1], &v[i]) > 0) return false;
    return true;
}

void tpd_items_sort(tpd_items *l)
{
    bool by_step = true;
    /* a process's events come by seq and their steps do not go back, so
     * each step's items are together and only need sorting among
     * themselves: small sorts, not one of the whole run.  The order is
     * total (no two items have one ord), so the result is the same. */
    for (size_t i = 1; i < l->n && by_step; i++) by_step = l->v[i - 1].step <= l->v[i].step;
    if (!by_step) {
        if (l->n > 1) qsort(l->v, l->n, sizeof *l->v, cmp_item);
        return;
    }
    for (size_t lo = 0, hi; lo < l->n; lo = hi) {
        for (hi = lo + 1; hi < l->n && l->v[hi].step == l->v[lo].step; hi++) continue;
        if (!sorted(&l->v[lo], hi - lo)) qsort(&l->v[lo], hi - lo, sizeof *l->v, cmp_item);
    }
}

const char *tpd_val_dkind(const tpd_val *v)
{
    return v->kind == 't' && v->dkind[0] ? v->dkind : TP_DKIND_XXH3;
}

bool tpd_digests_comparable(const tpd_val *a, const tpd_val *b)
{
    const char *x = tpd_val_dkind(a), *y = tpd_val_dkind(b);
    return strcmp(x, y) == 0 && strcmp(x, TP_DKIND_NONE) != 0;
}

tp_err tpd_leaf_vals(tpd_arena *a, const tp_leaf *l, tpd_val *v)
{
    switch (l->kind) {
    case 't':
        memcpy(v->digest, l->digest, TP_DIGEST_LEN);
        v->stats = l->stats;
        return TP_OK;
    case 'd':
        memcpy(v->digest, l->digest, TP_DIGEST_LEN);
        v->n = l->nitems;
        return TP_OK;
    default:
        v->vtype = l->vtype;
        v->b = l->b;
        v->i = l->i;
        v->f = l->f;
        v->s = NULL;
        if (l->vtype == TP_V_STR && (v->s = tpd_arena_strndup(a, l->s, l->s_len)) == NULL)
            return TP_ENOMEM;
        return TP_OK;
    }
}

tp_err tpd_leaf_val(tpd_arena *a, const tp_leaf *l, tpd_val *v)
{
    memset(v, 0, sizeof *v);
    v->kind = l->kind;
    if (l->kind == 't') {
        /* the same at every step: held once */
        v->dtype = tpd_arena_intern(a, l->dtype, l->dtype_len);
        v->ndim = l->ndim;
        v->shape = tpd_arena_intern(a, l->shape, sizeof(int64_t) * l->ndim);
        if (l->dkind != NULL && l->dkind_len <= TP_DKIND_MAX)
            memcpy(v->dkind, l->dkind, l->dkind_len); /* NUL-terminated by the memset */
        v->blob = l->blob;
        if (v->dtype == NULL || v->shape == NULL) return TP_ENOMEM;
    }
    return tpd_leaf_vals(a, l, v);
}

tp_err tpd_leaf_item(tpd_arena *a, tp_mpr *r, tpd_item *it)
{
    tp_leaf leaf;
    if (tp_leaf_read(r, &leaf) != TP_OK) return TP_EPROTO;
    memset(it, 0, sizeof *it);
    it->path = tpd_arena_intern(a, leaf.path, leaf.path_len);
    if (it->path == NULL) return TP_ENOMEM;
    it->group = tpd_group_of(it->path);
    return tpd_leaf_val(a, &leaf, &it->v);
}

tp_err tpd_leaves_add(tpd_arena *a, tpd_items *l, tp_mpr *r, int64_t step, uint64_t ord0)
{
    return tpd_leaves_add_memo(a, l, r, step, ord0, NULL, 0);
}

static const char *body_str(tpd_arena *a, const tp_event *e, tp_field key)
{
    const char *s;
    uint32_t n;
    if (tp_body_str(e, key, &s, &n) != TP_OK) return NULL;
    return tpd_arena_strndup(a, s, n);
}

static int64_t body_int(const tp_event *e, tp_field key, int64_t dflt)
{
    int64_t v;
    return tp_body_int(e, key, &v) == TP_OK ? v : dflt;
}

static tp_err push_value(tpd_arena *a, tpd_proc *p, const tp_event *e, const char *path,
                         const tpd_val *v, uint64_t sub)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.step = e->step;
    it.ord = TPD_ORD(e->seq) + sub;
    it.path = tpd_arena_strdup(a, path);
    if (it.path == NULL) return TP_ENOMEM;
    it.group = tpd_group_of(path);
    it.v = *v;
    return tpd_items_push(a, &p->timeline, &it);
}

/* add_light files step among l's light steps, kept ascending. */
static tp_err add_light(tpd_arena *a, tpd_items *l, int64_t step)
{
    size_t k = l->nlight;
    int64_t *v;
    if (tpd_light(l, step)) return TP_OK;
    v = tpd_arena_grow(a, l->light, &l->light_cap, l->nlight + 1, sizeof *v);
    if (v == NULL) return TP_ENOMEM;
    l->light = v;
    while (k > 0 && v[k - 1] > step) {
        v[k] = v[k - 1];
        k--;
    }
    v[k] = step;
    l->nlight++;
    return TP_OK;
}

bool tpd_light(const tpd_items *l, int64_t step)
{
    size_t lo = 0, hi = l->nlight;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->light[mid] == step) return true;
        if (l->light[mid] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool tpd_step_count_path(const char *path)
{
    static const char tail[] = "._step_count";
    size_t n = strlen(path), t = sizeof tail - 1;
    return strcmp(path, tail + 1) == 0 || (n > t && strcmp(path + n - t, tail) == 0);
}

bool tpd_bookkeeping(const tpd_item *it)
{
    return it->group == TPD_G_SCHEDULER && tpd_step_count_path(it->path);
}

bool tpd_induced(const tpd_item *it)
{
    const char *p = it->path;
    if (it->group == TPD_G_MODEL || it->group == TPD_G_MODULE) return true;
    if (it->group != TPD_G_OPTIMIZER) return false;
    /* "optimizer.state..." or "optimizer[j].state..." */
    p += strlen("optimizer");
    if (*p == '[') p = strchr(p, ']') ? strchr(p, ']') + 1 : p;
    return strncmp(p, ".state", 6) == 0 && (p[6] == '.' || p[6] == '\0');
}

/* add_modules files the untrained modules a snapshot names (snapshot.modules
 * and module_classes), each name once per process. */
static tp_err add_modules(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    tp_mpr rn, rc;
    uint32_t nn, nc;
    if (tp_body_find(e, TPF_snapshot_modules, &rn) != TP_OK) return TP_OK;
    if (tp_mpr_array(&rn, &nn) != TP_OK ||
        tp_body_find(e, TPF_snapshot_module_classes, &rc) != TP_OK ||
        tp_mpr_array(&rc, &nc) != TP_OK || nc != nn)
        return TP_EPROTO;
    for (uint32_t i = 0; i < nn; i++) {
        const char *n, *c;
        uint32_t ln, lc;
        size_t k = 0;
        tpd_module *v;
        if (tp_mpr_str(&rn, &n, &ln) != TP_OK || tp_mpr_str(&rc, &c, &lc) != TP_OK)
            return TP_EPROTO;
        while (k < p->nmodules &&
               !(strlen(p->modules[k].name) == ln && !memcmp(p->modules[k].name, n, ln)))
            k++;
        if (k < p->nmodules) continue;
        v = tpd_arena_grow(a, p->modules, &p->modules_cap, p->nmodules + 1, sizeof *v);
        if (v == NULL) return TP_ENOMEM;
        p->modules = v;
        v[p->nmodules].name = tpd_arena_strndup(a, n, ln);
        v[p->nmodules].cls = tpd_arena_strndup(a, c, lc);
        if (v[p->nmodules].name == NULL || v[p->nmodules].cls == NULL) return TP_ENOMEM;
        p->nmodules++;
    }
    return TP_OK;
}

const tpd_module *tpd_proc_module(const tpd_proc *p, const char *path)
{
    size_t n;
    if (strncmp(path, "module[", 7) != 0) return NULL;
    n = strcspn(path + 7, "]");
    for (size_t k = 0; k < p->nmodules; k++)
        if (strlen(p->modules[k].name) == n && !strncmp(p->modules[k].name, path + 7, n))
            return &p->modules[k];
    return NULL;
}

/* The loader's memory of a process's two leaf lists that come at every
 * step: its snapshots' leaves and its gradients (leafmemo.h); NULL where
 * events are added one by one.  With it, what the load leaves out
 * (tpd_obs_keep: drop, ndrop). */
typedef struct memos {
    tpd_leafmemo snap, grads;
    const int64_t *drop;
    size_t ndrop;
} memos;

/* left_out says whether the induced components of a full start-of-step
 * snapshot at step are left out of the load (tpd_obs_keep). */
static bool left_out(const memos *m, int64_t step)
{
    return m != NULL && m->ndrop > 0 &&
           bsearch(&step, m->drop, m->ndrop, sizeof *m->drop, tpd_step_cmp) != NULL;
}

static tp_err add_snapshot(tpd_arena *a, tpd_proc *p, const tp_event *e, memos *m)
{
    tp_mpr r;
    const char *why = body_str(a, e, TPF_snapshot_why);
    tpd_snap *s;
    tp_err rc;
    if (why == NULL || tp_body_find(e, TPF_snapshot_leaves, &r) != TP_OK) return TP_EPROTO;
    if ((rc = add_modules(a, p, e)) != TP_OK) return rc;
    if (strcmp(why, "backward") == 0) {
        bool full = true;
        if (tp_body_bool(e, TPF_snapshot_full, &full) == TP_OK && !full &&
            add_light(a, &p->timeline, e->step) != TP_OK)
            return TP_ENOMEM;
        return tpd_leaves_add_memo(
            a, &p->timeline, &r, e->step, TPD_ORD(e->seq), m ? &m->snap : NULL,
            TPD_LEAVE_BOOKKEEPING | (full && left_out(m, e->step) ? TPD_LEAVE_INDUCED : 0u));
    }
    if (strcmp(why, "final") == 0) {
        /* the state after the last step is compared like a step of its own */
        tp_mpr again = r;
        rc = tpd_leaves_add_memo(a, &p->timeline, &again, e->step, TPD_ORD(e->seq),
                                 m ? &m->snap : NULL, TPD_LEAVE_BOOKKEEPING);
        if (rc != TP_OK) return rc;
    }
    s = tpd_arena_grow(a, p->snaps, &p->snaps_cap, p->nsnaps + 1, sizeof *s);
    if (s == NULL) return TP_ENOMEM;
    p->snaps = s;
    s = &p->snaps[p->nsnaps++];
    memset(s, 0, sizeof *s);
    s->seq = e->seq;
    s->step = e->step;
    s->why = why;
    return tpd_leaves_add_memo(a, &s->items, &r, e->step, 0, NULL, TPD_LEAVE_BOOKKEEPING);
}

static tp_err add_backward(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    char path[32];
    int64_t count = body_int(e, TPF_backward_count, 1);
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 'v';
    if (tp_body_f64(e, TPF_backward_loss, &v.f) == TP_OK)
        v.vtype = TP_V_FLOAT;
    else
        v.vtype = TP_V_NIL;
    if (count <= 1)
        snprintf(path, sizeof path, "loss");
    else
        snprintf(path, sizeof path, "loss[%lld]", (long long)(count - 1));
    return push_value(a, p, e, path, &v, 0);
}

static tp_err add_step(tpd_arena *a, tpd_proc *p, const tp_event *e, memos *m)
{
    const char *phase = body_str(a, e, TPF_step_phase);
    tp_mpr r;
    tpd_val v;
    bool b;
    tp_err rc;
    if (phase == NULL) return TP_EPROTO;
    if (strcmp(phase, "pre") == 0) {
        if (tp_body_find(e, TPF_step_grads, &r) == TP_OK)
            return tpd_leaves_add_memo(a, &p->timeline, &r, e->step, TPD_ORD(e->seq),
                                       m ? &m->grads : NULL, 0);
        return TP_OK;
    }
    if (e->step + 1 > p->steps) p->steps = e->step + 1;
    memset(&v, 0, sizeof v);
    v.kind = 'v';
    if (tp_body_f64(e, TPF_step_unorm, &v.f) == TP_OK) {
        v.vtype = TP_V_FLOAT;
        if ((rc = push_value(a, p, e, "update.norm", &v, 0)) != TP_OK) return rc;
    }
    if (tp_body_bool(e, TPF_step_skipped, &b) == TP_OK && b) {
        v.vtype = TP_V_BOOL;
        v.b = true;
        if ((rc = push_value(a, p, e, "update.skipped", &v, 1)) != TP_OK) return rc;
    }
    return TP_OK;
}

static tp_err add_ckpt(tpd_arena *a, tpd_proc *p, const tp_event *e, bool load)
{
    tpd_ckpt *c;
    tp_mpr r;
    bool b;
    c = tpd_arena_grow(a, p->ckpts, &p->ckpts_cap, p->nckpts + 1, sizeof *c);
    if (c == NULL) return TP_ENOMEM;
    p->ckpts = c;
    c = &p->ckpts[p->nckpts++];
    memset(c, 0, sizeof *c);
    c->seq = e->seq;
    c->step = e->step;
    c->load = load;
    c->api = body_str(a, e, TPF_saveload_api);
    c->target = body_str(a, e, TPF_saveload_target);
    c->name = body_str(a, e, TPF_saveload_name);
    c->via = body_str(a, e, TPF_saveload_via);
    c->error = body_str(a, e, TPF_saveload_error);
    c->has_digest = tp_body_digest(e, TPF_saveload_digest, c->digest) == TP_OK;
    c->armed = tp_body_bool(e, TPF_saveload_armed, &b) == TP_OK && b;
    if (tp_body_find(e, TPF_saveload_manifest, &r) == TP_OK)
        return tpd_leaves_add(a, &c->manifest, &r, e->step, 0);
    return TP_OK;
}

/* restore_keys keeps the first TPD_RESTORE_KEYS strings of a restore's key
 * list f in out (the rest NULL). */
static tp_err restore_keys(tpd_arena *a, const tp_event *e, tp_field f, const char **out)
{
    tp_mpr r;
    uint32_t n;
    if (tp_body_find(e, f, &r) != TP_OK) return TP_OK;
    if (tp_mpr_array(&r, &n) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < n && i < TPD_RESTORE_KEYS; i++) {
        const char *s;
        uint32_t len;
        if (tp_mpr_str(&r, &s, &len) != TP_OK) return TP_EPROTO;
        if ((out[i] = tpd_arena_strndup(a, s, len)) == NULL) return TP_ENOMEM;
    }
    return TP_OK;
}

static tp_err add_restore(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    tp_mpr m;
    tp_err rc;
    tpd_restore *r = tpd_arena_grow(a, p->restores, &p->restores_cap, p->nrestores + 1, sizeof *r);
    if (r == NULL) return TP_ENOMEM;
    p->restores = r;
    r = &p->restores[p->nrestores++];
    memset(r, 0, sizeof *r);
    r->seq = e->seq;
    r->step = e->step;
    r->what = body_str(a, e, TPF_restore_what);
    r->obj = body_str(a, e, TPF_restore_obj);
    r->op = body_str(a, e, TPF_restore_op);
    r->caller = body_str(a, e, TPF_restore_caller);
    r->has_load = tp_body_int(e, TPF_restore_load, &r->load) == TP_OK;
    r->has_seed = tp_body_int(e, TPF_restore_seed, &r->seed) == TP_OK;
    r->keys = body_int(e, TPF_restore_keys, -1);
    r->nmissing = body_int(e, TPF_restore_nmissing, 0);
    r->nunexpected = body_int(e, TPF_restore_nunexpected, 0);
    if ((rc = restore_keys(a, e, TPF_restore_missing, r->missing)) != TP_OK ||
        (rc = restore_keys(a, e, TPF_restore_unexpected, r->unexpected)) != TP_OK)
        return rc;
    if (tp_body_find(e, TPF_restore_manifest, &m) == TP_OK) {
        r->has_manifest = true;
        return tpd_leaves_add(a, &r->manifest, &m, e->step, 0);
    }
    return TP_OK;
}

/* add_event is tpd_proc_add_event, reading the leaf lists of every step
 * with mem's memory (NULL: none). */
static tp_err add_event(tpd_arena *a, tpd_proc *p, const tp_event *e, memos *mem)
{
    tp_err mrc = tpd_proc_add_mark(a, p, e);
    if (mrc != TP_OK) return mrc;
    switch (e->kind) {
    case TP_K_HELLO:
        p->has_interrupt_at = tp_body_int(e, TPF_hello_interrupt_at, &p->interrupt_at) == TP_OK;
        if (p->role == NULL) p->role = body_str(a, e, TPF_hello_role);
        p->host = body_str(a, e, TPF_hello_host);
        p->spool = body_str(a, e, TPF_hello_spool);
        return TP_OK;
    case TP_K_BYE:
        p->has_bye = true;
        p->bye_reason = body_str(a, e, TPF_bye_reason);
        p->bye_exc = body_str(a, e, TPF_bye_exc);
        p->sent = body_int(e, TPF_bye_sent, 0);
        p->dropped = body_int(e, TPF_bye_dropped, 0);
        p->errors = body_int(e, TPF_bye_errors, 0);
        return TP_OK;
    case TP_K_SNAPSHOT:
        return add_snapshot(a, p, e, mem);
    case TP_K_BACKWARD:
        return add_backward(a, p, e);
    case TP_K_STEP:
        return add_step(a, p, e, mem);
    case TP_K_BATCH: {
        /* not a timeline item: data is compared as a stream (checks/resume/stream.c) */
        return tpd_proc_add_batch(a, p, e);
    }
    case TP_K_SAVE:
        return add_ckpt(a, p, e, false);
    case TP_K_LOAD:
        return add_ckpt(a, p, e, true);
    case TP_K_RESTORE:
        return add_restore(a, p, e);
    case TP_K_COVER:
        return tpd_proc_add_cover(a, p, e);
    case TP_K_ERROR:
        if (p->first_error == NULL) {
            const char *w = body_str(a, e, TPF_error_where), *m = body_str(a, e, TPF_error_msg);
            size_t n = (w ? strlen(w) : 0) + (m ? strlen(m) : 0) + 3;
            char *s = tpd_arena_alloc(a, n);
            if (s == NULL) return TP_ENOMEM;
            snprintf(s, n, "%s: %s", w ? w : "?", m ? m : "?");
            p->first_error = s;
        }
        return TP_OK;
    default:
        return TP_OK;
    }
}

tp_err tpd_proc_add_event(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    return add_event(a, p, e, NULL);
}

int tpd_step_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* save_anchors files, at each step where a save's snapshot was taken and
 * the timeline has no model or optimizer state of its own (the state after
 * the last step, when the objects were gone by the exit snapshot), that
 * snapshot's induced components as anchors (obs.h, tpd_item).  The steps
 * that have such state are listed once, sorted, and looked up per save. */
int64_t *tpd_state_steps(const tpd_items *l, size_t room, size_t *n)
{
    int64_t *v = malloc((l->n + room + 1) * sizeof *v);
    *n = 0;
    if (v == NULL) return NULL;
    for (size_t i = 0; i < l->n; i++)
        if (tpd_induced(&l->v[i]) && (*n == 0 || v[*n - 1] != l->v[i].step))
            v[(*n)++] = l->v[i].step;
    qsort(v, *n, sizeof *v, tpd_step_cmp);
    return v;
}

/* save_anchors: a save at a step whose state the load left out (drop,
 * tpd_obs_keep) anchors nothing either: the run it is compared with is
 * light there, where no induced component is compared, anchors included. */
static tp_err save_anchors(tpd_arena *a, tpd_proc *p, const int64_t *drop, size_t ndrop)
{
    size_t nhave;
    int64_t *have = tpd_state_steps(&p->timeline, p->nsnaps + ndrop, &nhave);
    tp_err rc = TP_OK;
    if (have == NULL) return TP_ENOMEM;
    if (ndrop > 0) {
        memcpy(have + nhave, drop, ndrop * sizeof *have);
        nhave += ndrop;
        qsort(have, nhave, sizeof *have, tpd_step_cmp);
    }
    for (size_t k = p->nsnaps; k-- > 0 && rc == TP_OK;) {
        const tpd_snap *s = &p->snaps[k];
        int64_t step = s->step;
        if (strcmp(s->why, "save") != 0 || tpd_light(&p->timeline, step) ||
            bsearch(&step, have, nhave, sizeof *have, tpd_step_cmp))
            continue;
        for (size_t i = 0; i < s->items.n && rc == TP_OK; i++) {
            tpd_item it = s->items.v[i];
            if (!tpd_induced(&it)) continue;
            it.anchor = true;
            it.ord = TPD_ORD(s->seq) + i;
            rc = tpd_items_push(a, &p->timeline, &it);
        }
        /* the saves are walked newest first: an older one at this step
         * anchors nothing */
        have[nhave++] = step;
        qsort(have, nhave, sizeof *have, tpd_step_cmp);
    }
    free(have);
    return rc;
}

void tpd_proc_finish(tpd_proc *p)
{
    tpd_items_sort(&p->timeline);
}

/* ---- loading from the store ---- */

#define WHY(...) (why ? (void)snprintf(why, whylen, __VA_ARGS__) : (void)0)

/* The loader's state for one process's events. */
typedef struct events_ctx {
    tpd_arena *a;
    int64_t exec;
    tpd_proc *p;
    memos m;
    char *why;
    size_t whylen;
} events_ctx;

static tp_err on_event(void *arg, const tp_event *e)
{
    events_ctx *c = arg;
    char *why = c->why;
    size_t whylen = c->whylen;
    tp_err rc;
    if (e->kind == TP_K_BLOB || e->kind == TP_K_NONE || e->body == NULL) return TP_OK;
    rc = add_event(c->a, c->p, e, &c->m);
    if (rc == TP_ENOMEM)
        WHY("execution %lld, process %lld, event %llu (%s): out of memory holding the run's "
            "observations",
            (long long)c->exec, (long long)c->p->pid, (unsigned long long)e->seq,
            tp_kind_name(e->kind));
    else if (rc != TP_OK)
        WHY("execution %lld, process %lld, event %llu (%s): unreadable", (long long)c->exec,
            (long long)c->p->pid, (unsigned long long)e->seq, tp_kind_name(e->kind));
    return rc;
}

static tp_err load_events(tpd_store *db, tpd_arena *a, int64_t exec, tpd_proc *p,
                          const tpd_obs_keep *keep, char *why, size_t whylen)
{
    events_ctx c = {.a = a, .exec = exec, .p = p, .why = why, .whylen = whylen};
    tp_err rc;
    if (keep != NULL) {
        c.m.drop = keep->drop;
        c.m.ndrop = keep->ndrop;
    }
    rc = tpd_rows_events(db, exec, p->pid, on_event, &c, why, whylen);
    tpd_leafmemo_free(&c.m.snap);
    tpd_leafmemo_free(&c.m.grads);
    if (rc == TP_OK) rc = save_anchors(a, p, c.m.drop, c.m.ndrop);
    tpd_proc_finish(p);
    /* the timeline holds no more: its doubling's unused end goes back
     * before the next process or run loads */
    p->timeline.v =
        tpd_arena_fit(a, p->timeline.v, &p->timeline.cap, p->timeline.n, sizeof *p->timeline.v);
    return rc;
}

/* The loader's state for one execution's processes. */
typedef struct procs_ctx {
    tpd_arena *a;
    tpd_exec *e;
    size_t cap;
} procs_ctx;

static tp_err on_proc(void *arg, const tpd_proc_row *row)
{
    procs_ctx *c = arg;
    tpd_exec *e = c->e;
    tpd_proc *p = tpd_arena_grow(c->a, e->procs, &c->cap, e->nprocs + 1, sizeof *p);
    if (p == NULL) return TP_ENOMEM;
    e->procs = p;
    p = &e->procs[e->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = row->pid;
    p->ppid = row->ppid;
    p->rank = row->rank;
    p->world = row->world;
    p->role = tpd_arena_strdup(c->a, row->role);
    p->python = tpd_arena_strdup(c->a, row->python);
    p->torch = tpd_arena_strdup(c->a, row->torch);
    p->nevents = row->nevents;
    p->max_seq = row->max_seq;
    return TP_OK;
}

static tp_err load_procs(tpd_store *db, tpd_arena *a, tpd_exec *e, const tpd_obs_keep *keep,
                         char *why, size_t whylen)
{
    procs_ctx c = {a, e, 0};
    tp_err rc = tpd_rows_procs(db, e->id, on_proc, &c, why, whylen);
    for (size_t i = 0; rc == TP_OK && i < e->nprocs; i++)
        rc = load_events(db, a, e->id, &e->procs[i], keep, why, whylen);
    return rc;
}

static tp_err on_run(void *arg, const tpd_run_row *row)
{
    tpd_run *r = arg;
    r->name = tpd_arena_strdup(r->arena, row->name);
    r->check = tpd_arena_strdup(r->arena, row->check);
    r->params = tpd_arena_strdup(r->arena, row->params);
    r->created_ns = row->created_ns;
    return TP_OK;
}

/* The loader's state for a run's executions. */
typedef struct execs_ctx {
    tpd_run *r;
    size_t cap;
} execs_ctx;

static tp_err on_exec(void *arg, const tpd_exec_row *row)
{
    execs_ctx *c = arg;
    tpd_run *r = c->r;
    tpd_exec *e = tpd_arena_grow(r->arena, r->execs, &c->cap, r->nexecs + 1, sizeof *e);
    if (e == NULL) return TP_ENOMEM;
    r->execs = e;
    e = &r->execs[r->nexecs++];
    memset(e, 0, sizeof *e);
    e->id = row->id;
    e->role = tpd_arena_strdup(r->arena, row->role);
    e->argv_json = tpd_arena_strdup(r->arena, row->argv_json);
    e->created_ns = row->created_ns;
    e->finished = row->finished;
    e->finished_ns = row->finished_ns;
    e->has_status = row->has_status;
    e->status = row->status;
    e->has_signal = row->has_signal;
    e->signal = row->signal;
    e->run = r;
    return TP_OK;
}

tp_err tpd_obs_load(tpd_store *db, int64_t run, tpd_run **out, char *why, size_t whylen)
{
    return tpd_obs_load_keeping(db, run, NULL, out, why, whylen);
}

tp_err tpd_obs_load_keeping(tpd_store *db, int64_t run, const tpd_obs_keep *keep, tpd_run **out,
                            char *why, size_t whylen)
{
    tpd_run *r;
    tpd_arena *a = tpd_arena_create();
    execs_ctx c;
    tp_err rc;
    if (a == NULL || (r = tpd_arena_alloc(a, sizeof *r)) == NULL) {
        tpd_arena_destroy(a);
        return TP_ENOMEM;
    }
    r->arena = a;
    r->id = run;
    c.r = r;
    c.cap = 0;
    rc = tpd_rows_run(db, run, on_run, r, why, whylen);
    if (rc == TP_ENOENT) WHY("no run %lld", (long long)run);
    if (rc == TP_OK) rc = tpd_rows_execs(db, run, on_exec, &c, why, whylen);
    for (size_t i = 0; rc == TP_OK && i < r->nexecs; i++)
        rc = load_procs(db, a, &r->execs[i], keep, why, whylen);
    if (rc != TP_OK) {
        tpd_arena_destroy(a);
        return rc;
    }
    /* the end of the check's wall time (checks/render.h): its events are read */
    r->judged_ns = tpd_now_ns();
    *out = r;
    return TP_OK;
}

void tpd_obs_free(tpd_run *r)
{
    if (r) tpd_arena_destroy(r->arena);
}

const tpd_exec *tpd_obs_exec(const tpd_run *r, const char *role)
{
    for (size_t i = 0; i < r->nexecs; i++)
        if (r->execs[i].role && strcmp(r->execs[i].role, role) == 0) return &r->execs[i];
    return NULL;
}

static bool interrupted(const tpd_proc *p)
{
    return p->bye_reason != NULL && strcmp(p->bye_reason, "interrupt") == 0;
}

/* armed tells whether a save of p armed resume's interruption. */
static bool armed(const tpd_proc *p)
{
    for (size_t i = 0; i < p->nckpts; i++)
        if (p->ckpts[i].armed) return true;
    return false;
}

/* better: p is a better choice of trainer than b.  The agent's interruption
 * names the process resume's I is about, and among the processes it ended
 * (every rank: the daemon's end reaches those that did not save) the one
 * whose save armed it; then a process that stepped; then,
 * among ranks, the lowest, so that every execution of a multi-rank run is
 * followed on the same rank (their RNGs and data differ by rank); then the
 * process that stepped most. */
static bool better(const tpd_proc *p, const tpd_proc *b)
{
    if (interrupted(p) != interrupted(b)) return interrupted(p);
    if (armed(p) != armed(b)) return armed(p);
    if ((p->steps > 0) != (b->steps > 0)) return p->steps > 0;
    if (p->rank >= 0 && b->rank >= 0 && p->rank != b->rank) return p->rank < b->rank;
    if (p->steps != b->steps) return p->steps > b->steps;
    return p->nevents > b->nevents;
}

const tpd_proc *tpd_obs_trainer(const tpd_exec *e)
{
    const tpd_proc *best = NULL;
    for (size_t i = 0; e && i < e->nprocs; i++)
        if (best == NULL || better(&e->procs[i], best)) best = &e->procs[i];
    return best;
}
