# SPDX-License-Identifier: MIT
# agent_overhead.py BUILD [ROUNDS [MODEL...]] -- the agent's cost on training
# steps (default: 12 rounds, both models).
#
# Three copies of the same training loop (bench/agent_step.py: a ~10M
# parameter MLP and a small transformer, Adam, a full snapshot every step)
# run side by side, warm: one plain ("off"), one under the agent
# (trainparity-run record, real daemon), and one plain that reads, with
# torch's threads, the bytes the agent hashes where the agent hashes them
# ("read"): the least any agent that digests every byte of the state every
# step could cost.  They take turns, a few steps each, in an order that
# rotates every round, so that whatever else the machine does falls on all
# alike; the idle ones wait on a pipe.  The figures are medians, over rounds,
# of the ratio of a round's median step times to the plain one's.
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLOCK = {"mlp": 4, "transformer": 2}  # steps per turn


class Worker:
    def __init__(self, cmd, work, name, extra=()):
        self.cin = os.path.join(work, name + ".in")
        self.cout = os.path.join(work, name + ".out")
        os.mkfifo(self.cin)
        os.mkfifo(self.cout)
        self.proc = subprocess.Popen(cmd + ["--serve", self.cin, self.cout, *extra], cwd=work,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.w = open(self.cin, "w")
        self.r = open(self.cout)

    def steps(self, n):
        self.w.write("%d\n" % n)
        self.w.flush()
        line = self.r.readline()
        if not line:
            raise SystemExit("agent_overhead: a worker ended early (exit %s)" % self.proc.wait())
        return json.loads(line)

    def close(self):
        self.w.write("quit\n")
        self.w.close()
        self.r.close()
        self.proc.wait()


def measure(model, build, rounds):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    step = [py, os.path.join(HERE, "agent_step.py"), model]
    work = tempfile.mkdtemp(prefix="tp-bench-")
    workers = {"off": Worker(step, work, "off"),
               "on": Worker([run, "record", "--"] + step, work, "on"),
               "read": Worker(step, work, "read", ["--floor"])}
    order = list(workers)
    ratios = {"on": [], "read": []}
    times = {name: [] for name in workers}
    try:
        for r in range(rounds):
            got = {}
            for name in order[r % 3:] + order[:r % 3]:
                time.sleep(0.05)  # let the others' threads and the daemon go idle
                got[name] = workers[name].steps(BLOCK[model])
                times[name] += got[name]
            for name in ratios:
                ratios[name].append(statistics.median(got[name]) / statistics.median(got["off"]))
    finally:
        for w in workers.values():
            w.close()
    return {name: statistics.median(t) for name, t in times.items()}, ratios


PARAMS = {"mlp": "11.0M", "transformer": "3.7M"}


def main(build, rounds, models):
    for model in models:
        t, ratios = measure(model, build, rounds)
        on, read = ratios["on"], ratios["read"]
        print(f"agent overhead {model:12s} ({PARAMS[model]} params, {rounds} rounds): median step "
              f"{t['off'] * 1e3:.1f} ms without, {t['on'] * 1e3:.1f} ms with the agent: ratio "
              f"{statistics.median(on):.3f} (rounds {min(on):.3f}-{max(on):.3f}); "
              f"reading the same bytes: {statistics.median(read):.3f}", flush=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")),
         int(sys.argv[2]) if len(sys.argv) > 2 else 12, sys.argv[3:] or list(PARAMS))
