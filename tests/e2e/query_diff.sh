#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# query_diff.sh -- trainparity-daemon query diff: two stored runs compared
# step by step, offline.  fixtures/compare/train.py is recorded twice as it
# is and once with --lr 0.02.  The two unchanged runs match (exit 0): the
# script's 8 steps and the state after the last are 9 steps, and its
# DataLoader hands out all 32 samples.  The changed one differs (exit 1) at
# step 0, optimizer.group[0].lr, 0.01 against 0.02: the optimizer is built
# with the option's value and the seeded weights before it are the same.
# An execution of another run and a bad ID are usage errors (64); an
# unknown run or one that made no optimizer step cannot be compared (2).
# Nothing is judged: a record run still has no verdict afterwards.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root/fixtures/compare/train.py" . || fail "cannot copy the fixture"

# record ARGS...: records train.py ARGS; prints the run id
record() {
    "$TP_RUN" record -- "$py" train.py "$@" >rec.out 2>rec.err ||
        fail "record $*: $(cat rec.err)"
    sed -n 's/^run \([0-9]*\)$/\1/p' rec.out
}
# exec_of RUN: the id of the run's one execution
exec_of() {
    tp_query --json run "$1" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["executions"][0]["id"])'
}
r1=$(record) r2=$(record) r3=$(record --lr 0.02)
[ -n "$r1" ] && [ -n "$r2" ] && [ -n "$r3" ] || fail "no run ids: $r1 $r2 $r3"
e1=$(exec_of "$r1") e3=$(exec_of "$r3")

# unchanged: they match at every step
expect_status 0 tp_query diff "$r1" "$r2"
expect_grep '^diff: match$' "$WORK/out"
expect_grep "^  A  run $r1, execution $e1 \\(record\\), 8 steps: .*train\\.py$" "$WORK/out"
expect_grep '^  the executions match at every step \(9 steps compared, 32 samples of the training data stream\)$' "$WORK/out"
expect_status 0 tp_query --json diff "$r1" "$r2" --exec1 "$e1"
"$py" - "$WORK/out" "$r1" "$r2" <<'PY' || fail "match JSON: $(cat "$WORK/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["match"] is True and j["first_divergence"] is None and j["divergences"] == [], j
assert (j["a"]["run"], j["b"]["run"]) == (int(sys.argv[2]), int(sys.argv[3])), j
assert j["steps_compared"] == 9 and j["samples_compared"] == 32, j
PY

# another learning rate: the first divergence at step 0, with both values
expect_status 1 tp_query diff "$r1" "$r3"
expect_grep '^diff: differ$' "$WORK/out"
expect_grep '^first divergence  step 0  optimizer\.group\[0\]\.lr$' "$WORK/out"
expect_grep "^    A \\(run $r1\\) +0\\.01$" "$WORK/out"
expect_grep "^    B \\(run $r3\\) +0\\.02$" "$WORK/out"
expect_grep '^why \(from the observations\)$' "$WORK/out"
expect_status 1 tp_query --json diff "$r1" "$r3"
"$py" - "$WORK/out" "$r1" "$e1" "$r3" "$e3" <<'PY' || fail "differ JSON: $(cat "$WORK/out")"
import json, sys
j = json.load(open(sys.argv[1]))
r1, e1, r3, e3 = map(int, sys.argv[2:6])
a, b, fd = j["a"], j["b"], j["first_divergence"]
assert (a["run"], a["execution"], a["role"], a["steps"]) == (r1, e1, "record", 8), a
assert (b["run"], b["execution"], b["role"], b["steps"]) == (r3, e3, "record", 8), b
assert a["argv"][-1] == "train.py" and b["argv"][-3:] == ["train.py", "--lr", "0.02"], (a, b)
assert j["match"] is False, j
assert (fd["step"], fd["step_other"], fd["path"], fd["group"]) == (0, 0, "optimizer.group[0].lr", "optimizer"), fd
assert fd["a"]["value"] == 0.01 and fd["b"]["value"] == 0.02, fd
assert j["divergences"][0]["path"] == fd["path"], j["divergences"]
assert j["explanation"][0]["kind"] == "differs", j["explanation"]
PY

# refused: an execution of another run, bad IDs (64); an unknown run and a
# run with no optimizer step (2)
expect_status 64 tp_query diff "$r1" "$r2" --exec1 "$e3"
expect_grep "execution $e3 is not an execution of run $r1" "$WORK/err"
expect_status 64 tp_query diff "$r1"
expect_status 64 tp_query diff "$r1" x
expect_status 64 tp_query diff "$r1" "$r2" --exec2 x
expect_status 2 tp_query diff "$r1" 4242
expect_grep "no run 4242" "$WORK/err"
"$TP_RUN" record -- "$py" -c pass >rec.out 2>rec.err || fail "record: $(cat rec.err)"
r4=$(sed -n 's/^run \([0-9]*\)$/\1/p' rec.out)
expect_status 2 tp_query diff "$r1" "$r4"
expect_grep "run $r4 has no execution that made an optimizer step" "$WORK/err"

# read-only: no verdict was stored for the runs compared
expect_status 1 tp_query verdict "$r1"
exit 0
