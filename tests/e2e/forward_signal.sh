#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# forward_signal.sh -- signals sent to trainparity-run reach the command; the
# record still completes and the daemon is stopped.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

for sig in TERM USR1; do
    rm -f "$WORK/ready"
    "$TP_RUN" record -- sh -c "trap 'exit 5' $sig; touch ready; while :; do sleep 0.05; done" \
        >"$WORK/out" 2>"$WORK/err" &
    pid=$!
    wait_for_file "$WORK/ready"
    kill -"$sig" "$pid"
    wait "$pid"
    st=$?
    [ "$st" = 5 ] || fail "SIG$sig: record exited $st, want the command's 5: $(cat "$WORK/err")"
    expect_grep '^run [0-9]+$' "$WORK/out"
    expect_no_daemon
done

# A command that does not catch the signal dies of it: 128 + N.
"$TP_RUN" record -- sh -c 'touch ready2; while :; do sleep 0.05; done' >"$WORK/out" 2>&1 &
pid=$!
wait_for_file "$WORK/ready2"
kill -TERM "$pid"
wait "$pid"
st=$?
[ "$st" = 143 ] || fail "uncaught SIGTERM: record exited $st, want 143"
expect_no_daemon
