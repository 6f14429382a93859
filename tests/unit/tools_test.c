/* SPDX-License-Identifier: MIT
 * tools_test.c -- the parts of trainparity-run that need no daemon: word
 * splitting (tools/base/words.h) and its inverse (tools/base/cli.h's
 * tpt_argv_join), option parsing (tools/base/opts.h), the --lr-expect file
 * (tools/cmd/lrfile.h), report values in words (tools/report/reportval.h), the JUnit
 * report (tools/report/junit.h), plots (tools/report/plot.h), private directories
 * (tools/base/paths.h), which files existed before a command
 * (tools/exec/tree.h) and the environment a command is started with
 * (tools/base/launch.h, tools/exec/exec.h). */
#define _GNU_SOURCE
#include <check.h>
#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/testdir.h"
#include "tools/base/cli.h"
#include "tools/base/errbuf.h"
#include "tools/report/junit.h"
#include "tools/cmd/lrfile.h"
#include "tools/base/opts.h"
#include "tools/base/paths.h"
#include "tools/report/plot.h"
#include "tools/report/reportval.h"
#include "tools/exec/tree.h"
#include "tools/base/words.h"
#include "tools/client/client.h"
#include "tools/base/launch.h"
#include "proto/control.h"
#include "tools/exec/exec.h"

/* ---- words and argv_join ---- */

START_TEST(test_words_split_like_a_shell)
{
    char *head[2] = {"python", "-u"};
    char **v, err[TPT_ERR_LEN];
    ck_assert_int_eq(tpt_words(head, 2, "  a 'b c'\t\"d \\\"e\\\" \\x\" f\\ g '' h'i'j\n", &v, err),
                     TP_OK);
    ck_assert_str_eq(v[0], "python");
    ck_assert_str_eq(v[1], "-u");
    ck_assert_str_eq(v[2], "a");
    ck_assert_str_eq(v[3], "b c");
    ck_assert_str_eq(v[4], "d \"e\" \\x"); /* in "...", \ escapes only " \ $ ` */
    ck_assert_str_eq(v[5], "f g");
    ck_assert_str_eq(v[6], ""); /* '' is an empty word */
    ck_assert_str_eq(v[7], "hij");
    ck_assert_ptr_null(v[8]);
    free(v);
    /* nothing but blanks: the head alone */
    ck_assert_int_eq(tpt_words(head, 1, " \t ", &v, err), TP_OK);
    ck_assert_str_eq(v[0], "python");
    ck_assert_ptr_null(v[1]);
    free(v);
}
END_TEST

START_TEST(test_words_unterminated_quote_is_einval)
{
    char **v = NULL, err[TPT_ERR_LEN] = "";
    ck_assert_int_eq(tpt_words(NULL, 0, "a 'b", &v, err), TP_EINVAL);
    ck_assert_str_eq(err, "unterminated quote in 'a 'b'");
    ck_assert_ptr_null(v);
    ck_assert_int_eq(tpt_words(NULL, 0, "\"a \\\"", &v, err), TP_EINVAL);
    ck_assert_int_eq(tpt_words(NULL, 0, "a", &v, NULL), TP_OK); /* err may be NULL */
    free(v);
}
END_TEST

START_TEST(test_argv_join_quotes_what_words_reads_back)
{
    char *argv[] = {"python", "train.py", "--lr=0.1", "it's", "a b", "", "$HOME", "x\"y", NULL};
    char out[512], **back, err[TPT_ERR_LEN];
    tpt_argv_join(argv, out, sizeof out);
    ck_assert_str_eq(out, "python train.py --lr=0.1 'it'\\''s' 'a b' '' '$HOME' 'x\"y'");
    ck_assert_int_eq(tpt_words(NULL, 0, out, &back, err), TP_OK);
    for (int i = 0; argv[i]; i++) ck_assert_str_eq(back[i], argv[i]);
    ck_assert_ptr_null(back[8]);
    free(back);
    /* cut with "..." when it does not fit; never past n */
    tpt_argv_join(argv, out, 20);
    ck_assert_str_eq(out, "python train.py...");
    tpt_argv_join(NULL, out, sizeof out);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_outcome_status)
{
    ck_assert_int_eq(tpt_outcome_status("PASS"), TPT_EXIT_PASS);
    ck_assert_int_eq(tpt_outcome_status("FAIL"), TPT_EXIT_FAIL);
    ck_assert_int_eq(tpt_outcome_status("ABSTAIN"), TPT_EXIT_ABSTAIN);
    ck_assert_int_eq(tpt_outcome_status("ERROR"), TPT_EXIT_ERROR);
    ck_assert_int_eq(tpt_outcome_status("pass"), TPT_EXIT_ERROR);
    ck_assert_int_eq(tpt_outcome_status(NULL), TPT_EXIT_ERROR);
}
END_TEST

