#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# record_noexec.sh -- a command that cannot be run is a clear error with the
# shell's status (127 not found, 126 not executable), and the daemon that
# record started is shut down all the same.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

expect_status 127 "$TP_RUN" record -- /nonexistent/cmd
expect_grep "^trainparity-run: cannot run '/nonexistent/cmd': No such file or directory$" \
    "$WORK/err"
[ -e "$WORK/.trainparity/daemon.log" ] || fail "record did not start a daemon"
expect_no_daemon

expect_status 127 "$TP_RUN" record -- no-such-command-on-path
expect_grep "cannot run 'no-such-command-on-path'" "$WORK/err"
expect_no_daemon

printf 'echo hi\n' >"$WORK/script"
chmod 0644 "$WORK/script"
expect_status 126 "$TP_RUN" record -- "$WORK/script"
expect_grep "cannot run '.*/script': Permission denied" "$WORK/err"
expect_no_daemon
