/* SPDX-License-Identifier: MIT
 * report.c -- the coverage report, text and JSON: the declaration, the
 * universe and the padding rule, the window and the ranks, the full counts
 * with examples of each anomaly, the first violation and the lines that
 * explain it (ctx.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/checks/coverage/ctx.h"
#include "daemon/checks/render.h"

typedef tpd_cctx ctx;

void tpd_cctx_put_id(const ctx *x, tpd_str *s, int64_t id)
{
    if (x->strs != NULL && id >= 0 && id < x->nstrs)
        tpd_str_jsonz(s, x->strs[id]);
    else
        tpd_str_printf(s, "%lld", (long long)id);
}

json_t *tpd_cctx_id_json(const ctx *x, int64_t id)
{
    if (x->strs != NULL && id >= 0 && id < x->nstrs) return tpd_json_str(x->strs[id]);
    return tpd_json_int(id);
}

static const char *pad_rule(const ctx *x)
{
    return x->d.padding_exact ? "exactly" : "at most";
}

static json_t *decl_json(ctx *x)
{
    json_t *o;
    bool bad;
    if (!x->decl_ok) return json_null();
    bad = (o = json_object()) == NULL;
    bad |= !tpd_jset(o, "policy", tpd_json_str(tpd_cov_policy_name(x->d.policy)));
    bad |= !tpd_jset(o, "loader", x->loader >= 0 ? tpd_json_int(x->loader) : json_null());
    bad |= !tpd_jset(o, "loader_from", x->loader >= 0 ? tpd_json_str(x->loader_from) : json_null());
    bad |= !tpd_jset(o, "epochs", x->d.epochs > 0 ? tpd_json_int(x->d.epochs) : json_null());
    bad |=
        !tpd_jset(o, "universe",
                  json_pack("{s:o, s:o}", "count", x->u.known ? tpd_json_int(x->u.n) : json_null(),
                            "from", tpd_json_str(x->u_from)));
    bad |=
        !tpd_jset(o, "padding",
                  x->d.policy == TPD_COV_EXPECTED_PADDING
                      ? json_pack("{s:I, s:s, s:o, s:o}", "repeats", (json_int_t)x->padding, "rule",
                                  x->d.padding_exact ? "exactly" : "at_most", "from",
                                  tpd_json_str(x->pad_from), "sampler", tpd_json_str(x->pad_scheme))
                      : json_null());
    bad |= !tpd_jset(o, "sample_id", tpd_json_str(x->d.sample_id));
    bad |= !tpd_jset(o, "examples", tpd_json_int(x->d.examples));
    return tpd_jdone(o, bad);
}

/* loaders_json is every loader iterated: its number, the processes that
 * iterated it, its batches, the backward calls credited to it, whether it
 * fed the training and whether it is the one audited. */
static json_t *loaders_json(const ctx *x)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (size_t i = 0; i < x->nloaders; i++) {
        const tpd_cov_loader *l = &x->loaders[i];
        bad |= !tpd_jpush(a, json_pack("{s:I, s:I, s:I, s:I, s:b, s:b}", "loader",
                                       (json_int_t)l->loader, "processes", (json_int_t)l->procs,
                                       "batches", (json_int_t)l->batches, "backward",
                                       (json_int_t)l->backward, "training", l->train, "audited",
                                       (int64_t)l->loader == x->loader));
    }
    return tpd_jdone(a, bad);
}

static json_t *ranks_json(ctx *x)
{
    json_t *a = json_array();
    bool bad = a == NULL;
    for (int64_t r = 0; x->ranks && r < x->world; r++) {
        const tpd_cov_rank *k = &x->ranks[r];
        bad |= !tpd_jpush(a, json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:b}", "rank", (json_int_t)r,
                                       "pid", (json_int_t)(k->p ? k->p->pid : -1), "batches",
                                       (json_int_t)k->nbatches, "observations",
                                       (json_int_t)k->observations, "sampler",
                                       tpd_json_str(k->sampler), "id_source",
                                       tpd_json_str(k->id_source), "worker_known", k->workers));
    }
    return tpd_jdone(a, bad);
}

