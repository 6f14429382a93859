# SPDX-License-Identifier: MIT
# agent_overhead.py BUILD [ROUNDS [MODEL...]] -- the agent's cost on training
# steps (default: both models, ROUNDS_OF rounds each).
#
# The same training loop (bench/agent_step.py: a ~10M-parameter MLP and a
# small transformer, Adam) runs, in one process, steps with and steps
# without what is measured, in alternating blocks: the agent observing
# versus the agent standing aside (every wrapper passing straight through
# to torch).  The ratio of the two arms'
# step times is the agent's cost per step, measured on the same memory and
# threads: two processes timing the same loop differ by up to 10% for as
# long as they live on this kind of machine (where their memory landed),
# which no number of rounds of whole processes brings under the 2% this
# measures.  What runs:
#   same       plain, both arms the same loop: the instrument's own noise
#   induction  under trainparity-run record --digest induction,
#              as resume's A, B, I and R and compare's C and D run (real
#              daemon; docs/induction.md)
#   on         under trainparity-run record: every tensor digested at every
#              step (the old design; record, compare --digest full)
#   read       plain, the "with" arm reading, with torch's threads, the bytes
#              the old design hashes where it hashes them: the least any
#              agent digesting every byte at every step could cost (the
#              floor of the old design, which the induction mode goes below)
#   health     under trainparity-run health: "on" plus TRAINPARITY_UPDATE_NORM=1,
#              a copy of the parameters before each optimizer step and the
#              norm of the difference after it
#   hfloor     plain, the "with" arm reading what "read" reads and moving
#              the bytes an exact update norm must move (every parameter
#              copied before the step, it and its copy read after): the
#              least any health with exact update norms at every step could
#              cost
#   sparse     the same with --every SPARSE: the update measured once
# Each round starts one fresh process of each, in an order that rotates; the
# figures are medians over rounds of each process's ratio.  Two costs the
# arms do not see are printed beside them: the induction mode's full
# snapshot every TRAINPARITY_FULL_EVERY (100) steps, which the "on" ratio
# prices (its steps all take one), and the wrappers' pass-through, which
# both arms pay (agent_step.py measures it).
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLOCK = 4  # steps per block; the first of each is left out
CYCLES = {"mlp": 6, "mlp44": 4, "transformer": 4}  # cycles of four blocks per process
# The MLP's steps are short and their times bimodal here (a few ms apart,
# switching as the process runs): more processes make its median as steady
# as the transformer's.
ROUNDS_OF = {"mlp": 5, "mlp44": 3, "transformer": 3}
# mlp44 is the MLP at four times its parameters: whether each cost stays a
# constant fraction of the step as the model grows.
PARAMS = {"mlp": "11.0M", "mlp44": "44.0M", "transformer": "3.7M"}
FULL_EVERY = 100  # TRAINPARITY_FULL_EVERY of the induction runs (the default, set here)
# health --every SPARSE: the update measured at step 0 only, so what is
# left is what the checks on finite values, skipped steps and coverage cost.
SPARSE = 1000000


def run_step(cmd, cwd, env=None):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit("agent_overhead: %s failed (rc %d): %s" % (" ".join(cmd), out.returncode,
                                                             out.stderr.strip()[-400:]))
    return json.loads(lines[-1])


def measure(model, build, rounds):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    step = [py, os.path.join(HERE, "agent_step.py"), model, str(CYCLES[model]), str(BLOCK)]
    work = tempfile.mkdtemp(prefix="tp-bench-")
    cmds = {"same": step, "induction": [run, "record", "--digest", "induction", "--"] + step,
            "on": [run, "record", "--"] + step, "read": step + ["--floor"],
            "health": [run, "health", "--"] + step, "hfloor": step + ["--floor-health"],
            "sparse": [run, "health", "--every", str(SPARSE), "--"] + step}
    envs = {"induction": dict(os.environ, TRAINPARITY_FULL_EVERY=str(FULL_EVERY))}
    order = list(cmds)
    got = {name: [] for name in cmds}
    for r in range(rounds):
        k = r % len(order)
        for name in order[k:] + order[:k]:
            got[name].append(run_step(cmds[name], work, envs.get(name)))
    return got


def spread(outs):
    """The median over processes of their ratios, and the range, as text."""
    s = sorted(o["ratio"] for o in outs)
    return f"{statistics.median(s):.3f} ({s[0]:.3f}-{s[-1]:.3f})"


def ms(outs, key):
    return statistics.median(o[key] for o in outs) * 1e3


def main(build, rounds, models):
    for model in models:
        n = rounds or ROUNDS_OF[model]
        got = measure(model, build, n)
        ind, on = got["induction"], got["on"]
        ratio = statistics.median(o["ratio"] for o in ind)
        full = (statistics.median(o["ratio"] for o in on) - 1) / FULL_EVERY
        through = statistics.median(o["through_s"] for o in ind) / (ms(ind, "without_s") / 1e3)
        print(f"agent overhead {model:12s} ({PARAMS[model]} params; {n} processes of "
              f"{CYCLES[model]} cycles each; ratios: median over processes, and their range)",
              flush=True)
        print(f"  the instrument, the same loop in both arms: {spread(got['same'])}", flush=True)
        print(f"  induction (resume's A, B, I, R; compare's C, D): step {ms(ind, 'without_s'):.1f} ms without, "
              f"{ms(ind, 'with_s'):.1f} ms with the agent: ratio {spread(ind)}; its full "
              f"snapshot every {FULL_EVERY} steps adds {full:.4f} and the wrappers' pass-through, "
              f"which both arms pay, {through:.5f}: {ratio + full + through:.3f} in all",
              flush=True)
        print(f"  old design (every tensor every step; record, compare --digest full): "
              f"ratio {spread(on)}; "
              f"its floor, reading the same bytes: {spread(got['read'])}", flush=True)
        print(f"  health (update norms): ratio {spread(got['health'])}; its floor, reading "
              f"those bytes and copying and reading the parameters as an exact update norm "
              f"must: {spread(got['hfloor'])}; with --every {SPARSE} "
              f"(the update measured at step 0 only; skipped steps read from the snapshots): "
              f"{spread(got['sparse'])}", flush=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")),
         int(sys.argv[2]) if len(sys.argv) > 2 else 0, sys.argv[3:] or list(PARAMS))
