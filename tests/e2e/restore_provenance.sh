#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# restore_provenance.sh -- a restore after the checkpoint load counts as one
# from the checkpoint only when its content came from it: an optimizer that
# reloads its own state (accelerate) and an RNG state kept in memory and put
# back (Lightning's isolate_rng) are named for what they are, with the
# function that made them, never as "loaded, but different".
TP_NAME=restore_provenance
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

expect_status 1 "$TP_RUN" resume --resume-args --resume -- "$py" optimizer_reloads_own_state.py
expect_grep '^first divergence .* optimizer\.state\.' "$WORK/out"
expect_grep 'the optimizer state was never loaded from the checkpoint: the optimizer load_state_dict after the checkpoint load, by __main__\.wrap_optimizer, put back a state that no file of I.s holds' "$WORK/out"
grep -q 'was loaded, but' "$WORK/out" && fail "a reload of the optimizer's own state was taken for the checkpoint's: $(cat "$WORK/out")"

expect_status 1 "$TP_RUN" resume --resume-args --resume -- "$py" rng_kept_in_memory.py
expect_grep '^first divergence .* rng\.torch_cpu$' "$WORK/out"
expect_grep 'rng\.torch_cpu was not restored from the checkpoint: the torch\.set_rng_state after the checkpoint load, by __main__\.isolate_rng_check, put back a state that no file of I.s holds' "$WORK/out"
grep -q 'restored after loading, but to a different state' "$WORK/out" &&
    fail "an RNG state kept in memory was taken for the checkpoint's: $(cat "$WORK/out")"
exit 0
