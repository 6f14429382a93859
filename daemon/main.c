/* SPDX-License-Identifier: MIT
 * main.c -- trainparity-daemon: serve, query, a stored run judged again,
 * offline ingest, and a run's export and import.  Exit status: 0 success,
 * 1 error, 64 usage; query diff: 0 the executions match, 1 they differ, 2
 * they cannot be compared; judge: trainparity-run's (0 PASS, 1 FAIL,
 * 2 ABSTAIN, 3 ERROR or no verdict could be given). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/checks/compare/diff.h"
#include "daemon/checks/judge.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/serve.h"
#include "daemon/store/export.h"
#include "daemon/store/query.h"
#include "daemon/store/store.h"
#include "proto/control.h"

#define PROG       "trainparity-daemon"
#define EX_USAGE_  64
#define EX_DIFFER  1 /* query diff: the executions differ */
#define EX_TROUBLE 2 /* query diff: they cannot be compared */
#define EX_ERROR   3 /* judge: ERROR, or no verdict */
#define DEFAULT_DB ".trainparity/runs.db"
#define MAX_LISTEN 16

/* the database a command opens unless its own --db says otherwise: a --db
 * before the command, or DEFAULT_DB */
static const char *g_db = DEFAULT_DB;

#include "tp_version.h"

static const char usage_main[] =
    "usage: " PROG " [--db PATH] serve [--listen URL]... [--control URL] [--token-file F]\n"
    "       " PROG " [--db PATH] query [--json] runs [--check C] [--outcome O] [--limit N]\n"
    "       " PROG " [--db PATH] query [--json] run ID | steps ID | verdict ID\n"
    "       " PROG " [--db PATH] query [--json] diff ID1 ID2 [--exec1 E] [--exec2 E]\n"
    "       " PROG " [--db PATH] judge [--json] ID\n"
    "       " PROG " [--db PATH] ingest FILE...\n"
    "       " PROG " [--db PATH] export RUN_ID > FILE\n"
    "       " PROG " [--db PATH] import FILE\n"
    "       " PROG " --help | --version\n";

static const char help_main[] =
    "Stores what TrainParity agents observe (SQLite) and answers queries.\n"
    "\n"
    "commands:\n"
    "  serve    receive agent batches and control commands until SIGINT/SIGTERM\n"
    "  query    print the runs, one run, a run's per-step table or its verdict, or\n"
    "           compare two runs step by step\n"
    "  judge    judge a stored run again, with this version, and print the verdict\n"
    "  ingest   store spool files written while no daemon was reachable\n"
    "  export   write one run, with its captured values, as one file to stdout\n"
    "  import   add an exported run to the database, as a new run\n"
    "\n"
    "Run '" PROG " COMMAND --help' for a command's options.\n";

static const char usage_serve[] =
    "usage: " PROG " serve [--db PATH] [--listen URL]... [--control URL] [--token-file F]\n";
static const char help_serve[] =
    "  --db PATH        database (default " DEFAULT_DB "), created 0600;\n"
    "                   blobs go to PATH.blobs/\n"
    "  --listen URL     ingest URL, repeatable (default ipc://<db dir>/ingest.ipc);\n"
    "                   tcp:// URLs need a token\n"
    "  --control URL    control URL (default: one beside every --listen,\n"
    "                   ipc://P -> ipc://P.ctl, tcp://H:N -> tcp://H:N+1)\n"
    "  --token-file F   the shared token every batch, and every request that comes\n"
    "                   through a network (non-ipc) control URL, must carry,\n"
    "                   read from F (readable by its owner only); default $" TP_ENV_TOKEN "\n"
    "Missing directories are created 0700; existing ones keep their mode.\n"
    "Stops on SIGINT or SIGTERM, on the control command shutdown, or, when a\n"
    "command that attached as its owner started it (trainparity-run), once no\n"
    "attached command is left.\n";

