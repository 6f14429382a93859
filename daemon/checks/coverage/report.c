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

static const char *pad_rule(const ctx *x)
{
    return x->d.padding_exact ? "exactly" : "at most";
}

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
        tpd_str_printf(j, "{\"repeats\":%lld,\"rule\":\"%s\",\"from\":", (long long)x->padding,
                       x->d.padding_exact ? "exactly" : "at_most");
        tpd_str_jsonz(j, x->pad_from);
        tpd_str_puts(j, "}");
    } else {
        tpd_str_puts(j, "null");
    }
    tpd_str_puts(j, ",\"sample_id\":");
    tpd_str_jsonz(j, x->d.sample_id);
    tpd_str_printf(j, ",\"examples\":%lld}", (long long)x->d.examples);
}

static void ranks_json(ctx *x, tpd_str *j)
{
    tpd_str_puts(j, "[");
    for (int64_t r = 0; x->ranks && r < x->world; r++) {
        const tpd_cov_rank *k = &x->ranks[r];
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
        tpd_str_puts(t,
                     "    it is not a wrap-around ID: padding repeats only the first IDs dealt\n");
    else
        tpd_str_printf(t,
                       "    this wrap-around ID was repeated %lld time(s); a padding of %lld "
                       "allows %lld\n",
                       (long long)f->repeats, (long long)x->padding, (long long)f->allowed);
}

static void finding_json(ctx *x, tpd_str *j, const tpd_cov_finding *f)
{
    tpd_str_puts(j, "{\"path\":");
    tpd_str_jsonz(j, f->path);
    tpd_str_printf(j, ",\"epoch\":%u", f->epoch);
    if (is(f, "coverage.missing")) {
        tpd_str_printf(j,
                       ",\"rank\":null,\"position\":null,\"missing\":{\"count\":%lld,\"first\":[",
                       (long long)f->nmissing);
        for (int i = 0; i < f->nshown; i++) {
            tpd_str_puts(j, i ? "," : "");
            tpd_cctx_put_id(x, j, f->missing[i]);
        }
        tpd_str_puts(j, "]}}");
        return;
    }
    if (is(f, "coverage.padding_short")) {
        tpd_str_printf(j,
                       ",\"rank\":null,\"position\":null,\"repeats\":%lld,\"expected\":%lld,"
                       "\"rule\":\"exactly\"}",
                       (long long)f->repeats, (long long)f->allowed);
        return;
    }
    if (epochwide(f)) {
        tpd_str_printf(j, ",\"rank\":null,\"position\":null,\"beyond_universe\":%lld}",
                       (long long)f->nextra);
        return;
    }
    tpd_str_printf(j, ",\"rank\":%lld,\"position\":%u,\"item\":%u,\"id\":", (long long)f->rank,
                   f->pos, f->item);
    tpd_cctx_put_id(x, j, f->id);
    tpd_str_puts(j, ",\"worker\":");
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
    if (is(f, "coverage.padding_exceeded"))
        tpd_str_printf(j, ",\"wrap_around\":%s,\"repeats\":%lld,\"allowed\":%lld,\"per_id\":%s",
                       f->wrap ? "true" : "false", (long long)f->repeats, (long long)f->allowed,
                       f->per_id ? "true" : "false");
    tpd_str_puts(j, "}");
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

static void example_json(const ctx *x, tpd_str *j, const tpd_cov_example *e)
{
    tpd_str_puts(j, "{\"id\":");
    tpd_cctx_put_id(x, j, e->id);
    tpd_str_printf(j, ",\"epoch\":%u", e->epoch);
    if (e->rank < 0) {
        tpd_str_puts(j, "}");
        return;
    }
    tpd_str_printf(j, ",\"rank\":%lld,\"position\":%u,\"item\":%u,\"worker\":", (long long)e->rank,
                   e->pos, e->item);
    if (e->has_worker)
        tpd_str_printf(j, "%lld", (long long)e->worker);
    else
        tpd_str_puts(j, "null");
    if (e->has_prev)
        tpd_str_printf(j, ",\"first_seen\":{\"rank\":%lld,\"position\":%u,\"item\":%u}",
                       (long long)e->prev_rank, e->prev_pos, e->prev_item);
    tpd_str_puts(j, "}");
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

/* counts_json writes the counts, the padding and the examples. */
static void counts_json(const ctx *x, tpd_str *j)
{
    const tpd_cov_counts *c = &x->total;
    tpd_str_printf(j,
                   ",\"id_kind\":\"%s\",\"counts\":{\"observations\":%lld,\"unique\":%lld,"
                   "\"missing\":%lld,\"unexpected\":%lld,\"repeated\":%lld,\"same_rank\":%lld,"
                   "\"cross_rank\":%lld,\"violations\":%lld},\"padding\":",
                   x->strs ? "string" : "integer", (long long)c->observations,
                   (long long)c->distinct, (long long)c->missing, (long long)c->unexpected,
                   (long long)c->repeats, (long long)c->same_rank, (long long)c->cross_rank,
                   (long long)c->violations);
    if (x->decl_ok && x->d.policy == TPD_COV_EXPECTED_PADDING && x->surveyed) {
        tpd_str_printf(j, "{\"expected\":%lld,\"rule\":\"%s\",\"observed\":[",
                       (long long)x->padding, x->d.padding_exact ? "exactly" : "at_most");
        for (int64_t e = 0; x->pad_seen && e < x->audited; e++)
            tpd_str_printf(j, "%s%lld", e ? "," : "", (long long)x->pad_seen[e]);
        tpd_str_puts(j, "]}");
    } else {
        tpd_str_puts(j, "null");
    }
    tpd_str_puts(j, ",\"examples\":{");
    for (int k = 0; k < TPD_COV_K__COUNT; k++) {
        size_t n = 0;
        const tpd_cov_example *e = x->au ? tpd_cov_examples(x->au, (tpd_cov_kind)k, &n) : NULL;
        tpd_str_printf(j, "%s\"%s\":[", k ? "," : "", kind_names[k]);
        for (size_t i = 0; i < n; i++) {
            tpd_str_puts(j, i ? "," : "");
            example_json(x, j, &e[i]);
        }
        tpd_str_puts(j, "]");
    }
    tpd_str_puts(j, "}");
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

    tpd_str_printf(&j,
                   "{\"schema_version\":1,\"trainparity_version\":\"0.1.0\",\"check\":\"coverage\","
                   "\"run\":%lld,\"outcome\":\"%s\",\"comparison\":{\"mode\":\"exact\"},"
                   "\"declaration\":",
                   (long long)x->run->id, tpd_outcome_name(oc));
    decl_json(x, &j);
    tpd_str_puts(&j, ",\"first_divergence\":");
    if (f != NULL && f->path != NULL)
        finding_json(x, &j, f);
    else
        tpd_str_puts(&j, "null");
    tpd_str_puts(&j, ",\"reason\":");
    tpd_str_jsonz(&j, x->head.s);
    tpd_str_puts(&j, ",\"explanation\":[");
    tpd_str_puts(&j, x->why.json.s ? x->why.json.s : "");
    tpd_str_puts(&j, "]");
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
        tpd_render_exec_cost_json(&j, x->ex);
        tpd_str_puts(&j, "}");
    } else {
        tpd_str_puts(&j, "null");
    }
    tpd_str_puts(&j, ",\"wall_time\":");
    tpd_render_wall_json(&j, x->run);
    tpd_str_printf(&j, ",\"observations\":%lld,\"distinct\":%lld,\"repeats\":%lld,\"ranks\":",
                   (long long)x->total.observations, (long long)x->total.distinct,
                   (long long)x->total.repeats);
    ranks_json(x, &j);
    counts_json(x, &j);
    tpd_str_puts(&j, "}}\n");
    out->text = tpd_str_steal(&t);
    out->json = tpd_str_steal(&j);
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
