#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu_check.sh BUILD OUTDIR -- everything a GPU machine checks, in one run
# that ends within 8 minutes (TP_GPU_CHECK_S, default 470 s): the machine
# and its torch; bench/gpu_digest.py (the device digest against its host
# reference, and its speed); the rows of fixtures/expected.tsv that need
# CUDA, and two CPU rows (resume/full_state.py, PASS, and
# resume/torch_rng_not_restored.py, FAIL) showing that the carried build
# runs there, through tests/e2e/fixture.sh directly (the CMake cache holds
# the paths of the machine that built it), in parallel; then
# bench/gpu_overhead.py (the agent's cost on a GPT's steps).
#
# BUILD is a build folder or bench/gpu_pack.sh's .gpu/build; the libraries
# gpu_pack.sh put in .gpu/lib are used for the ones this machine lacks
# (TP_GPU_LIBS=all: every one).  The interpreter is python3 (TP_GPU_PYTHON).
# Where this python3 has no jsonschema or the machine no xmllint, the
# report checks fixture.sh makes fall back to what can be checked without
# them, and the summary says so.  Writes OUTDIR/gpu_check.log, the JSON
# lines of the benches (gpu_digest.json, gpu_overhead.json), every
# fixture's log and JSON report (OUTDIR/fixtures.tgz); never stops at a
# failure; ends with a summary table, and exits 1 if any step failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: gpu_check.sh BUILD OUTDIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
log=$out/gpu_check.log
budget=${TP_GPU_CHECK_S:-470}
py=${TP_GPU_PYTHON:-$(command -v python3)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

names=() states=() secs=() notes=()
record() { # NAME STATE SECONDS NOTE
    names+=("$1") states+=("$2") secs+=("$3") notes+=("${4:-}")
}

# left: seconds before the deadline, less a reserve for the summary
left() { echo $((start + budget - SECONDS - 10)); }

# run_step NAME MAX_S LOGFILE CMD...: CMD under timeout (at most MAX_S and
# what is left), its output in LOGFILE; prints its exit status (124: timed out).
run_step() {
    local name=$1 max=$2 file=$3 t
    shift 3
    t=$(left)
    [ "$t" -lt "$max" ] || t=$max
    if [ "$t" -lt 15 ]; then
        echo "out of time" >"$file"
        echo 125
        return
    fi
    timeout -k 10 "$t" "$@" >"$file" 2>&1
    echo $?
}

# link_libs [all]: $tmp/lib, the libraries of .gpu/lib (bench/gpu_pack.sh)
# this machine's loader does not know (all: every one).
link_libs() {
    local f name
    rm -rf "$tmp/lib" && mkdir -p "$tmp/lib"
    for f in "$root"/.gpu/lib/*; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .xz)
        if [ "${1:-}" != all ] &&
            ldconfig -p 2>/dev/null | grep -q "^[[:space:]]$name (.*x86-64"; then
            continue # this machine's own
        fi
        case $f in
        *.xz) "$py" -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as a, open(sys.argv[2], "wb") as b: shutil.copyfileobj(a, b)' \
            "$f" "$tmp/lib/$name" ;;
        *) ln -s "$f" "$tmp/lib/$name" ;;
        esac
        echo "from .gpu/lib: $name"
    done
}

# unresolved: what the loader cannot find, or finds too old, for BUILD's files
unresolved() {
    local b
    for b in "$build"/bin/trainparity-run "$build"/bin/trainparity-daemon "$build"/lib/*.so; do
        [ -e "$b" ] || continue
        ldd "$b" 2>&1 | grep 'not found' | sed "s|^|$(basename "$b"): |"
    done
}

state_of() { # RC [LOG]: the state of a step (a bench that printed SKIP: SKIP)
    case $1 in
    0) if [ -n "${2:-}" ] && grep -q '^SKIP' "$2"; then echo SKIP; else echo PASS; fi ;;
    77) echo SKIP ;;
    124 | 137) echo TIMEOUT ;;
    125) echo NOT-RUN ;;
    *) echo FAIL ;;
    esac
}

main() {
    start=$SECONDS
    echo "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ): build $build, output $out, budget ${budget}s"
    echo "== machine"
    nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,mig.mode.current --format=csv \
        2>/dev/null | head -3
    echo "glibc: $(ldd --version 2>&1 | head -1); $(uname -srm); $(nproc) CPUs"
    echo "python: $py ($("$py" --version 2>&1))"
    "$py" - <<'PY' 2>&1
import importlib, importlib.metadata, torch
print("torch %s, CUDA %s, cuDNN %s, available %s, devices %d%s" % (
    torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
    torch.cuda.is_available(), torch.cuda.device_count(),
    ": " + torch.cuda.get_device_name(0) + " sm_%d%d" % torch.cuda.get_device_capability(0)
    if torch.cuda.is_available() else ""))
if torch.cuda.is_available():
    torch.cuda.init()
# What the kernel trace (CUPTI, not built yet) will have to match: the CUDA
# runtime torch loaded, and the CUPTI libraries on this machine.
import glob, os, site
rt = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l})
print("loaded CUDA runtime: %s" % (", ".join(rt) or "none (static, or CUDA not initialised)"))
roots = site.getsitepackages() + ["/usr/local/cuda", "/usr/lib/x86_64-linux-gnu", "/opt"]
cupti = sorted({p for r in roots for p in glob.glob(r + "/**/libcupti.so*", recursive=True)})
print("libcupti: %s" % (", ".join(cupti[:6]) or "none found"))
for m in ("numpy", "jsonschema"):
    try:
        mod = importlib.import_module(m)
    except Exception as e:
        print("%s MISSING (%s)" % (m, e))
        continue
    try:
        print("%s %s" % (m, importlib.metadata.version(m)))
    except Exception:
        print("%s %s" % (m, getattr(mod, "__version__", "(no version)")))
PY
    local cuda=0
    "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null &&
        cuda=1
    if [ $cuda = 1 ]; then
        record "cuda device" PASS 0
    else
        record "cuda device" FAIL 0 "torch sees no CUDA device"
    fi

    echo "== libraries"
    export LD_LIBRARY_PATH=$build/lib:$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    [ -d "$root/.gpu/bin" ] && export PATH=$PATH:$root/.gpu/bin
    local missing
    link_libs "${TP_GPU_LIBS:-}"
    missing=$(unresolved)
    if [ -n "$missing" ] && [ "${TP_GPU_LIBS:-}" != all ]; then
        echo "$missing"
        echo "some resolve to none or to this machine's older copies: every carried one instead"
        link_libs all
        missing=$(unresolved)
    fi
    [ -z "$missing" ] || echo "$missing"
    [ -e "$build/lib/libtpagent_cuda.so" ] ||
        echo "note: $build/lib/libtpagent_cuda.so is not built: CUDA tensors digested on the host"
    if [ -z "$missing" ]; then
        record "shared libraries" PASS 0
    else
        record "shared libraries" FAIL 0 "some not found (above)"
    fi

    # What fixture.sh checks with tools this machine may lack.
    local degraded=()
    if ! "$py" -c 'import jsonschema' 2>/dev/null; then
        mkdir -p "$tmp/py/jsonschema"
        cat >"$tmp/py/jsonschema/__init__.py" <<'PY'
# gpu_check.sh's stand-in (this python3 has no jsonschema): the top level's
# required keys and the enums of its properties (docs/report-schema.json).
class _E:
    def __init__(self, msg):
        self.message, self.absolute_path, self.context, self.validator = msg, [], None, "x"


class Draft202012Validator:
    def __init__(self, schema):
        self.schema = schema

    @staticmethod
    def check_schema(schema):
        pass

    def iter_errors(self, r):
        if not isinstance(r, dict):
            return [_E("not an object")]
        errs = [_E("%r is a required property" % k) for k in self.schema.get("required", [])
                if k not in r]
        for k, p in self.schema.get("properties", {}).items():
            if k in r and isinstance(p, dict) and "enum" in p and r[k] not in p["enum"]:
                errs.append(_E("%s: %r is not one of %r" % (k, r[k], p["enum"])))
        return errs
PY
        export PYTHONPATH=$tmp/py${PYTHONPATH:+:$PYTHONPATH}
        degraded+=("no jsonschema: reports checked for their required keys only")
    fi
    if ! command -v xmllint >/dev/null; then
        mkdir -p "$tmp/bin"
        cat >"$tmp/bin/xmllint" <<SH
#!/bin/sh
# gpu_check.sh's stand-in (no xmllint here): well-formedness only
for f; do
    case \$f in
    --* | *.xsd) ;;
    *) exec "$py" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "\$f" ;;
    esac