/* ---- opts ---- */

static const char *at, *dry;
static const tpt_optx extra[] = {
    {"at", "K", "interrupt after step K", &at}, {"dry-run", NULL, "say, do not do", &dry}, {0}};
static const tpt_cmdspec spec = {
    "resume", "[options] -- CMD...", "resume parity",
    TPT_O_RTOL | TPT_O_ATOL | TPT_O_JSON | TPT_O_CAPTURE | TPT_O_CMD | TPT_O_LISTEN, extra};

/* parse runs tpt_opts_parse on the words of s (the subcommand first). */
static tp_err parse(const tpt_cmdspec *sp, const char *s, tpt_opts *o, char *err)
{
    static char **v;
    char *head[1] = {"resume"};
    int n = 0;
    free(v);
    ck_assert_int_eq(tpt_words(head, 1, s, &v, NULL), TP_OK);
    while (v[n]) n++;
    at = dry = NULL;
    return tpt_opts_parse(sp, n, v, o, err);
}

START_TEST(test_opts_parse_values_flags_and_command)
{
    tpt_opts o;
    char err[TPT_ERR_LEN];
    ck_assert_int_eq(parse(&spec,
                           "--rtol 1e-3 --atol=0 --json r.json --at 5 --dry-run "
                           "--capture values -- python t.py --rtol x",
                           &o, err),
                     TP_OK);
    ck_assert(o.rtol_set && o.rtol == 1e-3);
    ck_assert(o.atol_set && o.atol == 0);
    ck_assert_str_eq(o.json, "r.json");
    ck_assert_str_eq(o.capture, "values");
    ck_assert_str_eq(at, "5");
    ck_assert_str_eq(dry, "1");
    /* what follows -- is the command's, options and all */
    ck_assert_int_eq(o.ncmd, 4);
    ck_assert_str_eq(o.cmd[0], "python");
    ck_assert_str_eq(o.cmd[3], "x");
    ck_assert_ptr_null(o.cmd[4]);
    /* defaults */
    ck_assert_int_eq(parse(&spec, "-- a", &o, err), TP_OK);
    ck_assert_str_eq(o.capture, "digests");
    ck_assert(!o.rtol_set && !o.atol_set && o.json == NULL && at == NULL && dry == NULL);
    /* help wins, whatever follows */
    ck_assert_int_eq(parse(&spec, "--help --bogus", &o, err), TP_OK);
    ck_assert(o.help);
}
END_TEST

START_TEST(test_opts_parse_errors_say_what)
{
    static const struct {
        const char *args, *err;
    } bad[] = {
        {"--bogus -- a", "unknown option '--bogus'"},
        {"-x -- a", "unknown option '-x'"},
        {"--name n -- a", "unknown option '--name'"}, /* a common option not accepted */
        {"--rtol -1 -- a", "--rtol wants a number >= 0, not '-1'"},
        {"--rtol 1e-3x -- a", "--rtol wants a number >= 0, not '1e-3x'"},
        {"--atol nan -- a", "--atol wants a number >= 0, not 'nan'"},
        {"--capture all -- a", "--capture wants 'digests' or 'values', not 'all'"},
        {"--listen 1.2.3.4:5 -- a", "--listen wants tcp://HOST:PORT, not '1.2.3.4:5'"},
        {"--json -- a", "option '--json' wants a value (FILE)"},
        {"--at", "option '--at' wants a value (K)"},
        {"--dry-run=yes -- a", "option '--dry-run' takes no value"},
        {"stray -- a", "unexpected argument 'stray' (put the command after --)"},
        {"--json r.json", "no command given (put it after --)"},
        {"--json r.json --", "no command given (put it after --)"},
    };
    tpt_opts o;
    char err[TPT_ERR_LEN];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(parse(&spec, bad[i].args, &o, err) == TP_EINVAL, "%s", bad[i].args);
        ck_assert_str_eq(err, bad[i].err);
    }
}
END_TEST

START_TEST(test_opts_positional_arguments)
{
    static const tpt_cmdspec args = {"show", "[options] RUN...", "show runs",
                                     TPT_O_JSON | TPT_O_ARGS, NULL};
    tpt_opts o;
    char err[TPT_ERR_LEN];
    ck_assert_int_eq(parse(&args, "--json j 3 4 -", &o, err), TP_OK);
    ck_assert_int_eq(o.nargs, 3);
    ck_assert_str_eq(o.args[0], "3");
    ck_assert_str_eq(o.args[2], "-"); /* "-" is an argument */
    ck_assert_int_eq(parse(&args, "3 --json j 4", &o, err), TP_EINVAL);
    ck_assert_str_eq(err, "put options before or after all arguments");
    ck_assert_int_eq(parse(&args, "3 -- a", &o, err), TP_EINVAL);
    ck_assert_str_eq(err, "'show' takes no command after --");
}
END_TEST

