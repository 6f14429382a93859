/* SPDX-License-Identifier: MIT
 * lockstep_test.c -- tpd_val_eq on tensors whose digests are of different
 * kinds (the host's XXH3, a GPU's "dev1", none made), with and without
 * captured values, and how reports word it; and tpd_compare's walk of
 * steps whose two sides hold the same components in the same order. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/checks/lockstep.h"
#include "daemon/checks/render.h"
#include "daemon/obs/obs.h"
#include "tests/unit/testdir.h"

/* the shape of the tensors built by hand */
static const int64_t FOUR[1] = {4}, FIVE[1] = {5};

static const tpd_cmp_opts exact = {false, 0, 0, NULL};

/* tensor is a float32 [4] whose digest is tag repeated, of kind dkind
 * (NULL: left unset, as a value built by hand). */
static tpd_val tensor(uint8_t tag, const char *dkind)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 't';
    v.dtype = "float32";
    v.ndim = 1;
    v.shape = FOUR;
    memset(v.digest, tag, sizeof v.digest);
    if (dkind) snprintf(v.dkind, sizeof v.dkind, "%s", dkind);
    v.stats.sum = v.stats.l2 = 2.0;
    v.stats.maxabs = 1.0;
    return v;
}

/* captured stores the 4 floats f as v's bytes in the blob store dir, under
 * its digest, as the daemon does. */
static void captured(const char *dir, tpd_val *v, const float f[4])
{
    char sub[600], path[700];
    FILE *fp;
    snprintf(sub, sizeof sub, "%s/%02x", dir, v->digest[0]);
    mkdir(sub, 0700);
    snprintf(path, sizeof path, "%s/", sub);
    for (int i = 1; i < TP_DIGEST_LEN; i++)
        snprintf(path + strlen(path), sizeof path - strlen(path), "%02x", v->digest[i]);
    ck_assert_ptr_nonnull(fp = fopen(path, "wb"));
    ck_assert_uint_eq(fwrite(f, sizeof *f, 4, fp), 4);
    fclose(fp);
    v->blob = true;
}

START_TEST(test_compare_same_kind_digests_decide)
{
    tpd_val a = tensor(1, "xxh3"), b = tensor(1, NULL), c = tensor(2, "xxh3");
    tpd_val d1 = tensor(1, "dev1"), d2 = tensor(1, "dev1"), d3 = tensor(3, "dev1");
    ck_assert_str_eq(tpd_val_dkind(&b), "xxh3"); /* unset is the host's XXH3 */
    ck_assert(tpd_digests_comparable(&a, &b));
    ck_assert_int_eq(tpd_val_eq(&a, &b, &exact), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&a, &c, &exact), TPD_DIFF);
    ck_assert_int_eq(tpd_val_eq(&d1, &d2, &exact), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&d1, &d3, &exact), TPD_DIFF);
}
END_TEST

START_TEST(test_compare_different_kinds_are_unsure)
{
    tpd_cmp_opts tol = {true, 1e-3, 1e-6, NULL};
    tpd_val h = tensor(1, "xxh3"), d = tensor(1, "dev1"), n1 = tensor(1, "none"),
            n2 = tensor(1, "none"), other = tensor(9, "dev1");
    /* equal digest bytes of different kinds say nothing */
    ck_assert(!tpd_digests_comparable(&h, &d));
    ck_assert_int_eq(tpd_val_eq(&h, &d, &exact), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&d, &h, &exact), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&h, &other, &exact), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&h, &d, &tol), TPD_UNSURE);
    /* nor do digests the agent could not make, even of one kind */
    ck_assert(!tpd_digests_comparable(&n1, &n2));
    ck_assert_int_eq(tpd_val_eq(&n1, &n2, &exact), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&n1, &h, &exact), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&d, &n1, &tol), TPD_UNSURE);
    /* statistics far apart prove nothing across kinds either (the device
     * sums in another order) */
    other.stats.sum = 1e6;
    ck_assert_int_eq(tpd_val_eq(&h, &other, &tol), TPD_UNSURE);
    /* a dtype or a shape still differs whatever the digests */
    other = tensor(1, "dev1");
    other.dtype = "float16";
    ck_assert_int_eq(tpd_val_eq(&h, &other, &exact), TPD_DIFF);
    other = tensor(1, "dev1");
    other.shape = FIVE;
    ck_assert_int_eq(tpd_val_eq(&h, &other, &exact), TPD_DIFF);
}
END_TEST