static const char usage_query[] =
    "usage: " PROG " query [--db PATH] [--json] runs [--check C] [--outcome O] [--limit N]\n"
    "       " PROG " query [--db PATH] [--json] run ID | steps ID | verdict ID\n"
    "       " PROG " query [--db PATH] [--json] diff ID1 ID2 [--exec1 E] [--exec2 E]\n";
static const char help_query[] =
    "  runs          one line per run: id, name, check, created, executions, the latest\n"
    "                verdict's outcome\n"
    "  run ID        a run, its latest verdict, its executions and their processes\n"
    "  steps ID      per step: loss, backward count, grad and update norms, lrs, optimizer\n"
    "                steps, whether each update moved a parameter, GradScaler scale\n"
    "  verdict ID    the text report of the run's latest verdict\n"
    "  diff ID1 ID2  an execution of each run compared step by step from step 0, by the\n"
    "                rules of compare (exact digests, the training data stream, the number\n"
    "                of steps): that they match, or the first divergence, what else\n"
    "                differs at that step and what the observations show of it.  Exit\n"
    "                status 0 when they match, 1 when they differ, 2 when they cannot be\n"
    "                compared (an unknown run, no execution that made a step), 64 on a\n"
    "                usage error (a bad ID, an execution not of its run)\n"
    "  --exec1 E     diff: execution E of run ID1 (default: its first execution that made\n"
    "                an optimizer step; of an execution, its trainer: rank 0 or the only\n"
    "                process)\n"
    "  --exec2 E     diff: execution E of run ID2\n"
    "  --check C     runs: only the runs of check C (record, resume, health, ...)\n"
    "  --outcome O   runs: only those whose latest verdict is O: PASS, FAIL, ABSTAIN,\n"
    "                ERROR, or none (no verdict)\n"
    "  --limit N     runs: only the newest N of those\n"
    "  --json        JSON instead of text; for verdict, the stored JSON report as it is\n"
    "  --db PATH     database (default " DEFAULT_DB "), opened read-only\n"
    "Text tables are aligned: each column as wide as its widest value.\n";

static const char usage_judge[] = "usage: " PROG " judge [--db PATH] [--json] ID\n";
static const char help_judge[] =
    "Judges run ID again from what the database holds, with this version's\n"
    "verdict engines, as its check did when the run ended: under the tolerance\n"
    "its command declared (--rtol, --atol), weighing the reruns a narrowing\n"
    "made.  Prints the text report (--json: the JSON report) and stores\n"
    "nothing.  Exit status as trainparity-run's: 0 PASS, 1 FAIL, 2 ABSTAIN,\n"
    "3 ERROR or no verdict (an unknown run, a run of no check that judges,\n"
    "a database that cannot be read), 64 on a usage error.\n"
    "  --json     the JSON report instead of the text\n"
    "  --db PATH  database (default " DEFAULT_DB "), opened read-only\n";

static const char usage_export[] = "usage: " PROG " export [--db PATH] RUN_ID > FILE\n";
static const char help_export[] =
    "Writes run RUN_ID to stdout as one file: its run, executions, processes,\n"
    "events, gaps and verdicts, and the bytes of the tensors it captured\n"
    "(--capture values).  The file is an SQLite database (format version %d);\n"
    "execution keys are not in it.\n"
    "  --db PATH  database (default " DEFAULT_DB "), opened read-only\n";

static const char usage_import[] = "usage: " PROG " import [--db PATH] FILE\n";
static const char help_import[] =
    "Adds the run exported in FILE to the database (created if missing) as a new\n"
    "run, every id new, in one transaction, and prints 'run N'.  FILE is checked\n"
    "whole first (its format, length, checksum, every row and event); a file\n"
    "that is not a complete export changes nothing.\n"
    "  --db PATH  database (default " DEFAULT_DB ")\n";

