#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# external_daemon.sh -- with TRAINPARITY_DAEMON set, record uses that daemon,
# starts none of its own and leaves it running; a URL where nothing answers
# is a clear error.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

mkdir -m 0700 "$WORK/ext" "$WORK/proj"
"$TP_DAEMON" serve --db "$WORK/ext/runs.db" --listen "ipc://$WORK/ext/ingest.ipc" \
    2>"$WORK/ext/log" &
dpid=$!
wait_for_file "$WORK/ext/ingest.ipc.ctl"

cd "$WORK/proj" || fail "cd"
export TRAINPARITY_DAEMON=ipc://$WORK/ext/ingest.ipc
expect_status 0 "$TP_RUN" record -- sh -c 'echo "$TRAINPARITY_DAEMON $TRAINPARITY_CONTROL"'
expect_grep "^ipc://$WORK/ext/ingest.ipc ipc://$WORK/ext/ingest.ipc.ctl$" "$WORK/out"
expect_grep '^run 1$' "$WORK/out"
kill -0 "$dpid" 2>/dev/null || fail "record stopped the daemon it did not start"
expect_status 4 "$TP_RUN" record -- sh -c 'exit 4'
expect_grep '^run 2$' "$WORK/out"
kill -0 "$dpid" 2>/dev/null || fail "record stopped the daemon it did not start"
[ ! -e "$WORK/proj/.trainparity/runs.db" ] || fail "record made a private database"
[ ! -e "$WORK/proj/.trainparity/daemon.log" ] || fail "record started a private daemon"

# An explicit TRAINPARITY_CONTROL wins over the derived one.
TRAINPARITY_CONTROL=ipc://$WORK/ext/ingest.ipc.ctl expect_status 0 "$TP_RUN" record -- true
expect_grep '^run 3$' "$WORK/out"

export TRAINPARITY_DAEMON=ipc://$WORK/ext/nothing.ipc
expect_status 3 "$TP_RUN" record -- true
expect_grep "no daemon answers at ipc://$WORK/ext/nothing.ipc.ctl" "$WORK/err"
export TRAINPARITY_DAEMON=bogus://x
expect_status 3 "$TP_RUN" record -- true
expect_grep 'TRAINPARITY_DAEMON=bogus://x' "$WORK/err"
unset TRAINPARITY_DAEMON

kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/ext/log")"
kill -TERM "$dpid"
wait "$dpid"
"$TP_DAEMON" query --db "$WORK/ext/runs.db" runs >"$WORK/q" 2>&1 ||
    fail "query runs failed: $(cat "$WORK/q")"
expect_grep '^3[[:space:]]' "$WORK/q"
