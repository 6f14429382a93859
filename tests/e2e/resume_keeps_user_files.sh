#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_keeps_user_files.sh -- moving a baseline's checkpoints aside takes
# the files the execution created beside them, never a file that existed
# before trainparity-run started: the file its output is redirected to and a
# file of the user's that the script appends to, both beside the checkpoint,
# stay where they are.  The verdict is still a PASS.
TP_NAME=resume_keeps_user_files
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/_loop.py . || fail "cannot copy the fixtures"
cat >beside.py <<'PY'
# Resumes on its own from last.ckpt in the working directory; writes
# state.bin beside it with every save and appends to notes.dat every step.
import os

import torch
from _loop import Trainer


class Beside(Trainer):
    def train_step(self):
        super().train_step()
        with open("notes.dat", "ab") as f:
            f.write(b"step %d\n" % self.step)

    def save(self):
        torch.save(self.state(), "last.ckpt")
        with open("state.bin", "wb") as f:
            f.write(b"%d\n" % self.step)

    def load(self):
        return torch.load("last.ckpt", weights_only=False)

    def should_resume(self):
        return os.path.exists("last.ckpt")


Beside().main()
PY
echo "the user's notes" >notes.dat
notes=$(stat -c %i notes.dat)
"$TP_RUN" resume -- "$py" beside.py >out.log 2>err.log
got=$?
[ "$got" = 0 ] || fail "exited $got, want 0 (PASS): $(grep -v '^step' out.log | head -30); $(tail -5 err.log)"
expect_grep '^resume: PASS' out.log
[ "$(stat -c %i notes.dat 2>/dev/null)" = "$notes" ] || fail "notes.dat was moved"
expect_grep "the user's notes" notes.dat
expect_grep '^resume: PASS' out.log
for r in A B; do
    for f in last.ckpt state.bin; do
        [ -f ".trainparity/runs/1/$r/$f" ] || fail "$r's $f was not moved aside: $(find .trainparity/runs -type f)"
    done
done
left=$(find .trainparity/runs -name notes.dat -o -name out.log -o -name err.log)
[ -z "$left" ] || fail "a file that existed before the run was moved aside: $left"
exit 0
