#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# preload_inert.sh -- a non-Python command runs unchanged under the agent:
# same stdout, stderr and exit status as without trainparity-run.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent

same() { # same CMD...: compare CMD alone with CMD under record
    "$@" >"$WORK/plain.out" 2>"$WORK/plain.err"
    local plain=$? rec lines
    "$TP_RUN" record -- "$@" >"$WORK/rec.out" 2>"$WORK/rec.err"
    rec=$?
    [ "$rec" = "$plain" ] || fail "'$*': status $rec under record, $plain alone"
    lines=$(wc -l <"$WORK/plain.out")
    head -n "$lines" "$WORK/rec.out" | cmp -s - "$WORK/plain.out" ||
        fail "'$*': stdout differs under record: $(cat "$WORK/rec.out")"
    sed -n "$((lines + 1))p" "$WORK/rec.out" | grep -Eq '^run [0-9]+$' ||
        fail "'$*': no 'run N' after the command's output: $(cat "$WORK/rec.out")"
    cmp -s "$WORK/rec.err" "$WORK/plain.err" ||
        fail "'$*': stderr differs under record: $(cat "$WORK/rec.err")"
}

# (Each record of a command without Python costs the daemon's exec.finish
# wait, so the cases share a few commands.)
same sh -c 'printf "%s\n" b a c | sort; ls / >/dev/null; echo $((6*7))
            env | grep -c ^PATH=; echo err >&2; exit 7'

# The agent really was preloaded, ahead of any LD_PRELOAD already set, and
# the command was told where to report.
agent=$(readlink -f "$TP_AGENT")
expect_status 0 "$TP_RUN" record -- sh -c 'echo "$LD_PRELOAD"; env | grep ^TRAINPARITY_ | sort'
expect_grep "^$agent$" "$WORK/out"
for v in DAEMON CONTROL RUN EXEC ROLE SPOOL CAPTURE; do
    expect_grep "^TRAINPARITY_$v=." "$WORK/out"
done
expect_grep '^TRAINPARITY_ROLE=record$' "$WORK/out"
# (A sanitizer build of trainparity-run cannot itself start with a preload.)
if ! ldd "$TP_RUN" | grep -q libasan; then
    LD_PRELOAD=$agent expect_status 0 "$TP_RUN" record -- sh -c 'echo "$LD_PRELOAD"'
    expect_grep "^$agent:$agent$" "$WORK/out"
fi
expect_no_daemon
