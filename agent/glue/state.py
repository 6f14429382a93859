# SPDX-License-Identifier: MIT
# state.py -- the training state: the models an optimizer trains (through
# DDP, DataParallel and torch.compile wrappers), the optimizers, schedulers,
# scalers and RNGs, named as a checkpoint names them, and the snapshot of
# all of it that the daemon compares step by step.
import sys
import weakref

from . import events as _ev
from .config import _cfg
from .core import _tp, Digest, S, _in_glue, _indexed, _live


# Wrappers that train another module, and the attribute that holds it.
_WRAPPERS = {"DistributedDataParallel": "module", "DataParallel": "module",
             "OptimizedModule": "_orig_mod"}


def _unwrap(m):
    """The module a wrapper (DDP, DataParallel, torch.compile) trains.  Its
    parameters are named as that module names them, which is how a script
    saves them (model.module.state_dict()), so that the training state and
    the checkpoint speak of the same components."""
    for _ in range(4):
        attr = _WRAPPERS.get(type(m).__name__)
        inner = m._modules.get(attr) if attr else None
        if inner is None:
            break
        m = inner
    return m


def _top_modules():
    """The live modules that no other live module holds, creation order (the
    registry is compacted when half of it is dead)."""
    mods = _live(S.modules)
    if len(mods) < len(S.modules) // 2:
        S.modules[:] = [weakref.ref(m) for m in mods]
    children = set()
    for m in mods:
        for c in m._modules.values():
            if c is not None:
                children.add(id(c))
    return [m for m in mods if id(m) not in children]


def _roots():
    """Root modules that own a parameter of some optimizer, creation order.

    Only modules that hold trained parameters count, so a dead module still
    waiting for the garbage collector never shifts the naming."""
    trained = set()
    for o in _live(S.optimizers):
        for g in o.param_groups:
            for p in g["params"]:
                trained.add(id(p))
    roots = []
    for m in _top_modules():
        for p in m.parameters():
            if id(p) in trained:
                roots.append(_unwrap(m))
                break
    return roots


def _extras(trained):
    """Root modules that hold tensors and no optimizer's parameter, creation
    order: an EMA or a teacher copy of the model, a second model's BatchNorm
    statistics.  What changes in them during training, or what a checkpoint
    carries of them, is state as much as the trained model's is, so the
    snapshot holds them too, each as module[<name>] (_extra_names).  None of
    them shares a parameter with a trained root: such a root is trained
    itself (_roots)."""
    seen = set(id(m) for m in trained)
    out = []
    for m in _top_modules():
        u = _unwrap(m)
        if id(u) in seen:
            continue
        seen.add(id(u))
        if next(u.parameters(), None) is not None or next(u.buffers(), None) is not None:
            out.append(u)
    return out


def _extra_names(extras):
    """The names of extras, one each: the variable or attribute that holds
    the module (`ema` for `ema = AveragedModel(model)` or `self.ema = ...`),
    found once per module (S.extra_names), else its class; a second module
    of one name gets `#2`, and so on."""
    names, used = [], set()
    if len(S.extra_names) > 2 * len(extras) + 16:  # forget modules gone
        S.extra_names = {k: v for k, v in S.extra_names.items() if v[0]() is not None}
    for m in extras:
        got = S.extra_names.get(id(m))
        if got is None or got[0]() is not m:
            got = (weakref.ref(m), _holder_name(m) or type(m).__name__)
            S.extra_names[id(m)] = got
        n, k = got[1], 1
        while (n if k == 1 else "%s#%d" % (n, k)) in used:
            k += 1
        n = n if k == 1 else "%s#%d" % (n, k)
        used.add(n)
        names.append(n)
    return names


def _holder_name(m):
    """The name under which the script holds m: a global of __main__, a local
    of a frame of the calling stack outside the glue, or an attribute of
    one of those (self.ema); None when none holds it."""
    main = sys.modules.get("__main__")
    for k, v in list(getattr(main, "__dict__", {}).items()):
        if v is m and not k.startswith("__"):
            return k
    f = sys._getframe(1)
    while f is not None:
        if not _in_glue(f):
            loc = f.f_locals
            for k, v in list(loc.items()):
                if v is m:
                    return k
            for v in list(loc.values()):
                try:
                    d = object.__getattribute__(v, "__dict__")
                except Exception:
                    continue
                if isinstance(d, dict):
                    for k, w in list(d.items()):
                        if w is m and not k.startswith("__"):
                            return k
        f = f.f_back
    return None


def _any_roots():
    """Root modules that hold parameters, trained or not (for naming restores
    that happen before the optimizer exists)."""
    return [_unwrap(m) for m in _top_modules() if next(m.parameters(), None) is not None]


