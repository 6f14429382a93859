/* SPDX-License-Identifier: MIT
 * cmds.h -- trainparity-run's subcommands.  Each takes the arguments after
 * the program name (argv[0] is the subcommand's name) and returns the
 * process exit status.  main.c lists them in its dispatch table. */
#ifndef TP_TOOLS_CMD_CMDS_H
#define TP_TOOLS_CMD_CMDS_H

#include "tools/base/opts.h"

/* tpt_cmd_opts parses a subcommand's options as tpt_opts_cli does (its
 * return value), and hands --listen to the daemon's lifecycle
 * (tpt_daemon_listen, tools/client/daemon.h). */
int tpt_cmd_opts(const tpt_cmdspec *spec, int argc, char **argv, tpt_opts *o);

/* record: run a command under the agent and store what it did. */
int tpt_cmd_record(int argc, char **argv);

/* resume: resume parity of a training script. */
int tpt_cmd_resume(int argc, char **argv);

/* accum: gradient-accumulation parity of a micro-batch and a full-batch command. */
int tpt_cmd_accum(int argc, char **argv);

/* coverage: sample coverage across ranks against a declared policy. */
int tpt_cmd_coverage(int argc, char **argv);

/* health: training health of one run (non-finite values, updates that move
 * nothing, gradient norms). */
int tpt_cmd_health(int argc, char **argv);

/* compare: golden-run regression of a command against a recorded run. */
int tpt_cmd_compare(int argc, char **argv);

/* join: follow, on this host, the executions of a check another host runs
 * with --listen (a PyTorchJob's worker pods). */
int tpt_cmd_join(int argc, char **argv);

#endif