static const char usage_ingest[] = "usage: " PROG " ingest [--db PATH] FILE...\n";
static const char help_ingest[] =
    "Stores the batches of spool files (4-byte big-endian length + batch frames)\n"
    "without a running daemon; a torn last frame is reported and skipped.  Only\n"
    "batches of an execution the daemon created, with its key, are stored, also\n"
    "those of a process that never reached the daemon before its execution\n"
    "ended.  Exits 1 when a file could not be read or a frame of it was not\n"
    "stored (refused, malformed or torn).\n"
    "  --db PATH  database (default " DEFAULT_DB ")\n";

static int usage_error(const char *usage, const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EX_USAGE_;
}

/* bad_option reports the option getopt_long rejected. */
static int bad_option(const char *usage, char **argv, int opt)
{
    if (opt == ':') return usage_error(usage, "option '%s' needs an argument", argv[optind - 1]);
    return usage_error(usage, "unknown option '%s'", argv[optind - 1]);
}

static void log_stderr(void *arg, const char *line)
{
    fprintf(stderr, PROG ": %s\n", line);
}

/* make_db_dir creates the database's directory (0700) when it is missing;
 * one that exists is left as it is. */
static int make_db_dir(const char *db)
{
    char dir[4096], why[512];
    const char *slash = strrchr(db, '/');
    struct stat sb;
    if (slash == NULL || slash == db) return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - db), db);
    if (stat(dir, &sb) == 0) return 0;
    if (tpd_private_dir(dir, why, sizeof why) != TP_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return -1;
    }
    return 0;
}

/* open_store opens db or says why not. */
static tpd_store *open_store(const char *db, unsigned flags)
{
    tpd_store *s = NULL;
    char why[512];
    if (!(flags & TPD_STORE_READONLY) && make_db_dir(db) != 0) return NULL;
    if (tpd_store_open(&s, db, flags, why, sizeof why) != TP_OK) {
        fprintf(stderr, "%s: %s\n", db, why);
        return NULL;
    }
    return s;
}

/* ---- serve ---- */

#define TOKEN_MAX 127 /* what the agent carries (agent/config.h) */

static tpd_serve *g_serve;

/* read_token reads the token in path (one line; a final newline is not
 * part of it) into out; a file others may read or write is refused. */
static int read_token(const char *path, char *out, size_t n)
{
    struct stat sb;
    ssize_t got = 0, r;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, PROG ": cannot open the token file %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, PROG ": the token file %s is not a regular file\n", path);
        close(fd);
        return -1;
    }
    if (sb.st_mode & 077) {
        fprintf(stderr, PROG ": the token file %s is open to others (mode %03o); chmod 600 it\n",
                path, (unsigned)(sb.st_mode & 0777));
        close(fd);
        return -1;
    }
    while ((size_t)got < n && (r = read(fd, out + got, n - (size_t)got)) != 0) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fprintf(stderr, PROG ": cannot read the token file %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
        got += r;
    }
    close(fd);
    while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == '\r')) got--;
    if ((size_t)got >= n || got > TOKEN_MAX || got == 0 || memchr(out, '\0', (size_t)got) ||
        memchr(out, '\n', (size_t)got)) {
        fprintf(stderr, PROG ": the token file %s must hold one line of 1 to %d bytes\n", path,
                TOKEN_MAX);
        return -1;
    }
    out[got] = '\0';
    return 0;
}

/* needs_token names the first URL reachable from the network, or NULL. */
static const char *needs_token(const char *const *listen, size_t n, const char *control,
                               char *derived, size_t dn)
{
    for (size_t i = 0; i < n; i++)
        if (!tp_url_local(listen[i])) return listen[i];
    if (control == NULL && n > 0 && tp_url_control(listen[0], derived, dn) == TP_OK)
        control = derived;
    return control && !tp_url_local(control) ? control : NULL;
}

static volatile sig_atomic_t g_signalled; /* SIGINT or SIGTERM came */

/* on_signal stops the daemon; one that comes before it serves (the handler
 * is set before the sockets exist, so that a signal sent once they do is
 * never the default's death) is kept for when it does. */
static void on_signal(int sig)
{
    g_signalled = 1;
    if (g_serve) tpd_serve_stop(g_serve);
}

