/* SPDX-License-Identifier: MIT
 * opts.c -- shared option parsing and usage text for the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/base/errbuf.h"
#include "tools/base/opts.h"

typedef struct common {
    unsigned bit;
    const char *name, *arg, *help;
} common;

static const common commons[] = {
    {TPT_O_NAME, "name", "NAME", "label the run NAME"},
    {TPT_O_CAPTURE, "capture", "WHAT", "digests (default) or values: also store tensor bytes"},
    {TPT_O_RTOL, "rtol", "X", "declared relative tolerance (default: exact; accum: 1e-4)"},
    {TPT_O_ATOL, "atol", "X", "declared absolute tolerance (default: exact; accum: 1e-6)"},
    {TPT_O_SAMPLE_ID, "sample-id", "EXPR",
     "a Python expression over `batch` giving its sample IDs, for datasets that carry them "
     "(an IterableDataset); default: the sampler's indices"},
    {TPT_O_LISTEN, "listen", "URL",
     "tcp://HOST:PORT: the daemon listens there too, with a token, for processes on other "
     "hosts (docs/multinode.md)"},
    {TPT_O_JSON, "json", "FILE", "write a JSON report to FILE"},
    {TPT_O_JUNIT, "junit", "FILE", "write a JUnit XML report to FILE"},
    {TPT_O_HTML, "html", "FILE", "write an HTML report to FILE"},
};
#define NCOMMON (sizeof(commons) / sizeof(commons[0]))

static tp_err tolerance(const char *opt, const char *v, double *out, bool *set, char *err)
{
    char *end;
    double x;
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x < 0)
        return tpt_seterr(err, TP_EINVAL, "--%s wants a number >= 0, not '%s'", opt, v);
    *out = x;
    *set = true;
    return TP_OK;
}

/* store puts the value of common option bit into o. */
static tp_err store(tpt_opts *o, unsigned bit, const char *v, char *err)
{
    switch (bit) {
    case TPT_O_NAME:
        o->name = v;
        break;
    case TPT_O_CAPTURE:
        if (strcmp(v, "digests") != 0 && strcmp(v, "values") != 0)
            return tpt_seterr(err, TP_EINVAL, "--capture wants 'digests' or 'values', not '%s'", v);
        o->capture = v;
        break;
    case TPT_O_JSON:
        o->json = v;
        break;
    case TPT_O_JUNIT:
        o->junit = v;
        break;
    case TPT_O_HTML:
        o->html = v;
        break;
    case TPT_O_SAMPLE_ID:
        if (v[0] == '\0')
            return tpt_seterr(err, TP_EINVAL, "--sample-id wants a Python expression");
        o->sample_id = v;
        break;
    case TPT_O_LISTEN:
        if (strncmp(v, "tcp://", 6) != 0)
            return tpt_seterr(err, TP_EINVAL, "--listen wants tcp://HOST:PORT, not '%s'", v);
        o->listen = v;
        break;
    case TPT_O_RTOL:
        return tolerance("rtol", v, &o->rtol, &o->rtol_set, err);
    case TPT_O_ATOL:
        return tolerance("atol", v, &o->atol, &o->atol_set, err);
    }
    return TP_OK;
}

static int name_is(const char *opt, size_t n, const char *name)
{
    return strlen(name) == n && strncmp(opt, name, n) == 0;
}

tp_err tpt_opts_parse(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o, char *err)
{
    int i;

    memset(o, 0, sizeof(*o));
    o->capture = "digests";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *eq, *val, *metavar = NULL;
        const tpt_optx *x = NULL;
        unsigned bit = 0;
        size_t n, k;

        if (strcmp(a, "--") == 0) {
            o->cmd = argv + i + 1;
            o->ncmd = argc - i - 1;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            return TP_OK;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (a[0] == '-' && a[1] != '\0')
                return tpt_seterr(err, TP_EINVAL, "unknown option '%s'", a);
            if (!(spec->accept & TPT_O_ARGS))
                return tpt_seterr(err, TP_EINVAL, "unexpected argument '%s'%s", a,
                                  (spec->accept & TPT_O_CMD) ? " (put the command after --)" : "");
            if (o->args == NULL) o->args = argv + i;
            o->nargs++; /* positional arguments stay contiguous only if not interleaved */
            if (o->args + o->nargs - 1 != argv + i)
                return tpt_seterr(err, TP_EINVAL, "put options before or after all arguments");
            continue;
        }
        a += 2;
        eq = strchr(a, '=');
        n = eq != NULL ? (size_t)(eq - a) : strlen(a);
        for (k = 0; k < NCOMMON && bit == 0; k++)
            if ((spec->accept & commons[k].bit) && name_is(a, n, commons[k].name)) {
                bit = commons[k].bit;
                metavar = commons[k].arg;
            }
        for (k = 0; bit == 0 && x == NULL && spec->extra != NULL && spec->extra[k].name; k++)
            if (name_is(a, n, spec->extra[k].name)) {
                x = &spec->extra[k];
                metavar = x->arg;
            }
        if (bit == 0 && x == NULL)
            return tpt_seterr(err, TP_EINVAL, "unknown option '%s'", argv[i]);
        if (metavar == NULL) { /* a flag */
            if (eq != NULL)
                return tpt_seterr(err, TP_EINVAL, "option '--%.*s' takes no value", (int)n, a);
            *x->val = "1";
            continue;
        }
        if (eq != NULL) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0)
                return tpt_seterr(err, TP_EINVAL, "option '--%s' wants a value (%s)", a, metavar);
            val = argv[++i];
        }
        if (bit != 0) {
            tp_err rc = store(o, bit, val, err);
            if (rc != TP_OK) return rc;
        } else {
            *x->val = val;
        }
    }
    if ((spec->accept & TPT_O_CMD) && o->ncmd == 0)
        return tpt_seterr(err, TP_EINVAL, "no command given (put it after --)");
    if (!(spec->accept & TPT_O_CMD) && o->cmd != NULL)
        return tpt_seterr(err, TP_EINVAL, "'%s' takes no command after --", spec->name);
    return TP_OK;
}

static void option_line(FILE *f, const char *name, const char *arg, const char *help)
{
    char left[64];
    snprintf(left, sizeof(left), "--%s%s%s", name, arg ? " " : "", arg ? arg : "");
    fprintf(f, "  %-20s %s\n", left, help);
}

void tpt_opts_usage(const tpt_cmdspec *spec, FILE *f)
{
    size_t k;
    fprintf(f, "usage: %s %s %s\n\n%s\n\noptions:\n", TPT_PROG, spec->name, spec->synopsis,
            spec->summary);
    for (k = 0; k < NCOMMON; k++)
        if (spec->accept & commons[k].bit)
            option_line(f, commons[k].name, commons[k].arg, commons[k].help);
    for (k = 0; spec->extra != NULL && spec->extra[k].name != NULL; k++)
        option_line(f, spec->extra[k].name, spec->extra[k].arg, spec->extra[k].help);
    option_line(f, "help", NULL, "show this help");
}

int tpt_opts_cli(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o)
{
    char err[TPT_ERR_LEN];
    if (tpt_opts_parse(spec, argc, argv, o, err) != TP_OK) {
        tpt_error("%s: %s", spec->name, err);
        fprintf(stderr, "usage: %s %s %s\n(see '%s %s --help')\n", TPT_PROG, spec->name,
                spec->synopsis, TPT_PROG, spec->name);
        return TPT_EXIT_USAGE;
    }
    if (o->help) {
        tpt_opts_usage(spec, stdout);
        return TPT_EXIT_PASS;
    }
    return -1;
}
