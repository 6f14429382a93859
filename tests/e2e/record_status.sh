#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# record_status.sh -- record exits with its command's status, stores it,
# prints the run id, and stops the daemon it started.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

expect_status 3 "$TP_RUN" record -- sh -c 'exit 3'
expect_grep '^run 1$' "$WORK/out"
[ ! -s "$WORK/err" ] || fail "record wrote to stderr (not a terminal): $(cat "$WORK/err")"
expect_no_daemon
tp_query run 1 >"$WORK/q" 2>&1 || fail "query run 1 failed: $(cat "$WORK/q")"
expect_grep 'status[^0-9]*3([^0-9]|$)' "$WORK/q"

expect_status 0 "$TP_RUN" record --name second -- true
expect_grep '^run 2$' "$WORK/out"
expect_no_daemon
