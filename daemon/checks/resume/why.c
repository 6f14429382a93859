/* SPDX-License-Identifier: MIT
 * why.c -- the explanation of a resume FAIL from the evidence: the
 * state R had after loading against the state I had when it saved, the
 * restores R performed after the load and where their content came from,
 * the checkpoint's contents, the RNGs and the data position. */
#include <stdio.h>
#include <string.h>

#include "daemon/checks/render.h"
#include "daemon/checks/resume/ctx.h"
#include "daemon/checks/resume/provenance.h"

#define MAX_EXAMPLES 4

typedef tpd_rctx ctx;

static void val_str(const tpd_val *v, char *buf, size_t n)
{
    tpd_str b = {0};
    tpd_render_val(&b, v);
    snprintf(buf, n, "%s", b.s ? b.s : "?");
    tpd_str_free(&b);
}

/* What R restored after the checkpoint load.  A restore counts as one from
 * the checkpoint only when its content came from one of I's files
 * (provenance.h); the others (an object reloading its own state, an RNG
 * state kept in memory) are kept apart, with the function that made them. */
typedef struct restored {
    bool ours[TPD_G__COUNT];         /* group: restored from the checkpoint */
    bool other_seen[TPD_G__COUNT];   /* group: restored from elsewhere */
    const char *other[TPD_G__COUNT]; /* the caller of the last of those */
    bool rng_set[4];                 /* torch_cpu, cuda, python, numpy */
    bool rng_seeded[4];
    bool rng_seed_known[4];
    int64_t rng_seed[4];
    bool rng_other[4]; /* set from a state no file of I's holds */
    const char *rng_other_caller[4];
    /* group: the last load_state_dict from the checkpoint that reported
     * missing or unexpected keys (strict=False), unless a later one of the
     * same object matched every key; explained for the model */
    const tpd_restore *keys[TPD_G__COUNT];
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

/* tpd_resume_from_checkpoint reports whether restore r put back content of one of I's
 * files in the window.  A restore without a manifest (an agent that did not
 * send one) is taken to come from the checkpoint, as before. */
bool tpd_resume_from_checkpoint(const tpd_rctx *x, const tpd_restore *r)
{
    const tpd_ckpt *l;
    if (!r->has_manifest) return true;
    if ((l = tpd_restore_source(x->pr, r)) == NULL) return false;
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (!s->load && s->seq >= x->armed->seq && tpd_same_ckpt(s, l)) return true;
    }
    return false;
}

/* restore_group is the group a restore's `what` puts back (a module no
 * optimizer trains, `obj` module[<name>], its own), TPD_G_OTHER for an RNG
 * or anything unknown. */
static tpd_group restore_group(const char *what, const char *obj)
{
    static const struct {
        const char *what;
        tpd_group g;
    } t[] = {{"module", TPD_G_MODEL},
             {"optimizer", TPD_G_OPTIMIZER},
             {"scheduler", TPD_G_SCHEDULER},
             {"scaler", TPD_G_SCALER}};
    if (!strcmp(what, "module") && obj != NULL && !strncmp(obj, "module[", 7)) return TPD_G_MODULE;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(what, t[i].what)) return t[i].g;
    return TPD_G_OTHER;
}

static void collect_restores(ctx *x, restored *rs)
{
    memset(rs, 0, sizeof *rs);
    for (size_t i = 0; i < x->pr->nrestores; i++) {
        const tpd_restore *r = &x->pr->restores[i];
        bool ours;
        tpd_group g;
        int k;
        if (r->seq < x->loaded->seq || r->what == NULL) continue;
        ours = tpd_resume_from_checkpoint(x, r);
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
        if ((g = restore_group(r->what, r->obj)) == TPD_G_OTHER) continue;
        if (ours) {
            rs->ours[g] = true;
            if (r->keys >= 0 && (r->nmissing > 0 || r->nunexpected > 0))
                rs->keys[g] = r;
            else if (rs->keys[g] != NULL && r->obj != NULL && rs->keys[g]->obj != NULL &&
                     !strcmp(r->obj, rs->keys[g]->obj))
                rs->keys[g] = NULL;
        } else {
            rs->other_seen[g] = true;
            rs->other[g] = r->caller;
        }
    }
}

