# SPDX-License-Identifier: MIT
# tpdb.py -- for the Python e2e tests: run trainparity-run in a scratch
# directory and read what the daemon stored (SQLite, MessagePack bodies).
# Standard library only.
import atexit
import os
import shutil
import sqlite3
import struct
import subprocess
import tempfile


def _unpack(b, i):
    c = b[i]
    if c <= 0x7F:
        return c, i + 1
    if c >= 0xE0:
        return c - 256, i + 1
    if 0x80 <= c <= 0x8F:
        return _map(b, i + 1, c & 0x0F)
    if 0x90 <= c <= 0x9F:
        return _arr(b, i + 1, c & 0x0F)
    if 0xA0 <= c <= 0xBF:
        n = c & 0x1F
        return b[i + 1 : i + 1 + n].decode(), i + 1 + n
    if c == 0xC0:
        return None, i + 1
    if c in (0xC2, 0xC3):
        return c == 0xC3, i + 1
    if c in (0xC4, 0xC5, 0xC6, 0xD9, 0xDA, 0xDB):
        w = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}[c]
        n = int.from_bytes(b[i + 1 : i + 1 + w], "big")
        raw = b[i + 1 + w : i + 1 + w + n]
        return (raw.decode() if c >= 0xD9 else raw), i + 1 + w + n
    if c == 0xCA:
        return struct.unpack(">f", b[i + 1 : i + 5])[0], i + 5
    if c == 0xCB:
        return struct.unpack(">d", b[i + 1 : i + 9])[0], i + 9
    if 0xCC <= c <= 0xD3:
        w = 1 << ((c - 0xCC) % 4)
        return int.from_bytes(b[i + 1 : i + 1 + w], "big", signed=c >= 0xD0), i + 1 + w
    if c in (0xDC, 0xDD):
        w = 2 if c == 0xDC else 4
        return _arr(b, i + 1 + w, int.from_bytes(b[i + 1 : i + 1 + w], "big"))
    if c in (0xDE, 0xDF):
        w = 2 if c == 0xDE else 4
        return _map(b, i + 1 + w, int.from_bytes(b[i + 1 : i + 1 + w], "big"))
    raise ValueError("unexpected MessagePack byte 0x%02x" % c)


def _arr(b, i, n):
    out = []
    for _ in range(n):
        v, i = _unpack(b, i)
        out.append(v)
    return out, i


def _map(b, i, n):
    out = {}
    for _ in range(n):
        k, i = _unpack(b, i)
        out[k], i = _unpack(b, i)
    return out, i


def unpack(b):
    return _unpack(b, 0)[0]


def _count(b, i):
    """The element count of the map or array header at b[i], and where it
    ends."""
    c = b[i]
    if 0x80 <= c <= 0x9F:
        return c & 0x0F, i + 1
    w = 2 if c in (0xDC, 0xDE) else 4
    return int.from_bytes(b[i + 1 : i + 1 + w], "big"), i + 1 + w


def expand(b, defs):
    """The body the agent sent, from a body the store packed
    (daemon/store/pack.h: 0xc1, then the map with each leaf list as 0xc1,
    its array header, and per leaf a key, id * 4 + flags, and its values;
    flag 1: a tensor's values without their type bytes, flag 2: maxabs as a
    float32).  defs: the leafdefs rows, {id: (nvar, head, tail)}.  A body
    that is not packed comes back as it is."""
    if not b or b[0] != 0xC1:
        return b
    out = bytearray()
    npairs, i = _count(b, 1)
    out += b[1:i]
    for _ in range(npairs):
        _, j = _unpack(b, i)  # the key
        out += b[i:j]
        i = j
        if b[i] != 0xC1:
            _, j = _unpack(b, i)
            out += b[i:j]
            i = j
            continue
        nleaves, j = _count(b, i + 1)
        out += b[i + 1 : j]
        i = j
        for _ in range(nleaves):
            key, i = _unpack(b, i)
            nvar, head, tail = defs[key >> 2]
            out += head
            if key & 1:
                m = 4 if key & 2 else 8
                v = b[i : i + 32 + m + 1]
                i += 32 + m + 1
                mx = struct.pack(">d", struct.unpack(">f", v[32:36])[0]) if m == 4 else v[32:40]
                out += (b"\xc4\x10" + v[:16] + b"\xcb" + v[16:24] + b"\xcb" + v[24:32] + b"\xcb"
                        + mx + v[-1:])
            else:
                j = i
                for _ in range(nvar):
                    _, j = _unpack(b, j)
                out += b[i:j]
                i = j
            out += tail
    return bytes(out)


class Workdir:
    """A scratch working directory with the build's tools in reach, removed
    when the test's process exits (as tests/e2e/lib.sh removes its own)."""

    def __init__(self):
        self.bin = os.environ["TP_BIN"]
        self.dir = tempfile.mkdtemp(prefix="tp-e2e-agent.")
        atexit.register(shutil.rmtree, self.dir, ignore_errors=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINPARITY_")}

    def run(self, *args, env=None, timeout=300):
        e = dict(self.env, **(env or {}))
        return subprocess.run([os.path.join(self.bin, "trainparity-run"), *args], cwd=self.dir,
                              env=e, capture_output=True, text=True, timeout=timeout)

    def db(self):
        return sqlite3.connect(os.path.join(self.dir, ".trainparity", "runs.db"))

    def processes(self, run=None):
        q = ("SELECT p.exec_id, p.pid, p.role, p.bye_reason, p.bye_exc, p.sent, p.nevents, "
             "p.dropped, p.errors, p.ppid FROM processes p JOIN executions e ON e.id = p.exec_id")
        if run is not None:
            q += " WHERE e.run_id = %d" % run
        cols = ("exec", "pid", "role", "bye", "exc", "sent", "nevents", "dropped", "errors", "ppid")
        return [dict(zip(cols, r)) for r in self.db().execute(q).fetchall()]

    def events(self, pid, kind=None):
        q = "SELECT seq, step, kind, body FROM events WHERE pid = ?"
        args = [pid]
        if kind:
            q += " AND kind = ?"
            args.append(kind)
        db = self.db()
        rows = db.execute(q + " ORDER BY seq", args).fetchall()
        defs = {i: (n, h, t) for i, n, h, t in db.execute("SELECT id, nvar, head, tail FROM leafdefs")}
        return [{"seq": s, "step": st, "kind": k, "body": unpack(expand(b, defs))}
                for s, st, k, b in rows]

    def execution(self, exec_id):
        return self.db().execute(
            "SELECT exit_status, exit_signal FROM executions WHERE id = ?", (exec_id,)).fetchone()
