#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# health_steps.sh -- the health run's telemetry as `trainparity-daemon query
# steps` shows it: fixtures/health/lr_zero.py, whose LambdaLR returns 0
# from its third step, moves the parameters at steps 0 to 2 and none from
# step 3 (the UPDATE column), and the run FAILs at step 3.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
cp "$root"/fixtures/health/_health.py "$root"/fixtures/health/lr_zero.py . || fail "cp"

expect_status 1 "$TP_RUN" health -- "$TP_PYTHON" lr_zero.py
tp_query steps 1 >"$WORK/steps" 2>&1 || fail "query steps: $(cat "$WORK/steps")"
expect_grep 'OPT_STEPS +UPDATE +SCALE' "$WORK/steps"
for s in 0 1 2; do
    expect_grep "^  $s +[^ ]+ +1 .* 1 +moved +- *\$" "$WORK/steps"
done
for s in 3 4 7; do
    expect_grep "^  $s +[^ ]+ +1 .* 0 +1 +none +- *\$" "$WORK/steps"
done
exit 0