/* group_restored: the groups model..scaler (contiguous in tpd_group) are
 * restored by a load_state_dict; the others (data, RNGs, losses) count as
 * restored. */
static bool group_restored(const restored *rs, tpd_group g)
{
    return g >= TPD_G_MODEL && g <= TPD_G_SCALER ? rs->ours[g] : true;
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

/* tpd_resume_reference picks what I had at the aligned point: its start-of-step
 * snapshot of step c (taken just before it was ended) when it exists, else its
 * snapshot at the save.  *same_point says the former. */
const tpd_items *tpd_resume_reference(const tpd_rctx *x, int64_t *step, bool *same_point)
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

/* after_load is one group's comparison of R's state at its first step
 * (r0) with I's at the aligned point: how many of the group's components
 * the reference holds, how many of them differ, and the first few that do. */
typedef struct after_load {
    int nseen, ndiff;
    int nex;
    const tpd_item *ex_saved[MAX_EXAMPLES];
    const tpd_item *ex_loaded[MAX_EXAMPLES]; /* NULL: R has no such component */
} after_load;

static void compare_after_load(ctx *x, const tpd_items *ref, int64_t rstep, tpd_group g,
                               after_load *al)
{
    tpd_cmp_opts exact = *x->o;
    memset(al, 0, sizeof *al);
    for (size_t i = 0; i < ref->n; i++) {
        const tpd_item *a = &ref->v[i], *b;
        tpd_eq eq;
        if (a->step != rstep || a->group != g) continue;
        b = NULL;
        for (size_t k = 0; k < x->pr->timeline.n; k++) {
            const tpd_item *y = &x->pr->timeline.v[k];
            if (y->step == x->r0 && !strcmp(y->path, a->path)) {
                b = y;
                break;
            }
        }
        eq = b != NULL ? tpd_val_eq(&a->v, &b->v, &exact) : TPD_DIFF;
        /* digests of different kinds: neither shown equal nor different */
        if (eq == TPD_UNSURE && !tpd_digests_comparable(&a->v, &b->v)) continue;
        al->nseen++;
        if (eq == TPD_SAME) continue;
        al->ndiff++;
        if (al->nex < MAX_EXAMPLES) {
            al->ex_saved[al->nex] = a;
            al->ex_loaded[al->nex++] = b;
        }
    }
}

/* key_list writes the first few keys of a restore's list (n in all) as
 * "`a`, `b`, `c`, ...". */
static void key_list(char *buf, size_t size, const char *const *keys, int64_t n)
{
    size_t used = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < TPD_RESTORE_KEYS && keys[i] != NULL && shown < 3; i++, shown++) {
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s`%s`",
                                 shown ? ", " : "", keys[i]);
        if (used >= size) used = size - 1;
    }
    if (n > shown) snprintf(buf + used, used < size ? size - used : 0, ", ...");
}

/* key_prefix finds the prefix that turns keys of from into every kept key
 * of to ("_orig_mod." from "0.weight" to "_orig_mod.0.weight"): true, with
 * *p and *n the prefix, when each key of to kept is a key of from kept
 * under the same non-empty prefix.  It speaks for the keys kept only
 * (TPD_RESTORE_KEYS of each list); explain_keys says so when there were
 * more. */
static bool key_prefix(const char *const *from, const char *const *to, const char **p, size_t *n)
{
    size_t plen = 0;
    const char *pre = NULL;
    if (from[0] == NULL || to[0] == NULL) return false;
    for (int i = 0; i < TPD_RESTORE_KEYS && to[i] != NULL; i++) {
        size_t tl = strlen(to[i]), best = 0;
        bool found = false;
        /* the longest key of from that to[i] ends with after a '.' */
        for (int k = 0; k < TPD_RESTORE_KEYS && from[k] != NULL; k++) {
            size_t fl = strlen(from[k]);
            if (fl < tl && fl > best && !strcmp(to[i] + tl - fl, from[k]) &&
                to[i][tl - fl - 1] == '.') {
                best = fl;
                found = true;
            }
        }
        if (!found) return false;
        if (pre == NULL) {
            pre = to[i];
            plen = tl - best;
        } else if (tl - best != plen || strncmp(pre, to[i], plen) != 0) {
            return false;
        }
    }
    *p = pre;
    *n = plen;
    return true;
}

