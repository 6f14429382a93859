/* SPDX-License-Identifier: MIT
 * verdict_coverage.c -- sample coverage: preconditions (ERROR), the ranks
 * and the window, the universe and the padding the declaration implies
 * (ABSTAIN when a needed one is unknown), then one audit per epoch
 * (cov_audit.c) and the report. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cov_audit.h"
#include "daemon/cov_decl.h"
#include "daemon/text.h"
#include "daemon/verdict_coverage.h"

/* One rank as the audited loader saw it. */
typedef struct rank_info {
    const tpd_proc *p;
    int64_t rank;
    size_t nbatches; /* batches with IDs, all epochs */
    int64_t observations;
    const char *sampler, *id_source;
    bool workers; /* some batch said which worker made it */
} rank_info;

typedef struct ctx {
    const tpd_run *run;
    const tpd_exec *ex;
    tpd_arena *a;
    tpd_cov_decl d;
    bool decl_ok;
    rank_info *ranks; /* by rank */
    int64_t world;
    uint32_t seen_epochs; /* 1 + the highest epoch any rank reported */
    int64_t window;       /* epochs audited: 0..window-1 */
    tpd_cov_universe u;
    const char *u_from; /* "declared", "universe file ...", "len(dataset)" */
    int64_t padding;
    char pad_from[160];
    tpd_cov_counts total;
    int64_t audited; /* epochs audited */
    tpd_str head;    /* lines under the outcome */
    bool surveyed;   /* universe and padding are known to the report */
} ctx;

static bool needs_universe(tpd_cov_policy p)
{
    return p != TPD_COV_NO_CROSS_RANK_OVERLAP;
}

/* ---- the report ---- */

static void decl_json(ctx *x, tpd_str *j)
{
    if (!x->decl_ok) {
        tpd_str_puts(j, "null");
        return;
    }
    tpd_str_puts(j, "{\"policy\":");
    tpd_str_jsonz(j, tpd_cov_policy_name(x->d.policy));
    tpd_str_printf(j, ",\"loader\":%lld,\"epochs\":", (long long)x->d.loader);
    if (x->d.epochs > 0)
        tpd_str_printf(j, "%lld", (long long)x->d.epochs);
    else
        tpd_str_puts(j, "null");
    tpd_str_puts(j, ",\"universe\":");
    if (x->u.known)
        tpd_str_printf(j, "{\"count\":%lld,\"from\":", (long long)x->u.n);
    else
        tpd_str_puts(j, "{\"count\":null,\"from\":");
    tpd_str_jsonz(j, x->u_from);
    tpd_str_puts(j, "},\"padding\":");
    if (x->d.policy == TPD_COV_EXPECTED_PADDING) {
        tpd_str_printf(j, "{\"repeats\":%lld,\"from\":", (long long)x->padding);
        tpd_str_jsonz(j, x->pad_from);
        tpd_str_puts(j, "}");
    } else {
        tpd_str_puts(j, "null");
    }
    tpd_str_puts(j, ",\"sample_id\":");
    tpd_str_jsonz(j, x->d.sample_id);
    tpd_str_puts(j, "}");
}

static void ranks_json(ctx *x, tpd_str *j)
{
    tpd_str_puts(j, "[");
    for (int64_t r = 0; x->ranks && r < x->world; r++) {
        const rank_info *k = &x->ranks[r];
        tpd_str_printf(j, "%s{\"rank\":%lld,\"pid\":%lld,\"batches\":%zu,\"observations\":%lld",
                       r ? "," : "", (long long)r, (long long)(k->p ? k->p->pid : -1), k->nbatches,
                       (long long)k->observations);
        tpd_str_puts(j, ",\"sampler\":");
        tpd_str_jsonz(j, k->sampler);
        tpd_str_puts(j, ",\"id_source\":");
        tpd_str_jsonz(j, k->id_source);
        tpd_str_printf(j, ",\"worker_known\":%s}", k->workers ? "true" : "false");
    }
    tpd_str_puts(j, "]");
}

