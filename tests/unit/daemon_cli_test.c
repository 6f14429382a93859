/* SPDX-License-Identifier: MIT
 * daemon_cli_test.c -- the trainparity-daemon program as a user meets it: exit
 * statuses (0, 1, 64; judge's 3), help, the corrupt-database message with the
 * file left alone, offline ingest then query and judge, serve stopped by SIGTERM and by the
 * shutdown command, and run.create refusing params that are not a JSON
 * object.  TPD_BIN is the built program (set by CMake). */
#define _DEFAULT_SOURCE
#include <check.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/batches.h"
#include "tests/unit/testdir.h"
#include "tp_version.h"

static char dir[512], db[600], out_path[600], err_path[600];
static char out[65536], err[65536];

static void setup(void)
{
    td_make(dir, sizeof dir);
    td_path(db, sizeof db, dir, "runs.db");
    td_path(out_path, sizeof out_path, dir, "stdout");
    td_path(err_path, sizeof err_path, dir, "stderr");
}

static void teardown(void)
{
    td_remove(dir);
}

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    buf[got] = '\0';
    if (f) fclose(f);
}

/* spawn starts TPD_BIN with args (NULL-terminated), output to files. */
static pid_t spawn(const char *const *args)
{
    const char *argv[32];
    int n = 0;
    pid_t pid;
    argv[n++] = TPD_BIN;
    while (*args && n < 31) argv[n++] = *args++;
    argv[n] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        if (chdir(dir) != 0) _exit(127);
        execv(TPD_BIN, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    slurp(out_path, out, sizeof out);
    slurp(err_path, err, sizeof err);
    ck_assert_msg(WIFEXITED(st), "killed by signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* run runs the program to its end and returns its exit status. */
#define RUN(...) wait_exit(spawn((const char *const[]){__VA_ARGS__, NULL}))

START_TEST(test_cli_usage_and_help)
{
    ck_assert_int_eq(wait_exit(spawn((const char *const[]){NULL})), 64);
    ck_assert(strstr(err, "usage:"));
    ck_assert_int_eq(RUN("--help"), 0);
    ck_assert(strstr(out, "serve") && strstr(out, "query") && strstr(out, "ingest"));
    ck_assert_int_eq(RUN("--version"), 0);
    ck_assert(strstr(out, TP_VERSION));
    ck_assert_int_eq(RUN("serve", "--help"), 0);
    ck_assert(strstr(out, "--listen"));
    ck_assert_int_eq(RUN("query", "--help"), 0);
    ck_assert_int_eq(RUN("ingest", "--help"), 0);
    ck_assert_int_eq(RUN("bogus"), 64);
    ck_assert(strstr(err, "unknown command 'bogus'"));
    ck_assert_int_eq(RUN("--bogus"), 64);
    ck_assert_int_eq(RUN("query", "--bogus", "runs"), 64);
    ck_assert(strstr(err, "unknown option '--bogus'"));
    ck_assert_int_eq(RUN("query", "--db"), 64);
    ck_assert(strstr(err, "needs an argument"));
    ck_assert_int_eq(RUN("query"), 64);
    ck_assert_int_eq(RUN("query", "run"), 64);
    ck_assert_int_eq(RUN("query", "run", "x1"), 64);
    ck_assert_int_eq(RUN("query", "steps", "1", "2"), 64);
    ck_assert_int_eq(RUN("query", "colors"), 64);
    ck_assert_int_eq(RUN("ingest"), 64);
    ck_assert_int_eq(RUN("serve", "extra"), 64);
    ck_assert_int_eq(RUN("judge", "--help"), 0);
    ck_assert(strstr(out, "stores\nnothing") || strstr(out, "stores nothing"));
    ck_assert_int_eq(RUN("judge"), 64);
    ck_assert(strstr(err, "which run?"));
    ck_assert_int_eq(RUN("judge", "x1"), 64);
    ck_assert(strstr(err, "'x1' is not a run ID"));
    ck_assert_int_eq(RUN("judge", "1", "2"), 64);
    ck_assert_int_eq(RUN("judge", "--bogus", "1"), 64);
}
END_TEST

START_TEST(test_cli_corrupt_database_untouched)
{
    unsigned char junk[4096], again[4096];
    unsigned seed = 7;
    FILE *f = fopen(db, "wb");
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand_r(&seed);
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);
    ck_assert_int_eq(RUN("query", "--db", "runs.db", "runs"), 1);
    ck_assert_str_eq(err, "runs.db: not a TrainParity database (file is not a database)\n");
    ck_assert_int_eq(RUN("serve", "--db", "runs.db"), 1);
    ck_assert(strstr(err, "not a TrainParity database"));
    ck_assert_int_eq(RUN("ingest", "--db", "runs.db", "nothing.spool"), 1);
    ck_assert_int_eq(RUN("judge", "--db", "runs.db", "1"), 3); /* judge: ERROR, no verdict */
    ck_assert(strstr(err, "not a TrainParity database"));
    f = fopen(db, "rb");
    ck_assert_int_eq(fread(again, 1, sizeof again, f), sizeof again);
    fclose(f);
    ck_assert(memcmp(junk, again, sizeof junk) == 0);
    ck_assert_int_eq(RUN("query", "--db", "missing.db", "runs"), 1);
    ck_assert_int_ne(access("missing.db", F_OK), 0);
}
END_TEST

/* control sends one request and returns the reply's "ok". */
static bool control(nng_socket s, const char *cmd)
{
    tp_buf b;
    void *rep = NULL;
    size_t len = 0;
    tp_mpr r;
    uint32_t n;
    bool ok = false;
    tp_buf_init(&b);
    tp_mp_map(&b, 1);
    tp_mp_cstr(&b, "cmd");
    tp_mp_cstr(&b, cmd);
    ck_assert_int_eq(nng_send(s, b.data, b.len, 0), 0);
    ck_assert_int_eq(nng_recv(s, &rep, &len, NNG_FLAG_ALLOC), 0);
    tp_mpr_init(&r, rep, len);
    ck_assert_int_eq(tp_mpr_map(&r, &n), TP_OK);
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t kl;
        ck_assert_int_eq(tp_mpr_str(&r, &k, &kl), TP_OK);
        if (tp_mp_str_eq(k, kl, "ok"))
            ck_assert_int_eq(tp_mpr_bool(&r, &ok), TP_OK);
        else
            ck_assert_int_eq(tp_mpr_skip(&r), TP_OK);
    }
    nng_free(rep, len);
    tp_buf_free(&b);
    return ok;
}

/* wait_socket waits until path exists, at most 10 s. */
static void wait_socket(const char *path)
{
    for (int i = 0; i < 1000; i++) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISSOCK(sb.st_mode)) return;
        usleep(10000);
    }
    ck_abort_msg("no socket %s", path);
}

