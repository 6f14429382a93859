#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_signal.sh -- a check told to stop stops: SIGTERM (what `timeout`,
# SLURM and Kubernetes send) or SIGINT reaching trainparity-run while an
# execution runs is forwarded to the command, and the check runs no
# further execution and gives no verdict; it ends as killed by that signal
# (143, 130), its private daemon gone, and what the cut execution saved is
# moved aside all the same.  A follower (trainparity-run join) told to stop
# while it runs an execution's command follows no further execution, and
# says so: the check does not wait for it at the run's end.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
PY=${TP_PYTHON:-$(dirname "$0")/../../.venv/bin/python}
# saves a checkpoint, says so, then trains on for longer than the test;
# told SIGTERM it exits, as a script under SLURM does (so that its agent
# reports the save before the process ends)
cat >slow.py <<'PY'
import os, signal, sys, time, torch
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
if os.path.exists("leader"):  # the join case: only the follower's trains on
    raise SystemExit(0)
os.makedirs("ckpt", exist_ok=True)
torch.save({"w": torch.ones(2)}, "ckpt/a.pt")
open("started", "w").close()
time.sleep(120)
PY

# stopped SIG WANT CHECK...: runs the check in the background, sends SIG to
# trainparity-run once the command has saved, and wants exit status WANT.
stopped() {
    local sig=$1 want=$2 pid got
    shift 2
    rm -f started
    # a background job of a script starts with SIGINT ignored: not this one
    env --default-signal="$sig" "$TP_RUN" "$@" >"$WORK/out" 2>"$WORK/err" &
    pid=$!
    wait_for_file started 120
    kill -"$sig" "$pid"
    # 60 s: a bound for liveness only; without the stop it runs 120 s more
    timeout 60 tail --pid="$pid" -f /dev/null || fail "'$*' still runs 60 s after SIG$sig"
    wait "$pid"
    got=$?
    [ "$got" = "$want" ] || fail "'$*' told SIG$sig exited $got, want $want: $(cat "$WORK/err")"
}

stopped TERM 143 resume --at 1 -- "$PY" slow.py
expect_grep '^trainparity-run: resume: SIGTERM reached trainparity-run while A ran: the check stops without a verdict$' \
    "$WORK/err"
tp_query runs >q || fail "query runs: $(cat q)"
expect_grep '^1 +- +resume .* 1 -$' q # one execution, no verdict
[ -e "$WORK/.trainparity/runs/1/A/ckpt/a.pt" ] || fail "A's checkpoint was not moved aside"
[ -e ckpt/a.pt ] && fail "A's checkpoint is still where a second check would resume from it"
expect_no_daemon

expect_status 0 "$TP_RUN" record --name golden -- "$PY" -c 'import torch'
stopped INT 130 compare --against golden -- "$PY" slow.py
expect_grep '^trainparity-run: compare: SIGINT reached trainparity-run while C ran' "$WORK/err"
tp_query runs >q || fail "query runs: $(cat q)"
expect_grep '^3 +- +compare .* 1 -$' q
[ -e ckpt/a.pt ] && fail "C's checkpoint is still where D would resume from it"
expect_no_daemon

# A follower told to stop while its command runs: it forwards the signal,
# and follows no further execution.
port=$(free_ports) || exit 1
url=tcp://127.0.0.1:$port
export TRAINPARITY_TOKEN=signal-test-token-0123456789
mkdir -m 0700 pod1 && cp slow.py pod1/ && : >leader
(cd pod1 && exec "$TP_RUN" join --wait 60 "$url" >"$WORK/pod1.out" 2>"$WORK/pod1.err") &
joined=$!
"$TP_RUN" resume --listen "$url" -- "$PY" slow.py >"$WORK/check.out" 2>"$WORK/check.err" &
checking=$!
wait_for_file pod1/started 120
kill -TERM "$joined"
timeout 60 tail --pid="$joined" -f /dev/null || fail "join still runs 60 s after SIGTERM"
wait "$joined"
got=$?
[ "$got" = 143 ] || fail "join told SIGTERM exited $got, want 143: $(cat "$WORK/pod1.err")"
expect_grep '^trainparity-run: join: SIGTERM reached trainparity-run while A ran: following no further execution$' \
    "$WORK/pod1.err"
# 300 s: a bound for liveness only
timeout 300 tail --pid="$checking" -f /dev/null || fail "the check did not end without its follower"
wait "$checking"
# it left saying so: the check did not wait for it at the run's end
grep -q 'did not ask for its end' "$WORK/check.err" &&
    fail "the check waited for the follower that left: $(cat "$WORK/check.err")"
expect_no_daemon
