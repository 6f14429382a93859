#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# two_commands.sh -- two records in one project overlap in time, the first
# short and the second longer: they share the private daemon the first one
# started, the first one's end does not cut the second off (both records are
# complete), and once both have ended no daemon is left.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
py=${TP_PYTHON:?}
[ -x "$py" ] || fail "$py is missing: run make setup"

mkdir -m 0700 "$WORK/marks"
export TP_MARKS=$WORK/marks

# train.py NAME STEPS [AFTER]: marks NAME.start at its first step, NAME.end
# after its last; 10 ms a step.  Given AFTER, it ends only once the file AFTER
# exists: the test, not the machine's speed, decides that the two overlap.
# (AFTER is relative: $WORK in a command line would count as a daemon for
# tp_strays.)
cat >"$WORK/train.py" <<'PY'
import os, sys, time
import torch
name, steps = sys.argv[1], int(sys.argv[2])
after = sys.argv[3] if len(sys.argv) > 3 else None
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 1)
mark = os.path.join(os.environ["TP_MARKS"], name)
for step in range(steps):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if step == 0:
        open(mark + ".start", "w").close()
    time.sleep(0.01)
while after and not os.path.exists(after):
    time.sleep(0.01)
open(mark + ".end", "w").close()
PY

# check_complete RUN STEPS: every process of RUN said bye, stored every event
# it sent without a gap, and the run has STEPS optimizer steps.
check_complete() {
    "$py" - "$WORK/.trainparity/runs.db" "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
run, steps = int(sys.argv[2]), int(sys.argv[3])
rows = db.execute(
    "SELECT p.pid, p.bye_reason, p.sent, p.nevents, coalesce(p.max_seq, -1),"
    " (SELECT count(*) FROM gaps g WHERE g.exec_id = p.exec_id AND g.pid = p.pid)"
    " FROM processes p JOIN executions e ON e.id = p.exec_id WHERE e.run_id = ?",
    (run,)).fetchall()
if not rows:
    sys.exit("run %d: no process stored" % run)
for pid, bye, sent, n, mx, gaps in rows:
    if bye is None or sent is None or n != sent or mx != sent - 1 or gaps:
        sys.exit("run %d pid %d: bye %s, sent %s, stored %d, max seq %d, %d gaps"
                 % (run, pid, bye, sent, n, mx, gaps))
got = db.execute(
    "SELECT count(DISTINCT ev.step) FROM events ev JOIN executions e ON e.id = ev.exec_id"
    " WHERE e.run_id = ? AND ev.kind = 'step'", (run,)).fetchone()[0]
if got != steps:
    sys.exit("run %d: %d optimizer steps stored, want %d" % (run, got, steps))
print("run %d: %d processes, %d events, %d steps" % (run, len(rows), sum(r[3] for r in rows), got))
PY
}

timeout 120 "$TP_RUN" record -- "$py" train.py first 400 marks/second.start \
    >"$WORK/first.out" 2>"$WORK/first.err" &
first=$!
wait_for_file "$WORK/marks/first.start" 60
timeout 120 "$TP_RUN" record -- "$py" train.py second 1000 marks/first.done \
    >"$WORK/second.out" 2>"$WORK/second.err" &
second=$!
wait_for_file "$WORK/marks/second.start" 60
[ -e "$WORK/marks/first.end" ] && fail "the first command ended before the second started: make it longer"

wait "$first"
st=$?
[ "$st" = 0 ] || fail "first record exited $st: $(cat "$WORK/first.err")"
[ -e "$WORK/marks/second.end" ] && fail "the second command ended before the first record: make it longer"
kill -0 "$second" 2>/dev/null || fail "the second record ended with the first: $(cat "$WORK/second.err")"
[ -n "$(tp_strays)" ] || fail "no daemon runs for the second record once the first has ended"
touch "$WORK/marks/first.done"

wait "$second"
st=$?
[ "$st" = 0 ] || fail "second record exited $st: $(cat "$WORK/second.err")"
for who in first second; do
    grep -q 'incomplete' "$WORK/$who.err" && fail "$who record warns: $(cat "$WORK/$who.err")"
    run=$(sed -n 's/^run \([0-9]*\)$/\1/p' "$WORK/$who.out")
    [ -n "$run" ] || fail "$who record printed no run: $(cat "$WORK/$who.out")"
    steps=400
    [ "$who" = second ] && steps=1000
    check_complete "$run" "$steps" >"$WORK/q" 2>&1 || fail "$who record: $(cat "$WORK/q")"
    cat "$WORK/q"
done

# The second record was the last holder: the daemon is gone within seconds
# (60 s here: a liveness bound, for a busy machine).
for i in $(seq 1 600); do
    [ -z "$(tp_strays)" ] && break
    sleep 0.1
done
expect_no_daemon

# A holder killed (SIGKILL) cannot detach: the daemon drops it once it is
# gone and, holding nobody, exits within seconds.
timeout 120 "$TP_RUN" record -- "$py" train.py third 1000 >"$WORK/third.out" 2>"$WORK/third.err" &
third=$!
wait_for_file "$WORK/marks/third.start" 60
[ -n "$(tp_strays)" ] || fail "no daemon runs for the third record"
tool=$(pgrep -P "$third") # timeout's child
[ -n "$tool" ] || fail "no trainparity-run under timeout $third"
cmd=$(pgrep -P "$tool" -f "train.py third") # not the daemon it started
kill -KILL "$tool"
[ -z "$cmd" ] || kill -KILL $cmd # the command it ran, orphaned now
wait "$third" 2>/dev/null
for i in $(seq 1 600); do
    [ -z "$(tp_strays)" ] && break
    sleep 0.1
done
expect_no_daemon
