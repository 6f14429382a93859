/* SPDX-License-Identifier: MIT
 * control_test.c -- the control protocol holds to its declaration
 * (proto/control.def): the daemon refuses a request with an undeclared
 * argument, one of another type, or without a required one, naming it; and
 * every command's reply holds only the results its command declares, each
 * of its declared type.  Requests go to the daemon's command handler
 * (daemon/serve/control.h) over a real store. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "daemon/serve/control.h"
#include "daemon/store/store.h"
#include "proto/control.h"
#include "proto/mp.h"
#include "tests/unit/testdir.h"

typedef struct fixture {
    char dir[512], db[640];
    tpd_store *s;
    tpd_control *c;
    tp_buf req, rep;
} fixture;

static void open_fixture(fixture *f)
{
    char why[256];
    memset(f, 0, sizeof *f);
    td_make(f->dir, sizeof f->dir);
    td_path(f->db, sizeof f->db, f->dir, "runs.db");
    ck_assert_int_eq(tpd_store_open(&f->s, f->db, 0, why, sizeof why), TP_OK);
    ck_assert_int_eq(tpd_control_create(&f->c, f->s, NULL, NULL), TP_OK);
    tp_buf_init(&f->req);
    tp_buf_init(&f->rep);
}

static void close_fixture(fixture *f)
{
    tpd_control_destroy(f->c);
    tpd_store_close(f->s);
    tp_buf_free(&f->req);
    tp_buf_free(&f->rep);
    td_remove(f->dir);
}

/* begin starts a request for the command named name with n arguments. */
static void begin(fixture *f, const char *name, uint32_t n)
{
    tp_buf_reset(&f->req);
    tp_mp_map(&f->req, n + 1);
    tp_mp_cstr(&f->req, TP_CTL_CMD);
    tp_mp_cstr(&f->req, name);
}

/* ask sends the request and returns whether the reply says ok; the error
 * goes into err. */
static bool ask(fixture *f, char *err, size_t n)
{
    bool proven, ok = false;
    const char *s;
    uint32_t len;
    ck_assert(!f->req.oom);
    ck_assert_int_eq(tpd_control_handle(f->c, f->req.data, f->req.len, true, &proven, &f->rep),
                     TP_OK);
    ck_assert_int_eq(tp_mp_map_bool(f->rep.data, f->rep.len, TP_CTL_OK, &ok), TP_OK);
    err[0] = '\0';
    if (!ok && tp_mp_map_str(f->rep.data, f->rep.len, TP_CTL_ERROR, &s, &len) == TP_OK)
        snprintf(err, n, "%.*s", (int)len, s);
    return ok;
}

static void refused(fixture *f, const char *want)
{
    char err[512];
    ck_assert_msg(!ask(f, err, sizeof err), "accepted; want '%s'", want);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
}

/* value writes a value of type t (what a test request sends). */
static void value(tp_buf *b, tp_ctype t)
{
    switch (t) {
    case TP_C_INT:
        tp_mp_int(b, 1);
        break;
    case TP_C_NUM:
        tp_mp_f64(b, 0.5);
        break;
    case TP_C_BOOL:
        tp_mp_bool(b, false);
        break;
    case TP_C_STR:
        tp_mp_cstr(b, "runs");
        break;
    case TP_C_STRS:
        tp_mp_array(b, 1), tp_mp_cstr(b, "x");
        break;
    case TP_C_INTS:
        tp_mp_array(b, 1), tp_mp_int(b, 1);
        break;
    case TP_C_BIN:
        tp_mp_bin(b, "x", 1);
        break;
    }
}

/* of_type says whether the value at r is of type t. */
static bool of_type(tp_mpr *r, tp_ctype t)
{
    tp_mptype mt;
    uint32_t n;
    ck_assert_int_eq(tp_mpr_peek(r, &mt), TP_OK);
    if (mt == TP_MP_NIL) return tp_mpr_skip(r) == TP_OK; /* nil: none */
    switch (t) {
    case TP_C_INT:
    case TP_C_NUM:
    case TP_C_BOOL:
    case TP_C_STR:
    case TP_C_BIN:
        if (mt != (t == TP_C_INT    ? TP_MP_INT
                   : t == TP_C_NUM  ? TP_MP_FLOAT
                   : t == TP_C_BOOL ? TP_MP_BOOL
                   : t == TP_C_BIN  ? TP_MP_BIN
                                    : TP_MP_STR))
            return false;
        return tp_mpr_skip(r) == TP_OK;
    case TP_C_STRS:
    case TP_C_INTS:
        if (tp_mpr_array(r, &n) != TP_OK) return false;
        for (uint32_t i = 0; i < n; i++) {
            ck_assert_int_eq(tp_mpr_peek(r, &mt), TP_OK);
            if (mt != (t == TP_C_STRS ? TP_MP_STR : TP_MP_INT) || tp_mpr_skip(r) != TP_OK)
                return false;
        }
        return true;
    }
    return false;
}

