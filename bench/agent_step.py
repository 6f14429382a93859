# SPDX-License-Identifier: MIT
# agent_step.py -- the training loop the agent-overhead bench times: an
# 11M-parameter MLP (mlp), the same MLP at twice its width (mlp44: 44M
# parameters, so that the bench shows how the cost grows with the model) or
# a small transformer on CPU, Adam.
#
#   agent_step.py MODEL CYCLES BLOCK [--floor | --floor-health]
#                                   (MODEL: mlp, mlp44, transformer, tiny)
#
# After WARMUP steps it runs CYCLES cycles of four blocks of BLOCK steps
# that alternate between two arms, in the order with, without, without,
# with (so that neither arm always comes first, and a drift over the cycle
# weighs on both alike): "with" is the agent observing (or, with --floor,
# the loop reading what the agent hashes; with --floor-health, that and
# the memory traffic of an exact update norm too: see trainer()), "without" the
# agent standing aside, every wrapper of it passing straight through to
# torch as in a forked child (agent/glue/core.py, S.aside), or no reads.
# The first step of each block is left out (what the block before left
# behind: the daemon storing the last step's events, caches).  The ratio
# is the median over cycles of the ratio of the arms' median step times in
# the cycle.  Both arms run in the same process, on the same memory, so it
# is free of the several percent two processes differ by
# (bench/agent_overhead.py).  Under the agent it checks that the agent
# counted exactly the steps of the "with" arm, and measures what its
# wrappers cost standing aside (pass_through), which the ratio does not
# show.  With neither the agent nor --floor both arms are the same loop:
# the ratio shows the instrument's own noise.  It prints its figures as
# JSON on its last line.
import json
import statistics
import sys
import time

import torch
import torch.nn as nn

WARMUP = 8  # steps before the arms, left out (the first are several percent slower)


def mlp(width=1024):
    torch.manual_seed(0)
    w = width
    model = nn.Sequential(nn.Linear(w, 2 * w), nn.ReLU(), nn.Linear(2 * w, 2 * w), nn.ReLU(),
                          nn.Linear(2 * w, 3 * w // 2), nn.ReLU(), nn.Linear(3 * w // 2, w))
    x = torch.randn(256, w)
    y = torch.randn(256, w)
    return model, lambda: nn.functional.mse_loss(model(x), y)


def tiny():
    """The MLP at 1/16 of its width: a check of the instrument itself
    (tests/e2e/agent_test.py, aside), quick under any torch."""
    return mlp(64)


def mlp44():
    """The MLP at twice its width: four times its parameters (44M)."""
    return mlp(2048)


def transformer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    model = nn.Sequential(nn.Embedding(1000, 256), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(256, 1000))
    tokens = torch.randint(0, 1000, (16, 128))
    return model, lambda: nn.functional.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten())


def trainer(kind, floor=None, update=False):
    """The model and a function that trains n steps, returning their times.
    Where floor (a function called at each step) says so, the step also
    reads what the agent hashes, where it hashes it, with torch's own
    threads (amax: one pass, no copy): the parameters and optimizer state
    at the backward, the gradients at the step.  With update, it also
    moves the bytes an exact update norm must move, as `health` does: every
    parameter copied before the optimizer step, then every parameter and
    its copy read after it (amax again: the reads, not the arithmetic)."""
    model, loss_fn = {"mlp": mlp, "mlp44": mlp44, "transformer": transformer, "tiny": tiny}[kind]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    params = list(model.parameters())
    copies = [torch.empty_like(p) for p in params] if update else []

    def read(tensors):
        for t in tensors:
            t.amax()

    def steps(n):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            reads = floor is not None and floor()
            opt.zero_grad()
            loss = loss_fn()
            if reads:
                read(params + [v for s in opt.state.values() for v in s.values() if v.dim()])
            loss.backward()
            if reads:
                read([p.grad for p in params])
            if reads and update:
                for c, p in zip(copies, params):
                    c.copy_(p)
            opt.step()
            if reads and update:
                read(params + copies)
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


def alternate(kind, ncycles, floor, block):
    """Runs the two arms; returns the model, the arms' median step times
    (with, without), the ratio of each cycle, the pass-through's seconds
    per step and the steps the "with" arm ran, warm-up included.  floor:
    None, "read" or "health"."""
    arm = {"with": True}
    model, steps = trainer(kind, (lambda: arm["with"]) if floor else None, floor == "health")
    return (model,) + alternate_steps(steps, ncycles, block, arm, "agent_step")


def alternate_steps(steps, ncycles, block, arm, who):
    """alternate() for a trainer already made (bench/gpu_overhead.py's too):
    steps(n) runs n steps and returns their times, steps.opt is the
    optimizer, arm["with"] says which arm runs.  Exits when the agent did
    not count exactly the "with" arm's steps."""
    glue = sys.modules.get("_trainparity_glue.core")  # the agent's, when it runs
    steps(WARMUP)
    times, cycles = {True: [], False: []}, []
    for c in range(ncycles):
        got = {True: [], False: []}
        for w in (True, False, False, True):
            arm["with"] = w
            if glue is not None:
                glue.S.aside = not w
            got[w] += steps(block)[1:]
        cycles.append(statistics.median(got[True]) / statistics.median(got[False]))
        for w in got:
            times[w] += got[w]
    observed = WARMUP + 2 * block * ncycles
    through = 0.0
    if glue is not None:
        through = pass_through(steps.opt)
        glue.S.aside = False
        if glue.S.step != observed:
            sys.exit("%s: the agent counted %d steps, the \"with\" arm ran %d"
                     % (who, glue.S.step, observed))
    return (statistics.median(times[True]), statistics.median(times[False]), cycles, through,
            observed)


def main(kind, ncycles, block, floor):
    out = {"model": kind}
    (model, out["with_s"], out["without_s"], out["cycles"], out["through_s"],
     out["with_steps"]) = alternate(kind, ncycles, floor, block)
    out["ratio"] = statistics.median(out["cycles"])
    out["params"] = sum(p.numel() for p in model.parameters())
    print(json.dumps(out))


if __name__ == "__main__":
    FLOORS = {"--floor": "read", "--floor-health": "health"}
    args = [a for a in sys.argv[1:] if a not in FLOORS]
    if len(args) != 3 or len(sys.argv) - 1 - len(args) > 1:
        sys.exit("usage: agent_step.py MODEL CYCLES BLOCK [--floor | --floor-health]")
    main(args[0], int(args[1]), int(args[2]),
         next((FLOORS[a] for a in sys.argv[1:] if a in FLOORS), None))
