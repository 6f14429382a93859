#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wheel.sh -- the wheel as a user gets it (docs/install.md).  Built from
# this clone by scikit-build-core (make wheel's steps) and tagged by
# auditwheel; installed into a fresh venv that holds only torch (and
# NumPy and pytest, which the fixtures and the plugin test use); then,
# from a folder outside the clone, with no
# build tree and no project venv on PATH, and with the system's copies of
# nng, msgpack-c, SQLite, Jansson, libxml2 and xxHash unloadable (a mount
# namespace, an empty file bound over each): the versions, a resume PASS
# and an injected-fault FAIL, coverage under torchrun with 2 ranks, and a
# pytest-plugin test.  Outside the namespace: the same wheel with Debian's
# python3 and torch 1.13, and a training process that loads Debian's own
# nng and SQLite beside the agent, whose output is the same without it.
# `auditwheel show` and the wheel's size go to BUILD/wheel.txt, which
# `make test` prints.  Without namespaces (not root, no user namespaces)
# the checks run with the system's libraries reachable and the test ends
# skipped (77), saying so.
. "$(dirname "$0")/lib.sh"

# The part run inside the mount namespace: wheel.sh inside.
if [ "${1:-}" = inside ]; then
    WORK=$WHEEL_WORK
    for lib in libnng.so.1 libmsgpackc.so.2 libsqlite3.so.0 libjansson.so.4 libxml2.so.2 \
        libxxhash.so.0; do
        p=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
        [ -n "$p" ] || continue # not installed: nothing to hide
        mount --bind "$WORK/empty" "$(readlink -f "$p")" || fail "cannot hide $p"
        echo "$lib" >>"$WORK/hidden"
    done
    [ -s "$WORK/hidden" ] || fail "none of the libraries is installed: the test shows nothing"
    # the proof that they are out of reach: each fails to load
    "$WORK/venv/bin/python" - "$WORK/hidden" <<'EOF' || exit 1
import ctypes, sys
for lib in open(sys.argv[1]).read().split():
    try:
        ctypes.CDLL(lib)
    except OSError:
        continue
    sys.exit("FAIL wheel: %s still loads inside the namespace" % lib)
EOF
    wheel_checks
    exit $?
fi

tp_setup
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
: "${TP_SYSTEM_PYTHON:?set TP_SYSTEM_PYTHON to the python3 of Debian}"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$TP_BIN/.." && pwd)
ver=$(sed -n 's/^project(trainparity VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ -n "$ver" ] || fail "no version in CMakeLists.txt's project()"

# 1. The wheel, as make wheel builds it, its build folder in $WORK.
# One compiler at a time: the suite runs tests side by side, and this one
# must not crowd them.
CMAKE_BUILD_PARALLEL_LEVEL=1 \
    "$TP_PYTHON" -m pip wheel -q --no-build-isolation --no-deps -C build-dir="$WORK/build" \
        -w "$WORK/raw" "$root" >build.log 2>&1 || fail "pip wheel: $(tail -30 build.log)"
PATH="$(dirname "$TP_PYTHON"):$PATH" "$TP_PYTHON" -m auditwheel repair -w "$WORK/dist" \
    "$WORK"/raw/*.whl >repair.log 2>&1 || fail "auditwheel repair: $(tail -20 repair.log)"
whl=$(ls "$WORK"/dist/*.whl)
case $(basename "$whl") in
trainparity_native-"$ver"-py3-none-manylinux_*_x86_64.whl) ;;
*) fail "wheel named $(basename "$whl"), want trainparity_native-$ver-py3-none-manylinux_*" ;;
esac
"$TP_PYTHON" -m auditwheel show "$whl" >show.txt 2>&1 || fail "auditwheel show: $(cat show.txt)"
{
    printf 'wheel: %s, %s bytes\n' "$(basename "$whl")" "$(stat -c %s "$whl")"
    cat show.txt
} >"$build/wheel.txt"
cat "$build/wheel.txt"

# 2. A fresh venv with torch only, and NumPy and pytest, which the
# fixtures and the plugin test use (linked from the project
# venv's site-packages: no download), the wheel installed with its pip.
base=$("$TP_PYTHON" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$WORK/venv" || fail "venv"
"$TP_PYTHON" "$root/tests/e2e/only_venv.py" "$WORK/venv" torch numpy pytest >linked ||
    fail "only_venv: $(cat linked)"
"$WORK/venv/bin/python" -m pip install -q --no-index --no-deps "$whl" >pip.log 2>&1 ||
    fail "pip install the wheel: $(cat pip.log)"
# it holds the wheel, pip, and what was linked: nothing of the project venv
"$WORK/venv/bin/python" -m pip list --format=freeze 2>/dev/null | sed 's/==.*//' >held
while read -r name; do
    case $name in trainparity-native | trainparity_native | pip) continue ;; esac
    grep -qix "$name [^ ]*" linked || fail "the fresh venv holds $name, which torch, NumPy and pytest do not need"
