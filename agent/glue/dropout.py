# SPDX-License-Identifier: MIT
# dropout.py -- TRAINPARITY_DISABLE_DROPOUT=1: the functional dropouts and
# fused attention's dropout_p turned off, nothing else changed.
from .config import _cfg
from .core import _is_wrapped, _wraps


def _patch_dropout(torch):
    """Only with TRAINPARITY_DISABLE_DROPOUT=1 (the user asked for it): the
    functional dropouts, which nn.Dropout and friends call, see training=False
    and return their input, as in eval mode; fused attention (SDPA, which HF
    models call, and the function nn.MultiheadAttention calls) gets
    dropout_p=0.0; nothing else changes."""
    if not _cfg["disable_dropout"]:
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

