#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lightning_stale_checkpoint.sh -- a Lightning script that resumes by itself
# from ckpt/last.ckpt when that file exists, started where an earlier run
# left its ckpt/last.ckpt: the baselines resume from a checkpoint they did
# not write, so the resume cannot be judged.  trainparity-run answers ERROR
# naming that file, and leaves the file at its path.  (From a clean folder
# the same script PASSes: fixtures/expected.tsv, lightning_self_resume.py.)
TP_NAME=lightning_stale_checkpoint
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
"$py" -c 'import lightning' 2>/dev/null || fail "$py has no lightning: run make setup"
tp_setup daemon agent
cp "$root"/fixtures/frameworks/_pl.py "$root"/fixtures/frameworks/_tiny.py "$root"/fixtures/frameworks/lightning_self_resume.py . ||
    fail "cannot copy the fixtures"

# The earlier run, without the agent: one epoch of three, then it stopped.
"$py" lightning_self_resume.py --max-epochs 1 >/dev/null 2>&1 || fail "the earlier run failed"
[ -f ckpt/last.ckpt ] || fail "the earlier run saved no ckpt/last.ckpt"

expect_status 3 "$TP_RUN" resume -- "$py" lightning_self_resume.py
expect_grep '^resume: ERROR' "$WORK/out"
expect_grep "loaded $WORK/ckpt/last\.ckpt, a checkpoint it did not write" "$WORK/out"
# The baselines save over it (Lightning writes a new file and renames it
# onto the old one), but it is never moved away.
[ -f ckpt/last.ckpt ] || fail "ckpt/last.ckpt was moved: $(find . -name 'last*.ckpt')"
expect_no_daemon
exit 0
