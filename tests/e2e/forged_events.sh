#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# forged_events.sh -- a process that is not part of an execution cannot put
# events in it.  Execution ids are predictable (the next record gets run 1,
# execution 1 on a fresh daemon), so a planted training process under the
# agent claims them before record makes them: over the socket without a
# key, with a guessed key, and through a spool file dropped where record
# looks for its execution's.  The record that follows must show its own
# process only, with its own losses.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"

mkdir -m 0700 "$WORK/ext" "$WORK/proj"
"$TP_DAEMON" serve --db "$WORK/ext/runs.db" --listen "ipc://$WORK/ext/ingest.ipc" \
    2>"$WORK/ext/log" &
dpid=$!
wait_for_file "$WORK/ext/ingest.ipc.ctl"

cat >"$WORK/train.py" <<'PY'
import os, sys
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scale = float(sys.argv[1])  # the planted processes' losses are 1000 times larger
for _ in range(3):
    opt.zero_grad()
    loss = model(torch.ones(8, 4)).pow(2).mean() * scale
    loss.backward()
    opt.step()
print(os.getpid())
PY

# plant PIDFILE [VAR=VALUE...]: the training script under the agent, told
# it is run 1's execution 1, with the environment given
plant() {
    local out=$1
    shift
    env TRAINPARITY_RUN=1 TRAINPARITY_EXEC=1 TRAINPARITY_SEND_TIMEOUT_MS=200 \
        LD_PRELOAD="$TP_AGENT" "$@" "$TP_PYTHON" "$WORK/train.py" 1000 >"$out" 2>"$out.err" ||
        fail "the planted process failed: $(cat "$out.err")"
}
plant "$WORK/p1" TRAINPARITY_DAEMON="ipc://$WORK/ext/ingest.ipc" \
    TRAINPARITY_CONTROL="ipc://$WORK/ext/ingest.ipc.ctl"
plant "$WORK/p2" TRAINPARITY_DAEMON="ipc://$WORK/ext/ingest.ipc" \
    TRAINPARITY_CONTROL="ipc://$WORK/ext/ingest.ipc.ctl" \
    TRAINPARITY_EXEC_KEY=0123456789abcdef0123456789abcdef
# the daemon unreachable: the agent spools, into the folder record reads
mkdir -p -m 0700 "$WORK/proj/.trainparity/spool"
plant "$WORK/p3" TRAINPARITY_DAEMON="ipc://$WORK/nothing.ipc" \
    TRAINPARITY_SPOOL="$WORK/proj/.trainparity/spool"
ls "$WORK/proj/.trainparity/spool/1-$(cat "$WORK/p3").spool" >/dev/null 2>&1 ||
    fail "the planted process wrote no spool file: $(ls -R "$WORK/proj/.trainparity")"

cd "$WORK/proj" || fail "cd"
export TRAINPARITY_DAEMON=ipc://$WORK/ext/ingest.ipc
# the forged spool frames are dropped; record may call its record incomplete
# for that (ERROR), never store them
"$TP_RUN" record -- "$TP_PYTHON" "$WORK/train.py" 1 >"$WORK/out" 2>"$WORK/err"
st=$?
[ "$st" = 0 ] || { [ "$st" = 3 ] && grep -q spool "$WORK/err"; } ||
    fail "record exited $st: $(cat "$WORK/err")"
expect_grep '^run 1$' "$WORK/out"
unset TRAINPARITY_DAEMON
kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/ext/log")"

# what run 1 holds, read from the database
"$TP_PYTHON" - "$WORK/ext/runs.db" >"$WORK/db" 2>&1 <<'PY' || fail "reading the db: $(cat "$WORK/db")"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (pid,) in db.execute("SELECT p.pid FROM processes p JOIN executions e ON e.id = p.exec_id"
                         " WHERE e.run_id = 1"):
    print("process", pid)
for (pid, n) in db.execute("SELECT pid, count(*) FROM events GROUP BY pid"):
    print("events", pid, n)
print("refused", db.execute("SELECT coalesce(max(value), 0) FROM counters"
                            " WHERE name = 'refused'").fetchone()[0])
PY
for p in p1 p2 p3; do
    grep -q "^process $(cat "$WORK/$p")$" "$WORK/db" &&
        fail "a planted process ($p, pid $(cat "$WORK/$p")) is in run 1: $(cat "$WORK/db")"
    grep -q "^events $(cat "$WORK/$p") " "$WORK/db" &&
        fail "events of a planted process ($p) were stored: $(cat "$WORK/db")"
done
[ "$(grep -c '^process ' "$WORK/db")" = 1 ] || fail "run 1 is not one process: $(cat "$WORK/db")"
grep -Eq '^refused [1-9]' "$WORK/db" || fail "no batch was refused: $(cat "$WORK/db")"
# record's own process is there, with its own losses (the planted ones are 1000x)
"$TP_DAEMON" query --db "$WORK/ext/runs.db" run 1 >"$WORK/q" 2>&1 || fail "query: $(cat "$WORK/q")"
"$TP_DAEMON" query --db "$WORK/ext/runs.db" steps 1 >"$WORK/steps" 2>&1 ||
    fail "query steps: $(cat "$WORK/steps")"
[ "$(grep -c 'process [0-9]*:' "$WORK/q")" = 1 ] || fail "run 1: $(cat "$WORK/q")"
awk '/^ +[0-9]+ / && $2 + 0 > 10 { bad = 1 } END { exit bad }' "$WORK/steps" ||
    fail "run 1 shows a planted loss: $(cat "$WORK/steps")"
grep -Eq '^ +2 +0\.' "$WORK/steps" || fail "run 1 lacks its own steps: $(cat "$WORK/steps")"

kill -TERM "$dpid"
wait "$dpid"
