# SPDX-License-Identifier: MIT
# resume_overhead.py BUILD -- the wall time of a resume check as a ratio to
# the four plain executions it consists of: the fixture run twice from
# scratch (A, B), once more (I; plain, it cannot be ended after its save, so
# it runs to the end) and the resume command once (R, from the checkpoint I
# left); and resume --once (A, I and R: the script PASSes, so B never runs)
# as a ratio to the check without it, in the same rounds.  Three rounds;
# medians.
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd, cwd):
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - t0


def main(build):
    py = os.path.join(ROOT, ".venv", "bin", "python")
    run = os.path.join(build, "bin", "trainparity-run")
    plain, check, once = [], [], []
    for _ in range(3):
        work = tempfile.mkdtemp(prefix="tp-bench-resume-")
        for f in ("_loop.py", "full_state.py"):
            shutil.copy(os.path.join(ROOT, "fixtures", "resume", f), work)
        t = 0.0
        for _ in range(3):
            shutil.rmtree(os.path.join(work, "ckpt"), ignore_errors=True)
            t += timed([py, "full_state.py"], work)
        t += timed([py, "full_state.py", "--resume"], work)
        plain.append(t)
        shutil.rmtree(os.path.join(work, "ckpt"), ignore_errors=True)
        for opts, into in (([], check), (["--once"], once)):
            shutil.rmtree(os.path.join(work, "ckpt"), ignore_errors=True)
            t0 = time.perf_counter()
            r = subprocess.run([run, "resume"] + opts +
                               ["--resume-args", "--resume", "--", py, "full_state.py"],
                               cwd=work, capture_output=True, text=True)
            into.append(time.perf_counter() - t0)
            assert r.returncode == 0, r.stdout + r.stderr
    p, c, o = statistics.median(plain), statistics.median(check), statistics.median(once)
    print(f"resume check: {c:.1f} s, the four plain executions {p:.1f} s: ratio {c / p:.3f}")
    print(f"resume --once (B not run: PASS): {o:.1f} s, ratio to the check without it {o / c:.3f}")


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")))
