#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_confined.sh -- moving a baseline's checkpoints aside never touches a
# file outside the working tree: not a checkpoint saved through a symlink
# that leads out of it, not one saved to an absolute path elsewhere, nor the
# files created beside them.  A save's name is the agent's word; the tool
# resolves it first.  The verdict is still judged (here a PASS: the script
# resumes only when told to).
TP_NAME=resume_confined
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
outside=$(mktemp -d "${TMPDIR:-/tmp}/tp-e2e-outside.XXXXXX") || fail "mktemp"
trap 'rm -rf "$outside"; tp_cleanup' EXIT
cp "$root"/fixtures/resume/_loop.py . || fail "cannot copy the fixtures"
ln -s "$outside" link
cat >confined.py <<'PY'
# Saves its checkpoint through ./link (a symlink out of the working tree),
# a second file to an absolute path outside it, and a note beside each.
import os
import sys

import torch
from _loop import Trainer

OUT = os.environ["OUTSIDE"]


class Confined(Trainer):
    def save(self):
        torch.save(self.state(), "link/ckpt.pt")
        with open("link/precious.dat", "w") as f:
            f.write("step %d\n" % self.step)
        torch.save({"step": self.step}, os.path.join(OUT, "abs.pt"))

    def load(self):
        return torch.load("link/ckpt.pt", weights_only=False)


Confined().main()
PY
OUTSIDE=$outside expect_status 0 "$TP_RUN" resume --resume-args --resume -- "$py" confined.py
expect_grep '^resume: PASS' "$WORK/out"
for f in ckpt.pt precious.dat abs.pt; do
    [ -f "$outside/$f" ] || fail "$outside/$f was moved: $(find .trainparity/runs -type f 2>/dev/null)"
done
moved=$(find .trainparity/runs -type f 2>/dev/null)
[ -z "$moved" ] || fail "files from outside the working tree were moved aside: $moved"
exit 0
