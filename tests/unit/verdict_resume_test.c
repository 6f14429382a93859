/* SPDX-License-Identifier: MIT
 * verdict_resume_test.c -- the resume verdict from hand-built observations:
 * every outcome, the RNG rule, tolerances and the explanations. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/resume/verdict.h"

/* the shape of the tensors built by hand */
static const int64_t FOUR[1] = {4};

/* ---- building a run by hand ---- */

typedef struct world {
    tpd_run *run;
    tpd_exec ex[4];
    tpd_proc pr[4];
    uint64_t seq[4]; /* the next event of each process (data and backward) */
} world;

enum { A, B, I, R };

static tpd_val tensor(uint8_t tag, double sum)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 't';
    v.dtype = "torch.float32";
    v.ndim = 1;
    v.shape = FOUR;
    memset(v.digest, tag, sizeof v.digest);
    v.stats.sum = sum;
    v.stats.l2 = sum;
    v.stats.maxabs = sum / 2;
    return v;
}

static tpd_val num(double f)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 'v';
    v.vtype = TP_V_FLOAT;
    v.f = f;
    return v;
}

static tpd_val integer(int64_t i)
{
    tpd_val v = num(0);
    v.vtype = TP_V_INT;
    v.i = i;
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

/* step_items adds a training step as the agent would observe it: the state
 * at the start of step s (weights w_s, scheduler epoch s, torch RNG r) and
 * the loss of that step. */
static void step_items(world *w, int who, int64_t local, int64_t s, int64_t epoch, uint8_t rng,
                       double loss)
{
    item(w, who, local, "model.fc.weight", tensor((uint8_t)(10 + s), 1.0 + (double)s));
    item(w, who, local, "optimizer.state.fc.weight.exp_avg", tensor((uint8_t)(40 + s), 2.0));
    item(w, who, local, "scheduler.last_epoch", integer(epoch));
    item(w, who, local, "rng.torch_cpu", tensor(rng, 3.0));
    item(w, who, local, "loss", num(loss));
    item(w, who, local, "grad.fc.weight", tensor((uint8_t)(70 + s), 0.5));
}

static tpd_ckpt *ckpt(world *w, int who, uint64_t seq, int64_t step, bool load, uint8_t digest,
                      const char *name)
{
    tpd_proc *p = &w->pr[who];
    tpd_ckpt *c = tpd_arena_grow(w->run->arena, p->ckpts, &p->ckpts_cap, p->nckpts + 1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    p->ckpts = c;
    c = &p->ckpts[p->nckpts++];
    memset(c, 0, sizeof *c);
    c->seq = seq;
    c->step = step;
    c->load = load;
    c->api = "torch";
    c->target = "path";
    c->name = name;
    c->via = "records";
    c->has_digest = true;
    memset(c->digest, digest, sizeof c->digest);
    return c;
}

static void restore(world *w, int who, uint64_t seq, const char *what, const char *obj,
                    const char *op)
{
    tpd_proc *p = &w->pr[who];
    tpd_restore *r =
        tpd_arena_grow(w->run->arena, p->restores, &p->restores_cap, p->nrestores + 1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    p->restores = r;
    r = &p->restores[p->nrestores++];
    memset(r, 0, sizeof *r);
    r->seq = seq;
    r->what = what;
    r->obj = obj;
    r->op = op;
}

/* clean builds a correct resume: 6 steps, saved after step 3 (c = 3). */
static world *clean(void)
{
    static const char *roles[4] = {"A", "B", "I", "R"};
    world *w = calloc(1, sizeof *w);
    tpd_arena *a = tpd_arena_create();
    ck_assert_ptr_nonnull(w);
    w->run = tpd_arena_alloc(a, sizeof *w->run);
    w->run->arena = a;
    w->run->id = 1;
    w->run->check = "resume";
    w->run->execs = w->ex;
    w->run->nexecs = 4;
    for (int k = 0; k < 4; k++) {
        w->ex[k].id = k + 1;
        w->ex[k].role = roles[k];
        w->ex[k].has_status = true;
        w->ex[k].procs = &w->pr[k];
        w->ex[k].nprocs = 1;
        w->pr[k].pid = 100 + k;
        w->pr[k].has_bye = true;
        w->pr[k].bye_reason = "exit";
        w->pr[k].nevents = 50;
        w->pr[k].sent = 50;
        w->pr[k].max_seq = 49;
    }
    for (int64_t s = 0; s < 6; s++) {
        step_items(w, A, s, s, s, (uint8_t)(100 + s), 1.0 / (double)(s + 1));
        step_items(w, B, s, s, s, (uint8_t)(100 + s), 1.0 / (double)(s + 1));
    }
    w->pr[A].steps = w->pr[B].steps = 6;
    ckpt(w, A, 20, 3, false, 0xc3, "/ckpt/a.pt");
    ckpt(w, B, 20, 3, false, 0xc3, "/ckpt/b.pt");
    /* I: three steps, the save at step 3 arms it, then the start of step 3 */
    for (int64_t s = 0; s <= 3; s++)
        step_items(w, I, s, s, s, (uint8_t)(100 + s), 1.0 / (double)(s + 1));
    w->pr[I].steps = 3;
    w->pr[I].bye_reason = "interrupt";
    ckpt(w, I, 20, 3, false, 0xc3, "/ckpt/i.pt")->armed = true;
    /* R: loads I's checkpoint at its step 0, restores, runs steps 3..5 */
    ckpt(w, R, 5, 0, true, 0xc3, "/ckpt/i.pt");
    restore(w, R, 6, "module", "model", "load_state_dict");
    restore(w, R, 7, "optimizer", "optimizer", "load_state_dict");
    restore(w, R, 8, "scheduler", "scheduler", "load_state_dict");
    restore(w, R, 9, "rng", "rng.torch_cpu", "set_state");
    for (int64_t s = 3; s < 6; s++)
        step_items(w, R, s - 3, s, s, (uint8_t)(100 + s), 1.0 / (double)(s + 1));
    w->pr[R].steps = 3;
    return w;
}

static void finish_world(world *w)
{
    for (int k = 0; k < 4; k++) tpd_items_sort(&w->pr[k].timeline);
}

static void drop(world *w)
{
    tpd_arena_destroy(w->run->arena);
    free(w);
}

/* set replaces the value of path at a local step of a process. */
static void set(world *w, int who, int64_t local, const char *path, tpd_val v)
{
    for (size_t i = 0; i < w->pr[who].timeline.n; i++) {
        tpd_item *it = &w->pr[who].timeline.v[i];
        if (it->step == local && strcmp(it->path, path) == 0) {
            it->v = v;
            return;
        }
    }
    ck_abort_msg("no %s at step %lld", path, (long long)local);
}

static tpd_result judge(world *w, const tpd_cmp_opts *o)
{
    tpd_result res;
    static const tpd_cmp_opts exact = {false, 0, 0, NULL};
    finish_world(w);
    ck_assert_int_eq(tpd_verdict_resume(w->run, o ? o : &exact, &res), TP_OK);
    ck_assert_ptr_nonnull(res.text);
    ck_assert_ptr_nonnull(res.json);
    return res;
}

/* lighten makes a process's start-of-step snapshot at a local step light,
 * as the induction mode sends it: no model or optimizer state. */
static void lighten(world *w, int who, int64_t local)
{
    tpd_items *l = &w->pr[who].timeline;
    size_t k = 0;
    int64_t *v;
    for (size_t i = 0; i < l->n; i++)
        if (!(l->v[i].step == local && tpd_induced(&l->v[i]))) l->v[k++] = l->v[i];
    l->n = k;
    v = tpd_arena_grow(w->run->arena, l->light, &l->light_cap, l->nlight + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    l->light = v;
    l->light[l->nlight++] = local; /* callers go in ascending order */
}

/* anchor adds the model's weight of a save's snapshot at a local step. */
static void anchor(world *w, int who, int64_t local, uint8_t tag)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.step = local;
    it.path = "model.fc.weight";
    it.group = TPD_G_MODEL;
    it.ord = w->pr[who].timeline.n;
    it.v = tensor(tag, 7.0);
    it.anchor = true;
    ck_assert_int_eq(tpd_items_push(w->run->arena, &w->pr[who].timeline, &it), TP_OK);
}

/* ---- the tests ---- */

START_TEST(test_verdict_resume_clean_passes)
{
    world *w = clean();
    tpd_result res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "resume: PASS"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"outcome\":\"PASS\""));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_scheduler_not_restored_fails)
{
    world *w = clean();
    tpd_result res;
    /* R's scheduler restarts: last_epoch counts 0, 1, 2 instead of 3, 4, 5 */
    w->pr[R].nrestores = 2; /* module and optimizer only */
    for (int64_t s = 0; s < 3; s++) set(w, R, s, "scheduler.last_epoch", integer(s));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "scheduler.last_epoch");
    ck_assert_int_eq(res.step, 3);
    ck_assert_msg(strstr(res.text, "scheduler state was never loaded") != NULL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "scheduler.last_epoch: 0 after loading, 3 when saved") != NULL,
                  "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_model_fails_even_when_losses_match)
{
    world *w = clean();
    tpd_result res;
    w->pr[R].nrestores = 0;
    set(w, R, 0, "model.fc.weight", tensor(0x55, 9.0));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    ck_assert_ptr_nonnull(strstr(res.text, "the model was never loaded"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* keyed makes R's model restore a load_state_dict(strict=False) given nkeys
 * keys, of which it reported the one missing and the one unexpected key
 * given (NULL: none), and R's model differ after it. */
static void keyed(world *w, int64_t nkeys, const char *missing, const char *unexpected)
{
    tpd_restore *r = &w->pr[R].restores[0];
    ck_assert_str_eq(r->obj, "model");
    r->keys = nkeys;
    r->nmissing = missing != NULL;
    r->missing[0] = missing;
    r->nunexpected = unexpected != NULL;
    r->unexpected[0] = unexpected;
    set(w, R, 0, "model.fc.weight", tensor(0x55, 9.0));
}

START_TEST(test_verdict_resume_load_matched_no_key_is_named)
{
    world *w = clean();
    tpd_result res;
    keyed(w, 1, "fc.weight", "_orig_mod.fc.weight");
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    ck_assert_msg(strstr(res.text, "the model was not restored: its load_state_dict (strict=False) "
                                   "after the checkpoint load matched none of the checkpoint's 1 "
                                   "key, so it put nothing back (the model expected `fc.weight`; "
                                   "the checkpoint has `_orig_mod.fc.weight`: the checkpoint's "
                                   "keys are the model's, under the prefix `_orig_mod.`, as a "
                                   "torch.compile wrapper names them)") != NULL,
                  "%s", res.text);
    ck_assert_msg(strstr(res.text, "was loaded, but") == NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_load_matched_some_keys_is_named)
{
    world *w = clean();
    tpd_result res;
    keyed(w, 3, "fc.weight", "fc.w");
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_msg(strstr(res.text,
                         "the model was only partly restored: its load_state_dict "
                         "(strict=False) after the checkpoint load matched 2 of the "
                         "checkpoint's 3 keys (the model's keys `fc.weight` were not in "
                         "it, and the checkpoint's `fc.w` have no place in the model)") != NULL,
                  "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* entry adds a manifest entry to checkpoint c. */
static void entry(world *w, tpd_ckpt *c, const char *path, tpd_val v)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.path = path;
    it.group = TPD_G_OTHER;
    it.v = v;
    ck_assert_int_eq(tpd_items_push(w->run->arena, &c->manifest, &it), TP_OK);
}

/* twins gives I's checkpoint a twin saved at the same step, as Lightning's
 * ModelCheckpoint saves epoch=...ckpt and last.ckpt: the same weights
 * (the twin's tagged twin_tag), a path that differs; R's model differs. */
static void twins(world *w, uint8_t twin_tag)
{
    tpd_ckpt *t = ckpt(w, I, 21, 3, false, 0xd3, "/ckpt/epoch=0-step=3.ckpt");
    tpd_val path = num(0);
    path.vtype = TP_V_STR;
    path.s = "";
    entry(w, t, "model.fc.weight", tensor(twin_tag, 4.0));
    entry(w, t, "callbacks.last_model_path", path);
    path.s = "/ckpt/i.pt";
    entry(w, &w->pr[I].ckpts[0], "model.fc.weight", tensor(13, 4.0));
    entry(w, &w->pr[I].ckpts[0], "callbacks.last_model_path", path);
    set(w, R, 0, "model.fc.weight", tensor(0x55, 9.0));
}

START_TEST(test_verdict_resume_loaded_twin_is_not_never_loaded)
{
    world *w = clean();
    tpd_result res;
    twins(w, 13);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "R never loaded") == NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
    /* a save at the same step whose weights differ was never loaded */
    w = clean();
    twins(w, 14);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "R never loaded epoch=0-step=3.ckpt, which I saved at step 3") !=
                      NULL,
                  "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_rng_alone_does_not_fail)
{
    world *w = clean();
    tpd_result res;
    /* the torch RNG differs everywhere, but nothing depends on it */
    for (int64_t s = 0; s < 3; s++) set(w, R, s, "rng.torch_cpu", tensor(0x77, 3.0));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "does not matter"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_rng_not_restored_fails_at_rng)
{
    world *w = clean();
    tpd_result res;
    w->pr[R].nrestores = 3; /* no set_rng_state */
    for (int64_t s = 0; s < 3; s++) set(w, R, s, "rng.torch_cpu", tensor(0x77, 3.0));
    set(w, R, 1, "loss", num(0.123)); /* dropout drew other numbers */
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "rng.torch_cpu");
    ck_assert_int_eq(res.step, 3);
    ck_assert_ptr_nonnull(strstr(res.text, "not restored after loading"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_rng_reseeded_is_named)
{
    world *w = clean();
    tpd_result res;
    restore(w, R, 10, "rng", "rng.torch_cpu", "seed");
    for (int64_t s = 0; s < 3; s++) set(w, R, s, "rng.torch_cpu", tensor(0x77, 3.0));
    set(w, R, 0, "loss", num(0.9));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "rng.torch_cpu");
    ck_assert_ptr_nonnull(strstr(res.text, "re-seeded after loading"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_nondeterministic_baselines_abstain)
{
    world *w = clean();
    tpd_result res;
    set(w, B, 1, "loss", num(0.77));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_str_eq(res.path, "loss");
    ck_assert_ptr_nonnull(strstr(res.text, "nondeterminism"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* --once: B runs only when R alone does not PASS.  Without B, a clean run
 * PASSes and asks for nothing; a scheduler not restored FAILs, asks for B
 * (second) and says determinism was not checked.  With B, the run is judged
 * as without --once: the FAIL stands, or B differing from A ABSTAINs. */
START_TEST(test_verdict_resume_once)
{
    world *w = clean();
    tpd_result res;
    w->run->params = "{\"once\": true}";
    w->ex[B].role = "not run";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS && !res.second, "%s", res.text);
    ck_assert_msg(strstr(res.text, "determinism not checked (--once: B did not run)") != NULL, "%s",
                  res.text);
    ck_assert_msg(strstr(res.json, "\"role\":\"B\"") == NULL, "%s", res.json);
    tpd_result_clear(&res);
    w->pr[R].nrestores = 2; /* module and optimizer only */
    for (int64_t s = 0; s < 3; s++) set(w, R, s, "scheduler.last_epoch", integer(s));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL && res.second, "%s", res.text);
    ck_assert_msg(strstr(res.text, "determinism was not checked (--once)") != NULL, "%s", res.text);
    tpd_result_clear(&res);
    w->ex[B].role = "B";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL && !res.second, "%s", res.text);
    ck_assert_str_eq(res.path, "scheduler.last_epoch");
    ck_assert_msg(strstr(res.text, "determinism A and B compared (--once: B ran because R did not "
                                   "simply match A)") != NULL,
                  "%s", res.text);
    ck_assert_msg(strstr(res.text, "determinism was not checked") == NULL, "%s", res.text);
    tpd_result_clear(&res);
    set(w, B, 1, "loss", num(0.77));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ABSTAIN && !res.second, "%s", res.text);
    ck_assert_str_eq(res.path, "loss");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_unmatched_load_is_error)
{
    world *w = clean();
    tpd_result res;
    memset(w->pr[R].ckpts[0].digest, 0x99, TP_DIGEST_LEN);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "R loaded no checkpoint of I's"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_foreign_checkpoint_in_baseline_is_error)
{
    world *w = clean();
    tpd_result res;
    ckpt(w, A, 1, 0, true, 0x42, "/old/ckpt.pt");
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "/old/ckpt.pt"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_failed_or_incomplete_executions_are_errors)
{
    world *w = clean();
    tpd_result res;
    w->ex[R].status = 1;
    w->pr[R].bye_exc = "RuntimeError";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "exited with status 1"));
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    w->pr[B].has_bye = false;
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "no bye"));
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    w->pr[I].errors = 1;
    w->pr[I].first_error = "backward: Traceback ...";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "hook"));
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    w->pr[I].bye_reason = "exit";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "nothing left to resume"));
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    w->pr[I].ckpts[0].armed = false;
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "I saved no checkpoint"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_tolerance_needs_values_or_proves_difference)
{
    world *w = clean();
    tpd_cmp_opts tol = {true, 1e-3, 1e-6, NULL};
    tpd_result res;
    tpd_val close = tensor(0x31, 5.0 + 1e-9); /* other bytes, same statistics */
    set(w, R, 1, "model.fc.weight", close);
    res = judge(w, &tol);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.text, "--capture values"));
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    set(w, R, 1, "model.fc.weight", tensor(0x31, 40.0)); /* far outside the tolerance */
    res = judge(w, &tol);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    tpd_result_clear(&res);
    drop(w);

    w = clean();
    set(w, R, 2, "loss", num(1.0 / 6.0 + 1e-7)); /* a value: compared directly */
    res = judge(w, &tol);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* dkind gives v's digest the kind k: the same digest bytes, another function. */
