/* SPDX-License-Identifier: MIT
 * verdict.c -- sample coverage: preconditions (ERROR), the loader
 * (loader.c), the ranks and the window, the universe and the padding the
 * declaration or the sampler implies (ABSTAIN when a needed one is
 * unknown), then one audit per epoch
 * (audit.c); the report is written by report.c, the evidence file
 * by evidence.c (ctx.h).
 *
 * String sample IDs (obs/batch.h) are interned here, exactly: every
 * distinct string of the run gets a number in the order first observed
 * (rank-major), and the audit runs on copies of the batches that carry
 * those numbers; the report names the strings again.  A declared universe
 * of N (or len(dataset)) is then a count of IDs, not the IDs 0..N-1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"
#include "daemon/checks/coverage/ctx.h"
#include "daemon/checks/coverage/verdict.h"
#include "daemon/checks/trust.h"
#include "daemon/obs/batch.h"

typedef tpd_cctx ctx;

static bool needs_universe(tpd_cov_policy p)
{
    return p != TPD_COV_NO_CROSS_RANK_OVERLAP;
}

/* ---- preconditions ---- */

bool tpd_cctx_of_loader(const ctx *x, const tpd_batch *b)
{
    return (int64_t)b->loader == x->loader;
}

/* find_ranks maps every process that iterated the loader to its rank;
 * returns a problem (ERROR) or NULL. */
static const char *find_ranks(ctx *x, char *buf, size_t n)
{
    int64_t world = 0, nprocs = 0, solo = -1;
    for (size_t i = 0; i < x->ex->nprocs; i++) {
        const tpd_proc *p = &x->ex->procs[i];
        for (size_t k = 0; k < p->nbatches; k++)
            if (tpd_cctx_of_loader(x, &p->batches[k])) {
                int64_t w = p->batches[k].world;
                if (world != 0 && w != world) {
                    snprintf(buf, n, "the ranks disagree on the world size (%lld and %lld)",
                             (long long)world, (long long)w);
                    return buf;
                }
                world = w;
                nprocs++;
                solo = (int64_t)i;
                break;
            }
    }
    if (nprocs == 0) { /* tpd_cctx_choose_loader chose one that was iterated */
        snprintf(buf, n, "no process iterated DataLoader %lld (no batch observed)",
                 (long long)x->loader);
        return buf;
    }
    if (world < 1) world = 1;
    if ((x->ranks = tpd_arena_alloc(x->a, sizeof *x->ranks * (size_t)world)) == NULL) return NULL;
    x->world = world;
    for (size_t i = 0; i < x->ex->nprocs; i++) {
        const tpd_proc *p = &x->ex->procs[i];
        int64_t r = -1;
        bool mine = false;
        for (size_t k = 0; k < p->nbatches && !mine; k++)
            if (tpd_cctx_of_loader(x, &p->batches[k])) mine = true, r = p->batches[k].rank;
        if (!mine) continue;
        if (r < 0) r = p->rank;
        if (r < 0 && nprocs == 1 && (int64_t)i == solo) r = 0;
        if (r < 0 || r >= world) {
            snprintf(buf, n, "process %lld reported rank %lld of a world of %lld",
                     (long long)p->pid, (long long)r, (long long)world);
            return buf;
        }
        if (x->ranks[r].p != NULL) {
            snprintf(buf, n, "processes %lld and %lld both reported rank %lld",
                     (long long)x->ranks[r].p->pid, (long long)p->pid, (long long)r);
            return buf;
        }
        x->ranks[r].p = p;
        x->ranks[r].batches = p->batches;
        x->ranks[r].nb = p->nbatches;
        x->ranks[r].rank = r;
    }
    for (int64_t r = 0; r < world; r++)
        if (x->ranks[r].p == NULL) {
            snprintf(buf, n, "rank %lld of %lld reported no batch of DataLoader %lld", (long long)r,
                     (long long)world, (long long)x->loader);
            return buf;
        }
    return NULL;
}

/* ---- string IDs ---- */

