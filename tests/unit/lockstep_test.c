/* SPDX-License-Identifier: MIT
 * lockstep_test.c -- tpd_val_eq on tensors whose digests are of different
 * kinds (the host's XXH3, a GPU's "dev1", none made), with and without
 * captured values, and how reports word it. */
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
