/* SPDX-License-Identifier: MIT
 * verdict_compare_test.c -- the golden-run verdict (compare) from
 * hand-built observations: every outcome, C against D before C against G,
 * --once, the number of steps, tolerances, the report's shape, and the
 * induction mode: light steps of C and D narrowed where a divergence or an
 * end without the state needs it, the reruns C2 standing in for C; what a
 * verdict's load of the golden run may leave out. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/compare/verdict.h"

/* the shape of the tensors built by hand */
static const int64_t FOUR[1] = {4};

/* ---- building runs by hand ---- */

enum { G, C, D, C2 };

typedef struct world {
    tpd_run *golden, *run;
    tpd_exec ex[4]; /* C2's only when rerun() made it */
    tpd_proc pr[4];
} world;

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

/* steps adds n training steps of one run: weights, learning rate, loss and
 * gradient at the start of each, the same in every run. */
static void steps(world *w, int who, int64_t n)
{
    for (int64_t s = 0; s < n; s++) {
        item(w, who, s, "model.fc.weight", tensor((uint8_t)(10 + s), 1.0 + (double)s));
        item(w, who, s, "optimizer.group[0].lr", num(0.1));
        item(w, who, s, "loss", num(1.0 / (double)(s + 1)));
        item(w, who, s, "grad.fc.weight", tensor((uint8_t)(70 + s), 0.5));
    }
    w->pr[who].steps = n;
}

/* set changes path at step s of who's timeline to v. */
static void set(world *w, int who, int64_t s, const char *path, tpd_val v)
{
    tpd_items *l = &w->pr[who].timeline;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].step == s && strcmp(l->v[i].path, path) == 0) l->v[i].v = v;
}

static tpd_run *new_run(int64_t id, const char *check, const char *params)
{
    tpd_arena *a = tpd_arena_create();
    tpd_run *r;
    ck_assert_ptr_nonnull(a);
    r = tpd_arena_alloc(a, sizeof *r);
    ck_assert_ptr_nonnull(r);
    memset(r, 0, sizeof *r);
    r->arena = a;
    r->id = id;
    r->check = check;
    r->params = params;
    return r;
}

/* clean builds golden run 1 ("golden": one execution, "record") and
 * compare run 2 (C and D, or C alone when once), all 4 steps alike. */
static world *clean(bool once)
{
    static const char *roles[3] = {"record", "C", "D"};
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->golden = new_run(1, "record", "{\"capture\": \"digests\"}");
    w->golden->name = "golden";
    w->run =
        new_run(2, "compare",
                once ? "{\"against\": 1, \"once\": true}" : "{\"against\": 1, \"once\": false}");
    w->golden->execs = &w->ex[G];
    w->golden->nexecs = 1;
    w->run->execs = &w->ex[C];
    w->run->nexecs = once ? 1 : 2;
    for (int k = 0; k < 3; k++) {
        w->ex[k].id = k + 1;
        w->ex[k].role = roles[k];
        w->ex[k].has_status = true;
        w->ex[k].finished = true;
        w->ex[k].procs = &w->pr[k];
        w->ex[k].nprocs = 1;
        w->pr[k].pid = 100 + k;
        w->pr[k].rank = -1;
        w->pr[k].python = "3.11";
        w->pr[k].has_bye = true;
        w->pr[k].bye_reason = "exit";
        w->pr[k].nevents = 10;
        w->pr[k].sent = 10;
        w->pr[k].max_seq = 9;
        steps(w, k, 4);
    }
    return w;
}

/* lighten makes a process's start-of-step snapshot at step s light, as the
 * induction mode sends it: no model or optimizer state. */
