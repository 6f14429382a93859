/* SPDX-License-Identifier: MIT
 * render.c -- values for humans (text) and for JSON readers (jansson). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/render.h"

void tpd_render_hex(tpd_str *b, const uint8_t *d, int n)
{
    for (int i = 0; i < n; i++) tpd_str_printf(b, "%02x", d[i]);
}

static void shape(tpd_str *b, const tpd_val *v)
{
    tpd_str_puts(b, "[");
    for (uint32_t i = 0; i < v->ndim; i++)
        tpd_str_printf(b, "%s%lld", i ? "," : "", (long long)v->shape[i]);
    tpd_str_puts(b, "]");
}

void tpd_render_val(tpd_str *b, const tpd_val *v)
{
    if (v == NULL) {
        tpd_str_puts(b, "absent");
        return;
    }
    switch (v->kind) {
    case 't': {
        const char *dt = v->dtype ? v->dtype : "?";
        if (dt[0] == 't' && dt[1] == 'o' && dt[5] == '.') dt += 6; /* "torch." */
        tpd_str_printf(b, "%s", dt);
        shape(b, v);
        tpd_str_printf(b, " sum=%.9g l2=%.9g max|x|=%.9g", v->stats.sum, v->stats.l2,
                       v->stats.maxabs);
        if (v->stats.nonfinite)
            tpd_str_printf(b, " nonfinite=%llu", (unsigned long long)v->stats.nonfinite);
        tpd_str_puts(b, " digest ");
        tpd_render_hex(b, v->digest, 6);
        if (strcmp(tpd_val_dkind(v), TP_DKIND_XXH3) != 0)
            tpd_str_printf(b, " (%s)", tpd_val_dkind(v));
        break;
    }
    case 'd':
        tpd_str_puts(b, "digest ");
        tpd_render_hex(b, v->digest, 6);
        if (v->n > 1) tpd_str_printf(b, " (%llu items)", (unsigned long long)v->n);
        break;
    case 'i':
        tpd_str_puts(b, "[");
        for (uint64_t i = 0; i < v->n && i < 8; i++)
            tpd_str_printf(b, "%s%lld", i ? ", " : "", (long long)v->ids[i]);
        tpd_str_printf(b, "%s] (%llu ids)", v->n > 8 ? ", ..." : "", (unsigned long long)v->n);
        break;
    default:
        switch (v->vtype) {
        case TP_V_NIL:
            tpd_str_puts(b, "None");
            break;
        case TP_V_BOOL:
            tpd_str_puts(b, v->b ? "True" : "False");
            break;
        case TP_V_INT:
            tpd_str_printf(b, "%lld", (long long)v->i);
            break;
        case TP_V_FLOAT:
            tpd_str_printf(b, "%.9g", v->f);
            break;
        case TP_V_STR:
            tpd_str_printf(b, "'%s'", v->s);
            break;
        }
    }
}

void tpd_render_comparison(tpd_str *b, const tpd_cmp_opts *o)
{
    if (o->tolerance)
        tpd_str_printf(b, "declared tolerance rtol=%g atol=%g", o->rtol, o->atol);
    else
        tpd_str_puts(b, "exact (equal digests)");
}

/* dkind_where words a digest kind with where it was made, when known. */
static const char *dkind_where(const char *k)
{
    if (strcmp(k, TP_DKIND_XXH3) == 0) return " on the host";
    if (strcmp(k, TP_DKIND_DEV1) == 0) return " on the device";
    return "";
}

bool tpd_render_dkinds(tpd_str *t, const tpd_val *a, const char *la, const tpd_val *b,
                       const char *lb)
{
    const char *ka, *kb;
    bool na, nb;
    if (a == NULL || b == NULL || a->kind != 't' || b->kind != 't' || tpd_digests_comparable(a, b))
        return false;
    ka = tpd_val_dkind(a), kb = tpd_val_dkind(b);
    na = strcmp(ka, TP_DKIND_NONE) == 0, nb = strcmp(kb, TP_DKIND_NONE) == 0;
    if (na || nb)
        tpd_str_printf(t, "the agent could not digest it in %s%s%s (digest kind none)",
                       na ? la : lb, na && nb ? " or in " : "", na && nb ? lb : "");
    else
        tpd_str_printf(t,
                       "the digests are of different kinds (%s%s in %s, %s%s in %s) and cannot "
                       "be compared",
                       ka, dkind_where(ka), la, kb, dkind_where(kb), lb);
    return true;
}

