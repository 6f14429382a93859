#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_interrupt_ranks.sh -- the end of resume's execution I reaches every
# rank, whatever it is blocked in.  Two ranks under torchrun (gloo, CPU, no
# DDP): rank 0 trains and saves a checkpoint at every step; rank 1 trains K
# steps and then blocks in read(2) on a FIFO, called through ctypes.PyDLL so
# that it holds the GIL, until rank 0 writes a byte there when its training
# is over.  No peer's death interrupts that read: in I, where the agent ends
# rank 0 after its save at step K, only the daemon's word (`seen`'s end)
# ends rank 1.  Both must say bye "interrupt", I must exit 0 (torchrun's
# status once both ranks did), and the whole resume must end well within
# the bound: a bound for liveness only, as rank 1 would otherwise wait for
# good.
TP_NAME=resume_interrupt_ranks
. "$(dirname "$0")/lib.sh"
py=${TP_PYTHON:?}
tp_setup daemon agent

cat >"$WORK/ranks.py" <<'PY'
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
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
if rank == 1 and not os.path.exists(FIFO):
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
    # release rank 1: its read is open once the FIFO has a reader
    for _ in range(1200):
        try:
            fd = os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENXIO):
                raise
            time.sleep(0.05)
    else:
        raise SystemExit("rank 1 never opened " + FIFO)
    os.write(fd, b"x")
    os.close(fd)
else:
    fd = os.open(FIFO, os.O_RDWR)  # never at end of file: blocks until a byte comes
    libc = ctypes.PyDLL(None)  # a PyDLL call keeps the GIL
    libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(1)
    libc.read(fd, buf, 1)
    os.close(fd)
dist.destroy_process_group()
PY

# 240 s: a liveness bound; the resume takes 15 to 60 s, and rank 1 of I
# would wait in its read for ever
timeout -k 10 240 "$TP_RUN" resume --at 2 --json report.json -- \
    "$py" -m torch.distributed.run --standalone --nproc_per_node 2 "$WORK/ranks.py" \
    >"$WORK/out" 2>"$WORK/err"
st=$?
[ "$st" != 124 ] && [ "$st" != 137 ] ||
    fail "the resume did not end within 240 s (I's rank 1 left blocked?); stderr: $(tail -20 "$WORK/err")"
[ "$st" = 0 ] || fail "resume exited $st, want 0 (PASS); out: $(cat "$WORK/out"); stderr: $(tail -30 "$WORK/err")"
"$py" - "$WORK/.trainparity/runs.db" <<'PY' || fail "what the daemon stored of I: see above"
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
(iexec, status, sig, took), = db.execute(
    "SELECT id, exit_status, exit_signal, (finished_ns - created_ns) / 1e9"
    " FROM executions WHERE role = 'I'").fetchall()
assert status == 0 and sig is None, ("I's exit", status, sig)
assert took < 90, ("I took %.1f s to end, want under 90" % took)
ranks = {r: (reason, code, spooled) for r, reason, code, spooled in db.execute(
    "SELECT rank, bye_reason, bye_code, spooled FROM processes"
    " WHERE exec_id = ? AND rank >= 0", (iexec,))}
assert sorted(ranks) == [0, 1], ranks
for r, (reason, code, spooled) in ranks.items():
    assert reason == "interrupt" and code == 0, ("rank", r, reason, code)
# A, B and R are never ended so: every process of theirs exited on its own
others = db.execute("SELECT e.role, p.rank, p.bye_reason FROM processes p"
                    " JOIN executions e ON e.id = p.exec_id"
                    " WHERE e.role != 'I' AND p.bye_reason IS NOT 'exit'").fetchall()
assert not others, others
PY
exit 0