START_TEST(test_compare_different_kinds_captured_values_decide)
{
    static const float f[4] = {0.5f, -0.25f, 0.0f, 1.0f};
    static const float near[4] = {0.5f, -0.25f, 0.0f, 1.0001f};
    static const float far[4] = {0.5f, -0.25f, 0.0f, 2.0f};
    static const float negz[4] = {0.5f, -0.25f, -0.0f, 1.0f}; /* equal values, other bytes */
    char dir[512];
    tpd_run run;
    tpd_cmp_opts ex = exact, tol = {true, 1e-3, 0, NULL};
    tpd_val h = tensor(0x11, "xxh3"), d = tensor(0x22, "dev1"), vn = tensor(0x33, "dev1"),
            vf = tensor(0x34, "dev1"), vz = tensor(0x44, "dev1"), none = tensor(0x55, "none"),
            lone = tensor(0x66, "dev1");
    td_make(dir, sizeof dir);
    memset(&run, 0, sizeof run);
    run.blobs = dir;
    ex.values = tol.values = &run;
    captured(dir, &h, f);
    captured(dir, &d, f);
    captured(dir, &vn, near);
    captured(dir, &vf, far);
    captured(dir, &vz, negz);
    captured(dir, &none, f);
    /* exact: equal bytes are what equal digests of one kind would say */
    ck_assert_int_eq(tpd_val_eq(&h, &d, &ex), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&d, &h, &ex), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&h, &vn, &ex), TPD_DIFF);
    ck_assert_int_eq(tpd_val_eq(&h, &vz, &ex), TPD_DIFF);
    /* a tolerance: the values decide */
    ck_assert_int_eq(tpd_val_eq(&h, &vn, &tol), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&h, &vz, &tol), TPD_SAME);
    ck_assert_int_eq(tpd_val_eq(&h, &vf, &tol), TPD_DIFF);
    /* one side not captured: unsure */
    ck_assert_int_eq(tpd_val_eq(&h, &lone, &ex), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&h, &lone, &tol), TPD_UNSURE);
    /* a digest of kind none names no blob: its bytes are never read */
    ck_assert_int_eq(tpd_val_eq(&h, &none, &ex), TPD_UNSURE);
    ck_assert_int_eq(tpd_val_eq(&h, &none, &tol), TPD_UNSURE);
    td_remove(dir);
}
END_TEST

/* ---- tpd_compare where both sides have one shape ---- */

/* A small deterministic generator, so that a failure repeats. */
static uint64_t rnd_state;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rnd_state >> 33) % n;
}

static const char *const PATHS[] = {
    "model.w",      "model.b",       "module[ema].w", "optimizer.state.0.exp_avg",
    "optimizer.lr", "rng.torch_cpu", "loss",          "grad.w",
    "grad.b",       "update.norm"};
#define NPATHS (sizeof PATHS / sizeof PATHS[0])

/* timeline fills l with steps 0..nsteps-1, each holding the components
 * picked by the generator: some twice at a step, some anchors; values
 * small integers, so that the two sides differ now and then. */
static void timeline(tpd_arena *a, tpd_items *l, int nsteps, const int *pick, int npick,
                     unsigned vary)
{
    memset(l, 0, sizeof *l);
    for (int s = 0; s < nsteps; s++)
        for (int k = 0; k < npick; k++) {
            tpd_item it;
            memset(&it, 0, sizeof it);
            it.step = s;
            it.ord = TPD_ORD((uint64_t)s * 100 + (uint64_t)k);
            it.path = PATHS[pick[k]];
            it.group = tpd_group_of(it.path);
            it.anchor = pick[k] == 0 && k == npick - 1;
            it.v.kind = 'v';
            it.v.vtype = TP_V_INT;
            it.v.i = vary && rnd(vary) == 0 ? 1 : 0;
            ck_assert_int_eq(tpd_items_push(a, l, &it), TP_OK);
        }
    tpd_items_sort(l);
}

/* reshaped is l with the items of each (step, group) reordered: those of
 * one path keep their order among themselves, so every item is matched
 * as before, but the sequence of paths differs from the other side's
 * wherever a group has two paths. */
