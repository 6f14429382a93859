#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rng_state_held.sh -- an RNG state is held by the checkpoint whatever
# container carries it: a NumPy state saved as a dict {"keys": list, "pos": n},
# or with each field of the tuple under its own name ("position", the Gaussian
# cache: numpy_rng_as_lists_not_restored.py), that R loads but never sets is
# named as not restored, never as missing from the checkpoint; the tuple the RNG returns (numpy_rng_not_restored.py) and
# Python's random state (python_random_not_restored.py) are still held.  So
# is the torch state saved as a list of ints (torch_rng_as_list_not_restored.py),
# and a set_rng_state from that list is traced to the checkpoint: a draw
# between the restore and the first step is a restore to a different state.
TP_NAME=rng_state_held
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

for f in numpy_rng_in_dict_not_restored numpy_rng_as_lists_not_restored numpy_rng_not_restored \
    python_random_not_restored torch_rng_as_list_not_restored; do
    case $f in
    python_*) rng=python call=random\\.setstate ;;
    torch_*) rng=torch_cpu call=torch\\.set_rng_state ;;
    *) rng=numpy call=numpy\\.random\\.set_state ;;
    esac
    expect_status 1 "$TP_RUN" resume --resume-args --resume -- "$py" $f.py
    expect_grep "^first divergence .* rng\\.$rng\$" "$WORK/out"
    expect_grep "rng\\.$rng was not restored after loading: no $call after the checkpoint load" "$WORK/out"
    grep -q 'does not hold the RNG state' "$WORK/out" &&
        fail "$f: an RNG state the checkpoint holds was reported missing: $(cat "$WORK/out")"
    grep -q 'put back a state that no file of I.s holds' "$WORK/out" &&
        fail "$f: a restore from the checkpoint was traced elsewhere: $(cat "$WORK/out")"
done

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