/* ask sends req and returns the reply's field key (a string or an int
 * printed) in val, or "" when absent. */
static void ask(nng_socket s, const tp_buf *req, const char *key, char *val, size_t n)
{
    void *rep = NULL;
    size_t len = 0;
    tp_mpr r;
    uint32_t m;
    val[0] = '\0';
    ck_assert_int_eq(nng_send(s, req->data, req->len, 0), 0);
    ck_assert_int_eq(nng_recv(s, &rep, &len, NNG_FLAG_ALLOC), 0);
    tp_mpr_init(&r, rep, len);
    ck_assert_int_eq(tp_mpr_map(&r, &m), TP_OK);
    for (uint32_t i = 0; i < m; i++) {
        const char *k, *v;
        uint32_t kl, vl;
        int64_t x;
        tp_mptype t;
        ck_assert_int_eq(tp_mpr_str(&r, &k, &kl), TP_OK);
        ck_assert_int_eq(tp_mpr_peek(&r, &t), TP_OK);
        if (tp_mp_str_eq(k, kl, key) && t == TP_MP_STR) {
            ck_assert_int_eq(tp_mpr_str(&r, &v, &vl), TP_OK);
            snprintf(val, n, "%.*s", (int)vl, v);
        } else if (tp_mp_str_eq(k, kl, key) && t == TP_MP_INT) {
            ck_assert_int_eq(tp_mpr_int(&r, &x), TP_OK);
            snprintf(val, n, "%lld", (long long)x);
        } else {
            ck_assert_int_eq(tp_mpr_skip(&r), TP_OK);
        }
    }
    nng_free(rep, len);
}

