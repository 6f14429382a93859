#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lightning_grad_norms.sh -- `record` of a Lightning fit shows each optimizer
# step's true gradient norm.  Lightning steps the optimizer with a closure
# that runs the forward and the backward, so the gradients exist only once
# the closure has run; the script itself prints the total norm of the
# gradients that each step applies (a callback's on_before_optimizer_step)
# and record's GNORM column must show the same numbers at the same steps.
TP_NAME=lightning_grad_norms
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
"$py" -c 'import lightning' 2>/dev/null || fail "$py has no lightning: run make setup"
tp_setup daemon agent
cp "$root"/fixtures/frameworks/_pl.py "$root"/fixtures/frameworks/_tiny.py "$root"/fixtures/frameworks/lightning_epoch_resume.py . ||
    fail "cannot copy the fixtures"

expect_status 0 "$TP_RUN" record -- "$py" lightning_epoch_resume.py --grad-norms --max-epochs 2
# The script's lines: "grad_norm step N: X", N counting from 1; record's
# table: STEP (from 0), LOSS, BACKWARD, GNORM, ...
"$py" - "$WORK/out" <<'PY' || fail "record's gradient norms are not the script's: $(cat "$WORK/out")"
import re, sys
text = open(sys.argv[1]).read()
true = {int(n) - 1: float(v) for n, v in re.findall(r"^grad_norm step (\d+): (\S+)$", text, re.M)}
head = re.search(r"^\s*STEP\s+LOSS\s+BACKWARD\s+GNORM\b", text, re.M)
assert head, "no step table"
shown = {}
for line in text[head.end():].splitlines()[1:]:
    cols = line.split()
    if len(cols) < 4 or not cols[0].isdigit():
        break
    shown[int(cols[0])] = cols[3]
assert len(true) == 8, "the script printed %d norms, want 8" % len(true)
assert sorted(shown) == sorted(true), "steps %s in the table, %s in the script" % (sorted(shown), sorted(true))
bad = [(s, shown[s], true[s]) for s in sorted(true)
       if shown[s] == "-" or abs(float(shown[s]) - true[s]) > 1e-5 * true[s]]
assert not bad, "step, record's GNORM, the script's norm: %s" % bad
PY
expect_no_daemon
exit 0
