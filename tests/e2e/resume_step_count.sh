#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_step_count.sh -- a resumed run that trains a different number of
# steps than A from the checkpoint is named for that, first: the first
# divergence is "steps" with both counts, at the first step only one run
# trained, and the first line of the explanation says so, with nothing about
# random numbers drawn after the load (the RNG state past R's last step says
# only that R stopped).  step_counter_off_by_one.py: R trains 1 step where A
# trains 2; step_counter_behind.py: R trains 3.
TP_NAME=resume_step_count
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

for f in step_counter_off_by_one:1:5:1 step_counter_behind:3:6:2; do
    IFS=: read -r name nr step rstep <<<"$f"
    rm -rf ckpt
    expect_status 1 "$TP_RUN" resume --resume-args --resume --json report.json -- "$py" $name.py
    expect_grep "^first divergence  step $step \\(R.s step $rstep\\)  steps\$" "$WORK/out"
    expect_grep '^    A \(uninterrupted\)  2 optimizer steps from the aligned point \(its steps 4 to 5\)$' "$WORK/out"
    "$py" - "$nr" "$step" "$rstep" <<'PY' || fail "$name: report: $(cat report.json)"
import json, sys

nr, step, rstep = map(int, sys.argv[1:4])
r = json.load(open("report.json"))
fd = r["first_divergence"]
assert r["outcome"] == "FAIL", r["outcome"]
assert (fd["path"], fd["step"], fd["step_other"]) == ("steps", step, rstep), fd
assert fd["A"]["value"] == 2 and fd["R"]["value"] == nr, fd
assert [d["path"] for d in r["divergences"]] == ["steps"], r["divergences"]
why = r["explanation"]
assert why[0]["kind"] == "step_count", why
want = "R trained %d optimizer step%s from the checkpoint where A trained 2" % (
    nr, "" if nr == 1 else "s")
assert why[0]["text"].startswith(want), why
assert not any("random numbers drawn" in w["text"] for w in why), why
PY
done
exit 0