/* dial_control connects a req socket to the default serve's control URL. */
static nng_socket dial_control(void)
{
    char ctl[700], url[800], state[700];
    nng_socket req;
    td_path(state, sizeof state, dir, ".trainparity");
    td_path(ctl, sizeof ctl, state, "ingest.ipc.ctl");
    wait_socket(ctl);
    snprintf(url, sizeof url, "ipc://%s", ctl);
    ck_assert_int_eq(nng_req0_open(&req), 0);
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
    ck_assert_int_eq(nng_dial(req, url, NULL, 0), 0);
    return req;
}

/* spool_file writes one batch of (run, exec, key) from pid 4242 to path. */
static void spool_file(const char *path, int64_t run, int64_t exec, const char *key, bool torn)
{
    tb t;
    FILE *f;
    uint64_t q = 0;
    tb_begin_key(&t, run, exec, 4242, 0, NULL, key);
    tb_hello(&t, q++, 0);
    tb_backward(&t, q++, 0, 0.75, 1);
    tb_step(&t, q++, 0, true, 2, 3.0, 0.5);
    tb_step(&t, q++, 0, false, 0, 0.125, 0.5);
    tb_bye(&t, q, q + 1, 0);
    tb_end(&t);
    f = fopen(path, "wb");
    fwrite((unsigned char[]){0, 0, (unsigned char)(t.buf.len >> 8), (unsigned char)t.buf.len}, 1, 4,
           f);
    fwrite(t.buf.data, 1, t.buf.len, f);
    if (torn) fwrite("\x00\x00\x10", 1, 3, f);
    fclose(f);
    tb_free(&t);
}

START_TEST(test_cli_ingest_then_query)
{
    /* offline ingest stores the batches of an execution the daemon made,
     * with its key, and nothing else; a frame it did not store (refused or
     * torn) makes it exit 1 */
    char spool[700], key[64], num[32];
    int64_t run, exec;
    nng_socket req;
    tp_buf b;
    pid_t pid = spawn((const char *const[]){"serve", NULL});
    req = dial_control();
    tp_buf_init(&b);
    tp_mp_map(&b, 2), tp_mp_cstr(&b, "cmd"), tp_mp_cstr(&b, "run.create");
    tp_mp_cstr(&b, "check"), tp_mp_cstr(&b, "record");
    ask(req, &b, "run", num, sizeof num);
    run = atoll(num);
    tp_buf_reset(&b);
    tp_mp_map(&b, 2), tp_mp_cstr(&b, "cmd"), tp_mp_cstr(&b, "exec.create");
    tp_mp_cstr(&b, "run"), tp_mp_int(&b, run);
    ask(req, &b, "exec", num, sizeof num);
    exec = atoll(num) + 1;
    ask(req, &b, "key", key, sizeof key); /* the key of a second execution, exec */
    ck_assert(control(req, "shutdown"));
    nng_close(req);
    tp_buf_free(&b);
    ck_assert_int_eq(wait_exit(pid), 0);

    td_path(spool, sizeof spool, dir, "4242.spool");
    spool_file(spool, run, exec, NULL, true); /* no key */
    ck_assert_int_eq(RUN("ingest", "4242.spool"), 1);
    ck_assert_msg(strstr(out, "4242.spool: 0 events stored, 0 duplicates, 1 frames, 1 bad, torn"),
                  "%s", out);
    ck_assert_msg(strstr(err, "without its execution's key"), "%s", err);
    spool_file(spool, run, exec - 1, key, true); /* the other execution's key */
    ck_assert_int_eq(RUN("ingest", "4242.spool"), 1);
    ck_assert_msg(strstr(out, "0 events stored"), "%s", out);
    spool_file(spool, run, exec, key, true); /* stored, but for the torn frame */
    ck_assert_int_eq(RUN("ingest", "4242.spool"), 1);
    ck_assert_msg(strstr(out, "4242.spool: 5 events stored, 0 duplicates, 1 frames, 0 bad, torn"),
                  "%s", out);
    spool_file(spool, run, exec, key, false); /* whole: every frame stored (again) */
    ck_assert_int_eq(RUN("ingest", "4242.spool"), 0);
    ck_assert_msg(strstr(out, "4242.spool: 0 events stored, 5 duplicates, 1 frames, 0 bad\n"), "%s",
                  out);
    ck_assert_int_eq(RUN("query", "runs"), 0);
    ck_assert_msg(strstr(out, "record"), "%s", out);
    ck_assert_int_eq(RUN("query", "run", "99"), 1);
    ck_assert_str_eq(err, "trainparity-daemon: no run 99\n");
    /* judged again: no such run, and a record run (no check judges it),
     * are no verdict (3, as trainparity-run's ERROR), stdout empty */
    ck_assert_int_eq(RUN("judge", "99"), 3);
    ck_assert_str_eq(err, "trainparity-daemon: cannot judge run 99: there is no run 99\n");
    ck_assert_str_eq(out, "");
    snprintf(num, sizeof num, "%lld", (long long)run);
    ck_assert_int_eq(RUN("judge", num), 3);
    ck_assert_msg(strstr(err, "is a 'record' run: there is no verdict for it"), "%s", err);
    ck_assert_int_eq(RUN("ingest", "4242.spool", "absent.spool"), 1);
    ck_assert(strstr(out, "5 duplicates"));
    ck_assert(strstr(err, "absent.spool"));
}
END_TEST

