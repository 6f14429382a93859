# SPDX-License-Identifier: MIT
# gpu_overhead.py BUILD [ROUNDS [ARM...]] -- the agent's cost on training
# steps on a CUDA device, as bench/agent_overhead.py measures it on the CPU.
# Needs a CUDA device: elsewhere it prints SKIP and exits 0.
#
# The model: a GPT-style decoder (6 layers, d_model 512, 8 heads, a
# vocabulary of 8192, sequences of 256 tokens, batches of 16; 27M
# parameters), AdamW, the forward under bfloat16 autocast (fp32 with
# TP_GPU_FP32=1; TP_GPU_SHAPE=LAYERS,D_MODEL,HEADS,SEQ,BATCH: another
# shape).  torch.cuda.synchronize() ends every step, so a step's time holds
# all the work queued for it, the agent's digests on the device included.
# As in bench/agent_step.py (whose alternating arms this reuses),
# one process runs blocks of steps with and without what is measured,
# alternating with, without, without, with: the agent observing versus the
# agent standing aside (every wrapper passing straight through to torch);
# the first step of each block is left out.  The ratio is the median over
# cycles of the ratio of the arms' median step times.
# The arms, one fresh process each per round, in an order that rotates:
#   same       plain, both arms the same loop: the instrument's own noise
#   induction  under trainparity-run record --digest induction
#              (resume's A, B and I; docs/induction.md)
#   on         under trainparity-run record: every tensor digested at every
#              step (the old design, and resume's R), on the device
#   host       "on" with TRAINPARITY_DEVICE_DIGEST=0: CUDA tensors copied to
#              the host and digested there (what the device digest saves)
# Prints each arm's ratio (median over processes, and the range; target
# <= 1.02 for induction and on), then the figures as JSON on its last line.
#
#   gpu_overhead.py --step CYCLES BLOCK   one process (under the agent or not)
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import agent_step  # noqa: E402  (its alternate_steps)

CYCLES, BLOCK = 5, 5  # cycles of four blocks of BLOCK steps per process
ROUNDS = 2
TARGET = 1.02
FULL_EVERY = 100  # TRAINPARITY_FULL_EVERY of the induction runs (the default, set here)
ARMS = ("same", "induction", "on", "host")
VOCAB, D, HEADS, LAYERS, SEQ, BATCH = 8192, 512, 8, 6, 256, 16
if os.environ.get("TP_GPU_SHAPE"):  # LAYERS,D_MODEL,HEADS,SEQ,BATCH: another shape
    LAYERS, D, HEADS, SEQ, BATCH = (int(v) for v in os.environ["TP_GPU_SHAPE"].split(","))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(SEQ, D)
        layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ),
                             persistent=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x, mask=self.mask, is_causal=True)))


def trainer():
    """The model and a function that trains n steps, returning their times."""
    torch.manual_seed(0)
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), device="cuda")
    x, y = tokens[:, :-1], tokens[:, 1:]
    amp = os.environ.get("TP_GPU_FP32") != "1"

    def steps(n):
        times = []
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            opt.zero_grad()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                logits = model(x)
            loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), y.flatten())
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return times

    steps.opt = opt
    return model, steps


def step_main(ncycles, block):
    if not torch.cuda.is_available():
        print("SKIP gpu_overhead: no CUDA device here")
        return
    model, steps = trainer()
    with_s, without_s, cycles, through, observed = agent_step.alternate_steps(
        steps, ncycles, block, {"with": True}, "gpu_overhead")
    print(json.dumps({"with_s": with_s, "without_s": without_s, "cycles": cycles,
                      "ratio": statistics.median(cycles), "through_s": through,
                      "with_steps": observed,
                      "params": sum(p.numel() for p in model.parameters())}))


def run_step(cmd, cwd, env):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        print("gpu_overhead: %s failed (rc %d): %s" % (" ".join(cmd), out.returncode,
                                                         (out.stdout + out.stderr)[-1500:]),
              flush=True)
        return None
    return json.loads(lines[-1])