/* prefix_owner names what is known to prefix its keys so: torch.compile's
 * wrapper holds the module as `_orig_mod`, DistributedDataParallel and
 * DataParallel as `module`. */
static const char *prefix_owner(const char *p, size_t n)
{
    if (n == 10 && !strncmp(p, "_orig_mod.", n)) return ", as a torch.compile wrapper names them";
    if (n == 7 && !strncmp(p, "module.", n))
        return ", as DistributedDataParallel and DataParallel name them";
    return "";
}

/* explain_keys words a model load_state_dict that reported missing or
 * unexpected keys (strict=False) as the reason the model differs after the
 * load: it matched none of the checkpoint's keys, or only some, or found no
 * value for some of the model's.  lines are the examples. */
static void explain_keys(ctx *x, const tpd_restore *r, const after_load *al, const char *lines)
{
    char want[512], have[512], how[256] = "", part[1200];
    const char *p;
    size_t pn;
    int64_t matched = r->keys - r->nunexpected;
    key_list(want, sizeof want, r->missing, r->nmissing);
    key_list(have, sizeof have, r->unexpected, r->nunexpected);
    /* the keys kept are all there are when the counts do not exceed them */
    if (key_prefix(r->missing, r->unexpected, &p, &pn))
        snprintf(how, sizeof how, ": %s%s are the model's, under the prefix `%.*s`%s",
                 r->nunexpected <= TPD_RESTORE_KEYS ? "" : "the first of ",
                 matched <= 0 ? "the checkpoint's keys" : "the checkpoint's unmatched keys",
                 (int)pn, p, prefix_owner(p, pn));
    else if (key_prefix(r->unexpected, r->missing, &p, &pn))
        snprintf(how, sizeof how,
                 ": %sthe model's unmatched keys are the checkpoint's, under the prefix `%.*s`%s",
                 r->nmissing <= TPD_RESTORE_KEYS ? "" : "the first of ", (int)pn, p,
                 prefix_owner(p, pn));
    if (r->nunexpected > 0 && matched <= 0) {
        tpd_why_add(&x->why, "not_restored",
                    "the model was not restored: its load_state_dict (strict=False) after the "
                    "checkpoint load matched none of the checkpoint's %lld key%s, so it put "
                    "nothing back (the model expected %s; the checkpoint has %s%s) (%d of %d "
                    "components differ from when it was saved)%s",
                    (long long)r->keys, r->keys == 1 ? "" : "s", r->nmissing > 0 ? want : "no key",
                    have, how, al->ndiff, al->nseen, lines);
        return;
    }
    if (r->nmissing > 0 && r->nunexpected > 0)
        snprintf(part, sizeof part,
                 "the model's keys %s were not in it, and the checkpoint's %s have no place in "
                 "the model%s",
                 want, have, how);
    else if (r->nmissing > 0)
        snprintf(part, sizeof part, "the model's keys %s were not in it", want);
    else
        snprintf(part, sizeof part, "the checkpoint's %s have no place in the model", have);
    tpd_why_add(&x->why, "not_restored",
                "the model was only partly restored: its load_state_dict (strict=False) after the "
                "checkpoint load matched %lld of the checkpoint's %lld key%s (%s) (%d of %d "
                "components differ from when it was saved)%s",
                (long long)matched, (long long)r->keys, r->keys == 1 ? "" : "s", part, al->ndiff,
                al->nseen, lines);
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
    const tpd_items *ref = tpd_resume_reference(x, &rstep, &same_point);
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++) {
        char lines[2048] = "";
        size_t used = 0;
        after_load al;
        /* RNGs and untrained modules are explained on their own */
        if (g == TPD_G_RNG || g == TPD_G_MODULE) continue;
        compare_after_load(x, ref, rstep, (tpd_group)g, &al);
        for (int i = 0; i < al.nex; i++) {
            char va[256], vb[256];
            val_str(al.ex_loaded[i] ? &al.ex_loaded[i]->v : NULL, vb, sizeof vb);
            val_str(&al.ex_saved[i]->v, va, sizeof va);
            used += (size_t)snprintf(lines + used, used < sizeof lines ? sizeof lines - used : 0,
                                     "\n      %s: %s after loading, %s when saved",
                                     al.ex_saved[i]->path, vb, va);
            if (used >= sizeof lines) used = sizeof lines - 1;
        }
        if (al.ndiff == 0) continue;
        any = true;
        if (!group_restored(rs, (tpd_group)g) && rs->other_seen[g])
            tpd_why_add(&x->why, "not_restored",
                        "%s was never loaded from the checkpoint: the %s load_state_dict after the "
                        "checkpoint load%s%s%s put back a state that no file of I's holds (the "
                        "object's own state, or one built in memory) (%d of %d components differ "
                        "from when it was saved)%s",
                        group_noun((tpd_group)g), tpd_group_name((tpd_group)g),
                        rs->other[g] ? ", by " : "", rs->other[g] ? rs->other[g] : "",
                        rs->other[g] ? "," : "", al.ndiff, al.nseen, lines);
        else if (!group_restored(rs, (tpd_group)g))
            tpd_why_add(&x->why, "not_restored",
                        "%s was never loaded: no %s load_state_dict after the checkpoint load "
                        "(%d of %d components differ from when it was saved)%s",
                        group_noun((tpd_group)g), tpd_group_name((tpd_group)g), al.ndiff, al.nseen,
                        lines);
        else if (g == TPD_G_MODEL && rs->keys[g] != NULL)
            explain_keys(x, rs->keys[g], &al, lines);
        else
            tpd_why_add(&x->why, "differs_after_load",
                        "%s was loaded, but %d of %d components differ from when it was saved "
                        "(changed after loading, or loaded from another state)%s",
                        group_noun((tpd_group)g), al.ndiff, al.nseen, lines);
    }
    return any;
}

