#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rng_state_held.sh -- an RNG state is held by the checkpoint whatever
# container carries it: a NumPy state saved as a dict {"keys": list, "pos": n}
# that R loads but never sets is named as not restored, never as missing from
# the checkpoint; the tuple the RNG returns (numpy_rng_not_restored.py) and
# Python's random state (python_random_not_restored.py) are still held.
TP_NAME=rng_state_held
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

for f in numpy_rng_in_dict_not_restored numpy_rng_not_restored python_random_not_restored; do
    case $f in
    python_*) rng=python call=random\\.setstate ;;
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
exit 0
