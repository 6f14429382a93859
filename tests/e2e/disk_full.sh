#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# disk_full.sh -- the database's writes fail while a command trains.  The
# fault is real: prlimit lowers the running daemon's file-size limit
# (RLIMIT_FSIZE, soft) to the size its database files have, so every write
# past it fails with EFBIG (SQLite: "disk I/O error"), as writes to a full
# disk do.  Lifted after a second: the batches waited in the daemon's memory
# and nothing is lost (record exits 0, every process stored all it sent).
# Never lifted while the command runs: record exits 3 naming the events the
# daemon could not store and its reason, in bounded time; the daemon serves
# on and keeps what it had stored.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
command -v prlimit >/dev/null || fail "prlimit (util-linux) is needed"
[ -x "${TP_PYTHON:-}" ] || fail "TP_PYTHON (the project's venv python) is not set"
"$TP_PYTHON" -c 'import torch' 2>/dev/null || fail "$TP_PYTHON has no torch"

# ~3 s of optimizer steps; "started" appears once events flow.
cat >"$WORK/train.py" <<'EOF'
import sys, time
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(128, 32)
y = x.sum(dim=1, keepdim=True)
end = time.monotonic() + float(sys.argv[2])
step = 0
while time.monotonic() < end:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    step += 1
    if step == 5:
        open(sys.argv[1], "w").close()
    time.sleep(0.02)
print("trained", step, "steps", flush=True)
EOF

mkdir -m 0700 "$WORK/ext" "$WORK/proj"
DB=$WORK/ext/runs.db
"$TP_DAEMON" serve --db "$DB" --listen "ipc://$WORK/ext/ingest.ipc" 2>"$WORK/ext/log" &
dpid=$!
wait_for_file "$WORK/ext/ingest.ipc.ctl"
export TRAINPARITY_DAEMON=ipc://$WORK/ext/ingest.ipc
cd "$WORK/proj" || fail "cd"

# cap: from now on the daemon cannot write past the smaller of its database
# and its write-ahead log, so no commit can succeed; uncap lifts that.
cap() {
    local db wal
    db=$(stat -c %s "$DB") && wal=$(stat -c %s "$DB-wal") || fail "no database files"
    prlimit --pid "$dpid" --fsize="$((db < wal ? db : wal)):" || fail "prlimit"
}
uncap() {
    prlimit --pid "$dpid" --fsize=unlimited: || fail "prlimit"
}
alive() {
    kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/ext/log")"
}

# db_check RUN: prints "<processes> <short>", short being the processes of
# RUN whose stored events fall short of what their bye says they sent (or
# that have no bye).
db_check() {
    "$TP_PYTHON" - "$DB" "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT p.pid, p.nevents, p.sent, p.bye_reason FROM processes p"
                  " JOIN executions e ON e.id = p.exec_id WHERE e.run_id = ?",
                  (int(sys.argv[2]),)).fetchall()
short = [r for r in rows if r[3] is None or r[1] != r[2]]
print(len(rows), len(short), sum(r[1] for r in rows))
EOF
}

# record_bg N: runs record on ~N s of training in the background (pid in
# rpid; stdout, stderr and exit status in $WORK/rec.{out,err,rc}) and
# returns once events flow.
record_bg() {
    rm -f "$WORK/started" "$WORK/rec.rc"
    (
        "$TP_RUN" record -- "$TP_PYTHON" "$WORK/train.py" "$WORK/started" "$1" \
            >"$WORK/rec.out" 2>"$WORK/rec.err"
        echo $? >"$WORK/rec.rc"
    ) &
    rpid=$!
    wait_for_file "$WORK/started" 120
}

# 1. The disk is full for a second while the command trains: nothing lost.
record_bg 3
cap
sleep 1
alive
uncap
wait "$rpid"
rc=$(cat "$WORK/rec.rc")
[ "$rc" = 0 ] || fail "record exited $rc with the disk full for a second, want 0: $(cat "$WORK/rec.err")"
expect_grep '^run 1$' "$WORK/rec.out"
expect_grep '^trained [0-9]+ steps$' "$WORK/rec.out"
grep -q 'no steps recorded' "$WORK/rec.out" && fail "no steps shown: $(cat "$WORK/rec.out")"
read -r nproc short events1 <<<"$(db_check 1)"
[ "$nproc" -ge 1 ] || fail "run 1 stored no process"
[ "$short" = 0 ] || fail "run 1: $short of $nproc processes lost events"
grep -q 'kept in memory and retried' "$WORK/ext/log" ||
    fail "no write failed while capped (the fault was not injected): $(cat "$WORK/ext/log")"

# 2. The disk stays full until the command has ended: record says ERROR,
# naming the events and the reason, within bounded time.
record_bg 3
cap
t0=$(date +%s)
for _ in $(seq 1200); do
    [ -e "$WORK/rec.rc" ] && break
    sleep 0.1
done
[ -e "$WORK/rec.rc" ] || fail "record did not end within 120 s of a full disk"
wait "$rpid"
took=$(($(date +%s) - t0))
alive
rc=$(cat "$WORK/rec.rc")
[ "$rc" = 3 ] || fail "record exited $rc with the disk full, want 3: $(cat "$WORK/rec.err")"
expect_grep 'could not store [0-9]+ events' "$WORK/rec.err"
expect_grep 'disk I/O error' "$WORK/rec.err"
expect_grep '^run 2$' "$WORK/rec.out"
[ "$took" -le 60 ] || fail "record took $took s to give up on a full disk"
echo "record gave up on the full disk after $took s"

# The daemon serves on; once the disk has room again it stores anew, and
# nothing stored before was lost.
uncap
expect_status 0 "$TP_RUN" record -- true
expect_grep '^run 3$' "$WORK/out"
alive
read -r _ _ events1_after <<<"$(db_check 1)"
[ "$events1_after" = "$events1" ] || fail "run 1 had $events1 events, now $events1_after"
kill -TERM "$dpid"
wait "$dpid" || fail "the daemon exited $?: $(cat "$WORK/ext/log")"
"$TP_DAEMON" query --db "$DB" runs >"$WORK/q" 2>&1 || fail "query runs failed: $(cat "$WORK/q")"
expect_grep '^3[[:space:]]' "$WORK/q"
