# SPDX-License-Identifier: MIT
# amp.py -- GradScaler (torch.amp and torch.cuda.amp): scale, unscale_,
# update and step as `amp` events; a step the scaler skipped (inf or NaN
# gradients) is a skipped optimizer step; load_state_dict restores.
import weakref

from .core import (
    _tp, S, _arg0, _depth, _enter, _fail, _index, _indexed, _interrupt, _is_wrapped, _leave,
    _live, _off, _wrap_method, _wraps)
from . import events as _ev
from .restore import _emit_restore
from .optim import _step_post


def _scale_of(s):
    try:
        return float(s.get_scale())
    except Exception:
        return None


def _remember_scaled(r, torch):
    """Keeps a weak reference to what GradScaler.scale returned, so that a
    backward call can say whether its tensor was scaled."""
    if S.scaled is None:
        S.scaled = {}
    if len(S.scaled) > 64:
        S.scaled = {k: w for k, w in S.scaled.items() if w() is not None}
    if isinstance(r, torch.Tensor):
        S.scaled[id(r)] = weakref.ref(r)


def _patch_scaler(torch):
    classes = []
    for path in (("amp", "GradScaler"), ("cuda", "amp", "GradScaler")):
        o = torch
        for p in path:
            o = getattr(o, p, None)
            if o is None:
                break
        if isinstance(o, type):
            for c in o.__mro__:
                if c is not object and c not in classes:
                    classes.append(c)

    def after_init(self, r, a, k):
        _index(S.scalers, self)

    def after_scale(self, r, a, k):
        if self.is_enabled():
            _remember_scaled(r, torch)
            _tp.emit("amp", _ev.amp("scale", scale=_scale_of(self)))

    def after_unscale(self, r, a, k):
        if not self.is_enabled():
            return
        opt = a[0] if a else k.get("optimizer")
        found = None
        st = getattr(self, "_per_optimizer_states", {}).get(id(opt))
        if st and st.get("found_inf_per_device"):
            found = any(float(v) != 0.0 for v in st["found_inf_per_device"].values())
        _tp.emit("amp", _ev.amp("unscale", found_inf=found, opt=_index(S.optimizers, opt)))

    def after_update(self, r, a, k):
        if self.is_enabled():
            _tp.emit("amp", _ev.amp("update", scale=_scale_of(self)))

    for c in classes:
        if "__init__" in c.__dict__:
            _wrap_method(c, "__init__", after_init, "scaler_init")
        _wrap_method(c, "scale", after_scale)
        _wrap_method(c, "unscale_", after_unscale)
        _wrap_method(c, "update", after_update)
        _wrap_method(c, "load_state_dict", lambda self, r, a, k: _emit_restore("scaler", _indexed("scaler", _index(S.scalers, self), len(_live(S.scalers))), "load_state_dict", arg=_arg0(a, k, "state_dict")))
        ostep = c.__dict__.get("step")
        if ostep is None or _is_wrapped(ostep):
            continue

        def make(ostep):
            def step(self, optimizer, *a, **k):
                if _depth("scaler_step") or _off():
                    return ostep(self, optimizer, *a, **k)
                _enter("scaler_step")
                try:
                    if S.armed:
                        _interrupt()
                    before = S.step
                    r = ostep(self, optimizer, *a, **k)
                finally:
                    _leave("scaler_step")
                try:
                    skipped = S.step == before
                    if self.is_enabled():
                        _tp.emit("amp", _ev.amp("step", found_inf=skipped, opt=_index(S.optimizers, optimizer)))
                    if skipped:
                        body = _ev.step("pre", _index(S.optimizers, optimizer),
                                        type(optimizer).__name__,
                                        lrs=[float(g["lr"]) for g in optimizer.param_groups],
                                        skipped=True, via="scaler")
                        _tp.emit("step", body, "grads", [])
                        _step_post(optimizer, None, skipped=True)
                except Exception:
                    _fail("GradScaler.step")
                return r

            return _wraps(ostep, step)

        c.step = make(ostep)

