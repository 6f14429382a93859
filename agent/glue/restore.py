# SPDX-License-Identifier: MIT
# restore.py -- restores: a load_state_dict, an RNG setter or seed.  Each
# is a `restore` event naming the object, the latest load before it and who
# called it, with a manifest of what was restored so that the daemon can
# tell a checkpoint's content from state kept elsewhere.
from .core import _tp, S, _arg0, _caller, _index, _indexed, _live
from . import events as _ev
from .state import _module_path


_NO_ARG = object()


def _emit_restore(what, obj, op, missing=None, unexpected=None, seed=None, arg=_NO_ARG):
    """A restore: a load_state_dict, an RNG setter or seed.  `arg` is what was
    restored; its manifest lets the daemon tell whether it came from a
    checkpoint that was loaded (its content matches) or from elsewhere (the
    object's own state, a state saved in memory).  A load_state_dict that
    reported missing or unexpected keys (strict=False) also sends how many
    keys it was given: one that matched none of them restored nothing."""
    S.boundary = True
    if not S.hello:
        return
    kw = {}
    if missing:
        missing = [str(x) for x in missing]
        kw["missing"] = missing[:200]
        kw["nmissing"] = len(missing)
    if unexpected:
        unexpected = [str(x) for x in unexpected]
        kw["unexpected"] = unexpected[:200]
        kw["nunexpected"] = len(unexpected)
    if (missing or unexpected) and arg is not _NO_ARG:
        try:
            kw["keys"] = len(arg)
        except Exception:
            pass  # not a mapping with a length: the daemon counts no keys
    if seed is not None:
        kw["seed"] = seed
    body = _ev.restore(what, obj, op, load=S.last_load, caller=_caller(), **kw)
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

