#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rng_state_held.sh -- a torch RNG state the checkpoint holds as a list of
# ints (torch_rng_as_list.py), set back with set_rng_state from that list
# and then drawn from before the first step, is a restore to a different
# state, traced to the checkpoint: never "a state that no file of I's
# holds".  (That an RNG state is held whatever container carries it, and
# named as not restored when R never sets it, the rows of the fixtures
# *_rng_*_not_restored.py and python_random_not_restored.py say:
# fixtures/why.tsv.)
TP_NAME=rng_state_held
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

cat >torch_rng_as_list_drawn.py <<'EOF'
import torch

from torch_rng_as_list import TorchRngAsList


class Drawn(TorchRngAsList):
    def restore_torch(self, state):
        super().restore_torch(state)
        torch.rand(1)  # a draw between the restore and the first step


Drawn().main()
EOF
expect_status 1 "$TP_RUN" resume --resume-args --resume -- "$py" torch_rng_as_list_drawn.py
expect_grep "^first divergence .* rng\\.torch_cpu\$" "$WORK/out"
expect_grep "rng\\.torch_cpu was restored after loading, but to a different state" "$WORK/out"
grep -q 'put back a state that no file of I.s holds' "$WORK/out" &&
    fail "a torch state restored from a list in the checkpoint was traced elsewhere: $(cat "$WORK/out")"
exit 0
