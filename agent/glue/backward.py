# SPDX-License-Identifier: MIT
# backward.py -- backward calls (Tensor.backward, torch.autograd.backward):
# the start-of-step snapshot before a step's first backward, then a
# `backward` event with the loss; and, for the accumulation check, the
# number of elements a mean-reduced loss averaged over.
from .core import (
    _tp, S, _depth, _enter, _fail, _interrupt, _is_wrapped, _leave, _off, _wrap_function,
    _wraps)
from . import events as _ev
from .config import _cfg
from .state import _full_now, _snapshot


def _before_backward(loss):
    try:
        S.bwd += 1
        first = S.snap_step != S.step
        if first:
            S.snap_step = S.step
            full = _full_now()
            S.boundary = False
            _snapshot("backward", full)
        if S.armed:
            _interrupt()
        torch = S.torch
        v = loss.detach() if isinstance(loss, torch.Tensor) else None
        numel = v.numel() if v is not None else 0
        extra = {}
        if S.scaled is not None:  # a GradScaler has scaled: was this its output?
            w = S.scaled.get(id(loss))
            extra["scaled"] = w is not None and w() is loss
        _tp.emit("backward", _ev.backward(float(v) if numel == 1 else None, S.bwd,
                                          dtype=str(v.dtype) if v is not None else None,
                                          numel=numel, mean_over=_take_mean_over(), **extra))
    except Exception:
        _fail("backward")


def _take_mean_over():
    """The elements the last mean-reduced loss function averaged over since
    the previous backward (None when none ran): a mean of per-micro-batch
    means over-weights the micro-batches that count fewer elements."""
    n, S.mean_over = getattr(S, "mean_over", None), None
    return n


def _mean_count(name, a, k):
    inp = a[0] if a else k.get("input")
    tgt = a[1] if len(a) > 1 else k.get("target")
    red = k.get("reduction", "mean")
    if red != "mean" or k.get("weight") is not None or inp is None:
        return None
    if name in ("cross_entropy", "nll_loss") and tgt is not None and not tgt.is_floating_point():
        ign = k.get("ignore_index", -100)
        return int((tgt != ign).sum().item())
    return int(inp.numel())


def _patch_loss(torch):
    """Only with TRAINPARITY_LOSS_COUNTS=1 (the accumulation check sets it):
    counting the targets a loss averaged over costs a reduction (and on a GPU
    a synchronisation) per loss call, which no other check needs."""
    if not _cfg["loss_counts"]:
        return
    F = torch.nn.functional

    def after(name):
        def fn(r, a, k):
            if not _depth("bwd"):
                S.mean_over = _mean_count(name, a, k)

        return fn

    for name in ("cross_entropy", "nll_loss", "mse_loss", "l1_loss"):
        _wrap_function(F, name, after(name), "loss")


def _patch_backward(torch):
    T = torch.Tensor
    orig = T.backward

    def backward(self, *a, **k):
        if _depth("bwd") or _off():
            return orig(self, *a, **k)
        _enter("bwd")
        try:
            _before_backward(self)
            return orig(self, *a, **k)
        finally:
            _leave("bwd")

    if not _is_wrapped(orig):
        T.backward = _wraps(orig, backward)
    ag = torch.autograd
    aorig = ag.backward
    if _is_wrapped(aorig):
        return

    def abackward(tensors, *a, **k):
        if _depth("bwd") or _off():
            return aorig(tensors, *a, **k)
        _enter("bwd")
        try:
            t = tensors
            if isinstance(t, (list, tuple)) and len(t) == 1:
                t = t[0]
            _before_backward(t)
            return aorig(tensors, *a, **k)
        finally:
            _leave("bwd")

    ag.backward = _wraps(aorig, abackward)