bool tpd_why_dkinds(tpd_why *w, const tpd_div *d, const char *la, const char *lb)
{
    const tpd_val *a = d->a ? &d->a->v : NULL, *b = d->b ? &d->b->v : NULL;
    tpd_str t = {0};
    bool none;
    if (!d->found || !d->unsure || !tpd_render_dkinds(&t, a, la, b, lb)) return false;
    /* a digest of kind "none" names no blob: captured values are not read */
    none = strcmp(tpd_val_dkind(a), TP_DKIND_NONE) == 0 ||
           strcmp(tpd_val_dkind(b), TP_DKIND_NONE) == 0;
    tpd_why_add(w, "digest_kinds",
                "%s at step %lld: %s, so whether the tensor is the same in %s and in %s cannot be "
                "shown%s",
                d->path, (long long)d->step_a, tpd_str_cstr(&t), la, lb,
                none                 ? ""
                : a->blob && b->blob ? " (their captured values could not be read)"
                                     : ": rerun with --capture values to compare their values");
    tpd_str_free(&t);
    return true;
}

static int64_t exec_wall_ns(const tpd_exec *e)
{
    return e->finished ? e->finished_ns - e->created_ns : -1;
}

/* ---- as jansson values ---- */

static json_t *shape_json(const tpd_val *v)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (uint32_t i = 0; i < v->ndim; i++) bad |= !tpd_jpush(a, tpd_json_int(v->shape[i]));
    return tpd_jdone(a, bad);
}

static json_t *scalar_json(const tpd_val *v)
{
    switch (v->vtype) {
    case TP_V_BOOL:
        return tpd_json_bool(v->b);
    case TP_V_INT:
        return tpd_json_int(v->i);
    case TP_V_FLOAT:
        return tpd_json_num(v->f);
    case TP_V_STR:
        return tpd_json_str(v->s);
    default:
        return json_null();
    }
}

json_t *tpd_json_val(const tpd_val *v)
{
    json_t *o;
    bool bad;
    if (v == NULL) return json_null();
    bad = (o = json_object()) == NULL;
    switch (v->kind) {
    case 't':
        bad |= !tpd_jset(o, "kind", json_string("tensor"));
        bad |= !tpd_jset(o, "dtype", tpd_json_str(v->dtype));
        bad |= !tpd_jset(o, "shape", shape_json(v));
        bad |= !tpd_jset(o, "digest", tpd_json_hex(v->digest, 16));
        if (strcmp(tpd_val_dkind(v), TP_DKIND_XXH3) != 0)
            bad |= !tpd_jset(o, "digest_kind", json_string(tpd_val_dkind(v)));
        bad |= !tpd_jset(o, "sum", tpd_json_num(v->stats.sum));
        bad |= !tpd_jset(o, "l2", tpd_json_num(v->stats.l2));
        bad |= !tpd_jset(o, "maxabs", tpd_json_num(v->stats.maxabs));
        bad |= !tpd_jset(o, "nonfinite", tpd_json_int((int64_t)v->stats.nonfinite));
        break;
    case 'd':
        bad |= !tpd_jset(o, "kind", json_string("digest"));
        bad |= !tpd_jset(o, "digest", tpd_json_hex(v->digest, 16));
        bad |= !tpd_jset(o, "items", tpd_json_int((int64_t)v->n));
        break;
    case 'i': {
        json_t *first = json_array();
        bad |= first == NULL;
        for (uint64_t i = 0; i < v->n && i < 8; i++)
            bad |= !tpd_jpush(first, tpd_json_int(v->ids[i]));
        bad |= !tpd_jset(o, "kind", json_string("ids"));
        bad |= !tpd_jset(o, "digest", tpd_json_hex(v->digest, 16));
        bad |= !tpd_jset(o, "count", tpd_json_int((int64_t)v->n));
        bad |= !tpd_jset(o, "first", first);
        break;
    }
    default:
        bad |= !tpd_jset(o, "kind", json_string("value"));
        bad |= !tpd_jset(o, "value", scalar_json(v));
    }
    return tpd_jdone(o, bad);
}

