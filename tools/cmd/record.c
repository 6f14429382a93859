/* SPDX-License-Identifier: MIT
 * record.c -- trainparity-run record: run a command under the agent, store
 * what it did as a run, print the run's id and step table, and exit with the
 * command's own status, or ERROR when it succeeded and its record is not
 * whole. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/params.h"
#include "tools/base/cli.h"
#include "tools/cmd/cmds.h"
#include "tools/client/ctl.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/base/opts.h"
#include "tools/exec/session.h"
#include "tp_version.h"

static const char *digest_s;

static const tpt_optx extra[] = {
    {"digest", "MODE",
     "full (default): every tensor at every step, as a golden run needs; induction: the "
     "model and optimizer state at boundaries only (a golden run recorded so is compared "
     "there only).  TRAINPARITY_DIGEST in the environment is not read",
     &digest_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "record",
    "[options] -- CMD...",
    "Run CMD under the agent and store what it did as a new run (check \"record\").\n"
    "Prints \"run N\" and the run's step table on stdout; CMD's own output passes\n"
    "through.  Exits with CMD's status (128+N when signal N killed it; 127 when it\n"
    "cannot be run), or 3 when CMD succeeded but its record could not be stored or\n"
    "is incomplete: events the daemon could not store, events the agent dropped,\n"
    "gaps in a process's events, malformed or torn spool files.  The reason is said\n"
    "on stderr whatever the status.",
    TPT_O_NAME | TPT_O_CAPTURE | TPT_O_JSON | TPT_O_CMD | TPT_O_LISTEN,
    extra,
};

#define REPORT_SCHEMA 1 /* schema_version of the reports trainparity-run writes */

/* utf8_len is the length of the valid UTF-8 sequence that starts at p, 0
 * when none does (RFC 3629: no overlong forms, surrogates or code points
 * above U+10FFFF). */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (p[0] < 0x80) return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        n = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        n = 4;
    else
        return 0;
    if (p[0] == 0xe0) lo = 0xa0;
    if (p[0] == 0xed) hi = 0x9f;
    if (p[0] == 0xf0) lo = 0x90;
    if (p[0] == 0xf4) hi = 0x8f;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

/* str_json is s as a JSON string, each byte that starts no valid UTF-8
 * sequence replaced by U+FFFD (jansson takes UTF-8 only); null for NULL,
 * NULL when out of memory. */
static json_t *str_json(const char *s)
{
    json_t *v;
    char *c, *w;
    if (s == NULL) return json_null();
    if ((v = json_string(s)) != NULL) return v;
    if ((c = malloc(3 * strlen(s) + 1)) == NULL) return NULL;
    for (w = c; *s != '\0';) {
        size_t k = utf8_len((const unsigned char *)s);
        if (k == 0) {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
            s++;
        } else {
            memcpy(w, s, k);
            w += k;
            s += k;
        }
    }
    v = json_stringn(c, (size_t)(w - c));
    free(c);
    return v;
}

/* report_json is record's report of the run and its execution r; NULL when
 * out of memory. */