static bool is(const tpd_cov_finding *f, const char *path)
{
    return f->path != NULL && strcmp(f->path, path) == 0;
}

/* epochwide: the finding is about a whole epoch, not one observation. */
static bool epochwide(const tpd_cov_finding *f)
{
    return f->rank < 0;
}

static void finding_text(ctx *x, tpd_str *t, const tpd_cov_finding *f)
{
    tpd_str_printf(t, "\nfirst violation  epoch %u", f->epoch);
    if (is(f, "coverage.missing")) {
        tpd_str_printf(t, "  %s\n    %lld of %lld IDs never observed in the complete epoch",
                       f->path, (long long)f->nmissing, (long long)x->u.n);
        if (f->nshown == 0) {
            tpd_str_puts(t,
                         " (string IDs: the universe is a count, the missing ones have no name)\n");
            return;
        }
        tpd_str_puts(t, ": ");
        for (int i = 0; i < f->nshown; i++) {
            tpd_str_puts(t, i ? ", " : "");
            tpd_cctx_put_id(x, t, f->missing[i]);
        }
        tpd_str_puts(t, f->nmissing > f->nshown ? ", ...\n" : "\n");
        return;
    }
    if (is(f, "coverage.padding_short")) {
        tpd_str_printf(t,
                       "  %s\n    %lld repeated observation(s) in the complete epoch; the padding "
                       "rule is exactly %lld (%s)\n",
                       f->path, (long long)f->repeats, (long long)f->allowed, x->pad_from);
        return;
    }
    if (epochwide(f)) { /* count_only: more distinct IDs than the universe holds */
        tpd_str_printf(t, "  %s\n    %lld distinct IDs observed beyond the universe's %lld (%s)\n",
                       f->path, (long long)f->nextra, (long long)x->u.n, x->u_from);
        return;
    }
    tpd_str_printf(t, ", rank %lld, position %u, item %u  %s\n    ID ", (long long)f->rank, f->pos,
                   f->item, f->path);
    tpd_cctx_put_id(x, t, f->id);
    if (f->has_worker)
        tpd_str_printf(t, " (worker %lld)", (long long)f->worker);
    else
        tpd_str_puts(t, " (worker unknown)");
    if (is(f, "coverage.unexpected_id")) {
        tpd_str_printf(t, " is not in the universe (%lld IDs, %s)\n", (long long)x->u.n, x->u_from);
        return;
    }
    if (f->has_prev)
        tpd_str_printf(t, " was already observed on rank %lld at position %u, item %u\n",
                       (long long)f->prev_rank, f->prev_pos, f->prev_item);
    else
        tpd_str_puts(t, " was already observed\n");
    if (!is(f, "coverage.padding_exceeded")) return;
    if (!f->per_id && f->repeats > f->allowed)
        tpd_str_printf(t, "    repeat %lld of the epoch; the padding allows %s %lld (%s)\n",
                       (long long)f->repeats, pad_rule(x), (long long)f->allowed, x->pad_from);
    else if (!f->wrap)
        tpd_str_printf(t,
                       "    it is not a wrap-around ID: padding repeats only the first IDs of the "
                       "epoch's order, as the %s deals them\n",
                       x->pad_scheme ? x->pad_scheme : "sampler");
    else
        tpd_str_printf(t,
                       "    this wrap-around ID was repeated %lld time(s); a padding of %lld "
                       "allows %lld\n",
                       (long long)f->repeats, (long long)x->padding, (long long)f->allowed);
}

/* seen_json is where an ID was first observed in the epoch. */
static json_t *seen_json(int64_t rank, uint32_t pos, uint32_t item)
{
    return json_pack("{s:I, s:I, s:I}", "rank", (json_int_t)rank, "position", (json_int_t)pos,
                     "item", (json_int_t)item);
}

