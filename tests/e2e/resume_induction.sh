#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_induction.sh -- a divergence that only the state shows, between
# boundaries, is named at its exact step (docs/induction.md).
# ema_warmup_not_restored.py's EMA buffers, updated outside the optimizer,
# differ after the resume while the loss and the gradients do not.  What the
# script prints when it is resumed by hand, without the tool, says where
# the EMA first differs; the check in the induction mode (the default:
# light steps in every execution; I, R and A rerun as I2, R2 and A2 with
# full digests over the window, what I and R saved moved aside first) and
# with --digest full must both name that step and the same components.
# Both runs, judged again offline (trainparity-daemon judge), give their
# verdicts again.
TP_NAME=resume_induction
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/_loop.py "$root"/fixtures/resume/ema_warmup_not_restored.py . ||
    fail "cannot copy the fixture"

# the truth, without the agent: uninterrupted, and stopped after the save
# at step 4 then resumed in a fresh process
env -u LD_PRELOAD "$py" ema_warmup_not_restored.py >plain.txt || fail "plain run failed"
rm -rf ckpt
env -u LD_PRELOAD "$py" -c '
import sys
sys.argv = ["ema_warmup_not_restored.py"]
from ema_warmup_not_restored import EmaWarmupNotRestored
t = EmaWarmupNotRestored()
t.steps = 4
t.main()' >first.txt || fail "first half failed"
env -u LD_PRELOAD "$py" ema_warmup_not_restored.py --resume >second.txt || fail "resume failed"
truth=$("$py" - <<'PY'
def lines(f, what):
    return {int(l.split()[1]): l.split()[3] for l in open(f) if l.split()[2] == what}
plain = lines("plain.txt", "ema")
resumed = {**lines("first.txt", "ema"), **lines("second.txt", "ema")}
lp = lines("plain.txt", "loss")
lr = {**lines("first.txt", "loss"), **lines("second.txt", "loss")}
assert lp == lr, "the losses differ: the fault is not one only the state shows"
print(min(s for s in plain if plain[s] != resumed[s]))
PY
) || fail "cannot read the truth from the script's output"
[ "$truth" = 5 ] || fail "the EMA first differs after step $truth, not 5"

rm -rf ckpt
expect_status 1 "$TP_RUN" resume --resume-args --resume --json induction.json -- \
    "$py" ema_warmup_not_restored.py
expect_grep '^  digests     induction: ' "$WORK/out"
expect_grep '^  narrowed    A2, I2, R2 rerun with every tensor digested at steps 5 to 7 ' "$WORK/out"
run=$(sed -n 's/^run \([0-9]*\)$/\1/p' "$WORK/out" | head -1)
for role in I R I2 R2 A2; do
    [ -d ".trainparity/runs/$run/$role" ] || fail "$role's checkpoint was not moved aside"
done
rm -rf ckpt
expect_status 1 "$TP_RUN" resume --digest full --resume-args --resume --json full.json -- \
    "$py" ema_warmup_not_restored.py
grep -q '^  digests' "$WORK/out" && fail "--digest full: a digests line"
expect_status 64 "$TP_RUN" resume --digest some --resume-args --resume -- "$py" x.py
# judged again offline, each run gives its verdict again (the induction
# one from its reruns, I2, R2 and A2, which the database holds)
for f in induction full; do
    expect_judged_again "$f.json" 1
done

"$py" - "$truth" <<'PY' || fail "reports: $(cat induction.json full.json)"
import json, sys

truth = int(sys.argv[1])
ind, full = json.load(open("induction.json")), json.load(open("full.json"))
for r in ind, full:
    fd = r["first_divergence"]
    assert r["outcome"] == "FAIL", r["outcome"]
    assert (fd["path"], fd["step"], fd["step_other"]) == ("model.ema_0_weight", truth, 1), fd
assert ind["divergences"] == full["divergences"], (ind["divergences"], full["divergences"])
assert full["evidence"]["induction"] is None, full["evidence"]["induction"]
ev = ind["evidence"]["induction"]
assert ev["narrowed"] == {"from": 5, "to": 7, "reruns": ["A2", "I2", "R2"]}, ev
assert ev["unseen"] is None, ev
# B ran light between its boundaries (steps 0 and 4); A2 digested 5 to 7
# too, R2 its steps 1 to 3 (A's 5 to 7) besides its first
assert ev["B"] == {"full_steps": 2, "steps": 8}, ev
assert ev["A"] == {"full_steps": 5, "steps": 8}, ev
assert ev["R"] == {"full_steps": 4, "steps": 4}, ev
roles = [e["role"] for e in ind["evidence"]["executions"]]
assert roles == ["A2", "B", "I2", "R2"], roles
PY
exit 0
