/* SPDX-License-Identifier: MIT
 * coverage.c -- trainparity-run coverage: sample coverage across ranks.
 *
 * One execution of the command (a launcher such as torchrun and its ranks,
 * or a single process), every process reporting to the same daemon.  The
 * declaration (policy, universe, padding, window, --sample-id) goes into
 * the run's params as JSON, so the daemon judges from the stored run alone
 * (daemon/checks/coverage/decl.h, daemon/checks/coverage/verdict.c).  A universe file is read
 * here and sent as sorted ranges of IDs: a dense universe costs a few
 * bytes, whatever its size.
 *
 * The verdict reads the sample IDs the loaders yielded, never a tensor, so
 * the execution runs in the induction mode (docs/induction.md): the model
 * and optimizer state digested at boundaries only, the cost of resume's
 * executions. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/params.h"
#include "tools/base/cli.h"
#include "tools/client/client.h"
#include "tools/cmd/cmds.h"
#include "tools/client/ctl.h"
#include "tools/cmd/verdict.h"
#include "tools/base/errbuf.h"
#include "tools/exec/exec.h"
#include "tools/base/opts.h"
#include "tools/exec/session.h"

static const char *policy_s, *universe_s, *universe_file, *padding_s, *epochs_s, *loader_s,
    *exact_s, *examples_s, *evidence_f;

static const tpt_optx extra[] = {
    {"policy", "P",
     "exactly_once | at_least_once | no_cross_rank_overlap | expected_padding (required)",
     &policy_s},
    {"universe", "N",
     "the sample IDs are 0..N-1; string IDs: there are N of them (default: len(dataset), "
     "when it has one)",
     &universe_s},
    {"universe-file", "F", "the sample IDs, integers separated by blanks, commas or lines",
     &universe_file},
    {"padding", "P",
     "expected_padding: repeated observations allowed per epoch (default: what the "
     "DistributedSampler adds, total_size - len(dataset))",
     &padding_s},
    {"padding-exact", NULL,
     "expected_padding: exactly the padding, not at most (fewer repeats fail: "
     "coverage.padding_short)",
     &exact_s},
    {"examples", "N", "examples shown of each kind of anomaly (default 5)", &examples_s},
    {"evidence", "F",
     "write every ID's occurrences (epoch, rank, position, item, worker) to F, one JSON line "
     "per ID",
     &evidence_f},
    {"epochs", "E", "audit epochs 0..E-1, each of which must be seen complete (default: all seen)",
     &epochs_s},
    {"loader", "L",
     "the DataLoader audited, in creation order (default: the one the training consumed)",
     &loader_s},
    {NULL, NULL, NULL, NULL},
};

static const tpt_cmdspec spec = {
    "coverage",
    "--policy P [options] -- CMD...",
    "Sample coverage: runs CMD once (e.g. torchrun --nproc_per_node 4 train.py;\n"
    "every rank reports to the same daemon) and audits the stable sample IDs\n"
    "each rank's DataLoader returned, per epoch and position, against the\n"
    "policy.  PASS (0); FAIL (1) at the first violation in (epoch, rank,\n"
    "position) order: coverage.missing, .same_rank_duplicate,\n"
    ".cross_rank_duplicate, .unexpected_id, .padding_exceeded, .padding_short;\n"
    "the report counts every anomaly and shows examples.  Sample IDs are\n"
    "integers or strings.  ABSTAIN (2) for\n"
    "an unknown universe where the policy needs one, or an epoch not seen\n"
    "complete; ERROR (3) when a rank crashed or its events are incomplete.",
    TPT_O_NAME | TPT_O_JSON | TPT_O_JUNIT | TPT_O_HTML | TPT_O_SAMPLE_ID | TPT_O_CMD | TPT_O_LISTEN,
    extra,
};

/* count parses a non-negative integer option (min: its least value). */
static int count(const char *opt, const char *s, long long min, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (errno || end == s || *end || *v < min) {
        tpt_error("coverage: --%s wants an integer >= %lld, not '%s'", opt, min, s);
        return -1;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* read_ids reads the universe file into a sorted array; duplicates and
 * anything but integers are errors (an ID must be unique). */
static int read_ids(const char *path, int64_t **out, size_t *n)
{
    FILE *f = fopen(path, "r");
    int64_t *v = NULL;
    size_t k = 0, cap = 0;
    char word[64];
    int c, len = 0;
    if (f == NULL) {
        tpt_error("coverage: cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    do {
        c = fgetc(f);
        if (c == '#') /* a comment to the end of the line */
            while (c != EOF && c != '\n') c = fgetc(f);
        if (c != EOF && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ',') {
            if (len + 1 >= (int)sizeof word) goto bad;
            word[len++] = (char)c;
            continue;
        }
        if (len == 0) continue;
        word[len] = '\0';
        len = 0;
        if (k == cap) {
            int64_t *nv = realloc(v, (cap = cap ? cap * 2 : 1024) * sizeof *v);
            if (nv == NULL) goto oom;
            v = nv;
        }
        {
            char *end;
            errno = 0;
            v[k++] = strtoll(word, &end, 10);
            if (errno || *end) goto bad;
        }
    } while (c != EOF);
    fclose(f);
    qsort(v, k, sizeof *v, cmp_i64);
    for (size_t i = 1; i < k; i++)
        if (v[i] == v[i - 1]) {
            tpt_error("coverage: %s lists ID %" PRId64 " twice: an ID must be unique", path, v[i]);
            free(v);
            return -1;
        }
    if (k == 0) {
        tpt_error("coverage: %s holds no IDs", path);
        free(v);
        return -1;
    }
    *out = v;
    *n = k;
    return 0;
bad:
    tpt_error("coverage: %s: '%.*s' is not an integer ID", path, len, word);
    goto out;
oom:
    tpt_error("coverage: out of memory reading %s", path);
out:
    fclose(f);
    free(v);
    return -1;
}

/* set_str sets key of o to the string s, given by option opt: 0, or an
 * exit status (said): usage when s is not UTF-8, which a JSON string must
 * be; ERROR when out of memory. */
static int set_str(json_t *o, const char *key, const char *opt, const char *s)
{
    json_t *v = json_string(s);
    if (v == NULL) {
        tpt_error("coverage: %s is not UTF-8 text (the run's params are JSON)", opt);
        return TPT_EXIT_USAGE;
    }
    if (json_object_set_new(o, key, v) != 0) {
        tpt_error("coverage: out of memory");
        return TPT_EXIT_ERROR;
    }
    return 0;
}

/* params writes the declaration (daemon/checks/coverage/decl.h) as JSON,
 * keys in the order of decl.h, into *out (malloc'ed): 0, or an exit status
 * (said). */
static int params(const char *policy, const char *sample_id, long long universe, const int64_t *ids,
                  size_t nids, long long padding, long long epochs, long long loader,
                  long long examples, char **out)
{
    json_t *o = json_object(), *r;
    int st = TPT_EXIT_ERROR, bad = o == NULL;
    if (!bad && (st = set_str(o, TPP_KEY(TPP_coverage_policy), "--policy", policy)) != 0) goto out;
    if (loader >= 0)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_loader), json_integer(loader));
    if (epochs > 0)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_epochs), json_integer(epochs));
    if (universe >= 0)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_universe), json_integer(universe));
    if (padding >= 0)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_padding), json_integer(padding));
    if (exact_s)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_padding_exact), json_true());
    if (examples >= 0)
        bad = bad || json_object_set_new(o, TPP_KEY(TPP_coverage_examples), json_integer(examples));
    if (!bad && sample_id &&
        (st = set_str(o, TPP_KEY(TPP_coverage_sample_id), "--sample-id", sample_id)) != 0)
        goto out;
    if (!bad && ids != NULL) {
        if ((st = set_str(o, TPP_KEY(TPP_coverage_universe_file), "--universe-file",
                          universe_file)) != 0)
            goto out;
        /* sorted ranges: a dense universe costs a few bytes, whatever its size */
        bad = (r = json_array()) == NULL ||
              json_object_set_new(o, TPP_KEY(TPP_coverage_universe_ranges), r);
        for (size_t i = 0; !bad && i < nids;) {
            size_t j = i;
            while (j + 1 < nids && ids[j + 1] == ids[j] + 1) j++;
            bad = json_array_append_new(
                r, json_pack("[I, I]", (json_int_t)ids[i], (json_int_t)ids[j]));
            i = j + 1;
        }
    }
    st = TPT_EXIT_ERROR;
    if (!bad && (*out = json_dumps(o, JSON_PRESERVE_ORDER)) != NULL)
        st = 0;
    else
        tpt_error("coverage: out of memory");