static void finding_text(ctx *x, tpd_str *t, const tpd_cov_finding *f)
{
    tpd_str_printf(t, "\nfirst violation  epoch %u", f->epoch);
    if (strcmp(f->path, "coverage.missing") == 0) {
        tpd_str_printf(t,
                       "  %s\n    %lld of %lld IDs never observed in the complete epoch: ", f->path,
                       (long long)f->nmissing, (long long)x->u.n);
        for (int i = 0; i < f->nshown; i++)
            tpd_str_printf(t, "%s%lld", i ? ", " : "", (long long)f->missing[i]);
        tpd_str_puts(t, f->nmissing > f->nshown ? ", ...\n" : "\n");
        return;
    }
    tpd_str_printf(t, ", rank %lld, position %u, item %u  %s\n    ID %lld (worker ",
                   (long long)f->rank, f->pos, f->item, f->path, (long long)f->id);
    if (f->has_worker)
        tpd_str_printf(t, "%lld)", (long long)f->worker);
    else
        tpd_str_puts(t, "unknown)");
    if (strcmp(f->path, "coverage.unexpected_id") == 0) {
        tpd_str_printf(t, " is not in the universe (%lld IDs, %s)\n", (long long)x->u.n, x->u_from);
        return;
    }
    if (f->has_prev)
        tpd_str_printf(t, " was already observed on rank %lld at position %u, item %u\n",
                       (long long)f->prev_rank, f->prev_pos, f->prev_item);
    else
        tpd_str_puts(t, " was already observed\n");
    if (strcmp(f->path, "coverage.padding_exceeded") != 0) return;
    if (!f->per_id && f->repeats > f->allowed)
        tpd_str_printf(t, "    repeat %lld of the epoch; the padding allows %lld (%s)\n",
                       (long long)f->repeats, (long long)f->allowed, x->pad_from);
    else if (!f->wrap)
        tpd_str_puts(t,
                     "    it is not a wrap-around ID: padding repeats only the first IDs dealt\n");
    else
        tpd_str_printf(t,
                       "    this wrap-around ID was repeated %lld time(s); a padding of %lld "
                       "allows %lld\n",
                       (long long)f->repeats, (long long)x->padding, (long long)f->allowed);
}

static void finding_json(tpd_str *j, const tpd_cov_finding *f)
{
    bool miss = strcmp(f->path, "coverage.missing") == 0;
    tpd_str_puts(j, "{\"path\":");
    tpd_str_jsonz(j, f->path);
    tpd_str_printf(j, ",\"epoch\":%u", f->epoch);
    if (miss) {
        tpd_str_printf(j,
                       ",\"rank\":null,\"position\":null,\"missing\":{\"count\":%lld,\"first\":[",
                       (long long)f->nmissing);
        for (int i = 0; i < f->nshown; i++)
            tpd_str_printf(j, "%s%lld", i ? "," : "", (long long)f->missing[i]);
        tpd_str_puts(j, "]}}");
        return;
    }
    tpd_str_printf(j, ",\"rank\":%lld,\"position\":%u,\"item\":%u,\"id\":%lld,\"worker\":",
                   (long long)f->rank, f->pos, f->item, (long long)f->id);
    if (f->has_worker)
        tpd_str_printf(j, "%lld", (long long)f->worker);
    else
        tpd_str_puts(j, "null");
    tpd_str_puts(j, ",\"first_seen\":");
    if (f->has_prev)
        tpd_str_printf(j, "{\"rank\":%lld,\"position\":%u,\"item\":%u}", (long long)f->prev_rank,
                       f->prev_pos, f->prev_item);
    else
        tpd_str_puts(j, "null");
    if (strcmp(f->path, "coverage.padding_exceeded") == 0)
        tpd_str_printf(j, ",\"wrap_around\":%s,\"repeats\":%lld,\"allowed\":%lld,\"per_id\":%s",
                       f->wrap ? "true" : "false", (long long)f->repeats, (long long)f->allowed,
                       f->per_id ? "true" : "false");
    tpd_str_puts(j, "}");
}