/* rng_restored words what R did to its RNGs after the load, the most
 * telling first: one re-seeded, one set from a state no file of I's holds,
 * one restored from the checkpoint, none touched. */
static const char *rng_restored(const restored *rs, const char **by)
{
    int k;
    *by = NULL;
    for (k = 0; k < 4; k++)
        if (rs->rng_seeded[k]) return "reseeded";
    for (k = 0; k < 4; k++)
        if (rs->rng_other[k] && !rs->rng_set[k]) {
            *by = rs->rng_other_caller[k];
            return "elsewhere";
        }
    for (k = 0; k < 4; k++)
        if (rs->rng_set[k]) return "checkpoint";
    return "no";
}

json_t *tpd_resume_after_load_json(tpd_rctx *x)
{
    json_t *arr;
    restored rs;
    int64_t rstep;
    bool same_point, bad = false;
    const tpd_items *ref;
    if (x->pi == NULL || x->pr == NULL || x->armed == NULL || x->loaded == NULL) return json_null();
    if ((arr = json_array()) == NULL) return NULL;
    collect_restores(x, &rs);
    ref = tpd_resume_reference(x, &rstep, &same_point);
    for (int g = TPD_G_MODEL; g <= TPD_G_RNG; g++) {
        json_t *o = json_object(), *ex = json_array();
        const char *restored_how, *by;
        after_load al;
        bool ob;
        compare_after_load(x, ref, rstep, (tpd_group)g, &al);
        if (g == TPD_G_RNG) {
            restored_how = rng_restored(&rs, &by);
        } else {
            restored_how = rs.ours[g] ? "checkpoint" : rs.other_seen[g] ? "elsewhere" : "no";
            by = rs.ours[g] ? NULL : rs.other[g];
        }
        ob = ex == NULL;
        for (int i = 0; i < al.nex && !ob; i++) {
            json_t *e = json_object();
            bool eb = !tpd_jset(e, "path", tpd_json_str(al.ex_saved[i]->path));
            eb |= !tpd_jset(e, "after_load",
                            tpd_json_val(al.ex_loaded[i] ? &al.ex_loaded[i]->v : NULL));
            eb |= !tpd_jset(e, "saved", tpd_json_val(&al.ex_saved[i]->v));
            ob |= !tpd_jpush(ex, tpd_jdone(e, eb));
        }
        ob |= !tpd_jset(o, "component", tpd_json_str(tpd_group_name((tpd_group)g)));
        ob |= !tpd_jset(o, "equal", al.nseen == 0 ? json_null() : tpd_json_bool(al.ndiff == 0));
        ob |= !tpd_jset(o, "compared", tpd_json_int(al.nseen));
        ob |= !tpd_jset(o, "differ", tpd_json_int(al.ndiff));
        ob |= !tpd_jset(o, "reference",
                        tpd_json_str(al.nseen == 0 ? NULL
                                     : same_point  ? "step_start"
                                                   : "save"));
        ob |= !tpd_jset(o, "restored", tpd_json_str(restored_how));
        ob |= !tpd_jset(o, "restored_by", tpd_json_str(by));
        ob |= !tpd_jset(o, "examples", ex);
        bad |= !tpd_jpush(arr, tpd_jdone(o, ob));
    }
    return tpd_jdone(arr, bad);
}