json_t *tpd_json_comparison(const tpd_cmp_opts *o)
{
    if (!o->tolerance) return json_pack("{s:s}", "mode", "exact");
    return json_pack("{s:s, s:o, s:o}", "mode", "tolerance", "rtol", tpd_json_num(o->rtol), "atol",
                     tpd_json_num(o->atol));
}

/* secs_json is ns as seconds, or null when it is not a duration. */
static json_t *secs_json(int64_t ns)
{
    return ns < 0 ? json_null() : json_real((double)ns / 1e9);
}

bool tpd_json_exec_cost(json_t *o, const tpd_exec *e)
{
    int64_t total = 0;
    json_t *procs = json_array();
    bool bad = procs == NULL;
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *p = &e->procs[i];
        bad |= !tpd_jpush(procs, json_pack("{s:I, s:o, s:I}", "pid", (json_int_t)p->pid, "rank",
                                           p->rank >= 0 ? tpd_json_int(p->rank) : json_null(),
                                           "events", (json_int_t)p->nevents));
        total += p->nevents;
    }
    bad |= !tpd_jset(o, "wall_s", secs_json(exec_wall_ns(e)));
    bad |= !tpd_jset(o, "processes", procs);
    bad |= !tpd_jset(o, "events", tpd_json_int(total));
    return !bad;
}

json_t *tpd_json_wall(const tpd_run *r)
{
    int64_t check, execs = 0;
    if (r == NULL || r->judged_ns == 0) return json_null();
    /* every execution, also one the report leaves out, ran inside the check */
    for (size_t i = 0; i < r->nexecs; i++)
        if (r->execs[i].finished) execs += exec_wall_ns(&r->execs[i]);
    check = r->judged_ns - r->created_ns;
    return json_pack(
        "{s:o, s:o, s:o}", "check_s", secs_json(check), "executions_s", secs_json(execs), "ratio",
        check >= 0 && execs > 0 ? json_real((double)check / (double)execs) : json_null());
}

json_t *tpd_json_argv(const char *s)
{
    json_error_t err;
    json_t *v;
    if (s == NULL) return json_null();
    memset(&err, 0, sizeof err);
    if ((v = json_loads(s, JSON_DECODE_ANY, &err)) != NULL) return v;
    /* an allocation that fails before parsing starts leaves err as it was */
    if (json_error_code(&err) == json_error_out_of_memory || err.text[0] == '\0') return NULL;
    return json_null();
}

json_t *tpd_json_execs(const tpd_exec *const *ex, const tpd_proc *const *px, size_t n)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *o;
        if (ex[i] == NULL) continue;
        o = json_pack("{s:o, s:I, s:o}", "role", tpd_json_str(ex[i]->role), "execution",
                      (json_int_t)ex[i]->id, "argv", tpd_json_argv(ex[i]->argv_json));
        if (ex[i]->has_status) bad |= !tpd_jset(o, "exit_status", tpd_json_int(ex[i]->status));
        if (ex[i]->has_signal) bad |= !tpd_jset(o, "exit_signal", tpd_json_int(ex[i]->signal));
        if (px[i]) bad |= !tpd_jset(o, "steps", tpd_json_int(px[i]->steps));
        bad |= o == NULL || !tpd_json_exec_cost(o, ex[i]);
        bad |= !tpd_jpush(a, o);
    }
    return tpd_jdone(a, bad);
}