static int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"listen", required_argument, NULL, 'l'},
                                         {"control", required_argument, NULL, 'c'},
                                         {"token", required_argument, NULL, 't'},
                                         {"token-file", required_argument, NULL, 'T'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *db = g_db, *control = NULL, *token = getenv(TP_ENV_TOKEN), *open_url;
    const char *listen[MAX_LISTEN];
    char def_listen[4200], why[1024], urls[4096], tokbuf[256], derived[4200];
    size_t nlisten = 0, w = 0;
    tpd_serve_opts o;
    tpd_store *s;
    tpd_serve *sv = NULL;
    struct sigaction sa;
    tp_err err;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'l':
            if (nlisten == MAX_LISTEN)
                return usage_error(usage_serve, "at most 16 --listen URLs%s", "");
            listen[nlisten++] = optarg;
            break;
        case 'c':
            control = optarg;
            break;
        case 't':
            return usage_error(usage_serve,
                               "--token would show the token to every user (ps); give it in a "
                               "file, --token-file F, or in $" TP_ENV_TOKEN "%s",
                               "");
        case 'T':
            if (read_token(optarg, tokbuf, sizeof tokbuf) != 0) return 1;
            token = tokbuf;
            break;
        case 'h':
            printf("%s%s", usage_serve, help_serve);
            return 0;
        default:
            return bad_option(usage_serve, argv, c);
        }
    }
    if (optind < argc) return usage_error(usage_serve, "unexpected argument '%s'", argv[optind]);
    if ((token == NULL || token[0] == '\0') &&
        (open_url = needs_token(listen, nlisten, control, derived, sizeof derived)) != NULL) {
        fprintf(stderr,
                PROG ": %s is reachable from the network: it needs a token "
                     "(--token-file F, or $" TP_ENV_TOKEN ")\n",
                open_url);
        return 1;
    }
    if ((s = open_store(db, 0)) == NULL) return 1;
    if (nlisten == 0) {
        if (tpd_serve_default_listen(db, def_listen, sizeof def_listen) != TP_OK) {
            fprintf(stderr, PROG ": cannot derive an ingest URL from %s\n", db);
            tpd_store_close(s);
            return 1;
        }
        listen[nlisten++] = def_listen;
    }
    memset(&o, 0, sizeof o);
    o.listen = listen;
    o.nlisten = nlisten;
    o.control = control;
    o.token = token;
    o.log = log_stderr;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if ((err = tpd_serve_open(&sv, s, &o, why, sizeof why)) != TP_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        tpd_store_close(s);
        return 1;
    }
    g_serve = sv;
    if (g_signalled) tpd_serve_stop(sv);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* a write past a file-size limit (RLIMIT_FSIZE) then fails with EFBIG,
     * like one to a full disk, and the batches wait in memory (serve/serve.h),
     * instead of the signal killing the daemon */
    sigaction(SIGXFSZ, &sa, NULL);
    urls[0] = '\0';
    for (size_t i = 0; i < nlisten && w < sizeof urls; i++)
        w += (size_t)snprintf(urls + w, sizeof urls - w, "%s%s", i ? " " : "", listen[i]);
    fprintf(stderr, PROG ": pid %d serving db %s, ingest %s, control %s\n", (int)getpid(), db, urls,
            tpd_serve_control_url(sv));
    err = tpd_serve_run(sv, why, sizeof why);
    g_serve = NULL;
    tpd_serve_close(sv);
    tpd_store_close(s);
    if (err != TP_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return 1;
    }
    fprintf(stderr, PROG ": pid %d stopped\n", (int)getpid());
    return 0;
}

/* ---- query ---- */

static int parse_id(const char *s, int64_t *id)
{
    char *end;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < 0) return -1;
    *id = v;
    return 0;
}

/* one_run reads the one argument left after the options, a run ID, into
 * *run: 0, or the usage error's exit status. */
