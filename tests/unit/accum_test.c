/* SPDX-License-Identifier: MIT
 * accum_test.c -- gradient-accumulation parity from hand-built observations:
 * captured values, accumulation windows, the factors and the mean-of-means
 * signature, and the verdict's outcomes and phases. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/checks/accum/verdict.h"
#include "daemon/checks/accum/windows.h"
#include "daemon/obs/values.h"
#include "testdir.h"

/* ---- values ---- */

START_TEST(test_values_decode_dtypes)
{
    float f[2] = {1.5f, -2.25f};
    uint16_t h[2] = {0x3c00, 0xc000}; /* float16 1, -2 */
    uint16_t bf[1] = {0x3fc0};        /* bfloat16 1.5 */
    uint8_t i16[2] = {0xfe, 0xff};    /* int16 -2 */
    double *v;
    size_t n;
    ck_assert_int_eq(tpd_values_decode("float32", f, sizeof f, &v, &n), TP_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(v[0] == 1.5 && v[1] == -2.25);
    free(v);
    ck_assert_int_eq(tpd_values_decode("torch.float16", h, sizeof h, &v, &n), TP_OK);
    ck_assert(v[0] == 1.0 && v[1] == -2.0);
    free(v);
    ck_assert_int_eq(tpd_values_decode("bfloat16", bf, sizeof bf, &v, &n), TP_OK);
    ck_assert(v[0] == 1.5);
    free(v);
    ck_assert_int_eq(tpd_values_decode("int16", i16, sizeof i16, &v, &n), TP_OK);
    ck_assert(v[0] == -2.0);
    free(v);
    ck_assert_int_eq(tpd_values_decode("float32", f, 3, &v, &n), TP_EPROTO);
    ck_assert_int_eq(tpd_values_decode("complex64", f, 8, &v, &n), TP_EINVAL);
}
END_TEST

START_TEST(test_values_within_and_fit)
{
    double b[3] = {1.0, -2.0, 0.0}, a[3] = {1.00005, -2.0, 5e-7}, c[3] = {4.0, -8.0, 0.0};
    double k, resid;
    size_t worst = 99;
    ck_assert(tpd_values_within(a, b, 3, 1e-4, 1e-6, &worst));
    ck_assert(!tpd_values_within(c, b, 3, 1e-4, 1e-6, &worst));
    ck_assert_uint_eq(worst, 1);
    tpd_values_fit(c, b, 3, &k, &resid);
    ck_assert(fabs(k - 4.0) < 1e-12 && resid < 1e-12);
    tpd_values_fit(a, c + 2, 1, &k, &resid); /* a zero reference */
    ck_assert(k == 0 && resid == 1);
}
END_TEST

START_TEST(test_accum_ratio_causes_and_mean_of_means)
{
    double l[3] = {0.5 / 3, 1.0 / 3, 2.0 / 3}; /* means 0.5, 1, 2, each divided by 3 */
    int64_t t[3] = {10, 20, 10}, same[3] = {10, 10, 10};
    double full = (0.5 * 10 + 1.0 * 20 + 2.0 * 10) / 40;
    ck_assert_int_eq(tpd_ratio_cause_of(4.0001, 4, 4), TPD_RC_NOT_DIVIDED);
    ck_assert_int_eq(tpd_ratio_cause_of(0.25, 4, 4), TPD_RC_TWICE);
    ck_assert_int_eq(tpd_ratio_cause_of(0.5, 4, 2), TPD_RC_PARTIAL);
    /* one micro-batch of N=2 at 1/2: k/N, not divided twice (1/4) */
    ck_assert_int_eq(tpd_ratio_cause_of(0.5, 2, 1), TPD_RC_PARTIAL);
    ck_assert_int_eq(tpd_ratio_cause_of(0.5, 2, 2), TPD_RC_TWICE);
    ck_assert_int_eq(tpd_ratio_cause_of(1.3, 4, 4), TPD_RC_NONE);
    ck_assert(tpd_mean_of_means(l, t, 3, full, 1e-9, 0));
    ck_assert(!tpd_mean_of_means(l, same, 3, full, 1e-9, 0));
    ck_assert(!tpd_mean_of_means(l, t, 3, full * 1.1, 1e-9, 0));
}
END_TEST

/* ---- a run by hand: full (one backward per update), micro (N) ---- */

typedef struct world {
    tpd_run *run;
    tpd_exec ex[2];
    tpd_proc pr[2];
    uint64_t seq[2];
    char blobs[512]; /* a blob store for captured values, when made */
} world;

enum { FULL, MICRO };

static tpd_val tensor(uint8_t tag, double sum)
{
    static const int64_t four[1] = {4};
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 't';
    v.dtype = "float32";
    v.ndim = 1;
    v.shape = four;
    memset(v.digest, tag, sizeof v.digest);
    v.stats.sum = v.stats.l2 = sum;
    v.stats.maxabs = sum / 2;
    return v;
}

static void item(world *w, int who, int64_t step, const char *path, tpd_val v)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.step = step;
    it.path = path;
    it.group = tpd_group_of(path);
    it.ord = w->pr[who].timeline.n;
    it.v = v;
    ck_assert_int_eq(tpd_items_push(w->run->arena, &w->pr[who].timeline, &it), TP_OK);
}

