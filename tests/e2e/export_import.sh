#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# export_import.sh -- a golden run recorded with its values (fixtures/resume/
# adamw_cosine.py under record --capture values) is exported to one file and
# imported into a fresh database, as CI would on another machine: query run
# and query steps of the import equal the original's but for the ids, and
# the blob store holds the same bytes.  A truncated file, a damaged one and
# a database that is not an export are refused, non-zero, the target
# database unchanged; an unknown run is not exported.  In a fresh project
# holding only the import, compare --against golden PASSes on the script.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
cp "$root"/fixtures/resume/_loop.py "$root"/fixtures/resume/adamw_cosine.py . || fail "cp"

expect_status 0 "$TP_RUN" record --name golden --capture values -- "$TP_PYTHON" adamw_cosine.py
expect_grep '^run 1$' "$WORK/out"
src=$WORK/.trainparity/runs.db
ci=$WORK/ci/runs.db

"$TP_DAEMON" --db "$src" export 1 >"$WORK/golden.tpx" 2>"$WORK/err" ||
    fail "export 1: $(cat "$WORK/err")"
[ -s "$WORK/golden.tpx" ] || fail "export 1 wrote nothing"
expect_status 1 "$TP_DAEMON" --db "$src" export 7
expect_grep 'no run 7' "$WORK/err"

# imported twice, the second copy's ids differ from the original's
expect_status 0 "$TP_DAEMON" --db "$ci" import "$WORK/golden.tpx"
expect_grep '^run 1$' "$WORK/out"
expect_status 0 "$TP_DAEMON" import --db "$ci" "$WORK/golden.tpx"
expect_grep '^run 2$' "$WORK/out"

# ids out: "run N:" and "exec N [" are the only ids the views print
ids() { sed -E 's/^run [0-9]+:/run ID:/; s/^exec [0-9]+ \[/exec ID [/'; }
for q in run steps; do
    "$TP_DAEMON" query --db "$src" $q 1 >"$WORK/$q.orig" 2>&1 || fail "query $q 1: $(cat "$WORK/$q.orig")"
    "$TP_DAEMON" query --db "$ci" $q 2 >"$WORK/$q.copy" 2>&1 || fail "query $q 2: $(cat "$WORK/$q.copy")"
    grep -q '^exec 2 ' "$WORK/$q.copy" || fail "the import kept the original ids: $(cat "$WORK/$q.copy")"
    diff <(ids <"$WORK/$q.orig") <(ids <"$WORK/$q.copy") >"$WORK/diff" ||
        fail "query $q differs after export and import: $(cat "$WORK/diff")"
done
expect_grep '^  7 ' "$WORK/steps.copy"
"$TP_DAEMON" query --db "$ci" --json steps 2 | "$TP_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["run"] == 2 and len(d["processes"][0]["steps"]) == 8, d' || fail "query --json steps 2"

# the captured values came along, byte for byte
n=$(find "$src.blobs" -type f | wc -l)
[ "$n" -gt 0 ] || fail "the golden run captured no values"
diff -r "$src.blobs" "$ci.blobs" >"$WORK/diff" || fail "the blob stores differ: $(cat "$WORK/diff")"

# bad files change nothing
state() { (cd "$WORK/ci" && find . -type f | sort | xargs sha256sum); }
state >"$WORK/before"
size=$(stat -c %s "$WORK/golden.tpx")
head -c $((size / 2)) "$WORK/golden.tpx" >"$WORK/truncated.tpx"
expect_status 1 "$TP_DAEMON" --db "$ci" import "$WORK/truncated.tpx"
expect_grep 'truncated TrainParity export' "$WORK/err"
cp "$WORK/golden.tpx" "$WORK/damaged.tpx"
"$TP_PYTHON" -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]) // 2 // 4096 * 4096)
    f.write(bytes((i * 7 + 1) % 256 for i in range(4096)))' "$WORK/damaged.tpx" "$size" || fail "damage"
expect_status 1 "$TP_DAEMON" --db "$ci" import "$WORK/damaged.tpx"
expect_grep 'damaged TrainParity export' "$WORK/err"
expect_status 1 "$TP_DAEMON" --db "$ci" import "$src"
expect_grep 'not an export' "$WORK/err"
expect_status 64 "$TP_DAEMON" --db "$ci" import
state >"$WORK/after"
diff "$WORK/before" "$WORK/after" >"$WORK/diff" || fail "a refused import changed the database: $(cat "$WORK/diff")"
# a refused file does not create a database either
expect_status 1 "$TP_DAEMON" --db "$WORK/none/runs.db" import "$WORK/truncated.tpx"
[ ! -e "$WORK/none" ] || fail "a refused import created $WORK/none"

# on "another machine": a fresh project whose database holds only the
# import, the golden run checked against the same script (PASS)
mkdir "$WORK/other" && cd "$WORK/other" || fail "mkdir"
cp "$root"/fixtures/resume/_loop.py "$root"/fixtures/resume/adamw_cosine.py . || fail "cp"
expect_status 0 "$TP_DAEMON" import "$WORK/golden.tpx"
expect_grep '^run 1$' "$WORK/out"
expect_status 0 "$TP_RUN" compare --against golden --json compare.json -- "$TP_PYTHON" adamw_cosine.py
"$TP_PYTHON" -c '
import json, sys
r = json.load(open("compare.json"))
assert r["outcome"] == "PASS" and r["evidence"]["against"] == {"run": 1, "name": "golden"}, r' ||
    fail "compare against the imported run: $(cat compare.json)"
exit 0