static json_t *finding_json(ctx *x, const tpd_cov_finding *f)
{
    json_t *o = json_object();
    bool bad = false;
    bad |= !tpd_jset(o, "path", tpd_json_str(f->path));
    bad |= !tpd_jset(o, "epoch", tpd_json_int(f->epoch));
    if (is(f, "coverage.missing") || is(f, "coverage.padding_short") || epochwide(f)) {
        bad |= !tpd_jset(o, "rank", json_null());
        bad |= !tpd_jset(o, "position", json_null());
    }
    if (is(f, "coverage.missing")) {
        json_t *first = json_array();
        bad |= first == NULL;
        for (int i = 0; i < f->nshown; i++)
            bad |= !tpd_jpush(first, tpd_cctx_id_json(x, f->missing[i]));
        bad |= !tpd_jset(o, "missing",
                         json_pack("{s:I, s:o}", "count", (json_int_t)f->nmissing, "first", first));
        return tpd_jdone(o, bad);
    }
    if (is(f, "coverage.padding_short")) {
        bad |= !tpd_jset(o, "repeats", tpd_json_int(f->repeats));
        bad |= !tpd_jset(o, "expected", tpd_json_int(f->allowed));
        bad |= !tpd_jset(o, "rule", json_string("exactly"));
        return tpd_jdone(o, bad);
    }
    if (epochwide(f)) {
        bad |= !tpd_jset(o, "beyond_universe", tpd_json_int(f->nextra));
        return tpd_jdone(o, bad);
    }
    bad |= !tpd_jset(o, "rank", tpd_json_int(f->rank));
    bad |= !tpd_jset(o, "position", tpd_json_int(f->pos));
    bad |= !tpd_jset(o, "item", tpd_json_int(f->item));
    bad |= !tpd_jset(o, "id", tpd_cctx_id_json(x, f->id));
    bad |= !tpd_jset(o, "worker", f->has_worker ? tpd_json_int(f->worker) : json_null());
    bad |=
        !tpd_jset(o, "first_seen",
                  f->has_prev ? seen_json(f->prev_rank, f->prev_pos, f->prev_item) : json_null());
    if (is(f, "coverage.padding_exceeded")) {
        bad |= !tpd_jset(o, "wrap_around", tpd_json_bool(f->wrap));
        bad |= !tpd_jset(o, "repeats", tpd_json_int(f->repeats));
        bad |= !tpd_jset(o, "allowed", tpd_json_int(f->allowed));
        bad |= !tpd_jset(o, "per_id", tpd_json_bool(f->per_id));
    }
    return tpd_jdone(o, bad);
}

static const char *const kind_names[TPD_COV_K__COUNT] = {
    "missing", "unexpected_id", "same_rank_duplicate", "cross_rank_duplicate"};

static int64_t kind_count(const ctx *x, tpd_cov_kind k)
{
    switch (k) {
    case TPD_COV_K_MISSING:
        return x->total.missing;
    case TPD_COV_K_UNEXPECTED:
        return x->total.unexpected;
    case TPD_COV_K_SAME_RANK:
        return x->total.same_rank;
    default:
        return x->total.cross_rank;
    }
}

/* example_text writes where example e was observed, and where its ID was
 * first observed in the epoch. */
static void example_text(const ctx *x, tpd_str *t, const tpd_cov_example *e)
{
    if (e->rank < 0) {
        tpd_str_printf(t, "ID ");
        tpd_cctx_put_id(x, t, e->id);
        tpd_str_printf(t, " never observed in epoch %u", e->epoch);
        return;
    }
    tpd_str_puts(t, "ID ");
    tpd_cctx_put_id(x, t, e->id);
    tpd_str_printf(t, " at epoch %u, rank %lld, position %u, item %u", e->epoch, (long long)e->rank,
                   e->pos, e->item);
    if (e->has_worker) tpd_str_printf(t, " (worker %lld)", (long long)e->worker);
    if (e->has_prev)
        tpd_str_printf(t, ", first on rank %lld at position %u, item %u", (long long)e->prev_rank,
                       e->prev_pos, e->prev_item);
}