def _full_now():
    """Whether the start-of-step snapshot of the step under way is full.
    Always, unless TRAINPARITY_DIGEST=induction; then only at the
    boundaries that anchor the induction (docs/induction.md): the first
    snapshot of the process, the first after a save, a load or a restore,
    every full_every-th step, and the steps of TRAINPARITY_FULL_STEPS (a
    rerun narrowing a divergence down).  Between them the model's tensors
    and the optimizer's state are functions of what the per-step events
    carry (data, RNG, losses, gradients, learning rates)."""
    if not _cfg["induction"] or S.boundary:
        return True
    k, lo, hi = _cfg["full_every"], _cfg["full_from"], _cfg["full_to"]
    if k and S.step % k == 0:
        return True
    return lo is not None and lo <= S.step <= hi


def _snapshot(why, full=True):
    """Snapshot of the training state.  Its large tensors are hashed at the
    end of the emit, all together, on torch's own compute threads (job.h):
    the training thread is in the hook meanwhile, so nothing writes them.
    Not full (a start-of-step snapshot between induction boundaries): the
    model's parameters and buffers and the optimizer's state are left
    out, and the event says so: nothing walks the parameters then."""
    torch = S.torch
    items = []
    opts = _live(S.optimizers)
    if full:
        names = {}
        roots = _roots()
        for i, m in enumerate(roots):
            pre = _indexed("model", i, len(roots))
            params = dict(m.named_parameters())
            for n, p in params.items():
                names[id(p)] = n if len(roots) == 1 else pre + "." + n
            items.append((pre, params))
            items.append((pre, dict(m.named_buffers())))
        extras = _extras(roots)
        xnames = _extra_names(extras)
        for n, m in zip(xnames, extras):
            pre = "module[%s]" % n
            items.append((pre, dict(m.named_parameters())))
            items.append((pre, dict(m.named_buffers())))
    for j, o in enumerate(opts):
        pre = _indexed("optimizer", j, len(opts))
        if full:
            items.append((pre + ".state", _opt_state(o, names)))
        for gi, g in enumerate(o.param_groups):
            items.append(("%s.group[%d]" % (pre, gi), {a: v for a, v in g.items() if a != "params"}))
    scheds = _live(S.schedulers)
    for j, s in enumerate(scheds):
        items.append((_indexed("scheduler", j, len(scheds)), s.state_dict()))
    scalers = [s for s in _live(S.scalers) if s.is_enabled()]
    for j, s in enumerate(scalers):
        items.append((_indexed("scaler", j, len(scalers)), s.state_dict()))
    items.append(("rng.torch_cpu", S.get_rng_state()))
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        for i, st in enumerate(cuda.get_rng_state_all()):
            items.append(("rng.cuda[%d]" % i, st))
    if S.seeded["python"]:
        import random

        items.append(("rng.python", Digest(random.getstate())))
    npr = sys.modules.get("numpy.random")
    if S.seeded["numpy"] and npr is not None:
        items.append(("rng.numpy", Digest(npr.get_state())))
    if not full:
        body = _ev.snapshot(why, full=False)
    elif extras:
        body = _ev.snapshot(why, modules=xnames,
                            module_classes=[type(m).__name__ for m in extras])
    else:
        body = _ev.snapshot(why)
    _tp.emit("snapshot", body, "leaves", items)


def _opt_state(o, names):
    """Optimizer o's per-parameter state, keyed by the parameters' names
    (p<k>, its place in the param groups, for a tensor no root names)."""
    state = {}
    k = 0
    for g in o.param_groups:
        for p in g["params"]:
            s = o.state.get(p)
            if s:
                state[names.get(id(p), "p%d" % k)] = s
            k += 1
    return state


def _param_names():
    names = {}
    roots = _roots()
    for i, m in enumerate(roots):
        pre = _indexed("model", i, len(roots))
        for n, p in m.named_parameters():
            names[id(p)] = n if len(roots) == 1 else pre + "." + n
    return names


def _module_path(m):
    m = _unwrap(m)
    trained = _roots()
    roots = trained or _any_roots()
    for i, r in enumerate(roots):
        if r is m:
            return _indexed("model", i, len(roots))
    if trained:
        extras = _extras(trained)
        for n, x in zip(_extra_names(extras), extras):
            if x is m:
                return "module[%s]" % n
    for i, r in enumerate(roots):
        for n, sub in r.named_modules():
            if sub is m:
                return _indexed("model", i, len(roots)) + ("." + n if n else "")
    return "<%s>" % type(m).__name__