static void lighten(world *w, int who, int64_t s)
{
    tpd_items *l = &w->pr[who].timeline;
    size_t k = 0;
    int64_t *v;
    for (size_t i = 0; i < l->n; i++)
        if (!(l->v[i].step == s && tpd_induced(&l->v[i]))) l->v[k++] = l->v[i];
    l->n = k;
    v = tpd_arena_grow(w->run->arena, l->light, &l->light_cap, l->nlight + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    l->light = v;
    l->light[l->nlight++] = s; /* callers go in ascending order */
}

/* rerun adds C2, a rerun of C with every step whole (4 steps, as C), after
 * D among the compare run's executions. */
static void rerun(world *w)
{
    w->ex[C2] = w->ex[C];
    w->ex[C2].id = 4;
    w->ex[C2].role = "C2";
    w->ex[C2].procs = &w->pr[C2];
    w->pr[C2] = w->pr[C];
    memset(&w->pr[C2].timeline, 0, sizeof w->pr[C2].timeline);
    w->pr[C2].pid = 103;
    steps(w, C2, 4);
    w->run->nexecs = 3;
}

static void destroy(world *w)
{
    tpd_arena_destroy(w->golden->arena);
    tpd_arena_destroy(w->run->arena);
    free(w);
}

static const tpd_cmp_opts exact = {false, 0, 0, NULL};

static json_t *judge(world *w, const tpd_cmp_opts *o, tpd_outcome want, tpd_result *res)
{
    json_t *j;
    ck_assert_int_eq(tpd_verdict_compare(w->run, w->golden, NULL, o, res), TP_OK);
    ck_assert_msg(res->outcome == want, "outcome %s, want %s: %s", tpd_outcome_name(res->outcome),
                  tpd_outcome_name(want), res->text);
    j = json_loads(res->json, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "check")), "compare");
    ck_assert_str_eq(json_string_value(json_object_get(j, "outcome")), tpd_outcome_name(want));
    return j;
}

/* kinds is the explanation's kinds, comma-separated. */
static const char *kinds(json_t *j, char *buf, size_t n)
{
    json_t *e;
    size_t i;
    buf[0] = '\0';
    json_array_foreach(json_object_get(j, "explanation"), i, e)
    {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s", i ? "," : "",
                 json_string_value(json_object_get(e, "kind")));
    }
    return buf;
}

/* ---- tests ---- */

START_TEST(test_golden_pass)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j = judge(w, &exact, TPD_PASS, &res), *ev = json_object_get(j, "evidence");
    ck_assert(json_is_null(json_object_get(j, "first_divergence")));
    ck_assert_str_eq(json_string_value(json_object_get(ev, "determinism")), "checked");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ev, "against"), "run")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "against"), "name")),
                     "golden");
    ck_assert_int_eq(json_array_size(json_object_get(ev, "executions")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(ev, "executions"), 0), "role")),
                     "G");
    ck_assert_ptr_nonnull(strstr(res.text, "C matched G at every step"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* The learning rate of C differs from step 2 on: the first divergence, in
 * the optimizer group before the loss, with both values and how long it
 * lasts; the loss at the same step is listed among the others. */
START_TEST(test_golden_fail_lr)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j, *fd;
    char buf[256];
    for (int who = C; who <= D; who++)
        for (int s = 2; s < 4; s++) {
            set(w, who, s, "optimizer.group[0].lr", num(0.2));
            set(w, who, s, "loss", num(9.0));
        }
    j = judge(w, &exact, TPD_FAIL, &res);
    fd = json_object_get(j, "first_divergence");
    ck_assert_str_eq(json_string_value(json_object_get(fd, "between")), "G-C");
    ck_assert_int_eq(json_integer_value(json_object_get(fd, "step")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(fd, "path")), "optimizer.group[0].lr");
    ck_assert(json_real_value(json_object_get(json_object_get(fd, "G"), "value")) == 0.1);
    ck_assert(json_real_value(json_object_get(json_object_get(fd, "C"), "value")) == 0.2);
    ck_assert_int_eq(json_array_size(json_object_get(j, "divergences")), 2);
    ck_assert_str_eq(kinds(j, buf, sizeof buf), "differs,matched_before");
    ck_assert_ptr_nonnull(strstr(res.text, "differs from step 2 on: at every one of the 2 steps"));
    ck_assert_ptr_nonnull(strstr(res.text, "steps 0 to 1 matched in full"));
    ck_assert_int_eq(res.step, 2);
    ck_assert_str_eq(res.path, "optimizer.group[0].lr");
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* C and D differ at step 1, before C's divergence from G at step 2:
 * ABSTAIN, naming C against D.  At step 3, after it: FAIL, saying so. */
START_TEST(test_golden_nondeterministic)
{
    for (int late = 0; late < 2; late++) {
        world *w = clean(false);
        tpd_result res;
        json_t *j, *fd;
        char buf[256];
        set(w, C, 2, "loss", num(9.0));
        set(w, D, 2, "loss", num(9.0));
        set(w, D, late ? 3 : 1, "grad.fc.weight", tensor(99, 0.7));
        j = judge(w, &exact, late ? TPD_FAIL : TPD_ABSTAIN, &res);
        fd = json_object_get(j, "first_divergence");
        ck_assert_str_eq(json_string_value(json_object_get(fd, "between")), late ? "G-C" : "C-D");
        ck_assert_int_eq(json_integer_value(json_object_get(fd, "step")), late ? 2 : 1);
        ck_assert_ptr_nonnull(json_object_get(fd, late ? "G" : "D"));
        ck_assert_str_eq(kinds(j, buf, sizeof buf),
                         late ? "differs,matched_before,nondeterministic_later"
                              : "nondeterministic");
        json_decref(j);
        tpd_result_clear(&res);
        destroy(w);
    }
}
END_TEST

/* judge_once judges w, wants outcome want, whether the verdict asks for D
 * (second), the JSON evidence's determinism and the explanation's kinds;
 * returns the text report (free it with tpd_result_clear(res)). */
static const char *judge_once(world *w, tpd_outcome want, bool second, const char *determinism,
                              const char *kinds_want, tpd_result *res)
{
    char buf[256];
    json_t *j = judge(w, &exact, want, res);
    ck_assert(res->second == second);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(j, "evidence"), "determinism")),
        determinism);
    ck_assert_str_eq(kinds(j, buf, sizeof buf), kinds_want);
    json_decref(j);
    return res->text;
}