START_TEST(test_opts_usage_lists_accepted_options_only)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_ptr_nonnull(f);
    tpt_opts_usage(&spec, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "usage: trainparity-run resume [options] -- CMD...\n\n"
                                      "resume parity\n\noptions:\n"));
    ck_assert_ptr_nonnull(strstr(buf, "  --rtol X "));
    ck_assert_ptr_nonnull(strstr(buf, "  --at K               interrupt after step K\n"));
    ck_assert_ptr_nonnull(strstr(buf, "  --dry-run            say, do not do\n"));
    ck_assert_ptr_nonnull(strstr(buf, "  --help               show this help\n"));
    ck_assert_ptr_null(strstr(buf, "--name"));
    ck_assert_ptr_null(strstr(buf, "--junit"));
    free(buf);
}
END_TEST

/* ---- the --lr-expect file ---- */

/* lr_file writes text to dir/name and returns its path (in out). */
static const char *lr_file(char *out, size_t n, const char *dir, const char *text)
{
    FILE *f = fopen(td_path(out, n, dir, "s.lrs"), "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return out;
}

START_TEST(test_lrfile_reads_sorted_steps)
{
    char dir[256], path[512];
    tpt_lr_table t = {0};
    json_t *j;
    td_make(dir, sizeof dir);
    lr_file(path, sizeof path, dir,
            "# step lr...\n\n5 0.01 0.02  # two groups\n0 0.1\r\n2\t1e-2\n");
    ck_assert_int_eq(tpt_lr_read(path, &t), 0);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(t.v[0].step, 0);
    ck_assert_int_eq(t.v[0].line, 4);
    ck_assert_int_eq(t.v[2].step, 5);
    ck_assert_uint_eq(t.v[2].nlrs, 2);
    ck_assert(t.v[2].lrs[1] == 0.02);
    ck_assert_ptr_nonnull(j = tpt_lr_json(&t));
    ck_assert_uint_eq(json_array_size(j), 3);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(j, 2), 0)), 5);
    ck_assert(json_real_value(json_array_get(json_array_get(json_array_get(j, 2), 1), 1)) == 0.02);
    ck_assert(json_real_value(json_array_get(json_array_get(json_array_get(j, 0), 1), 0)) == 0.1);
    json_decref(j);
    tpt_lr_free(&t);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_ptr_null(t.v);
    td_remove(dir);
}
END_TEST

/* lr_read_err runs tpt_lr_read on path and returns what it said on stderr
 * (in out, n bytes). */
static int lr_read_err(const char *path, tpt_lr_table *t, char *out, size_t n)
{
    FILE *f = tmpfile();
    int saved = dup(STDERR_FILENO), rc;
    size_t k;
    ck_assert(f != NULL && saved >= 0);
    fflush(stderr);
    ck_assert_int_ge(dup2(fileno(f), STDERR_FILENO), 0);
    rc = tpt_lr_read(path, t);
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    rewind(f);
    k = fread(out, 1, n - 1, f);
    out[k] = '\0';
    fclose(f);
    return rc;
}

START_TEST(test_lrfile_refuses_bad_files)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"1 0.1\n-1 0.1\n", "s.lrs:2: '-1' is not a step (a whole number >= 0)\n"},
        {"1.5 0.1\n", "s.lrs:1: '1.5' is not a step"},
        {"1 0.1x\n", "s.lrs:1: '0.1x' is not a learning rate (a finite number)\n"},
        {"1 inf\n", "s.lrs:1: 'inf' is not a learning rate"},
        {"\n3 # lr?\n", "s.lrs:2: step 3 has no learning rate"},
        {"1 0.1\n2 0.1\n1 0.2\n", "s.lrs:3: step 1 is declared twice (first at line 1)\n"},
        {"# nothing\n\n", "s.lrs declares no step (lines 'STEP LR [LR...]')\n"},
    };
    char dir[256], path[512], said[1024];
    td_make(dir, sizeof dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tpt_lr_table t = {0};
        lr_file(path, sizeof path, dir, bad[i].text);
        ck_assert_msg(lr_read_err(path, &t, said, sizeof said) == -1, "%s", bad[i].text);
        ck_assert_msg(strstr(said, bad[i].says) != NULL, "'%s' said: %s", bad[i].text, said);
        ck_assert_uint_eq(t.n, 0); /* nothing left to free */
        ck_assert_ptr_null(t.v);
    }
    {
        tpt_lr_table t = {0};
        td_path(path, sizeof path, dir, "absent");
        ck_assert_int_eq(lr_read_err(path, &t, said, sizeof said), -1);
        ck_assert_ptr_nonnull(strstr(said, "trainparity-run: health: --lr-expect: cannot read "));
        ck_assert_ptr_nonnull(strstr(said, "absent: No such file or directory\n"));
    }
    td_remove(dir);
}
END_TEST