done
SH
        chmod +x "$tmp/bin/xmllint"
        export PATH=$PATH:$tmp/bin
        degraded+=("no xmllint: JUnit reports checked for well-formedness only")
    fi
    local d
    for d in ${degraded[@]+"${degraded[@]}"}; do echo "DEGRADED: $d"; done

    echo "== bench/gpu_digest.py"
    local t0=$SECONDS rc
    rc=$(run_step gpu_digest 150 "$out/gpu_digest.log" "$py" "$root/bench/gpu_digest.py" "$build")
    cat "$out/gpu_digest.log"
    grep '^{' "$out/gpu_digest.log" | tail -1 >"$out/gpu_digest.json"
    record "gpu_digest.py" "$(state_of "$rc" "$out/gpu_digest.log")" $((SECONDS - t0)) \
        "$(grep -E '^(correctness|throughput)' "$out/gpu_digest.log" | sed 's/(target.*//' |
            tr -s ' \n' ' ;' | cut -c1-240)"

    echo "== fixtures (in parallel)"
    mkdir -p "$out/fixtures/reports"
    local rows=() row check fixture outcome path pythons needs options
    while IFS=$'\t' read -r check fixture outcome path pythons needs options; do
        case $check in '#'* | '') continue ;; esac
        if [ "$needs" = cuda ] || [ "$fixture" = resume/full_state.py ] ||
            [ "$fixture" = resume/torch_rng_not_restored.py ]; then
            rows+=("$check"$'\t'"$fixture"$'\t'"$outcome"$'\t'"$path"$'\t'"$needs"$'\t'"$options")
        fi
    done <"$root/fixtures/expected.tsv"
    t0=$SECONDS
    local i=0 s pids=() logs=() labels=()
    for row in "${rows[@]}"; do
        IFS=$'\t' read -r check fixture outcome path needs options <<<"$row"
        local flog=$out/fixtures/$check.$(basename "$fixture" .py).log
        (
            export TP_BIN=$build/bin TP_LIB=$build/lib TP_PYTHON=$py TP_SYSTEM_PYTHON=$py
            export TP_REPORT_DIR=$out/fixtures/reports
            s0=$SECONDS
            rc=$(run_step "$fixture" 300 "$flog" bash "$root/tests/e2e/fixture.sh" \
                "$check" "$fixture" "$outcome" "$path" venv "$needs" "$options")
            echo "$rc $((SECONDS - s0))" >"$flog.rc"
        ) &
        pids+=($!) logs+=("$flog") labels+=("$check $fixture $outcome${path:+ $path}")
        i=$((i + 1))
    done
    wait "${pids[@]}"
    for i in "${!logs[@]}"; do
        read -r rc s <"${logs[$i]}.rc" || { rc=1 s=$((SECONDS - t0)); }
        echo "-- ${labels[$i]}: rc $rc"
        cat "${logs[$i]}"
        record "${labels[$i]}" "$(state_of "$rc")" "$s" \
            "$(grep -E '^(ok|FAIL|SKIP) ' "${logs[$i]}" | head -1 | cut -c1-160)"
    done

    echo "== bench/gpu_overhead.py"
    t0=$SECONDS
    rc=$(run_step gpu_overhead 220 "$out/gpu_overhead.log" "$py" "$root/bench/gpu_overhead.py" \
        "$build" "${TP_GPU_ROUNDS:-2}")
    cat "$out/gpu_overhead.log"
    grep '^{' "$out/gpu_overhead.log" | tail -1 >"$out/gpu_overhead.json"
    record "gpu_overhead.py" "$(state_of "$rc" "$out/gpu_overhead.log")" $((SECONDS - t0)) \
        "$(grep -E '^  (induction|on|host) ' "$out/gpu_overhead.log" |
            sed 's/ *step .*: ratio/ ratio/' | tr -s ' \n' ' ;' | cut -c1-240)"

    echo
    echo "== summary ($((SECONDS - start)) s)"
    local bad=0
    for i in "${!names[@]}"; do
        printf '%-8s %4ss  %s%s\n' "${states[$i]}" "${secs[$i]}" "${names[$i]}" \
            "${notes[$i]:+  -- ${notes[$i]}}"
        case ${states[$i]} in PASS | SKIP) ;; *) bad=1 ;; esac
    done
    for d in ${degraded[@]+"${degraded[@]}"}; do echo "DEGRADED: $d"; done
    [ -s "$out/gpu_digest.json" ] && echo "gpu_digest: $(cut -c1-400 "$out/gpu_digest.json")"
    [ -s "$out/gpu_overhead.json" ] && echo "gpu_overhead: $(cut -c1-400 "$out/gpu_overhead.json")"
    [ $bad = 0 ] && echo "gpu_check: all passed" || echo "gpu_check: FAILED (above)"
    return $bad
}

main 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# A few files come back from such a machine: the fixtures' logs and reports
# travel as one archive.
if [ -d "$out/fixtures" ]; then
    tar czf "$out/fixtures.tgz" -C "$out" fixtures && rm -rf "$out/fixtures"
fi
exit "$rc"
