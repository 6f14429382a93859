/* SPDX-License-Identifier: MIT
 * record.c -- trainparity-run record: run a command under the agent, store
 * what it did as a run, print the run's id and step table, and exit with the
 * command's own status, or ERROR when it succeeded and its record is not
 * whole. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/cmds.h"
#include "tools/ctl.h"
#include "tools/errbuf.h"
#include "tools/exec.h"
#include "tools/json.h"
#include "tools/opts.h"
#include "tools/session.h"

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
    TPT_O_NAME | TPT_O_CAPTURE | TPT_O_JSON | TPT_O_CMD,
    NULL,
};

static int write_report(const char *path, const tpt_opts *o, int64_t run, const tpt_exec_result *r,
                        char *err)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) return tpt_seterr(err, TP_EIO, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "{\n  \"schema_version\": %d,\n  \"trainparity_version\": ", TPT_REPORT_SCHEMA);
    tpt_json_str(f, TPT_VERSION);
    fputs(",\n  \"check\": \"record\",\n  \"name\": ", f);
    tpt_json_str(f, o->name);
    fprintf(f, ",\n  \"run\": %lld,\n  \"exec\": %lld,\n  \"command\": ", (long long)run,
            (long long)r->exec);
    tpt_json_argv(f, o->cmd);
    fputs(",\n  \"capture\": ", f);
    tpt_json_str(f, o->capture);
    if (r->launched && r->exit.signal > 0)
        fprintf(f, ",\n  \"exit\": {\"status\": null, \"signal\": %d}", r->exit.signal);
    else if (r->launched)
        fprintf(f, ",\n  \"exit\": {\"status\": %d, \"signal\": null}", r->exit.status);
    else
        fputs(",\n  \"exit\": null", f);
    if (r->finished) {
        fprintf(f,
                ",\n  \"complete\": %s,\n  \"processes\": %lld,\n  \"events\": %lld,\n"
                "  \"gaps\": %lld,\n  \"dropped\": %lld,\n  \"unstored\": %lld",
                r->finish.complete ? "true" : "false", (long long)r->finish.processes,
                (long long)r->finish.events, (long long)r->finish.gaps,
                (long long)r->finish.dropped, (long long)r->finish.unstored);
        if (r->finish.unstored > 0) {
            fputs(",\n  \"unstored_why\": ", f);
            tpt_json_str(f, r->finish.unstored_why);
        }
    }
    fprintf(f, ",\n  \"spool_files\": %d\n}\n", r->nspool);
    if (fclose(f) != 0)
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
    json_t *o = json_pack("{s:s}", "capture", capture);
    char *s = o != NULL ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

int tpt_cmd_record(int argc, char **argv)
{
    char err[TPT_ERR_LEN], shown[512], capture[64], *params, lacks[1024];
    char *env[2] = {capture, NULL};
    tpt_exec_result res;
    tpt_session *s = NULL;
    tpt_exec_spec es;
    tpt_opts o;
    int64_t run = -1;
    char *steps = NULL;
    int st, failed = 0;
    tp_err rc;

    if ((st = tpt_opts_cli(&spec, argc, argv, &o)) >= 0) return st;
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
