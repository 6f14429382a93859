/* SPDX-License-Identifier: MIT
 * provenance.c -- where a restore's content came from (see provenance.h). */
#include <string.h>

#include "daemon/checks/lockstep.h"
#include "daemon/checks/resume/provenance.h"

/* suffix reports whether path q ends with p at a name boundary ("optimizer.
 * param_groups[0].lr" ends with "param_groups[0].lr" and with "[0].lr"). */
static bool suffix(const char *q, const char *p)
{
    size_t nq = strlen(q), np = strlen(p);
    if (np > nq || strcmp(q + nq - np, p) != 0) return false;
    return np == nq || p[0] == '[' || q[nq - np - 1] == '.';
}

/* held reports whether manifest m holds leaf x: a tensor or digest leaf by
 * content wherever it sits, any other value by name and value.  A tensor
 * whose digest cannot be compared with the one under its name (digests of
 * different kinds, or none made) is taken to be held, as the content of a
 * restore without a manifest is. */
static bool held(const tpd_items *m, const tpd_item *x)
{
    static const tpd_cmp_opts exact = {0};
    for (size_t i = 0; i < m->n; i++) {
        const tpd_item *y = &m->v[i];
        if (y->v.kind != x->v.kind) continue;
        if (x->v.kind == 't' || x->v.kind == 'd') {
            if (tpd_digests_comparable(&x->v, &y->v)) {
                if (memcmp(x->v.digest, y->v.digest, TP_DIGEST_LEN) == 0) return true;
            } else if (suffix(y->path, x->path) && tpd_val_eq(&x->v, &y->v, &exact) == TPD_UNSURE) {
                return true;
            }
        } else if (suffix(y->path, x->path) && tpd_val_eq(&x->v, &y->v, &exact) == TPD_SAME) {
            return true;
        }
    }
    return false;
}

static bool holds_all(const tpd_items *m, const tpd_items *what)
{
    size_t n = 0;
    for (size_t i = 0; i < what->n; i++) {
        const tpd_item *x = &what->v[i];
        if (x->v.kind == 'v' && x->v.vtype == TP_V_NIL) continue;
        if (!held(m, x)) return false;
        n++;
    }
    return n > 0;
}

const tpd_ckpt *tpd_restore_source(const tpd_proc *p, const tpd_restore *r)
{
    if (!r->has_manifest) return NULL;
    for (size_t i = p->nckpts; i-- > 0;) {
        const tpd_ckpt *l = &p->ckpts[i];
        if (!l->load || l->error || l->seq > r->seq) continue;
        if (holds_all(&l->manifest, &r->manifest)) return l;
    }
    return NULL;
}
