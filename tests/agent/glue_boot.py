# SPDX-License-Identifier: MIT
# glue_boot.py -- boots agent/glue in this process as agent/boot.c does (the
# package _trainparity_glue, its modules executed in the order that
# agent/CMakeLists.txt lists, each registered in sys.modules first), with a
# fake C bridge in place of _trainparity_agent: the events the hooks emit
# are kept in a list, not encoded and sent.  torch is the real one, imported
# after the boot, as under the agent.  A test process boots once.  The
# `events` module (the body builders) is generated from proto/events.def at
# build time: TP_GLUE_EVENTS names it (tests/agent/CMakeLists.txt), and the
# fake bridge holds every body to its KEYS and REQUIRED as the daemon's
# validator would.
import hashlib
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GLUE = os.path.join(ROOT, "agent", "glue")
PACKAGE = "_trainparity_glue"

EVENTS = os.environ.get("TP_GLUE_EVENTS") or os.path.join(ROOT, "build", "agent", "glue",
                                                           "events.py")


def modules():
    """The glue's modules in boot order (agent/CMakeLists.txt, glue_modules)."""
    with open(os.path.join(ROOT, "agent", "CMakeLists.txt")) as f:
        text = f.read()
    m = re.search(r"set\(glue_modules([^)]*)\)", text)
    return m.group(1).split()


class Interrupted(BaseException):
    """What the fake interrupt() raises (the real one ends the process)."""


def _plain(v, depth=0):
    """Whether v is what bridge.c's encode_value takes in an event body."""
    if depth > 16:
        return False
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    return False


class Bridge(types.ModuleType):
    """The fake _trainparity_agent: the C functions the glue calls."""

    def __init__(self, cfg):
        super().__init__("_trainparity_agent")
        self.version = "0.0.0-glue-boot"  # the real bridge's is the project's version
        self.cfg = cfg
        self.events = []  # (kind, body, key, items, manifest)
        self.errors = []  # (where, msg)
        self.step = 0
        self.byes = []
        self.interrupts = 0

    def emit(self, kind, body, key=None, items=None, manifest=False):
        ev = sys.modules[PACKAGE + ".events"]
        if kind not in ev.KEYS or not isinstance(body, dict):
            raise TypeError("emit(kind: str, body: dict, key=None, items=None, manifest=False)")
        given = set(body) | ({key} if key is not None else set())
        if not given <= ev.KEYS[kind] or not ev.REQUIRED[kind] <= given:
            raise TypeError("a %s body the schema refuses: unknown %s, missing %s" % (
                kind, sorted(given - ev.KEYS[kind]), sorted(ev.REQUIRED[kind] - given)))
        if not _plain(body):
            raise TypeError("unsupported value in an event body: %r" % (body,))
        if key is not None and not (isinstance(items, list) and
                                    all(isinstance(i, tuple) and len(i) == 2 and
                                        isinstance(i[0], str) for i in items)):
            raise TypeError("emit: items must be a list of (prefix, object)")
        self.events.append((kind, dict(body), key, items, manifest))
        return len(self.events) - 1

    def flush(self):
        pass

    def set_step(self, n):
        self.step = int(n)

    def set_rank(self, n):
        pass

    def rec_begin(self):
        pass

    def rec_end(self):
        return None  # no records: the glue digests the file or buffer

    def _ckpt(self, data):
        return (hashlib.md5(data).digest(), data[:2] == b"PK", len(data), [])

    def ckpt_file(self, path):
        try:
            with open(path, "rb") as f:
                return self._ckpt(f.read())
        except OSError:
            return None

    def ckpt_bytes(self, b):
        return self._ckpt(bytes(b))

    def digest(self, o):
        return hashlib.md5(repr(o).encode()).digest()

    def register(self, *a):
        pass

    def bye(self, reason, code=None, exc=None):
        self.byes.append((reason, code, exc))

    def interrupt(self):
        self.interrupts += 1
        raise Interrupted()

    def error(self, where, msg):
        self.errors.append((where, msg))

    def config(self):
        return dict(self.cfg)

    def update_begin(self, params):
        pass

    def update_end(self, params):
        return 0.0, True

    def log(self, s):
        pass

    def cxx_status(self):
        return "fake"

    def hash_threads(self):
        return 0

    def wire_pid(self, pid):
        return pid  # in the tool's own pid space: untagged

    # ---- for the tests ----

    def clear(self):
        del self.events[:]
        del self.errors[:]

    def of(self, kind):
        """The bodies of the events of `kind`, in order."""
        return [e[1] for e in self.events if e[0] == kind]

    def kinds(self):
        return [e[0] for e in self.events]


CONFIG = {"run": 1, "exec": 1, "role": "", "interrupt_at": None, "capture": "digests",
          "update_norm": False, "debug": False, "sample_id": None, "loss_counts": False,
          "disable_dropout": False, "update_every": 1, "induction": False, "full_from": None,
          "full_to": None, "full_every": 100}


def boot(**cfg):
    """Boots the glue with the fake bridge and configuration cfg (over
    CONFIG); returns (the package, the bridge).  Exits 77 (skip) when this
    interpreter has no torch."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        print("no torch here")
        sys.exit(77)
    assert "torch" not in sys.modules, "boot the glue before torch is imported"
    bridge = Bridge(dict(CONFIG, **cfg))
    sys.modules["_trainparity_agent"] = bridge
    pkg = types.ModuleType(PACKAGE)
    pkg.__path__ = []
    for name in modules():
        if name == "__init__":
            mod = pkg
            sys.modules[PACKAGE] = pkg
        else:
            mod = types.ModuleType(PACKAGE + "." + name)
            sys.modules[mod.__name__] = mod
            setattr(pkg, name, mod)
        mod.__package__ = PACKAGE
        path = EVENTS if name == "events" else os.path.join(GLUE, name + ".py")
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), mod.__dict__)
    return pkg, bridge


def run(module_globals):
    """Runs the unittest cases of a test module; exits with its status."""
    import unittest

    prog = unittest.main(module=module_globals["__name__"], exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