START_TEST(test_cli_serve_signal_and_shutdown)
{
    char ctl[700], url[800], state[700];
    nng_socket req;
    struct stat sb;
    pid_t pid = spawn((const char *const[]){"serve", NULL});
    td_path(state, sizeof state, dir, ".trainparity");
    td_path(ctl, sizeof ctl, state, "ingest.ipc.ctl");
    wait_socket(ctl);
    ck_assert_int_eq(stat(state, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    kill(pid, SIGTERM);
    ck_assert_int_eq(wait_exit(pid), 0);
    ck_assert_msg(strstr(err, "serving db .trainparity/runs.db, ingest ipc://"), "%s", err);
    ck_assert_int_eq(RUN("query", "runs"), 0); /* the default database exists */

    pid = spawn((const char *const[]){"serve", NULL});
    wait_socket(ctl);
    snprintf(url, sizeof url, "ipc://%s", ctl);
    ck_assert_int_eq(nng_req0_open(&req), 0);
    nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
    ck_assert_int_eq(nng_dial(req, url, NULL, 0), 0);
    ck_assert(control(req, "ping"));
    ck_assert(control(req, "shutdown"));
    nng_close(req);
    ck_assert_int_eq(wait_exit(pid), 0);

    ck_assert_int_eq(RUN("serve", "--listen", "tcp://127.0.0.1:1"), 1);
    ck_assert_msg(strstr(err, "needs a token (--token-file F, or $TRAINPARITY_TOKEN)"), "%s", err);
}
END_TEST

START_TEST(test_cli_token_and_directories)
{
    /* --token shows in ps: a usage error that names the ways that do not; a
     * token file others can read is refused; the directory the database
     * goes in keeps its mode when it exists */
    char tok[700], state[700];
    struct stat sb;
    FILE *f;
    ck_assert_int_eq(RUN("serve", "--token", "s3cret"), 64);
    ck_assert_msg(strstr(err, "--token-file F") && strstr(err, "$TRAINPARITY_TOKEN"), "%s", err);
    td_path(tok, sizeof tok, dir, "tok");
    f = fopen(tok, "w");
    fputs("s3cret\n", f);
    fclose(f);
    chmod(tok, 0644);
    ck_assert_int_eq(RUN("serve", "--token-file", "tok", "--listen", "tcp://127.0.0.1:1"), 1);
    ck_assert_msg(strstr(err, "open to others"), "%s", err);
    ck_assert_int_eq(RUN("serve", "--token-file", "missing"), 1);
    ck_assert_msg(strstr(err, "cannot open the token file"), "%s", err);

    chmod(dir, 0755);
    td_path(state, sizeof state, dir, "sub");
    mkdir(state, 0750);
    {
        nng_socket req;
        char ctl[800], url[900];
        pid_t pid = spawn((const char *const[]){"serve", "--db", "sub/runs.db", NULL});
        td_path(ctl, sizeof ctl, state, "ingest.ipc.ctl");
        wait_socket(ctl);
        snprintf(url, sizeof url, "ipc://%s", ctl);
        ck_assert_int_eq(nng_req0_open(&req), 0);
        nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
        ck_assert_int_eq(nng_dial(req, url, NULL, 0), 0);
        ck_assert(control(req, "shutdown"));
        nng_close(req);
        ck_assert_int_eq(wait_exit(pid), 0);
    }
    ck_assert_int_eq(stat(state, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0750);
    ck_assert_int_eq(stat(dir, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0755);
    td_path(state, sizeof state, dir, "sub/runs.db");
    ck_assert_int_eq(stat(state, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
}
END_TEST

/* create_run sends run.create (check "record") with params as a string,
 * or without them when NULL, and returns the reply's key in val. */
static void create_run(nng_socket s, const char *params, const char *key, char *val, size_t n)
{
    tp_buf b;
    tp_buf_init(&b);
    tp_mp_map(&b, params ? 3 : 2), tp_mp_cstr(&b, "cmd"), tp_mp_cstr(&b, "run.create");
    tp_mp_cstr(&b, "check"), tp_mp_cstr(&b, "record");
    if (params) tp_mp_cstr(&b, "params"), tp_mp_cstr(&b, params);
    ask(s, &b, key, val, n);
    tp_buf_free(&b);
}

START_TEST(test_cli_run_params_must_be_object)
{
    /* the checks read a run's params as a JSON object of the keys
     * proto/params.def declares: run.create refuses anything else with a
     * reason, and stores no run for it */
    static const struct {
        const char *params, *why;
    } bad[] = {
        {"", "argument 'params': the params are not JSON"},
        {"capture=values", "the params are not JSON"},
        {"{\"capture\": \"values\"", "the params are not JSON"},
        {"{\"capture\": \"values\"} {}", "the params are not JSON"},
        {"{\"capture\": \"values\", \"capture\": \"digests\"}", "duplicate"},
        {"[\"capture\", \"values\"]", "argument 'params': the params are not a JSON object"},
        {"4", "the params are not a JSON object"},
        {"null", "the params are not a JSON object"},
        /* held to proto/params.def: a key record does not declare, a value
         * of another type */
        {"{\"capture\": \"values\", \"rtol\": 0.0001}",
         "'rtol' is not a parameter of record (its parameters: capture)"},
        {"{\"captur\": \"values\"}", "'captur' is not a parameter of record"},
        {"{\"capture\": 4}", "'capture' of record wants a string"},
    };
    char val[512];
    nng_socket req;
    tp_buf b;
    pid_t pid = spawn((const char *const[]){"serve", NULL});
    req = dial_control();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        create_run(req, bad[i].params, "run", val, sizeof val);
        ck_assert_msg(val[0] == '\0', "'%s' made run %s", bad[i].params, val);
        create_run(req, bad[i].params, "error", val, sizeof val);
        ck_assert_msg(strstr(val, bad[i].why), "'%s': %s", bad[i].params, val);
    }
    tp_buf_init(&b); /* a params that is not a string at all */
    tp_mp_map(&b, 3), tp_mp_cstr(&b, "cmd"), tp_mp_cstr(&b, "run.create");
    tp_mp_cstr(&b, "check"), tp_mp_cstr(&b, "record");
    tp_mp_cstr(&b, "params"), tp_mp_int(&b, 4);
    ask(req, &b, "error", val, sizeof val);
    ck_assert_msg(strstr(val, "argument 'params' is not a string"), "%s", val);
    tp_buf_free(&b);
    /* an object is stored as given; no params at all is still a run */
    create_run(req, "{\"capture\": \"values\"}", "run", val, sizeof val);
    ck_assert_str_eq(val, "1");
    create_run(req, NULL, "run", val, sizeof val);
    ck_assert_str_eq(val, "2");
    ck_assert(control(req, "shutdown"));
    nng_close(req);
    ck_assert_int_eq(wait_exit(pid), 0);
    ck_assert_int_eq(RUN("query", "run", "1"), 0);
    ck_assert_msg(strstr(out, "  params {\"capture\": \"values\"}\n"), "%s", out);
    ck_assert_int_eq(RUN("query", "run", "3"), 1);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cli_usage_and_help);
    tcase_add_test(tc, test_cli_corrupt_database_untouched);
    tcase_add_test(tc, test_cli_ingest_then_query);
    tcase_add_test(tc, test_cli_serve_signal_and_shutdown);
    tcase_add_test(tc, test_cli_token_and_directories);
    tcase_add_test(tc, test_cli_run_params_must_be_object);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
