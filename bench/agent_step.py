# SPDX-License-Identifier: MIT
# agent_step.py -- the training loop the agent-overhead bench times: a ~10M
# parameter MLP or a small transformer on CPU, Adam, a full snapshot every
# step.  Prints the median step time in seconds as JSON on the last line.
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


def main(kind, steps):
    model, loss_fn = {"mlp": mlp, "transformer": transformer}[kind]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    nparams = sum(p.numel() for p in model.parameters())
    print(json.dumps({"model": kind, "params": nparams, "median_s": statistics.median(times[2:])}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