static tpd_val dkind(tpd_val v, const char *k)
{
    snprintf(v.dkind, sizeof v.dkind, "%s", k);
    return v;
}

START_TEST(test_verdict_resume_digest_kinds_abstain_and_say_why)
{
    world *w = clean();
    tpd_result res;
    /* R's weight at step 4 digested on the device, A's on the host: the
     * same digest bytes prove nothing, a comparison is not possible */
    set(w, R, 1, "model.fc.weight", dkind(tensor(14, 5.0), "dev1"));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    ck_assert_msg(strstr(res.text, "model.fc.weight at step 4: the digests are of different kinds "
                                   "(xxh3 on the host in A, dev1 on the device in R) and cannot "
                                   "be compared") != NULL,
                  "%s", res.text);
    ck_assert_ptr_null(strstr(res.text, "tolerance"));
    ck_assert_ptr_nonnull(strstr(res.text, "(dev1)"));
    ck_assert_ptr_nonnull(strstr(res.json, "\"kind\":\"digest_kinds\""));
    ck_assert_ptr_nonnull(strstr(res.json, "\"digest_kind\":\"dev1\""));
    ck_assert_ptr_nonnull(strstr(res.json, "\"unsure\":true"));
    tpd_result_clear(&res);
    drop(w);

    /* in the baselines: the same, between A and B */
    w = clean();
    set(w, B, 2, "optimizer.state.fc.weight.exp_avg", dkind(tensor(42, 2.0), "none"));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_msg(strstr(res.text, "optimizer.state.fc.weight.exp_avg at step 2: the agent could "
                                   "not digest it in B (digest kind none)") != NULL,
                  "%s", res.text);
    ck_assert_ptr_null(strstr(res.text, "nondeterminism"));
    tpd_result_clear(&res);
    drop(w);

    /* a difference proven after it still fails */
    w = clean();
    set(w, R, 1, "model.fc.weight", dkind(tensor(14, 5.0), "dev1"));
    set(w, R, 2, "loss", num(0.5));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss");
    tpd_result_clear(&res);
    drop(w);

    /* one kind on both sides compares as ever */
    w = clean();
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < w->pr[k].timeline.n; i++) {
            tpd_item *it = &w->pr[k].timeline.v[i];
            if (it->v.kind == 't') it->v = dkind(it->v, "dev1");
        }
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_missing_component_fails)
{
    world *w = clean();
    tpd_result res;
    /* R has no scheduler at all */
    for (size_t i = 0; i < w->pr[R].timeline.n; i++)
        if (!strcmp(w->pr[R].timeline.v[i].path, "scheduler.last_epoch"))
            w->pr[R].timeline.v[i].path = "other.thing";
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "scheduler.last_epoch");
    ck_assert_ptr_nonnull(strstr(res.text, "absent"));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ---- the training data stream ---- */

