#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# unauth_memory.sh -- what peers without the token can make a tcp:// daemon
# hold is bounded (daemon/serve/netguard.h, limits in daemon/serve/serve.c).  Raw SP
# connections from Python, no nng on the attacking side:
#  - eight that each announce a 128 MiB message and send 96 MiB of it, then
#    trickle: the daemon refuses them at the length header, and its VmRSS
#    stays under 256 MiB (a quarter of 8 x 128 MiB; without the receive
#    limit it held the 768 MiB sent; the header alone costs no resident
#    memory, as nng's buffer is touched only as bytes arrive);
#  - a well-formed batch with a wrong token, and a message that is not a
#    batch: each is dropped (the daemon logs it) and its connection left
#    open (daemon/serve/netguard.c: closing one is unsafe on nng 1.5.2);
#  - 100 idle connections from one address: those past the per-address
#    cap (64) are closed;
# and afterwards the daemon stores an authenticated record over tcp; and,
# while 64 such connections hold the cap, an agent refused at every redial
# does not crash its training process.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
py=${TP_PYTHON:-python3}
[ -x "$py" ] || py=python3

cp "$TP_E2E/sp_hold.py" "$WORK/" || fail "cannot copy sp_hold.py"
cat >"$WORK/peer.py" <<'EOF'
import socket, struct, sys, time

import sp_hold

MiB = 1 << 20
port, dpid, what = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def rss_mib():
    with open(f"/proc/{dpid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")


def connect():
    return sp_hold.connect(port)


