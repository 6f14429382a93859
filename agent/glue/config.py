# SPDX-License-Identifier: MIT
# config.py -- the glue's one reader of its configuration.
#
# Every TRAINPARITY_* setting is parsed once, by agent/config.c in the
# library's constructor, and handed over by _tp.config() (agent/bridge.c,
# py_config): nothing else in the glue reads one from os.environ.  _cfg
# holds
#   run, exec        the run and execution ids
#   role             the execution's role label
#   interrupt_at     TRAINPARITY_INTERRUPT_AT, None when unset
#   capture          "values" or "digests" (TRAINPARITY_CAPTURE)
#   update_norm      TRAINPARITY_UPDATE_NORM=1: exact update norms
#   update_every     TRAINPARITY_UPDATE_EVERY=N: those norms only at the
#                    steps that are multiples of N (health --every N); 1
#                    when unset or not a whole number >= 1
#   debug            TRAINPARITY_DEBUG=1
#   sample_id        TRAINPARITY_SAMPLE_ID (--sample-id), None when unset
#   loss_counts      TRAINPARITY_LOSS_COUNTS=1 (the accumulation check)
#   disable_dropout  TRAINPARITY_DISABLE_DROPOUT=1 (the user asked for it)
#   induction        TRAINPARITY_DIGEST=induction: the model's tensors and
#                    the optimizer's state digested at boundaries only
#                    (state.py, _full_now; docs/induction.md)
#   full_from, full_to  TRAINPARITY_FULL_STEPS=LO-HI: every snapshot of
#                    those steps full (None when unset)
#   full_every       TRAINPARITY_FULL_EVERY=K: induction's full snapshot
#                    every Kth step (0: none; 100 when unset)
# The launcher's variables (RANK, WORLD_SIZE, LOCAL_RANK) are facts of the
# process, not settings: _env_int reads them when asked, as a script may set
# them itself before it initialises torch.distributed.
import os

from .core import _tp

_cfg = _tp.config()


def _env_int(name, default):
    """The launcher's variable `name` as an int; default when unset or not
    an integer."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default
