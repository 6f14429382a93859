# SPDX-License-Identifier: MIT
# ddp_reduction_order.py -- evidence, without TrainParity (no agent, no
# daemon): does a DDP resume on more than two ranks reduce its gradients in
# another order than the uninterrupted run at the same step?
#
#   python tests/e2e/ddp_reduction_order.py [--nproc 4] [--hook] [--out DIR]
#
# launches the loop of fixtures/resume/_ddp.py (gloo, CPU) under torchrun
# twice: "full" trains 8 steps uninterrupted and saves a checkpoint after
# step 4; "resume" is a fresh torchrun that loads it and trains steps 4 to
# 7.  Every rank records at every step its loss, its parameters before the
# step, its LOCAL gradients (each parameter's, before DDP reduces them) and
# its REDUCED gradients (p.grad after backward), and the layout of DDP's
# buckets: with --hook, a comm hook records bucket.index(), the parameters
# of bucket.parameters() in buffer order and the flat buffer before it
# all-reduces it as DDP's default does (divide, then sum); without, the
# local gradients come from tensor hooks on the parameters and the layout
# from the reducer's logging data.  With --warm, the control: R runs one
# throwaway forward and backward before its load, so that DDP has rebuilt
# its buckets by its first step as A's had by step 4.  It then compares the resumed steps with
# the full run's, bit for bit, and prints what differs.
import argparse
import os
import subprocess
import sys
import tempfile

import torch


def worker(mode, out, use_hook, warm):
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    torch.manual_seed(100 + rank)
    names = {id(p): n for n, p in model.module.named_parameters()}
    rec = {}  # step -> what this rank saw
    cur = {}

    def hook(state, bucket):
        params = [names[id(p)] for p in bucket.parameters()]
        cur.setdefault("buckets", []).append((bucket.index(), params))
        for n, g in zip(params, bucket.gradients()):
            cur.setdefault("local", {})[n] = g.detach().clone()
        buf = bucket.buffer()
        buf.div_(world)
        fut = dist.all_reduce(buf, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    if use_hook:
        model.register_comm_hook(None, hook)
    else:
        for n, p in model.module.named_parameters():
            p.register_hook(lambda g, n=n: cur.setdefault("local", {}).__setitem__(n, g.clone()))

    ckpt = os.path.join(out, "ckpt.pt")
    step = 0
    if mode == "resume" and warm:
        # the control: one throwaway iteration (no optimizer step, no random
        # draw) lets DDP rebuild its buckets before the load, as A's had
        model(torch.zeros(8, 8)).sum().backward()
        model.zero_grad(set_to_none=True)
    if mode == "resume":
        ck = torch.load(ckpt, weights_only=False)
        model.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
        step = ck["step"]
        torch.set_rng_state(ck["rng"][rank])
    while step < 8:
        cur = {"params": {n: p.detach().clone() for n, p in model.module.named_parameters()}}
        x = torch.randn(8, 8)
        y = x.sum(dim=1, keepdim=True).sin()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        cur["loss"] = loss.detach().clone()
        cur["reduced"] = {n: p.grad.detach().clone() for n, p in model.module.named_parameters()}
        if not use_hook:
            d = model._get_ddp_logging_data()
            cur["buckets"] = [(-1, d.get("rebuilt_per_bucket_param_indices", "initial layout"))]
        rec[step] = cur
        opt.step()
        sched.step()
        step += 1
        if step == 4 and mode == "full":
            rngs = [None] * world
            dist.all_gather_object(rngs, torch.get_rng_state())
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                            "sched": sched.state_dict(), "step": step, "rng": rngs}, ckpt)
            dist.barrier()
    torch.save(rec, os.path.join(out, "%s.%d.pt" % (mode, rank)))
    dist.destroy_process_group()


def ulps(a, b):
    """The largest distance in float32 units in the last place."""
    ia = a.contiguous().view(torch.int32).to(torch.int64)
    ib = b.contiguous().view(torch.int32).to(torch.int64)
    ia = torch.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = torch.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return int((ia - ib).abs().max())


def compare(out, nproc):
    same = lambda a, b: a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    for step in range(4, 8):
        print("step %d (R's step %d)" % (step, step - 4))
        for rank in range(nproc):
            a = torch.load(os.path.join(out, "full.%d.pt" % rank))[step]
            r = torch.load(os.path.join(out, "resume.%d.pt" % rank))[step]
            line = ["  rank %d:" % rank]
            line.append("loss %s" % ("identical" if same(a["loss"], r["loss"]) else "DIFFERS"))
            for k in ("params", "local", "reduced"):
                diff = [n for n in a[k] if not same(a[k][n], r[k][n])]
                if not diff:
                    line.append("%s identical" % k)
                else:
                    line.append("%s DIFFER at %s" % (k, ", ".join(
                        "%s (sum %.9g vs %.9g, %d ulp)" % (n, a[k][n].sum().item(),
                                                          r[k][n].sum().item(),
                                                          ulps(a[k][n], r[k][n]))
                        for n in diff)))
            print(" ".join(line))
            if rank == 0:
                print("    buckets A: %s" % a["buckets"])
                print("    buckets R: %s" % r["buckets"])
        # DDP makes every rank's reduced gradients equal within one run
        for tag in ("full", "resume"):
            recs = [torch.load(os.path.join(out, "%s.%d.pt" % (tag, k)))[step]
                    for k in range(nproc)]
            eq = all(same(recs[0]["reduced"][n], x["reduced"][n])
                     for x in recs[1:] for n in recs[0]["reduced"])
            print("  %s: reduced gradients equal on every rank: %s" % (tag, eq))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--hook", action="store_true")
    p.add_argument("--warm", action="store_true",
                   help="the control: the resumed run lets DDP rebuild its buckets before loading")
    p.add_argument("--out")
    p.add_argument("--worker")
    a = p.parse_args()
    if a.worker:
        return worker(a.worker, a.out, a.hook, a.warm)
    out = a.out or tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    for mode in ("full", "resume"):
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", str(a.nproc), __file__, "--worker", mode, "--out", out]
                       + (["--hook"] if a.hook else []) + (["--warm"] if a.warm else []), check=True, env=dict(
                           os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=""))
    print("%d ranks, gloo, torch %s, %s" % (a.nproc, torch.__version__,
                                          "comm hook" if a.hook else "DDP's default reduction",
    ) + (", R's buckets rebuilt before its load" if a.warm else ""))
    compare(out, a.nproc)


if __name__ == "__main__":
    main()
