/* SPDX-License-Identifier: MIT
 * compare_diff_test.c -- the offline diff of two stored runs (query diff)
 * from hand-built observations: which executions it compares by default
 * and when asked, what it refuses, a match, a first divergence and a
 * different number of steps, as text and as JSON. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/compare/diff.h"

/* ---- building runs by hand ---- */

/* Run 1 holds executions 1 and 2, run 2 execution 3; each one process. */
typedef struct world {
    tpd_run *r1, *r2;
    tpd_exec ex[3];
    tpd_proc pr[3];
} world;

static tpd_val num(double f)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 'v';
    v.vtype = TP_V_FLOAT;
    v.f = f;
    return v;
}

static void item(world *w, int k, int64_t step, const char *path, tpd_val v)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.step = step;
    it.path = path;
    it.group = tpd_group_of(path);
    it.ord = w->pr[k].timeline.n;
    it.v = v;
    ck_assert_int_eq(tpd_items_push(w->r1->arena, &w->pr[k].timeline, &it), TP_OK);
}

/* steps gives execution k n training steps: learning rate and loss at the
 * start of each, the same in every execution. */
static void steps(world *w, int k, int64_t n)
{
    for (int64_t s = 0; s < n; s++) {
        item(w, k, s, "optimizer.group[0].lr", num(0.1));
        item(w, k, s, "loss", num(1.0 / (double)(s + 1)));
    }
    w->pr[k].steps = n;
}

static tpd_run *new_run(int64_t id, const char *name)
{
    tpd_arena *a = tpd_arena_create();
    tpd_run *r;
    ck_assert_ptr_nonnull(a);
    r = tpd_arena_alloc(a, sizeof *r);
    ck_assert_ptr_nonnull(r);
    memset(r, 0, sizeof *r);
    r->arena = a;
    r->id = id;
    r->check = "record";
    r->name = name;
    return r;
}

/* clean builds the two runs: execution 1 made no step, 2 and 3 made 4 alike. */
static world *clean(void)
{
    static const char *argv[3] = {"[\"python\",\"broken.py\"]", "[\"python\",\"train.py\"]",
                                  "[\"python\",\"train.py\",\"--lr\",\"0.1\"]"};
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->r1 = new_run(1, "golden");
    w->r2 = new_run(2, NULL);
    w->r1->execs = &w->ex[0];
    w->r1->nexecs = 2;
    w->r2->execs = &w->ex[2];
    w->r2->nexecs = 1;
    for (int k = 0; k < 3; k++) {
        w->ex[k].id = k + 1;
        w->ex[k].role = "record";
        w->ex[k].argv_json = argv[k];
        w->ex[k].procs = &w->pr[k];
        w->ex[k].nprocs = 1;
        w->pr[k].pid = 100 + k;
        w->pr[k].rank = -1;
        if (k > 0) steps(w, k, 4);
    }
    return w;
}

static void destroy(world *w)
{
    tpd_arena_destroy(w->r1->arena);
    tpd_arena_destroy(w->r2->arena);
    free(w);
}

/* diff compares ea of run 1 with eb of run 2 and wants rc; *out holds the
 * report (text or JSON), *match its answer. */
static void diff(world *w, int64_t ea, int64_t eb, bool json, tp_err want, tpd_str *out,
                 bool *match, char *why, size_t n)
{
    tp_err rc;
    tpd_str_init(out);
    why[0] = '\0';
    rc = tpd_golden_diff_runs(w->r1, ea, w->r2, eb, json, out, match, why, n);
    ck_assert_msg(rc == want, "rc %d, want %d: %s", rc, want, why);
    if (rc != TP_OK) ck_assert_uint_eq(out->len, 0);
}

static json_t *diff_json(world *w, int64_t ea, int64_t eb, bool *match)
{
    tpd_str out;
    char why[256];
    json_t *j;
    diff(w, ea, eb, true, TP_OK, &out, match, why, sizeof why);
    j = json_loads(tpd_str_cstr(&out), 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", tpd_str_cstr(&out));
    tpd_str_free(&out);
    return j;
}

static int64_t jint(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    return json_integer_value(b ? json_object_get(v, b) : v);
}

/* ---- tests ---- */

/* By default each run's first execution that made a step: 2, not 1. */
START_TEST(test_golden_diff_match)
{
    world *w = clean();
    tpd_str out;
    bool match = false;
    char why[256];
    json_t *j;
    diff(w, -1, -1, false, TP_OK, &out, &match, why, sizeof why);
    ck_assert(match);
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "diff: match\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "  A  run 1 \"golden\", execution 2 (record), "
                                                     "4 steps: python train.py\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "  B  run 2, execution 3 (record), 4 steps: "
                                                     "python train.py --lr 0.1\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "the executions match at every step (4 steps "
                                                     "compared, 0 samples"));
    tpd_str_free(&out);

    match = false;
    j = diff_json(w, -1, -1, &match);
    ck_assert(match);
    ck_assert(json_is_true(json_object_get(j, "match")));
    ck_assert_int_eq(jint(j, "a", "execution"), 2);
    ck_assert_int_eq(jint(j, "b", "execution"), 3);
    ck_assert_int_eq(jint(j, "a", "steps"), 4);
    ck_assert_int_eq(jint(j, "steps_compared", NULL), 4);
    ck_assert_str_eq(
        json_string_value(json_array_get(json_object_get(json_object_get(j, "b"), "argv"), 3)),
        "0.1");
    ck_assert(json_is_null(json_object_get(j, "first_divergence")));
    ck_assert_int_eq(json_array_size(json_object_get(j, "divergences")), 0);
    json_decref(j);
    destroy(w);
}
END_TEST