static json_t *example_json(const ctx *x, const tpd_cov_example *e)
{
    json_t *o = json_object();
    bool bad = false;
    bad |= !tpd_jset(o, "id", tpd_cctx_id_json(x, e->id));
    bad |= !tpd_jset(o, "epoch", tpd_json_int(e->epoch));
    if (e->rank < 0) return tpd_jdone(o, bad);
    bad |= !tpd_jset(o, "rank", tpd_json_int(e->rank));
    bad |= !tpd_jset(o, "position", tpd_json_int(e->pos));
    bad |= !tpd_jset(o, "item", tpd_json_int(e->item));
    bad |= !tpd_jset(o, "worker", e->has_worker ? tpd_json_int(e->worker) : json_null());
    if (e->has_prev)
        bad |= !tpd_jset(o, "first_seen", seen_json(e->prev_rank, e->prev_pos, e->prev_item));
    return tpd_jdone(o, bad);
}

/* pad_seen_text writes the repeated observations of each epoch audited. */
static void pad_seen_text(const ctx *x, tpd_str *t)
{
    if (x->audited == 0 || x->pad_seen == NULL) {
        tpd_str_puts(t, "none audited");
        return;
    }
    for (int64_t e = 0; e < x->audited; e++)
        tpd_str_printf(t, "%s%lld in epoch %lld", e ? ", " : "", (long long)x->pad_seen[e],
                       (long long)e);
}

/* counts_text writes the audit's counts, the padding and the examples. */
static void counts_text(const ctx *x, tpd_str *t)
{
    const tpd_cov_counts *c = &x->total;
    const char *label = "examples";
    tpd_str_printf(t,
                   "  counts      %lld observation(s), %lld unique; missing %lld, unexpected %lld, "
                   "repeated %lld (same-rank %lld, cross-rank %lld)\n",
                   (long long)c->observations, (long long)c->distinct, (long long)c->missing,
                   (long long)c->unexpected, (long long)c->repeats, (long long)c->same_rank,
                   (long long)c->cross_rank);
    if (x->au == NULL) return;
    for (int k = 0; k < TPD_COV_K__COUNT; k++) {
        size_t n;
        const tpd_cov_example *e = tpd_cov_examples(x->au, (tpd_cov_kind)k, &n);
        for (size_t i = 0; i < n; i++, label = "") {
            tpd_str_printf(t, "  %-11s %s: ", label, kind_names[k]);
            example_text(x, t, &e[i]);
            tpd_str_puts(t, "\n");
        }
    }
}

/* counts_json sets in o the ID kind, the counts, the padding and the
 * examples; false when out of memory. */
static bool counts_json(const ctx *x, json_t *o)
{
    const tpd_cov_counts *c = &x->total;
    json_t *ex = json_object();
    bool bad = ex == NULL;
    bad |= !tpd_jset(o, "id_kind", json_string(x->strs ? "string" : "integer"));
    bad |= !tpd_jset(o, "counts",
                     json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "observations",
                               (json_int_t)c->observations, "unique", (json_int_t)c->distinct,
                               "missing", (json_int_t)c->missing, "unexpected",
                               (json_int_t)c->unexpected, "repeated", (json_int_t)c->repeats,
                               "same_rank", (json_int_t)c->same_rank, "cross_rank",
                               (json_int_t)c->cross_rank, "violations", (json_int_t)c->violations));
    if (x->decl_ok && x->d.policy == TPD_COV_EXPECTED_PADDING && x->surveyed) {
        json_t *seen = json_array();
        bad |= seen == NULL;
        for (int64_t e = 0; x->pad_seen && e < x->audited; e++)
            bad |= !tpd_jpush(seen, tpd_json_int(x->pad_seen[e]));
        bad |= !tpd_jset(o, "padding",
                         json_pack("{s:I, s:s, s:o}", "expected", (json_int_t)x->padding, "rule",
                                   x->d.padding_exact ? "exactly" : "at_most", "observed", seen));
    } else {
        bad |= !tpd_jset(o, "padding", json_null());
    }
    for (int k = 0; k < TPD_COV_K__COUNT; k++) {
        size_t n = 0;
        const tpd_cov_example *e = x->au ? tpd_cov_examples(x->au, (tpd_cov_kind)k, &n) : NULL;
        json_t *a = json_array();
        bad |= a == NULL;
        for (size_t i = 0; i < n; i++) bad |= !tpd_jpush(a, example_json(x, &e[i]));
        bad |= !tpd_jset(ex, kind_names[k], a);
    }
    bad |= !tpd_jset(o, "examples", ex);
    return !bad;
}