static tp_err finish(ctx *x, tpd_outcome oc, const tpd_cov_finding *f, tpd_result *out)
{
    tpd_str t = {0}, j = {0};
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "coverage: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    if (x->decl_ok)
        tpd_str_printf(&t, "  policy      %s, loader %lld\n", tpd_cov_policy_name(x->d.policy),
                       (long long)x->d.loader);
    if (x->surveyed) {
        if (x->u.known)
            tpd_str_printf(&t, "  universe    %lld IDs (%s)\n", (long long)x->u.n, x->u_from);
        else
            tpd_str_printf(&t, "  universe    unknown (%s)\n", x->u_from);
        if (x->d.policy == TPD_COV_EXPECTED_PADDING)
            tpd_str_printf(&t, "  padding     %lld repeated observation(s) per epoch (%s)\n",
                           (long long)x->padding, x->pad_from);
    }
    if (x->world > 0)
        tpd_str_printf(&t,
                       "  window      %lld epoch(s) audited of %u seen, world size %lld, "
                       "%lld observation(s)\n",
                       (long long)x->audited, x->seen_epochs, (long long)x->world,
                       (long long)x->total.observations);
    for (int64_t r = 0; x->ranks && r < x->world; r++)
        tpd_str_printf(&t, "  rank %-6lld pid %lld, %zu batches, sampler %s, ids from %s%s\n",
                       (long long)r, (long long)(x->ranks[r].p ? x->ranks[r].p->pid : -1),
                       x->ranks[r].nbatches, x->ranks[r].sampler ? x->ranks[r].sampler : "?",
                       x->ranks[r].id_source ? x->ranks[r].id_source : "?",
                       x->ranks[r].workers ? ", workers known" : "");
    if (f != NULL && f->path != NULL) {
        finding_text(x, &t, f);
        snprintf(out->path, sizeof out->path, "%s", f->path);
    }

    tpd_str_printf(&j,
                   "{\"schema_version\":1,\"trainparity_version\":\"0.1.0\",\"check\":\"coverage\","
                   "\"run\":%lld,\"outcome\":\"%s\",\"comparison\":{\"mode\":\"exact\"},"
                   "\"declaration\":",
                   (long long)x->run->id, tpd_outcome_name(oc));
    decl_json(x, &j);
    tpd_str_puts(&j, ",\"first_divergence\":");
    if (f != NULL && f->path != NULL)
        finding_json(&j, f);
    else
        tpd_str_puts(&j, "null");
    tpd_str_puts(&j, ",\"reason\":");
    tpd_str_jsonz(&j, x->head.s);
    tpd_str_printf(&j,
                   ",\"window\":{\"epochs_audited\":%lld,\"epochs_seen\":%u,\"world_size\":%lld},"
                   "\"evidence\":{\"execution\":",
                   (long long)x->audited, x->seen_epochs, (long long)x->world);
    if (x->ex != NULL) {
        tpd_str_printf(&j, "{\"id\":%lld,\"argv\":%s", (long long)x->ex->id,
                       x->ex->argv_json ? x->ex->argv_json : "null");
        if (x->ex->has_status)
            tpd_str_printf(&j, ",\"exit_status\":%lld", (long long)x->ex->status);
        if (x->ex->has_signal)
            tpd_str_printf(&j, ",\"exit_signal\":%lld", (long long)x->ex->signal);
        tpd_str_printf(&j, ",\"processes\":%zu}", x->ex->nprocs);
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_printf(&j, ",\"observations\":%lld,\"distinct\":%lld,\"repeats\":%lld,\"ranks\":",
                   (long long)x->total.observations, (long long)x->total.distinct,
                   (long long)x->total.repeats);
    ranks_json(x, &j);
    tpd_str_puts(&j, "}}\n");
    out->text = tpd_str_steal(&t);
    out->json = tpd_str_steal(&j);
    tpd_str_free(&x->head);
    if (out->text == NULL || out->json == NULL) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}

static tp_err say(ctx *x, tpd_outcome oc, tpd_result *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* say ends the verdict with oc and one line saying why. */
static tp_err say(ctx *x, tpd_outcome oc, tpd_result *out, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tpd_str_printf(&x->head, "  %s\n", line);
    return finish(x, oc, NULL, out);
}

/* ---- preconditions ---- */

/* exec_problem says why the execution's events cannot be trusted, or NULL. */
static const char *exec_problem(const tpd_exec *e, char *buf, size_t n)
{
    if (e->has_signal && e->signal != 0) {
        snprintf(buf, n, "the command was killed by signal %lld", (long long)e->signal);
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if (q->bye_exc != NULL || (q->bye_reason && strcmp(q->bye_reason, "exception") == 0)) {
            snprintf(buf, n, "process %lld (rank %lld) crashed with an uncaught %.400s",
                     (long long)q->pid, (long long)q->rank, q->bye_exc ? q->bye_exc : "exception");
            return buf;
        }
    }
    if (e->has_status && e->status != 0) {
        snprintf(buf, n, "the command exited with status %lld%s", (long long)e->status,
                 tpd_status_hint(e->status, e->nprocs > 0));
        return buf;
    }
    for (size_t i = 0; i < e->nprocs; i++) {
        const tpd_proc *q = &e->procs[i];
        if (!q->has_bye) {
            snprintf(buf, n, "process %lld (rank %lld) ended without reporting its last events",
                     (long long)q->pid, (long long)q->rank);
            return buf;
        }
        if (q->dropped > 0 || q->nevents < q->sent || q->nevents < q->max_seq + 1) {
            snprintf(buf, n, "process %lld lost events (%lld sent, %lld stored, %lld dropped)",
                     (long long)q->pid, (long long)q->sent, (long long)q->nevents,
                     (long long)q->dropped);
            return buf;
        }
        if (q->errors > 0 || q->first_error) {
            snprintf(buf, n, "a hook of the agent reported an error in process %lld: %.600s",
                     (long long)q->pid, q->first_error ? q->first_error : "(unknown)");
            return buf;
        }
    }
    return NULL;
}

static bool of_loader(const ctx *x, const tpd_batch *b)
{
    return (int64_t)b->loader == x->d.loader;
}

/* find_ranks maps every process that iterated the loader to its rank;
 * returns a problem (ERROR) or NULL. */
static const char *find_ranks(ctx *x, char *buf, size_t n)
{
    int64_t world = 0, nprocs = 0, solo = -1;
    for (size_t i = 0; i < x->ex->nprocs; i++) {
        const tpd_proc *p = &x->ex->procs[i];
        for (size_t k = 0; k < p->nbatches; k++)
            if (of_loader(x, &p->batches[k])) {
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
    if (nprocs == 0) {
        snprintf(buf, n, "no process iterated DataLoader %lld (no batch observed)",
                 (long long)x->d.loader);
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
            if (of_loader(x, &p->batches[k])) mine = true, r = p->batches[k].rank;
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
        x->ranks[r].rank = r;
    }
    for (int64_t r = 0; r < world; r++)
        if (x->ranks[r].p == NULL) {
            snprintf(buf, n, "rank %lld of %lld reported no batch of DataLoader %lld", (long long)r,
                     (long long)world, (long long)x->d.loader);
            return buf;
        }
    return NULL;
}

/* survey fills the per-rank summaries and the epochs seen; returns the
 * first rank whose batches carry no IDs, or -1. */
static int64_t survey(ctx *x)
{
    int64_t noids = -1;
    for (int64_t r = 0; r < x->world; r++) {
        rank_info *k = &x->ranks[r];
        for (size_t i = 0; i < k->p->nbatches; i++) {
            const tpd_batch *b = &k->p->batches[i];
            if (!of_loader(x, b)) continue;
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
        for (size_t i = 0; i < x->ranks[r].p->nbatches; i++) {
            const tpd_batch *b = &x->ranks[r].p->batches[i];
            if (of_loader(x, b) && has(b)) return b;
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
    if (x->d.has_padding) {
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
        for (size_t i = 0; i < x->ranks[r].p->nbatches; i++) {
            const tpd_batch *b = &x->ranks[r].p->batches[i];
            if (!of_loader(x, b) || b->epoch != ep) continue;
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
        for (size_t i = 0; i < x->ranks[r].p->nbatches && !ended; i++) {
            const tpd_batch *b = &x->ranks[r].p->batches[i];
            ended = of_loader(x, b) && b->epoch == ep && b->end;
        }
        if (!ended) return r;
    }
    return -1;
}

static tp_err audit(ctx *x, tpd_result *out)
{
    tpd_cov_auditor *au = NULL;
    const tpd_batch **v;
    size_t *first, nb = 0;
    int64_t incomplete = -1;
    tpd_cov_finding f;
    tp_err rc;
    for (int64_t r = 0; r < x->world; r++) nb += x->ranks[r].p->nbatches;
    v = tpd_arena_alloc(x->a, sizeof *v * (nb ? nb : 1));
    first = tpd_arena_alloc(x->a, sizeof *first * (size_t)(x->world + 1));
    if (v == NULL || first == NULL) return TP_ENOMEM;
    rc = tpd_cov_auditor_create(&au, x->d.policy, &x->u,
                                x->d.policy == TPD_COV_EXPECTED_PADDING ? x->padding : 0);
    if (rc == TP_EINVAL)
        return say(x, TPD_ABSTAIN, out, "a universe of %lld IDs is too large to audit",
                   (long long)x->u.n);
    if (rc != TP_OK) return rc;
    for (int64_t ep = 0; ep < x->window; ep++) {
        tpd_cov_epoch e;
        tpd_cov_counts c;
        gather(x, (uint32_t)ep, v, first, &e);
        if ((rc = tpd_cov_audit(au, &e, &f, &c)) != TP_OK) goto done;
        x->audited++;
        x->total.observations += c.observations;
        x->total.distinct += c.distinct;
        x->total.repeats += c.repeats;
        if (f.path != NULL) {
            tpd_str_printf(&x->head, "  %s does not hold\n", tpd_cov_policy_name(x->d.policy));
            rc = finish(x, TPD_FAIL, &f, out);
            goto done;
        }
        if (!e.complete && incomplete < 0) incomplete = ep;
    }
    if (incomplete >= 0) {
        int64_t r = first_incomplete_rank(x, (uint32_t)incomplete);
        rc = say(x, TPD_ABSTAIN, out,
                 "epoch %lld was not seen complete: rank %lld's DataLoader iterator %s, so the "
                 "window cannot be judged",
                 (long long)incomplete, (long long)r,
                 (uint32_t)incomplete < x->seen_epochs ? "did not run to its end"
                                                       : "never started it");
        goto done;
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
    rc = finish(x, TPD_PASS, NULL, out);
done:
    tpd_cov_auditor_destroy(au);
    return rc;
}

tp_err tpd_verdict_coverage(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out)
{
    char why[512], buf[1024];
    const char *problem;
    int64_t noids;
    ctx x;
    tp_err rc;
    (void)o;
    memset(&x, 0, sizeof x);
    memset(out, 0, sizeof *out);
    x.run = r;
    x.u_from = "not declared";
    if ((x.a = tpd_arena_create()) == NULL) return TP_ENOMEM;
    if (tpd_cov_decl_parse(x.a, r->params, &x.d, why, sizeof why) != TP_OK) {
        rc = say(&x, TPD_ERROR, out, "the run's declaration cannot be read: %s", why);
        goto done;
    }
    x.decl_ok = true;
    x.ex = tpd_obs_exec(r, "coverage");
    if (x.ex == NULL && r->nexecs == 1) x.ex = &r->execs[0];
    if (x.ex == NULL) {
        rc = say(&x, TPD_ERROR, out, "the run has no execution to audit");
        goto done;
    }
    if ((problem = exec_problem(x.ex, buf, sizeof buf)) != NULL) {
        rc = say(&x, TPD_ERROR, out, "%s: the observations are incomplete", problem);
        goto done;
    }
    if ((problem = find_ranks(&x, buf, sizeof buf)) != NULL) {
        rc = say(&x, TPD_ERROR, out, "%s", problem);
        goto done;
    }
    if (x.ranks == NULL) {
        rc = TP_ENOMEM;
        goto done;
    }
    noids = survey(&x);
    universe(&x);
    x.surveyed = true;
    x.window = x.d.epochs > 0 ? x.d.epochs : x.seen_epochs;
    if (needs_universe(x.d.policy) && !x.u.known) {
        rc = say(&x, TPD_ABSTAIN, out,
                 "%s needs the universe of sample IDs: declare it (--universe N or "
                 "--universe-file F); the dataset has no len()",
                 tpd_cov_policy_name(x.d.policy));
        goto done;
    }
    if (noids >= 0) {
        rc = say(&x, TPD_ABSTAIN, out,
                 "rank %lld's batches carry no stable sample IDs (the sampler gave none): "
                 "say where they are with --sample-id EXPR",
                 (long long)noids);
        goto done;
    }
    rc = audit(&x, out);
done:
    tpd_arena_destroy(x.a);
    tpd_str_free(&x.head);
    return rc;
}
