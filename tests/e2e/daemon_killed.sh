#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# daemon_killed.sh -- a daemon killed (SIGKILL) while trainparity-run waits
# on it is noticed within seconds, never after a long timeout:
#  1. the private daemon killed mid-training: record says so (pid, how it
#     ended, the log), starts a fresh one on the same database and sockets,
#     and ends soon after the training with every event stored (the agents
#     resend what the dead daemon never committed);
#  2. the private daemon killed while exec.finish waits for a process that
#     died without its bye: restarted, record ends within seconds;
#  3. private daemons killed again and again: a bounded number of restarts,
#     then ERROR (3) within seconds;
#  4. an external daemon (TRAINPARITY_DAEMON) killed as the command ends:
#     never restarted, ERROR (3) with a reason within seconds.
# Every run of the tool is bounded by timeout(1), so a hang fails, not waits.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
py=${TP_PYTHON:?}
[ -x "$py" ] || fail "$py is missing: run make setup"

mkdir -m 0700 "$WORK/marks"
export TP_MARKS=$WORK/marks

# private_daemons prints the pids of daemons serving this test's database.
private_daemons() {
    pgrep -f -- "serve --db $WORK/.trainparity/runs.db" || true
}

# daemon_pid prints the pid of the one private daemon serving now.
daemon_pid() {
    local p
    p=$(private_daemons)
    [ "$(echo "$p" | wc -w)" = 1 ] || fail "want one private daemon, have: '$p'"
    echo "$p"
}

now_ms() {
    date +%s%3N
}

# record_bg OUT ARGS...: trainparity-run record in the background, bounded
# by 120 s; its pid in $rec.
record_bg() {
    local out=$1
    shift
    timeout 120 "$TP_RUN" record "$@" >"$WORK/$out.out" 2>"$WORK/$out.err" &
    rec=$!
}

# expect_quick WHAT START_MS LIMIT_S [ERR]: fails when more than LIMIT_S
# seconds went by since START_MS; shows the file ERR (the tool's stderr).
# LIMIT_S is a liveness bound, not a timing: each case takes a few seconds
# when it works (the longest wait by design is the 10 s an external daemon
# gets), the tool is killed at 120 s when it hangs, and LIMIT_S lies between,
# so that a busy machine never crosses it and a hang always does.
expect_quick() {
    local took=$(($(now_ms) - $2))
    echo "$1: $took ms"
    [ -z "${4:-}" ] || sed 's/^/  | /' "$4"
    [ "$took" -lt $(($3 * 1000)) ] || fail "$1 took $took ms (limit $3 s)"
}

cat >"$WORK/train.py" <<'PY'
import os, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 1)
marks = os.environ["TP_MARKS"]
for step in range(300):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if step == 100:
        open(os.path.join(marks, "train"), "w").close()
    time.sleep(0.01)
open(os.path.join(marks, "train.end"), "w").close()
PY

# ---- 1: the private daemon killed mid-training ----
record_bg r1 -- "$py" train.py
wait_for_file "$WORK/marks/train" 60
dpid=$(daemon_pid) || exit 1
# timed from the kill: starting torch under a loaded machine is not the point
t0=$(now_ms)
kill -KILL "$dpid"
wait "$rec"
st=$?
[ "$st" = 0 ] || fail "record (daemon killed mid-run) exited $st: $(cat "$WORK/r1.err")"
expect_quick "record, daemon killed mid-run (from the kill)" "$t0" 60 "$WORK/r1.err"
expect_grep "daemon \(pid $dpid\) was killed by signal 9.*restart.*\.trainparity/daemon\.log" \
    "$WORK/r1.err"
run=$(sed -n 's/^run \([0-9]*\)$/\1/p' "$WORK/r1.out")
[ -n "$run" ] || fail "record printed no run: $(cat "$WORK/r1.out")"
# The fresh daemon stored the process's end: the tool carried on with it.
"$py" - "$WORK/.trainparity/runs.db" "$run" >"$WORK/q" 2>&1 <<'PY' || fail "run $run: $(cat "$WORK/q")"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT p.pid, p.bye_reason, p.sent, p.nevents, coalesce(p.max_seq, -1),"
    " (SELECT count(*) FROM gaps g WHERE g.exec_id = p.exec_id AND g.pid = p.pid)"
    " FROM processes p JOIN executions e ON e.id = p.exec_id WHERE e.run_id = ?",
    (int(sys.argv[2]),)).fetchall()
if not rows:
    sys.exit("no process stored")