/* The learning rate of execution 3 differs from step 2 on. */
START_TEST(test_golden_diff_lr)
{
    world *w = clean();
    tpd_str out;
    bool match = true;
    char why[256];
    json_t *j, *fd;
    for (size_t i = 0; i < w->pr[2].timeline.n; i++) {
        tpd_item *it = &w->pr[2].timeline.v[i];
        if (it->step >= 2 && it->group == TPD_G_OPTIMIZER) it->v = num(0.2);
    }
    diff(w, 2, 3, false, TP_OK, &out, &match, why, sizeof why);
    ck_assert(!match);
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "diff: differ\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out),
                                 "\nfirst divergence  step 2  optimizer.group[0].lr\n"
                                 "    A (run 1)          0.1\n"
                                 "    B (run 2)          0.2\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "at step 2 A has 0.1, B has 0.2"));
    tpd_str_free(&out);

    j = diff_json(w, 2, 3, &match);
    ck_assert(!match && json_is_false(json_object_get(j, "match")));
    fd = json_object_get(j, "first_divergence");
    ck_assert_int_eq(jint(fd, "step", NULL), 2);
    ck_assert_str_eq(json_string_value(json_object_get(fd, "path")), "optimizer.group[0].lr");
    ck_assert_str_eq(json_string_value(json_object_get(fd, "group")), "optimizer");
    ck_assert(json_real_value(json_object_get(json_object_get(fd, "a"), "value")) == 0.1);
    ck_assert(json_real_value(json_object_get(json_object_get(fd, "b"), "value")) == 0.2);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(j, "divergences"), 0), "path")),
                     "optimizer.group[0].lr");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(j, "explanation"), 0), "kind")),
                     "differs");
    json_decref(j);
    destroy(w);
}
END_TEST

/* Execution 3 stops after 3 steps, matching until then: the step counts. */
START_TEST(test_golden_diff_steps)
{
    world *w = clean();
    tpd_str out;
    bool match = true;
    char why[256];
    w->pr[2].timeline.n = 0;
    steps(w, 2, 3);
    diff(w, -1, -1, false, TP_OK, &out, &match, why, sizeof why);
    ck_assert(!match);
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "first divergence  step 3  steps\n"
                                                     "    A (run 1)          4 optimizer steps\n"
                                                     "    B (run 2)          3 optimizer steps\n"));
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "B trained 3 optimizer steps where A "
                                                     "trained 4: B stopped 1 step early"));
    tpd_str_free(&out);
    destroy(w);
}
END_TEST

/* An execution of another run is the caller's mistake; one that made no
 * step, or a run without one that did, cannot be compared. */
START_TEST(test_golden_diff_refused)
{
    world *w = clean();
    tpd_str out;
    bool match;
    char why[256];
    diff(w, 3, -1, false, TP_EINVAL, &out, &match, why, sizeof why);
    ck_assert_str_eq(why, "execution 3 is not an execution of run 1 (its executions: 1, 2)");
    diff(w, -1, 1, true, TP_EINVAL, &out, &match, why, sizeof why);
    ck_assert_str_eq(why, "execution 1 is not an execution of run 2 (its executions: 3)");
    diff(w, 1, -1, false, TP_ENOENT, &out, &match, why, sizeof why);
    ck_assert_str_eq(why, "execution 1 of run 1 made no optimizer step");
    w->pr[2].steps = 0;
    diff(w, -1, -1, false, TP_ENOENT, &out, &match, why, sizeof why);
    ck_assert_str_eq(why, "run 2 has no execution that made an optimizer step (its executions: 3)");
    destroy(w);
}
END_TEST

/* Two executions of one run are told apart by their ids. */
START_TEST(test_golden_diff_one_run)
{
    world *w = clean();
    tpd_str out;
    bool match = true;
    char why[256];
    w->pr[1].timeline.v[0].v = num(0.3); /* execution 2's lr at step 0 */
    tpd_run *r2 = w->r2;
    w->r2 = w->r1;
    w->r2->nexecs = 3;
    diff(w, 3, 2, false, TP_OK, &out, &match, why, sizeof why);
    ck_assert(!match);
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&out), "    A (execution 3)    0.1\n"
                                                     "    B (execution 2)    0.3\n"));
    tpd_str_free(&out);
    w->r2 = r2;
    destroy(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("compare_diff");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_golden_diff_match);
    tcase_add_test(tc, test_golden_diff_lr);
    tcase_add_test(tc, test_golden_diff_steps);
    tcase_add_test(tc, test_golden_diff_refused);
    tcase_add_test(tc, test_golden_diff_one_run);
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
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
