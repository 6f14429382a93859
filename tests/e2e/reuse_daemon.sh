#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# reuse_daemon.sh -- a second record in the same project reuses the private
# daemon the first one started and leaves it to the first, which stops it.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

"$TP_RUN" record -- sh -c 'touch started; while [ ! -e release ]; do sleep 0.05; done' \
    >"$WORK/first.out" 2>"$WORK/first.err" &
first=$!
wait_for_file "$WORK/started"
pid_before=$(tp_strays)
[ -n "$pid_before" ] || fail "no daemon runs while the first record runs"

expect_status 0 "$TP_RUN" record -- true
expect_grep '^run 2$' "$WORK/out"
[ "$(tp_strays)" = "$pid_before" ] || fail "the second record changed the daemon"

touch "$WORK/release"
wait "$first"
st=$?
[ "$st" = 0 ] || fail "first record exited $st: $(cat "$WORK/first.err")"
expect_grep '^run 1$' "$WORK/first.out"
expect_no_daemon