static void mark(world *w, int who, int64_t step, tp_kind kind, const char *op, double f)
{
    tpd_proc *p = &w->pr[who];
    tpd_mark *m = tpd_arena_grow(w->run->arena, p->marks, &p->marks_cap, p->nmarks + 1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    p->marks = m;
    m = &p->marks[p->nmarks++];
    memset(m, 0, sizeof *m);
    m->seq = w->seq[who]++;
    m->step = step;
    m->kind = kind;
    m->op = op;
    m->has_f = true;
    m->f = f;
    m->mean_over = -1;
    if (kind == TP_K_SCHED) m->has_f = false;
}

/* update adds update u to who: the start-of-update state, nbwd backward
 * calls of loss each, the step (grad tag g, lr 0.1) and a scheduler step. */
static void update(world *w, int who, int64_t u, int nbwd, double loss, uint8_t g)
{
    item(w, who, u, "model.fc.weight", tensor((uint8_t)(10 + u), 1.0 + (double)u));
    item(w, who, u, "optimizer.state.fc.weight.momentum_buffer", tensor((uint8_t)(30 + u), 2));
    item(w, who, u, "rng.torch_cpu", tensor(7, 3.0));
    for (int i = 0; i < nbwd; i++) mark(w, who, u, TP_K_BACKWARD, NULL, loss);
    mark(w, who, u, TP_K_STEP, "pre", 0.1);
    item(w, who, u, "grad.fc.weight", tensor(g, 0.5));
    mark(w, who, u, TP_K_STEP, "post", 0);
    w->pr[who].steps = u + 1;
    mark(w, who, u + 1, TP_K_SCHED, NULL, 0);
}

static void final_state(world *w, int who, int64_t u)
{
    item(w, who, u, "model.fc.weight", tensor((uint8_t)(10 + u), 1.0 + (double)u));
    item(w, who, u, "optimizer.state.fc.weight.momentum_buffer", tensor((uint8_t)(30 + u), 2));
}

static world *blank(const char *params)
{
    static const char *roles[2] = {"full", "micro"};
    world *w = calloc(1, sizeof *w);
    tpd_arena *a = tpd_arena_create();
    ck_assert_ptr_nonnull(w);
    w->run = tpd_arena_alloc(a, sizeof *w->run);
    memset(w->run, 0, sizeof *w->run);
    w->run->arena = a;
    w->run->id = 1;
    w->run->check = "accum";
    w->run->params = params;
    w->run->execs = w->ex;
    w->run->nexecs = 2;
    for (int k = 0; k < 2; k++) {
        w->ex[k].id = k + 1;
        w->ex[k].role = roles[k];
        w->ex[k].has_status = true;
        w->ex[k].procs = &w->pr[k];
        w->ex[k].nprocs = 1;
        w->pr[k].pid = 100 + k;
        w->pr[k].has_bye = true;
        w->pr[k].bye_reason = "exit";
        w->pr[k].nevents = w->pr[k].sent = 50;
        w->pr[k].max_seq = 49;
    }
    return w;
}

/* clean: 2 updates, N=4, equal digests everywhere (as equal as values get). */
static world *clean(double micro_loss, int micro_bwd)
{
    world *w = blank("{\"micro\": 4, \"updates\": 2, \"rtol\": 1e-4, \"atol\": 1e-6}");
    for (int u = 0; u < 2; u++) {
        update(w, FULL, u, 1, 0.8, (uint8_t)(50 + u));
        update(w, MICRO, u, micro_bwd, micro_loss, (uint8_t)(50 + u));
    }
    final_state(w, FULL, 2);
    final_state(w, MICRO, 2);
    return w;
}

static tpd_result judge(world *w)
{
    tpd_cmp_opts o = {false, 0, 0, NULL};
    tpd_result res;
    for (int k = 0; k < 2; k++) tpd_proc_finish(&w->pr[k]);
    ck_assert_int_eq(tpd_verdict_accum(w->run, &o, &res), TP_OK);
    ck_assert_ptr_nonnull(strstr(res.json, "\"check\":\"accum\""));
    ck_assert_ptr_nonnull(strstr(res.text, "rtol=0.0001 atol=1e-06"));
    return res;
}

static void drop(world *w)
{
    if (w->blobs[0]) td_remove(w->blobs);
    tpd_arena_destroy(w->run->arena);
    free(w);
}

START_TEST(test_accum_windows_count_calls_per_update)
{
    world *w = clean(0.2, 4);
    tpd_awins ws;
    ck_assert_int_eq(tpd_awins_build(w->run->arena, &w->pr[MICRO], &ws), TP_OK);
    ck_assert_uint_eq(ws.n, 2);
    ck_assert_int_eq(ws.v[0].nbwd, 4);
    ck_assert(fabs(ws.v[0].loss - 0.8) < 1e-12);
    ck_assert_int_eq(ws.v[0].nsched, 0);
    ck_assert_int_eq(ws.v[1].nsched, 1);
    ck_assert_int_eq(ws.tail.nsched, 1);
    ck_assert(ws.v[0].has_lr && ws.v[0].lr == 0.1);
    drop(w);
}
END_TEST

START_TEST(test_accum_clean_passes)
{
    world *w = clean(0.2, 4);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_undivided_loss_fails_at_denominator)
{
    world *w = clean(0.8, 4);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss_accounting.denominator");
    ck_assert_ptr_nonnull(strstr(res.text, "not divided by N"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_step_per_micro_fails_at_steps)
{
    world *w = clean(0.2, 1);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "optimizer.steps");
    ck_assert_ptr_nonnull(strstr(res.text, "per micro-batch"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_gradient_difference_fails_at_grad)
{
    world *w = clean(0.2, 4);
    for (size_t i = 0; i < w->pr[MICRO].timeline.n; i++)
        if (!strcmp(w->pr[MICRO].timeline.v[i].path, "grad.fc.weight") &&
            w->pr[MICRO].timeline.v[i].step == 1)
            w->pr[MICRO].timeline.v[i].v = tensor(99, 5.0); /* stats prove it */
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "grad.fc.weight");
    ck_assert_int_eq(res.step, 1);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* set_at changes the value of path in who's timeline at update u (all
 * updates when u < 0). */
static void set_at(world *w, int who, int64_t u, const char *path, tpd_val v)
{
    for (size_t i = 0; i < w->pr[who].timeline.n; i++)
        if (!strcmp(w->pr[who].timeline.v[i].path, path) &&
            (u < 0 || w->pr[who].timeline.v[i].step == u))
            w->pr[who].timeline.v[i].v = v;
}

/* seed records torch.manual_seed(seed) before who's first update. */
static void seed(world *w, int who, int64_t seed)
{
    tpd_restore *r = tpd_arena_alloc(w->run->arena, sizeof *r);
    memset(r, 0, sizeof *r);
    r->what = "rng", r->obj = "rng.torch_cpu", r->op = "seed";
    r->has_seed = true, r->seed = seed;
    w->pr[who].restores = r;
    w->pr[who].nrestores = 1;
}

START_TEST(test_accum_initial_state_differs_abstains)
{
    world *w = clean(0.2, 4);
    set_at(w, MICRO, 0, "model.fc.weight", tensor(77, 2.0));
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "initial states differ at the first backward: "
                                           "model.fc.weight"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* The same start, digested by two functions (on the device in one run, on
 * the host in the other): not called different, and not shown equal. */
START_TEST(test_accum_initial_state_of_other_digest_kinds_abstains)
{
    world *w = clean(0.2, 4);
    tpd_val v = tensor(10, 1.0); /* update 0's model.fc.weight, as clean() made it */
    snprintf(v.dkind, sizeof v.dkind, "dev1");
    set_at(w, MICRO, 0, "model.fc.weight", v);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "initial states cannot be compared at the first "
                                           "backward: model.fc.weight (digests of different "
                                           "kinds)"));
    ck_assert_ptr_null(strstr(res.text, "initial states differ"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_rng_seeded_differently_abstains)
{
    world *w = clean(0.2, 4);
    set_at(w, MICRO, -1, "rng.torch_cpu", tensor(8, 3.0));
    seed(w, FULL, 1);
    seed(w, MICRO, 2);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "did not seed it alike"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* Seeded alike, the micro run's RNG is elsewhere at its first backward
 * (it draws by micro-batch): matching updates PASS, and say so. */
START_TEST(test_accum_rng_drawn_in_pieces_passes_when_updates_match)
{
    world *w = clean(0.2, 4);
    set_at(w, MICRO, -1, "rng.torch_cpu", tensor(8, 3.0));
    seed(w, FULL, 1);
    seed(w, MICRO, 1);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "yet every update matched"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ... and when an update differs, randomness cannot be ruled out: ABSTAIN,
 * not FAIL. */
START_TEST(test_accum_rng_drawn_in_pieces_abstains_when_updates_differ)
{
    world *w = clean(0.2, 4);
    set_at(w, MICRO, -1, "rng.torch_cpu", tensor(8, 3.0));
    set_at(w, MICRO, 1, "grad.fc.weight", tensor(99, 5.0));
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "cannot be put down to accumulation"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ... unless the cause is one random draws cannot produce: a loss not
 * divided by N is a FAIL whatever the RNG did. */
START_TEST(test_accum_rng_drawn_in_pieces_still_fails_an_exact_factor)
{
    world *w = clean(0.8, 4);
    set_at(w, MICRO, -1, "rng.torch_cpu", tensor(8, 3.0));
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss_accounting.denominator");
    ck_assert_ptr_nonnull(strstr(res.text, "does not depend on random draws"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_window_counts_and_missing_micro)
{
    tpd_awin m, f;
    int64_t have, want;
    const char *unit;
    memset(&m, 0, sizeof m);
    memset(&f, 0, sizeof f);
    m.nbwd = m.nmean = 1, m.mean_total = 4;
    f.nbwd = f.nmean = 1, f.mean_total = 8;
    ck_assert(tpd_awin_counts(&m, &f, &have, &want, &unit));
    ck_assert_str_eq(unit, "elements");
    ck_assert(have == 4 && want == 8);
    m.nbatches = f.nbatches = 1, m.samples = 4, f.samples = 8; /* samples come first */
    ck_assert(tpd_awin_counts(&m, &f, &have, &want, &unit));
    ck_assert_str_eq(unit, "samples");
    m.nbatches = 0, m.nmean = 0; /* a backward without a count, no DataLoader */
    ck_assert(!tpd_awin_counts(&m, &f, &have, &want, &unit));
    ck_assert_int_eq(tpd_missing_micro(1, 4, 8), 1); /* 1 of 2 */
    ck_assert_int_eq(tpd_missing_micro(2, 8, 16), 2);
    ck_assert_int_eq(tpd_missing_micro(2, 8, 8), 0);  /* complete */
    ck_assert_int_eq(tpd_missing_micro(1, 4, 10), 0); /* not whole micro-batches */
    ck_assert_int_eq(tpd_missing_micro(2, 7, 16), 0); /* unequal micro-batches */
    ck_assert(tpd_near_factor(65536.02, 65536) && !tpd_near_factor(60000, 65536));
}
END_TEST

/* mean_over says the element count of every backward's mean-reduced loss */
static void counts(world *w, int who, int64_t n)
{
    for (size_t i = 0; i < w->pr[who].nmarks; i++)
        if (w->pr[who].marks[i].kind == TP_K_BACKWARD) w->pr[who].marks[i].mean_over = n;
}

/* The micro-batch run's last update holds 1 micro-batch of 4 elements where
 * the reference's last covers 8: a micro-batch is missing, named with the
 * counts before any loss factor. */
START_TEST(test_accum_missing_micro_batch_named_before_any_factor)
{
    world *w = blank("{\"micro\": 4, \"updates\": 2}");
    update(w, FULL, 0, 1, 0.8, 50);
    update(w, MICRO, 0, 4, 0.2, 50);
    update(w, FULL, 1, 1, 0.5, 51);
    update(w, MICRO, 1, 1, 0.13, 52);
    counts(w, FULL, 16);
    counts(w, MICRO, 4);
    final_state(w, FULL, 2);
    final_state(w, MICRO, 2);
    for (size_t i = 0; i < w->pr[FULL].nmarks; i++)
        if (w->pr[FULL].marks[i].kind == TP_K_BACKWARD && w->pr[FULL].marks[i].step == 1)
            w->pr[FULL].marks[i].mean_over = 8;
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "optimizer.steps");
    ck_assert_int_eq(res.step, 1);
    ck_assert_ptr_nonnull(strstr(res.text, "a micro-batch is missing"));
    ck_assert_ptr_nonnull(strstr(res.text, "holds 1 micro-batch (4 elements)"));
    ck_assert_ptr_null(strstr(res.text, "not normalised"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* Both runs' last update is incomplete alike (8 elements each): the data
 * ran out in both, and the phases after the call counts judge it. */
START_TEST(test_accum_incomplete_window_alike_is_not_missing)
{
    world *w = clean(0.2, 4);
    counts(w, FULL, 16);
    counts(w, MICRO, 4);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "initial state  verified equal"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"verified_equal\":true"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"declared\":{\"micro\":4,\"updates\":2"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* last_window: N=2, the last update of both runs holds 1 micro-batch (of
 * loss micro_loss against the reference's 0.6), no element counts. */
static world *last_window(double micro_loss)
{
    world *w = blank("{\"micro\": 2, \"updates\": 2, \"rtol\": 1e-4, \"atol\": 1e-6}");
    update(w, FULL, 0, 1, 0.8, 50);
    update(w, MICRO, 0, 2, 0.4, 50);
    update(w, FULL, 1, 1, 0.6, 51);
    update(w, MICRO, 1, 1, micro_loss, 52);
    final_state(w, FULL, 2);
    final_state(w, MICRO, 2);
    return w;
}

/* One micro-batch of N=2 at 1/N: the backward count names an incomplete
 * window divided by N, not a loss divided twice (the full update matched). */
START_TEST(test_accum_incomplete_window_of_one_is_not_twice)
{
    world *w = last_window(0.3);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss_accounting.denominator");
    ck_assert_int_eq(res.step, 1);
    ck_assert_msg(strstr(res.text, "an incomplete final window") != NULL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "this update, the last of both runs, holds 1 where a full one "
                                   "holds N=2; the full updates before it matched, so each loss "
                                   "was divided by N once, not twice") != NULL,
                  "%s", res.text);
    ck_assert_msg(strstr(res.text, "divided by N twice (") == NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* The same window at a factor that is not k/N: still an incomplete window,
 * by its backward count, whose factor the evidence does not explain. */
START_TEST(test_accum_incomplete_window_named_by_backward_count)
{
    world *w = last_window(0.2);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss_accounting.denominator");
    ck_assert_msg(strstr(res.text, "an incomplete final window: the last update (1) of the "
                                   "micro-batch run holds 1 backward call where N=2") != NULL,
                  "%s", res.text);
    ck_assert_msg(strstr(res.text, "not the window's k/N = 0.5") != NULL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "names no cause") == NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* captured stores the float32 values of *v in w's blob store, under its
 * digest, as the daemon does. */
static void captured(world *w, tpd_val *v, const float *f, size_t n)
{
    char dir[600], path[700];
    FILE *fp;
    if (!w->blobs[0]) {
        td_make(w->blobs, sizeof w->blobs);
        w->run->blobs = w->blobs;
    }
    snprintf(dir, sizeof dir, "%s/%02x", w->blobs, v->digest[0]);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/", dir);
    for (int i = 1; i < TP_DIGEST_LEN; i++)
        snprintf(path + strlen(path), sizeof path - strlen(path), "%02x", v->digest[i]);
    ck_assert_ptr_nonnull(fp = fopen(path, "wb"));
    ck_assert_uint_eq(fwrite(f, sizeof *f, n, fp), n);
    fclose(fp);
    v->blob = true;
}

/* grads sets update u's gradient: the reference's values fg, micro's c x
 * them (captured, so the factor can be fitted). */
static void grads(world *w, int64_t u, double c)
{
    float fg[4] = {0.5f, -0.25f, 0.125f, 1.0f}, mg[4];
    tpd_val vf = tensor(50, 1.375), vm = tensor(60, 1.375 * c);
    for (int i = 0; i < 4; i++) mg[i] = (float)(fg[i] * c);
    if (c == 0) vm.stats.sum = vm.stats.l2 = vm.stats.maxabs = 0;
    captured(w, &vf, fg, 4);
    captured(w, &vm, mg, 4);
    set_at(w, FULL, u, "grad.fc.weight", vf);
    set_at(w, MICRO, u, "grad.fc.weight", vm);
}

/* amp adds GradScaler.scale calls at scale S before update u's first
 * backward of who. */
static void amp_scale(world *w, int who, int64_t u, double S)
{
    tpd_proc *p = &w->pr[who];
    for (size_t i = 0; i < p->nmarks; i++) {
        if (p->marks[i].kind != TP_K_BACKWARD || p->marks[i].step != u) continue;
        mark(w, who, u, TP_K_AMP, "scale", S);
        /* move it before the backward: marks are in emission order */
        tpd_mark t = p->marks[p->nmarks - 1];
        memmove(&p->marks[i + 1], &p->marks[i], (p->nmarks - 1 - i) * sizeof t);
        p->marks[i] = t;
        return;
    }
}

/* The gradients at the step are exactly S x the reference's, S the
 * GradScaler's scale of the update: the optimizer stepped on scaled
 * gradients, named with S. */
START_TEST(test_accum_gradients_times_scaler_scale)
{
    world *w = clean(0.2, 4);
    amp_scale(w, FULL, 0, 65536);
    amp_scale(w, MICRO, 0, 65536);
    grads(w, 0, 65536);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "grad.fc.weight");
    ck_assert_ptr_nonnull(strstr(res.text, "65536 is the GradScaler's scale S"));
    ck_assert_ptr_null(strstr(res.text, "the gradients differ"));
    tpd_result_clear(&res);
    drop(w);
    /* the same factor without a GradScaler names no cause, and says so */
    w = clean(0.2, 4);
    grads(w, 0, 65536);
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "the evidence names no cause"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* zero_grad before the step: the micro-batch run's gradients are absent
 * (set_to_none) or zero at the step although backward calls ran. */
START_TEST(test_accum_gradients_absent_or_zero_at_the_step)
{
    world *w = clean(0.2, 4);
    tpd_proc *p = &w->pr[MICRO];
    size_t k = 0;
    for (size_t i = 0; i < p->timeline.n; i++) /* drop micro's gradients */
        if (strcmp(p->timeline.v[i].path, "grad.fc.weight") != 0)
            p->timeline.v[k++] = p->timeline.v[i];
    p->timeline.n = k;
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "grad.fc.weight");
    ck_assert_ptr_nonnull(strstr(res.text, "gradients were absent at the optimizer step"));
    ck_assert_ptr_nonnull(strstr(res.text, "zero_grad ran before the optimizer step"));
    tpd_result_clear(&res);
    drop(w);
    w = clean(0.2, 4);
    grads(w, 0, 0);
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "gradients were all zero"));
    ck_assert_ptr_nonnull(strstr(res.text, "zero_grad ran before the optimizer step"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* zero_grad_at inserts an optimizer.zero_grad mark into who's marks of
 * update u: before its step's pre phase (before_step), else before its
 * first backward. */
static void zero_grad_at(world *w, int who, int64_t u, bool before_step)
{
    tpd_proc *p = &w->pr[who];
    for (size_t i = 0; i < p->nmarks; i++) {
        const tpd_mark *at = &p->marks[i];
        bool here = before_step ? at->kind == TP_K_STEP && strcmp(at->op, "pre") == 0
                                : at->kind == TP_K_BACKWARD;
        if (!here || at->step != u) continue;
        mark(w, who, u, TP_K_ZERO_GRAD, "optimizer", 0);
        tpd_mark t = p->marks[p->nmarks - 1];
        t.has_f = false;
        memmove(&p->marks[i + 1], &p->marks[i], (p->nmarks - 1 - i) * sizeof t);
        p->marks[i] = t;
        return;
    }
    ck_abort_msg("no update %lld", (long long)u);
}

/* drop_grads removes who's gradients from its timeline. */
static void drop_grads(world *w, int who)
{
    tpd_proc *p = &w->pr[who];
    size_t k = 0;
    for (size_t i = 0; i < p->timeline.n; i++)
        if (strcmp(p->timeline.v[i].path, "grad.fc.weight") != 0)
            p->timeline.v[k++] = p->timeline.v[i];
    p->timeline.n = k;
}

/* The windows place zero_grad calls: before the first backward, or between
 * the last backward and the step; another optimizer's are not counted in
 * the windows, only in the run's total. */
START_TEST(test_accum_windows_place_zero_grad)
{
    world *w = clean(0.2, 4);
    tpd_awins ws;
    zero_grad_at(w, MICRO, 0, true);
    zero_grad_at(w, MICRO, 1, false);
    zero_grad_at(w, MICRO, 1, true);
    mark(w, MICRO, 2, TP_K_ZERO_GRAD, "optimizer", 0);
    w->pr[MICRO].marks[w->pr[MICRO].nmarks - 1].n = 1; /* another optimizer's */
    ck_assert_int_eq(tpd_awins_build(w->run->arena, &w->pr[MICRO], &ws), TP_OK);
    ck_assert_int_eq(ws.nzero, 4);
    ck_assert_int_eq(ws.v[0].nzero, 1);
    ck_assert_int_eq(ws.v[0].nzero_lead, 0);
    ck_assert_str_eq(ws.v[0].zero_at_step, "optimizer");
    ck_assert_int_eq(ws.v[1].nzero, 2);
    ck_assert_int_eq(ws.v[1].nzero_lead, 1);
    ck_assert_ptr_nonnull(ws.v[1].zero_at_step);
    ck_assert_int_eq(ws.tail.nzero, 0);
    drop(w);
    w = clean(0.2, 4);
    zero_grad_at(w, MICRO, 0, false);
    ck_assert_int_eq(tpd_awins_build(w->run->arena, &w->pr[MICRO], &ws), TP_OK);
    ck_assert_int_eq(ws.v[0].nzero_lead, 1);
    ck_assert_ptr_null(ws.v[0].zero_at_step); /* a backward came after it */
    drop(w);
}
END_TEST

/* A zero_grad mark between the last backward and the step: the
 * explanation says it was called there, as fact, for absent and for zero
 * gradients; a run that reports zero_grad calls, none there, gets no
 * zero_grad blamed. */
START_TEST(test_accum_zero_grad_before_step_observed)
{
    world *w = clean(0.2, 4);
    drop_grads(w, MICRO);
    zero_grad_at(w, MICRO, 0, true);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "grad.fc.weight");
    ck_assert_ptr_nonnull(strstr(res.text, "gradients were absent at the optimizer step"));
    ck_assert_ptr_nonnull(strstr(res.text, "zero_grad (optimizer.zero_grad) was called after the "
                                           "last backward of update 0 and before its optimizer "
                                           "step, so the step had no gradients to apply"));
    ck_assert_ptr_null(strstr(res.text, "inferred"));
    tpd_result_clear(&res);
    drop(w);
    w = clean(0.2, 4);
    grads(w, 0, 0);
    zero_grad_at(w, MICRO, 0, true);
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "gradients were all zero"));
    ck_assert_ptr_nonnull(strstr(res.text, "was called after the last backward of update 0"));
    ck_assert_ptr_nonnull(strstr(res.text, "set_to_none=False leaves zeros"));
    ck_assert_ptr_null(strstr(res.text, "inferred"));
    tpd_result_clear(&res);
    drop(w);
    w = clean(0.2, 4);
    drop_grads(w, MICRO);
    zero_grad_at(w, MICRO, 0, false); /* before the first backward: not the cause */
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "no zero_grad call came between its last backward"));
    ck_assert_ptr_null(strstr(res.text, "zero_grad ran before the optimizer step"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* A carry-over where the run reports zero_grad calls, none between update
 * 0's step and update 1's first backward: the line rests on the calls. */
START_TEST(test_accum_carry_over_observed)
{
    float g0[4] = {0.5f, -0.25f, 0.125f, 1.0f}, g1[4] = {0.25f, 0.5f, -0.5f, 0.75f}, sum[4];
    world *w = clean(0.2, 4);
    tpd_val f0 = tensor(50, 1.375), f1 = tensor(51, 1.0), m1 = tensor(61, 2.375);
    for (int i = 0; i < 4; i++) sum[i] = g0[i] + g1[i];
    captured(w, &f0, g0, 4);
    captured(w, &f1, g1, 4);
    captured(w, &m1, sum, 4);
    set_at(w, FULL, 0, "grad.fc.weight", f0);
    set_at(w, MICRO, 0, "grad.fc.weight", f0);
    set_at(w, FULL, 1, "grad.fc.weight", f1);
    set_at(w, MICRO, 1, "grad.fc.weight", m1);
    zero_grad_at(w, MICRO, 0, false);
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "carry-over"));
    ck_assert_ptr_nonnull(strstr(res.text, "no zero_grad call came between update 0's optimizer "
                                           "step and update 1's first backward"));
    ck_assert_ptr_nonnull(strstr(res.text, "so zero_grad does not run after the optimizer step"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* An initial state that differs: the JSON evidence says it was not
 * verified equal and names it. */
START_TEST(test_accum_initial_state_evidence)
{
    world *w = clean(0.2, 4);
    set_at(w, MICRO, 0, "model.fc.weight", tensor(77, 2.0));
    tpd_result res = judge(w);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.json, "\"verified_equal\":false"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"differ\":[\"model.fc.weight\"]"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"compared\":{\"model\":1,\"optimizer\":1,"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_accum_short_reference_or_failed_run_is_error)
{
    world *w = clean(0.2, 4);
    tpd_result res;
    w->run->params = "{\"micro\": 4, \"updates\": 3}";
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "the reference made 2 optimizer updates"));
    tpd_result_clear(&res);
    drop(w);
    w = clean(0.2, 4);
    w->ex[MICRO].status = 1;
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("accum");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_values_decode_dtypes);
    tcase_add_test(tc, test_values_within_and_fit);
    tcase_add_test(tc, test_accum_ratio_causes_and_mean_of_means);
    tcase_add_test(tc, test_accum_windows_count_calls_per_update);
    tcase_add_test(tc, test_accum_clean_passes);
    tcase_add_test(tc, test_accum_undivided_loss_fails_at_denominator);
    tcase_add_test(tc, test_accum_step_per_micro_fails_at_steps);
    tcase_add_test(tc, test_accum_gradient_difference_fails_at_grad);
    tcase_add_test(tc, test_accum_initial_state_differs_abstains);
    tcase_add_test(tc, test_accum_initial_state_of_other_digest_kinds_abstains);
    tcase_add_test(tc, test_accum_rng_seeded_differently_abstains);
    tcase_add_test(tc, test_accum_rng_drawn_in_pieces_passes_when_updates_match);
    tcase_add_test(tc, test_accum_rng_drawn_in_pieces_abstains_when_updates_differ);
    tcase_add_test(tc, test_accum_rng_drawn_in_pieces_still_fails_an_exact_factor);
    tcase_add_test(tc, test_accum_short_reference_or_failed_run_is_error);
    tcase_add_test(tc, test_accum_window_counts_and_missing_micro);
    tcase_add_test(tc, test_accum_missing_micro_batch_named_before_any_factor);
    tcase_add_test(tc, test_accum_incomplete_window_alike_is_not_missing);
    tcase_add_test(tc, test_accum_incomplete_window_of_one_is_not_twice);
    tcase_add_test(tc, test_accum_incomplete_window_named_by_backward_count);
    tcase_add_test(tc, test_accum_gradients_times_scaler_scale);
    tcase_add_test(tc, test_accum_gradients_absent_or_zero_at_the_step);
    tcase_add_test(tc, test_accum_windows_place_zero_grad);
    tcase_add_test(tc, test_accum_zero_grad_before_step_observed);
    tcase_add_test(tc, test_accum_carry_over_observed);
    tcase_add_test(tc, test_accum_initial_state_evidence);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
