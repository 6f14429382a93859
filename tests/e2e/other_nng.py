# SPDX-License-Identifier: MIT
"""other_nng.py -- a training process that loads another build of a library
the agent holds a copy of: Debian's shared nng (ctypes), used between the
steps for a request/reply over inproc, and Python's sqlite3 (Debian's
SQLite).  It prints what each returned, the losses and a digest of the
final weights: tests/e2e/wheel.sh runs it with and without the agent and
wants the same lines."""
import ctypes
import hashlib
import sqlite3

import torch


class Socket(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32)]


def nng_round_trip(nng, url, text):
    """a request and its reply between two sockets of Debian's nng"""
    rep, req = Socket(), Socket()
    assert nng.nng_rep0_open(ctypes.byref(rep)) == 0
    assert nng.nng_req0_open(ctypes.byref(req)) == 0
    assert nng.nng_listen(rep, url, None, 0) == 0
    assert nng.nng_dial(req, url, None, 0) == 0
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    assert nng.nng_send(req, text, len(text), 0) == 0
    assert nng.nng_recv(rep, ctypes.byref(buf), ctypes.byref(size), 1) == 0  # NNG_FLAG_ALLOC
    got = ctypes.string_at(buf, size.value)
    nng.nng_free(buf, size)
    assert nng.nng_send(rep, got.upper(), len(got), 0) == 0
    assert nng.nng_recv(req, ctypes.byref(buf), ctypes.byref(size), 1) == 0
    back = ctypes.string_at(buf, size.value)
    nng.nng_free(buf, size)
    nng.nng_close(req)
    nng.nng_close(rep)
    return back.decode()


def main():
    nng = ctypes.CDLL("libnng.so.1")
    nng.nng_version.restype = ctypes.c_char_p
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t(step INTEGER, loss TEXT)")
    print("nng", nng.nng_version().decode(), "sqlite", sqlite3.sqlite_version)

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randn(16, 2)
    for step in range(4):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        db.execute("INSERT INTO t VALUES(?, ?)", (step, loss.item().hex()))
        print("step", step, loss.item().hex(),
              nng_round_trip(nng, b"inproc://other-nng-%d" % step, b"ping %d" % step))
    rows = db.execute("SELECT count(*), group_concat(loss) FROM t").fetchone()
    h = hashlib.sha256(" ".join(v.hex() for p in model.parameters()
                                for v in p.detach().flatten().tolist()).encode())
    print("sqlite rows", rows[0], hashlib.sha256(rows[1].encode()).hexdigest()[:16])
    print("weights", h.hexdigest()[:16])


if __name__ == "__main__":
    main()
