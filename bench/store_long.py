# SPDX-License-Identifier: MIT
# store_long.py BUILD [STEPS] -- what a long run costs the store: `record`
# of STEPS steps (default 100,000; TP_BENCH_STORE_STEPS) of a 15-layer
# MLP trained with Adam, whose every step digests 151 tensors (30
# parameters, their gradients, Adam's exp_avg, exp_avg_sq and step for
# each, and the CPU generator's state); then the database's size, its bytes per digested tensor per step,
# and the time of each query beside the time of the run.  `query diff`
# compares the run with itself by compare's rules; it holds both sides in
# memory (about 5 GB at 100,000 steps).  Then a verdict: `compare` of the
# same command against the run (C and D, in the induction mode), and that
# compare run judged again offline (`trainparity-daemon judge`), which
# times the verdict alone: the golden run and C and D loaded, compared and
# reported.  The queries and the judge run under a memory cap
# (TP_BENCH_STORE_MEM_GB, default three quarters of the machine's memory,
# at most 16 GB) and say so when they need more.
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LAYERS = 15
# weight and bias: the parameter, its grad, 3 Adam states; and rng.torch_cpu
TENSORS = LAYERS * 2 * 5 + 1

TRAIN = """
import sys, torch
torch.manual_seed(0)
steps, layers = int(sys.argv[1]), int(sys.argv[2])
m = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(layers)])
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x, y = torch.randn(8, 4), torch.randn(8, 4)
for _ in range(steps):
    opt.zero_grad()
    torch.nn.functional.mse_loss(m(x), y).backward()
    opt.step()
"""


class Done:
    """what a command left: its exit status, output, and peak memory"""

    def __init__(self, returncode, stdout, stderr, maxrss_kb):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.peak_gb = maxrss_kb / (1 << 20)


def timed(cmd, cwd, mem_gb=None, timeout=None):
    """runs cmd to its end (None after timeout seconds): its wall time, and
    a Done with its own peak resident memory (wait4's, of that process)"""
    def cap():
        if mem_gb:
            b = int(mem_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (b, b))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, preexec_fn=cap)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if timeout is not None and time.perf_counter() - t0 > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                return time.perf_counter() - t0, None
            time.sleep(0.01)
        t = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return t, Done(p.returncode, out.read().decode(errors="replace"),
                       err.read().decode(errors="replace"), ru.ru_maxrss)


def main(build, steps):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    daemon = os.path.join(build, "bin", "trainparity-daemon")
    ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    mem_gb = float(os.environ.get("TP_BENCH_STORE_MEM_GB", min(16.0, 0.75 * ram_gb)))
    work = tempfile.mkdtemp(prefix="tp-bench-store-")
    with open(os.path.join(work, "train.py"), "w") as f:
        f.write(TRAIN)
    t_run, r = timed([run, "record", "--name", "long", "--", py, "train.py", str(steps),
                      str(LAYERS)], work)
    assert r is not None and r.returncode == 0, (r.stdout[-2000:] + r.stderr) if r else "timeout"
    db = os.path.join(work, ".trainparity", "runs.db")
    size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    c = sqlite3.connect(db)
    run_id = c.execute("SELECT id FROM runs WHERE name = 'long'").fetchone()[0]
    # the tensors digested: one definition per tensor path (head: array
    # header, then "t"), each in every step's snapshot or gradients
    tensors = sum(1 for (h,) in c.execute("SELECT head FROM leafdefs") if h[1:3] == b"\xa1t")
    nsteps = c.execute("SELECT count(*) FROM events WHERE kind = 'step'"
                       " AND step >= 0").fetchone()[0] // 2
    bodies = c.execute("SELECT sum(length(body)) FROM events").fetchone()[0]
    c.close()
    assert tensors == TENSORS, f"{tensors} tensor definitions, expected {TENSORS}"
    assert nsteps == steps, f"{nsteps} steps stored, expected {steps}"
    per = size / (steps * TENSORS)
    print(f"store: record of {steps} steps x {TENSORS} tensors: {t_run:.1f} s; database "
          f"{size / 1e6:.1f} MB ({bodies / 1e6:.1f} MB of bodies): {per:.1f} bytes per tensor "
          f"per step (goal <= 64)")
    for q in (["query", "run", str(run_id)], ["query", "steps", str(run_id)],
              ["query", "diff", str(run_id), str(run_id)]):
        query(daemon, db, q, work, mem_gb, t_run)
    # a verdict: the same command compared with the run (PASS: the script is
    # seeded), then that compare run judged again alone
    t_cmp, r = timed([run, "compare", "--against", "long", "--name", "long-compare", "--", py,
                      "train.py", str(steps), str(LAYERS)], work)
    assert r is not None and r.returncode == 0, (r.stdout[-2000:] + r.stderr) if r else "timeout"
    c = sqlite3.connect(db)
    cmp_id = c.execute("SELECT id FROM runs WHERE name = 'long-compare'").fetchone()[0]
    c.close()
    print(f"store: compare against it (C and D, induction): {t_cmp:.1f} s "
          f"({t_cmp / t_run:.2f} of the record), PASS")
    query(daemon, db, ["judge", str(cmp_id)], work, mem_gb, t_run,
          "a compare verdict: G, C and D loaded and compared")


def query(daemon, db, q, work, mem_gb, t_run, what=None):
    """runs trainparity-daemon Q on db under the memory cap and prints its
    time beside the record's"""
    t, r = timed([daemon, "--db", db] + q, work, mem_gb=mem_gb, timeout=1800)
    name = " ".join(q[:2]) if q[0] == "query" else q[0]
    if what:
        name += f" ({what})"
    if r is None:
        print(f"store: {name}: no answer in 1800 s")
    elif r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        print(f"store: {name}: exit {r.returncode} after {t:.1f} s under a {mem_gb:.1f} GB "
              f"cap: {why}")
    else:
        print(f"store: {name}: {t:.2f} s ({t / t_run:.4f} of the run), peak memory "
              f"{r.peak_gb:.2f} GB")


if __name__ == "__main__":
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    n = int(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("TP_BENCH_STORE_STEPS", "100000"))
    main(build, n)
