# SPDX-License-Identifier: MIT
# glue.py -- the Python half of libtpagent.so, compiled into it and run at boot.
#
# It wraps torch APIs and calls the C agent (`_tp`, module _trainparity_agent):
# it decides *when* to observe and *what* to hand over; flattening, digests,
# statistics, encoding and sending are C.  Every wrapper returns what the
# wrapped function returned and raises what it raised; the wrapper's own
# failures go to _tp.error and never reach user code.  Nothing here changes a
# value the training computes with.
import atexit
import functools
import operator
import os
import sys
import threading
import traceback
import weakref

AGENT_VERSION = "0.1.0"

_cfg = _tp.config()  # noqa: F821 (injected by the C boot)
_tls = threading.local()


class _State:
    pid = os.getpid()
    torch = None
    hello = False
    step = 0  # completed optimizer steps (attempted updates) in this process
    snap_step = -1  # step of the last start-of-step snapshot
    save_snap_step = -1  # step of the last save snapshot
    bwd = 0  # backward calls since the last optimizer step
    armed = False  # resume: interrupt at the next training-step boundary
    last_load = None  # seq of the latest load event
    seeded = {"python": False, "numpy": False}
    modules = []  # weakrefs, creation order
    optimizers = []
    schedulers = []
    scalers = []
    loaders = []
    epochs = {}


S = _State