/* ends_with reports whether path ends with key at a name boundary. */
static bool ends_with(const char *path, const char *key)
{
    size_t n = strlen(path), kl = strlen(key);
    return n >= kl && !strcmp(path + n - kl, key) &&
           (n == kl || path[n - kl - 1] == '.' || path[n - kl - 1] == ']');
}

/* tpd_resume_manifest_has reports whether any of I's checkpoint files in the window
 * holds a leaf whose path ends with key and, when v is given, whose digest
 * equals v's.  Both are needed for tensors: equal small tensors (a counter
 * of 4 and Adam's step of 4) are common.  A digest that cannot be compared
 * with v's (of another kind, or none made) counts as equal under a key:
 * what cannot be shown missing is not reported missing. */
bool tpd_resume_manifest_has(const tpd_rctx *x, const tpd_val *v, const char *key)
{
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        if (s->load || s->seq < x->armed->seq) continue;
        for (size_t k = 0; k < s->manifest.n; k++) {
            const tpd_item *m = &s->manifest.v[k];
            if (key != NULL && !ends_with(m->path, key)) continue;
            if (v == NULL) return true;
            if ((m->v.kind == 't' || m->v.kind == 'd') && m->v.kind == v->kind &&
                ((key != NULL && !tpd_digests_comparable(&m->v, v)) ||
                 (tpd_digests_comparable(&m->v, v) &&
                  !memcmp(m->v.digest, v->digest, TP_DIGEST_LEN))))
                return true;
        }
    }
    return false;
}

/* tpd_resume_within is the part of a component path after its root ("model.fc.w" and
 * "model[1].fc.w" give "fc.w"); for optimizer state, the state's own name
 * ("...exp_avg" gives "exp_avg"), since checkpoints key it by index. */
