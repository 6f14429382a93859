#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh BIN SECONDS TARGET... -- runs each libFuzzer target BIN/fuzz_TARGET
# for SECONDS on a copy of tests/fuzz/corpus/TARGET (the committed seeds are
# never written), in a scratch folder of its own that is removed afterwards.
# A crash, a leak, a timeout (10 s on one input) or an out-of-memory
# (2 GiB) fails the run: the input that did it is kept in
# BIN/../fuzz-artifacts/TARGET/ and the command that replays it is printed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd) secs=$2
shift 2
art=$(dirname "$bin")/fuzz-artifacts
failed=()
for t in "$@"; do
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/tp-fuzz-$t.XXXXXX") || exit 1
    mkdir -p "$art/$t" "$scratch/corpus"
    cp "$here/corpus/$t"/* "$scratch/corpus/"
    # TMPDIR: the targets' stores go into the scratch folder too
    TMPDIR=$scratch "$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/$t/" "$scratch/corpus" >"$scratch/log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/log")
    if [ "$rc" -eq 0 ]; then
        printf 'fuzz %s: %s inputs in %s s, no crash\n' "$t" "${execs:-?}" "$secs"
    else
        failed+=("$t")
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$scratch/log" | head -5 >&2
        tail -n 20 "$scratch/log" >&2
        printf 'fuzz %s: FAILED (exit %s); the input is in %s\n' "$t" "$rc" "$art/$t/" >&2
        printf '  replay: %s/fuzz_%s %s/<crash-file>\n' "$bin" "$t" "$art/$t" >&2
    fi
    rm -rf "$scratch"
done
[ ${#failed[@]} -eq 0 ] || { printf 'fuzz: failed: %s\n' "${failed[*]}" >&2; exit 1; }