class Digest:
    """Marks a value to be sent as one digest leaf (RNG states: the digest of
    their content alone, whatever container a checkpoint keeps them in;
    agent/flatten.c, rng_digest)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _off():
    return os.getpid() != S.pid


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


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


# ---- the training state ------------------------------------------------

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


def _roots():
    """Root modules that own a parameter of some optimizer, creation order.

    Only modules that hold trained parameters count, so a dead module still
    waiting for the garbage collector never shifts the naming."""
    mods = _live(S.modules)
    if len(mods) < len(S.modules) // 2:
        S.modules[:] = [weakref.ref(m) for m in mods]
    trained = set()
    for o in _live(S.optimizers):
        for g in o.param_groups:
            for p in g["params"]:
                trained.add(id(p))
    children = set()
    for m in mods:
        for c in m._modules.values():
            if c is not None:
                children.add(id(c))
    roots = []
    for m in mods:
        if id(m) in children:
            continue
        for p in m.parameters():
            if id(p) in trained:
                roots.append(_unwrap(m))
                break
    return roots


def _any_roots():
    """Root modules that hold parameters, trained or not (for naming restores
    that happen before the optimizer exists)."""
    mods = _live(S.modules)
    children = set()
    for m in mods:
        for c in m._modules.values():
            if c is not None:
                children.add(id(c))
    return [_unwrap(m) for m in mods
            if id(m) not in children and next(m.parameters(), None) is not None]


def _snapshot(why):
    """Snapshot of the training state.  Its large tensors are hashed at the
    end of the emit, all together, on torch's own compute threads (job.h):
    the training thread is in the hook meanwhile, so nothing writes them."""
    torch = S.torch
    items = []
    names = {}
    roots = _roots()
    for i, m in enumerate(roots):
        pre = _indexed("model", i, len(roots))
        params = dict(m.named_parameters())
        for n, p in params.items():
            names[id(p)] = n if len(roots) == 1 else pre + "." + n
        items.append((pre, params))
        items.append((pre, dict(m.named_buffers())))
    opts = _live(S.optimizers)
    for j, o in enumerate(opts):
        pre = _indexed("optimizer", j, len(opts))
        state = {}
        k = 0
        for g in o.param_groups:
            for p in g["params"]:
                s = o.state.get(p)
                if s:
                    state[names.get(id(p), "p%d" % k)] = s
                k += 1
        items.append((pre + ".state", state))
        for gi, g in enumerate(o.param_groups):
            items.append(("%s.group[%d]" % (pre, gi), {a: v for a, v in g.items() if a != "params"}))
    scheds = _live(S.schedulers)
    for j, s in enumerate(scheds):
        items.append((_indexed("scheduler", j, len(scheds)), s.state_dict()))
    scalers = [s for s in _live(S.scalers) if s.is_enabled()]
    for j, s in enumerate(scalers):
        items.append((_indexed("scaler", j, len(scalers)), s.state_dict()))
    items.append(("rng.torch_cpu", _orig_get_rng_state()))
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
    _tp.emit("snapshot", {"why": why}, "leaves", items)
    return names


def _param_names():
    names = {}
    roots = _roots()
    for i, m in enumerate(roots):
        pre = _indexed("model", i, len(roots))
        for n, p in m.named_parameters():
            names[id(p)] = n if len(roots) == 1 else pre + "." + n
    return names


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


# ---- optimizers ------------------------------------------------------------


def _step_pre(opt, via):
    try:
        names = _param_names()
        params = [p for g in opt.param_groups for p in g["params"]]
        grads = []
        k = 0
        for p in params:
            if p.grad is not None:
                grads.append(("grad." + names.get(id(p), "p%d" % k), p.grad))
            k += 1
        body = {
            "phase": "pre",
            "opt": _index(S.optimizers, opt),
            "cls": type(opt).__name__,
            "lrs": [float(g["lr"]) for g in opt.param_groups],
            "nparams": len(params),
            "ngrads": len(grads),
            "via": via,
        }
        _tp.emit("step", body, "grads", grads)
        if _cfg["update_norm"]:
            _tp.update_begin(params)
        return params
    except Exception:
        _fail("optimizer.step")
        return None


def _step_post(opt, params, skipped=False):
    try:
        body = {"phase": "post", "opt": _index(S.optimizers, opt), "cls": type(opt).__name__}
        if skipped:
            body["skipped"] = True
        elif _cfg["update_norm"] and params is not None:
            norm, changed = _tp.update_end(params)
            body["unorm"] = norm
            body["changed"] = changed
        _tp.emit("step", body)
    except Exception:
        _fail("optimizer.step")
    _advance()


def _wrap_opt_step(cls):
    orig = cls.__dict__.get("step")
    if orig is None or _is_wrapped(orig):
        return

    def step(self, *a, **k):
        if _depth("opt") or _off():
            return orig(self, *a, **k)
        _enter("opt")
        try:
            if S.armed:
                _interrupt()
            via = "scaler" if _depth("scaler_step") else "optimizer"
            pre = []  # the step's parameters, once its pre event is out
            closure = _arg0(a, k, "closure")
            if callable(closure):
                wrapped = _closure_pre(closure, lambda: pre.append(_step_pre(self, via)))
                if "closure" in k:
                    k = dict(k, closure=wrapped)
                else:
                    a = (wrapped,) + a[1:]
            else:
                pre.append(_step_pre(self, via))
            r = orig(self, *a, **k)
            if not pre:  # the optimizer never called its closure
                pre.append(_step_pre(self, via))
            _step_post(self, pre[0])
            return r
        finally:
            _leave("opt")

    cls.step = _wraps(orig, step)


def _closure_pre(closure, emit):
    """optimizer.step(closure) (Lightning, LBFGS): forward and backward run
    inside the closure, so the step's gradients exist only once the
    optimizer has called it.  The step's pre event (its gradients, and the
    parameters before the update) is emitted when the first call returns;
    later calls (LBFGS re-evaluates) emit nothing.  Returns what the
    closure returns and raises what it raises."""
    done = []

    def fn(*a, **k):
        r = closure(*a, **k)
        if not done:
            done.append(True)
            emit()
        return r

    return fn


def _patch_optim(torch):
    Opt = torch.optim.Optimizer
    oinit = Opt.__init__

    def __init__(self, *a, **k):
        oinit(self, *a, **k)
        if _off():
            return
        try:
            _index(S.optimizers, self)
            for c in type(self).__mro__:
                if "step" in c.__dict__:
                    _wrap_opt_step(c)
                    break
            for c in type(self).__mro__:
                if "zero_grad" in c.__dict__:
                    _wrap_zero_grad(c, "optimizer")
                    break
        except Exception:
            _fail("optimizer.__init__")

    Opt.__init__ = _wraps(oinit, __init__)
    _wrap_method(Opt, "load_state_dict", _restore_hook("optimizer", S.optimizers))


# ---- zero_grad -------------------------------------------------------------


def _set_to_none_default(fn):
    """The default of fn's set_to_none parameter (torch 1.13: False, 2.x:
    True), read once when fn is wrapped; None when it has no such default."""
    try:
        import inspect

        p = inspect.signature(fn).parameters.get("set_to_none")
        return p.default if p is not None and isinstance(p.default, bool) else None
    except Exception:
        return None


def _wrap_zero_grad(cls, which):
    """Wraps cls.zero_grad to emit a zero_grad mark after each call, so the
    accumulation check sees the call instead of inferring it from the
    gradients.  Every zero_grad wrapper shares the re-entry category
    "zero_grad": a zero_grad reached from inside another (an override
    calling super(), a wrapper delegating to the optimizer it holds, a
    module's zero_grad calling an optimizer's) is the same user call and is
    reported once, by the outermost.  Nothing is read from the gradients:
    a call costs a dict and an emit."""
    orig = cls.__dict__.get("zero_grad")
    if orig is None or _is_wrapped(orig):
        return
    default = _set_to_none_default(orig)

    def after(self, r, a, k):
        v = a[0] if a else k.get("set_to_none", default)
        body = {"which": which, "set_to_none": v if isinstance(v, bool) else None}
        if which == "optimizer":
            body["opt"] = _index(S.optimizers, self)
        _tp.emit("zero_grad", body)

    _wrap_method(cls, "zero_grad", after, "zero_grad")


def _patch_zero_grad(torch):
    """The base classes' zero_grad (an optimizer subclass's own override is
    wrapped when the optimizer is created, _patch_optim).  accelerate's
    AcceleratedOptimizer never runs Optimizer.__init__: its zero_grad (a
    no-op while gradients accumulate) is seen through the optimizer it
    delegates to, when that one clears."""
    _wrap_zero_grad(torch.optim.Optimizer, "optimizer")
    _wrap_zero_grad(torch.nn.Module, "module")


# ---- schedulers ---------------------------------------------------------


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
                {"sched": idx, "cls": type(self).__name__, "metric": metric},
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


# ---- restores -------------------------------------------------------------


_GLUE_FILE = sys._getframe().f_code.co_filename


def _caller():
    """Who made the call being observed: the first frame outside the glue,
    as module.function (e.g. accelerate.optimizer.AcceleratedOptimizer.__init__),
    so that a restore that did not come from a checkpoint is named for what
    it is."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == _GLUE_FILE:
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    name = getattr(code, "co_qualname", None) or code.co_name
    return "%s.%s" % (f.f_globals.get("__name__", "?"), name)


