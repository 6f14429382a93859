/* SPDX-License-Identifier: MIT
 * span.c -- the items of one step and group of a sorted timeline (ctx.h). */
#include <string.h>

#include "daemon/checks/health/ctx.h"

static int cmp_key(const tpd_item *it, int64_t step, tpd_group g)
{
    if (it->step != step) return it->step < step ? -1 : 1;
    if (it->group != g) return it->group < g ? -1 : 1;
    return 0;
}

tpd_hspan tpd_hspan_of(const tpd_items *l, int64_t step, tpd_group g)
{
    size_t lo = 0, hi = l->n, end;
    tpd_hspan s = {NULL, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(&l->v[mid], step, g) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (end = lo; end < l->n && cmp_key(&l->v[end], step, g) == 0; end++) continue;
    if (end > lo) {
        s.v = &l->v[lo];
        s.n = end - lo;
    }
    return s;
}

const tpd_item *tpd_hspan_find(tpd_hspan s, size_t hint, const char *path)
{
    if (hint < s.n && strcmp(s.v[hint].path, path) == 0) return &s.v[hint];
    for (size_t j = 0; j < s.n; j++)
        if (strcmp(s.v[j].path, path) == 0) return &s.v[j];
    return NULL;
}