def closed_by_peer(s, wait):
    """True when the daemon closed s within wait seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def send(s, data):
    """False once the daemon has closed s."""
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def frame(body):
    return struct.pack(">Q", len(body)) + body


def mp_str(s):
    b = s.encode()
    return bytes([0xA0 | len(b)]) + b


if what == "flood":
    n, claim, sent_each = 8, 128 * MiB, 96 * MiB
    base = rss_mib()
    conns = [connect() for _ in range(n)]
    alive = [send(s, struct.pack(">Q", claim)) for s in conns]
    chunk = b"\xa5" * MiB
    for _ in range(sent_each // MiB):
        for i, s in enumerate(conns):
            if alive[i]:
                alive[i] = send(s, chunk)
        if not any(alive):
            break
    peak = rss_mib()
    for _ in range(8):  # trickle: a byte per connection every 0.25 s
        for i, s in enumerate(conns):
            if alive[i]:
                alive[i] = send(s, b"\x00")
        time.sleep(0.25)
        peak = max(peak, rss_mib())
    print(f"baseline {base:.0f} MiB, peak {peak:.0f} MiB, "
          f"{n - sum(alive)} of {n} connections closed by the daemon")
    for s in conns:
        s.close()
    if peak >= 256:
        raise SystemExit(f"the daemon held {peak:.0f} MiB for {n} unauthenticated "
                         f"connections (bound: 256 MiB)")
elif what == "token":
    # {"v": 1, "run": 1, "exec": 1, "pid": 1, "rank": 0, "tok": "wrong", "events": []}
    batch = (b"\x87" + mp_str("v") + b"\x01" + mp_str("run") + b"\x01" + mp_str("exec")
             + b"\x01" + mp_str("pid") + b"\x01" + mp_str("rank") + b"\x00" + mp_str("tok")
             + mp_str("wrong") + mp_str("events") + b"\x90")
    for name, body in (("a batch with a wrong token", batch),
                       ("a message that is not a batch", b"\xc1" * (4 * MiB))):
        s = connect()
        if not send(s, frame(body)):
            raise SystemExit(f"{name}: the daemon closed the connection while it was sent")
        if closed_by_peer(s, 2):
            raise SystemExit(f"{name}: the daemon closed its connection")
        s.close()
        print(f"{name}: dropped, connection left open")
elif what == "conns":
    conns = [connect() for _ in range(100)]
    time.sleep(0.5)
    open_ = sum(not closed_by_peer(s, 0.2) for s in conns)
    for s in conns:
        s.close()
    print(f"{open_} of 100 connections from one address left open")
    if open_ != 64:
        raise SystemExit(f"{open_} connections from one address stayed open, want 64")
EOF

port=$(free_ports) || exit 1
url=tcp://127.0.0.1:$port

mkdir -m 0700 "$WORK/d"
TRAINPARITY_TOKEN=s3cret "$TP_DAEMON" serve --db "$WORK/d/runs.db" --listen "$url" \
    2>"$WORK/d/log" &
dpid=$!
for _ in $(seq 600); do # 60 s: a liveness bound
    grep -q 'serving db' "$WORK/d/log" && break
    kill -0 "$dpid" 2>/dev/null || fail "the daemon did not start: $(cat "$WORK/d/log")"
    sleep 0.1
done
grep -q 'serving db' "$WORK/d/log" || fail "the daemon did not start: $(cat "$WORK/d/log")"

for what in flood token conns; do
    "$py" "$WORK/peer.py" "$port" "$dpid" "$what" >"$WORK/peer.out" 2>&1 ||
        fail "$what: $(cat "$WORK/peer.out"); daemon log: $(cat "$WORK/d/log")"
    printf '%s: %s\n' "$what" "$(cat "$WORK/peer.out")"
    kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/d/log")"
done
sleep 0.5 # the daemon sees the closed connections go
grep -q 'malformed message dropped: wrong token' "$WORK/d/log" ||
    fail "the batch with a wrong token was not dropped: $(cat "$WORK/d/log")"

cat >"$WORK/train.py" <<'EOF'
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
EOF
mkdir "$WORK/proj"
cd "$WORK/proj" || fail "cd"
TRAINPARITY_DAEMON=$url TRAINPARITY_TOKEN=s3cret expect_status 0 "$TP_RUN" record -- \
    "$py" "$WORK/train.py"
expect_grep '^run 1$' "$WORK/out"
"$TP_DAEMON" query --db "$WORK/d/runs.db" steps 1 >"$WORK/q" 2>&1 ||
    fail "query steps 1 failed: $(cat "$WORK/q")"
[ "$(grep -cE '^[[:space:]]+[0-2][[:space:]]+-?[0-9]' "$WORK/q")" = 3 ] ||
    fail "the record's 3 optimizer steps are not stored: $(cat "$WORK/q");" \
        "record: $(cat "$WORK/out" "$WORK/err"); daemon log: $(cat "$WORK/d/log")"
kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/d/log")"

# An agent refused by the cap lives on: 64 connections without the token
# hold the per-address cap, so the daemon closes each connection the agent
# makes as soon as it is made, again at every redial, for the 4 s the
# training runs.  nng 1.5.2's push socket could put such a pipe, freed, on
# its ready list, and the next send crashed the training process (SIGSEGV,
# status 139; tools/scripts/nng-patches/push0-closed-pipe.patch).  Now the
# training ends 0, the agent spools what the daemon never acknowledged, and
# record sends the spool's frames over the control socket (whose cap is
# not held), as to a daemon on another host: the record is whole.
hold_cap "$port"
cat >"$WORK/slow.py" <<'EOF'
import time
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(20):
    opt.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    time.sleep(0.2)
print("trained")
EOF
TRAINPARITY_DAEMON=$url TRAINPARITY_TOKEN=s3cret expect_status 0 timeout 300 "$TP_RUN" record \
    --json rec.json -- "$py" "$WORK/slow.py"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
expect_grep '^trained$' "$WORK/out"
"$py" - rec.json <<'EOF' || fail "record: $(cat rec.json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["spool_files"] == 1, ("the agent was not refused: no spool file", r["spool_files"])
EOF
ls .trainparity/spool/done/2-*.spool >/dev/null 2>&1 ||
    fail "the spool file was not moved aside: $(ls -R .trainparity/spool)"
"$TP_DAEMON" --db "$WORK/d/runs.db" query steps 2 >"$WORK/q" 2>&1 ||
    fail "query steps 2 failed: $(cat "$WORK/q")"
[ "$(grep -cE '^[[:space:]]+[0-9]+[[:space:]]+-?[0-9]' "$WORK/q")" = 20 ] ||
    fail "the refused agent's 20 steps are not stored: $(cat "$WORK/q")"
kill -0 "$dpid" 2>/dev/null || fail "the daemon died: $(cat "$WORK/d/log")"
kill -TERM "$dpid"
wait "$dpid" || fail "the daemon exited $?: $(cat "$WORK/d/log")"