_NO_ARG = object()


def _emit_restore(what, obj, op, missing=None, unexpected=None, seed=None, arg=_NO_ARG):
    """A restore: a load_state_dict, an RNG setter or seed.  `arg` is what was
    restored; its manifest lets the daemon tell whether it came from a
    checkpoint that was loaded (its content matches) or from elsewhere (the
    object's own state, a state saved in memory)."""
    if not S.hello:
        return
    body = {"what": what, "obj": obj, "op": op, "load": S.last_load, "caller": _caller()}
    if missing:
        body["missing"] = [str(x) for x in missing][:200]
    if unexpected:
        body["unexpected"] = [str(x) for x in unexpected][:200]
    if seed is not None:
        body["seed"] = seed
    if arg is not _NO_ARG:
        try:
            _tp.emit("restore", body, "manifest", [("", arg)], True)
            return
        except Exception:
            pass  # what cannot be flattened is sent without: provenance unknown
    _tp.emit("restore", body)


def _restore_hook(what, registry):
    def after(self, result, a, k):
        if registry is None:
            obj = _module_path(self)
        else:
            idx = _index(registry, self)
            obj = _indexed(what, idx, len(_live(registry)))
        _emit_restore(
            what,
            obj,
            "load_state_dict",
            getattr(result, "missing_keys", None),
            getattr(result, "unexpected_keys", None),
            arg=_arg0(a, k, "state_dict"),
        )

    return after


def _module_path(m):
    m = _unwrap(m)
    roots = _roots() or _any_roots()
    for i, r in enumerate(roots):
        if r is m:
            return _indexed("model", i, len(roots))
    for i, r in enumerate(roots):
        for n, sub in r.named_modules():
            if sub is m:
                return _indexed("model", i, len(roots)) + ("." + n if n else "")
    return "<%s>" % type(m).__name__


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


# ---- backward -------------------------------------------------------------


def _before_backward(loss):
    try:
        S.bwd += 1
        first = S.snap_step != S.step
        if first:
            S.snap_step = S.step
            _snapshot("backward")
        if S.armed:
            _interrupt()
        torch = S.torch
        v = loss.detach() if isinstance(loss, torch.Tensor) else None
        numel = v.numel() if v is not None else 0
        _tp.emit(
            "backward",
            {
                "loss": float(v) if numel == 1 else None,
                "dtype": str(v.dtype) if v is not None else None,
                "count": S.bwd,
                "numel": numel,
                "mean_over": _take_mean_over(),
            },
        )
    except Exception:
        _fail("backward")


