#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# report_schema.sh -- the JSON reports follow docs/report-schema.json, and
# the schema can fail: a real record and a real health FAIL
# (fixtures/health/exploding.py) validate, and each of a set of broken
# copies of the FAIL's report (a member missing, one the schema does not
# know, a value of the wrong type, another schema_version) is refused; a
# report that cannot be written ends the check in ERROR.
# `query --json verdict` gives back the report as written.  The fixture
# rows (fixture.sh) validate every other report.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
cp "$root"/fixtures/health/_health.py "$root"/fixtures/health/exploding.py . || fail "cp"
validate() { "$TP_PYTHON" "$root/tests/e2e/report_schema.py" "$@"; }

expect_status 0 "$TP_RUN" record --name golden --json record.json -- "$TP_PYTHON" exploding.py
expect_status 1 "$TP_RUN" health --max-grad-norm 100 --json health.json -- "$TP_PYTHON" exploding.py
validate record.json health.json >valid.out 2>&1 || fail "valid reports refused: $(cat valid.out)"
# the daemon gives the stored report back as it was written
tp_query --json verdict 2 >stored.json 2>query.err || fail "query verdict: $(cat query.err)"
cmp -s stored.json health.json || fail "query --json verdict 2 differs from --json: $(diff stored.json health.json | head -5)"
# a report that cannot be written is an ERROR that says so
expect_status 3 "$TP_RUN" health --max-grad-norm 100 --junit "$WORK/no/such/dir/r.xml" \
    -- "$TP_PYTHON" exploding.py
expect_grep "cannot write $WORK/no/such/dir/r.xml" "$WORK/err"

"$TP_PYTHON" - <<'PY' || fail "cannot write the broken reports"
import copy, json
r = json.load(open("health.json"))
assert r["first_divergence"]["path"] == "grad_norm", r["first_divergence"]
def broken(name, change):
    x = copy.deepcopy(r)
    change(x)
    json.dump(x, open("broken_%s.json" % name, "w"))
broken("no_outcome", lambda x: x.pop("outcome"))
broken("unknown_member", lambda x: x.__setitem__("surprise", 1))
broken("outcome_word", lambda x: x.__setitem__("outcome", "MAYBE"))
broken("path_number", lambda x: x["first_divergence"].__setitem__("path", 3))
broken("loss_word", lambda x: x["telemetry"][0].__setitem__("loss", "low"))
broken("schema_version", lambda x: x.__setitem__("schema_version", 2))
broken("execution_text", lambda x: x["evidence"]["executions"][0].__setitem__("execution", "1"))
PY
for f in broken_*.json; do
    validate "$f" >"$f.out" 2>&1 && fail "$f was accepted"
    grep -q "^$f: " "$f.out" || fail "$f: no violation named: $(cat "$f.out")"
done
exit 0
