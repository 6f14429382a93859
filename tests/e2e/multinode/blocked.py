# SPDX-License-Identifier: MIT
# blocked.py -- resume's I ended on both hosts with a rank blocked where no
# peer's death reaches it.  Four ranks (gloo, CPU, no DDP): rank 0 trains
# and saves a checkpoint at every step (and resumes from it); host1's first
# local rank trains K steps and then blocks in read(2) on a FIFO, through
# ctypes.PyDLL so that it holds the GIL, until rank 0 writes a byte there
# when its training is over; the other ranks train K steps and end.  In I
# the agent ends rank 0 after its save at step K, and only the daemon's word
# can end the blocked rank.
import ctypes
import errno
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS, K = 5, 2
CKPT, FIFO = "ckpt.pt", "release.fifo"

dist.init_process_group("gloo")
rank = dist.get_rank()
blocked = os.uname().nodename == "host1" and int(os.environ["LOCAL_RANK"]) == 0
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
if blocked and not os.path.exists(FIFO):
    os.mkfifo(FIFO)
if rank == 0 and os.path.exists(CKPT):
    ck = torch.load(CKPT)
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    torch.set_rng_state(ck["rng"])
    step = ck["step"]
while step < (STEPS if rank == 0 else K):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(8, 4, generator=g)
    loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if rank == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                    "rng": torch.get_rng_state(), "step": step}, CKPT)
if rank == 0:
    # release the blocked rank: its read is open once the FIFO has a reader
    for _ in range(1200):
        try:
            fd = os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENXIO):
                raise
            time.sleep(0.05)
    else:
        raise SystemExit("the blocked rank never opened " + FIFO)
    os.write(fd, b"x")
    os.close(fd)
elif blocked:
    print("blocked rank %d" % rank, flush=True)
    fd = os.open(FIFO, os.O_RDWR)  # never at end of file: blocks until a byte comes
    libc = ctypes.PyDLL(None)  # a PyDLL call keeps the GIL
    libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(1)
    libc.read(fd, buf, 1)
    os.close(fd)
dist.destroy_process_group()
