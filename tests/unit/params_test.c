/* SPDX-License-Identifier: MIT
 * params_test.c -- a run's params (daemon/checks/params.h) against their
 * declaration (proto/params.def): each read through its identifier, with
 * its declared default when absent, null or of another type; the check
 * run.create makes refuses a misspelt key, a key of another check and a
 * value of the wrong type, naming them; and the table itself: every key
 * once per check, a default of the declared type. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/params.h"

START_TEST(test_params_read_by_identifier)
{
    tpd_params p;
    char why[256] = "";
    ck_assert_int_eq(tpd_params_parse(&p,
                                      "{\"micro\": 4, \"rtol\": 0.0001, \"atol\": "
                                      "9.9999999999999995e-7, \"updates\": 1e300, "
                                      "\"disable_dropout\": true}",
                                      why, sizeof why),
                     TP_OK);
    ck_assert_int_eq(tpd_param_int(&p, TPP_accum_micro), 4);
    ck_assert(tpd_param_num(&p, TPP_accum_micro) == 4);
    ck_assert(tpd_param_num(&p, TPP_accum_rtol) == 1e-4); /* exact: the same double */
    ck_assert(tpd_param_num(&p, TPP_accum_atol) == 1e-6);
    ck_assert_int_eq(tpd_param_int(&p, TPP_accum_updates), 2); /* does not fit: the default */
    ck_assert(tpd_param_bool(&p, TPP_accum_disable_dropout));
    ck_assert(tpd_param_has(&p, TPP_accum_micro));
    tpd_params_clear(&p);
    ck_assert_ptr_null(p.root);
    tpd_params_clear(&p); /* twice: a no-op */
    /* absent, null, or of another type: the declared default */
    ck_assert_int_eq(tpd_params_parse(&p, "{\"micro\": null, \"updates\": -2.5, \"every\": \"x\"}",
                                      why, sizeof why),
                     TP_OK);
    ck_assert(!tpd_param_has(&p, TPP_accum_micro));
    ck_assert_int_eq(tpd_param_int(&p, TPP_accum_micro), 1);
    ck_assert_int_eq(tpd_param_int(&p, TPP_accum_updates), -2); /* truncated, as a cast */
    ck_assert(tpd_param_num(&p, TPP_accum_rtol) == 1e-4);
    ck_assert(!tpd_param_bool(&p, TPP_accum_disable_dropout));
    ck_assert_int_eq(tpd_param_int(&p, TPP_health_every), 1);
    ck_assert(isnan(tpd_param_num(&p, TPP_health_max_grad_norm))); /* no bound */
    ck_assert_ptr_null(tpd_param_str(&p, TPP_health_lr_expect_file));
    ck_assert_ptr_null(tpd_param_json(&p, TPP_health_lr_expect));
    tpd_params_clear(&p);
    /* what does not parse reads as empty: every reader gives its default */
    ck_assert_int_eq(tpd_params_parse(&p, "{\"micro\": 4", why, sizeof why), TP_EINVAL);
    ck_assert_msg(strstr(why, "not JSON"), "%s", why);
    ck_assert_int_eq(tpd_param_int(&p, TPP_accum_micro), 1);
    tpd_params_clear(&p);
    ck_assert_int_eq(tpd_params_parse(&p, "[4]", NULL, 0), TP_EINVAL);
    ck_assert(tpd_param_num(&p, TPP_health_max_skipped) == 0.25);
    tpd_params_clear(&p);
    ck_assert_int_eq(tpd_params_parse(&p, NULL, why, sizeof why), TP_EINVAL);
    tpd_params_clear(&p);
    ck_assert_int_eq(tpd_params_parse(&p, "{\"a\": 1, \"a\": 2}", why, sizeof why), TP_EINVAL);
    ck_assert_msg(strstr(why, "duplicate"), "%s", why);
    tpd_params_clear(&p);
}
END_TEST

/* refused checks json against check and wants a reason holding want. */
static void refused(const char *check, const char *json, const char *want)
{
    tpd_params p;
    char why[512] = "";
    ck_assert_int_eq(tpd_params_parse(&p, json, why, sizeof why), TP_OK);
    ck_assert_msg(tpd_params_check(&p, check, why, sizeof why) == TP_EINVAL, "%s accepted %s",
                  check, json);
    ck_assert_msg(strstr(why, want) != NULL, "%s: '%s', not '%s'", json, why, want);
    tpd_params_clear(&p);
}

START_TEST(test_params_check_refuses)
{
    refused("accum", "{\"micr\": 4}",
            "'micr' is not a parameter of accum (its parameters: micro, updates, "
            "disable_dropout, rtol, atol)");
    refused("accum", "{\"every\": 4}", "'every' is not a parameter of accum");
    refused("accum", "{\"micro\": 4.5}", "'micro' of accum wants an integer");
    refused("accum", "{\"updates\": 1e300}", "'updates' of accum wants an integer");
    refused("health", "{\"max_grad_norm\": \"1\"}", "'max_grad_norm' of health wants a number");
    refused("coverage", "{\"padding_exact\": 1}",
            "'padding_exact' of coverage wants true or false");
    refused("nocheck", "{\"x\": 1}", "(its parameters: none)");
}
END_TEST

START_TEST(test_params_check_accepts)
{
    static const char *ok[][2] = {
        {"accum", "{\"micro\": 4, \"updates\": 2, \"disable_dropout\": false, \"rtol\": 1, "
                  "\"atol\": 0.5}"},
        {"health", "{\"max_grad_norm\": 1, \"lr_expect\": [[0, [0.1]]], \"every\": null}"},
        {"coverage", "{\"policy\": \"exactly_once\", \"universe_ranges\": [[0, 9]]}"},
        {"record", "{\"capture\": \"digests\"}"},
        {"resume", "{}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tpd_params p;
        char why[256] = "";
        ck_assert_int_eq(tpd_params_parse(&p, ok[i][1], why, sizeof why), TP_OK);
        ck_assert_msg(tpd_params_check(&p, ok[i][0], why, sizeof why) == TP_OK, "%s: %s", ok[i][1],
                      why);
        tpd_params_clear(&p);
    }
}
END_TEST

START_TEST(test_params_table)
{
    for (int i = 0; i < TPP_COUNT; i++) {
        const tp_param_info *a = &tp_params[i];
        ck_assert_int_eq(tp_param_find(a->check, a->key, strlen(a->key)), i); /* once */
        ck_assert(a->meaning[0] != '\0');
        if (!isnan(a->dflt) && a->type == TP_P_INT) ck_assert(a->dflt == (double)(int64_t)a->dflt);
        if (!isnan(a->dflt) && a->type == TP_P_BOOL) ck_assert(a->dflt == 0 || a->dflt == 1);
        if (a->type == TP_P_STR || a->type == TP_P_JSON) ck_assert(isnan(a->dflt));
    }
    ck_assert_str_eq(TPP_KEY(TPP_coverage_universe_ranges), "universe_ranges");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("params");
    tcase_add_test(tc, test_params_read_by_identifier);
    tcase_add_test(tc, test_params_check_refuses);
    tcase_add_test(tc, test_params_check_accepts);
    tcase_add_test(tc, test_params_table);
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
