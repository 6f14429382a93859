# SPDX-License-Identifier: MIT
# core.py -- what every hook family shares: the C bridge (`_tp`), the
# process's training state (S), the thread-local re-entry guard, the
# wrapping machinery and the failure sink.
#
# A wrapper returns what the wrapped function returned and raises what it
# raised; its own failures go to _tp.error (_fail) and never reach user
# code.  A category of the re-entry guard ("opt", "save", "rng", ...) is
# entered while a wrapped call runs, so a call reached from inside another
# of the same category (an override calling super(), torch.save inside
# torch.save) is observed once, by the outermost.  _off() is true in a
# forked child (_forked(): the agent observes only the process it booted
# in) and while S.aside is set: the agent standing aside, every wrapper
# passing straight through, which bench/agent_step.py sets to time the same
# steps with and without the agent in one process.
import functools
import os
import sys
import threading
import traceback
import weakref

import _trainparity_agent as _tp  # the C bridge (agent/bridge.c)


_tls = threading.local()


class _State:
    pid = os.getpid()
    aside = False  # observe nothing for now (bench/agent_step.py); never set by the agent
    torch = None
    get_rng_state = None  # torch.get_rng_state as torch defined it
    hello = False
    step = 0  # completed optimizer steps (attempted updates) in this process
    snap_step = -1  # step of the last start-of-step snapshot
    save_snap_step = -1  # step of the last save snapshot
    bwd = 0  # backward calls since the last optimizer step
    boundary = True  # a save, load or restore since the last start-of-step snapshot (state._full_now)
    armed = False  # resume: interrupt at the next training-step boundary
    last_load = None  # seq of the latest load event
    seeded = {"python": False, "numpy": False}
    modules = []  # weakrefs, creation order
    optimizers = []
    schedulers = []
    scalers = []
    loaders = []
    epochs = {}
    scaled = None  # id: weakref of each tensor GradScaler.scale returned, once one did
    covered = {}  # optimizer index: (groups, tensors) when its last cover event went out
    extra_names = {}  # id: (weakref, name) of each untrained root module named (state._extra_names)


S = _State


class Digest:
    """Marks a value to be sent as one digest leaf (RNG states: the digest of
    their content alone, whatever container a checkpoint keeps them in;
    agent/rngstate.c, tpa_rng_digest)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _forked():
    return os.getpid() != S.pid


def _off():  # every wrapper asks this at every call: one getpid, no frame more
    return S.aside or os.getpid() != S.pid


def _fail(where):
    try:
        _tp.error(where, traceback.format_exc(limit=4))
    except Exception:
        pass


def _depth(cat):
    return getattr(_tls, cat, 0)


def _enter(cat):
    setattr(_tls, cat, getattr(_tls, cat, 0) + 1)


def _leave(cat):
    setattr(_tls, cat, getattr(_tls, cat, 1) - 1)


def _wraps(orig, fn):
    functools.update_wrapper(fn, orig)
    fn._tp_wrapped = True
    return fn


def _is_wrapped(f):
    return getattr(f, "_tp_wrapped", False)


def _live(refs):
    out = []
    for r in refs:
        o = r()
        if o is not None:
            out.append(o)
    return out


def _index(refs, obj):
    for i, r in enumerate(refs):
        if r() is obj:
            return i
    refs.append(weakref.ref(obj))
    return len(refs) - 1


def _indexed(base, i, n):
    return base if n <= 1 else "%s[%d]" % (base, i)


def _arg0(a, k, key):
    """A call's first argument, given by position or as keyword `key`."""
    return a[0] if a else k.get(key)


def _advance():
    S.step += 1
    S.bwd = 0
    _tp.set_step(S.step)
    _tp.flush()


def _interrupt():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    _tp.interrupt()


_PACKAGE = __package__ or __name__.rpartition(".")[0]


def _in_glue(frame):
    """Whether frame runs code of the glue (any of its modules)."""
    name = frame.f_globals.get("__name__") or ""
    return name == _PACKAGE or name.startswith(_PACKAGE + ".")


def _caller():
    """Who made the call being observed: the first frame outside the glue,
    as module.function (e.g. accelerate.optimizer.AcceleratedOptimizer.__init__),
    so that a restore that did not come from a checkpoint is named for what
    it is."""
    f = sys._getframe(1)
    while f is not None and _in_glue(f):
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    name = getattr(code, "co_qualname", None) or code.co_name
    return "%s.%s" % (f.f_globals.get("__name__", "?"), name)


def _wrap_method(cls, name, after, cat=None):
    """Wraps cls.name so that after(self, result, args, kwargs) runs after it."""
    orig = cls.__dict__.get(name)
    if orig is None or _is_wrapped(orig):
        return
    cat = cat or "m." + name

    def method(self, *a, **k):
        if _depth(cat) or _off():
            return orig(self, *a, **k)
        _enter(cat)
        try:
            r = orig(self, *a, **k)
        finally:
            _leave(cat)
        try:
            after(self, r, a, k)
        except Exception:
            _fail(cls.__name__ + "." + name)
        return r

    setattr(cls, name, _wraps(orig, method))


def _wrap_function(mod, name, after, cat):
    """Wraps the module attribute mod.name: after(result, args, kwargs)."""
    orig = getattr(mod, name, None)
    if orig is None or _is_wrapped(orig):
        return orig

    def fn(*a, **k):
        if _depth(cat) or _off():
            return orig(*a, **k)
        _enter(cat)
        try:
            r = orig(*a, **k)
        finally:
            _leave(cat)
        try:
            after(r, a, k)
        except Exception:
            _fail(getattr(mod, "__name__", "?") + "." + name)
        return r

    w = _wraps(orig, fn)
    setattr(mod, name, w)
    return w