/* id_kinds finds a batch with string IDs and one with integer IDs (rank of
 * each, -1 when none). */
static void id_kinds(ctx *x, int64_t *str_rank, int64_t *int_rank)
{
    *str_rank = *int_rank = -1;
    for (int64_t r = 0; r < x->world; r++)
        for (size_t i = 0; i < x->ranks[r].nb; i++) {
            const tpd_batch *b = &x->ranks[r].batches[i];
            if (!tpd_cctx_of_loader(x, b) || b->end || !b->has_ids || b->n == 0) continue;
            if (tpd_batch_strs(b) != NULL) {
                if (*str_rank < 0) *str_rank = r;
            } else if (*int_rank < 0) {
                *int_rank = r;
            }
        }
}

/* intern_one returns the number of string s (key k), giving it the next one
 * when new; slot holds number + 1 (0: empty), cap a power of two. */
static int64_t intern_one(ctx *x, int64_t *slot, size_t cap, int64_t k, const char *s)
{
    size_t i = (size_t)(((uint64_t)k * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
    while (slot[i] != 0 && strcmp(x->strs[slot[i] - 1], s) != 0) i = (i + 1) & (cap - 1);
    if (slot[i] == 0) {
        x->strs[x->nstrs] = s;
        slot[i] = ++x->nstrs;
    }
    return slot[i] - 1;
}

/* intern copies every rank's batches of the loader with their string IDs
 * replaced by numbers (equal strings, equal numbers: the keys only lead to
 * the slot, the strings decide).  Errors: TP_ENOMEM. */
static tp_err intern(ctx *x)
{
    size_t total = 0, cap = 64;
    int64_t *slot;
    for (int64_t r = 0; r < x->world; r++)
        for (size_t i = 0; i < x->ranks[r].nb; i++)
            if (tpd_batch_strs(&x->ranks[r].batches[i])) total += x->ranks[r].batches[i].n;
    while (cap < total * 2) cap *= 2;
    x->strs = tpd_arena_alloc(x->a, sizeof *x->strs * (total ? total : 1));
    if (x->strs == NULL || (slot = calloc(cap, sizeof *slot)) == NULL) return TP_ENOMEM;
    for (int64_t r = 0; r < x->world; r++) {
        tpd_cov_rank *k = &x->ranks[r];
        tpd_batch *v = tpd_arena_alloc(x->a, sizeof *v * (k->nb ? k->nb : 1));
        if (v == NULL) goto nomem;
        for (size_t i = 0; i < k->nb; i++) {
            const char *const *s = tpd_batch_strs(&k->batches[i]);
            int64_t *ids;
            v[i] = k->batches[i];
            if (s == NULL || !tpd_cctx_of_loader(x, &v[i])) continue;
            if ((ids = tpd_arena_alloc(x->a, sizeof *ids * (v[i].n ? v[i].n : 1))) == NULL)
                goto nomem;
            for (uint32_t j = 0; j < v[i].n; j++)
                ids[j] = intern_one(x, slot, cap, k->batches[i].ids[j], s[j]);
            v[i].ids = ids;
        }
        k->batches = v;
    }
    free(slot);
    return TP_OK;
nomem:
    free(slot);
    return TP_ENOMEM;
}

/* survey fills the per-rank summaries and the epochs seen; returns the
 * first rank whose batches carry no IDs, or -1. */
static int64_t survey(ctx *x)
{
    int64_t noids = -1;
    for (int64_t r = 0; r < x->world; r++) {
        tpd_cov_rank *k = &x->ranks[r];
        for (size_t i = 0; i < k->nb; i++) {
            const tpd_batch *b = &k->batches[i];
            if (!tpd_cctx_of_loader(x, b)) continue;
            if (b->epoch + 1 > x->seen_epochs) x->seen_epochs = b->epoch + 1;
            if (b->sampler) k->sampler = b->sampler;
            if (b->end) continue;
            if (b->id_source) k->id_source = b->id_source;
            if (b->has_worker) k->workers = true;
            if (!b->has_ids) {
                if (noids < 0 && (x->d.epochs == 0 || b->epoch < x->d.epochs)) noids = r;
                continue;
            }
            k->nbatches++;
            k->observations += b->n;
        }
    }
    return noids;
}

/* first_batch is the first batch of the loader on any rank that has f. */
static const tpd_batch *first_batch(ctx *x, bool (*has)(const tpd_batch *))
{
    for (int64_t r = 0; r < x->world; r++)
        for (size_t i = 0; i < x->ranks[r].nb; i++) {
            const tpd_batch *b = &x->ranks[r].batches[i];
            if (tpd_cctx_of_loader(x, b) && has(b)) return b;
        }
    return NULL;
}

static bool has_len(const tpd_batch *b)
{
    return b->has_dataset_len && b->dataset_len >= 0;
}

static bool has_total(const tpd_batch *b)
{
    return b->has_dataset_len && b->has_total_size;
}

static bool has_shard(const tpd_batch *b)
{
    return b->shard != NULL;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* shard_padding settles the padding of a loader that accelerate's
 * BatchSamplerShard deals (b says how): with even_batches it fills the
 * epoch's last batches from the epoch's first samples, in the order the
 * shard's batch sampler gave them, cyclically when the epoch is short,
 * until every rank has as many full batches (data_loader.py,
 * _iter_with_no_split and _iter_with_split).  So for N samples in batches
 * of B over W ranks, ceil(N / B) batches:
 *   whole batches in turn:  ceil(ceil(N / B) / W) * W * B - N repeats
 *   split_batches:          ceil(N / B) * B - N repeats
 * of the order's first IDs, the DistributedSampler's rule but for how the
 * order is dealt (audit.h, tpd_cov_deal).  Without even_batches, or with
 * drop_last, it repeats none.  A shard that deals to other processes than
 * the ranks (a world the shard does not see), or re-shards a
 * DistributedSampler's share, has no rule here: a declared padding is
 * audited as a DistributedSampler's. */
static void shard_padding(ctx *x, const tpd_batch *b)
{
    bool split = strcmp(b->shard, "split") == 0;
    int64_t n = b->has_dataset_len && b->dataset_len > 0 ? b->dataset_len : 0, B = b->shard_batch,
            w = b->shard_ranks, p;
    char how[160];
    if (B < 1 || w != x->world || (split && B % w != 0) || b->has_total_size ||
        !b->has_dataset_len) {
        x->padding = x->d.has_padding ? x->d.padding : 0;
        snprintf(x->pad_from, sizeof x->pad_from,
                 "%s; accelerate's BatchSamplerShard %s, so no padding rule of its own applies",
                 x->d.has_padding ? "declared" : "not declared",
                 b->has_total_size     ? "re-shards a DistributedSampler's share"
                 : !b->has_dataset_len ? "deals a dataset with no len()"
                 : w != x->world       ? "deals to other processes than the ranks"
                                       : "says no batch size");
        return;
    }
    x->pad_scheme = "BatchSamplerShard";
    x->deal = split ? TPD_COV_DEAL_SPLIT : TPD_COV_DEAL_BATCHES;
    x->deal_batch = B;
    if (split)
        snprintf(how, sizeof how, "split_batches: every batch of %lld split among %lld ranks",
                 (long long)B, (long long)w);
    else
        snprintf(how, sizeof how, "batches of %lld dealt in turn to %lld ranks", (long long)B,
                 (long long)w);
    if (x->d.has_padding) {
        x->padding = x->d.padding;
        snprintf(x->pad_from, sizeof x->pad_from,
                 "declared; repeats of the epoch's first samples as accelerate's "
                 "BatchSamplerShard deals them, %s",
                 how);
        return;
    }
    if (!b->shard_even || b->shard_drop_last) {
        x->padding = 0;
        snprintf(x->pad_from, sizeof x->pad_from,
                 "not declared: accelerate's BatchSamplerShard, %s, pads nothing %s", how,
                 b->shard_drop_last ? "when it drops the last batches" : "without even_batches");
        return;
    }
    p = split ? ceil_div(n, B) * B : ceil_div(ceil_div(n, B), w) * w * B;
    x->padding = p - n;
    snprintf(x->pad_from, sizeof x->pad_from,
             "not declared: what accelerate's even_batches adds, repeating the epoch's first "
             "samples; BatchSamplerShard, %s, has %lld places for %lld samples",
             how, (long long)p, (long long)n);
}

static void universe(ctx *x)
{
    const tpd_batch *b;
    x->u.known = false;
    x->u_from = "not declared, and the dataset has no len()";
    if (x->d.has_universe) {
        x->u.known = true;
        x->u.n = x->d.universe;
        x->u.ranges = x->d.ranges;
        x->u.nranges = x->d.nranges;
        x->u_from = x->d.universe_file ? x->d.universe_file : "declared";
        if (x->d.universe_file) {
            char *s = tpd_arena_alloc(x->a, strlen(x->d.universe_file) + 32);
            if (s) sprintf(s, "declared in %s", x->d.universe_file);
            x->u_from = s ? s : "declared";
        }
    } else if ((b = first_batch(x, has_len)) != NULL) {
        x->u.known = true;
        x->u.n = b->dataset_len;
        x->u_from = "len(dataset)";
    }
    x->pad_scheme = "DistributedSampler";
    if ((b = first_batch(x, has_shard)) != NULL) {
        shard_padding(x, b);
    } else if (x->d.has_padding) {
        x->padding = x->d.padding;
        snprintf(x->pad_from, sizeof x->pad_from, "declared");
    } else if ((b = first_batch(x, has_total)) != NULL) {
        x->padding = b->total_size > b->dataset_len ? b->total_size - b->dataset_len : 0;
        snprintf(x->pad_from, sizeof x->pad_from,
                 "not declared: what the %s adds, total_size %lld - dataset length %lld",
                 b->sampler ? b->sampler : "sampler", (long long)b->total_size,
                 (long long)b->dataset_len);
    } else {
        x->padding = 0;
        snprintf(x->pad_from, sizeof x->pad_from,
                 "not declared, and no DistributedSampler to imply one");
    }
}

/* gather builds epoch ep's view: every rank's batches with IDs, in the
 * order they were returned; complete when every rank's iterator ended. */
static tp_err gather(ctx *x, uint32_t ep, const tpd_batch **v, size_t *first, tpd_cov_epoch *e)
{
    size_t n = 0;
    e->complete = true;
    for (int64_t r = 0; r < x->world; r++) {
        bool ended = false;
        first[r] = n;
        for (size_t i = 0; i < x->ranks[r].nb; i++) {
            const tpd_batch *b = &x->ranks[r].batches[i];
            if (!tpd_cctx_of_loader(x, b) || b->epoch != ep) continue;
            if (b->end)
                ended = true;
            else if (b->has_ids)
                v[n++] = b;
        }
        if (!ended) e->complete = false;
    }
    first[x->world] = n;
    e->epoch = ep;
    e->nranks = x->world;
    e->batches = v;
    e->first = first;
    return TP_OK;
}

/* first_incomplete_rank names a rank whose iterator did not end epoch ep. */
static int64_t first_incomplete_rank(ctx *x, uint32_t ep)
{
    for (int64_t r = 0; r < x->world; r++) {
        bool ended = false;
        for (size_t i = 0; i < x->ranks[r].nb && !ended; i++) {
            const tpd_batch *b = &x->ranks[r].batches[i];
            ended = tpd_cctx_of_loader(x, b) && b->epoch == ep && b->end;
        }
        if (!ended) return r;
    }
    return -1;
}

/* add sums an epoch's counts into the window's. */
static void add(tpd_cov_counts *t, const tpd_cov_counts *c)
{
    t->observations += c->observations;
    t->distinct += c->distinct;
    t->repeats += c->repeats;
    t->same_rank += c->same_rank;
    t->cross_rank += c->cross_rank;
    t->unexpected += c->unexpected;
    t->missing += c->missing;
    t->violations += c->violations;
}

/* audit audits every epoch of the window (all of them, so the counts are
 * whole); the first violation, in epoch order, is the outcome. */
static tp_err audit(ctx *x, tpd_result *out)
{
    tpd_cov_opts o = {x->d.padding_exact, (int)x->d.examples, x->strs != NULL, x->deal,
                      x->deal_batch};
    const tpd_batch **v;
    size_t *first, nb = 0;
    int64_t incomplete = -1;
    tpd_cov_finding f, found;
    tp_err rc;
    for (int64_t r = 0; r < x->world; r++) nb += x->ranks[r].nb;
    v = tpd_arena_alloc(x->a, sizeof *v * (nb ? nb : 1));
    first = tpd_arena_alloc(x->a, sizeof *first * (size_t)(x->world + 1));
    x->pad_seen = tpd_arena_alloc(x->a, sizeof *x->pad_seen * (size_t)(x->window ? x->window : 1));
    if (v == NULL || first == NULL || x->pad_seen == NULL) return TP_ENOMEM;
    rc = tpd_cov_auditor_open(&x->au, x->d.policy, &x->u,
                              x->d.policy == TPD_COV_EXPECTED_PADDING ? x->padding : 0, &o);
    if (rc == TP_EINVAL)
        return tpd_cctx_say(x, TPD_ABSTAIN, out, "a universe of %lld IDs is too large to audit",
                            (long long)x->u.n);
    if (rc != TP_OK) return rc;
    memset(&found, 0, sizeof found);
    for (int64_t ep = 0; ep < x->window; ep++) {
        tpd_cov_epoch e;
        tpd_cov_counts c;
        gather(x, (uint32_t)ep, v, first, &e);
        if ((rc = tpd_cov_audit(x->au, &e, &f, &c)) != TP_OK) return rc;
        x->pad_seen[x->audited++] = c.repeats;
        add(&x->total, &c);
        if (f.path != NULL && found.path == NULL) found = f;
        if (!e.complete && incomplete < 0) incomplete = ep;
    }
    if (found.path != NULL) {
        tpd_str_printf(&x->head, "  %s does not hold\n", tpd_cov_policy_name(x->d.policy));
        return tpd_cctx_finish(x, TPD_FAIL, &found, out);
    }
    if (incomplete >= 0) {
        int64_t r = first_incomplete_rank(x, (uint32_t)incomplete);
        return tpd_cctx_say(
            x, TPD_ABSTAIN, out,
            "epoch %lld was not seen complete: rank %lld's DataLoader iterator %s, so the "
            "window cannot be judged",
            (long long)incomplete, (long long)r,
            (uint32_t)incomplete < x->seen_epochs ? "did not run to its end" : "never started it");
    }
    if (x->window == 1)
        tpd_str_printf(&x->head,
                       "  %s held over epoch 0 (complete on every rank), world size %lld\n",
                       tpd_cov_policy_name(x->d.policy), (long long)x->world);
    else
        tpd_str_printf(&x->head,
                       "  %s held over epochs 0..%lld (each complete on every rank), world size "
                       "%lld\n",
                       tpd_cov_policy_name(x->d.policy), (long long)(x->window - 1),
                       (long long)x->world);
    return tpd_cctx_finish(x, TPD_PASS, NULL, out);
}

/* string_universe settles what a universe means for string IDs: a count.
 * Returns a reason to abstain, or NULL. */
static const char *string_universe(ctx *x)
{
    char *s;
    if (x->strs == NULL || !x->u.known) return NULL;
    if (x->u.ranges != NULL)
        return "the universe file lists integer IDs, but the sample IDs are strings: give their "
               "number with --universe N";
    if ((s = tpd_arena_alloc(x->a, strlen(x->u_from) + 40)) != NULL) {
        sprintf(s, "%s, a count of string IDs", x->u_from);
        x->u_from = s;
    }
    return NULL;
}

bool tpd_cctx_prepare(ctx *x, const tpd_run *r, tpd_result *out, tp_err *rc)
{
    char why[512], buf[1024];
    const char *problem;
    int64_t noids, str_rank, int_rank;
    tpd_outcome oc;
    x->run = r;
    x->loader = -1;
    x->u_from = "not declared";
    if (tpd_cov_decl_parse(x->a, r->params, &x->d, why, sizeof why) != TP_OK) {
        *rc = tpd_cctx_say(x, TPD_ERROR, out, "the run's declaration cannot be read: %s", why);
        return false;
    }
    x->decl_ok = true;
    x->ex = tpd_obs_exec(r, "coverage");
    if (x->ex == NULL && r->nexecs == 1) x->ex = &r->execs[0];
    if (x->ex == NULL) {
        *rc = tpd_cctx_say(x, TPD_ERROR, out, "the run has no execution to audit");
        return false;
    }
    /* every rank's process counts: one that crashed is named, before the
     * launcher's exit status that follows from it */
    static const tpd_trust cmd = {.who = "the command", .ranks = true, .crash = true};
    if ((problem = tpd_exec_problem(x->ex, &cmd, buf, sizeof buf)) != NULL) {
        *rc = tpd_cctx_say(x, TPD_ERROR, out, "%s: the observations are incomplete", problem);
        return false;
    }
    if ((problem = tpd_cctx_choose_loader(x, buf, sizeof buf, &oc, rc)) != NULL) {
        *rc = tpd_cctx_say(x, oc, out, "%s", problem);
        return false;
    }
    if (*rc != TP_OK) return false;
    if ((problem = find_ranks(x, buf, sizeof buf)) != NULL) {
        *rc = tpd_cctx_say(x, TPD_ERROR, out, "%s", problem);
        return false;
    }
    if (x->ranks == NULL) {
        *rc = TP_ENOMEM;
        return false;
    }
    id_kinds(x, &str_rank, &int_rank);
    if (str_rank >= 0 && int_rank >= 0) {
        *rc = tpd_cctx_say(
            x, TPD_ERROR, out,
            "the sample IDs are strings on rank %lld and integers on rank %lld: one run "
            "audits one kind",
            (long long)str_rank, (long long)int_rank);
        return false;
    }
    if (str_rank >= 0 && (*rc = intern(x)) != TP_OK) return false;
    noids = survey(x);
    universe(x);
    x->surveyed = true;
    x->window = x->d.epochs > 0 ? x->d.epochs : x->seen_epochs;
    if ((problem = string_universe(x)) != NULL) {
        *rc = tpd_cctx_say(x, TPD_ABSTAIN, out, "%s", problem);
        return false;
    }
    if (needs_universe(x->d.policy) && !x->u.known) {
        *rc = tpd_cctx_say(x, TPD_ABSTAIN, out,
                           "%s needs the universe of sample IDs: declare it (--universe N or "
                           "--universe-file F); the dataset has no len()",
                           tpd_cov_policy_name(x->d.policy));
        return false;
    }
    if (noids >= 0) {
        *rc =
            tpd_cctx_say(x, TPD_ABSTAIN, out,
                         "rank %lld's batches carry no stable sample IDs (the sampler gave none): "
                         "say where they are with --sample-id EXPR",
                         (long long)noids);
        return false;
    }
    return true;
}

void tpd_cctx_free(ctx *x)
{
    tpd_cov_auditor_destroy(x->au);
    tpd_arena_destroy(x->a);
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
}

tp_err tpd_verdict_coverage(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    ctx x;
    tp_err rc = TP_OK;
    (void)o;
    memset(&x, 0, sizeof x);
    memset(out, 0, sizeof *out);
    if ((x.a = tpd_arena_create()) == NULL) return TP_ENOMEM;
    if (tpd_cctx_prepare(&x, r, out, &rc)) rc = audit(&x, out);
    tpd_cctx_free(&x);
    return rc;
}
