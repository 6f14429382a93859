# SPDX-License-Identifier: MIT
# train.py -- the multi-host job: data-parallel ranks under torchrun (gloo,
# CPU), the same initial weights everywhere (DDP broadcasts rank 0's), each
# rank its own batches, Adam, 8 steps.  Two faults, each on host1's first
# local rank only, so that it is host1's ranks the tool must name:
#   --drift     from step 2 it adds noise to its gradients after DDP's
#               all-reduce: its replica drifts apart (health: FAIL at the
#               gradient of step 2);
#   --cut K     after step K it takes host1's daemon link down (d1): the
#               training goes on over the training link, the agents on
#               host1 can no longer reach the daemon.
import argparse
import os
import subprocess

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ap = argparse.ArgumentParser()
ap.add_argument("--drift", action="store_true")
ap.add_argument("--cut", type=int, default=-1)
args = ap.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
here = os.uname().nodename == "host1" and int(os.environ["LOCAL_RANK"]) == 0
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
torch.manual_seed(100 + rank)
if args.drift and here:
    print("drift on rank %d" % rank, flush=True)
for step in range(8):
    x = torch.randn(8, 8)
    y = x.sum(dim=1, keepdim=True).sin()
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    if args.drift and here and step >= 2:
        g = torch.Generator().manual_seed(step)
        for p in model.parameters():
            p.grad.add_(1e-3 * torch.randn(p.grad.shape, generator=g))
    opt.step()
    if step == args.cut and here:
        subprocess.run(["ip", "link", "set", "d1", "down"], check=True)
    dist.barrier()
dist.destroy_process_group()