static int one_run(int argc, char **argv, const char *usage, int64_t *run)
{
    if (optind == argc) return usage_error(usage, "which run? give its ID%s", "");
    if (argc - optind > 1) return usage_error(usage, "unexpected argument '%s'", argv[optind + 1]);
    if (parse_id(argv[optind], run) != 0)
        return usage_error(usage, "'%s' is not a run ID", argv[optind]);
    return 0;
}

/* flushed flushes stdout; 1, having said why, when what was written to
 * it could not be. */
static int flushed(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": cannot write the output: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* write_out writes the text of out to stdout; 1 when it cannot. */
static int write_out(const tpd_str *out)
{
    fwrite(tpd_str_cstr(out), 1, out->len, stdout);
    return flushed();
}

/* query_diff compares the executions a and b name (query diff): 0 when
 * they match, EX_DIFFER when they differ, EX_USAGE_ for an execution not
 * of its run, EX_TROUBLE when they cannot be compared.  Read-only. */
static int query_diff(const char *db, tpd_diff_side a, tpd_diff_side b, bool json)
{
    char why[1024];
    bool match = false;
    tpd_store *s;
    tpd_str out;
    tp_err err;
    int status;
    if ((s = open_store(db, TPD_STORE_READONLY)) == NULL) return EX_TROUBLE;
    tpd_str_init(&out);
    err = tpd_golden_diff(s, a, b, json, &out, &match, why, sizeof why);
    tpd_store_close(s);
    if (err == TP_OK)
        status = write_out(&out) ? EX_TROUBLE : match ? 0 : EX_DIFFER;
    else if (err == TP_EINVAL)
        status = usage_error(usage_query, "%s", why);
    else {
        fprintf(stderr, PROG ": %s\n", why);
        status = EX_TROUBLE;
    }
    tpd_str_free(&out);
    return status;
}

static int cmd_query(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"check", required_argument, NULL, 'c'},
                                         {"outcome", required_argument, NULL, 'o'},
                                         {"limit", required_argument, NULL, 'l'},
                                         {"exec1", required_argument, NULL, '1'},
                                         {"exec2", required_argument, NULL, '2'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *db = g_db, *what;
    char why[512];
    int64_t id = 0;
    tpd_diff_side side[2] = {{0, -1}, {0, -1}};
    tpd_query_opts o;
    tpd_store *s;
    tpd_str out;
    tp_err err;
    int c, rest, status;
    memset(&o, 0, sizeof o);
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'j':
            o.json = true;
            break;
        case 'c':
            if (optarg[0] == '\0')
                return usage_error(usage_query, "--check needs a check name%s", "");
            o.check = optarg;
            break;
        case 'o':
            if ((o.outcome = tpd_query_outcome(optarg)) == NULL)
                return usage_error(usage_query,
                                   "unknown outcome '%s' (PASS, FAIL, ABSTAIN, ERROR or none)",
                                   optarg);
            break;
        case 'l':
            if (parse_id(optarg, &o.limit) != 0 || o.limit == 0)
                return usage_error(usage_query, "--limit takes a positive number, not '%s'",
                                   optarg);
            break;
        case '1':
        case '2':
            if (parse_id(optarg, &side[c - '1'].exec) != 0)
                return usage_error(usage_query, "'%s' is not an execution ID", optarg);
            break;
        case 'h':
            printf("%s%s", usage_query, help_query);
            return 0;
        default:
            return bad_option(usage_query, argv, c);
        }
    }
    rest = argc - optind;
    if (rest == 0) return usage_error(usage_query, "what to query?%s", "");
    what = argv[optind];
    if ((side[0].exec >= 0 || side[1].exec >= 0) && strcmp(what, "diff") != 0)
        return usage_error(usage_query, "--exec1 and --exec2 choose the executions of diff, not %s",
                           what);
    if (strcmp(what, "diff") == 0) {
        if (rest < 3) return usage_error(usage_query, "diff needs two run IDs%s", "");
        if (rest > 3) return usage_error(usage_query, "unexpected argument '%s'", argv[optind + 3]);
        for (int k = 0; k < 2; k++)
            if (parse_id(argv[optind + 1 + k], &side[k].run) != 0)
                return usage_error(usage_query, "'%s' is not a run ID", argv[optind + 1 + k]);
        if (o.check || o.outcome || o.limit)
            return usage_error(usage_query, "--check, --outcome and --limit filter runs, not %s",
                               what);
        return query_diff(db, side[0], side[1], o.json);
    }
    if (strcmp(what, "runs") == 0) {
        if (rest != 1)
            return usage_error(usage_query, "unexpected argument '%s'", argv[optind + 1]);
    } else if (strcmp(what, "run") == 0 || strcmp(what, "steps") == 0 ||
               strcmp(what, "verdict") == 0) {
        if (rest < 2) return usage_error(usage_query, "%s needs a run ID", what);
        if (rest > 2) return usage_error(usage_query, "unexpected argument '%s'", argv[optind + 2]);
        if (parse_id(argv[optind + 1], &id) != 0)
            return usage_error(usage_query, "'%s' is not a run ID", argv[optind + 1]);
        if (o.check || o.outcome || o.limit)
            return usage_error(usage_query, "--check, --outcome and --limit filter runs, not %s",
                               what);
    } else {
        return usage_error(usage_query, "unknown query '%s' (runs, run, steps, verdict, diff)",
                           what);
    }
    if ((s = open_store(db, TPD_STORE_READONLY)) == NULL) return 1;
    tpd_str_init(&out);
    err = tpd_query_with(s, what, id, &o, &out, why, sizeof why);
    tpd_store_close(s);
    if (err == TP_OK) {
        status = write_out(&out);
    } else {
        fprintf(stderr, PROG ": %s\n", why);
        status = 1;
    }
    tpd_str_free(&out);
    return status;
}