# ---- loss functions and dropout (accumulation parity) -----------------------


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
    if os.environ.get("TRAINPARITY_LOSS_COUNTS") != "1":
        return
    F = torch.nn.functional

    def after(name):
        def fn(r, a, k):
            if not _depth("bwd"):
                S.mean_over = _mean_count(name, a, k)

        return fn

    for name in ("cross_entropy", "nll_loss", "mse_loss", "l1_loss"):
        _wrap_function(F, name, after(name), "loss")


def _patch_dropout(torch):
    """Only with TRAINPARITY_DISABLE_DROPOUT=1 (the user asked for it): the
    functional dropouts, which nn.Dropout and friends call, see training=False
    and return their input, as in eval mode; fused attention (SDPA, which HF
    models call, and the function nn.MultiheadAttention calls) gets
    dropout_p=0.0; nothing else changes."""
    if os.environ.get("TRAINPARITY_DISABLE_DROPOUT") != "1":
        return
    F = torch.nn.functional
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout"):
        orig = getattr(F, name, None)
        if orig is None or _is_wrapped(orig):
            continue

        def make(orig):
            def fn(input, p=0.5, training=True, inplace=False):
                return orig(input, p, False, inplace)

            return fn

        setattr(F, name, _wraps(orig, make(orig)))
    # name -> index of dropout_p among the positional arguments; torch 1.13
    # has no scaled_dot_product_attention
    for name, at in (("scaled_dot_product_attention", 4), ("multi_head_attention_forward", 10)):
        orig = getattr(F, name, None)
        if orig is not None and not _is_wrapped(orig):
            setattr(F, name, _wraps(orig, _no_dropout_p(orig, at)))


def _no_dropout_p(orig, at):
    """orig called with dropout_p=0.0, given by keyword or at position `at`."""

    def fn(*a, **k):
        if len(a) > at:
            a = a[:at] + (0.0,) + a[at + 1:]
        elif "dropout_p" in k:
            k["dropout_p"] = 0.0
        return orig(*a, **k)

    return fn


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


# ---- save / load ------------------------------------------------------------


def _target(f):
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        p = os.fsdecode(os.fspath(f))
        return "path", os.path.abspath(p)
    name = getattr(f, "name", None)
    if isinstance(name, str) and name:
        return "file", os.path.abspath(name)
    # fsspec's local files (Lightning reads checkpoints through them) carry
    # their path as .path; a remote file's .path is not absolute.
    path = getattr(f, "path", None)
    if isinstance(path, str) and os.path.isabs(path) and os.path.isfile(path):
        return "file", path
    return "buffer", None


def _buffer_size(f):
    """The size of an in-memory buffer, without copying it: a checkpoint
    written to a BytesIO ends up in a file of that size (Lightning writes
    getvalue() through fsspec), which is how trainparity-run finds it."""
    gb = getattr(f, "getbuffer", None)
    if gb is None:
        return None
    try:
        with gb() as mv:
            return mv.nbytes
    except Exception:
        return None


def _rec_begin():
    try:
        _tp.rec_begin()
    except Exception:
        _fail("rec_begin")


def _rec_end():
    try:
        return _tp.rec_end()
    except Exception:
        _fail("rec_end")
        return None


def _content(f, recs, use_records, data=None):
    """(digest, via, records, nbytes) for a checkpoint."""
    if use_records and recs is not None and recs[0] is not None:
        target, name = _target(f)
        nbytes = None
        if target == "path" and os.path.isfile(name):
            nbytes = os.path.getsize(name)
        elif target == "buffer":
            nbytes = _buffer_size(f)
        return recs[0], "records", [list(r) for r in recs[1]], nbytes
    target, name = _target(f)
    r = None
    if data is not None:
        r = _tp.ckpt_bytes(bytes(data))
        via = "bytes"
    elif target == "buffer" and hasattr(f, "getvalue"):
        r = _tp.ckpt_bytes(f.getvalue())
        via = "bytes"
    elif name is not None and os.path.isfile(name):
        if target == "file" and hasattr(f, "flush") and not getattr(f, "closed", False):
            try:
                f.flush()
            except Exception:
                pass
        r = _tp.ckpt_file(name)
        via = "file"
    if r is None:
        return None, "none", [], None
    return r[0], via, [list(x) for x in r[3]], r[2]


