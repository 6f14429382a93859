# SPDX-License-Identifier: MIT
# agent_step.py -- the training loop the agent-overhead bench times: a ~10M
# parameter MLP or a small transformer on CPU, Adam, a full snapshot every
# step.
#
#   agent_step.py MODEL [STEPS] [--floor] [--alternate BLOCK]
#
# prints the median step time in seconds, leaving out the first two steps,
# as JSON on its last line.  --floor: see trainer().
#
# --alternate BLOCK: after WARMUP steps, the STEPS left run in cycles of
# four blocks of BLOCK steps that alternate between two arms, in the order
# with, without, without, with (so that neither arm always comes first, and
# a drift over the cycle weighs on both alike):
# "with" is the agent observing (or the floor's reads), "without" the agent
# standing aside, every wrapper of it passing straight through to torch as
# in a forked child (agent/glue/core.py, S.aside), or no reads.  The first
# step of each block is left out (what the block before left behind: the
# daemon storing the last step's events, caches).  The ratio is the median
# over cycles of the ratio of the arms' median step times in the cycle.
# Both arms run in the same process, on the same memory, so it is free of
# the several percent two processes differ by (bench/agent_overhead.py).
# Under the agent it checks that the agent counted exactly the steps of
# the "with" arm, and measures what its wrappers cost standing aside
# (pass_through), which the ratio does not show.  With neither the agent
# nor --floor both arms are the same loop: the ratio shows the
# instrument's own noise.
import json
import statistics
import sys
import time

import torch
import torch.nn as nn

WARMUP = 8  # --alternate: steps before the arms, left out (the first are several percent slower)


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 1536), nn.ReLU(), nn.Linear(1536, 1024))
    x = torch.randn(256, 1024)
    y = torch.randn(256, 1024)
    return model, lambda: nn.functional.mse_loss(model(x), y)


def transformer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    model = nn.Sequential(nn.Embedding(1000, 256), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(256, 1000))
    tokens = torch.randint(0, 1000, (16, 128))
    return model, lambda: nn.functional.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten())


def trainer(kind, floor=False):
    """The model and a function that trains n steps, returning their times.
    With floor (a bool, or a function called at each step that says
    whether), each step also reads what the agent hashes, where it hashes
    it, with torch's own threads (amax: one pass, no copy): the parameters
    and optimizer state at the backward, the gradients at the step."""
    model, loss_fn = {"mlp": mlp, "transformer": transformer}[kind]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    params = list(model.parameters())

    def read(tensors):
        for t in tensors:
            t.amax()

    def steps(n):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            reads = floor() if callable(floor) else floor
            opt.zero_grad()
            loss = loss_fn()
            if reads:
                read(params + [v for s in opt.state.values() for v in s.values() if v.dim()])
            loss.backward()
            if reads:
                read([p.grad for p in params])
            opt.step()
            times.append(time.perf_counter() - t0)
        return times

    steps.opt = opt
    return model, steps


def pass_through(opt, calls=2000):
    """Seconds per step that the agent's wrappers cost while it stands
    aside, which both arms pay: three wrappers per step here (zero_grad,
    backward, the optimizer's step), each taken to cost what zero_grad's
    costs over the function it wraps (best of five runs of `calls`)."""
    f = type(opt).zero_grad
    if not getattr(f, "_tp_wrapped", False):
        return 0.0

    def best(fn):
        b = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(opt)
            b = min(b, time.perf_counter() - t0)
        return b / calls

    return 3 * max(0.0, best(f) - best(f.__wrapped__))


def alternate(kind, n, floor, block):
    """The arms' median step times (with, without) and the ratio of the
    two in each cycle of four blocks, as --alternate says."""
    glue = sys.modules.get("_trainparity_glue.core")  # the agent's, when it runs
    arm = {"with": True}
    model, steps = trainer(kind, (lambda: arm["with"]) if floor else False)
    steps(WARMUP)
    times, cycles = {True: [], False: []}, []
    for c in range(max(1, (n - WARMUP) // (4 * block))):
        got = {True: [], False: []}
        for w in (True, False, False, True):
            arm["with"] = w
            if glue is not None:
                glue.S.aside = not w
            got[w] += steps(block)[1:]
        cycles.append(statistics.median(got[True]) / statistics.median(got[False]))
        for w in got:
            times[w] += got[w]
    through = 0.0
    if glue is not None:
        through = pass_through(steps.opt)
        glue.S.aside = False
        observed = WARMUP + 2 * block * len(cycles)
        if glue.S.step != observed:
            sys.exit("agent_step: the agent counted %d steps, the \"with\" arm ran %d"
                     % (glue.S.step, observed))
    return (model, statistics.median(times[True]), statistics.median(times[False]), cycles,
            through)


def main(kind, n, floor, block):
    out = {"model": kind}
    if block:
        (model, out["with_s"], out["without_s"], out["cycles"],
         out["through_s"]) = alternate(kind, n, floor, block)
        out["ratio"] = statistics.median(out["cycles"])
    else:
        model, steps = trainer(kind, floor)
        out["median_s"] = statistics.median(steps(n)[2:])
    out["params"] = sum(p.numel() for p in model.parameters())
    print(json.dumps(out))


if __name__ == "__main__":
    args, block = [a for a in sys.argv[1:] if a != "--floor"], 0
    if "--alternate" in args:
        i = args.index("--alternate")
        block = int(args[i + 1])
        del args[i:i + 2]
    main(args[0], int(args[1]) if len(args) > 1 else 12, "--floor" in sys.argv[1:], block)
