/* SPDX-License-Identifier: MIT
 * optcover.c -- files a process's cover events: which tensors each optimizer
 * steps and which parameters of the live modules held a gradient, just
 * before its first step, when its param groups change and when a parameter
 * first holds a gradient (the health check's optimizer coverage). */
#include <string.h>

#include "daemon/obs/obs.h"

/* array_at positions *r inside the array of field f and gives its length;
 * a field absent or nil reads as an empty array. */
static tp_err array_at(const tp_event *e, tp_field f, tp_mpr *r, uint32_t *n)
{
    *n = 0;
    if (tp_body_find(e, f, r) != TP_OK) return TP_OK;
    return tp_mpr_array(r, n) == TP_OK ? TP_OK : TP_EPROTO;
}

/* refs reads the parallel arrays (names, ids, groups when fgroup is not
 * NULL, shapes) into *out, *n tensors.  Errors: TP_ENOMEM, TP_EPROTO. */
static tp_err refs(tpd_arena *a, const tp_event *e, tp_field fname, tp_field fid,
                   const tp_field *fgroup, tp_field fshape, tpd_tensor_ref **out, uint32_t *n)
{
    tp_mpr rn, ri, rg, rs;
    uint32_t nn, ni, ng = 0, ns;
    tpd_tensor_ref *v;
    if (array_at(e, fname, &rn, &nn) != TP_OK || array_at(e, fid, &ri, &ni) != TP_OK ||
        array_at(e, fshape, &rs, &ns) != TP_OK)
        return TP_EPROTO;
    if (fgroup != NULL && array_at(e, *fgroup, &rg, &ng) != TP_OK) return TP_EPROTO;
    if (ni != nn || ns != nn || (fgroup != NULL && ng != nn)) return TP_EPROTO;
    *out = NULL;
    *n = nn;
    if (nn == 0) return TP_OK;
    if ((v = tpd_arena_alloc(a, sizeof *v * nn)) == NULL) return TP_ENOMEM;
    for (uint32_t i = 0; i < nn; i++) {
        const char *s;
        uint32_t len;
        if (tp_mpr_str(&rn, &s, &len) != TP_OK) return TP_EPROTO;
        if ((v[i].name = tpd_arena_strndup(a, s, len)) == NULL) return TP_ENOMEM;
        if (tp_mpr_str(&rs, &s, &len) != TP_OK) return TP_EPROTO;
        if ((v[i].shape = tpd_arena_strndup(a, s, len)) == NULL) return TP_ENOMEM;
        if (tp_mpr_int(&ri, &v[i].id) != TP_OK) return TP_EPROTO;
        v[i].group = -1;
        if (fgroup != NULL && tp_mpr_int(&rg, &v[i].group) != TP_OK) return TP_EPROTO;
    }
    *out = v;
    return TP_OK;
}

tp_err tpd_proc_add_cover(tpd_arena *a, tpd_proc *p, const tp_event *e)
{
    tpd_cover c, *v;
    const char *s;
    uint32_t n;
    static const tp_field groups = TPF_cover_groups;
    tp_err rc;
    memset(&c, 0, sizeof c);
    c.seq = e->seq;
    c.step = e->step;
    if (tp_body_int(e, TPF_cover_opt, &c.opt) != TP_OK) return TP_EPROTO;
    if (tp_body_str(e, TPF_cover_cls, &s, &n) != TP_OK) return TP_EPROTO;
    if ((c.cls = tpd_arena_strndup(a, s, n)) == NULL) return TP_ENOMEM;
    rc = refs(a, e, TPF_cover_params, TPF_cover_ids, &groups, TPF_cover_shapes, &c.params,
              &c.nparams);
    if (rc == TP_OK)
        rc = refs(a, e, TPF_cover_graded, TPF_cover_graded_ids, NULL, TPF_cover_graded_shapes,
                  &c.graded, &c.ngraded);
    if (rc != TP_OK) return rc;
    v = tpd_arena_grow(a, p->covers, &p->covers_cap, p->ncovers + 1, sizeof *v);
    if (v == NULL) return TP_ENOMEM;
    p->covers = v;
    p->covers[p->ncovers++] = c;
    return TP_OK;
}
