# SPDX-License-Identifier: MIT
# modules.py -- the nn.Module registry: every module created or unpickled,
# in creation order (state.py names the trained ones), and their
# load_state_dict restores.
import weakref

from .core import S, _is_wrapped, _wrap_method, _wraps
from .restore import _restore_hook


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

