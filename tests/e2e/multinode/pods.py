# SPDX-License-Identifier: MIT
# pods.py -- the job of a PyTorchJob's pods: one rank per host under
# torchrun (gloo, CPU), DDP, AdamW and a StepLR; each rank keeps its own
# checkpoint on its own host's disk (ckpt/rank<R>.pt: model, optimizer,
# scheduler, step, its RNG) and resumes from it when it is there, as a job
# that restarts its pods does.  Fault: --no-sched does not restore the
# scheduler (resume: FAIL at scheduler.last_epoch).
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ap = argparse.ArgumentParser()
ap.add_argument("--no-sched", action="store_true")
args = ap.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
torch.manual_seed(100 + rank)
path = os.path.join("ckpt", "rank%d.pt" % rank)
step = 0
if os.path.exists(path):
    ck = torch.load(path, weights_only=False)
    model.module.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    if not args.no_sched:
        sched.load_state_dict(ck["sched"])
    step = ck["step"]
    torch.set_rng_state(ck["rng"])
while step < 8:
    x = torch.randn(8, 8)
    y = x.sum(dim=1, keepdim=True).sin()
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sched.step()
    step += 1
    if step == 4:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                    "sched": sched.state_dict(), "step": step, "rng": torch.get_rng_state()},
                   path)
        dist.barrier()
dist.barrier()  # neither rank tears gloo down while the other still talks to it
dist.destroy_process_group()
