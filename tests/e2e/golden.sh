#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# golden.sh -- trainparity-run compare against a golden run: the clean
# fixtures/compare/train.py is recorded with --name golden, then compared
# as it is (PASS), with one-line changes (FAIL at the first divergence the
# change makes), and unseeded (ABSTAIN: C and D differ); with --once, D runs
# only when C differs from G (PASS with C alone; the FAIL and the ABSTAIN
# with D).  Each expected
# divergence is settled from the script, not from the tool: the learning
# rates are the options given, the losses are the ones the script prints
# itself at step 0, and the data order is that of the same DataLoader and
# generator built here without the agent.  A golden name or id that names
# no run is a usage error (64) before anything runs; a golden run that is
# not a record run is an ERROR (3).  Each compare run, judged again offline
# (trainparity-daemon judge), gives its verdict again.
TP_NAME=golden
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root/fixtures/compare/train.py" . || fail "cannot copy the fixture"

expect_status 64 "$TP_RUN" compare --against golden -- "$py" train.py
expect_grep "no run was recorded under that name" "$WORK/err"
expect_status 64 "$TP_RUN" compare --against 4242 -- "$py" train.py
expect_grep "there is no run 4242" "$WORK/err"

expect_status 0 "$TP_RUN" record --name golden -- "$py" train.py
cp "$WORK/out" golden.out
golden=$(sed -n 's/^run \([0-9]*\)$/\1/p' golden.out)
[ "$golden" = 1 ] || fail "want run 1 (the usage errors create no run): $(cat golden.out)"

# check REPORT OUTCOME PYTHON: the report follows docs/report-schema.json;
# asserts on it (r) in PYTHON
check() {
    "$py" "$root/tests/e2e/report_schema.py" "$1" >"$1.schema" 2>&1 ||
        fail "$1 does not follow docs/report-schema.json: $(head -20 "$1.schema")"
    "$py" - "$1" "$2" "$golden" "$3" <<'PY' || fail "$1: $(cat "$1")"
import json, sys
report, outcome, golden, code = sys.argv[1:5]
r = json.load(open(report))
assert r["check"] == "compare" and r["outcome"] == outcome, (r["check"], r["outcome"])
ev = r["evidence"]
assert ev["against"] == {"run": int(golden), "name": "golden"}, ev["against"]
assert ev["executions"][0]["role"] == "G", ev["executions"]
fd = r["first_divergence"]
why = [w["kind"] for w in r["explanation"]]
exec(code)
PY
}

# step0_loss FILE: the loss the script printed at step 0
step0_loss() {
    sed -n 's/^step 0 loss \([0-9.e+-]*\)$/\1/p' "$1"
}

# unchanged: PASS, with determinism checked (C and D)
expect_status 0 "$TP_RUN" compare --against golden --json pass.json -- "$py" train.py
expect_grep '^compare: PASS$' "$WORK/out"
expect_grep '^  C matched G at every step' "$WORK/out"
check pass.json PASS '
assert fd is None and r["divergences"] == [], r
assert ev["determinism"] == "checked"
assert [e["role"] for e in ev["executions"]] == ["G", "C", "D"], ev["executions"]
assert [e["steps"] for e in ev["executions"]] == [8, 8, 8], ev["executions"]'

# the learning rate: the optimizer is built with it, so group 0 holds it
# from the first snapshot (step 0) on, before any loss or gradient
expect_status 1 "$TP_RUN" compare --against golden --json lr.json -- "$py" train.py --lr 0.02
expect_grep '^first divergence  step 0  optimizer.group\[0\].lr$' "$WORK/out"
check lr.json FAIL '
assert (fd["between"], fd["step"], fd["path"]) == ("G-C", 0, "optimizer.group[0].lr"), fd
assert fd["G"]["value"] == 0.01 and fd["C"]["value"] == 0.02, fd
assert ev["determinism"] == "checked"
assert why[0] == "differs", why'