out:
    json_decref(o);
    return st;
}

/* parse checks the options; returns an exit status, or -1 to go on. */
static int parse(int argc, char **argv, tpt_opts *o, long long *universe, long long *padding,
                 long long *epochs, long long *loader, long long *examples)
{
    int st;
    policy_s = universe_s = universe_file = padding_s = epochs_s = loader_s = NULL;
    exact_s = examples_s = evidence_f = NULL;
    *universe = *padding = *examples = *loader = -1;
    *epochs = 0;
    if ((st = tpt_cmd_opts(&spec, argc, argv, o)) >= 0) return st;
    if (policy_s == NULL) {
        tpt_error("coverage: --policy is required (exactly_once, at_least_once, "
                  "no_cross_rank_overlap or expected_padding)");
        return TPT_EXIT_USAGE;
    }
    if (strcmp(policy_s, "exactly_once") && strcmp(policy_s, "at_least_once") &&
        strcmp(policy_s, "no_cross_rank_overlap") && strcmp(policy_s, "expected_padding")) {
        tpt_error("coverage: unknown policy '%s'", policy_s);
        return TPT_EXIT_USAGE;
    }
    if (universe_s && universe_file) {
        tpt_error("coverage: give --universe or --universe-file, not both");
        return TPT_EXIT_USAGE;
    }
    if ((padding_s || exact_s) && strcmp(policy_s, "expected_padding") != 0) {
        tpt_error("coverage: --%s goes with --policy expected_padding",
                  padding_s ? "padding" : "padding-exact");
        return TPT_EXIT_USAGE;
    }
    if ((universe_s && count("universe", universe_s, 0, universe) != 0) ||
        (padding_s && count("padding", padding_s, 0, padding) != 0) ||
        (epochs_s && count("epochs", epochs_s, 1, epochs) != 0) ||
        (loader_s && count("loader", loader_s, 0, loader) != 0) ||
        (examples_s && count("examples", examples_s, 0, examples) != 0))
        return TPT_EXIT_USAGE;
    return -1;
}

