/* SPDX-License-Identifier: MIT
 * leafmemo.c -- leaf lists read with the memory of the last step's (see
 * leafmemo.h). */
#include <stdlib.h>
#include <string.h>

#include "daemon/obs/leafmemo.h"
#include "daemon/store/pack.h"

void tpd_leafmemo_free(tpd_leafmemo *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->v[i].bytes);
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

/* remember keeps in e the head and tail of the leaf in the n bytes at p
 * (read whole, as it) and the item it gave.  Nothing is kept when the
 * leaf does not split (it cannot, once read) or memory is short: the next
 * leaf there is read whole. */
static void remember(tpd_leafmemo_ent *e, const uint8_t *p, size_t n, const tpd_item *it)
{
    tp_mpr r;
    uint32_t len;
    unsigned nhead, nvar;
    size_t head, vars;
    uint8_t *b;
    free(e->bytes);
    e->bytes = NULL;
    tp_mpr_init(&r, p, n);
    if (!tpd_leaf_split(it->v.kind, &nhead, &nvar) || tp_mpr_array(&r, &len) != TP_OK) return;
    for (unsigned k = 0; k < nhead; k++)
        if (tp_mpr_skip(&r) != TP_OK) return;
    head = (size_t)(r.p - p);
    for (unsigned k = 0; k < nvar; k++)
        if (tp_mpr_skip(&r) != TP_OK) return;
    vars = (size_t)(r.p - p);
    if (n - vars > UINT32_MAX || head > UINT32_MAX || (b = malloc(head + (n - vars))) == NULL)
        return;
    memcpy(b, p, head);
    memcpy(b + head, p + vars, n - vars);
    e->bytes = b;
    e->head_len = (uint32_t)head;
    e->tail_len = (uint32_t)(n - vars);
    e->it = *it;
}

/* recall reads the leaf at r as e's head, its values and e's tail into
 * *it (its values left unread when !vals); false (r untouched) when it is
 * not that. */
static bool recall(tpd_arena *a, const tpd_leafmemo_ent *e, tp_mpr *r, tpd_item *it, bool vals,
                   tp_err *rc)
{
    tp_mpr v = *r;
    tp_leaf leaf;
    if (e->bytes == NULL || tp_mpr_left(r) < e->head_len ||
        memcmp(r->p, e->bytes, e->head_len) != 0)
        return false;
    v.p += e->head_len;
    memset(&leaf, 0, sizeof leaf);
    leaf.kind = e->it.v.kind;
    if (tp_leaf_read_vars(&v, leaf.kind, &leaf) != TP_OK || tp_mpr_left(&v) < e->tail_len ||
        memcmp(v.p, e->bytes + e->head_len, e->tail_len) != 0)
        return false;
    *it = e->it;
    *rc = vals ? tpd_leaf_vals(a, &leaf, &it->v) : TP_OK;
    r->p = v.p + e->tail_len;
    return true;
}

/* left: it is one of what leave says to read past. */
static bool left(unsigned leave, const tpd_item *it)
{
    return ((leave & TPD_LEAVE_INDUCED) && tpd_induced(it)) ||
           ((leave & TPD_LEAVE_BOOKKEEPING) && tpd_bookkeeping(it));
}

tp_err tpd_leaves_add_memo(tpd_arena *a, tpd_items *l, tp_mpr *r, int64_t step, uint64_t ord0,
                           tpd_leafmemo *m, unsigned leave)
{
    uint32_t n;
    tp_err rc;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    if (m != NULL && n > m->n) {
        tpd_leafmemo_ent *v = realloc(m->v, n * sizeof *v);
        if (v == NULL) return TP_ENOMEM;
        memset(v + m->n, 0, (n - m->n) * sizeof *v);
        m->v = v;
        m->n = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        tpd_item it;
        const uint8_t *start = r->p;
        /* a remembered leaf to read past: its values are not read */
        bool skip = m != NULL && m->v[i].bytes != NULL && left(leave, &m->v[i].it);
        rc = TP_OK;
        if (m == NULL || !recall(a, &m->v[i], r, &it, !skip, &rc)) {
            if ((rc = tpd_leaf_item(a, r, &it)) != TP_OK) return rc;
            if (m != NULL) remember(&m->v[i], start, (size_t)(r->p - start), &it);
        } else if (rc != TP_OK) {
            return rc;
        }
        if (left(leave, &it)) continue;
        it.step = step;
        it.ord = ord0 + i;
        if ((rc = tpd_items_push(a, l, &it)) != TP_OK) return rc;
    }
    return TP_OK;
}