static json_t *report_json(const tpt_opts *o, int64_t run, const tpt_exec_result *r)
{
    json_t *j = json_object(), *cmd = json_array(), *exit_;
    bool bad = cmd == NULL;
    for (int i = 0; o->cmd != NULL && o->cmd[i] != NULL; i++)
        bad |= json_array_append_new(cmd, str_json(o->cmd[i])) != 0;
    if (r->launched && r->exit.signal > 0)
        exit_ = json_pack("{s:n, s:i}", "status", "signal", r->exit.signal);
    else if (r->launched)
        exit_ = json_pack("{s:i, s:n}", "status", r->exit.status, "signal");
    else
        exit_ = json_null();
    bad |= json_object_set_new(j, "schema_version", json_integer(REPORT_SCHEMA)) != 0;
    bad |= json_object_set_new(j, "trainparity_version", str_json(TP_VERSION)) != 0;
    bad |= json_object_set_new(j, "check", json_string("record")) != 0;
    bad |= json_object_set_new(j, "name", str_json(o->name)) != 0;
    bad |= json_object_set_new(j, "run", json_integer(run)) != 0;
    bad |= json_object_set_new(j, "exec", json_integer(r->exec)) != 0;
    bad |= json_object_set_new(j, "command", cmd) != 0;
    bad |= json_object_set_new(j, "capture", str_json(o->capture)) != 0;
    bad |= json_object_set_new(j, "exit", exit_) != 0;
    if (r->finished) {
        /* the daemon does not know of spool files left on another host */
        bad |= json_object_set_new(j, "complete",
                                   json_boolean(r->finish.complete && !r->unsent[0])) != 0;
        bad |= json_object_set_new(j, "processes", json_integer(r->finish.processes)) != 0;
        bad |= json_object_set_new(j, "events", json_integer(r->finish.events)) != 0;
        bad |= json_object_set_new(j, "gaps", json_integer(r->finish.gaps)) != 0;
        bad |= json_object_set_new(j, "dropped", json_integer(r->finish.dropped)) != 0;
        bad |= json_object_set_new(j, "unstored", json_integer(r->finish.unstored)) != 0;
        if (r->finish.unstored > 0)
            bad |= json_object_set_new(j, "unstored_why", str_json(r->finish.unstored_why)) != 0;
    }
    bad |= json_object_set_new(j, "spool_files", json_integer(r->nspool)) != 0;
    if (r->unsent[0]) bad |= json_object_set_new(j, "unsent_spool", str_json(r->unsent)) != 0;
    if (!bad) return j;
    json_decref(j);
    return NULL;
}