/* replies_declared checks that the reply to cmd holds "ok" and only
 * results cmd declares, each of its type. */
static void replies_declared(fixture *f, tp_cmd cmd)
{
    tp_mpr r;
    uint32_t n, klen;
    const char *k;
    tp_mpr_init(&r, f->rep.data, f->rep.len);
    ck_assert_int_eq(tp_mpr_map(&r, &n), TP_OK);
    for (uint32_t i = 0; i < n; i++) {
        int found = -1;
        ck_assert_int_eq(tp_mpr_str(&r, &k, &klen), TP_OK);
        if (tp_mp_str_eq(k, klen, TP_CTL_OK)) {
            ck_assert_int_eq(tp_mpr_skip(&r), TP_OK);
            continue;
        }
        for (int j = 0; j < TPR_COUNT && found < 0; j++)
            if (tp_ress[j].cmd == cmd && tp_mp_str_eq(k, klen, tp_ress[j].key)) found = j;
        ck_assert_msg(found >= 0, "%s replied '%.*s', which it does not declare", TPC_NAME(cmd),
                      (int)klen, k);
        ck_assert_msg(of_type(&r, tp_ress[found].type), "%s replied '%s' not as %s", TPC_NAME(cmd),
                      tp_ress[found].key, tp_ctype_name(tp_ress[found].type));
    }
}

/* Every command, sent every argument it declares, is known, answers
 * without an internal error, and replies only declared results.  Run 1 and
 * execution 1 exist, so that most succeed. */
START_TEST(every_command_replies_its_declaration)
{
    fixture f;
    char err[512];
    int answered = 0;
    open_fixture(&f);
    begin(&f, "run.create", 1);
    tp_mp_cstr(&f.req, TPA_KEY(TPA_run_create_check)), tp_mp_cstr(&f.req, "record");
    ck_assert(ask(&f, err, sizeof err));
    begin(&f, "exec.create", 1);
    tp_mp_cstr(&f.req, TPA_KEY(TPA_exec_create_run)), tp_mp_int(&f.req, 1);
    ck_assert(ask(&f, err, sizeof err));
    for (int c = 0; c < TPC_COUNT; c++) {
        uint32_t n = 0;
        if (c == TPC_shutdown) continue; /* last */
        for (int a = 0; a < TPA_COUNT; a++) n += tp_args[a].cmd == (tp_cmd)c;
        begin(&f, c == TPC_evidence ? "coverage.evidence" : TPC_NAME(c), n);
        for (int a = 0; a < TPA_COUNT; a++) {
            if (tp_args[a].cmd != (tp_cmd)c) continue;
            tp_mp_cstr(&f.req, tp_args[a].key);
            value(&f.req, tp_args[a].type);
        }
        if (ask(&f, err, sizeof err)) {
            replies_declared(&f, (tp_cmd)c);
            answered++;
        } else {
            ck_assert_msg(strstr(err, "internal error") == NULL, "%s: %s", TPC_NAME(c), err);
            ck_assert_msg(strstr(err, "unknown") == NULL, "%s: %s", TPC_NAME(c), err);
            ck_assert_msg(strstr(err, "missing argument") == NULL, "%s: %s", TPC_NAME(c), err);
        }
    }
    ck_assert_int_ge(answered, TPC_COUNT / 2);
    begin(&f, "shutdown", 0);
    ck_assert(ask(&f, err, sizeof err));
    replies_declared(&f, TPC_shutdown);
    ck_assert(tpd_control_shutdown(f.c));
    close_fixture(&f);
}
END_TEST

START_TEST(undeclared_argument_refused)
{
    fixture f;
    open_fixture(&f);
    begin(&f, "run.create", 1);
    tp_mp_cstr(&f.req, "chek"), tp_mp_cstr(&f.req, "record");
    refused(&f, "unknown argument 'chek' of run.create (it takes name, check, params, "
                "started_ago_ns)");
    begin(&f, "ping", 1);
    tp_mp_cstr(&f.req, "verbose"), tp_mp_bool(&f.req, true);
    refused(&f, "unknown argument 'verbose' of ping (it takes none)");
    /* an argument of another command is not this one's */
    begin(&f, "detach", 2);
    tp_mp_cstr(&f.req, "pid"), tp_mp_int(&f.req, 1);
    tp_mp_cstr(&f.req, "owner"), tp_mp_bool(&f.req, true);
    refused(&f, "unknown argument 'owner' of detach");
    close_fixture(&f);
}
END_TEST

