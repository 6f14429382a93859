#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# record_signal.sh -- a command killed by a signal: record exits 128+N and
# the run says which signal.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

expect_status 137 "$TP_RUN" record -- sh -c 'kill -9 $$'
expect_grep '^run 1$' "$WORK/out"
expect_no_daemon
tp_query run 1 >"$WORK/q" 2>&1 || fail "query run 1 failed: $(cat "$WORK/q")"
expect_grep 'signal[^0-9]*9([^0-9]|$)' "$WORK/q"