def _observe_save(api, obj, f, recs, error, data=None):
    target, name = _target(f) if f is not None else ("buffer", None)
    digest, via, records, nbytes = _content(f, recs, api == "torch", data)
    at = _cfg["interrupt_at"]
    armed = at is not None and not S.armed and error is None and S.step >= at
    body = {
        "api": api,
        "target": target,
        "name": name,
        "digest": digest,
        "via": via,
        "records": records,
        "bytes": nbytes,
        "error": error,
        "armed": armed,
    }
    _tp.emit("save", body, "manifest", [("", obj)], True)
    if S.save_snap_step != S.step:
        S.save_snap_step = S.step
        _snapshot("save")
    if armed:
        S.armed = True


def _observe_load(api, f, recs, result, error, use_records, data=None):
    target, name = _target(f) if f is not None else ("buffer", None)
    digest, via, records, nbytes = _content(f, recs, use_records, data)
    body = {
        "api": api,
        "target": target,
        "name": name,
        "digest": digest,
        "via": via,
        "records": records,
        "bytes": nbytes,
        "error": error,
    }
    items = [("", result)] if error is None else []
    seq = _tp.emit("load", body, "manifest", items, True)
    if seq >= 0:
        S.last_load = seq


def _patch_storage_pickling(torch):
    """Plain pickle (dist.all_gather_object, pickle.dumps of a tensor) writes
    a storage with torch.save into a buffer and reads it back with
    torch.load(BytesIO): the transport of an object, not a checkpoint, so
    the save and load inside are not observed."""
    st = torch.storage

    def quiet(orig, cat):
        def fn(*a, **k):
            _enter(cat)
            try:
                return orig(*a, **k)
            finally:
                _leave(cat)

        return _wraps(orig, fn)

    for name in ("_StorageBase", "TypedStorage"):
        cls = getattr(st, name, None)
        red = cls.__dict__.get("__reduce__") if cls is not None else None
        if red is not None and not _is_wrapped(red):
            cls.__reduce__ = quiet(red, "save")
    lfb = getattr(st, "_load_from_bytes", None)
    if lfb is not None and not _is_wrapped(lfb):
        st._load_from_bytes = quiet(lfb, "load")


def _patch_save_load(torch):
    ser = torch.serialization
    osave, oload = ser.save, ser.load

    def save(obj, f, *a, **k):
        if _depth("save") or _off():
            return osave(obj, f, *a, **k)
        _enter("save")
        try:
            _rec_begin()
            try:
                r = osave(obj, f, *a, **k)
            except BaseException as e:
                recs = _rec_end()
                try:
                    _observe_save("torch", obj, f, recs, repr(e)[:500])
                except Exception:
                    _fail("torch.save")
                raise
            recs = _rec_end()
            try:
                _observe_save("torch", obj, f, recs, None)
            except Exception:
                _fail("torch.save")
            return r
        finally:
            _leave("save")

    def load(f, *a, **k):
        if _depth("load") or _off():
            return oload(f, *a, **k)
        _enter("load")
        use_records = not k.get("mmap")
        try:
            _rec_begin()
            try:
                r = oload(f, *a, **k)
            except BaseException as e:
                recs = _rec_end()
                try:
                    _observe_load("torch", f, recs, None, repr(e)[:500], use_records)
                except Exception:
                    _fail("torch.load")
                raise
            recs = _rec_end()
            try:
                _observe_load("torch", f, recs, r, None, use_records)
            except Exception:
                _fail("torch.load")
            return r
        finally:
            _leave("load")

    if not _is_wrapped(osave):
        w = _wraps(osave, save)
        ser.save = w
        torch.save = w
    if not _is_wrapped(oload):
        w = _wraps(oload, load)
        ser.load = w
        torch.load = w


def _patch_safetensors(st):
    def after_save_file(r, a, k):
        tensors = a[0] if a else k.get("tensors")
        filename = a[1] if len(a) > 1 else k.get("filename")
        _observe_save("safetensors", tensors, filename, None, None)

    def after_load_file(r, a, k):
        filename = a[0] if a else k.get("filename")
        _observe_load("safetensors", filename, None, r, None, False)

    def after_save(r, a, k):
        tensors = a[0] if a else k.get("tensors")
        _observe_save("safetensors", tensors, None, None, None, data=r)

    def after_load(r, a, k):
        data = a[0] if a else k.get("data")
        _observe_load("safetensors", None, None, r, None, False, data=data)

    _wrap_function(st, "save_file", after_save_file, "save")
    _wrap_function(st, "load_file", after_load_file, "load")
    _wrap_function(st, "save", after_save, "save")
    _wrap_function(st, "load", after_load, "load")