static int write_report(const char *path, const tpt_opts *o, int64_t run, const tpt_exec_result *r,
                        char *err)
{
    json_t *j = report_json(o, run, r);
    FILE *f;
    int bad;
    if (j == NULL) return tpt_seterr(err, TP_ENOMEM, "cannot write %s: out of memory", path);
    if ((f = fopen(path, "w")) == NULL) {
        json_decref(j);
        return tpt_seterr(err, TP_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    bad = json_dumpf(j, f, JSON_PRESERVE_ORDER | JSON_INDENT(2)) != 0 || fputc('\n', f) == EOF;
    json_decref(j);
    if (fclose(f) != 0 || bad)
        return tpt_seterr(err, TP_EIO, "cannot write %s: %s", path, strerror(errno));
    return TP_OK;
}

/* incomplete words in out (n bytes) what the record of r lacks; false when
 * nothing is known to be missing.  said: tpt_exec_run failed, and its error
 * (already shown) names the events the daemon could not store. */
static bool incomplete(const tpt_exec_result *r, bool said, char *out, size_t n)
{
    size_t w = 0;
    out[0] = '\0';
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (w < n) w += (size_t)snprintf(out + w, n - w, "%s", w ? "; " : "");                     \
        if (w < n) w += (size_t)snprintf(out + w, n - w, __VA_ARGS__);                             \
    } while (0)
    if (r->finished && r->finish.unstored > 0 && !said)
        ADD("the daemon could not store %lld events (%s)", (long long)r->finish.unstored,
            r->finish.unstored_why);
    if (r->finished && r->finish.dropped > 0)
        ADD("%lld events the agent dropped", (long long)r->finish.dropped);
    if (r->finished && r->finish.gaps > 0)
        ADD("%lld gaps in the processes' events", (long long)r->finish.gaps);
    if (r->spooled.bad > 0) ADD("%lld malformed spool frames dropped", (long long)r->spooled.bad);
    if (r->spooled.torn > 0) ADD("%lld spool files torn", (long long)r->spooled.torn);
#undef ADD
    return w > 0;
}

/* code is record's exit status: the command's own, unless it succeeded (or
 * never ran) and recording failed or is incomplete. */
static int code(const tpt_exec_result *r, int failed)
{
    if (!r->launched) {
        if (r->spawn_errno == 0) return TPT_EXIT_ERROR;
        return r->spawn_errno == ENOENT ? TPT_EXIT_NOTFOUND : TPT_EXIT_NOEXEC;
    }
    if (failed && tpt_exit_code(&r->exit) == 0) return TPT_EXIT_ERROR;
    return tpt_exit_code(&r->exit);
}

/* params_json is the run's params as JSON, malloc'ed; NULL when out of
 * memory. */
static char *params_json(const char *capture)
{
    json_t *o = json_pack("{s:s}", TPP_KEY(TPP_record_capture), capture);
    char *s = o != NULL ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

int tpt_cmd_record(int argc, char **argv)
{
    char err[TPT_ERR_LEN], shown[512], capture[64], digest[64], *params, lacks[1024];
    char *env[3] = {capture, NULL, NULL};
    tpt_exec_result res;
    tpt_session *s = NULL;
    tpt_exec_spec es;
    tpt_opts o;
    int64_t run = -1;
    char *steps = NULL;
    int st, failed = 0;
    tp_err rc;

    digest_s = NULL;
    if ((st = tpt_cmd_opts(&spec, argc, argv, &o)) >= 0) return st;
    if (digest_s != NULL && strcmp(digest_s, "induction") != 0 && strcmp(digest_s, "full") != 0) {
        tpt_error("record: --digest wants full or induction, not '%s'", digest_s);
        return TPT_EXIT_USAGE;
    }
    /* full unless asked: the agent's default (one left in the caller's
     * environment is removed, tools/exec/exec.h) */
    if (digest_s != NULL) {
        snprintf(digest, sizeof digest, TP_ENV_DIGEST "=%s", digest_s);
        env[1] = digest;
    }
    memset(&res, 0, sizeof(res));
    tpt_argv_join(o.cmd, shown, sizeof(shown));
    snprintf(capture, sizeof(capture), "TRAINPARITY_CAPTURE=%s", o.capture);
    if ((params = params_json(o.capture)) == NULL) {
        tpt_error("record: out of memory");
        return TPT_EXIT_ERROR;
    }

    if ((rc = tpt_session_open(&s, err)) != TP_OK) {
        tpt_error("%s", err);
        free(params);
        return TPT_EXIT_ERROR;
    }
    if (tpt_daemon_started(tpt_session_daemon(s)))
        tpt_progress("record", "started daemon at %s", tpt_daemon_ingest(tpt_session_daemon(s)));
    rc = tpt_run_create(tpt_session_client(s), o.name, "record", params, &run, err);
    free(params);
    if (rc != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        tpt_session_close(s, NULL);
        return TPT_EXIT_ERROR;
    }
    tpt_progress("record", "run %lld: running: %s", (long long)run, shown);

    es.role = "record";
    es.argv = o.cmd;
    es.env = env;
    es.wait_ms = 0;
    rc = tpt_exec_run(s, run, &es, &res, err);
    if (rc != TP_OK) {
        tpt_error("%s", err);
        failed = 1;
    }
    if (res.launched) {
        if (res.exit.signal > 0)
            tpt_progress("record", "command killed by signal %d", res.exit.signal);
        else
            tpt_progress("record", "command exited with status %d", res.exit.status);
    }
    /* a record that lacks anything is never a success (events the daemon
     * could not store fail tpt_exec_run, whose error above names them) */
    if (incomplete(&res, rc != TP_OK, lacks, sizeof(lacks))) {
        tpt_error("the record of run %lld is incomplete: %s", (long long)run, lacks);
        failed = 1;
    }
    printf("run %lld\n", (long long)run);
    if (res.launched) {
        if (tpt_query(tpt_session_client(s), "steps", run, &steps, err) == TP_OK) {
            fputs(steps, stdout);
            if (steps[0] != '\0' && steps[strlen(steps) - 1] != '\n') putchar('\n');
            free(steps);
        } else {
            tpt_error("cannot show the steps of run %lld: %s", (long long)run, err);
            failed = 1;
        }
    }
    fflush(stdout);
    if (o.json != NULL && write_report(o.json, &o, run, &res, err) != TP_OK) {
        tpt_error("%s", err);
        failed = 1;
    }
    if (tpt_session_close(s, err) != TP_OK) {
        tpt_error("%s", err);
        failed = 1;
    }
    return code(&res, failed);
}
