/* SPDX-License-Identifier: MIT
 * opts.h -- the options trainparity-run's subcommands share, parsed in one
 * place: a subcommand declares which common options it takes, its own extra
 * options, and whether a command follows "--".
 *
 *   static const tpt_optx extra[] = {{"at", "K", "interrupt after step K", &at}, {0}};
 *   static const tpt_cmdspec spec = {"resume", "[options] -- CMD...", "resume parity",
 *                                    TPT_O_RTOL | TPT_O_ATOL | TPT_O_JSON | TPT_O_CMD, extra};
 *   int st = tpt_opts_cli(&spec, argc, argv, &o);
 *   if (st >= 0) return st;  // --help printed (0) or a usage error printed (64)
 */
#ifndef TP_TOOLS_BASE_OPTS_H
#define TP_TOOLS_BASE_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "proto/tp_err.h"

enum {
    TPT_O_NAME = 1u << 0,      /* --name NAME      a label for the run */
    TPT_O_CAPTURE = 1u << 1,   /* --capture digests|values */
    TPT_O_JSON = 1u << 2,      /* --json FILE      JSON report */
    TPT_O_JUNIT = 1u << 3,     /* --junit FILE     JUnit XML report */
    TPT_O_HTML = 1u << 4,      /* --html FILE      HTML report */
    TPT_O_RTOL = 1u << 5,      /* --rtol X         declared relative tolerance */
    TPT_O_ATOL = 1u << 6,      /* --atol X         declared absolute tolerance */
    TPT_O_CMD = 1u << 7,       /* "-- CMD..." is required */
    TPT_O_ARGS = 1u << 8,      /* positional arguments are allowed before "--" */
    TPT_O_SAMPLE_ID = 1u << 9, /* --sample-id EXPR  the batch's sample IDs */
    TPT_O_LISTEN = 1u << 10,   /* --listen URL     the daemon on the network too */
};

/* A subcommand's own option: --name VALUE (arg is its metavariable) or a
 * flag --name (arg NULL; *val becomes "1").  Arrays end with {0}. */
typedef struct tpt_optx {
    const char *name; /* without "--" */
    const char *arg;  /* "K", or NULL for a flag */
    const char *help;
    const char **val; /* where the value goes (left alone when absent) */
} tpt_optx;

typedef struct tpt_cmdspec {
    const char *name;      /* "record" */
    const char *synopsis;  /* "[options] -- CMD..." */
    const char *summary;   /* one paragraph for --help */
    unsigned accept;       /* TPT_O_* */
    const tpt_optx *extra; /* NULL or {0}-terminated */
} tpt_cmdspec;

typedef struct tpt_opts {
    const char *name;                /* NULL when not given */
    const char *capture;             /* "digests" (default) or "values" */
    const char *json, *junit, *html; /* NULL when not given */
    double rtol, atol;
    bool rtol_set, atol_set;
    const char *sample_id; /* NULL when not given; never empty */
    const char *listen;    /* NULL when not given (tpt_cmd_opts hands it to daemon.h) */
    char **args;           /* positional arguments (TPT_O_ARGS), in argv */
    int nargs;
    char **cmd; /* the command after "--", NULL-terminated, in argv */
    int ncmd;
    bool help; /* -h/--help was given */
} tpt_opts;

/* tpt_opts_parse parses argv[1..argc-1] (argv[0] is the subcommand) into *o
 * by spec; --opt VALUE and --opt=VALUE both work.  Errors (with err):
 * TP_EINVAL for an unknown option, a missing or bad value, an unexpected
 * argument, or a missing command. */
tp_err tpt_opts_parse(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o, char *err);

/* tpt_opts_usage prints spec's usage and options to f. */
void tpt_opts_usage(const tpt_cmdspec *spec, FILE *f);

/* tpt_opts_cli parses as tpt_opts_parse and handles the outcomes every
 * subcommand handles alike: returns 0 after printing the help on stdout,
 * TPT_EXIT_USAGE after printing the error and a hint on stderr, and -1 when
 * the subcommand is to go on with *o. */
int tpt_opts_cli(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o);

#endif