# --once, unchanged: C alone, which matches G: PASS, D never run
expect_status 0 "$TP_RUN" compare --once --against golden --json once.json -- "$py" train.py
expect_grep '^  determinism not checked \(--once: C ran once\)$' "$WORK/out"
check once.json PASS '
assert fd is None, fd
assert ev["determinism"] == "not checked"
assert [e["role"] for e in ev["executions"]] == ["G", "C"], ev["executions"]'

# an extra loss term, run once (--once) against the golden run by id: the
# state before the first loss is the same, the loss is not (the values the
# script printed at step 0), and its gradients differ with it.  C differs
# from G, so D runs after all and matches C: a regression, determinism
# checked.
expect_status 1 "$TP_RUN" compare --once --against "$golden" --json loss.json -- \
    "$py" train.py --loss-term
expect_grep '^  determinism C and D match at every step \([0-9]+ steps compared; --once: D ran because C differs from G\)$' "$WORK/out"
g0=$(step0_loss golden.out) c0=$(sed -n 's/^step 0 loss \([0-9.e+-]*\)$/\1/p' "$WORK/out" | head -1)
[ -n "$g0" ] && [ -n "$c0" ] || fail "no step 0 loss printed: $(cat "$WORK/out")"
check loss.json FAIL "
assert (fd['step'], fd['path']) == (0, 'loss'), fd
assert abs(fd['G']['value'] - $g0) <= 1e-6 * abs($g0), (fd, $g0)
assert abs(fd['C']['value'] - $c0) <= 1e-6 * abs($c0), (fd, $c0)
assert $c0 > $g0, 'the term adds to the loss'
assert any(d['path'].startswith('grad.') for d in r['divergences']), r['divergences']
assert ev['determinism'] == 'checked'
assert [e['role'] for e in ev['executions']] == ['G', 'C', 'D'], ev['executions']
assert 'determinism_not_checked' not in why, why"

# --once, unseeded: C alone would FAIL at its initial weights; D runs and
# differs from C there, so nothing can be told (ABSTAIN), as without --once
expect_status 2 "$TP_RUN" compare --once --against golden --json once_unseeded.json -- \
    "$py" train.py --unseeded
check once_unseeded.json ABSTAIN '
assert (fd["between"], fd["step"]) == ("C-D", 0) and fd["path"].startswith("model."), fd
assert [e["role"] for e in ev["executions"]] == ["G", "C", "D"], ev["executions"]
assert why == ["nondeterministic"], why'

# another data order: the first position at which the two permutations
# part, and the step whose batch holds it
expect_status 1 "$TP_RUN" compare --against golden --json data.json -- \
    "$py" train.py --shuffle-seed 1
check data.json FAIL '
import torch
from torch.utils.data import DataLoader
def order(seed):
    g = torch.Generator().manual_seed(seed)
    return [int(i) for b in DataLoader(range(32), batch_size=4, shuffle=True, generator=g) for i in b]
a, b = order(0), order(1)
pos = next(i for i in range(32) if a[i] != b[i])
k = pos // 4
assert (fd["step"], fd["path"]) == (k, "data.ids"), (fd, pos)
assert fd["G"]["first"] == a[4 * k:4 * k + 4] and fd["C"]["first"] == b[4 * k:4 * k + 4], fd
assert why[0] == "data_order", why'

# unseeded: the initial weights differ between C and D, at step 0, where
# C first differs from G too: nothing can be told
expect_status 2 "$TP_RUN" compare --against golden --json unseeded.json -- \
    "$py" train.py --unseeded
check unseeded.json ABSTAIN '
assert (fd["between"], fd["step"]) == ("C-D", 0) and fd["path"].startswith("model."), fd
assert "C" in fd and "D" in fd, fd
assert why == ["nondeterministic"], why'

# each run judged again offline gives the verdict its check gave
for f in pass:0 lr:1 once:0 loss:1 once_unseeded:2 data:1 unseeded:2; do
    expect_judged_again "${f%%:*}.json" "${f##*:}"
done

# a golden run that is not a record run: refused before anything runs
pass_run=$("$py" -c 'import json; print(json.load(open("pass.json"))["run"])')
expect_status 3 "$TP_RUN" compare --against "$pass_run" -- "$py" train.py
expect_grep "run $pass_run is a 'compare' run" "$WORK/err"
exit 0
