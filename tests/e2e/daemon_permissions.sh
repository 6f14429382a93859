#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# daemon_permissions.sh -- what serve makes and what it leaves alone: an
# existing directory keeps its mode (serve --db DIR/runs.db never chmods
# DIR); the database and its -wal and -shm are 0600 under umask 022, also
# with --listen elsewhere, and the blob store private; the token comes from
# a file (--token-file, never readable by others) and is not in the
# command line, --token is a usage error; the control command ingest reads
# spool files only, and nothing over tcp.
. "$(dirname "$0")/lib.sh"
ctl_dir=$(cd "$(dirname "$0")" && pwd) # tpdb.py, for ctl.py
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
umask 022

# ctl URL TOKEN KEY=VALUE...: one control request (a map of strings) over
# nng's ipc or tcp wire format; prints the reply's ok and error
cat >"$WORK/ctl.py" <<'PY'
import socket, struct, sys
sys.path.insert(0, sys.argv[1])
import tpdb

def s8(v):
    b = v.encode("utf-8", "surrogateescape")
    return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b

url, tok, pairs = sys.argv[2], sys.argv[3], [a.split("=", 1) for a in sys.argv[4:]]
if tok:
    pairs.append(("tok", tok))
req = bytes([0x80 | len(pairs)]) + b"".join(s8(k) + s8(v) for k, v in pairs)
if url.startswith("ipc://"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(url[6:])
    frame = b"\x01"
else:
    host, port = url[6:].rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    frame = b""
s.settimeout(10)
s.sendall(b"\x00SP\x00\x00\x30\x00\x00")  # REQ0 meets REP0
assert s.recv(8)[:4] == b"\x00SP\x00"
body = struct.pack(">I", 0x80000001) + req
s.sendall(frame + struct.pack(">Q", len(body)) + body)
head = b""
while len(head) < len(frame) + 8:
    head += s.recv(len(frame) + 8 - len(head))
n = struct.unpack(">Q", head[len(frame):])[0]
data = b""
while len(data) < n:
    data += s.recv(n - len(data))
rep = tpdb.unpack(data[4:])
print("ok", rep["ok"])
print("error", rep.get("error", ""))
PY
ctl() {
    "$TP_PYTHON" "$WORK/ctl.py" "$ctl_dir" "$@" >"$WORK/ctl.out" 2>&1 ||
        fail "control request $*: $(cat "$WORK/ctl.out")"
}

# serve_bg LOG ARGS...: starts serve in the background (pid in $dpid)
serve_bg() {
    local log=$1
    shift
    "$TP_DAEMON" serve "$@" 2>"$log" &
    dpid=$!
}
stop() {
    [ -n "$dpid" ] || return 0
    kill -TERM "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    dpid=
}
dpid=
# a daemon started with a relative --db is not found by tp_cleanup's pgrep
trap 'stop; tp_cleanup' EXIT
mode() { stat -c %a "$1"; }

# 1. existing directories keep their mode: the database's, and the
# working directory a bare --db runs.db puts the sockets in
mkdir -m 0755 "$WORK/proj" "$WORK/proj/data"
cd "$WORK/proj" || fail "cd"
serve_bg "$WORK/log1" --db data/runs.db
wait_for_file "$WORK/proj/data/ingest.ipc.ctl"
ctl "ipc://$WORK/proj/data/ingest.ipc.ctl" "" cmd=ping
expect_grep '^ok True$' "$WORK/ctl.out"

# 5. ingest reads a spool file and nothing else, quoting nothing
printf 'ABCDEFGH the secret' >"$WORK/secret.txt"
ln -s "$WORK/secret.txt" "$WORK/proj/1-1.spool"
for path in "$WORK/secret.txt" "$WORK/proj/1-1.spool" /etc/passwd "$WORK/proj"; do
    ctl "ipc://$WORK/proj/data/ingest.ipc.ctl" "" cmd=ingest path="$path"
    expect_grep '^ok False$' "$WORK/ctl.out"
    expect_grep '^error not a spool file$' "$WORK/ctl.out"
done
stop
[ "$(mode "$WORK/proj/data")" = 755 ] || fail "serve chmod'ed the database's directory: $(mode "$WORK/proj/data")"
[ "$(mode "$WORK/proj")" = 755 ] || fail "serve chmod'ed its parent: $(mode "$WORK/proj")"
serve_bg "$WORK/log1b" --db runs.db
wait_for_file "$WORK/proj/ingest.ipc.ctl"
stop
[ "$(mode "$WORK/proj")" = 755 ] || fail "serve chmod'ed the working directory: $(mode "$WORK/proj")"
[ "$(mode "$WORK/proj/runs.db")" = 600 ] || fail "runs.db is $(mode "$WORK/proj/runs.db")"

# 2. --listen elsewhere: the database, its wal and shm, the blobs private
mkdir -m 0755 "$WORK/data"
serve_bg "$WORK/log2" --db "$WORK/data/runs.db" --listen "ipc://$WORK/sock/ingest.ipc"
wait_for_file "$WORK/sock/ingest.ipc.ctl"
[ "$(mode "$WORK/sock")" = 700 ] || fail "a socket directory serve made is $(mode "$WORK/sock")"
cat >"$WORK/train.py" <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(2):
    opt.zero_grad()
    model(torch.ones(8, 4)).pow(2).mean().backward()
    opt.step()
PY
TRAINPARITY_DAEMON=ipc://$WORK/sock/ingest.ipc expect_status 0 "$TP_RUN" record --capture values \
    -- "$TP_PYTHON" "$WORK/train.py"
for f in runs.db runs.db-wal runs.db-shm; do
    [ -e "$WORK/data/$f" ] || fail "no $f while serving: $(ls -la "$WORK/data")"
    [ "$(mode "$WORK/data/$f")" = 600 ] || fail "$f is $(mode "$WORK/data/$f") under umask 022"
done
[ -d "$WORK/data/runs.db.blobs" ] || fail "no blob store: $(ls -la "$WORK/data")"
left=$(find "$WORK/data/runs.db.blobs" \( -type d ! -perm 0700 \) -o \( -type f ! -perm 0600 \))
[ -z "$left" ] || fail "blob store entries open to others: $left"
[ -n "$(find "$WORK/data/runs.db.blobs" -type f)" ] || fail "no blob was written"
stop
[ "$(mode "$WORK/data")" = 755 ] || fail "serve chmod'ed $WORK/data: $(mode "$WORK/data")"

# 4. --token is a usage error naming what to use instead
expect_status 64 timeout 10 "$TP_DAEMON" serve --db "$WORK/t4/runs.db" --token s3cret
expect_grep 'token-file' "$WORK/err"
expect_grep 'TRAINPARITY_TOKEN' "$WORK/err"

# 3. --token-file for a tcp listener; the token never in the command line
port=$("$TP_PYTHON" - <<'PY'
import socket
for _ in range(100):
    a = socket.socket()
    a.bind(("127.0.0.1", 0))
    p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    print(p)
    break
PY
)
[ -n "$port" ] || fail "no free port pair"
token=tok-$RANDOM$RANDOM-s3cret
printf '%s\n' "$token" >"$WORK/tokfile"
chmod 0644 "$WORK/tokfile"
expect_status 1 "$TP_DAEMON" serve --db "$WORK/tcp/runs.db" --listen "tcp://127.0.0.1:$port" \
    --token-file "$WORK/tokfile"
expect_grep 'open to others' "$WORK/err"
chmod 0600 "$WORK/tokfile"
serve_bg "$WORK/log3" --db "$WORK/tcp/runs.db" --listen "tcp://127.0.0.1:$port" \
    --token-file "$WORK/tokfile"
for _ in $(seq 600); do grep -q serving "$WORK/log3" && break; sleep 0.1; done # 60 s: liveness
grep -q serving "$WORK/log3" || fail "serve over tcp did not start: $(cat "$WORK/log3")"
tr '\0' ' ' <"/proc/$dpid/cmdline" >"$WORK/cmdline"
grep -q -- "$token" "$WORK/cmdline" && fail "the token is in the command line: $(cat "$WORK/cmdline")"
cd "$WORK" || fail "cd"
TRAINPARITY_DAEMON=tcp://127.0.0.1:$port TRAINPARITY_TOKEN=$token \
    expect_status 0 "$TP_RUN" record -- "$TP_PYTHON" "$WORK/train.py"
expect_grep '^run 1$' "$WORK/out"
TRAINPARITY_DAEMON=tcp://127.0.0.1:$port TRAINPARITY_TOKEN=${token}x \
    expect_status 3 "$TP_RUN" record -- true
expect_grep 'token' "$WORK/err"
# ... and a control socket others can reach reads no file at all
ctl "tcp://127.0.0.1:$((port + 1))" "$token" cmd=ingest path="$WORK/proj/1-1.spool"
expect_grep '^ok False$' "$WORK/ctl.out"
expect_grep 'local control socket only' "$WORK/ctl.out"
stop
"$TP_DAEMON" query --db "$WORK/tcp/runs.db" run 1 >"$WORK/q" 2>&1 || fail "query: $(cat "$WORK/q")"
[ "$(grep -c 'process [0-9]*:' "$WORK/q")" = 1 ] || fail "the tcp record stored no process: $(cat "$WORK/q")"
