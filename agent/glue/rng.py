# SPDX-License-Identifier: MIT
# rng.py -- RNG setters and seeds: torch's CPU and CUDA generators,
# Python's random and NumPy's legacy global state.  A seed or set state is a
# restore (restore.py); Python's and NumPy's join the snapshot once seeded.
from .core import Digest, S, _arg0, _wrap_function
from .restore import _emit_restore


def _seed_of(a, k, key="seed"):
    v = _arg0(a, k, key)
    try:
        return int(v)
    except Exception:
        return None


def _patch_rng_torch(torch):
    def setter(obj):
        return lambda r, a, k: _emit_restore("rng", obj, "set_state", arg=_arg0(a, k, "new_state"))

    def seeder(obj):
        return lambda r, a, k: _emit_restore("rng", obj, "seed", seed=_seed_of(a, k))

    for mod in (torch, torch.random):
        _wrap_function(mod, "set_rng_state", setter("rng.torch_cpu"), "rng")
        _wrap_function(mod, "manual_seed", seeder("rng.torch_cpu"), "rng")
        _wrap_function(mod, "seed", lambda r, a, k: _emit_restore("rng", "rng.torch_cpu", "seed", seed=int(r)), "rng")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None:
        for name in ("set_rng_state", "set_rng_state_all"):
            _wrap_function(cuda, name, setter("rng.cuda"), "rng")
        for name in ("manual_seed", "manual_seed_all"):
            _wrap_function(cuda, name, seeder("rng.cuda"), "rng")


def _patch_rng_python():
    """Python's and NumPy's setters send the state set as one digest leaf, of
    its content (Digest): a tuple built from a dict or list in the checkpoint
    is traced to it."""
    import random

    def mark(op):
        def after(r, a, k):
            S.seeded["python"] = True
            if op == "seed":
                _emit_restore("rng", "rng.python", op, seed=_seed_of(a, k, "a"))
            else:
                _emit_restore("rng", "rng.python", op, arg=Digest(_arg0(a, k, "state")))

        return after

    _wrap_function(random, "seed", mark("seed"), "rng")
    _wrap_function(random, "setstate", mark("set_state"), "rng")


def _patch_numpy_random(npr):
    def mark(op):
        def after(r, a, k):
            S.seeded["numpy"] = True
            if op == "seed":
                _emit_restore("rng", "rng.numpy", op, seed=_seed_of(a, k))
            else:
                _emit_restore("rng", "rng.numpy", op, arg=Digest(_arg0(a, k, "state")))

        return after

    _wrap_function(npr, "seed", mark("seed"), "rng")
    _wrap_function(npr, "set_state", mark("set_state"), "rng")