for pid, bye, sent, n, mx, gaps in rows:
    if bye is None:
        sys.exit("process %d has no bye: the record stopped with the daemon" % pid)
    lost = sent is None or n != sent or mx != sent - 1 or gaps
    print("pid %d: sent %s, stored %d, %d gaps%s" % (pid, sent, n, gaps, " (lost)" if lost else ""))
PY
cat "$WORK/q"
# Nothing is lost: the agents resend what no daemon acknowledged (agent/send.c).
grep -q '(lost)' "$WORK/q" && fail "record 1 lost events: $(cat "$WORK/q"); $(cat "$WORK/r1.err")"
grep -q 'incomplete' "$WORK/r1.err" && fail "record 1 warns: $(cat "$WORK/r1.err")"
[ -z "$(private_daemons)" ] || fail "a daemon is left after record 1: $(private_daemons)"

# ---- 2: killed while exec.finish waits for a process without its bye ----
cat >"$WORK/nobye.py" <<'PY'
import os, signal, time
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
time.sleep(0.5)  # the agent's sender delivers the steps: the daemon knows the process
open(os.path.join(os.environ["TP_MARKS"], "nobye"), "w").close()
os.kill(os.getpid(), signal.SIGKILL)
PY
record_bg r2 -- "$py" nobye.py
wait_for_file "$WORK/marks/nobye" 60
sleep 1 # the command is gone; exec.finish waits up to 5 s for its bye
dpid=$(daemon_pid) || exit 1
t0=$(now_ms)
kill -KILL "$dpid"
wait "$rec"
st=$?
[ "$st" = 137 ] || fail "record (daemon killed in exec.finish) exited $st: $(cat "$WORK/r2.err")"
expect_quick "record, daemon killed while exec.finish waits (from the kill)" "$t0" 60 "$WORK/r2.err"
expect_grep "daemon \(pid $dpid\) was killed by signal 9.*restart" "$WORK/r2.err"
expect_grep '^run [0-9]+$' "$WORK/r2.out"
[ -z "$(private_daemons)" ] || fail "a daemon is left after record 2: $(private_daemons)"

# ---- 3: killed again and again: bounded restarts, then ERROR ----
record_bg r3 -- "$py" nobye.py
rm -f "$WORK/marks/nobye"
wait_for_file "$WORK/marks/nobye" 60
t0=$(now_ms)
# every daemon dies until the tool ends (60 s: a liveness bound; on a busy
# machine the three restarts alone took more than the 8 s this loop had)
end=$(($(now_ms) + 60000))
while kill -0 "$rec" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do
    for p in $(private_daemons); do kill -KILL "$p" 2>/dev/null; done
    sleep 0.05
done
wait "$rec"
st=$?
[ "$st" = 137 ] || [ "$st" = 3 ] || fail "record (daemons killed repeatedly) exited $st: $(cat "$WORK/r3.err")"
expect_quick "record, daemons killed repeatedly (from the first kill)" "$t0" 60 "$WORK/r3.err"
expect_grep 'restart' "$WORK/r3.err"
expect_grep 'gave up|giving up|not restarted' "$WORK/r3.err"
[ -z "$(private_daemons)" ] || fail "a daemon is left after record 3: $(private_daemons)"

# ---- 4: an external daemon killed as the command ends ----
mkdir -m 0700 "$WORK/ext"
"$TP_DAEMON" serve --db "$WORK/ext/runs.db" --listen "ipc://$WORK/ext/ingest.ipc" \
    2>>"$WORK/ext/log" &
ext=$!
disown "$ext" # its SIGKILL is the point, not news
wait_for_file "$WORK/ext/ingest.ipc.ctl"
t0=$(now_ms)
TRAINPARITY_DAEMON=ipc://$WORK/ext/ingest.ipc timeout 120 "$TP_RUN" record -- \
    sh -c "kill -KILL $ext" >"$WORK/r4.out" 2>"$WORK/r4.err"
st=$?
[ "$st" = 3 ] || fail "record (external daemon killed) exited $st, want 3: $(cat "$WORK/r4.err")"
expect_quick "record, external daemon killed" "$t0" 60 "$WORK/r4.err"
expect_grep "ipc://$WORK/ext/ingest.ipc \\(TRAINPARITY_DAEMON\\) has gone.*never restarted" "$WORK/r4.err"
[ -z "$(pgrep -f -- "serve --db $WORK/.trainparity/runs.db")" ] || fail "a private daemon was started"
expect_no_daemon
