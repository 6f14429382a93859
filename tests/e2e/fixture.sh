#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fixture.sh CHECK FIXTURE OUTCOME PATH PYTHON NEEDS OPTIONS -- runs one row of
# fixtures/expected.tsv through `trainparity-run CHECK` with a real daemon,
# the real agent and a real training process, and checks the outcome (exit
# status and JSON report), the first divergence's component path, what the
# explanation must and must not say (fixtures/why.tsv) and what the
# fixture's own script in fixtures/expect/ asks of the report, if it has
# one; then that the stored run, judged again offline, gives the same
# verdict.
TP_NAME=fixture
. "$(dirname "$0")/lib.sh"

check=$1 fixture=$2 outcome=$3 want_path=$4 which=$5 needs=$6 options=${7:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
case $which in
venv) py=${TP_PYTHON:?} ;;
system) py=${TP_SYSTEM_PYTHON:?} ;;
*) fail "unknown python '$which'" ;;
esac
# (a fixture in several rows: the later rows' tests carry their outcome,
# TP_FIXTURE_SUFFIX, as in tests/e2e/CMakeLists.txt)
TP_NAME="$check.$(basename "$fixture" .py)${TP_FIXTURE_SUFFIX:-}.$which"

skip() {
    printf 'SKIP %s: %s\n' "$TP_NAME" "$*"
    exit 77
}

[ -x "$py" ] || fail "$py is missing: run make setup"
case $needs in
-) ;;
torch-amp) "$py" -c 'import torch; torch.amp.GradScaler' 2>/dev/null ||
    skip "this torch has no torch.amp.GradScaler" ;;
cuda) "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    skip "no CUDA device here" ;;
*) fail "unknown requirement '$needs'" ;;
esac

tp_setup daemon agent
cp "$root/fixtures/$(dirname "$fixture")"/*.py . || fail "cannot copy the fixtures"
# a fixture's data files beside it (--lr-expect schedules)
for f in "$root/fixtures/$(dirname "$fixture")"/*.lrs; do
    [ ! -e "$f" ] || cp "$f" . || fail "cannot copy $f"
done
eval "opts=($options)"
# {py}, {script} and {torchrun} stand for the interpreter, the fixture and
# torch's launcher run by that interpreter, in every option word (a reference
# command given as one word: --reference "{py} {script} --full").
for i in "${!opts[@]}"; do
    w=${opts[$i]}
    [ "$w" = "{py}" ] || [ "$w" = "{script}" ] || [ "$w" = "{torchrun}" ] || {
        w=${w//\{torchrun\}/$py -m torch.distributed.run}
        w=${w//\{py\}/$py}
        w=${w//\{script\}/$(basename "$fixture")}
        opts[$i]=$w
    }
done
# The command: "python FIXTURE", unless the options end with "-- CMD..." in
# which {py}, {script} and {torchrun} stand for the interpreter, the fixture
# and torch's launcher run by that interpreter.
cmd=("$py" "$(basename "$fixture")")
for i in "${!opts[@]}"; do
    [ "${opts[$i]}" = "--" ] || continue
    cmd=()
    for w in "${opts[@]:$((i + 1))}"; do
        case $w in
        {py}) cmd+=("$py") ;;
        {script}) cmd+=("$(basename "$fixture")") ;;
        {torchrun}) cmd+=("$py" -m torch.distributed.run) ;;
        *) cmd+=("$w") ;;
        esac
    done
    opts=("${opts[@]:0:$i}")
    break
done
want_status=$(case $outcome in PASS) echo 0 ;; FAIL) echo 1 ;; ABSTAIN) echo 2 ;; ERROR) echo 3 ;; esac)
"$TP_RUN" "$check" "${opts[@]}" --json report.json --junit report.xml -- "${cmd[@]}" >out 2>err
got=$?
[ "$got" = "$want_status" ] || fail "exit status $got, want $want_status ($outcome); report: $(grep -v '^\(step\|epoch\|iter\) ' out | head -40); stderr: $(tail -20 err)$(first_traceback err)$(process_ends)"
[ -s report.json ] || fail "no JSON report"
# TP_REPORT_DIR keeps every report, for comparing two builds over the whole
# table (tests/e2e/compare_reports.py).
if [ -n "${TP_REPORT_DIR:-}" ]; then
    mkdir -p "$TP_REPORT_DIR" && cp report.json "$TP_REPORT_DIR/$TP_NAME.json" ||
        fail "cannot keep the report in $TP_REPORT_DIR"
fi
# Every report follows the documented schema (docs/report-schema.json),
# whichever interpreter ran the training.
"$TP_PYTHON" "$root/tests/e2e/report_schema.py" report.json >schema.out 2>&1 ||
    fail "the report does not follow docs/report-schema.json: $(head -20 schema.out)"
# and the JUnit report the common JUnit schema, its case saying the outcome
# (the case below checks what it says)
xmllint --noout --schema "$root/tests/e2e/junit.xsd" report.xml >xsd.out 2>&1 ||
    fail "the JUnit report does not follow tests/e2e/junit.xsd: $(head -20 xsd.out)"
case $outcome in
PASS) grep -q '<system-out>' report.xml && ! grep -q '<failure\|<error\|<skipped' report.xml ;;
FAIL) grep -q '<failure message="first divergence: ' report.xml ;;
ABSTAIN) grep -q '<skipped message="[^"]' report.xml ;;
ERROR) grep -q '<error message="[^"]' report.xml ;;
esac || fail "the JUnit report does not say $outcome: $(head -30 report.xml)"
"$py" - "$outcome" "$want_path" "$check" "$fixture" "$root/fixtures/why.tsv" <<'PY' || fail "report: $(cat report.json)"
import json, sys
want_outcome, want_path, check, fixture, why_table = sys.argv[1:6]
r = json.load(open("report.json"))
# The explanation: every FAIL has one, and it says what fixtures/why.tsv
# says it must and nothing it must not.
why = [e["text"] for e in r.get("explanation") or []]
if want_outcome == "FAIL":
    assert why, "a FAIL without an explanation"
for line in open(why_table):
    cols = line.rstrip("\n").split("\t")
    if line.startswith("#") or len(cols) < 4 or cols[0] != check or cols[1] != fixture:
        continue
    said = any(cols[3] in w for w in why)
    if cols[2] == "has":
        assert said, "the explanation does not say %r: %r" % (cols[3], why)
    elif cols[2] == "lacks":
        assert not said, "the explanation says %r: %r" % (cols[3], why)
    else:
        raise SystemExit("fixtures/why.tsv: unknown rule %r" % cols[2])
assert r["schema_version"] == 1, r
assert r["outcome"] == want_outcome, (r["outcome"], want_outcome)
fd = r.get("first_divergence")
if want_path != "-":
    assert fd is not None, "no first divergence"
    path = fd["path"]
    ok = path.startswith(want_path[:-1]) if want_path.endswith("*") else path == want_path
    assert ok, "first divergence at %s, want %s" % (path, want_path)
PY
# What a row of the tables cannot say of its report: a script of the
# fixture's own, fixtures/expect/CHECK/NAME.py, run on the JSON report and
# the text output when there is one.
expect="$root/fixtures/expect/$check/$(basename "$fixture")"
if [ -f "$expect" ]; then
    PYTHONPATH="$root/fixtures/expect/$check" "$TP_PYTHON" "$expect" report.json out >expect.out 2>&1 ||
        fail "fixtures/expect/$check/$(basename "$fixture"): $(tail -20 expect.out)"
fi
expect_judged_again report.json "$got"
echo "ok $TP_NAME: $outcome${want_path:+ at $want_path}"
