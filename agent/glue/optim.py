# SPDX-License-Identifier: MIT
# optim.py -- optimizers: Optimizer.step (a `step` event before, with the
# gradients, and one after), step(closure), zero_grad (which, set_to_none)
# and gradient clipping.  An optimizer's step is what counts training steps
# (core._advance).
import weakref

from .core import (
    _tp, S, _advance, _arg0, _depth, _enter, _fail, _index, _indexed, _interrupt, _is_wrapped,
    _leave, _off, _wrap_function, _wrap_method, _wraps)
from . import events as _ev
from .config import _cfg
from .state import _any_roots, _param_names, _roots
from .restore import _restore_hook


def _measured():
    """Whether the update of the step under way is measured: update norms
    asked for (TRAINPARITY_UPDATE_NORM=1), at a step that is a multiple of
    TRAINPARITY_UPDATE_EVERY (S.step stays the same from the step's pre
    event to its post)."""
    return _cfg["update_norm"] and S.step % _cfg["update_every"] == 0


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
        idx = _index(S.optimizers, opt)
        sig = (len(opt.param_groups), len(params))
        changed = S.covered.get(idx) != sig  # its first step, or add_param_group
        if changed:
            _Graded.key = None  # list the roots' parameters again
        if _graded_grew() or changed:
            S.covered[idx] = sig
            _cover(opt, idx)
        body = _ev.step("pre", idx, type(opt).__name__,
                        lrs=[float(g["lr"]) for g in opt.param_groups], nparams=len(params),
                        ngrads=len(grads), via=via)
        _tp.emit("step", body, "grads", grads)
        if _measured():
            _tp.update_begin(params)
        return params
    except Exception:
        _fail("optimizer.step")
        return None


class _Graded:
    """The parameters of the live root modules seen holding a gradient at a
    step's pre event (_graded_grew)."""

    key = None  # (len(S.modules), its last weakref) when `unseen` was listed
    unseen = []  # weakrefs of the roots' parameters never seen holding a gradient
    seen = {}  # id: weakref of each parameter seen holding one


def _graded_list(key):
    """Lists again the roots' parameters not seen holding a gradient (the
    module registry or an optimizer's param groups changed).  A parameter
    freed since it was seen is forgotten: a new one may take its id."""
    G = _Graded
    G.seen = {i: r for i, r in G.seen.items() if r() is not None}
    unseen, ids = [], set()
    for m in _any_roots():
        for p in m.parameters():
            if id(p) in ids or id(p) in G.seen:  # a live seen one holds its id
                continue
            ids.add(id(p))
            unseen.append(weakref.ref(p))
    G.unseen, G.key = unseen, key


def _graded_grew():
    """Whether a parameter of the live root modules holds a gradient now
    that held none at any earlier pre event of this process (a frozen one
    unfrozen with requires_grad_(True), a module first reached by the
    backward): then the optimizer stepping sends its cover event again, and
    the daemon finds such a parameter that no optimizer holds.  Only the
    parameters never seen with a gradient are looked at (`p.grad is not
    None`, no tensor read), from a list kept until the module registry
    changes: with every parameter trained, nothing at all.  Never raises."""
    G = _Graded
    mods = S.modules
    key = (len(mods), mods[-1] if mods else None)
    try:
        if G.key is None or G.key[0] != key[0] or G.key[1] is not key[1]:
            _graded_list(key)
        grew, gone = False, 0
        for r in G.unseen:
            p = r()
            if p is None:
                gone += 1
            elif p.grad is not None:
                G.seen[id(p)] = r
                grew, gone = True, gone + 1
        if gone:  # keep the rest; nothing is rebuilt while nothing changes
            G.unseen = [r for r in G.unseen if r() is not None and G.seen.get(id(r())) is not r]
        return grew
    except Exception:  # reported once: nothing more is looked at until the registry changes
        G.unseen, G.key = [], key
        _fail("optimizer.cover")
        return False


def _shape(t):
    return "x".join(str(d) for d in t.shape) or "-"


def _cover(opt, idx):
    """A `cover` event: which tensors optimizer idx steps, and which
    parameters of the live root modules hold a gradient now, just before its
    first step, and again when its param groups change (add_param_group) or
    when a parameter holds a gradient that held none at any earlier step
    (_graded_grew).
    The daemon's health check finds from them a trained parameter in no
    optimizer, a tensor in two, an optimizer built for tensors no backward
    reaches.  Parameters are named as the snapshot names them
    (`model.0.weight`); a root module that holds no optimizer's tensor is
    named by its class (`<Sequential>.0.weight`)."""
    names, order = {}, []
    trained = _roots()
    for i, m in enumerate(trained):
        pre = _indexed("model", i, len(trained))
        for n, p in m.named_parameters():
            if id(p) not in names:
                names[id(p)] = pre + "." + n
                order.append(p)
    for m in _any_roots():
        if any(m is t for t in trained):
            continue
        for n, p in m.named_parameters():
            if id(p) not in names:
                names[id(p)] = "<%s>.%s" % (type(m).__name__, n)
                order.append(p)
    pn, ids, groups, shapes = [], [], [], []
    for gi, g in enumerate(opt.param_groups):
        for p in g["params"]:
            pn.append(names.get(id(p), ""))
            ids.append(id(p))
            groups.append(gi)
            shapes.append(_shape(p))
    graded = [p for p in order if p.grad is not None]
    _tp.emit("cover", _ev.cover(idx, type(opt).__name__, pn, ids, groups, shapes,
                                [names[id(p)] for p in graded], [id(p) for p in graded],
                                [_shape(p) for p in graded]))


def _step_post(opt, params, skipped=False):
    try:
        idx, cls = _index(S.optimizers, opt), type(opt).__name__
        if skipped:
            body = _ev.step("post", idx, cls, skipped=True)
        elif params is not None and _measured():
            norm, changed = _tp.update_end(params)
            body = _ev.step("post", idx, cls, unorm=norm, changed=changed)
        else:
            body = _ev.step("post", idx, cls)
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
            # the class whose own step / zero_grad the instance runs
            mro = type(self).__mro__
            _wrap_opt_step(next(c for c in mro if "step" in c.__dict__))
            _wrap_zero_grad(next(c for c in mro if "zero_grad" in c.__dict__), "optimizer")
        except Exception:
            _fail("optimizer.__init__")

    Opt.__init__ = _wraps(oinit, __init__)
    _wrap_method(Opt, "load_state_dict", _restore_hook("optimizer", S.optimizers))


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
        stn = v if isinstance(v, bool) else None
        if which == "optimizer":
            body = _ev.zero_grad(which, opt=_index(S.optimizers, self), set_to_none=stn)
        else:
            body = _ev.zero_grad(which, set_to_none=stn)
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


def _patch_clip(torch):
    utils = torch.nn.utils
    cg = getattr(utils, "clip_grad", None)

    def norm_after(r, a, k):
        mx = a[1] if len(a) > 1 else k.get("max_norm")
        _tp.emit("clip", _ev.clip("norm", max=float(mx) if mx is not None else None, norm=float(r)))

    def value_after(r, a, k):
        mx = a[1] if len(a) > 1 else k.get("clip_value")
        _tp.emit("clip", _ev.clip("value", max=float(mx) if mx is not None else None, norm=None))

    for name, after in (("clip_grad_norm_", norm_after), ("clip_grad_value_", value_after)):
        w = _wrap_function(cg, name, after, "clip") if cg is not None else None
        if w is not None and getattr(utils, name, None) is getattr(w, "__wrapped__", None):
            setattr(utils, name, w)
        else:
            _wrap_function(utils, name, after, "clip")