/* ---- report values ---- */

static const char *put_val(tpt_line *l, const char *json)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull(v);
    l->n = 0;
    l->s[0] = '\0';
    tpt_put_val(l, v);
    json_decref(v);
    return l->s;
}

START_TEST(test_reportval_values_in_words)
{
    tpt_line l = {.n = 0};
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"tensor\", \"dtype\": \"torch.float32\", \"shape\": "
                                 "[2, 3], \"sum\": 1.5, \"l2\": 2, \"nonfinite\": null, "
                                 "\"digest\": \"ab12\"}"),
                     "tensor torch.float32 [2, 3] sum 1.5 l2 2 digest ab12");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"tensor\", \"dtype\": \"bf16\", \"shape\": [], "
                                 "\"digest\": \"00\", \"digest_kind\": \"dev1\"}"),
                     "tensor bf16 [] digest 00 of kind dev1");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"digest\", \"digest\": \"ff\", \"items\": 3}"),
                     "digest ff items 3");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"ids\", \"count\": 2, \"first\": [4, 5]}"),
                     "sample ids: count 2 first [4,5]");
    /* a string value is quoted, so that "1" and 1 differ */
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"value\", \"value\": \"1\"}"), "\"1\"");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"value\", \"value\": 1}"), "1");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"value\", \"value\": 0.1}"), "0.1");
    ck_assert_str_eq(put_val(&l, "null"), "absent");
    ck_assert_str_eq(put_val(&l, "{\"kind\": \"new\", \"x\": true}"),
                     "{\"kind\":\"new\",\"x\":true}");
    ck_assert(tpt_is_val(json_null()));
    {
        json_t *v = json_pack("{s:s}", "kind", "tensor"), *w = json_pack("{s:i}", "kind", 1);
        ck_assert(tpt_is_val(v));
        ck_assert(!tpt_is_val(w));
        ck_assert_str_eq(tpt_jstr(v, "kind"), "tensor");
        ck_assert_ptr_null(tpt_jstr(w, "kind"));
        json_decref(v);
        json_decref(w);
    }
}
END_TEST

START_TEST(test_reportval_line_is_cut_not_overrun)
{
    tpt_line l = {.n = 0};
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tpt_lprintf(&l, "%s", big);
    ck_assert_uint_eq(l.n, sizeof l.s - 1);
    ck_assert_uint_eq(strlen(l.s), sizeof l.s - 1);
    tpt_lprintf(&l, "more"); /* full: nothing more */
    ck_assert_uint_eq(strlen(l.s), sizeof l.s - 1);
    ck_assert_str_eq(tpt_role_what("R"), "resumed from I's checkpoint");
    ck_assert_str_eq(tpt_role_what("health"), "the training");
    ck_assert_ptr_null(tpt_role_what("Z"));
    ck_assert_ptr_null(tpt_role_what(NULL));
}
END_TEST

/* ---- JUnit ---- */

/* junit writes the JUnit report of outcome oc (text, JSON report json) to
 * a file and parses it back; NULL when it is not well-formed XML. */
static xmlDocPtr junit(const char *oc, const char *text, const char *json)
{
    char dir[256], path[512];
    char *cmd[] = {"python", "train.py", "--tag=<a&b>", NULL};
    tpt_opts o;
    tpt_verdict_info v;
    xmlDocPtr d;
    memset(&o, 0, sizeof o);
    memset(&v, 0, sizeof v);
    o.cmd = cmd;
    o.ncmd = 3;
    v.outcome = (char *)oc;
    v.text = (char *)text;
    v.json = (char *)json;
    td_make(dir, sizeof dir);
    td_path(path, sizeof path, dir, "r.xml");
    ck_assert_int_eq(tpt_junit_write(path, &o, 12, &v), 0);
    d = xmlReadFile(path, NULL, XML_PARSE_NONET);
    td_remove(dir);
    return d;
}

/* child: n's first element child named name, or NULL. */
static xmlNodePtr child(xmlNodePtr n, const char *name)
{
    for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && !xmlStrcmp(c->name, BAD_CAST name)) return c;
    return NULL;
}

static void ck_prop(xmlNodePtr n, const char *name, const char *want)
{
    xmlChar *p = xmlGetProp(n, BAD_CAST name);
    ck_assert_msg(p != NULL, "no %s", name);
    ck_assert_str_eq((const char *)p, want);
    xmlFree(p);
}

static void ck_content(xmlNodePtr n, const char *want)
{
    xmlChar *p = xmlNodeGetContent(n);
    ck_assert_str_eq((const char *)p, want);
    xmlFree(p);
}

