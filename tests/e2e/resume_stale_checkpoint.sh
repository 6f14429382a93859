#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_stale_checkpoint.sh -- a script that resumes on its own, started
# with a checkpoint of an earlier run already in place: the baselines load a
# checkpoint they did not write, which is an ERROR naming that file, before
# any other complaint about them (a finished run's checkpoint leaves nothing
# to train: "ran no optimizer step" would hide the cause).  The file existed
# before trainparity-run started, so it is never moved, even when the
# baselines write to it.
TP_NAME=resume_stale_checkpoint
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/_loop.py "$root"/fixtures/resume/buffer_checkpoint.py \
    "$root"/fixtures/resume/auto_resume.py . || fail "cannot copy the fixtures"

# An earlier run, without the agent, stopped after its save at step 4: the
# baselines resume from it, train on and save over it (a buffer's bytes
# written to ckpt/last.ckpt).
"$py" -c 'import _loop; _loop.Trainer.steps = 4; exec(open("buffer_checkpoint.py").read())' \
    >/dev/null || fail "cannot write the earlier run's checkpoint"
[ -f ckpt/last.ckpt ] || fail "the earlier run saved no ckpt/last.ckpt"
ino=$(stat -c %i ckpt/last.ckpt)
expect_status 3 "$TP_RUN" resume -- "$py" buffer_checkpoint.py
expect_grep '^resume: ERROR' "$WORK/out"
expect_grep "A \(uninterrupted\) loaded $WORK/ckpt/last\.ckpt, a checkpoint it did not write" "$WORK/out"
[ "$(stat -c %i ckpt/last.ckpt 2>/dev/null)" = "$ino" ] ||
    fail "the earlier run's ckpt/last.ckpt was moved: $(find . -name last.ckpt)"
[ -z "$(find .trainparity/runs -name last.ckpt 2>/dev/null)" ] ||
    fail "a baseline's aside holds the earlier run's file: $(find .trainparity/runs -type f)"

# A finished run's checkpoint saved to a path: the baselines load it and run
# no step; the load is what is reported.
"$py" auto_resume.py >/dev/null || fail "cannot write the earlier run's checkpoint"
[ -f out-auto/ckpt.pt ] || fail "the earlier run saved no out-auto/ckpt.pt"
cp out-auto/ckpt.pt stale.copy
expect_status 3 "$TP_RUN" resume -- "$py" auto_resume.py
expect_grep "A \(uninterrupted\) loaded $WORK/out-auto/ckpt\.pt, a checkpoint it did not write" "$WORK/out"
grep -q 'ran no optimizer step' "$WORK/out" && fail "the stale load was not named first: $(cat "$WORK/out")"
cmp -s out-auto/ckpt.pt stale.copy || fail "the earlier run's out-auto/ckpt.pt was moved or changed"
exit 0