enum { NB = 6, BS = 4 }; /* an epoch: 6 batches of 4 of 24 samples */

/* ids holds the shuffled epoch: batch k is ids[BS k .. BS k + BS). */
static int64_t ids[NB * BS], eval_ids[2 * BS], other_ids[BS] = {90, 91, 92, 93};

static void ids_init(void)
{
    for (int i = 0; i < NB * BS; i++) ids[i] = (5 * i + 3) % (NB * BS);
    for (int i = 0; i < 2 * BS; i++) eval_ids[i] = 100 + i;
}

static void batch_ev(world *w, int who, uint32_t loader, uint32_t epoch, int64_t step,
                     const int64_t *v, bool end)
{
    tpd_proc *p = &w->pr[who];
    tpd_batch *b =
        tpd_arena_grow(w->run->arena, p->batches, &p->batches_cap, p->nbatches + 1, sizeof *b);
    ck_assert_ptr_nonnull(b);
    p->batches = b;
    b = &p->batches[p->nbatches++];
    memset(b, 0, sizeof *b);
    b->seq = 100 + w->seq[who]++;
    b->step = step;
    b->loader = loader;
    b->epoch = epoch;
    b->end = end;
    b->has_ids = !end;
    b->n = end ? 0 : BS;
    b->ids = end ? NULL : v;
}

