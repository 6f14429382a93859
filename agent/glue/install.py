# SPDX-License-Identifier: MIT
# install.py -- installs the hooks: Python's random at once, torch, NumPy
# and safetensors when they are imported (or at once, if they already are),
# each family in a fixed order; the `hello` event; the final snapshot and
# `bye` at exit.  Executing this module boots the glue.
import atexit
import os
import sys

from . import events as _ev
from .core import _tp, Digest, S, _fail, _forked
from .config import _cfg
from .state import _snapshot
from .modules import _patch_module
from .rng import _patch_numpy_random, _patch_rng_python, _patch_rng_torch
from .optim import _patch_clip, _patch_optim, _patch_zero_grad
from .sched import _patch_sched
from .backward import _patch_backward, _patch_loss
from .dropout import _patch_dropout
from .save import _patch_safetensors, _patch_save_load, _patch_storage_pickling
from .amp import _patch_scaler
from .dist import _launcher
from .data import _patch_dataloader
from .dcp import _patch_dcp



def _hello(torch):
    npm = sys.modules.get("numpy")
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    spawned = any("multiprocessing" in str(x) and "spawn" in str(x) for x in argv) or "--multiprocessing-fork" in argv
    rank, world, local_rank = _launcher()
    _tp.emit("hello", _ev.hello(
        1, _tp.version, sys.version.split()[0], [str(x) for x in argv], os.getcwd(),
        "spawned" if spawned else "main", rank, world, _tp.wire_pid(os.getppid()),
        torch=str(torch.__version__),
        numpy=str(npm.__version__) if npm is not None and hasattr(npm, "__version__") else None,
        exe=sys.executable, local_rank=local_rank, interrupt_at=_cfg["interrupt_at"],
        capture=_cfg["capture"], hash_threads=_tp.hash_threads(), host=os.uname().nodename,
        spool=os.environ.get("TRAINPARITY_SPOOL") or None))
    S.hello = True


def _on_torch(torch):
    if S.torch is not None or _forked():
        return
    S.torch = torch
    S.get_rng_state = torch.get_rng_state
    npm = sys.modules.get("numpy")
    _tp.register(torch.Tensor, Digest, getattr(npm, "ndarray", None) if npm else None)
    for patch in (
        _patch_module,
        _patch_optim,
        _patch_zero_grad,
        _patch_sched,
        _patch_backward,
        _patch_save_load,
        _patch_storage_pickling,
        _patch_rng_torch,
        _patch_scaler,
        _patch_clip,
        _patch_dataloader,
        _patch_loss,
        _patch_dropout,
    ):
        try:
            patch(torch)
        except Exception:
            _fail(patch.__name__)
    dcp = sys.modules.get("torch.distributed.checkpoint")
    if dcp is not None:  # imported while torch was
        _on_dcp(dcp)
    _hello(torch)


def _on_numpy(npm):
    try:
        _tp.register(None, None, npm.ndarray)
    except Exception:
        _fail("numpy")


def _on_numpy_random(npr):
    try:
        _patch_numpy_random(npr)
    except Exception:
        _fail("numpy.random")


def _on_dcp(dcp):
    try:
        _patch_dcp(dcp)
    except Exception:
        _fail("torch.distributed.checkpoint")


def _on_safetensors(st):
    try:
        _patch_safetensors(st)
    except Exception:
        _fail("safetensors")


_WATCH = {
    "torch": _on_torch,
    "numpy": _on_numpy,
    "numpy.random": _on_numpy_random,
    "safetensors.torch": _on_safetensors,
    "torch.distributed.checkpoint": _on_dcp,
}


class _Finder:
    """Patches watched modules right after they execute, before user code can
    take references to what they define."""

    def find_spec(self, name, path=None, target=None):
        cb = _WATCH.get(name)
        if cb is None:
            return None
        for f in sys.meta_path:
            if f is self or not hasattr(f, "find_spec"):
                continue
            spec = f.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        oexec = getattr(loader, "exec_module", None)
        if oexec is None:
            return spec

        def exec_module(module):
            oexec(module)
            cb(module)

        try:
            loader.exec_module = exec_module
        except Exception:
            return spec
        return spec

    def invalidate_caches(self):
        pass


def _at_exit():
    if not S.hello or _forked():
        return
    try:
        if S.step > 0 or S.snap_step >= 0:
            _snapshot("final")
    except Exception:
        _fail("final snapshot")
    lv = getattr(sys, "last_value", None)
    reason, exc = ("exception", type(lv).__name__) if lv is not None else ("exit", None)
    try:
        _tp.bye(reason, None, exc)
    except Exception:
        pass


def _boot():
    try:
        _patch_rng_python()
    except Exception:
        _fail("random")
    for name, cb in _WATCH.items():
        mod = sys.modules.get(name)
        if mod is not None:
            cb(mod)
    sys.meta_path.insert(0, _Finder())
    atexit.register(_at_exit)


_boot()

