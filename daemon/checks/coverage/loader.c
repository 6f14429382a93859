/* SPDX-License-Identifier: MIT
 * loader.c -- which DataLoader the coverage audit follows (ctx.h).
 *
 * The samples a training consumed come from the loader whose batches fed
 * its backward calls, which need not be DataLoader 0: a framework may build
 * a loader it never iterates (the Hugging Face Trainer's, which accelerate
 * replaces by its prepared copy, a later DataLoader) and iterate others
 * that are no training (an evaluation after each epoch).  So, unless
 * --loader declares one: the only loader iterated; else the only one of
 * them with a pass that fed the training (checks/passes.h); else there is
 * no telling, and the verdict abstains and asks for --loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/coverage/ctx.h"
#include "daemon/checks/passes.h"

typedef tpd_cctx ctx;

/* slot is x's summary of loader l, added in order when new; NULL when out
 * of memory. */
static tpd_cov_loader *slot(ctx *x, size_t *cap, uint32_t l)
{
    size_t i = 0;
    while (i < x->nloaders && x->loaders[i].loader < l) i++;
    if (i < x->nloaders && x->loaders[i].loader == l) return &x->loaders[i];
    if (x->nloaders == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        tpd_cov_loader *v = tpd_arena_alloc(x->a, c * sizeof *v);
        if (v == NULL) return NULL;
        if (x->nloaders) memcpy(v, x->loaders, x->nloaders * sizeof *v);
        x->loaders = v;
        *cap = c;
    }
    memmove(&x->loaders[i + 1], &x->loaders[i], (x->nloaders - i) * sizeof *x->loaders);
    memset(&x->loaders[i], 0, sizeof *x->loaders);
    x->loaders[i].loader = l;
    x->nloaders++;
    return &x->loaders[i];
}

/* survey_loaders sums every process's passes into x->loaders. */
static tp_err survey_loaders(ctx *x)
{
    size_t cap = 0;
    for (size_t i = 0; i < x->ex->nprocs; i++) {
        const tpd_proc *p = &x->ex->procs[i];
        tpd_passes ps;
        if (p->nbatches == 0) continue;
        if (tpd_passes_build(p, &ps) != TP_OK) return TP_ENOMEM;
        for (size_t k = 0; k < ps.n; k++) {
            const tpd_pass *q = &ps.v[k];
            tpd_cov_loader *l = slot(x, &cap, q->loader);
            bool seen = false;
            if (l == NULL) {
                tpd_passes_free(&ps);
                return TP_ENOMEM;
            }
            for (size_t j = 0; j < k && !seen; j++) seen = ps.v[j].loader == q->loader;
            l->procs += !seen;
            l->batches += q->batches;
            l->backward += q->backward;
            l->train |= q->train;
        }
        tpd_passes_free(&ps);
    }
    return TP_OK;
}

/* list writes the loaders that satisfy want (all when NULL) as "1, 3 and
 * 5", with what each was when say, and "..." for those past the room of
 * buf (n >= 80, so that one fits whole); false when there are none. */
static bool list(const ctx *x, char *buf, size_t n, bool (*want)(const tpd_cov_loader *), bool say)
{
    size_t at = 0, k = 0, total = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < x->nloaders; i++) total += !want || want(&x->loaders[i]);
    for (size_t i = 0; i < x->nloaders; i++) {
        const tpd_cov_loader *l = &x->loaders[i];
        if (want && !want(l)) continue;
        if (at >= n || n - at < 72) { /* no room for one more: say there are more */
            if (at + 6 <= n) snprintf(buf + at, n - at, ", ...");
            break;
        }
        k++;
        at += (size_t)snprintf(buf + at, n - at, "%s%u",
                               k == 1       ? ""
                               : k == total ? " and "
                                            : ", ",
                               l->loader);
        if (say)
            at += (size_t)snprintf(buf + at, n - at, " (%lld batch(es), %s)", (long long)l->batches,
                                   l->train ? "fed backward calls" : "no backward");
    }
    return total > 0;
}

static bool trained(const tpd_cov_loader *l)
{
    return l->train;
}

static bool untrained(const tpd_cov_loader *l)
{
    return !l->train;
}

static size_t count(const ctx *x, bool (*want)(const tpd_cov_loader *))
{
    size_t n = 0;
    for (size_t i = 0; i < x->nloaders; i++) n += want(&x->loaders[i]);
    return n;
}

static const tpd_cov_loader *find(const ctx *x, int64_t l)
{
    for (size_t i = 0; i < x->nloaders; i++)
        if ((int64_t)x->loaders[i].loader == l) return &x->loaders[i];
    return NULL;
}

/* before says that the loaders numbered below l were never iterated, when
 * some were created (l > 0) and none of them was. */
static const char *before(const ctx *x, int64_t l, char *buf, size_t n)
{
    if (l <= 0 || x->loaders[0].loader != (uint32_t)l) return "";
    if (l == 1)
        snprintf(buf, n, "; DataLoader 0, created before it, was never iterated");
    else
        snprintf(buf, n, "; DataLoaders 0..%lld, created before it, were never iterated",
                 (long long)(l - 1));
    return buf;
}

const char *tpd_cctx_choose_loader(ctx *x, char *buf, size_t n, tpd_outcome *oc, tp_err *rc)
{
    char names[160], note[96], others[160];
    const tpd_cov_loader *l = NULL;
    *rc = TP_OK;
    x->loader = -1;
    if ((*rc = survey_loaders(x)) != TP_OK) return NULL;
    *oc = TPD_ERROR;
    if (x->d.has_loader) {
        if ((l = find(x, x->d.loader)) == NULL) {
            if (list(x, names, sizeof names, NULL, true))
                snprintf(buf, n,
                         "no process iterated DataLoader %lld (no batch observed); iterated: %s",
                         (long long)x->d.loader, names);
            else
                snprintf(buf, n, "no process iterated DataLoader %lld (no batch observed)",
                         (long long)x->d.loader);
            return buf;
        }
        x->loader = x->d.loader;
        snprintf(x->loader_from, sizeof x->loader_from, "declared (--loader %lld)",
                 (long long)x->loader);
        return NULL;
    }
    if (x->nloaders == 0) {
        snprintf(buf, n, "no process iterated a DataLoader (no batch observed)");
        return buf;
    }
    if (x->nloaders == 1) {
        l = &x->loaders[0];
        x->loader = l->loader;
        snprintf(x->loader_from, sizeof x->loader_from, "the only DataLoader iterated%s",
                 before(x, x->loader, note, sizeof note));
        return NULL;
    }
    *oc = TPD_ABSTAIN;
    if (count(x, trained) != 1) {
        list(x, names, sizeof names, NULL, count(x, trained) > 0);
        snprintf(buf, n,
                 "DataLoaders %s were iterated and %s: say which one to audit with --loader L",
                 names,
                 count(x, trained) ? "more than one fed backward calls"
                                   : "no backward call followed the batches of any");
        return buf;
    }
    for (size_t i = 0; i < x->nloaders; i++)
        if (x->loaders[i].train) l = &x->loaders[i];
    x->loader = l->loader;
    list(x, others, sizeof others, untrained, false);
    snprintf(x->loader_from, sizeof x->loader_from,
             "the only DataLoader whose batches fed backward calls (%s %s iterated too, with no "
             "backward call after %s batches: an evaluation, say)%s",
             others, count(x, untrained) == 1 ? "was" : "were",
             count(x, untrained) == 1 ? "its" : "their", before(x, x->loader, note, sizeof note));
    return NULL;
}
