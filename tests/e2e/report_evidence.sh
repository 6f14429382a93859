#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# report_evidence.sh -- every JSON report gives, per execution, its
# processes' pids (with rank), wall time and events stored, and the check's
# wall time against the executions' sum.  One resume, one accum and one
# coverage check under torchrun with 2 ranks; a sitecustomize.py on
# PYTHONPATH writes down each Python process's pid, execution and RANK as it
# starts, and the database says what was stored.
TP_NAME=report_evidence
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
[ -x "$py" ] || fail "$py is missing: run make setup"
tp_setup daemon agent

mkdir site
cat >site/sitecustomize.py <<'PY'
import os

if "TRAINPARITY_EXEC" in os.environ:
    with open(os.environ["PIDS_FILE"], "a") as f:
        f.write("%s %d %s\n" % (os.environ["TRAINPARITY_EXEC"], os.getpid(),
                                os.environ.get("RANK", "-")))
PY
export PYTHONPATH=$WORK/site

# check DIR NAME ARGS...: runs trainparity-run ARGS in DIR (a copy of
# fixtures/DIR) with the report in DIR/r.json and its own wall time (ns)
# in DIR/elapsed.
check() {
    local dir=$1 t0 t1
    shift
    mkdir "$WORK/$dir" && cp "$root/fixtures/$dir"/*.py "$WORK/$dir/" || fail "cannot copy fixtures/$dir"
    cd "$WORK/$dir" || fail "cd $dir"
    t0=$(date +%s%N)
    PIDS_FILE=$WORK/$dir/pids "$TP_RUN" "$@" >out 2>err
    t1=$(date +%s%N)
    [ -s r.json ] || fail "$dir: no JSON report; stderr: $(cat err)"
    echo $((t1 - t0)) >elapsed
    cd "$WORK" || fail "cd $WORK"
}

check resume resume --resume-args --resume --json r.json -- "$py" optimizer_not_restored.py
check accum accum --micro 4 --reference "$py clean.py --full" --json r.json -- "$py" clean.py
check coverage coverage --policy exactly_once --json r.json -- \
    "$py" -m torch.distributed.run --standalone --nproc_per_node 2 ranks2.py

"$py" - <<'PY' || fail "the evidence does not hold (see above)"
import json, sqlite3, sys

bad = []


def expect(ok, what):
    if not ok:
        bad.append(what)


for d in ("resume", "accum", "coverage"):
    r = json.load(open(d + "/r.json"))
    ev = r["evidence"]
    db = sqlite3.connect(d + "/.trainparity/runs.db")
    elapsed = int(open(d + "/elapsed").read()) / 1e9
    started = {}  # exec -> {pid: rank or None}, as sitecustomize saw them
    for line in open(d + "/pids"):
        ex, pid, rank = line.split()
        started.setdefault(int(ex), {})[int(pid)] = None if rank == "-" else int(rank)
    execs = ev["executions"] if d != "coverage" else [ev["execution"]]
    expect(len(execs) == {"resume": 4, "accum": 2, "coverage": 1}[d], "%s: executions" % d)
    wall = ev["wall_time"]
    check_s = wall["check_s"]
    total = 0.0
    for e in execs:
        x = e.get("execution", e.get("id"))
        who = "%s exec %s" % (d, x)
        created, finished = db.execute(
            "SELECT created_ns, finished_ns FROM executions WHERE id = ?", (x,)).fetchone()
        expect(abs(e["wall_s"] - (finished - created) / 1e9) < 1e-5, who + ": wall_s")
        expect(0 < e["wall_s"] <= check_s, who + ": 0 < wall_s <= check_s")
        total += e["wall_s"]
        procs = e["processes"]
        expect(len(procs) > 0, who + ": no process")
        seen = started.get(x, {})
        for p in procs:
            n = db.execute("SELECT count(*) FROM events WHERE exec_id = ? AND pid = ?",
                           (x, p["pid"])).fetchone()[0]
            expect(p["pid"] in seen, who + ": pid %d is not one of %s" % (p["pid"], seen))
            expect(p["rank"] == seen.get(p["pid"], -1), who + ": rank of pid %d" % p["pid"])
            expect(p["events"] == n > 0, who + ": pid %d: %d events, %d stored"
                   % (p["pid"], p["events"], n))
        expect(e["events"] == sum(p["events"] for p in procs), who + ": events total")
        # every rank the launcher started reported
        ranked = {pid for pid, rank in seen.items() if rank is not None}
        expect(ranked <= {p["pid"] for p in procs}, who + ": a rank is missing")
        if d == "coverage":
            expect(sorted(p["rank"] for p in procs if p["rank"] is not None) == [0, 1],
                   who + ": ranks 0 and 1")
    first = db.execute("SELECT min(created_ns) FROM executions").fetchone()[0]
    last = db.execute("SELECT max(finished_ns) FROM executions").fetchone()[0]
    run = db.execute("SELECT created_ns FROM runs").fetchone()[0]
    expect(run <= first, d + ": the run starts before its first execution")
    expect((last - first) / 1e9 <= check_s <= elapsed,
           d + ": check_s %.3f outside [%.3f, %.3f]" % (check_s, (last - first) / 1e9, elapsed))
    expect(abs(wall["executions_s"] - total) < 1e-4, d + ": executions_s is the sum")
    expect(wall["ratio"] >= 1 and abs(wall["ratio"] - check_s / wall["executions_s"]) < 1e-3,
           d + ": ratio %s" % wall["ratio"])
    print(d, json.dumps({"executions": [{k: e[k] for k in ("wall_s", "events", "processes")}
                                        for e in execs], "wall_time": wall}))
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
expect_no_daemon