/* --once, C alone: a FAIL asks for D (second), and says, as it stands,
 * that determinism was not checked; a PASS asks for nothing. */
START_TEST(test_golden_once)
{
    world *w = clean(true);
    tpd_result res;
    const char *t = judge_once(w, TPD_PASS, false, "not checked", "", &res);
    ck_assert_ptr_nonnull(strstr(t, "determinism not checked (--once: C ran once)"));
    tpd_result_clear(&res);
    set(w, C, 0, "model.fc.weight", tensor(98, 5.0));
    t = judge_once(w, TPD_FAIL, true, "not checked",
                   "differs,initial_state,determinism_not_checked", &res);
    ck_assert_ptr_nonnull(strstr(t, "determinism not checked"));
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* --once, and D ran (second): judged as without --once.  D as C: the
 * FAIL stands, determinism checked; D otherwise: ABSTAIN between C and D,
 * where C alone FAILed. */
START_TEST(test_golden_once_second)
{
    world *w = clean(true);
    tpd_result res;
    const char *t;
    w->run->nexecs = 2;
    set(w, C, 0, "model.fc.weight", tensor(98, 5.0));
    set(w, D, 0, "model.fc.weight", tensor(98, 5.0));
    t = judge_once(w, TPD_FAIL, false, "checked", "differs,initial_state", &res);
    ck_assert_msg(strstr(t, "C and D match at every step (4 steps compared; --once: D ran because "
                            "C differs from G)") != NULL,
                  "%s", t);
    tpd_result_clear(&res);
    set(w, D, 0, "model.fc.weight", tensor(97, 5.0));
    t = judge_once(w, TPD_ABSTAIN, false, "checked", "nondeterministic", &res);
    ck_assert_ptr_nonnull(strstr(t, "first divergence between C and D"));
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* C trains 3 steps where G trains 4, alike in the 3: the number of steps
 * is the first divergence, at the first step only G trained. */
START_TEST(test_golden_step_count)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j, *fd;
    char buf[256];
    for (int who = C; who <= D; who++) {
        w->pr[who].timeline.n -= 4;
        w->pr[who].steps = 3;
    }
    j = judge(w, &exact, TPD_FAIL, &res);
    fd = json_object_get(j, "first_divergence");
    ck_assert_str_eq(json_string_value(json_object_get(fd, "path")), "steps");
    ck_assert_int_eq(json_integer_value(json_object_get(fd, "step")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(fd, "G"), "value")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(fd, "C"), "value")), 3);
    ck_assert_str_eq(kinds(j, buf, sizeof buf), "step_count");
    ck_assert_ptr_nonnull(strstr(res.text, "C stopped 1 step early"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* A tolerance that statistics cannot justify: ABSTAIN, not PASS. */
START_TEST(test_golden_unsure)
{
    world *w = clean(false);
    tpd_cmp_opts tol = {true, 1e-3, 1e-3, NULL};
    tpd_result res;
    json_t *j;
    char buf[256];
    for (int who = C; who <= D; who++) set(w, who, 1, "grad.fc.weight", tensor(97, 0.5));
    j = judge(w, &tol, TPD_ABSTAIN, &res);
    ck_assert_str_eq(kinds(j, buf, sizeof buf), "values_needed");
    ck_assert(json_is_true(json_object_get(json_object_get(j, "first_divergence"), "unsure")));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* The golden run missing, of another check, or not whole: ERROR. */
START_TEST(test_golden_error)
{
    static const char *const want[] = {"cannot be read: no run 1", "is a 'resume' run",
                                       "exited with status 1"};
    for (int k = 0; k < 3; k++) {
        world *w = clean(false);
        tpd_result res;
        if (k == 1) w->golden->check = "resume";
        if (k == 2) w->ex[G].status = 1;
        ck_assert_int_eq(
            tpd_verdict_compare(w->run, k == 0 ? NULL : w->golden, "no run 1", &exact, &res),
            TP_OK);
        ck_assert_int_eq(res.outcome, TPD_ERROR);
        ck_assert_msg(strstr(res.text, want[k]) != NULL, "%s", res.text);
        tpd_result_clear(&res);
        destroy(w);
    }
}
END_TEST

/* ckpt adds a save or a load (load) of the file name, of content tag, to
 * who's trainer. */
static void ckpt(world *w, int who, bool load, uint8_t tag, const char *name)
{
    tpd_proc *p = &w->pr[who];
    tpd_arena *a = who == G ? w->golden->arena : w->run->arena;
    tpd_ckpt *c = tpd_arena_grow(a, p->ckpts, &p->ckpts_cap, p->nckpts + 1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    p->ckpts = c;
    c = &p->ckpts[p->nckpts++];
    memset(c, 0, sizeof *c);
    c->seq = (uint64_t)p->nckpts;
    c->load = load;
    c->api = "torch";
    c->target = "path";
    c->name = name;
    c->has_digest = true;
    memset(c->digest, tag, sizeof c->digest);
}

/* A checkpoint C or D loaded is explained by an earlier save of its own or
 * by a load of the golden run's (pretrained weights, by content or by
 * file); one the golden run wrote and never loaded (what record left, found
 * by a script that resumes on its own) is named as the ERROR, before
 * anything it caused; one nothing explains, too. */
START_TEST(test_golden_foreign_load)
{
    for (int k = 0; k < 4; k++) {
        world *w = clean(false);
        tpd_result res;
        ckpt(w, G, true, 0x10, "/data/pretrained.pt");
        ckpt(w, G, false, 0x20, "/work/ck.pt");
        ckpt(w, C, true, 0x10, "/elsewhere/pretrained.pt"); /* the same content */
        ckpt(w, D, true, 0x11, "/data/pretrained.pt");      /* the same file */
        if (k == 1) ckpt(w, C, true, 0x20, "/work/ck.pt");  /* found at its start */
        ckpt(w, C, false, 0x30, "/work/ck.pt");
        ckpt(w, C, true, 0x30, "/work/ck.pt"); /* its own */
        if (k == 2) ckpt(w, D, true, 0x40, "/old/last.pt");
        if (k == 3) w->pr[C].ckpts[0].error = "FileNotFoundError"; /* no load at all */
        ck_assert_int_eq(tpd_verdict_compare(w->run, w->golden, NULL, &exact, &res), TP_OK);
        if (k == 0 || k == 3) {
            ck_assert_msg(res.outcome == TPD_PASS, "%d: %s", k, res.text);
        } else {
            ck_assert_int_eq(res.outcome, TPD_ERROR);
            ck_assert_msg(strstr(res.text, k == 1
                                               ? "C (this run) loaded /work/ck.pt, a checkpoint "
                                                 "it did not write and the golden run did not "
                                                 "load (the golden run wrote it"
                                               : "D (again) loaded /old/last.pt, a checkpoint it "
                                                 "did not write and the golden run did not load "
                                                 "(left from an earlier run?)") != NULL,
                          "%d: %s", k, res.text);
        }
        tpd_result_clear(&res);
        destroy(w);
    }
}
END_TEST

/* C and D light between their first and last steps, whose state the
 * golden run's last step made a boundary of: nothing to narrow, and the
 * report says how many steps digested the state. */
START_TEST(test_golden_induction_pass)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j, *ind;
    for (int64_t s = 1; s <= 2; s++) lighten(w, C, s), lighten(w, D, s);
    j = judge(w, &exact, TPD_PASS, &res);
    ck_assert(!res.narrow);
    ind = json_object_get(json_object_get(j, "evidence"), "induction");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ind, "C"), "full_steps")),
                     2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ind, "D"), "steps")), 4);
    ck_assert(json_is_null(json_object_get(ind, "narrowed")));
    ck_assert_ptr_nonnull(strstr(res.text, "  digests     induction: "));
    ck_assert_ptr_nonnull(strstr(res.text, "; G every tensor at every step\n"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* A golden run recorded with --digest induction is light
 * too: the digests line says how many of its steps held the state, not
 * "every tensor at every step". */
START_TEST(test_golden_induction_light_golden)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j;
    for (int64_t s = 1; s <= 2; s++) lighten(w, G, s), lighten(w, C, s), lighten(w, D, s);
    j = judge(w, &exact, TPD_PASS, &res);
    ck_assert_msg(strstr(res.text, "; G at 2 of 4 steps (recorded in the induction mode: where G "
                                   "was light, no rerun of C can show the state)\n") != NULL,
                  "%s", res.text);
    ck_assert_ptr_null(strstr(res.text, "G every tensor"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* The state after the last whole step was compared nowhere (no snapshot at
 * the exit, the last step light): those steps are narrowed, C's and D's. */
START_TEST(test_golden_induction_end_narrowed)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j;
    for (int64_t s = 1; s <= 3; s++) lighten(w, C, s), lighten(w, D, s);
    j = judge(w, &exact, TPD_PASS, &res);
    ck_assert(res.narrow && res.narrow_b);
    ck_assert_int_eq(res.narrow_from, 1);
    ck_assert_int_eq(res.narrow_to, 3);
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* C's weights (and D's: the script is deterministic) differ from G's from
 * step 2 on, which C first digests at step 3: C alone is narrowed from its
 * first light step; its rerun names step 2, and says what it narrowed. */
START_TEST(test_golden_induction_divergence_narrowed)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j, *fd, *nw;
    for (int k = C; k <= D; k++)
        for (int64_t s = 2; s <= 3; s++) set(w, k, s, "model.fc.weight", tensor(99, 9.0));
    for (int64_t s = 1; s <= 2; s++) lighten(w, C, s), lighten(w, D, s);
    j = judge(w, &exact, TPD_FAIL, &res);
    ck_assert(res.narrow && !res.narrow_b);
    ck_assert_int_eq(res.narrow_from, 1);
    ck_assert_int_eq(res.narrow_to, 3);
    ck_assert_int_eq(res.step, 3);
    json_decref(j);
    tpd_result_clear(&res);
    /* C2: every step whole */
    rerun(w);
    for (int64_t s = 2; s <= 3; s++) set(w, C2, s, "model.fc.weight", tensor(99, 9.0));
    j = judge(w, &exact, TPD_FAIL, &res);
    ck_assert(!res.narrow);
    fd = json_object_get(j, "first_divergence");
    ck_assert_int_eq(json_integer_value(json_object_get(fd, "step")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(fd, "path")), "model.fc.weight");
    nw = json_object_get(json_object_get(json_object_get(j, "evidence"), "induction"), "narrowed");
    ck_assert_int_eq(json_integer_value(json_object_get(nw, "from")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(nw, "to")), 2);
    ck_assert_int_eq(json_array_size(json_object_get(nw, "reruns")), 1);
    ck_assert_ptr_nonnull(
        strstr(res.text, "  narrowed    C2 rerun with every tensor digested at steps 1 to 2"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* A divergence at a step where C is light still after its rerun (the
 * rerun C2 light there too: unseen): the weights were not compared there,
 * so the report names no weight as differing at that step (G holds them,
 * C2 does not), and the explanation does not say they matched. */
START_TEST(test_golden_induction_light_divergence)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j, *e, *all;
    size_t i;
    rerun(w);
    for (int k = C; k <= C2; k++) set(w, k, 2, "grad.fc.weight", tensor(77, 7.0));
    for (int64_t s = 1; s <= 2; s++) lighten(w, C, s), lighten(w, D, s), lighten(w, C2, s);
    j = judge(w, &exact, TPD_FAIL, &res);
    ck_assert_int_eq(res.step, 2);
    ck_assert_str_eq(res.path, "grad.fc.weight");
    all = json_object_get(j, "divergences");
    ck_assert_uint_ge(json_array_size(all), 1);
    json_array_foreach(all, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "path"));
        ck_assert_msg(strncmp(p, "model.", 6) != 0, "%s listed as differing: %s", p, res.text);
    }
    json_array_foreach(json_object_get(j, "explanation"), i, e)
    {
        const char *t = json_string_value(json_object_get(e, "text"));
        ck_assert_msg(strstr(t, "the weights") == NULL, "%s", t);
    }
    ck_assert_ptr_nonnull(
        strstr(res.text, "at step 2 the optimizer state and the loss matched before it"));
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

/* What a verdict's load of the golden run may leave out: the steps where
 * every C is light (C, and C2 once rerun); nothing where C is whole.  A
 * run's C and D are light unless its params say digest "full". */
START_TEST(test_golden_drop)
{
    world *w = clean(false);
    size_t n = 99;
    int64_t *v = tpd_golden_drop(w->run, &n);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    for (int64_t s = 1; s <= 2; s++) lighten(w, C, s), lighten(w, D, s);
    v = tpd_golden_drop(w->run, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert(v[0] == 1 && v[1] == 2);
    free(v);
    rerun(w);
    lighten(w, C2, 2);
    v = tpd_golden_drop(w->run, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0], 2);
    free(v);
    ck_assert(tpd_golden_light(w->run));
    w->run->params = "{\"against\": 1, \"digest\": \"induction\"}";
    ck_assert(tpd_golden_light(w->run));
    w->run->params = "{\"against\": 1, \"digest\": \"full\"}";
    ck_assert(!tpd_golden_light(w->run));
    destroy(w);
}
END_TEST

/* C and D differ from each other in the state alone: both are narrowed. */
START_TEST(test_golden_induction_nondeterminism_narrows_d)
{
    world *w = clean(false);
    tpd_result res;
    json_t *j;
    set(w, D, 3, "model.fc.weight", tensor(98, 8.0));
    for (int64_t s = 1; s <= 2; s++) lighten(w, C, s), lighten(w, D, s);
    j = judge(w, &exact, TPD_ABSTAIN, &res);
    ck_assert(res.narrow && res.narrow_b);
    ck_assert_int_eq(res.narrow_from, 1);
    ck_assert_int_eq(res.narrow_to, 3);
    json_decref(j);
    tpd_result_clear(&res);
    destroy(w);
}
END_TEST

START_TEST(test_golden_against)
{
    tpd_run *r = new_run(5, "compare", "{\"against\": 3}");
    ck_assert_int_eq(tpd_golden_against(r), 3);
    r->params = "{}";
    ck_assert_int_eq(tpd_golden_against(r), -1);
    r->params = NULL;
    ck_assert_int_eq(tpd_golden_against(r), -1);
    tpd_arena_destroy(r->arena);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verdict_compare");
    TCase *tc = tcase_create("golden");
    tcase_add_test(tc, test_golden_pass);
    tcase_add_test(tc, test_golden_fail_lr);
    tcase_add_test(tc, test_golden_nondeterministic);
    tcase_add_test(tc, test_golden_once);
    tcase_add_test(tc, test_golden_once_second);
    tcase_add_test(tc, test_golden_step_count);
    tcase_add_test(tc, test_golden_unsure);
    tcase_add_test(tc, test_golden_error);
    tcase_add_test(tc, test_golden_against);
    tcase_add_test(tc, test_golden_foreign_load);
    tcase_add_test(tc, test_golden_induction_pass);
    tcase_add_test(tc, test_golden_induction_light_golden);
    tcase_add_test(tc, test_golden_induction_light_divergence);
    tcase_add_test(tc, test_golden_drop);
    tcase_add_test(tc, test_golden_induction_end_narrowed);
    tcase_add_test(tc, test_golden_induction_divergence_narrowed);
    tcase_add_test(tc, test_golden_induction_nondeterminism_narrows_d);
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
