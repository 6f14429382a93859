/* SPDX-License-Identifier: MIT
 * pair.c -- two trainers compared in lockstep from step 0: the timelines,
 * the data streams, the step counts; and the lines a report gives the first
 * divergence.  Shared by the compare verdict and the offline diff. */
#include <string.h>

#include "daemon/checks/compare/pair.h"
#include "daemon/checks/render.h"

tp_err tpd_golden_pair(tpd_gpair *p, const char *la, const tpd_proc *a, const char *lb,
                       const tpd_proc *b, const tpd_cmp_opts *o)
{
    memset(p, 0, sizeof *p);
    p->la = la;
    p->lb = lb;
    p->a = a;
    p->b = b;
    tpd_compare(&a->timeline, 0, &b->timeline, 0, o, &p->cmp);
    if (tpd_stream_compare(a, 0, b, 0, &p->sd) != TP_OK) {
        tpd_stream_div_free(&p->sd);
        memset(p, 0, sizeof *p);
        return TP_ENOMEM;
    }
    tpd_stream_merge(&p->cmp, &p->sd);
    tpd_compare_steps(&p->cmp, p->steps, 0, a->steps, 0, b->steps);
    return TP_OK;
}

void tpd_golden_pair_free(tpd_gpair *p)
{
    tpd_stream_div_free(&p->sd);
}

const tpd_div *tpd_golden_first(const tpd_gpair *p)
{
    if (p->cmp.first.found) return &p->cmp.first;
    if (p->cmp.first_unsure.found) return &p->cmp.first_unsure;
    return NULL;
}

bool tpd_golden_counted(const tpd_gpair *p, const tpd_div *d)
{
    return d->a == &p->steps[0];
}

tp_err tpd_golden_divergences(tpd_divergences *all, const tpd_run *r, const tpd_gpair *p,
                              const tpd_div *d, const tpd_cmp_opts *o)
{
    bool n = tpd_golden_counted(p, d);
    return tpd_divergences_at(all, r, d, n ? NULL : &p->a->timeline, d->step_a,
                              n ? NULL : &p->b->timeline, d->step_b, o);
}

/* ---- the report ---- */

static void side_text(tpd_str *t, const tpd_gpair *p, const tpd_div *d, int k)
{
    const tpd_item *it = k ? d->b : d->a;
    if (tpd_golden_counted(p, d)) {
        int64_t n = it->v.i;
        tpd_str_printf(t, "%lld optimizer step%s", (long long)n, n == 1 ? "" : "s");
    } else {
        tpd_render_val(t, it ? &it->v : NULL);
    }
}

void tpd_golden_first_text(tpd_str *t, const tpd_gpair *p, const tpd_div *d,
                           const tpd_divergences *all, const char *title, const char *na,
                           const char *nb)
{
    tpd_str_printf(t, "\nfirst divergence%s  step %lld  %s\n", title, (long long)d->step_a,
                   d->path);
    tpd_str_printf(t, "    %-18s ", na);
    side_text(t, p, d, 0);
    tpd_str_printf(t, "\n    %-18s ", nb);
    side_text(t, p, d, 1);
    tpd_str_puts(t, "\n");
    if (all->n && all->v[0].has_errors) {
        tpd_str_puts(t, "    captured values    ");
        tpd_divergence_errors_text(t, &all->v[0]);
        tpd_str_puts(t, "\n");
    }
    tpd_divergences_others_text(t, all, 6);
}

void tpd_golden_argv_text(tpd_str *t, const char *argv_json)
{
    json_t *a = argv_json ? json_loads(argv_json, 0, NULL) : NULL;
    size_t i;
    json_t *w;
    json_array_foreach(a, i, w)
    {
        const char *s = json_string_value(w);
        if (s == NULL) continue;
        tpd_str_puts(t, i ? " " : "");
        if (s[0] && strpbrk(s, " \t'\"\\$") == NULL)
            tpd_str_puts(t, s);
        else
            tpd_str_printf(t, "'%s'", s);
    }
    json_decref(a);
}