/* write_file writes n bytes of s to path; -1 (errno set) on failure. */
static int write_file(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "w");
    int rc;
    if (f == NULL) return -1;
    rc = fwrite(s, 1, n, f) == n ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    return rc;
}

/* evidence asks the daemon for every ID's occurrences and writes them to
 * path.  A run that could not be audited has none: that is said, and the
 * verdict's status stands.  -1 when the file cannot be written. */
static int evidence(tpt_client *c, int64_t run, const char *path)
{
    char err[TPT_ERR_LEN];
    tp_buf req, rep;
    const char *s;
    uint32_t n;
    int rc = 0;
    tp_buf_init(&req);
    tp_buf_init(&rep);
    tpt_req_evidence(&req, "coverage");
    tpt_arg_int(&req, TPA_evidence_run, run);
    if (tpt_client_call(c, &req, &rep, err) != TP_OK) {
        tpt_progress("coverage", "no evidence file: %s", err);
        goto out;
    }
    if (tpt_reply_str(&rep, TPR_evidence_evidence, &s, &n) != TP_OK) {
        tpt_error("coverage: the daemon's evidence reply holds no evidence");
        rc = -1;
        goto out;
    }
    if (write_file(path, s, n) != 0) {
        tpt_error("coverage: cannot write %s: %s", path, strerror(errno));
        rc = -1;
        goto out;
    }
    tpt_progress("coverage", "evidence: %s", path);
out:
    tp_buf_free(&req);
    tp_buf_free(&rep);
    return rc;
}

int tpt_cmd_coverage(int argc, char **argv)
{
    char err[TPT_ERR_LEN], *sample = NULL, *par = NULL;
    char *env[3] = {"TRAINPARITY_DIGEST=induction", NULL, NULL};
    long long universe, padding, epochs, loader, examples;
    tpt_session *s = NULL;
    tpt_exec_result res;
    tpt_exec_spec es;
    int64_t *ids = NULL, run;
    size_t nids = 0;
    tpt_opts o;
    int st;

    if ((st = parse(argc, argv, &o, &universe, &padding, &epochs, &loader, &examples)) >= 0)
        return st;
    if (universe_file && read_ids(universe_file, &ids, &nids) != 0) return TPT_EXIT_USAGE;
    st =
        params(policy_s, o.sample_id, universe, ids, nids, padding, epochs, loader, examples, &par);
    free(ids);
    if (st != 0) return st;
    if (o.sample_id && asprintf(&sample, "TRAINPARITY_SAMPLE_ID=%s", o.sample_id) < 0) {
        tpt_error("coverage: out of memory");
        free(par);
        return TPT_EXIT_ERROR;
    }
    if (tpt_session_open(&s, err) != TP_OK) {
        tpt_error("%s", err);
        free(par);
        free(sample);
        return TPT_EXIT_ERROR;
    }
    env[1] = sample;
    st = TPT_EXIT_ERROR;
    if (tpt_run_create(tpt_session_client(s), o.name, "coverage", par, &run, err) != TP_OK) {
        tpt_error("cannot create a run: %s", err);
        goto done;
    }
    tpt_progress("coverage", "run %lld", (long long)run);
    memset(&es, 0, sizeof es);
    es.role = "coverage";
    es.argv = o.cmd;
    es.env = env;
    if (tpt_exec_one(s, "coverage", run, &es, &res) != 0) goto done;
    st = tpt_judge(tpt_session_client(s), run, NULL, &o);
    if (evidence_f && evidence(tpt_session_client(s), run, evidence_f) != 0) st = TPT_EXIT_ERROR;
done:
    if (tpt_session_close(s, err) != TP_OK) tpt_error("%s", err);
    free(par);
    free(sample);
    return st;
}
