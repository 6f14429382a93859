#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_once.sh -- trainparity-run resume --once: B, the second
# uninterrupted execution, runs only when R does not simply match A.
# fixtures/resume/full_state.py PASSes with A, I and R alone;
# scheduler_not_restored.py FAILs at scheduler.last_epoch with B run after
# R (A and B agree: a lost state, not a script that differs from itself);
# clock_in_loss.py ABSTAINs between A and B as without --once, where R alone
# would have FAILed at its loss.  Each run judged again offline gives its
# verdict again.
TP_NAME=resume_once
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

# once WANT REPORT FIXTURE: resume --once of FIXTURE, exit status WANT
once() {
    expect_status "$1" "$TP_RUN" resume --once --json "$2" --resume-args --resume -- "$py" "$3"
}

# check REPORT OUTCOME ROLES PYTHON: the report says OUTCOME, its executions
# are ROLES (in the report's order: A, B, I, R); asserts PYTHON on it (r,
# fd: the first divergence, why: the explanation's kinds)
check() {
    "$py" - "$@" <<'PY' || fail "$1: $(cat "$1")"
import json, sys
report, outcome, roles, code = sys.argv[1:5]
r = json.load(open(report))
assert r["outcome"] == outcome, (r["outcome"], outcome)
got = " ".join(e["role"] for e in r["evidence"]["executions"])
assert got == roles, (got, roles)
fd = r["first_divergence"]
why = [w["kind"] for w in r["explanation"]]
exec(code)
PY
}

once 0 pass.json full_state.py
expect_grep '^  determinism not checked \(--once: B did not run\)$' "$WORK/out"
check pass.json PASS "A I R" 'assert fd is None, fd'

once 1 sched.json scheduler_not_restored.py
expect_grep '^  determinism A and B compared \(--once: B ran because R did not simply match A\)$' "$WORK/out"
check sched.json FAIL "A B I R" '
assert (fd["between"], fd["path"]) == ("A-R", "scheduler.last_epoch"), fd
assert "determinism_not_checked" not in why, why'

once 2 clock.json clock_in_loss.py
check clock.json ABSTAIN "A B I R" '
assert (fd["between"], fd["path"]) == ("A-B", "loss"), fd
assert "nondeterministic" in why, why'

for f in pass:0 sched:1 clock:2; do
    expect_judged_again "${f%%:*}.json" "${f##*:}"
done
echo "ok $TP_NAME"