/* execution_json is the audited execution: its id, argv, exit and cost;
 * null when there is none. */
static json_t *execution_json(const ctx *x)
{
    json_t *o;
    bool bad;
    if (x->ex == NULL) return json_null();
    bad = (o = json_object()) == NULL;
    bad |= !tpd_jset(o, "id", tpd_json_int(x->ex->id));
    bad |= !tpd_jset(o, "argv", tpd_json_argv(x->ex->argv_json));
    if (x->ex->has_status) bad |= !tpd_jset(o, "exit_status", tpd_json_int(x->ex->status));
    if (x->ex->has_signal) bad |= !tpd_jset(o, "exit_signal", tpd_json_int(x->ex->signal));
    bad |= o == NULL || !tpd_json_exec_cost(o, x->ex);
    return tpd_jdone(o, bad);
}

/* report_json is the JSON report of outcome oc with finding f (NULL:
 * none); NULL when out of memory. */
static json_t *report_json(ctx *x, tpd_outcome oc, const tpd_cov_finding *f)
{
    json_t *j = tpd_report_new("coverage", x->run->id, oc), *ev = json_object();
    bool bad = ev == NULL;
    bad |= !tpd_jset(j, "comparison", json_pack("{s:s}", "mode", "exact"));
    bad |= !tpd_jset(j, "declaration", decl_json(x));
    bad |= !tpd_jset(j, "first_divergence",
                     f != NULL && f->path != NULL ? finding_json(x, f) : json_null());
    bad |= !tpd_jset(j, "reason", tpd_json_lines(x->head.s));
    bad |= !tpd_jset(j, "explanation", tpd_why_json(&x->why));
    bad |= !tpd_jset(j, "window",
                     json_pack("{s:I, s:I, s:I}", "epochs_audited", (json_int_t)x->audited,
                               "epochs_seen", (json_int_t)x->seen_epochs, "world_size",
                               (json_int_t)x->world));
    bad |= !tpd_jset(ev, "execution", execution_json(x));
    bad |= !tpd_jset(ev, "wall_time", tpd_json_wall(x->run));
    bad |= !tpd_jset(ev, "observations", tpd_json_int(x->total.observations));
    bad |= !tpd_jset(ev, "distinct", tpd_json_int(x->total.distinct));
    bad |= !tpd_jset(ev, "repeats", tpd_json_int(x->total.repeats));
    bad |= !tpd_jset(ev, "loaders", loaders_json(x));
    bad |= !tpd_jset(ev, "ranks", ranks_json(x));
    bad |= ev == NULL || !counts_json(x, ev);
    bad |= !tpd_jset(j, "evidence", ev);
    return tpd_jdone(j, bad);
}

/* explain writes the explanation from the evidence: the ID kind, the
 * padding rule applied, each anomaly counted with its first example. */