static void reshaped(tpd_arena *a, const tpd_items *l, tpd_items *out)
{
    memset(out, 0, sizeof *out);
    for (size_t lo = 0, hi; lo < l->n; lo = hi) {
        for (hi = lo;
             hi < l->n && l->v[hi].step == l->v[lo].step && l->v[hi].group == l->v[lo].group; hi++)
            continue;
        /* the last path's items first, then the rest in order */
        for (int pass = 0; pass < 2; pass++)
            for (size_t k = lo; k < hi; k++)
                if ((pass == 0) == tpd_same_path(&l->v[k], &l->v[hi - 1])) {
                    tpd_item it = l->v[k];
                    it.ord = TPD_ORD(out->n);
                    ck_assert_int_eq(tpd_items_push(a, out, &it), TP_OK);
                }
    }
    out->light = l->light;
    out->nlight = l->nlight;
}

static void same_div(const tpd_div *x, const tpd_div *y)
{
    ck_assert_int_eq(x->found, y->found);
    if (!x->found) return;
    ck_assert_int_eq(x->step_a, y->step_a);
    ck_assert_int_eq(x->group, y->group);
    ck_assert_str_eq(x->path, y->path);
    ck_assert_ptr_eq(x->a, y->a); /* the same item of a */
    ck_assert_int_eq(x->b != NULL, y->b != NULL);
    if (x->b) ck_assert_int_eq(x->b->v.i, y->b->v.i);
}

/* Steps whose two sides hold the same components in the same order are
 * compared item by item in one pass: the same divergences (the first, the
 * RNG's, the first other, the first unsure; with duplicate paths, anchors,
 * modules and light steps) as the general walk, which the same sides
 * reordered within each group (matched alike) go through. */
START_TEST(test_compare_same_shape_as_general)
{
    rnd_state = 42;
    for (int round = 0; round < 400; round++) {
        tpd_arena *ar = tpd_arena_create();
        tpd_items a, b, b2;
        tpd_cmp_result r1, r2;
        int pick[8], npick = 1 + (int)rnd(8), nsteps = 1 + (int)rnd(6);
        unsigned vary = 1 + rnd(40);
        ck_assert_ptr_nonnull(ar);
        for (int k = 0; k < npick; k++) pick[k] = (int)rnd(NPATHS);
        timeline(ar, &a, nsteps, pick, npick, 0);
        timeline(ar, &b, nsteps, pick, npick, vary);
        if (rnd(3) == 0) {
            static int64_t lit[1];
            lit[0] = rnd((unsigned)nsteps);
            b.light = lit;
            b.nlight = 1;
        }
        reshaped(ar, &b, &b2);
        tpd_compare(&a, 0, &b, 0, &exact, &r1);
        tpd_compare(&a, 0, &b2, 0, &exact, &r2);
        ck_assert_int_eq(r1.steps, r2.steps);
        same_div(&r1.first, &r2.first);
        same_div(&r1.first_rng, &r2.first_rng);
        same_div(&r1.first_other, &r2.first_other);
        same_div(&r1.first_unsure, &r2.first_unsure);
        tpd_arena_destroy(ar);
    }
}
END_TEST

/* tpd_items_sort orders by (step, group, ord) whether the steps come in
 * order (each step sorted on its own) or not (the whole sorted at once). */
START_TEST(test_items_sort_either_way)
{
    rnd_state = 7;
    for (int round = 0; round < 200; round++) {
        tpd_arena *ar = tpd_arena_create();
        tpd_items l;
        bool back = round % 2; /* steps that go back now and then */
        int64_t step = 0;
        memset(&l, 0, sizeof l);
        for (int k = 0; k < 60; k++) {
            tpd_item it;
            memset(&it, 0, sizeof it);
            if (rnd(8) == 0) step += 1;
            if (back && rnd(16) == 0) step = rnd(4);
            it.step = step;
            it.ord = TPD_ORD(rnd(1000)) + (uint64_t)k; /* distinct */
            it.path = PATHS[rnd(NPATHS)];
            it.group = tpd_group_of(it.path);
            ck_assert_int_eq(tpd_items_push(ar, &l, &it), TP_OK);
        }
        tpd_items_sort(&l);
        for (size_t i = 1; i < l.n; i++) {
            const tpd_item *x = &l.v[i - 1], *y = &l.v[i];
            ck_assert(x->step < y->step ||
                      (x->step == y->step &&
                       (x->group < y->group || (x->group == y->group && x->ord < y->ord))));
        }
        ck_assert_uint_eq(l.n, 60);
        tpd_arena_destroy(ar);
    }
}
END_TEST

