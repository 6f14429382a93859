/* SPDX-License-Identifier: MIT
 * render.c -- values for humans and for JSON readers. */
#include <math.h>
#include <stdio.h>

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

static void json_num(tpd_str *b, double x)
{
    if (isfinite(x))
        tpd_str_printf(b, "%.17g", x);
    else
        tpd_str_puts(b, "null");
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

void tpd_render_val_json(tpd_str *b, const tpd_val *v)
{
    if (v == NULL) {
        tpd_str_puts(b, "null");
        return;
    }
    switch (v->kind) {
    case 't':
        tpd_str_puts(b, "{\"kind\":\"tensor\",\"dtype\":");
        tpd_str_jsonz(b, v->dtype);
        tpd_str_puts(b, ",\"shape\":");
        shape(b, v);
        tpd_str_puts(b, ",\"digest\":\"");
        tpd_render_hex(b, v->digest, 16);
        tpd_str_puts(b, "\",\"sum\":");
        json_num(b, v->stats.sum);
        tpd_str_puts(b, ",\"l2\":");
        json_num(b, v->stats.l2);
        tpd_str_puts(b, ",\"maxabs\":");
        json_num(b, v->stats.maxabs);
        tpd_str_printf(b, ",\"nonfinite\":%llu}", (unsigned long long)v->stats.nonfinite);
        break;
    case 'd':
        tpd_str_puts(b, "{\"kind\":\"digest\",\"digest\":\"");
        tpd_render_hex(b, v->digest, 16);
        tpd_str_printf(b, "\",\"items\":%llu}", (unsigned long long)v->n);
        break;
    case 'i':
        tpd_str_puts(b, "{\"kind\":\"ids\",\"digest\":\"");
        tpd_render_hex(b, v->digest, 16);
        tpd_str_printf(b, "\",\"count\":%llu,\"first\":[", (unsigned long long)v->n);
        for (uint64_t i = 0; i < v->n && i < 8; i++)
            tpd_str_printf(b, "%s%lld", i ? "," : "", (long long)v->ids[i]);
        tpd_str_puts(b, "]}");
        break;
    default:
        tpd_str_puts(b, "{\"kind\":\"value\",\"value\":");
        switch (v->vtype) {
        case TP_V_NIL:
            tpd_str_puts(b, "null");
            break;
        case TP_V_BOOL:
            tpd_str_puts(b, v->b ? "true" : "false");
            break;
        case TP_V_INT:
            tpd_str_printf(b, "%lld", (long long)v->i);
            break;
        case TP_V_FLOAT:
            json_num(b, v->f);
            break;
        case TP_V_STR:
            tpd_str_jsonz(b, v->s);
            break;
        }
        tpd_str_puts(b, "}");
    }
}

void tpd_render_comparison(tpd_str *b, const tpd_cmp_opts *o)
{
    if (o->tolerance)
        tpd_str_printf(b, "declared tolerance rtol=%g atol=%g", o->rtol, o->atol);
    else
        tpd_str_puts(b, "exact (equal digests)");
}

void tpd_render_comparison_json(tpd_str *b, const tpd_cmp_opts *o)
{
    if (o->tolerance)
        tpd_str_printf(b, "{\"mode\":\"tolerance\",\"rtol\":%.17g,\"atol\":%.17g}", o->rtol,
                       o->atol);
    else
        tpd_str_puts(b, "{\"mode\":\"exact\"}");
}

/* secs appends ns as seconds, or null when it is not a duration. */
static void secs(tpd_str *b, int64_t ns)
{
    if (ns < 0)
        tpd_str_puts(b, "null");
    else
        tpd_str_printf(b, "%.6f", (double)ns / 1e9);
}

static int64_t exec_wall_ns(const tpd_exec *e)
{
    return e->finished ? e->finished_ns - e->created_ns : -1;
}

void tpd_render_exec_cost_json(tpd_str *j, const tpd_exec *e)
{
    int64_t total = 0;
    tpd_str_puts(j, ",\"wall_s\":");
    secs(j, exec_wall_ns(e));
    tpd_str_puts(j, ",\"processes\":[");
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *p = &e->procs[i];
        tpd_str_printf(j, "%s{\"pid\":%lld,\"rank\":", i ? "," : "", (long long)p->pid);
        if (p->rank >= 0)
            tpd_str_printf(j, "%lld", (long long)p->rank);
        else
            tpd_str_puts(j, "null");
        tpd_str_printf(j, ",\"events\":%lld}", (long long)p->nevents);
        total += p->nevents;
    }
    tpd_str_printf(j, "],\"events\":%lld", (long long)total);
}

void tpd_render_wall_json(tpd_str *j, const tpd_run *r)
{
    int64_t check, execs = 0;
    if (r == NULL || r->judged_ns == 0) {
        tpd_str_puts(j, "null");
        return;
    }
    /* every execution, also one the report leaves out, ran inside the check */
    for (size_t i = 0; i < r->nexecs; i++)
        if (r->execs[i].finished) execs += exec_wall_ns(&r->execs[i]);
    check = r->judged_ns - r->created_ns;
    tpd_str_puts(j, "{\"check_s\":");
    secs(j, check);
    tpd_str_puts(j, ",\"executions_s\":");
    secs(j, execs);
    tpd_str_puts(j, ",\"ratio\":");
    if (check >= 0 && execs > 0)
        tpd_str_printf(j, "%.4f", (double)check / (double)execs);
    else
        tpd_str_puts(j, "null");
    tpd_str_puts(j, "}");
}

void tpd_render_execs_json(tpd_str *j, const tpd_exec *const *ex, const tpd_proc *const *px,
                           size_t n)
{
    bool first = true;
    tpd_str_puts(j, "[");
    for (size_t i = 0; i < n; i++) {
        if (ex[i] == NULL) continue;
        tpd_str_printf(j, "%s{\"role\":", first ? "" : ",");
        tpd_str_jsonz(j, ex[i]->role);
        tpd_str_printf(j, ",\"execution\":%lld,\"argv\":%s", (long long)ex[i]->id,
                       ex[i]->argv_json ? ex[i]->argv_json : "null");
        if (ex[i]->has_status) tpd_str_printf(j, ",\"exit_status\":%lld", (long long)ex[i]->status);
        if (ex[i]->has_signal) tpd_str_printf(j, ",\"exit_signal\":%lld", (long long)ex[i]->signal);
        if (px[i]) tpd_str_printf(j, ",\"steps\":%lld", (long long)px[i]->steps);
        tpd_render_exec_cost_json(j, ex[i]);
        tpd_str_puts(j, "}");
        first = false;
    }
    tpd_str_puts(j, "]");
}