START_TEST(argument_of_another_type_refused)
{
    fixture f;
    open_fixture(&f);
    begin(&f, "exec.create", 1);
    tp_mp_cstr(&f.req, "run"), tp_mp_cstr(&f.req, "1");
    refused(&f, "argument 'run' is not an integer");
    begin(&f, "exec.create", 2);
    tp_mp_cstr(&f.req, "run"), tp_mp_int(&f.req, 1);
    tp_mp_cstr(&f.req, "argv"), tp_mp_array(&f.req, 2), tp_mp_cstr(&f.req, "python"),
        tp_mp_int(&f.req, 3);
    refused(&f, "argument 'argv' is not an array of strings");
    begin(&f, "verdict", 2);
    tp_mp_cstr(&f.req, "run"), tp_mp_int(&f.req, 1);
    tp_mp_cstr(&f.req, "plan"), tp_mp_int(&f.req, 1);
    refused(&f, "argument 'plan' is not a boolean");
    close_fixture(&f);
}
END_TEST

START_TEST(required_argument_missing_refused)
{
    fixture f;
    char err[512];
    open_fixture(&f);
    begin(&f, "run.create", 1);
    tp_mp_cstr(&f.req, "name"), tp_mp_cstr(&f.req, "x");
    refused(&f, "missing argument 'check'");
    /* nil counts as absent: for a required argument too */
    begin(&f, "seen", 2);
    tp_mp_cstr(&f.req, "exec"), tp_mp_nil(&f.req);
    tp_mp_cstr(&f.req, "pid"), tp_mp_int(&f.req, 1);
    refused(&f, "missing argument 'exec'");
    /* and an optional one given as nil is accepted */
    begin(&f, "run.create", 2);
    tp_mp_cstr(&f.req, "check"), tp_mp_cstr(&f.req, "record");
    tp_mp_cstr(&f.req, "name"), tp_mp_nil(&f.req);
    ck_assert_msg(ask(&f, err, sizeof err), "%s", err);
    close_fixture(&f);
}
END_TEST

START_TEST(commands_by_name)
{
    fixture f;
    char check[64];
    open_fixture(&f);
    ck_assert_int_eq(tp_cmd_find("run.create", 10, NULL, 0), TPC_run_create);
    ck_assert_int_eq(tp_cmd_find("coverage.evidence", 17, check, sizeof check), TPC_evidence);
    ck_assert_str_eq(check, "coverage");
    ck_assert_int_eq(tp_cmd_find(".evidence", 9, check, sizeof check), -1);
    ck_assert_int_eq(tp_cmd_find("run.creat", 9, NULL, 0), -1);
    /* a check that keeps no evidence file has no evidence command */
    begin(&f, "record.evidence", 1);
    tp_mp_cstr(&f.req, "run"), tp_mp_int(&f.req, 1);
    refused(&f, "unknown command 'record.evidence'");
    begin(&f, "<check>.evidence", 1);
    tp_mp_cstr(&f.req, "run"), tp_mp_int(&f.req, 1);
    refused(&f, "unknown command");
    close_fixture(&f);
}
END_TEST

/* The declaration itself: a key once per command and direction, a
 * meaning for each, a command's name once. */
START_TEST(declaration_well_formed)
{
    for (int i = 0; i < TPC_COUNT; i++) {
        ck_assert(tp_cmds[i].meaning[0] != '\0');
        for (int j = 0; j < i; j++) ck_assert_str_ne(tp_cmds[i].name, tp_cmds[j].name);
    }
    for (int i = 0; i < TPA_COUNT; i++) {
        ck_assert(tp_args[i].meaning[0] != '\0');
        ck_assert_str_ne(tp_args[i].key, TP_CTL_CMD);
        ck_assert_str_ne(tp_args[i].key, TP_CTL_TOK);
        for (int j = 0; j < i; j++)
            ck_assert(tp_args[i].cmd != tp_args[j].cmd ||
                      strcmp(tp_args[i].key, tp_args[j].key) != 0);
    }
    for (int i = 0; i < TPR_COUNT; i++) {
        ck_assert(tp_ress[i].meaning[0] != '\0');
        ck_assert_str_ne(tp_ress[i].key, TP_CTL_OK);
        ck_assert_str_ne(tp_ress[i].key, TP_CTL_ERROR);
        for (int j = 0; j < i; j++)
            ck_assert(tp_ress[i].cmd != tp_ress[j].cmd ||
                      strcmp(tp_ress[i].key, tp_ress[j].key) != 0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("control");
    TCase *tc = tcase_create("control");
    SRunner *sr;
    int failed;
    tcase_add_test(tc, every_command_replies_its_declaration);
    tcase_add_test(tc, undeclared_argument_refused);
    tcase_add_test(tc, argument_of_another_type_refused);
    tcase_add_test(tc, required_argument_missing_refused);
    tcase_add_test(tc, commands_by_name);
    tcase_add_test(tc, declaration_well_formed);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
