# SPDX-License-Identifier: MIT
# agent_overhead.py BUILD [ROUNDS [MODEL...]] -- the agent's cost on training
# steps (default: 12 rounds, both models).
#
# The same training loop (bench/agent_step.py: a ~10M-parameter MLP and a
# small transformer, Adam) runs six ways: plain ("off"), under the agent as
# resume's A, B and I run it ("induction": TRAINPARITY_DIGEST=induction, the
# model and optimizer state digested at boundaries only, docs/induction.md;
# real daemon), under the agent digesting every tensor at every step as
# trainparity-run record runs it ("on", the old design and resume's R), under the agent as trainparity-run health runs it ("health": the
# same plus TRAINPARITY_UPDATE_NORM=1, a copy of the parameters before each
# optimizer step and the norm of the difference after it), the same with
# --every SPARSE ("sparse": the update measured once), and plain but
# reading, with torch's threads, the bytes the agent hashes where the agent
# hashes them ("read": the least that any agent digesting every byte of the
# state at every step could cost: the floor of the old design, which the
# induction mode goes below).  Each round starts one fresh process of
# each, in an order that rotates, and takes the median of its step times;
# the figures are medians over rounds of the ratio to the plain process of
# the same round.  Fresh processes, many rounds: two identical processes on
# this kind of machine differ by up to 10% for as long as they live (where
# their memory landed), so one pair of warm processes measures their
# placement as much as the agent.
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS = {"mlp": 6, "transformer": 4}  # timed steps per process, after two
PARAMS = {"mlp": "11.0M", "transformer": "3.7M"}


def median_step(cmd, cwd, env=None):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True,
                         env=env).stdout
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])["median_s"]


# health --every SPARSE: the update measured at step 0 only, so what is
# left is what the checks on finite values, skipped steps and coverage cost.
SPARSE = 1000000


def measure(model, build, rounds):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    step = [py, os.path.join(HERE, "agent_step.py"), model, str(STEPS[model] + 2)]
    work = tempfile.mkdtemp(prefix="tp-bench-")
    cmds = {"off": step, "induction": [run, "record", "--"] + step,
            "on": [run, "record", "--"] + step,
            "health": [run, "health", "--"] + step,
            "sparse": [run, "health", "--every", str(SPARSE), "--"] + step,
            "read": step + ["--floor"]}
    order = list(cmds)
    envs = {"induction": dict(os.environ, TRAINPARITY_DIGEST="induction")}
    times = {name: [] for name in cmds}
    ratios = {name: [] for name in cmds if name != "off"}
    for r in range(rounds):
        k = r % len(order)
        got = {name: median_step(cmds[name], work, envs.get(name))
               for name in order[k:] + order[:k]}
        for name in cmds:
            times[name].append(got[name])
        for name in ratios:
            ratios[name].append(got[name] / got["off"])
    return {name: statistics.median(t) for name, t in times.items()}, ratios


def spread(ratios):
    """The median of ratios and its middle half, as text."""
    s = sorted(ratios)
    q = len(s) // 4
    return f"{statistics.median(s):.3f} (middle half of rounds {s[q]:.3f}-{s[-1 - q]:.3f})"


def main(build, rounds, models):
    for model in models:
        t, ratios = measure(model, build, rounds)
        read = sorted(ratios["read"])
        q = len(read) // 4
        print(f"agent overhead {model:12s} ({PARAMS[model]} params, {rounds} rounds): median step "
              f"{t['off'] * 1e3:.1f} ms without, {t['induction'] * 1e3:.1f} ms with the agent "
              f"(induction): ratio {spread(ratios['induction'])}", flush=True)
        print(f"agent overhead {model:12s} old design (every tensor every step), same rounds: "
              f"{t['on'] * 1e3:.1f} ms: ratio {spread(ratios['on'])}; its floor, reading the same "
              f"bytes: {statistics.median(read):.3f} ({read[q]:.3f}-{read[-1 - q]:.3f})",
              flush=True)
        print(f"agent overhead {model:12s} under health (update norms), same rounds: median step "
              f"{t['health'] * 1e3:.1f} ms: ratio {spread(ratios['health'])}; with --every {SPARSE} "
              f"(the update measured at step 0 only; skipped steps read from the snapshots): "
              f"{spread(ratios['sparse'])}", flush=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")),
         int(sys.argv[2]) if len(sys.argv) > 2 else 12, sys.argv[3:] or list(PARAMS))