const char *tpd_resume_within(const char *path, tpd_group g)
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
            if (a->v.kind == 't' &&
                !tpd_resume_manifest_has(x, &a->v, tpd_resume_within(a->path, a->group)) &&
                nmodel++ < MAX_EXAMPLES)
                snprintf(model + strlen(model), sizeof model - strlen(model), "%s%s",
                         nmodel > 1 ? ", " : "", a->path);
            break;
        case TPD_G_OPTIMIZER:
            if (a->v.kind == 't' && !strncmp(a->path, "optimizer", 9) &&
                strstr(a->path, ".state.") &&
                !tpd_resume_manifest_has(x, &a->v, tpd_resume_within(a->path, a->group)) &&
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
            if (!tpd_resume_manifest_has(x, &a->v, NULL))
                snprintf(rng + strlen(rng), sizeof rng - strlen(rng), "%s%s", rng[0] ? ", " : "",
                         a->path);
            break;
        default:
            break;
        }
    }
    if (nmodel) {
        any = true;
        tpd_why_add(&x->why, "not_in_checkpoint",
                    "the checkpoint does not hold %d model tensor(s) the training has: %s%s "
                    "(state outside the state_dict, such as a non-persistent buffer, is not saved)",
                    nmodel, model, nmodel > MAX_EXAMPLES ? ", ..." : "");
    }
    if (nopt) {
        any = true;
        tpd_why_add(&x->why, "not_in_checkpoint",
                    "the checkpoint does not hold the optimizer state: %s%s", opt,
                    nopt > MAX_EXAMPLES ? ", ..." : "");
    }
    if (sched && !tpd_resume_manifest_has(x, NULL, "last_epoch")) {
        any = true;
        tpd_why_add(&x->why, "not_in_checkpoint",
                    "the checkpoint holds no scheduler state (no last_epoch)");
    }
    if (scaler && !tpd_resume_manifest_has(x, NULL, "_growth_tracker")) {
        any = true;
        tpd_why_add(&x->why, "not_in_checkpoint", "the checkpoint holds no GradScaler state");
    }
    if (rng[0])
        tpd_why_add(&x->why, "rng_not_in_checkpoint",
                    "the checkpoint does not hold the RNG state of %s", rng);
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
        tpd_why_add(&x->why, "rng_reseeded",
                    "%s was re-seeded after loading: %s(%s) after the checkpoint load starts the "
                    "random stream over instead of continuing it",
                    d->path, seed_call(k), seed);
    } else if (!rs->rng_set[k] && rs->rng_other[k]) {
        tpd_why_add(
            &x->why, "rng_not_restored",
            "%s was not restored from the checkpoint: the %s after the checkpoint load%s%s%s "
            "put back a state that no file of I's holds (a state kept in memory), and the "
            "runs diverge afterwards",
            d->path, set_call(k), rs->rng_other_caller[k] ? ", by " : "",
            rs->rng_other_caller[k] ? rs->rng_other_caller[k] : "",
            rs->rng_other_caller[k] ? "," : "");
    } else if (!rs->rng_set[k]) {
        tpd_why_add(&x->why, "rng_not_restored",
                    "%s was not restored after loading: no %s after the checkpoint load, and the "
                    "runs diverge afterwards",
                    d->path, set_call(k));
    } else {
        tpd_why_add(&x->why, "rng_differs",
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

/* state_entry: an entry that is training state, as the save comparison
 * (saves.c) takes it: a tensor, an RNG state's digest or a number; strings
 * (a path such as Lightning's last_model_path), booleans and opaque objects
 * are not. */
static bool state_entry(const tpd_item *e)
{
    return e->v.kind == 't' || e->v.kind == 'd' ||
           (e->v.kind == 'v' && (e->v.vtype == TP_V_INT || e->v.vtype == TP_V_FLOAT));
}

/* holds_all_of: every state entry of a is in b, at the same path, the same. */
static bool holds_all_of(const tpd_ckpt *a, const tpd_ckpt *b)
{
    static const tpd_cmp_opts exact = {0};
    for (size_t i = 0; i < a->manifest.n; i++) {
        const tpd_item *e = &a->manifest.v[i], *o = NULL;
        if (!state_entry(e)) continue;
        for (size_t k = 0; k < b->manifest.n && o == NULL; k++)
            if (!strcmp(b->manifest.v[k].path, e->path)) o = &b->manifest.v[k];
        if (o == NULL || tpd_val_eq(&e->v, &o->v, &exact) != TPD_SAME) return false;
    }
    return true;
}

/* loaded_twin reports whether R loaded another of I's saves at s's step
 * that holds the same training state as s, entry by entry: Lightning's
 * ModelCheckpoint saves `epoch=...ckpt` and `last.ckpt` at the same step,
 * whose bytes differ in last_model_path alone, and R loading one of them
 * loaded what the other holds. */
static bool loaded_twin(const ctx *x, const tpd_ckpt *s)
{
    if (s->manifest.n == 0) return false;
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *t = &x->pi->ckpts[i];
        bool loaded = false;
        if (t == s || t->load || t->seq < x->armed->seq || t->step != s->step || !t->has_digest ||
            t->manifest.n == 0)
            continue;
        for (size_t k = 0; k < x->pr->nckpts && !loaded; k++)
            loaded = x->pr->ckpts[k].load && tpd_same_ckpt(&x->pr->ckpts[k], t);
        if (loaded && holds_all_of(s, t) && holds_all_of(t, s)) return true;
    }
    return false;
}

/* explain_steps names a difference in the number of optimizer steps A and R
 * trained from the aligned point, whatever the first divergence: a loop
 * that runs a different number of steps is a divergence of its own, and
 * says where to look (the step counter the loop runs by).  True when it is
 * the first divergence, which then needs no other explanation. */
static bool explain_steps(ctx *x, const tpd_div *d)
{
    int64_t both = x->na < x->nr ? x->na : x->nr, by = x->na - x->nr;
    if (x->na == x->nr) return false;
    if (by > 0)
        tpd_why_add(&x->why, "step_count",
                    "R trained %lld optimizer step%s from the checkpoint where A trained %lld: R "
                    "stopped %lld step%s early, so A's step %lld has no counterpart in R (its "
                    "step count or step numbering differs from A's: a step counter restored off "
                    "by one, or a loop bound that counts differently after the resume?)",
                    (long long)x->nr, x->nr == 1 ? "" : "s", (long long)x->na, (long long)by,
                    by == 1 ? "" : "s", (long long)(x->c + both));
    else
        tpd_why_add(&x->why, "step_count",
                    "R trained %lld optimizer step%s from the checkpoint where A trained %lld: R "
                    "went on %lld step%s after A's last (its step count or step numbering "
                    "differs from A's: a step counter not restored, or restored short?)",
                    (long long)x->nr, x->nr == 1 ? "" : "s", (long long)x->na, (long long)-by,
                    by == -1 ? "" : "s");
    return d->a == &x->steps[0];
}

void tpd_resume_explain(tpd_rctx *x, const tpd_cmp_result *cmp)
{
    restored rs;
    const tpd_div *d = &cmp->first;
    bool told = false;
    collect_restores(x, &rs);
    told |= explain_steps(x, d);
    told |= explain_rng(x, &rs, d);
    told |= explain_after_load(x, &rs);
    told |= tpd_resume_explain_modules(x);
    told |= explain_manifest(x);
    /* the files I saved that R never loaded, among those that hold training
     * state (not a pickled configuration such as HF's training_args.bin),
     * and whose state R did not load from a twin of theirs */
    for (size_t i = 0; i < x->pi->nckpts; i++) {
        const tpd_ckpt *s = &x->pi->ckpts[i];
        bool loaded = false;
        if (s->load || s->seq < x->armed->seq || !s->has_digest || !holds_state(s)) continue;
        for (size_t k = 0; k < x->pr->nckpts && !loaded; k++)
            loaded = x->pr->ckpts[k].load && tpd_same_ckpt(&x->pr->ckpts[k], s);
        if (!loaded) loaded = loaded_twin(x, s);
        if (!loaded && s->name)
            tpd_why_add(&x->why, "not_loaded", "R never loaded %s, which I saved at step %lld",
                        tpd_resume_base(s->name), (long long)s->step);
        else if (!loaded)
            tpd_why_add(
                &x->why, "not_loaded",
                "R never loaded the checkpoint I saved into a buffer at step %lld (whatever "
                "file its bytes were written to)",
                (long long)s->step);
    }
    if (d->group == TPD_G_DATA) tpd_resume_explain_data(x);
    if (!told && d->group != TPD_G_DATA)
        tpd_why_add(
            &x->why, "outside_checkpoint",
            "everything the checkpoint restored matches the state when it was saved, yet the "
            "runs diverge: look outside the checkpoint -- the data pipeline position, plain "
            "Python attributes (a step counter, a hand-written schedule)%s (A and B agree, so "
            "the training is deterministic where they were compared)",
            x->pr != NULL && x->pr->world > 1
                ? "; or another rank's state: this check follows rank 0, and every rank's "
                  "data and RNG feed the gradients the ranks average"
                : "");
}