def measure(build, rounds, arms):
    run = os.path.join(build, "bin", "trainparity-run")
    step = [sys.executable, os.path.abspath(__file__), "--step", str(CYCLES), str(BLOCK)]
    work = tempfile.mkdtemp(prefix="tp-bench-gpu-")
    cmds = {"same": step, "induction": [run, "record", "--digest", "induction", "--"] + step,
            "on": [run, "record", "--"] + step, "host": [run, "record", "--"] + step}
    envs = {"induction": dict(os.environ, TRAINPARITY_FULL_EVERY=str(FULL_EVERY)),
            "host": dict(os.environ, TRAINPARITY_DEVICE_DIGEST="0")}
    got = {name: [] for name in arms}
    for r in range(rounds):
        k = r % len(arms)
        for name in arms[k:] + arms[:k]:
            t0 = time.perf_counter()
            out = run_step(cmds[name], work, envs.get(name, os.environ))
            print("  round %d %-9s %s (%.0f s)" % (r, name, "ratio %.4f" % out["ratio"]
                                                  if out else "failed",
                                                  time.perf_counter() - t0), flush=True)
            if out:
                got[name].append(out)
    return got


def summary(outs):
    s = sorted(o["ratio"] for o in outs)
    return {"ratio": statistics.median(s), "min": s[0], "max": s[-1], "processes": len(s),
            "with_ms": 1e3 * statistics.median(o["with_s"] for o in outs),
            "without_ms": 1e3 * statistics.median(o["without_s"] for o in outs),
            "through_s": statistics.median(o["through_s"] for o in outs)}


def main(build, rounds, arms):
    if not torch.cuda.is_available():
        print("SKIP gpu_overhead: no CUDA device here (torch %s)" % torch.__version__)
        return 0
    name = torch.cuda.get_device_name()
    print("gpu_overhead: %s, torch %s; GPT %d layers, d_model %d, seq %d, batch %d, %s; "
          "%d round(s) of %s, %d cycles of 4 blocks of %d steps each"
          % (name, torch.__version__, LAYERS, D, SEQ, BATCH,
             "fp32" if os.environ.get("TP_GPU_FP32") == "1" else "bf16 autocast",
             rounds, ", ".join(arms), CYCLES, BLOCK), flush=True)
    got = measure(build, rounds, list(arms))
    res, failed = {}, [a for a in arms if not got[a]]
    for arm in arms:
        if not got[arm]:
            continue
        s = res[arm] = summary(got[arm])
        judged = arm in ("induction", "on")
        print("  %-9s step %.2f ms without, %.2f ms with the agent: ratio %.4f (%.4f-%.4f)%s"
              % (arm, s["without_ms"], s["with_ms"], s["ratio"], s["min"], s["max"],
                 " target <= %.2f: %s" % (TARGET, "met" if s["ratio"] <= TARGET else "NOT met")
                 if judged else ""), flush=True)
    if "induction" in res:
        full = (res["on"]["ratio"] - 1) / FULL_EVERY if "on" in res else 0.0
        print("  induction with its full snapshot every %d steps (priced from \"on\"): %.4f"
              % (FULL_EVERY, res["induction"]["ratio"] + full), flush=True)
    print(json.dumps({"bench": "gpu_overhead", "device": name, "torch": torch.__version__,
                      "target": TARGET, "arms": res, "failed": failed,
                      "target_met": all(res[a]["ratio"] <= TARGET
                                        for a in ("induction", "on") if a in res)}))
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--step"]:
        step_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        root = os.path.dirname(HERE)
        sys.exit(main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                                      else os.path.join(root, "build")),
                      int(sys.argv[2]) if len(sys.argv) > 2 else ROUNDS,
                      tuple(sys.argv[3:]) or ARMS))
