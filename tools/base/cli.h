/* SPDX-License-Identifier: MIT
 * cli.h -- what every trainparity-run subcommand shares at the terminal:
 * exit statuses, the clocks, error and progress lines on stderr, command
 * display. */
#ifndef TP_TOOLS_BASE_CLI_H
#define TP_TOOLS_BASE_CLI_H

#include <stddef.h>
#include <stdint.h>

#define TPT_PROG "trainparity-run"

/* Exit statuses (docs/architecture.md); record returns its command's own. */
#define TPT_EXIT_PASS     0
#define TPT_EXIT_FAIL     1
#define TPT_EXIT_ABSTAIN  2
#define TPT_EXIT_ERROR    3
#define TPT_EXIT_USAGE    64
#define TPT_EXIT_NOEXEC   126 /* the command exists but cannot be executed */
#define TPT_EXIT_NOTFOUND 127 /* the command was not found */

/* tpt_clock_start marks the start of the check; main calls it first.
 * tpt_started_ago_ns is the time since then on the monotonic clock, or -1
 * when it was never marked.  The daemon dates the run from it (run.create),
 * so a report's wall time covers the whole of trainparity-run's work. */
void tpt_clock_start(void);
int64_t tpt_started_ago_ns(void);

/* tpt_now_ms is the monotonic clock in milliseconds, for deadlines. */
long long tpt_now_ms(void);
/* tpt_sleep_ms sleeps ms milliseconds, the whole of them across signals. */
void tpt_sleep_ms(int ms);

/* tpt_error prints "trainparity-run: <message>" on stderr. */
void tpt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tpt_progress prints "[tag] <message>" on stderr when stderr is a
 * terminal, and nothing otherwise. */
void tpt_progress(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tpt_outcome_status maps a verdict's outcome ("PASS", ...) to its exit
 * status; anything else (NULL included) is TPT_EXIT_ERROR. */
int tpt_outcome_status(const char *outcome);

/* tpt_write_report writes a check's JSON report to path ("{}" when json is
 * NULL); on failure it says so on stderr and returns -1. */
int tpt_write_report(const char *path, const char *json);

/* tpt_argv_join writes argv (NULL-terminated) as a shell would read it back,
 * quoting words that need it, into out (n bytes; truncated with "..."). */
void tpt_argv_join(char *const argv[], char *out, size_t n);

#endif