static void explain(ctx *x, const tpd_cov_finding *f)
{
    static const char *const says[TPD_COV_K__COUNT] = {
        "ID(s) of the universe were never observed in a complete epoch",
        "observation(s) of IDs outside the universe",
        "observation(s) repeat an ID the same rank had already returned",
        "observation(s) repeat an ID another rank had already returned"};
    if (!x->surveyed || x->au == NULL) return;
    /* the loader, when another than the old default (the only one
     * iterated, and DataLoader 0) was possible */
    if (x->nloaders > 1 || x->loader != 0)
        tpd_why_add(&x->why, "loader", "audited DataLoader %lld: %s", (long long)x->loader,
                    x->loader_from);
    if (x->strs != NULL)
        tpd_why_add(&x->why, "id_kind",
                    "the sample IDs are strings (%lld distinct in the run); a universe of them is "
                    "a count, %s",
                    (long long)x->nstrs,
                    x->u.known ? "so missing IDs are counted, not named" : "and none is known");
    if (x->d.policy == TPD_COV_EXPECTED_PADDING) {
        tpd_str seen = {0};
        pad_seen_text(x, &seen);
        tpd_why_add(&x->why, "padding",
                    "padding rule applied: %s %lld repeated observation(s) per epoch (%s); "
                    "observed %s",
                    pad_rule(x), (long long)x->padding, x->pad_from, seen.s ? seen.s : "");
        tpd_str_free(&seen);
        if (f != NULL && is(f, "coverage.padding_short"))
            tpd_why_add(&x->why, "padding_short",
                        "the sampler pads less than declared: epoch %u repeated %lld "
                        "observation(s), exactly %lld were declared",
                        f->epoch, (long long)f->repeats, (long long)f->allowed);
    }
    for (int k = 0; k < TPD_COV_K__COUNT; k++) {
        int64_t n = kind_count(x, (tpd_cov_kind)k);
        size_t ne;
        const tpd_cov_example *e = tpd_cov_examples(x->au, (tpd_cov_kind)k, &ne);
        tpd_str ex = {0};
        if (n <= 0) continue;
        if (ne > 0) {
            tpd_str_puts(&ex, ", e.g. ");
            example_text(x, &ex, &e[0]);
        }
        tpd_why_add(&x->why, kind_names[k], "%lld %s%s", (long long)n, says[k], ex.s ? ex.s : "");
        tpd_str_free(&ex);
    }
}

tp_err tpd_cctx_finish(ctx *x, tpd_outcome oc, const tpd_cov_finding *f, tpd_result *out)
{
    tpd_str t = {0};
    memset(out, 0, sizeof *out);
    out->outcome = oc;
    tpd_str_printf(&t, "coverage: %s\n", tpd_outcome_name(oc));
    tpd_str_puts(&t, x->head.s ? x->head.s : "");
    if (x->decl_ok && x->loader >= 0)
        tpd_str_printf(&t, "  policy      %s, loader %lld\n  loader      %lld, %s\n",
                       tpd_cov_policy_name(x->d.policy), (long long)x->loader, (long long)x->loader,
                       x->loader_from);
    else if (x->decl_ok)
        tpd_str_printf(&t, "  policy      %s\n", tpd_cov_policy_name(x->d.policy));
    if (x->surveyed) {
        if (x->u.known)
            tpd_str_printf(&t, "  universe    %lld IDs (%s)\n", (long long)x->u.n, x->u_from);
        else
            tpd_str_printf(&t, "  universe    unknown (%s)\n", x->u_from);
        if (x->d.policy == TPD_COV_EXPECTED_PADDING) {
            tpd_str_printf(&t, "  padding     %s %lld repeated observation(s) per epoch (%s)",
                           pad_rule(x), (long long)x->padding, x->pad_from);
            if (x->au != NULL) {
                tpd_str_puts(&t, "; observed ");
                pad_seen_text(x, &t);
            }
            tpd_str_puts(&t, "\n");
        }
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
    if (x->au != NULL) counts_text(x, &t);
    if (f != NULL && f->path != NULL) {
        finding_text(x, &t, f);
        snprintf(out->path, sizeof out->path, "%s", f->path);
    }
    explain(x, f);
    if (x->why.n) {
        tpd_str_printf(&t, "\n%s\n", oc == TPD_FAIL ? "why (from the evidence)" : "why");
        tpd_str_puts(&t, x->why.text.s);
    }

    out->json = tpd_json_dump(report_json(x, oc, f));
    out->text = tpd_str_steal(&t);
    tpd_str_free(&x->head);
    tpd_why_free(&x->why);
    if (out->text == NULL || out->json == NULL) {
        tpd_result_clear(out);
        return TP_ENOMEM;
    }
    return TP_OK;
}

tp_err tpd_cctx_say(ctx *x, tpd_outcome oc, tpd_result *out, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tpd_str_printf(&x->head, "  %s\n", line);
    return tpd_cctx_finish(x, oc, NULL, out);
}
