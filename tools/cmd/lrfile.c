/* SPDX-License-Identifier: MIT
 * lrfile.c -- reads the --lr-expect file (lrfile.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/cmd/lrfile.h"

void tpt_lr_free(tpt_lr_table *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->v[i].lrs);
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int cmp_line(const void *a, const void *b)
{
    const tpt_lr_line *p = a, *q = b;
    if (p->step != q->step) return p->step < q->step ? -1 : 1;
    return p->line < q->line ? -1 : p->line > q->line;
}

/* lr_parse reads one line's words (s, comment cut) into e: 0, 1 for a
 * blank line, -1 after saying why (path:line). */
static int lr_parse(const char *path, long ln, char *s, tpt_lr_line *e)
{
    char *w, *end, *save = NULL;
    size_t cap = 0;
    if ((w = strtok_r(s, " \t\r\n", &save)) == NULL) return 1;
    errno = 0;
    e->step = strtoll(w, &end, 10);
    e->line = ln;
    if (errno || *end || e->step < 0) {
        tpt_error("health: %s:%ld: '%s' is not a step (a whole number >= 0)", path, ln, w);
        return -1;
    }
    while ((w = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
        double v;
        errno = 0;
        v = strtod(w, &end);
        if (errno || end == w || *end || !isfinite(v)) {
            tpt_error("health: %s:%ld: '%s' is not a learning rate (a finite number)", path, ln, w);
            return -1;
        }
        if (e->nlrs == cap) {
            double *nv = realloc(e->lrs, (cap = cap ? cap * 2 : 4) * sizeof *nv);
            if (nv == NULL) {
                tpt_error("health: out of memory reading %s", path);
                return -1;
            }
            e->lrs = nv;
        }
        e->lrs[e->nlrs++] = v;
    }
    if (e->nlrs == 0) {
        tpt_error("health: %s:%ld: step %lld has no learning rate (a line is STEP LR [LR...], "
                  "one LR per param group)",
                  path, ln, e->step);
        return -1;
    }
    return 0;
}

int tpt_lr_read(const char *path, tpt_lr_table *t)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0;
    long ln = 0;
    int rc = 0;
    if (f == NULL) {
        tpt_error("health: --lr-expect: cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && getline(&buf, &cap, f) >= 0) {
        tpt_lr_line e = {0};
        char *hash = strchr(buf, '#');
        ln++;
        if (hash != NULL) *hash = '\0';
        if ((rc = lr_parse(path, ln, buf, &e)) != 0) {
            free(e.lrs);
            rc = rc > 0 ? 0 : -1;
            continue;
        }
        if (t->n == t->cap) {
            tpt_lr_line *nv = realloc(t->v, (t->cap = t->cap ? t->cap * 2 : 64) * sizeof *nv);
            if (nv == NULL) {
                free(e.lrs);
                tpt_error("health: out of memory reading %s", path);
                rc = -1;
                continue;
            }
            t->v = nv;
        }
        t->v[t->n++] = e;
    }
    if (rc == 0 && ferror(f)) {
        tpt_error("health: --lr-expect: cannot read %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(buf);
    fclose(f);
    if (rc == 0 && t->n == 0) {
        tpt_error("health: %s declares no step (lines 'STEP LR [LR...]')", path);
        rc = -1;
    }
    if (rc == 0) qsort(t->v, t->n, sizeof *t->v, cmp_line);
    for (size_t i = 1; rc == 0 && i < t->n; i++)
        if (t->v[i].step == t->v[i - 1].step) {
            tpt_error("health: %s:%ld: step %lld is declared twice (first at line %ld)", path,
                      t->v[i].line, t->v[i].step, t->v[i - 1].line);
            rc = -1;
        }
    if (rc != 0) tpt_lr_free(t);
    return rc;
}

json_t *tpt_lr_json(const tpt_lr_table *t)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < t->n; i++) {
        json_t *l = json_array(), *e;
        for (size_t k = 0; l != NULL && k < t->v[i].nlrs; k++)
            if (json_array_append_new(l, json_real(t->v[i].lrs[k])) != 0) {
                json_decref(l);
                l = NULL;
            }
        e = l != NULL ? json_pack("[I, o]", (json_int_t)t->v[i].step, l) : NULL;
        if (e == NULL || json_array_append_new(a, e) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}
