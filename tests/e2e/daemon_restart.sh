#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# daemon_restart.sh -- an external daemon killed (SIGKILL) in the middle of a
# training run and restarted 0.3 s later on the same database loses no event:
# the agent keeps every batch until the daemon's `seen` covers it and sends
# again what the dead daemon never committed.  A record of a real torch loop
# whose daemon is bounced twice stores every event of every process without a
# gap, and a real resume check whose executions A and R each lose their
# daemon once is still judged (PASS).  The training scripts mark where they
# are in $TP_MARKS, outside the working tree the check watches.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
tp_setup daemon agent
py=${TP_PYTHON:?}
[ -x "$py" ] || fail "$py is missing: run make setup"

mkdir -m 0700 "$WORK/ext" "$WORK/proj" "$WORK/marks"
db=$WORK/ext/runs.db
url=ipc://$WORK/ext/ingest.ipc
dpid=
problems=

# problem WHAT: notes a failed requirement; the test fails at its end with all.
problem() {
    problems="$problems${problems:+; }$*"
}

# daemon_start starts the daemon and waits until it serves (a killed one
# leaves its socket files behind), 60 s at most: a liveness bound.
daemon_start() {
    local i=0
    "$TP_DAEMON" serve --db "$db" --listen "$url" 2>>"$WORK/ext/log" &
    dpid=$!
    until grep -q "pid $dpid serving" "$WORK/ext/log" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 1200 ] || fail "the daemon did not start: $(cat "$WORK/ext/log")"
        kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/ext/log")"
        sleep 0.05
    done
}

# daemon_bounce MARK waits for the file MARK, then kills the daemon hard and
# restarts it 0.3 s later on the same database and URL.
daemon_bounce() {
    wait_for_file "$1" 60
    kill -KILL "$dpid"
    wait "$dpid" 2>/dev/null
    sleep 0.3
    daemon_start
}

# check_complete RUN: every process of RUN has its bye, stored every event it
# sent (nevents == sent) and has no gap; prints the events lost otherwise.
check_complete() {
    "$py" - "$db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT p.exec_id, p.pid, p.sent, p.nevents, coalesce(p.max_seq, -1),"
    " (SELECT count(*) FROM gaps g WHERE g.exec_id = p.exec_id AND g.pid = p.pid)"
    " FROM processes p JOIN executions e ON e.id = p.exec_id WHERE e.run_id = ?",
    (int(sys.argv[2]),)).fetchall()
bad = []
lost = 0
for ex, pid, sent, n, mx, gaps in rows:
    if sent is None or n != sent or mx != sent - 1 or gaps:
        bad.append("exec %d pid %d: sent %s, stored %d, max seq %d, %d gaps"
                   % (ex, pid, sent, n, mx, gaps))
        lost += (sent or 0) - n
if not rows:
    bad.append("no process stored")
if bad:
    print("%d events lost: %s" % (lost, "; ".join(bad)))
    sys.exit(1)
print("%d processes, %d events, none lost" % (len(rows), sum(r[3] for r in rows)))
PY
}

daemon_start
export TRAINPARITY_DAEMON=$url
export TP_MARKS=$WORK/marks

# ---- record: a torch loop that emits events for a few seconds ----
cat >"$WORK/proj/train.py" <<'PY'
import os, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.9)
x, y = torch.randn(64, 16), torch.randn(64, 1)
for step in range(600):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sched.step()
    if step in (150, 400):
        open(os.path.join(os.environ["TP_MARKS"], "record-%d" % step), "w").close()
    time.sleep(0.002)
print("done", flush=True)
PY
cd "$WORK/proj" || fail "cd"
"$TP_RUN" record -- "$py" train.py >"$WORK/rec.out" 2>"$WORK/rec.err" &
rec=$!
daemon_bounce "$WORK/marks/record-150"
daemon_bounce "$WORK/marks/record-400"
wait "$rec"
st=$?
[ "$st" = 0 ] || problem "record exited $st: $(cat "$WORK/rec.err")"
grep -q incomplete "$WORK/rec.err" && problem "record warns: $(cat "$WORK/rec.err")"
run=$(sed -n 's/^run \([0-9]*\)$/\1/p' "$WORK/rec.out")
[ -n "$run" ] || fail "record printed no run: $(cat "$WORK/rec.out")"
check_complete "$run" >"$WORK/q" || problem "record, daemon restarted mid-run: $(cat "$WORK/q")"

# ---- resume: the fixtures' clean loop, longer; A and R lose their daemon ----
cp "$root/fixtures/resume/"*.py "$WORK/proj/" || fail "cannot copy the fixtures"
cat >"$WORK/proj/slow_full_state.py" <<'PY'
# full_state.py's clean loop, long enough for the daemon to die in it
import os, time
from _loop import Trainer

class Slow(Trainer):
    steps = 160
    save_every = 80

    def train_step(self):
        super().train_step()
        if self.step in (40, 120):
            mark = "%s-%d" % (os.environ["TRAINPARITY_ROLE"], self.step)
            open(os.path.join(os.environ["TP_MARKS"], mark), "w").close()
        time.sleep(0.002)

Slow().main()
PY
"$TP_RUN" resume --resume-args --resume --json "$WORK/report.json" -- "$py" slow_full_state.py \
    >"$WORK/res.out" 2>"$WORK/res.err" &
res=$!
daemon_bounce "$WORK/marks/A-40"
daemon_bounce "$WORK/marks/R-120"
wait "$res"
st=$?
[ "$st" = 0 ] || problem "resume exited $st, want 0 (PASS): $(grep -v '^step ' "$WORK/res.out" | head -30); $(tail -5 "$WORK/res.err")"
"$py" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["outcome"] != "PASS")' \
    "$WORK/report.json" 2>/dev/null || problem "resume report: $(cat "$WORK/report.json" 2>&1)"
check_complete $((run + 1)) >"$WORK/q" || problem "resume, daemon restarted mid-run: $(cat "$WORK/q")"

kill -TERM "$dpid"
wait "$dpid"
[ -z "$problems" ] || fail "$problems"