/* ---- judge ---- */

static int cmd_judge(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *db = g_db;
    char why[1024];
    bool json = false;
    int64_t run;
    tpd_result res;
    tpd_store *s;
    tp_err err;
    int c, status;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            printf("%s%s", usage_judge, help_judge);
            return 0;
        default:
            return bad_option(usage_judge, argv, c);
        }
    }
    if ((c = one_run(argc, argv, usage_judge, &run)) != 0) return c;
    if ((s = open_store(db, TPD_STORE_READONLY)) == NULL) return EX_ERROR;
    err = tpd_judge_again(s, run, &res, why, sizeof why);
    tpd_store_close(s);
    if (err != TP_OK) {
        fprintf(stderr, PROG ": cannot judge run %lld: %s\n", (long long)run, why);
        return EX_ERROR;
    }
    fputs(json ? res.json : res.text, stdout);
    if (json) putchar('\n');
    /* the outcome is the exit status: 0 PASS, 1 FAIL, 2 ABSTAIN, 3 ERROR */
    status = flushed() ? EX_ERROR : (int)res.outcome;
    tpd_result_clear(&res);
    return status;
}

/* ---- export and import ---- */

static int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *db = g_db;
    char why[1024];
    int64_t run;
    tpd_store *s;
    tp_err err;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'h':
            printf("%s", usage_export);
            printf(help_export, TPD_EXPORT_FORMAT);
            return 0;
        default:
            return bad_option(usage_export, argv, c);
        }
    }
    if ((c = one_run(argc, argv, usage_export, &run)) != 0) return c;
    if (isatty(STDOUT_FILENO))
        return usage_error(usage_export,
                           "an export is a binary file: redirect stdout to a file "
                           "(> FILE)%s",
                           "");
    if ((s = open_store(db, TPD_STORE_READONLY)) == NULL) return 1;
    err = tpd_export_write(s, run, STDOUT_FILENO, why, sizeof why);
    tpd_store_close(s);
    if (err != TP_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return 1;
    }
    return 0;
}