START_TEST(test_junit_fail_is_a_failure_at_the_first_divergence)
{
    const char *json = "{\"check\": \"health\", \"outcome\": \"FAIL\", \"reason\": \"r\", "
                       "\"first_divergence\": {\"step\": 2, \"path\": \"loss\", \"observed\": "
                       "\"nan <&> \\\"q\\\"\"}, \"evidence\": {\"wall_time\": {\"check_s\": "
                       "1.25}}}";
    xmlDocPtr d = junit("FAIL", "health: FAIL\n  a < b & c\n", json);
    xmlNodePtr suites, suite, tc, f;
    ck_assert_ptr_nonnull(d);
    suites = xmlDocGetRootElement(d);
    ck_assert_str_eq((const char *)suites->name, "testsuites");
    ck_prop(suites, "failures", "1");
    ck_prop(suites, "errors", "0");
    ck_prop(suites, "time", "1.250");
    suite = child(suites, "testsuite");
    ck_prop(suite, "name", "trainparity health run 12");
    tc = child(suite, "testcase");
    ck_prop(tc, "classname", "trainparity.health");
    ck_prop(tc, "name", "python train.py '--tag=<a&b>'");
    f = child(tc, "failure");
    ck_assert_ptr_nonnull(f);
    ck_prop(f, "type", "FAIL");
    ck_prop(f, "message", "first divergence: loss at step 2: nan <&> \"q\"");
    ck_content(f, "health: FAIL\n  a < b & c\n");
    ck_assert_ptr_null(child(tc, "system-out"));
    xmlFreeDoc(d);
}
END_TEST

START_TEST(test_junit_pass_error_abstain)
{
    xmlDocPtr d = junit("PASS", "health: PASS\n", "{\"check\": \"health\"}");
    xmlNodePtr tc;
    ck_assert_ptr_nonnull(d);
    ck_prop(xmlDocGetRootElement(d), "failures", "0");
    ck_prop(xmlDocGetRootElement(d), "time", "0.000");
    tc = child(child(xmlDocGetRootElement(d), "testsuite"), "testcase");
    ck_assert_ptr_null(child(tc, "failure"));
    ck_content(child(tc, "system-out"), "health: PASS\n");
    xmlFreeDoc(d);

    /* ERROR: the reason's first line, trimmed */
    d = junit("ERROR", "health: ERROR\n  x\n",
              "{\"check\": \"resume\", \"reason\": \"  R crashed\\nmore\"}");
    ck_assert_ptr_nonnull(d);
    ck_prop(xmlDocGetRootElement(d), "errors", "1");
    tc = child(child(xmlDocGetRootElement(d), "testsuite"), "testcase");
    ck_prop(tc, "classname", "trainparity.resume");
    ck_prop(child(tc, "error"), "message", "R crashed");
    ck_prop(child(tc, "error"), "type", "ERROR");
    ck_assert_ptr_null(child(tc, "system-out"));
    xmlFreeDoc(d);

    /* ABSTAIN: skipped, no type; no report: the text's line after the header */
    d = junit("ABSTAIN", "resume: ABSTAIN\n  the run never saved\n", NULL);
    ck_assert_ptr_nonnull(d);
    ck_prop(xmlDocGetRootElement(d), "skipped", "1");
    tc = child(child(xmlDocGetRootElement(d), "testsuite"), "testcase");
    ck_prop(tc, "classname", "trainparity.check");
    ck_prop(child(tc, "skipped"), "message", "the run never saved");
    ck_assert_ptr_null(xmlGetProp(child(tc, "skipped"), BAD_CAST "type"));
    ck_assert_ptr_nonnull(child(tc, "system-out"));
    xmlFreeDoc(d);
}
END_TEST

/* ---- plots ---- */

/* chart draws s into a fresh document and returns it serialised (malloc'ed). */
static char *chart(const tpt_plot_series *s, int ns, const tpt_plot_mark *mark)
{
    tpt_htmldoc d = {xmlNewDoc(BAD_CAST "1.0"), false};
    xmlNodePtr root = xmlNewDocNode(d.doc, NULL, BAD_CAST "body", NULL);
    xmlBufferPtr b = xmlBufferCreate();
    char *out;
    xmlDocSetRootElement(d.doc, root);
    ck_assert_ptr_nonnull(tpt_plot_chart(&d, root, "loss", "plot-loss", s, ns, mark, false));
    ck_assert(!d.bad);
    xmlNodeDump(b, d.doc, root, 0, 0);
    out = strdup((const char *)xmlBufferContent(b));
    xmlBufferFree(b);
    xmlFreeDoc(d.doc);
    return out;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p++) n++;
    return n;
}

