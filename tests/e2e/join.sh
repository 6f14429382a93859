#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# join.sh -- trainparity-run join on one host (e2e.multinode runs it as a
# PyTorchJob's second pod): a follower in a folder of its own runs the
# command of the check's execution, whose daemon stores both processes; a
# bad URL, no token, a wrong token and no daemon at all are each a clear
# error, and the check goes on without a follower that was refused; and
# when the daemon refuses every agent, the follower sends what its agent
# spooled, which the check cannot read, and the record is whole; a
# follower that cannot send it makes the record ERROR.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
PY=${TP_PYTHON:-$(dirname "$0")/../../.venv/bin/python}
port=$(free_ports) || exit 1
url=tcp://127.0.0.1:$port
mkdir -m 0700 "$WORK/pod1"
printf '%s\n' 'import torch' 'm = torch.nn.Linear(4, 1)' \
    'o = torch.optim.SGD(m.parameters(), lr=0.1)' \
    'for _ in range(3):' '    o.zero_grad(); m(torch.ones(2, 4)).sum().backward(); o.step()' >t.py
cp t.py "$WORK/pod1/"

# follow POD: a follower in $WORK/POD, in the background (its pid in
# joined), its stdout, stderr and exit status in $WORK/POD.out, .err and
# .status.
follow() {
    (cd "$WORK/$1" && timeout 120 "$TP_RUN" join --wait 60 "$url" >"$WORK/$1.out" \
        2>"$WORK/$1.err"; echo $? >"$WORK/$1.status") &
    joined=$!
}

# unhold ends hold_cap's holder.
unhold() {
    kill "$HOLDER"
    wait "$HOLDER" 2>/dev/null
}

expect_status 64 "$TP_RUN" join
expect_grep 'give the check.s network URL' "$WORK/err"
expect_status 64 "$TP_RUN" join "ipc://$WORK/x"
expect_grep 'give the check.s network URL' "$WORK/err"
expect_status 64 "$TP_RUN" join --wait soon "$url"
expect_grep "wants a number of seconds" "$WORK/err"
(cd "$WORK/pod1" && expect_status 3 "$TP_RUN" join "$url") || exit 1
expect_grep 'no token for the check.s daemon' "$WORK/err"
export TRAINPARITY_TOKEN=join-test-token-0123456789
(cd "$WORK/pod1" && expect_status 3 timeout 120 "$TP_RUN" join --wait 2 "$url") || exit 1
expect_grep "no answer from tcp://127.0.0.1:$((port + 1)) for 2 s" "$WORK/err"

# The follower runs the execution's command; both processes are stored.
follow pod1
expect_status 0 timeout 120 "$TP_RUN" record --listen "$url" -- "$PY" t.py
wait "$joined"
[ "$(cat "$WORK/pod1.status")" = 0 ] ||
    fail "join exited $(cat "$WORK/pod1.status"): $(cat "$WORK/pod1.err")"
n=$(tp_query run 1 | grep -c '^  process [0-9]*: rank')
[ "$n" = 2 ] || fail "want the processes of both hosts in the execution, got $n: $(tp_query run 1)"

# A follower with another token is refused at once; the check runs without it.
(cd "$WORK/pod1" && TRAINPARITY_TOKEN=wrong timeout 120 "$TP_RUN" join "$url" \
    >"$WORK/pod1.out" 2>"$WORK/pod1.err"; echo $? >"$WORK/pod1.status") &
joined=$!
expect_status 0 timeout 120 "$TP_RUN" record --listen "$url" -- "$PY" t.py
wait "$joined"
[ "$(cat "$WORK/pod1.status")" = 3 ] || fail "join with a wrong token exited $(cat "$WORK/pod1.status")"
expect_grep 'refused: daemon: missing or wrong token' "$WORK/pod1.err"
n=$(tp_query run 2 | grep -c '^  process [0-9]*: rank')
[ "$n" = 1 ] || fail "want the leader's process only, got $n"

# Every agent refused: the project's daemon, started here with the network
# URL, has the cap of connections without the token from this address held
# by sp_hold.py, so no agent's connection is let in, on either "host".  Each
# agent spools what the daemon never acknowledged; the check stores its own
# host's spool file, and the follower sends the frames of its own (the
# daemon cannot read the follower's folder) before it says it is done: both
# processes are whole, and the record passes.
"$TP_DAEMON" serve --db "$WORK/.trainparity/runs.db" --listen "ipc://$WORK/.trainparity/ingest.ipc" \
    --listen "$url" 2>"$WORK/serve.log" &
serving=$!
wait_for_file "$WORK/.trainparity/ingest.ipc.ctl" 30
hold_cap "$port"
follow pod1
expect_status 0 timeout 120 "$TP_RUN" record --listen "$url" --json rec.json -- "$PY" t.py
wait "$joined"
unhold
[ "$(cat "$WORK/pod1.status")" = 0 ] ||
    fail "join exited $(cat "$WORK/pod1.status"): $(cat "$WORK/pod1.err")"
ls "$WORK"/pod1/.trainparity/spool/done/3-*.spool >/dev/null 2>&1 ||
    fail "the follower sent no spool file: $(ls -R "$WORK/pod1/.trainparity")"
"$PY" - rec.json <<'EOF' || fail "record: $(cat rec.json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["spool_files"] == 1, ("the leader's agent was not refused", r["spool_files"])
EOF
tp_query run 3 >"$WORK/q"
[ "$(grep -c '^  process [0-9]*: rank' "$WORK/q")" = 2 ] ||
    fail "want the processes of both hosts: $(cat "$WORK/q")"
[ "$(grep -c 'bye exit, .*dropped 0, errors 0, gaps none' "$WORK/q")" = 2 ] ||
    fail "want both processes whole: $(cat "$WORK/q")"

# The same, but the follower cannot send its spool file (its spool/done is
# a file, so the file cannot be moved there and is not sent): join says so
# in exec.done, and the record is ERROR (3), not a pass on the leader's
# process alone.
mkdir -m 0700 "$WORK/pod2" "$WORK/pod2/.trainparity" "$WORK/pod2/.trainparity/spool"
: >"$WORK/pod2/.trainparity/spool/done"
cp t.py "$WORK/pod2/"
hold_cap "$port"
follow pod2
expect_status 3 timeout 120 "$TP_RUN" record --listen "$url" --json rec4.json -- "$PY" t.py
wait "$joined"
unhold
expect_grep "execution [0-9]+ is incomplete: spool files its agents wrote on another host were not sent \\(.* \\(pid [0-9]+\\): 1\\)" "$WORK/err"
[ "$(cat "$WORK/pod2.status")" = 3 ] || fail "join exited $(cat "$WORK/pod2.status"), want 3"
ls "$WORK"/pod2/.trainparity/spool/4-*.spool >/dev/null 2>&1 ||
    fail "the follower's spool file is gone: $(ls -R "$WORK/pod2/.trainparity")"
"$PY" - rec4.json <<'EOF' || fail "record: $(cat rec4.json)"
import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is False, r
assert re.fullmatch(r".+ \(pid \d+\): 1", r["unsent_spool"]), r
EOF
"$PY" "$TP_E2E/report_schema.py" rec4.json >schema.out 2>&1 ||
    fail "the report does not follow docs/report-schema.json: $(head -20 schema.out)"
kill "$serving"
wait "$serving"
expect_no_daemon
