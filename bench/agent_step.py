# SPDX-License-Identifier: MIT
# agent_step.py -- the training loop the agent-overhead bench times: a ~10M
# parameter MLP or a small transformer on CPU, Adam, a full snapshot every
# step.
#
#   agent_step.py MODEL [STEPS] [--floor]
#
# prints the median step time in seconds, leaving out the first two steps,
# as JSON on its last line.  --floor: see trainer().
import json
import statistics
import sys
import time

import torch
import torch.nn as nn


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
    With floor, each step also reads what the agent hashes, where it hashes
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
            opt.zero_grad()
            loss = loss_fn()
            if floor:
                read(params + [v for s in opt.state.values() for v in s.values() if v.dim()])
            loss.backward()
            if floor:
                read([p.grad for p in params])
            opt.step()
            times.append(time.perf_counter() - t0)
        return times

    return model, steps


def main(kind, n, floor):
    model, steps = trainer(kind, floor)
    times = steps(n)
    nparams = sum(p.numel() for p in model.parameters())
    print(json.dumps({"model": kind, "params": nparams, "median_s": statistics.median(times[2:])}))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--floor"]
    main(args[0], int(args[1]) if len(args) > 1 else 12, "--floor" in sys.argv[1:])