START_TEST(test_plot_breaks_lines_where_values_are_left_out)
{
    double x[5] = {0, 1, 2, 3, 4}, y[5] = {1, 0.5, NAN, 0.3, 0.2}, z[5] = {1, 0.6, 0.4, 0.3, 0.2};
    tpt_plot_series s[2] = {{"A", 1, tpt_plot_color(0), 5, x, y},
                            {"B", 2, tpt_plot_color(1), 5, x, z}};
    tpt_plot_mark m = {3, "first divergence"};
    char *a = chart(s, 2, &m), *b = chart(s, 2, &m);
    ck_assert_str_eq(a, b);                     /* the same points, the same bytes */
    ck_assert_int_eq(count(a, "<polyline"), 3); /* A broken in two, B whole */
    ck_assert_int_eq(count(a, "<circle"), 9);
    ck_assert_ptr_nonnull(strstr(a, "data-role=\"A\""));
    ck_assert_ptr_nonnull(strstr(a, "A (execution 1)"));
    ck_assert_ptr_nonnull(strstr(a, "class=\"divergence-marker\""));
    ck_assert_ptr_nonnull(strstr(a, "first divergence"));
    ck_assert_ptr_nonnull(
        strstr(a, "1 non-finite value (nan, inf) left out: the line breaks where they were."));
    free(a);
    free(b);
    ck_assert_str_eq(tpt_plot_color(TPT_PLOT_COLORS), tpt_plot_color(0));
}
END_TEST

START_TEST(test_plot_nothing_to_plot)
{
    double x[2] = {0, 1}, y[2] = {NAN, NAN};
    tpt_plot_series s = {"A", 1, "#000", 2, x, y};
    char *a = chart(&s, 1, NULL);
    ck_assert_ptr_nonnull(strstr(a, "No loss to plot (2 non-finite values left out)."));
    ck_assert_ptr_null(strstr(a, "<svg"));
    free(a);
    s.n = 0;
    a = chart(&s, 1, NULL);
    ck_assert_ptr_nonnull(strstr(a, "No loss to plot."));
    free(a);
}
END_TEST

/* ---- the environment of a command ---- */

/* sh_status runs "sh -c script" with env (tpt_launch) and returns its exit
 * status. */
static int sh_status(const char *script, char *const env[])
{
    char *argv[] = {"sh", "-c", (char *)script, NULL}, err[TPT_ERR_LEN];
    tpt_exit e;
    ck_assert_int_eq(tpt_launch(argv, env, NULL, &e, NULL, err), TP_OK);
    return e.status;
}

START_TEST(test_launch_env_sets_replaces_and_removes)
{
    char *set[] = {"TP_T_GONE", "TP_T_NEW=2", "TP_T_KEPT=3", NULL};
    char *name_then_value[] = {"TP_T_GONE", "TP_T_GONE=4", NULL};
    char *value_then_name[] = {"TP_T_KEPT=5", "TP_T_KEPT", NULL};
    setenv("TP_T_GONE", "1", 1);
    setenv("TP_T_KEPT", "1", 1);
    ck_assert_int_eq(sh_status("[ -z \"${TP_T_GONE+x}\" ] && [ \"$TP_T_NEW\" = 2 ] && "
                               "[ \"$TP_T_KEPT\" = 3 ]",
                               set),
                     0);
    /* of two entries for one key the later wins, a removal too */
    ck_assert_int_eq(sh_status("[ \"$TP_T_GONE\" = 4 ] && [ \"$TP_T_KEPT\" = 1 ]", name_then_value),
                     0);
    ck_assert_int_eq(
        sh_status("[ -z \"${TP_T_KEPT+x}\" ] && [ \"$TP_T_GONE\" = 1 ]", value_then_name), 0);
    /* this process's own environment is untouched */
    ck_assert_str_eq(getenv("TP_T_GONE"), "1");
    unsetenv("TP_T_GONE");
    unsetenv("TP_T_KEPT");
}
END_TEST

/* SIGUSR1 to trainparity-run is the command's business; SIGTERM from
 * anyone (here a process the command started) is forwarded and asks the
 * check to stop.  No other test here is stopped. */
START_TEST(test_launch_stop_signals)
{
    char *usr1[] = {"sh", "-c", "kill -USR1 $PPID; exit 3", NULL};
    char *term[] = {"sh", "-c", "sh -c 'kill -TERM \"$1\"' sh $PPID; sleep 1; exec sleep 60", NULL};
    char err[TPT_ERR_LEN];
    tpt_exit e;
    ck_assert_int_eq(tpt_launch_stopped(), 0);
    ck_assert_int_eq(tpt_launch(usr1, NULL, NULL, &e, NULL, err), TP_OK);
    ck_assert_int_eq(e.status, 3);
    ck_assert_int_eq(tpt_launch_stopped(), 0);
    ck_assert_int_eq(tpt_launch(term, NULL, NULL, &e, NULL, err), TP_OK);
    ck_assert_int_eq(e.signal, SIGTERM); /* forwarded: it never reached the sleep */
    ck_assert_int_eq(tpt_launch_stopped(), SIGTERM);
    ck_assert_str_eq(tpt_signal_name(SIGTERM), "SIGTERM");
}
END_TEST