static void backward_ev(world *w, int who, int64_t step)
{
    tpd_proc *p = &w->pr[who];
    tpd_mark *m = tpd_arena_grow(w->run->arena, p->marks, &p->marks_cap, p->nmarks + 1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    p->marks = m;
    m = &p->marks[p->nmarks++];
    memset(m, 0, sizeof *m);
    m->seq = 100 + w->seq[who]++;
    m->step = step;
    m->kind = TP_K_BACKWARD;
    m->n = 1;
}

/* evaluate runs an evaluation pass of loader 1 (2 batches, no backward). */
static void evaluate(world *w, int who, uint32_t epoch, int64_t step)
{
    batch_ev(w, who, 1, epoch, step, eval_ids, false);
    batch_ev(w, who, 1, epoch, step, eval_ids + BS, false);
    batch_ev(w, who, 1, epoch, step, NULL, true);
}

/* feed adds to who one pass of loader over the epoch from batch first: it
 * fetches and drops `discard` batches (a skip by iterating), then trains one
 * step per batch from local step local0, fetching `ahead` batches ahead (a
 * prefetching loader), with an evaluation pass after local step eval (-1:
 * none). */
static void feed(world *w, int who, uint32_t loader, int first, int discard, int64_t local0,
                 int ahead, int64_t eval)
{
    int next = first;
    bool ended = false;
    int64_t step = local0;
    for (int d = 0; d < discard; d++) batch_ev(w, who, loader, 0, step, ids + BS * next++, false);
    for (int k = first + discard; k < NB; k++, step++) {
        while (next <= k + ahead && next < NB)
            batch_ev(w, who, loader, 0, step, ids + BS * next++, false);
        if (!ended && next == NB && k + ahead >= NB) {
            batch_ev(w, who, loader, 0, step, NULL, true);
            ended = true;
        }
        backward_ev(w, who, step);
        if (step == eval) evaluate(w, who, (uint32_t)w->seq[who], step);
    }
    if (!ended) batch_ev(w, who, loader, 0, step, NULL, true);
}

/* baselines feeds A and B the whole epoch, ahead batches ahead. */
static world *with_data(int ahead, int64_t eval)
{
    world *w = clean();
    ids_init();
    feed(w, A, 0, 0, 0, 0, ahead, eval);
    feed(w, B, 0, 0, 0, 0, ahead, eval);
    return w;
}

START_TEST(test_verdict_resume_light_steps_hide_nothing_they_ask_to_narrow)
{
    world *w = clean();
    tpd_result res;
    /* induction: A and B light but at 0 and 3 (first step, after the save),
     * R light but at its first step; R's loss differs at step 5 (its 2) */
    for (int64_t s = 1; s < 6; s++)
        if (s != 3) lighten(w, A, s), lighten(w, B, s);
    lighten(w, R, 1);
    lighten(w, R, 2);
    set(w, R, 2, "loss", num(0.5));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "loss");
    /* the state may have diverged unseen from step 4: A from 4, and I and
     * R again, R from its step 1, to the divergence */
    ck_assert(res.narrow && !res.narrow_b && res.narrow_r);
    ck_assert_int_eq(res.narrow_from, 4);
    ck_assert_int_eq(res.narrow_to, 5);
    ck_assert_int_eq(res.narrow_r_from, 1);
    ck_assert_int_eq(res.narrow_r_to, 2);
    ck_assert_msg(strstr(res.text, "A at 2 of 6 steps, B at 2 of 6, R at 1 of 3") != NULL, "%s",
                  res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_divergence_at_boundaries_needs_no_narrowing)
{
    world *w = clean();
    tpd_result res;
    /* light steps after the divergence do not matter: R's model differs at
     * its first step, a boundary of both */
    lighten(w, A, 4), lighten(w, B, 4), lighten(w, R, 1);
    w->pr[R].nrestores = 0;
    set(w, R, 0, "model.fc.weight", tensor(0x55, 9.0));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    ck_assert_int_eq(res.step, 3);
    ck_assert(!res.narrow);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_save_anchors_compare_where_both_have_them)
{
    world *w = clean();
    tpd_result res;
    /* the state after the last step, from a save: A alone has it, so
     * nothing is compared there */
    anchor(w, A, 6, 0x61);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
    /* both have it, and it differs: the end diverges */
    w = clean();
    anchor(w, A, 6, 0x61);
    anchor(w, B, 6, 0x61);
    anchor(w, R, 3, 0x62);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    ck_assert_int_eq(res.step, 6);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_pass_rests_on_the_aligned_state_and_says_where_it_ends)
{
    world *w = clean();
    tpd_result res;
    /* A's step at the save was light: R's state after its load was not
     * compared, so that step is to be narrowed */
    lighten(w, A, 3), lighten(w, A, 4);
    res = judge(w, NULL);
    ck_assert(res.narrow && !res.narrow_r && res.narrow_from == 3 && res.narrow_to == 3);
    tpd_result_clear(&res);
    drop(w);
    /* light after the aligned step, no state at the end on either side: the
     * steps after the last comparison of the state are narrowed, A's and
     * R's */
    w = clean();
    lighten(w, A, 4), lighten(w, A, 5), lighten(w, B, 4), lighten(w, B, 5);
    lighten(w, R, 1), lighten(w, R, 2);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert(res.narrow && res.narrow_r && !res.narrow_b);
    ck_assert_int_eq(res.narrow_from, 4);
    ck_assert_int_eq(res.narrow_to, 5);
    ck_assert_int_eq(res.narrow_r_from, 1);
    ck_assert_int_eq(res.narrow_r_to, 2);
    tpd_result_clear(&res);
    drop(w);
    /* once the reruns ran and were still light there, the PASS says where
     * the state was last compared */
    w = clean();
    w->ex[A].role = "A2";
    lighten(w, A, 4), lighten(w, A, 5), lighten(w, R, 1), lighten(w, R, 2);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS && !res.narrow, "%s", res.text);
    ck_assert_msg(strstr(res.text, "  state       last compared at step 3:") != NULL, "%s",
                  res.text);
    ck_assert_msg(strstr(res.json, "\"state_last\":3") != NULL, "%s", res.json);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_prefetch_and_new_loader_pass)
{
    /* accelerate: the loaders fetch one batch ahead, and R skips the 3
     * batches trained with a new DataLoader (another loader number) */
    world *w = with_data(1, -1);
    tpd_result res;
    feed(w, R, 1, 3, 0, 0, 1, -1);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_msg(strstr(res.text, "12 samples of the training stream") != NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_skipping_one_too_many_fails)
{
    world *w = with_data(1, -1);
    tpd_result res;
    feed(w, R, 1, 4, 0, 0, 1, -1);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "data.ids");
    ck_assert_int_eq(res.step, 3);
    ck_assert_msg(strstr(res.text, "sample 12 of the training stream (R's sample 0:") != NULL, "%s",
                  res.text);
    /* R's batch (batch 4) against A's samples at the same positions (batch 3) */
    ck_assert_msg(strstr(res.text, "[11, 16, 21, 2] (4 ids)") != NULL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "[15, 20, 1, 6] (4 ids)") != NULL, "%s", res.text);
    /* R skipped a batch too many: a batch fewer left in the epoch */
    ck_assert_msg(strstr(res.text, "id 11 where A took 15") != NULL, "%s", res.text);
    ck_assert_msg(strstr(res.text, "skip too many batches") != NULL, "%s", res.text);
    ck_assert_ptr_nonnull(strstr(res.json, "\"group\":\"data\""));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_epoch_restart_fails)
{
    world *w = with_data(0, -1);
    tpd_result res;
    feed(w, R, 0, 0, 0, 0, 0, -1);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "data.ids");
    ck_assert_int_eq(res.step, 3);
    ck_assert_msg(strstr(res.text, "data pipeline did not resume") != NULL, "%s", res.text);
    /* R restarted its epoch: more samples left in it than A had */
    ck_assert_msg(strstr(res.text, "restart its epoch") != NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_eval_passes_are_ignored)
{
    /* A and B evaluate twice with one loader (between steps 1 and 2, and 4
     * and 5), R once at another point: evaluation is not training data */
    world *w = clean();
    tpd_result res;
    ids_init();
    for (int k = A; k <= B; k++) {
        evaluate(w, k, 0, 0); /* a sanity check before training */
        feed(w, k, 0, 0, 0, 0, 0, 1);
        evaluate(w, k, 2, 5);
    }
    feed(w, R, 2, 3, 0, 0, 0, 0);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_msg(strstr(res.text, "12 samples of the training stream") != NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_passes_left_before_their_end_count)
{
    /* R takes one batch from a fresh iterator per step (next(iter(loader)),
     * or a loop stopped at its step limit): no pass has an end event, and the
     * backward of its only batch comes after that batch; A and B also leave
     * a sanity check (2 batches of loader 1, no end, no backward) unfinished */
    world *w = with_data(0, -1);
    tpd_result res;
    for (int k = A; k <= B; k++) {
        tpd_proc *p = &w->pr[k];
        p->nbatches = 0;
        p->nmarks = 0;
        batch_ev(w, k, 1, 0, 0, eval_ids, false);
        batch_ev(w, k, 1, 0, 0, eval_ids + BS, false);
        feed(w, k, 0, 0, 0, 0, 0, -1);
    }
    for (int b = 3; b < NB; b++) {
        batch_ev(w, R, 0, (uint32_t)b, b - 3, ids + BS * b, false);
        backward_ev(w, R, b - 3);
    }
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    ck_assert_msg(strstr(res.text, "12 samples of the training stream") != NULL, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_skip_by_discarding_passes)
{
    /* R iterates the epoch and drops the 3 batches already trained */
    world *w = with_data(1, -1);
    tpd_result res;
    feed(w, R, 0, 0, 3, 0, 1, -1);
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_PASS, "%s", res.text);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_nondeterministic_baselines_abstain)
{
    world *w = with_data(0, -1);
    tpd_result res;
    feed(w, R, 1, 3, 0, 0, 0, -1);
    w->pr[B].batches[2].ids = other_ids;
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_ABSTAIN, "%s", res.text);
    ck_assert_str_eq(res.path, "data.ids");
    ck_assert_int_eq(res.step, 2);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_verdict_resume_data_after_model_divergence_is_not_first)
{
    /* the model differs at step 3, the data only at step 4: model first */
    world *w = with_data(0, -1);
    tpd_result res;
    feed(w, R, 1, 3, 0, 0, 0, -1);
    w->pr[R].batches[1].ids = other_ids;
    w->pr[R].nrestores = 0;
    set(w, R, 0, "model.fc.weight", tensor(0x55, 9.0));
    res = judge(w, NULL);
    ck_assert_msg(res.outcome == TPD_FAIL, "%s", res.text);
    ck_assert_str_eq(res.path, "model.fc.weight");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verdict_resume");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_verdict_resume_clean_passes);
    tcase_add_test(tc, test_verdict_resume_scheduler_not_restored_fails);
    tcase_add_test(tc, test_verdict_resume_model_fails_even_when_losses_match);
    tcase_add_test(tc, test_verdict_resume_rng_alone_does_not_fail);
    tcase_add_test(tc, test_verdict_resume_rng_not_restored_fails_at_rng);
    tcase_add_test(tc, test_verdict_resume_load_matched_no_key_is_named);
    tcase_add_test(tc, test_verdict_resume_load_matched_some_keys_is_named);
    tcase_add_test(tc, test_verdict_resume_loaded_twin_is_not_never_loaded);
    tcase_add_test(tc, test_verdict_resume_rng_reseeded_is_named);
    tcase_add_test(tc, test_verdict_resume_nondeterministic_baselines_abstain);
    tcase_add_test(tc, test_verdict_resume_once);
    tcase_add_test(tc, test_verdict_resume_unmatched_load_is_error);
    tcase_add_test(tc, test_verdict_resume_foreign_checkpoint_in_baseline_is_error);
    tcase_add_test(tc, test_verdict_resume_failed_or_incomplete_executions_are_errors);
    tcase_add_test(tc, test_verdict_resume_tolerance_needs_values_or_proves_difference);
    tcase_add_test(tc, test_verdict_resume_digest_kinds_abstain_and_say_why);
    tcase_add_test(tc, test_verdict_resume_missing_component_fails);
    tcase_add_test(tc, test_verdict_resume_light_steps_hide_nothing_they_ask_to_narrow);
    tcase_add_test(tc, test_verdict_resume_divergence_at_boundaries_needs_no_narrowing);
    tcase_add_test(tc, test_verdict_resume_save_anchors_compare_where_both_have_them);
    tcase_add_test(tc, test_verdict_resume_pass_rests_on_the_aligned_state_and_says_where_it_ends);
    tcase_add_test(tc, test_verdict_resume_data_prefetch_and_new_loader_pass);
    tcase_add_test(tc, test_verdict_resume_data_skipping_one_too_many_fails);
    tcase_add_test(tc, test_verdict_resume_data_epoch_restart_fails);
    tcase_add_test(tc, test_verdict_resume_data_eval_passes_are_ignored);
    tcase_add_test(tc, test_verdict_resume_data_passes_left_before_their_end_count);
    tcase_add_test(tc, test_verdict_resume_data_skip_by_discarding_passes);
    tcase_add_test(tc, test_verdict_resume_data_nondeterministic_baselines_abstain);
    tcase_add_test(tc, test_verdict_resume_data_after_model_divergence_is_not_first);
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
