#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh BUILD -- every benchmark, each reported as a ratio to a baseline
# measured in the same command.  agent_overhead.py alone takes about 20
# minutes on a 2-core machine (three models); run it on a quiet machine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
"$build/bin/hash_bench" 256
"$build/bin/ingest_bench"
# a real daemon process on tcp:// fed by 1, 16 and 64 sender processes (ranks)
"$build/bin/ranks_bench"
"$build/bin/coverage_bench" 10
"$root/.venv/bin/python" "$root/bench/agent_overhead.py" "$build"
"$root/.venv/bin/python" "$root/bench/resume_overhead.py" "$build"
# a long record (100,000 steps x 151 tensors; TP_BENCH_STORE_STEPS): the
# database's bytes per tensor per step, and the queries' time beside the run's
"$root/.venv/bin/python" "$root/bench/store_long.py" "$build"
# On a GPU (each says SKIP elsewhere): the device digest against a copy of
# the same bytes, and the agent's cost on a GPT's steps on the GPU.
"$root/.venv/bin/python" "$root/bench/gpu_digest.py" "$build"
"$root/.venv/bin/python" "$root/bench/gpu_overhead.py" "$build"
