# SPDX-License-Identifier: MIT
# agent_overhead.py BUILD -- the agent's cost on training steps: the same
# training loop (bench/agent_step.py: a ~10M-parameter MLP and a small
# transformer, Adam, a full snapshot every step) run alternately without and
# with the agent (trainparity-run record, real daemon), three times each;
# the figure is the ratio of the median step times.
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def median_step(cmd, cwd):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def main(build):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    step = os.path.join(HERE, "agent_step.py")
    work = tempfile.mkdtemp(prefix="tp-bench-")
    for model in ("mlp", "transformer"):
        off, on = [], []
        for _ in range(3):
            off.append(median_step([py, step, model], work)["median_s"])
            r = median_step([run, "record", "--", py, step, model], work)
            on.append(r["median_s"])
        ratio = statistics.median(on) / statistics.median(off)
        print(f"agent overhead {model:12s} ({r['params'] / 1e6:.1f}M params): median step "
              f"{statistics.median(off) * 1e3:.1f} ms without, {statistics.median(on) * 1e3:.1f} ms "
              f"with the agent: ratio {ratio:.3f}", flush=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")))
