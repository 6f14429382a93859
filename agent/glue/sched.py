# SPDX-License-Identifier: MIT
# sched.py -- LR schedulers: a `sched` event with the scheduler's state
# after each step the user makes (not the one its constructor makes), the
# metric of ReduceLROnPlateau, and load_state_dict restores.
from . import events as _ev
from .core import (
    _tp, S, _depth, _enter, _fail, _index, _indexed, _is_wrapped, _leave, _live, _off,
    _wrap_method, _wraps)
from .restore import _restore_hook


def _sched_step_wrapper(cls):
    orig = cls.__dict__.get("step")
    if orig is None or _is_wrapped(orig):
        return
    plateau = "Plateau" in cls.__name__

    def step(self, *a, **k):
        if _depth("sched") or _depth("sched_init") or _off():
            return orig(self, *a, **k)
        _enter("sched")
        try:
            r = orig(self, *a, **k)
        finally:
            _leave("sched")
        try:
            scheds = S.schedulers
            idx = _index(scheds, self)
            metric = None
            if plateau:
                m = a[0] if a else k.get("metrics")
                metric = float(m) if m is not None else None
            _tp.emit(
                "sched",
                _ev.sched(idx, type(self).__name__, metric=metric),
                "leaves",
                [(_indexed("scheduler", idx, len(_live(scheds))), self.state_dict())],
            )
        except Exception:
            _fail("scheduler.step")
        return r

    cls.step = _wraps(orig, step)


def _patch_sched(torch):
    S_ = torch.optim.lr_scheduler
    bases = []
    for name in ("LRScheduler", "_LRScheduler", "ReduceLROnPlateau"):
        b = getattr(S_, name, None)
        if b is not None and b not in bases:
            bases.append(b)
    for B in bases:
        oinit = B.__dict__.get("__init__")
        if oinit is None or _is_wrapped(oinit):
            continue

        def make(oinit):
            def __init__(self, *a, **k):
                _enter("sched_init")
                try:
                    oinit(self, *a, **k)
                finally:
                    _leave("sched_init")
                if _off() or _depth("sched_init"):
                    return
                try:
                    _index(S.schedulers, self)
                    for c in type(self).__mro__:
                        if "step" in c.__dict__:
                            _sched_step_wrapper(c)
                            break
                except Exception:
                    _fail("scheduler.__init__")

            return _wraps(oinit, __init__)

        B.__init__ = make(oinit)
        _wrap_method(B, "load_state_dict", _restore_hook("scheduler", S.schedulers))

