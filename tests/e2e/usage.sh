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
expect_status 64 "$TP_RUN" health --min-loss-decrease 1 -- true
expect_grep "min-loss-decrease wants a fraction between 0 and 1" "$WORK/err"
expect_status 64 "$TP_RUN" health --min-loss-decrease 0 -- true
expect_status 64 "$TP_RUN" health --min-loss-decrease half -- true
expect_status 64 "$TP_RUN" health --every 0 -- true
expect_grep "every wants a whole number >= 1" "$WORK/err"
expect_status 64 "$TP_RUN" health --every 2.5 -- true
expect_status 64 "$TP_RUN" health --lr-expect "$WORK/nosuch.lrs" -- true
expect_grep "cannot read $WORK/nosuch.lrs" "$WORK/err"
# bad_lrs CONTENT PATTERN: --lr-expect on a file holding CONTENT (printf
# format) is a usage error whose message matches PATTERN.
bad_lrs() {
    printf "$1" >"$WORK/bad.lrs"
    expect_status 64 "$TP_RUN" health --lr-expect "$WORK/bad.lrs" -- true
    expect_grep "$2" "$WORK/err"
}
bad_lrs '# a comment\n\n0 0.1 # group 0\nstep1 0.1\n' "bad.lrs:4: 'step1' is not a step"
bad_lrs '0 0.1\n1 fast\n' "bad.lrs:2: 'fast' is not a learning rate"
bad_lrs '0 nan\n' "'nan' is not a learning rate"
bad_lrs '0 0.1\n1\n' "bad.lrs:2: step 1 has no learning rate"
bad_lrs '0 0.1\n1 0.1\n0 0.2\n' "bad.lrs:3: step 0 is declared twice \\(first at line 1\\)"
bad_lrs '# nothing\n\n' "bad.lrs declares no step"
expect_status 64 "$TP_RUN" compare -- true
expect_grep "compare: --against NAME\|RUN_ID is required" "$WORK/err"
expect_status 64 "$TP_RUN" compare --against golden --rtol x -- true

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