done <held
pkg=$("$WORK/venv/bin/python" -c 'import os, trainparity_native as t; print(os.path.dirname(t.__file__))' 2>/dev/null) ||
    fail "trainparity_native does not import from the fresh venv"

# What the wheel holds: three programs and Python, nothing that needs a
# library of the system but glibc's.
for elf in "$pkg"/bin/trainparity-run "$pkg"/bin/trainparity-daemon "$pkg"/lib/libtpagent*.so; do
    need=$(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
        grep -v -E '^(libc|libm|libdl|libpthread|librt)\.so\.[0-9]+$|^ld-linux' || true)
    [ -z "$need" ] || fail "$elf needs $need"
done
# The agent exports only the libtorch functions it interposes: none of
# its copies of nng or msgpack-c can stand in for another build's.
exports=$(nm -D --defined-only "$pkg/lib/libtpagent.so" | awk '{print $3}' | grep -v '^_ZN6caffe2' || true)
[ -z "$exports" ] || fail "the agent exports more than agent/agent.map: $exports"

# 3. The checks, from a folder outside the clone.
out=$WORK/outside
mkdir -p "$out/resume" "$out/coverage" "$out/pytest" "$out/nng"
cp "$root"/fixtures/resume/*.py "$out/resume/" && cp "$root"/fixtures/coverage/*.py "$out/coverage/" &&
    cp "$root/tests/e2e/other_nng.py" "$out/nng/" || fail "copy the fixtures"
cp "$root/fixtures/resume/scheduler_not_restored.py" "$root"/fixtures/resume/_*.py "$out/pytest/"
cat >"$out/pytest/test_wheel.py" <<'EOF'
import os
import sys

import trainparity_native


def test_package_programs_first(trainparity):
    """the plugin, registered by the wheel's entry point, runs the wheel's own program"""
    assert trainparity_native.Runner().binary == os.path.join(
        os.path.dirname(trainparity_native.__file__), "bin", "trainparity-run")
    report = trainparity.resume([sys.executable, "scheduler_not_restored.py"],
                                resume_args="--resume", cwd=os.getcwd(), expect="FAIL")
    assert report.first_divergence["path"].startswith("scheduler."), report.first_divergence
EOF
: >"$WORK/empty"
export WHEEL_WORK=$WORK WHEEL_VER=$ver

# wheel_checks: run inside the namespace (or, where none can be made, outside it).
wheel_checks() {
    local v=$WORK/venv/bin py
    py=$v/python
    export PATH="$v:/usr/local/bin:/usr/bin:/bin"
    [ "$(command -v trainparity-run)" = "$v/trainparity-run" ] || fail "trainparity-run is not the venv's"
    [ "$(trainparity-run --version)" = "trainparity-run $WHEEL_VER" ] ||
        fail "trainparity-run --version: $(trainparity-run --version 2>&1)"
    [ "$(trainparity-daemon --version)" = "trainparity-daemon $WHEEL_VER" ] ||
        fail "trainparity-daemon --version: $(trainparity-daemon --version 2>&1)"
    [ "$("$py" -c 'import trainparity_native as t; print(t.__version__)')" = "$WHEEL_VER" ] ||
        fail "trainparity_native.__version__ is not $WHEEL_VER"

    cd "$WORK/outside/resume" || fail "cd"
    trainparity-run resume --resume-args --resume --json pass.json -- "$py" full_state.py >out 2>&1
    [ $? = 0 ] || fail "resume full_state.py from the wheel: $(tail -20 out)"
    "$py" -c 'import json,sys; r=json.load(open("pass.json")); sys.exit(r["trainparity_version"] != sys.argv[1])' \
        "$WHEEL_VER" || fail "the report's trainparity_version is not $WHEEL_VER"
    # the agent's hello, as the daemon stored it for every process
    trainparity-daemon query --db .trainparity/runs.db --json run 1 >run.json ||
        fail "query run 1: $(cat run.json)"
    "$py" - "$WHEEL_VER" <<'EOF' || fail "the agent's hello does not carry $WHEEL_VER: $(cat run.json)"
import json, sys
def agents(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "agent" and isinstance(v, str):
                yield v
            else:
                yield from agents(v)
    elif isinstance(o, list):
        for v in o:
            yield from agents(v)
seen = list(agents(json.load(open("run.json"))))
sys.exit(not seen or any(v != sys.argv[1] for v in seen))
EOF
    trainparity-run resume --resume-args --resume --json fail.json -- "$py" scheduler_not_restored.py \
        >out 2>&1
    [ $? = 1 ] || fail "resume scheduler_not_restored.py from the wheel, want FAIL: $(tail -20 out)"
    "$py" -c 'import json,sys; p=json.load(open("fail.json"))["first_divergence"]["path"]; sys.exit(not p.startswith("scheduler."))' ||
        fail "the FAIL is not at scheduler.*: $(grep -m1 -i diverg out)"

    cd "$WORK/outside/coverage" || fail "cd"
    trainparity-run coverage --policy exactly_once -- "$py" -m torch.distributed.run --standalone \
        --nproc_per_node 2 ranks2.py >out 2>&1
    [ $? = 0 ] || fail "coverage under torchrun, 2 ranks, from the wheel: $(tail -20 out)"

    cd "$WORK/outside/pytest" || fail "cd"
    PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider test_wheel.py >out 2>&1 ||
        fail "pytest with the wheel's plugin: $(tail -30 out)"
    grep -q '^1 passed' out || fail "the plugin test did not run: $(tail -5 out)"
    return 0
}
export -f wheel_checks fail
export TP_NAME

if unshare --mount --propagation private true 2>ns.err; then
    sandbox=(unshare --mount --propagation private)
elif unshare --user --map-root-user --mount --propagation private true 2>>ns.err; then
    sandbox=(unshare --user --map-root-user --mount --propagation private)
else
    sandbox=()
fi
if [ ${#sandbox[@]} -gt 0 ]; then
    "${sandbox[@]}" bash "$0" inside || exit 1
else
    (wheel_checks) || exit 1
fi

# 4. Debian's python3 and torch 1.13, the same wheel (its torch needs
# Debian's libxml2 and SQLite, so this runs outside the namespace).
"$TP_SYSTEM_PYTHON" -c 'import torch' 2>/dev/null || fail "$TP_SYSTEM_PYTHON has no torch (python3-torch)"
"$TP_SYSTEM_PYTHON" -m venv --system-site-packages "$WORK/venv113" >venv.log 2>&1 ||
    fail "venv of $TP_SYSTEM_PYTHON: $(cat venv.log)"
"$WORK/venv113/bin/python" -m pip install -q --no-index --no-deps "$whl" >pip.log 2>&1 ||
    fail "pip install the wheel with Debian's python3: $(cat pip.log)"
cd "$out/resume" || fail "cd"
"$WORK/venv113/bin/trainparity-run" resume --resume-args --resume -- "$WORK/venv113/bin/python" \
    full_state.py >out113 2>&1 || fail "resume with torch 1.13 from the wheel: $(tail -20 out113)"

# 5. Another build of nng and SQLite in the training process: the same
# output with the agent as without it.
cd "$out/nng" || fail "cd"
"$WORK/venv/bin/python" other_nng.py >plain 2>plain.err || fail "other_nng.py: $(cat plain.err)"
grep -q '^nng ' plain || fail "other_nng.py printed nothing"
"$WORK/venv/bin/trainparity-run" record -- "$WORK/venv/bin/python" other_nng.py >agent 2>agent.err ||
    fail "record other_nng.py from the wheel: $(tail -20 agent agent.err)"
grep -E '^(nng|step|sqlite|weights) ' agent >agent.lines
cmp -s plain agent.lines || fail "other_nng.py printed otherwise under the agent: $(diff plain agent.lines)"

if [ ${#sandbox[@]} -eq 0 ]; then
    echo "SKIP wheel: no mount namespace here ($(tr '\n' ' ' <"$WORK/ns.err")); the checks ran with the system's libraries reachable"
    exit 77
fi
exit 0
