#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spool.sh -- after an execution, its spool files (<exec>-*.spool) are
# ingested once and moved to spool/done/; other executions' files are left.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

mkdir -p -m 0700 "$WORK/.trainparity/spool"
: >"$WORK/.trainparity/spool/99-1.spool"
expect_status 0 "$TP_RUN" record -- sh -c ': >"$TRAINPARITY_SPOOL/${TRAINPARITY_EXEC}-$$.spool"'
expect_grep '^run 1$' "$WORK/out"
ls "$WORK/.trainparity/spool/done/"1-*.spool >/dev/null 2>&1 ||
    fail "the execution's spool file was not moved to done/: $(ls -R "$WORK/.trainparity/spool")"
ls "$WORK/.trainparity/spool/"1-*.spool >/dev/null 2>&1 &&
    fail "the execution's spool file is still waiting"
[ -e "$WORK/.trainparity/spool/99-1.spool" ] || fail "another execution's spool file was taken"
[ "$(stat -c %a "$WORK/.trainparity/spool")" = 700 ] || fail "spool directory is not 0700"
[ "$(stat -c %a "$WORK/.trainparity")" = 700 ] || fail ".trainparity is not 0700"
expect_no_daemon