# ---- mixed precision and clipping ----------------------------------------------


def _scale_of(s):
    try:
        return float(s.get_scale())
    except Exception:
        return None


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
            _tp.emit("amp", {"op": "scale", "scale": _scale_of(self)})

    def after_unscale(self, r, a, k):
        if not self.is_enabled():
            return
        opt = a[0] if a else k.get("optimizer")
        found = None
        st = getattr(self, "_per_optimizer_states", {}).get(id(opt))
        if st and st.get("found_inf_per_device"):
            found = any(float(v) != 0.0 for v in st["found_inf_per_device"].values())
        _tp.emit("amp", {"op": "unscale", "found_inf": found, "opt": _index(S.optimizers, opt)})

    def after_update(self, r, a, k):
        if self.is_enabled():
            _tp.emit("amp", {"op": "update", "scale": _scale_of(self)})

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
                        _tp.emit("amp", {"op": "step", "found_inf": skipped, "opt": _index(S.optimizers, optimizer)})
                    if skipped:
                        body = {
                            "phase": "pre",
                            "opt": _index(S.optimizers, optimizer),
                            "cls": type(optimizer).__name__,
                            "lrs": [float(g["lr"]) for g in optimizer.param_groups],
                            "skipped": True,
                            "via": "scaler",
                        }
                        _tp.emit("step", body, "grads", [])
                        _step_post(optimizer, None, skipped=True)
                except Exception:
                    _fail("GradScaler.step")
                return r

            return _wraps(ostep, step)

        c.step = make(ostep)


def _patch_clip(torch):
    utils = torch.nn.utils
    cg = getattr(utils, "clip_grad", None)

    def norm_after(r, a, k):
        mx = a[1] if len(a) > 1 else k.get("max_norm")
        _tp.emit("clip", {"op": "norm", "max": float(mx) if mx is not None else None, "norm": float(r)})

    def value_after(r, a, k):
        mx = a[1] if len(a) > 1 else k.get("clip_value")
        _tp.emit("clip", {"op": "value", "max": float(mx) if mx is not None else None, "norm": None})

    for name, after in (("clip_grad_norm_", norm_after), ("clip_grad_value_", value_after)):
        w = _wrap_function(cg, name, after, "clip") if cg is not None else None
        if w is not None and getattr(utils, name, None) is getattr(w, "__wrapped__", None):
            setattr(utils, name, w)
        else:
            _wrap_function(utils, name, after, "clip")


# ---- data loading ---------------------------------------------------------


# Sample IDs are integers (int, a numpy or torch integer scalar, a 0-d
# integer tensor: anything operator.index takes, bools aside) or strings of
# at most _MAX_ID_BYTES bytes, one kind per batch.  Anything else (a float,
# a tuple, a nested list) is no stable ID, and _ids_list says which type.
_MAX_ID_BYTES = 1024


def _id_value(x):
    if isinstance(x, str):
        if len(x.encode("utf-8", "surrogatepass")) > _MAX_ID_BYTES:
            raise ValueError("a string sample ID longer than %d bytes" % _MAX_ID_BYTES)
        return x
    if isinstance(x, bool) or "bool" in str(getattr(x, "dtype", "")):
        raise TypeError("a sample ID of type %s (bool)" % type(x).__name__)
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError("a sample ID of type %s: IDs are integers or strings"
                        % type(x).__name__) from None


