/* SPDX-License-Identifier: MIT
 * main.c -- trainparity-run: dispatch to a subcommand.  A subcommand is one
 * entry of the table below (name, function, one line of help). */
#include <stdio.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/base/launch.h"
#include "tools/client/daemon.h"
#include "tools/cmd/cmds.h"
#include "tp_version.h"

typedef struct subcmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *help;
} subcmd;

static const subcmd subcmds[] = {
    {"record", tpt_cmd_record, "run a command under the agent and store what it did"},
    {"resume", tpt_cmd_resume,
     "resume parity: an interrupted and resumed run matches an uninterrupted one"},
    {"accum", tpt_cmd_accum, "gradient-accumulation parity: micro-batches match the full batch"},
    {"coverage", tpt_cmd_coverage, "sample coverage: each sample seen as the policy says"},
    {"health", tpt_cmd_health, "training health: loss, gradients, updates, mixed precision"},
    {"compare", tpt_cmd_compare, "golden-run regression: a command against a recorded run"},
    {"join", tpt_cmd_join,
     "run, on this host, the executions of a check another host runs with --listen"},
};
#define NSUB (sizeof(subcmds) / sizeof(subcmds[0]))

int tpt_cmd_opts(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o)
{
    int st = tpt_opts_cli(spec, argc, argv, o);
    if (st < 0 && o->listen != NULL) tpt_daemon_listen(o->listen);
    return st;
}

static void usage(FILE *f)
{
    size_t i;
    fprintf(f,
            "usage: %s SUBCOMMAND [options] -- CMD...\n\n"
            "Differential tests of PyTorch training semantics for unmodified training code.\n\n"
            "subcommands:\n",
            TPT_PROG);
    for (i = 0; i < NSUB; i++) fprintf(f, "  %-10s %s\n", subcmds[i].name, subcmds[i].help);
    fprintf(f,
            "\nexit status: 0 PASS, 1 FAIL, 2 ABSTAIN, 3 ERROR, 64 usage "
            "(record: the command's own);\n"
            "a check that SIGINT, SIGTERM, SIGHUP or SIGQUIT stopped ends as killed by it.\n"
            "'%s SUBCOMMAND --help' describes a subcommand's options.\n",
            TPT_PROG);
}

int main(int argc, char **argv)
{
    size_t i;
    tpt_clock_start();
    if (argc < 2) {
        usage(stderr);
        return TPT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return TPT_EXIT_PASS;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("%s %s\n", TPT_PROG, TP_VERSION);
        return TPT_EXIT_PASS;
    }
    for (i = 0; i < NSUB; i++) {
        if (strcmp(argv[1], subcmds[i].name) == 0) {
            int st = subcmds[i].run(argc - 1, argv + 1), sig = tpt_launch_stopped();
            /* A check (or join) told to stop ends as the signal would have
             * ended it; record exits with its command's status, whatever
             * the command made of the signal. */
            if (sig != 0 && subcmds[i].run != tpt_cmd_record) tpt_die_of(sig);
            return st;
        }
    }
    tpt_error("unknown subcommand '%s'", argv[1]);
    fprintf(stderr, "(see '%s --help')\n", TPT_PROG);
    return TPT_EXIT_USAGE;
}