START_TEST(test_compare_reports_say_why)
{
    tpd_val h = tensor(1, "xxh3"), d = tensor(1, "dev1"), n = tensor(1, "none"),
            q = tensor(1, "abc");
    tpd_item ia, ib;
    tpd_div div;
    tpd_why why;
    tpd_str t = {0};
    json_t *j;
    char *s;

    ck_assert(!tpd_render_dkinds(&t, &h, "A", &h, "R"));
    ck_assert(!tpd_render_dkinds(&t, &h, "A", NULL, "R"));
    ck_assert_uint_eq(t.len, 0);
    ck_assert(tpd_render_dkinds(&t, &d, "A", &h, "R"));
    ck_assert_str_eq(tpd_str_cstr(&t), "the digests are of different kinds (dev1 on the device in "
                                       "A, xxh3 on the host in R) and cannot be compared");
    tpd_str_reset(&t);
    ck_assert(tpd_render_dkinds(&t, &q, "A", &h, "R"));
    ck_assert_str_eq(tpd_str_cstr(&t), "the digests are of different kinds (abc in A, xxh3 on the "
                                       "host in R) and cannot be compared");
    tpd_str_reset(&t);
    ck_assert(tpd_render_dkinds(&t, &h, "A", &n, "R"));
    ck_assert_str_eq(tpd_str_cstr(&t), "the agent could not digest it in R (digest kind none)");
    tpd_str_reset(&t);
    ck_assert(tpd_render_dkinds(&t, &n, "A", &n, "R"));
    ck_assert_str_eq(tpd_str_cstr(&t),
                     "the agent could not digest it in A or in R (digest kind none)");
    tpd_str_reset(&t);

    /* the text of a value names a kind other than the host's */
    tpd_render_val(&t, &d);
    ck_assert_ptr_nonnull(strstr(tpd_str_cstr(&t), " digest 010101010101 (dev1)"));
    tpd_str_reset(&t);
    tpd_render_val(&t, &h);
    ck_assert_ptr_null(strstr(tpd_str_cstr(&t), "xxh3"));
    tpd_str_free(&t);

    /* JSON: digest_kind only when it is not the host's XXH3 */
    j = tpd_json_val(&d);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "digest_kind")), "dev1");
    json_decref(j);
    j = tpd_json_val(&h);
    ck_assert_ptr_null(json_object_get(j, "digest_kind"));
    json_decref(j);

    /* the explanation of an unsure divergence */
    memset(&ia, 0, sizeof ia);
    memset(&ib, 0, sizeof ib);
    ia.path = ib.path = "model.fc.weight";
    ia.v = h, ib.v = d;
    memset(&div, 0, sizeof div);
    div.found = div.unsure = true;
    div.step_a = 4;
    div.path = "model.fc.weight";
    div.a = &ia, div.b = &ib;
    memset(&why, 0, sizeof why);
    ck_assert(tpd_why_dkinds(&why, &div, "A", "R"));
    ck_assert_str_eq(why.text.s,
                     "  - model.fc.weight at step 4: the digests are of different kinds "
                     "(xxh3 on the host in A, dev1 on the device in R) and cannot be "
                     "compared, so whether the tensor is the same in A and in R cannot be "
                     "shown: rerun with --capture values to compare their values\n");
    j = tpd_why_json(&why);
    s = json_dumps(j, JSON_COMPACT);
    ck_assert_ptr_nonnull(strstr(s, "\"kind\":\"digest_kinds\""));
    free(s);
    json_decref(j);
    tpd_why_free(&why);
    ib.v = n;
    ck_assert(tpd_why_dkinds(&why, &div, "A", "R"));
    ck_assert_ptr_nonnull(strstr(why.text.s, "could not digest it in R (digest kind none), so "
                                             "whether the tensor is the same in A and in R cannot "
                                             "be shown\n"));
    tpd_why_free(&why);
    /* an unsure divergence of one kind is a tolerance's, not this */
    ib.v = tensor(2, "xxh3");
    ck_assert(!tpd_why_dkinds(&why, &div, "A", "R"));
    ck_assert_int_eq(why.n, 0);
    tpd_why_free(&why);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lockstep");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_compare_same_kind_digests_decide);
    tcase_add_test(tc, test_compare_different_kinds_are_unsure);
    tcase_add_test(tc, test_compare_different_kinds_captured_values_decide);
    tcase_add_test(tc, test_compare_reports_say_why);
    tcase_add_test(tc, test_compare_same_shape_as_general);
    tcase_add_test(tc, test_items_sort_either_way);
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
