#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# query.sh -- trainparity-daemon query over three real runs: a record of a
# loop whose two param groups follow a cosine schedule (learning rates such
# as 9.61731e-05, wider than the LR column ever was) under a long name, a
# health PASS (fixtures/health/healthy.py) and a health FAIL
# (fixtures/health/lr_zero.py).  The filters of query runs, the JSON of
# every view, the stored verdict byte for byte, text columns that start at
# the same offsets on every row, and the usage errors.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
cp "$root"/fixtures/health/_health.py "$root"/fixtures/health/healthy.py \
    "$root"/fixtures/health/lr_zero.py . || fail "cp"
cat >cosine.py <<'PY'
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 1e-4},
                       {"params": model[2].parameters(), "lr": 3e-3}], lr=1e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(6):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sched.step()
PY
long="a-golden-run-with-a-name-longer-than-its-column"
expect_status 0 "$TP_RUN" record --name "$long" -- "$TP_PYTHON" cosine.py
expect_grep '^run 1$' "$WORK/out"
expect_status 0 "$TP_RUN" health -- "$TP_PYTHON" healthy.py
expect_grep '^run 2$' "$WORK/out"
expect_status 1 "$TP_RUN" health -- "$TP_PYTHON" lr_zero.py
expect_grep '^run 3$' "$WORK/out"

# aligned TABLE_FILE HEADER_PATTERN ROW_PATTERN [RIGHT...]: on every row
# matching ROW_PATTERN, each column starts where its name starts in the
# header line (a column named in RIGHT ends where its name ends)
aligned() {
    "$TP_PYTHON" - "$@" <<'PY' || fail "columns not aligned in $1: $(cat "$1")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
head = [l for l in lines if re.match(sys.argv[2], l)]
rows = [l for l in lines if re.match(sys.argv[3], l)]
right = set(sys.argv[4:])
assert head and rows, "no header or no rows"
cols = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", head[0])]
for l in rows:
    l += " "
    for name, a, b in cols:
        if name in right:
            assert l[b - 1] != " " and l[b] == " ", "%s ends off %d:\n%r\n%r" % (name, b, head[0], l)
        else:
            assert (a == 0 or l[a - 1] == " ") and l[a] != " ", "%s starts off %d:\n%r\n%r" % (name, a, head[0], l)
PY
}

# runs, every filter
tp_query runs >"$WORK/runs" 2>&1 || fail "query runs: $(cat "$WORK/runs")"
[ "$(grep -cE '^[0-9]' "$WORK/runs")" = 3 ] || fail "query runs: $(cat "$WORK/runs")"
expect_grep "^1 +$long +record " "$WORK/runs"
expect_grep '^3 +- +health .* FAIL$' "$WORK/runs"
aligned "$WORK/runs" '^RUN ' '^[0-9]' EXECS
only() { # only WANT ARGS...: query runs ARGS lists the runs WANT (ids, space-separated)
    local want=$1 got
    shift
    got=$(tp_query runs "$@" | awk '/^[0-9]/ { print $1 }' | tr '\n' ' ')
    [ "$got" = "$want " ] || fail "query runs $*: runs '$got', want '$want'"
}
only "2 3" --check health
only "1" --check record
only "3" --outcome FAIL
only "2" --outcome pass
only "1" --outcome none
only "3" --limit 1
only "2 3" --limit 2
only "2" --check health --outcome PASS --limit 5
expect_status 0 tp_query runs --check resume
expect_grep '^\(no runs match\)$' "$WORK/out"

# JSON, with the expected fields
tp_query runs --json --check health | "$TP_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert [r["id"] for r in d["runs"]] == [2, 3], d
assert [r["verdict"] for r in d["runs"]] == ["PASS", "FAIL"], d
assert all(set(r) >= {"name", "check", "created_ns", "executions"} for r in d["runs"]), d' ||
    fail "query runs --json"
tp_query run 3 --json | "$TP_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["id"] == 3 and d["check"] == "health", d
assert d["verdict"]["outcome"] == "FAIL" and d["verdict"]["step"] == 3, d
p = d["executions"][0]["processes"][0]
assert p["bye"]["reason"] == "exit" and p["gaps"] == [] and p["kinds"]["step"] > 0, p
assert d["executions"][0]["exit_status"] == 1 or d["executions"][0]["exit_status"] == 0, d' ||
    fail "query run 3 --json: $(tp_query run 3 --json)"
tp_query --json steps 1 | "$TP_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
rows = d["processes"][0]["steps"]
assert d["run"] == 1 and len(rows) == 6, d
assert all(len(r["lr"]) == 2 and r["backward"] == 1 and r["optimizer_steps"] == 1 for r in rows), rows
assert abs(rows[0]["lr"][0] - 1e-4) < 1e-12 and isinstance(rows[0]["loss"], float), rows[0]' ||
    fail "query steps 1 --json: $(tp_query steps 1 --json)"

# steps: long learning rates, and every row still aligned
tp_query steps 1 >"$WORK/steps" 2>&1 || fail "query steps 1: $(cat "$WORK/steps")"
awk '$1 ~ /^[0-9]+$/ && length($6) > 16 { long = 1 } END { exit !long }' "$WORK/steps" ||
    fail "no learning-rate cell wider than 16 characters: $(cat "$WORK/steps")"
aligned "$WORK/steps" '^  STEP ' '^  [0-9]'
tp_query steps 3 >"$WORK/steps3" 2>&1 || fail "query steps 3: $(cat "$WORK/steps3")"
aligned "$WORK/steps3" '^  STEP ' '^  [0-9]'

# the verdict as stored: its text, and its JSON byte for byte
tp_query verdict 3 >"$WORK/v.txt" 2>&1 || fail "query verdict 3: $(cat "$WORK/v.txt")"
tp_query verdict 3 --json >"$WORK/v.json" 2>&1 || fail "query verdict 3 --json: $(cat "$WORK/v.json")"
"$TP_PYTHON" - "$WORK/.trainparity/runs.db" "$WORK/v.txt" "$WORK/v.json" <<'PY' || fail "query verdict is not the stored verdict"
import json, sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
text, report = db.execute("SELECT text, report FROM verdicts WHERE run_id = 3 ORDER BY id DESC").fetchone()
out_text, out_json = open(sys.argv[2]).read(), open(sys.argv[3]).read()
assert out_text.rstrip("\n") == text.rstrip("\n"), (out_text, text)
assert out_json in (report, report + "\n"), (out_json[-80:], report[-80:])
d = json.loads(out_json)
assert d["outcome"] == "FAIL" and d["run"] == 3, d
PY
expect_grep 'FAIL' "$WORK/v.txt"

# errors: usage (64) and unknown runs (1)
expect_status 64 tp_query bogus
expect_grep "unknown query 'bogus'" "$WORK/err"
expect_status 64 tp_query run abc
expect_grep "'abc' is not a run ID" "$WORK/err"
expect_status 64 tp_query run
expect_status 64 tp_query runs --outcome maybe
expect_grep "unknown outcome 'maybe'" "$WORK/err"
expect_status 64 tp_query runs --limit 0
expect_status 64 tp_query runs --limit x
expect_status 64 tp_query steps 1 --check health
expect_status 64 tp_query runs 1
expect_status 1 tp_query run 99
expect_grep 'no run 99' "$WORK/err"
expect_status 1 tp_query steps 99 --json
expect_grep 'no run 99' "$WORK/err"
expect_status 1 tp_query verdict 1
expect_grep 'run 1 has no verdict' "$WORK/err"
exit 0
