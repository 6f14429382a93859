# SPDX-License-Identifier: MIT
# lib.sh -- shared by the e2e scripts (sourced): the binaries under test, a
# private working directory per test (so ./.trainparity never collides),
# cleanup of anything started there, and checks that say what failed.
# ctest passes TP_BIN (the build's bin directory) and TP_LIB (its lib).
set -u

: "${TP_BIN:?set TP_BIN to the bin directory of the build}"
TP_LIB=${TP_LIB:-$TP_BIN/../lib}
TP_RUN=$TP_BIN/trainparity-run
TP_DAEMON=$TP_BIN/trainparity-daemon
TP_AGENT=$TP_LIB/libtpagent.so
TP_NAME=$(basename "$0" .sh)
TP_E2E=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=

# Nothing from the caller's environment may steer the tools under test.
for v in $(env | sed -n 's/^\(TRAINPARITY_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

fail() {
    printf 'FAIL %s: %s\n' "$TP_NAME" "$*" >&2
    exit 1
}

# tp_setup [daemon] [agent]: checks that the named binaries are built (a
# missing one is a failure, never a skip) and enters a fresh directory.
tp_setup() {
    [ -x "$TP_RUN" ] || fail "$TP_RUN is not built"
    for need in "$@"; do
        case $need in
        daemon) [ -x "$TP_DAEMON" ] || fail "$TP_DAEMON is not built" ;;
        agent) [ -f "$TP_AGENT" ] || fail "$TP_AGENT is not built (target tpagent)" ;;
        esac
    done
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/tp-e2e-$TP_NAME.XXXXXX") || fail "mktemp"
    trap tp_cleanup EXIT
    cd "$WORK" || fail "cd $WORK"
}

# tp_strays prints the pids of processes whose command line names $WORK.
tp_strays() {
    pgrep -f -- "$WORK" || true
}

tp_cleanup() {
    local pid
    [ -n "$WORK" ] || return 0
    for pid in $(tp_strays); do kill -KILL "$pid" 2>/dev/null; done
    # hold_cap's holder, whose command line does not name $WORK, left
    # running by a test that failed while it held
    [ -n "${HOLDER:-}" ] && grep -qs sp_hold "/proc/$HOLDER/cmdline" && kill -KILL "$HOLDER"
    cd / && rm -rf "$WORK"
}

# expect_status WANT CMD...: runs CMD with stdout in $WORK/out and stderr in
# $WORK/err, and fails unless it exits WANT.
expect_status() {
    local want=$1 got
    shift
    # what runs, and when: the last such line of a test that overran its
    # bound names the command that hung
    printf '%s %s\n' "$(date +%T)" "$*"
    "$@" >"$WORK/out" 2>"$WORK/err"
    got=$?
    [ "$got" = "$want" ] || fail "'$*' exited $got, want $want; stderr: $(cat "$WORK/err")"
}

# expect_grep PATTERN FILE: fails unless FILE has a line matching PATTERN (ERE).
expect_grep() {
    grep -Eq -- "$1" "$2" || fail "no line matching '$1' in $2: $(cat "$2")"
}

# first_traceback FILE: the first Python traceback in FILE (30 lines at
# most), after a line saying so, then the root cause of every job torchrun
# saw fail, or nothing: where a rank of a job failed, torchrun's summary at
# the end of stderr names the rank, not the cause, and a rank killed by a
# signal prints no traceback of its own.
first_traceback() {
    grep -q '^Traceback\|^\[rank[0-9]*\]: Traceback' "$1" 2>/dev/null || return 0
    printf '\n-- the first traceback in %s:\n' "$1"
    sed -n '/Traceback/,$p' "$1" | head -30
    grep -q '^Root Cause' "$1" || return 0
    printf '\n-- the root cause of each failed torchrun job in %s:\n' "$1"
    grep -A5 '^Root Cause' "$1" | grep 'time *:\|rank *:\|exitcode *:\|traceback *:'
}

# process_ends: the newest run of this test's database as `query run`
# shows it (per execution its command and exit, per process its rank and
# bye or "no bye"), after a line saying so, or nothing.  A failed row shows
# it: the command's exit status alone does not say how each rank ended.
process_ends() {
    local run
    [ -f "$WORK/.trainparity/runs.db" ] || return 0
    run=$(tp_query runs --limit 1 2>/dev/null | awk 'NR == 2 {print $1}')
    [ -n "$run" ] || return 0
    printf '\n-- how the processes of run %s ended:\n' "$run"
    tp_query run "$run" 2>&1 | grep -v '^  params \|^    kinds:' | head -80
}