def _ids_list(v):
    """The IDs v holds (a list, tuple, tensor or array of IDs, or one ID) as
    a list of ints or of strs; TypeError or ValueError naming what is not."""
    if hasattr(v, "tolist") and not isinstance(v, str):
        v = v.tolist()
    ids = [_id_value(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    if ids and any(isinstance(x, str) for x in ids) and not all(isinstance(x, str) for x in ids):
        raise TypeError("a batch mixes integer and string sample IDs")
    return ids


def _ids_of(idx):
    """The sampler's indices of a batch, or None when they are no IDs (the
    coverage check then abstains: no stable IDs)."""
    if idx is None:
        return None
    try:
        return _ids_list(idx)
    except Exception:
        return None


def _rank_world():
    torch = S.torch
    try:
        d = torch.distributed
        if d.is_available() and d.is_initialized():
            return d.get_rank(), d.get_world_size()
    except Exception:
        pass
    return _env_int("RANK", -1), _env_int("WORLD_SIZE", 1)


# --sample-id: a Python expression over `batch` giving its stable sample IDs
# (trainparity-run sets TRAINPARITY_SAMPLE_ID).  Compiled once; a bad
# expression is an agent error (the verdict is then ERROR, never a guess).
_SAMPLE_ID = _cfg.get("sample_id") or os.environ.get("TRAINPARITY_SAMPLE_ID") or None
_SAMPLE_ID_CODE = None


def _sample_ids(data):
    global _SAMPLE_ID_CODE
    if _SAMPLE_ID_CODE is None:
        _SAMPLE_ID_CODE = compile(_SAMPLE_ID, "--sample-id", "eval")
    return eval(_SAMPLE_ID_CODE, {"batch": data, "torch": S.torch})


def _on_batch(it, data):
    fifo = it.__dict__.get("_tp_fifo")
    ids, worker = (fifo.popleft() if fifo else (None, None))
    source = "sampler" if ids is not None else "none"
    if _SAMPLE_ID:
        ids = None
        try:
            v = _sample_ids(data)
        except Exception:
            _fail("--sample-id %r" % _SAMPLE_ID)
        else:
            try:
                ids = _ids_list(v)
            except Exception as e:  # IDs of a kind no check can audit: say which
                try:
                    _tp.error("--sample-id %r" % _SAMPLE_ID, str(e))
                except Exception:
                    pass
        source = "expr"
    pos = it.__dict__.get("_tp_pos", 0)
    it._tp_pos = pos + 1
    body = _loader_body(it, pos)
    body.update(ids=ids, worker=worker, size=len(ids) if ids is not None else None,
                id_source=source)
    _tp.emit("batch", body)


def _loader_body(it, pos):
    """What a batch event and an epoch's end share: the loader, its epoch,
    the position, rank and world, and what the DataLoader says of its
    dataset and sampler (nothing when it is gone)."""
    li = it.__dict__.get("_tp_loader")
    li = li if li is not None else -1
    rank, world = _rank_world()
    body = {"loader": max(li, 0), "epoch": max(S.epochs.get(li, 0), 0), "pos": pos,
            "rank": rank, "world": world, "dataset_len": None, "sampler": None,
            "total_size": None, "drop_last": False}
    dl = it.__dict__.get("_tp_dl")
    dl = dl() if dl is not None else None
    if dl is not None:
        try:
            body["dataset_len"] = len(dl.dataset)
        except Exception:
            pass
        order = it.__dict__.get("_tp_order")  # the same for every batch of it
        if order is None:
            try:
                s = _order_sampler(dl)
            except Exception:  # a user batch sampler's attribute that raises
                s = dl.sampler
            n = getattr(s, "total_size", None)
            order = it._tp_order = (type(s).__name__,
                                    n if isinstance(n, int) and not isinstance(n, bool) else None)
        body["sampler"], body["total_size"] = order
        body["drop_last"] = bool(dl.drop_last)
    return body


def _order_sampler(dl):
    """The sampler that orders dl's samples.  Given a batch_sampler, the
    DataLoader's own .sampler is a SequentialSampler it never draws from:
    accelerate's prepared loader wraps the user's BatchSampler (and its
    RandomSampler) in BatchSamplerShard or SkipBatchSampler.  So through
    .batch_sampler, else .sampler, a few levels down, to the innermost; a
    batch sampler with neither orders the samples itself."""
    s = dl.sampler
    bs = getattr(dl, "batch_sampler", None)
    if bs is None or (type(bs) is S.torch.utils.data.BatchSampler and bs.sampler is s):
        return s
    o = bs
    for _ in range(6):
        inner = getattr(o, "batch_sampler", None)
        if inner is None:
            inner = getattr(o, "sampler", None)
        if inner is None or inner is o or not hasattr(inner, "__iter__"):
            break
        o = inner
    return o


def _on_loader_end(it):
    """Marks the end of an epoch: the iterator `it` is exhausted.  One
    `batch` event with end=True, no ids and pos = the batches it returned;
    only the first StopIteration of an iterator counts."""
    if _off():
        return
    try:
        if it.__dict__.get("_tp_ended") or it.__dict__.get("_tp_loader") is None:
            return
        it._tp_ended = True
        body = _loader_body(it, it.__dict__.get("_tp_pos", 0))
        body.update(ids=None, worker=None, end=True)
        _tp.emit("batch", body)
    except Exception:
        _fail("DataLoader end")


def _patch_dataloader(torch):
    import collections

    dlm = torch.utils.data.dataloader
    DL = dlm.DataLoader
    Base = dlm._BaseDataLoaderIter

    def after_init(self, r, a, k):
        _index(S.loaders, self)

    _wrap_method(DL, "__init__", after_init, "dl_init")

    oiter = DL.__iter__

    def __iter__(self):
        it = oiter(self)
        if _off():
            return it
        try:
            li = _index(S.loaders, self)
            S.epochs[li] = S.epochs.get(li, -1) + 1
            it._tp_loader = li
            it._tp_pos = 0
            it._tp_ended = False  # persistent workers reuse the iterator
            it._tp_dl = weakref.ref(self)
        except Exception:
            _fail("DataLoader.__iter__")
        return it

    if not _is_wrapped(oiter):
        DL.__iter__ = _wraps(oiter, __iter__)

    onext_index = Base.__dict__.get("_next_index")
    if onext_index is not None and not _is_wrapped(onext_index):

        def _next_index(self):
            idx = onext_index(self)
            try:
                self.__dict__.setdefault("_tp_fifo", collections.deque()).append([_ids_of(idx), None])
            except Exception:
                _fail("DataLoader._next_index")
            return idx

        Base._next_index = _wraps(onext_index, _next_index)

    MP = getattr(dlm, "_MultiProcessingDataLoaderIter", None)
    oput = MP.__dict__.get("_try_put_index") if MP is not None else None
    if oput is not None and not _is_wrapped(oput):

        def _try_put_index(self):
            before = self._send_idx
            r = oput(self)
            try:
                if self._send_idx > before:
                    fifo = self.__dict__.get("_tp_fifo")
                    if fifo:
                        fifo[-1][1] = int(self._task_info[before][0])
            except Exception:
                _fail("DataLoader._try_put_index")
            return r

        MP._try_put_index = _wraps(oput, _try_put_index)

    onext = Base.__dict__.get("__next__")
    if onext is not None and not _is_wrapped(onext):

        def __next__(self):
            try:
                data = onext(self)
            except StopIteration:
                _on_loader_end(self)
                raise
            if not _off():
                try:
                    _on_batch(self, data)
                except Exception:
                    _fail("DataLoader.__next__")
            return data

        Base.__next__ = _wraps(onext, __next__)


# ---- modules -----------------------------------------------------------


def _patch_module(torch):
    M = torch.nn.Module
    minit = M.__init__

    def __init__(self, *a, **k):
        minit(self, *a, **k)
        try:
            S.modules.append(weakref.ref(self))
        except Exception:
            pass

    if not _is_wrapped(minit):
        M.__init__ = _wraps(minit, __init__)
    mset = M.__dict__.get("__setstate__")
    if mset is not None and not _is_wrapped(mset):

        def __setstate__(self, state):
            mset(self, state)
            try:
                S.modules.append(weakref.ref(self))
            except Exception:
                pass

        M.__setstate__ = _wraps(mset, __setstate__)
    _wrap_method(M, "load_state_dict", _restore_hook("module", None))


# ---- boot -----------------------------------------------------------------

_orig_get_rng_state = None


def _hello(torch):
    npm = sys.modules.get("numpy")
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    spawned = any("multiprocessing" in str(x) and "spawn" in str(x) for x in argv) or "--multiprocessing-fork" in argv
    _tp.emit(
        "hello",
        {
            "schema": 1,
            "agent": AGENT_VERSION,
            "python": sys.version.split()[0],
            "torch": str(torch.__version__),
            "numpy": str(npm.__version__) if npm is not None and hasattr(npm, "__version__") else None,
            "argv": [str(x) for x in argv],
            "cwd": os.getcwd(),
            "exe": sys.executable,
            "role": "spawned" if spawned else "main",
            "rank": _env_int("RANK", -1),
            "world": _env_int("WORLD_SIZE", 1),
            "local_rank": _env_int("LOCAL_RANK", -1),
            "ppid": os.getppid(),
            "interrupt_at": _cfg["interrupt_at"],
            "capture": _cfg["capture"],
            "hash_threads": _tp.hash_threads(),
        },
    )
    S.hello = True


def _on_torch(torch):
    global _orig_get_rng_state
    if S.torch is not None or _off():
        return
    S.torch = torch
    _orig_get_rng_state = torch.get_rng_state
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
    if not S.hello or _off():
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