/* Every check variable left in the caller's environment is gone from an
 * execution's, unless the check sets it; the user's knobs stay. */
START_TEST(test_agent_env_drops_inherited_check_variables)
{
    static const char *const left[] = {TP_ENV_CHECK_VARS};
    char *set[] = {TP_ENV_DIGEST "=induction", NULL}, script[2048];
    tpt_agent_vars a = {"/lib/agent.so", "ipc:///x", "ipc:///y", "", "/spool", 3, 4, "k", "A", set};
    size_t i, n = 0, len = 0;
    char **env;
    for (i = 0; i < sizeof left / sizeof left[0]; i++) {
        setenv(left[i], "1", 1);
        if (strcmp(left[i], TP_ENV_DIGEST) != 0)
            len += (size_t)snprintf(script + len, sizeof script - len, "[ -z \"${%s+x}\" ] && ",
                                    left[i]);
    }
    ck_assert_uint_ge(i, 10);
    setenv("TRAINPARITY_HASH_THREADS", "1", 1);
    snprintf(script + len, sizeof script - len,
             "[ \"$" TP_ENV_DIGEST "\" = induction ] && [ \"$TRAINPARITY_HASH_THREADS\" = 1 ] && "
             "[ \"$" TP_ENV_EXEC "\" = 4 ] && [ \"$" TP_ENV_ROLE "\" = A ]");
    ck_assert_ptr_nonnull(env = tpt_agent_env(&a, &n));
    ck_assert_int_eq(sh_status(script, env), 0);
    tpt_agent_env_free(env, n);
    for (i = 0; i < sizeof left / sizeof left[0]; i++) unsetenv(left[i]);
    unsetenv("TRAINPARITY_HASH_THREADS");
}
END_TEST

/* ---- paths and tree ---- */

START_TEST(test_private_dir)
{
    char dir[256], p[512], q[512], err[TPT_ERR_LEN];
    struct stat st;
    FILE *f;
    td_make(dir, sizeof dir);
    /* created 0700; an existing one made 0700 */
    ck_assert_int_eq(tpt_private_dir(td_path(p, sizeof p, dir, "s"), err), TP_OK);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    ck_assert_int_eq(chmod(p, 0755), 0);
    ck_assert_int_eq(tpt_private_dir(p, err), TP_OK);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    /* a symbolic link to a directory, or a file, is refused */
    ck_assert_int_eq(symlink(p, td_path(q, sizeof q, dir, "link")), 0);
    ck_assert_int_eq(tpt_private_dir(q, err), TP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "exists and is not a directory"));
    ck_assert_ptr_nonnull(f = fopen(td_path(q, sizeof q, dir, "file"), "w"));
    fclose(f);
    ck_assert_int_eq(tpt_private_dir(q, err), TP_EINVAL);
    ck_assert_int_eq(tpt_private_dir(td_path(q, sizeof q, dir, "no/such"), err), TP_EIO);
    ck_assert_ptr_nonnull(strstr(err, "cannot create"));
    td_remove(dir);
}
END_TEST

static int collect(const char *path, const struct stat *st, void *arg)
{
    (void)st;
    strcat(arg, path);
    strcat(arg, ";");
    return 0;
}

START_TEST(test_tree_walk_and_snapshot)
{
    char dir[256], old[4096], seen[4096] = "", abs[600];
    tpt_snapshot s;
    struct stat st;
    bool truncated = true;
    FILE *f;
    td_make(dir, sizeof dir);
    ck_assert_ptr_nonnull(getcwd(old, sizeof old));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_ptr_nonnull(getcwd(dir, sizeof dir)); /* as the walk sees it: no symbolic link */
    ck_assert_int_eq(mkdir("sub", 0700), 0);
    ck_assert_int_eq(mkdir(".hidden", 0700), 0);
    ck_assert_int_eq(mkdir("__pycache__", 0700), 0);
    ck_assert_ptr_nonnull(f = fopen("sub/old.pt", "w"));
    fclose(f);
    ck_assert_ptr_nonnull(f = fopen(".hidden/x", "w"));
    fclose(f);
    ck_assert_ptr_nonnull(f = fopen("__pycache__/y", "w"));
    fclose(f);
    ck_assert_int_eq(symlink("sub/old.pt", "link.pt"), 0);
    /* the walk: regular files only, the skipped folders left out */
    ck_assert_int_eq(tpt_tree_walk(collect, seen, &truncated), 0);
    ck_assert_str_eq(seen, "./sub/old.pt;");
    ck_assert(!truncated);
    ck_assert_int_eq(tpt_snapshot_take(&s, NULL), TP_OK);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_ptr_nonnull(f = fopen("sub/new.pt", "w"));
    fclose(f);
    /* the file there before is had; one made after is not */
    snprintf(abs, sizeof abs, "%s/sub/old.pt", dir);
    ck_assert_int_eq(lstat(abs, &st), 0);
    ck_assert(tpt_snapshot_had(&s, abs, &st));
    snprintf(abs, sizeof abs, "%s/sub/new.pt", dir);
    ck_assert_int_eq(lstat(abs, &st), 0);
    ck_assert(!tpt_snapshot_had(&s, abs, &st));
    tpt_snapshot_free(&s);
    tpt_snapshot_free(NULL);
    ck_assert_int_eq(chdir(old), 0);
    td_remove(dir);
}
END_TEST