static int cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *db = g_db;
    char why[1024];
    tpd_export *x = NULL;
    int64_t run = 0;
    tpd_store *s;
    tp_err err;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'h':
            printf("%s%s", usage_import, help_import);
            return 0;
        default:
            return bad_option(usage_import, argv, c);
        }
    }
    if (optind == argc) return usage_error(usage_import, "no export file given%s", "");
    if (argc - optind > 1)
        return usage_error(usage_import, "unexpected argument '%s'", argv[optind + 1]);
    /* the whole file is checked before the database is opened (or created) */
    if ((err = tpd_export_open(&x, argv[optind], why, sizeof why)) != TP_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return 1;
    }
    if ((s = open_store(db, 0)) == NULL) {
        tpd_export_close(x);
        return 1;
    }
    err = tpd_export_import(x, s, &run, why, sizeof why);
    tpd_store_close(s);
    tpd_export_close(x);
    if (err != TP_OK) {
        fprintf(stderr, PROG ": %s: %s\n", db, why);
        return 1;
    }
    printf("run %lld\n", (long long)run);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- ingest ---- */

static int cmd_ingest(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *db = g_db;
    tpd_ingest *in = NULL;
    tpd_store *s;
    tp_err err;
    int c, status = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'h':
            printf("%s%s", usage_ingest, help_ingest);
            return 0;
        default:
            return bad_option(usage_ingest, argv, c);
        }
    }
    if (optind == argc) return usage_error(usage_ingest, "no spool file given%s", "");
    if ((s = open_store(db, 0)) == NULL) return 1;
    if ((err = tpd_ingest_create(&in, s, NULL)) != TP_OK) {
        fprintf(stderr, PROG ": %s: %s\n", db, tp_strerror(err));
        tpd_store_close(s);
        return 1;
    }
    for (int i = optind; i < argc; i++) {
        tpd_spool_result r;
        char why[512];
        err = tpd_ingest_spool(in, argv[i], &r, why, sizeof why);
        if (err != TP_OK) {
            fprintf(stderr, PROG ": %s\n", why);
            status = 1;
            continue;
        }
        printf("%s: %llu events stored, %llu duplicates, %llu frames, %llu bad%s\n", argv[i],
               (unsigned long long)r.events, (unsigned long long)r.dup,
               (unsigned long long)r.frames, (unsigned long long)r.bad,
               r.torn ? ", torn last frame skipped" : "");
        if (why[0]) fprintf(stderr, PROG ": %s: %s\n", argv[i], why);
        if (r.bad > 0 || r.torn) status = 1; /* something in it was not stored */
    }
    tpd_ingest_destroy(in);
    tpd_store_close(s);
    return status;
}

int main(int argc, char **argv)
{
    const char *cmd;
    opterr = 0;
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EX_USAGE_;
    }
    /* --db PATH before the command: the database of whichever it is */
    if (strcmp(argv[1], "--db") == 0 || strncmp(argv[1], "--db=", 5) == 0) {
        int used = argv[1][4] == '=' ? 1 : 2;
        if (used == 2 && argc < 3)
            return usage_error(usage_main, "option '--db' needs a path%s", "");
        g_db = used == 1 ? argv[1] + 5 : argv[2];
        if (g_db[0] == '\0') return usage_error(usage_main, "option '--db' needs a path%s", "");
        argc -= used;
        argv += used;
        if (argc < 2) return usage_error(usage_main, "no command given%s", "");
    }
    cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        printf("%s\n%s", usage_main, help_main);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf(PROG " %s\n", TP_VERSION);
        return 0;
    }
    if (strcmp(cmd, "serve") == 0) return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "query") == 0) return cmd_query(argc - 1, argv + 1);
    if (strcmp(cmd, "judge") == 0) return cmd_judge(argc - 1, argv + 1);
    if (strcmp(cmd, "ingest") == 0) return cmd_ingest(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc - 1, argv + 1);
    if (strcmp(cmd, "import") == 0) return cmd_import(argc - 1, argv + 1);
    return usage_error(usage_main, cmd[0] == '-' ? "unknown option '%s'" : "unknown command '%s'",
                       cmd);
}