# tp_query ARGS...: the daemon's query CLI over this test's private database.
tp_query() {
    "$TP_DAEMON" query --db "$WORK/.trainparity/runs.db" "$@"
}

# expect_no_daemon: no daemon (or anything else) is left running for $WORK.
expect_no_daemon() {
    local left
    left=$(tp_strays)
    [ -z "$left" ] || fail "processes left running: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)")"
}

# free_ports: prints a port P such that P and P + 1 (a tcp:// daemon's
# ingest and its control URL) are free on 127.0.0.1 now.
free_ports() {
    local p
    p=$("${TP_PYTHON:-python3}" - <<'EOF'
import random, socket
for _ in range(200):
    p = random.randrange(20000, 60000)
    try:
        for q in (p, p + 1):
            with socket.socket() as s:
                s.bind(("127.0.0.1", q))
    except OSError:
        continue
    print(p)
    break
EOF
)
    [ -n "$p" ] || fail "no free pair of ports"
    echo "$p"
}

# hold_cap PORT: holds the cap of connections without the token from this
# address of the tcp:// daemon at 127.0.0.1:PORT (sp_hold.py), once it
# does, until kill "$HOLDER": the daemon then refuses every agent's
# connection from here.
hold_cap() {
    local i
    "${TP_PYTHON:-python3}" -u "$TP_E2E/sp_hold.py" "$1" >"$WORK/hold.out" 2>&1 &
    HOLDER=$!
    for i in $(seq 600); do # 60 s: a liveness bound
        grep -qs holding "$WORK/hold.out" && return 0
        kill -0 "$HOLDER" 2>/dev/null || fail "hold: $(cat "$WORK/hold.out")"
        sleep 0.1
    done
    fail "hold: $(cat "$WORK/hold.out")"
}

# wait_for_file PATH [SECONDS]: waits until PATH exists, 60 s unless told:
# a liveness bound (what it waits for takes about a second, more on a busy
# machine), well inside the 120 s ctest gives an e2e test.
wait_for_file() {
    local i=0 n=$((${2:-60} * 20))
    while [ ! -e "$1" ]; do
        i=$((i + 1))
        [ $i -le $n ] || fail "$1 did not appear within ${2:-60} s"
        sleep 0.05
    done
}

# expect_judged_again REPORT STATUS: the run of the JSON report REPORT, in
# ./.trainparity/runs.db, judged again offline (trainparity-daemon judge,
# read-only), gives the verdict its check gave: exit status STATUS, the text
# report as stored, and the JSON report as stored but for the wall time,
# which a run judged after its check does not know (null).
expect_judged_again() {
    local want=$2 db=.trainparity/runs.db got run
    run=$("${TP_PYTHON:?}" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"])' \
        "$1") || fail "no run id in $1"
    "$TP_DAEMON" --db "$db" judge "$run" >"$WORK/judge.txt" 2>"$WORK/judge.err"
    got=$?
    [ "$got" = "$want" ] ||
        fail "run $run judged again: exit status $got, the check's $want: $(cat "$WORK/judge.err")"
    "$TP_DAEMON" --db "$db" query verdict "$run" >"$WORK/stored.txt" 2>&1 ||
        fail "query verdict $run: $(cat "$WORK/stored.txt")"
    cmp -s "$WORK/judge.txt" "$WORK/stored.txt" ||
        fail "run $run judged again: the text differs from the stored verdict's:
$(diff "$WORK/stored.txt" "$WORK/judge.txt" | head -20)"
    "$TP_DAEMON" --db "$db" judge --json "$run" >"$WORK/judge.json" 2>"$WORK/judge.err"
    got=$?
    [ "$got" = "$want" ] || fail "run $run judge --json: exit status $got: $(cat "$WORK/judge.err")"
    "$TP_DAEMON" --db "$db" query --json verdict "$run" >"$WORK/stored.json" 2>&1 ||
        fail "query --json verdict $run: $(cat "$WORK/stored.json")"
    "${TP_PYTHON:?}" - "$WORK/judge.json" "$WORK/stored.json" <<'PY' ||
import difflib, json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["evidence"]["wall_time"] is None, a["evidence"]["wall_time"]
a["evidence"]["wall_time"] = b["evidence"]["wall_time"]
if a != b:
    ka = json.dumps(a, indent=1, sort_keys=True).splitlines()
    kb = json.dumps(b, indent=1, sort_keys=True).splitlines()
    sys.exit("\n".join(list(difflib.unified_diff(kb, ka, "stored", "again", lineterm=""))[:40]))
PY
        fail "run $run judged again: the JSON report differs from the stored verdict's"
}