/* A request is the map its arguments count up (client.h): the command, then
 * each argument under its declared key (proto/control.def), nil for a
 * NULL string; more than a fixmap holds is refused, not written wrong. */
START_TEST(test_request_counts_its_arguments)
{
    tp_buf b;
    tp_mpr r;
    uint32_t n;
    const char *s;
    uint32_t len;
    int64_t v;
    char *argv[] = {"python", "train.py"};
    tp_buf_init(&b);
    tpt_req_begin(&b, TPC_exec_create);
    tpt_arg_int(&b, TPA_exec_create_run, 7);
    tpt_arg_str(&b, TPA_exec_create_role, NULL);
    tpt_arg_strs(&b, TPA_exec_create_argv, argv, 2);
    ck_assert(!b.oom);
    tp_mpr_init(&r, b.data, b.len);
    ck_assert_int_eq(tp_mpr_map(&r, &n), TP_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(tp_mp_map_str(b.data, b.len, TP_CTL_CMD, &s, &len), TP_OK);
    ck_assert(tp_mp_str_eq(s, len, "exec.create"));
    ck_assert_int_eq(tp_mp_map_int(b.data, b.len, "run", &v), TP_OK);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(tp_mp_map_str(b.data, b.len, "role", &s, &len), TP_ENOENT); /* nil */
    ck_assert_int_eq(tp_mp_map_find(b.data, b.len, "argv", &r), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&r, &n), TP_OK);
    ck_assert_uint_eq(n, 2);
    tpt_req_evidence(&b, "coverage");
    ck_assert_int_eq(tp_mp_map_str(b.data, b.len, TP_CTL_CMD, &s, &len), TP_OK);
    ck_assert(tp_mp_str_eq(s, len, "coverage.evidence"));
    for (int i = 0; i < 14; i++) tpt_arg_int(&b, TPA_evidence_run, i);
    ck_assert(!b.oom);
    tpt_arg_int(&b, TPA_evidence_run, 14); /* a 16th pair */
    ck_assert(b.oom);
    tp_buf_free(&b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tools");
    TCase *t = tcase_create("tools");
    tcase_add_test(t, test_words_split_like_a_shell);
    tcase_add_test(t, test_words_unterminated_quote_is_einval);
    tcase_add_test(t, test_argv_join_quotes_what_words_reads_back);
    tcase_add_test(t, test_outcome_status);
    tcase_add_test(t, test_opts_parse_values_flags_and_command);
    tcase_add_test(t, test_opts_parse_errors_say_what);
    tcase_add_test(t, test_opts_positional_arguments);
    tcase_add_test(t, test_opts_usage_lists_accepted_options_only);
    tcase_add_test(t, test_lrfile_reads_sorted_steps);
    tcase_add_test(t, test_lrfile_refuses_bad_files);
    tcase_add_test(t, test_reportval_values_in_words);
    tcase_add_test(t, test_reportval_line_is_cut_not_overrun);
    tcase_add_test(t, test_junit_fail_is_a_failure_at_the_first_divergence);
    tcase_add_test(t, test_junit_pass_error_abstain);
    tcase_add_test(t, test_plot_breaks_lines_where_values_are_left_out);
    tcase_add_test(t, test_plot_nothing_to_plot);
    tcase_add_test(t, test_launch_env_sets_replaces_and_removes);
    tcase_add_test(t, test_launch_stop_signals);
    tcase_add_test(t, test_agent_env_drops_inherited_check_variables);
    tcase_add_test(t, test_private_dir);
    tcase_add_test(t, test_tree_walk_and_snapshot);
    tcase_add_test(t, test_request_counts_its_arguments);
    suite_add_tcase(s, t);
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
