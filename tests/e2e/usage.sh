#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# usage.sh -- usage errors exit 64 with a message on stderr and start
# nothing; --help exits 0 for the program and every subcommand.
. "$(dirname "$0")/lib.sh"
tp_setup

expect_status 64 "$TP_RUN"
expect_grep 'usage:' "$WORK/err"
expect_status 64 "$TP_RUN" record
expect_grep 'no command given' "$WORK/err"
expect_status 64 "$TP_RUN" record --
expect_status 64 "$TP_RUN" record --bogus -- true
expect_grep "unknown option '--bogus'" "$WORK/err"
expect_status 64 "$TP_RUN" record true
expect_grep 'after --' "$WORK/err"
expect_status 64 "$TP_RUN" record --name
expect_status 64 "$TP_RUN" record --capture everything -- true
expect_status 64 "$TP_RUN" nosuch
expect_grep "unknown subcommand 'nosuch'" "$WORK/err"
expect_status 64 "$TP_RUN" resume
expect_status 64 "$TP_RUN" resume --at soon -- true
expect_grep "wants a step number" "$WORK/err"
expect_status 64 "$TP_RUN" resume --resume-cmd a --resume-args b -- true
expect_grep "not both" "$WORK/err"
expect_status 64 "$TP_RUN" resume --resume-args "'unterminated" -- true
expect_status 64 "$TP_RUN" coverage -- true
expect_grep "policy is required" "$WORK/err"
expect_status 64 "$TP_RUN" coverage --policy sometimes -- true
expect_grep "unknown policy" "$WORK/err"
expect_status 64 "$TP_RUN" coverage --policy exactly_once --universe ten -- true
expect_status 64 "$TP_RUN" coverage --policy exactly_once --padding 2 -- true
expect_status 64 "$TP_RUN" coverage --policy exactly_once --bogus -- true
expect_status 64 "$TP_RUN" accum --reference true -- true
expect_grep "micro N is required" "$WORK/err"
expect_status 64 "$TP_RUN" accum --micro 4 -- true
expect_grep "reference CMD_FULL is required" "$WORK/err"
expect_status 64 "$TP_RUN" accum --micro 0 --reference true -- true
expect_status 64 "$TP_RUN" accum --micro 4 --updates x --reference true -- true
expect_status 64 "$TP_RUN" accum --micro 4 --reference true --bogus -- true
expect_status 64 "$TP_RUN" health
expect_grep 'no command given' "$WORK/err"
expect_status 64 "$TP_RUN" health --max-grad-norm x -- true
expect_grep "max-grad-norm wants a number" "$WORK/err"
expect_status 64 "$TP_RUN" health --max-grad-norm 0 -- true
expect_status 64 "$TP_RUN" health --bogus -- true
for sub in compare; do
    expect_status 64 "$TP_RUN" "$sub" -- true
    expect_grep "'$sub' is not available yet" "$WORK/err"
done

expect_status 0 "$TP_RUN" --help
expect_grep '^usage:' "$WORK/out"
expect_status 0 "$TP_RUN" -h
for sub in record resume accum coverage health compare; do
    expect_status 0 "$TP_RUN" "$sub" --help
    expect_grep "^usage: trainparity-run $sub" "$WORK/out"
    expect_status 0 "$TP_RUN" "$sub" -h
done
expect_status 0 "$TP_RUN" record --name x --help

[ ! -e "$WORK/.trainparity" ] || fail "a usage error created .trainparity"
expect_no_daemon
