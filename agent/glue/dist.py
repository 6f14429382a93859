# SPDX-License-Identifier: MIT
# dist.py -- the process's place among the ranks: torch.distributed's
# rank and world size once it is initialised, else the launcher's.
from .core import S
from .config import _env_int


def _rank_world():
    torch = S.torch
    try:
        d = torch.distributed
        if d.is_available() and d.is_initialized():
            return d.get_rank(), d.get_world_size()
    except Exception:
        pass
    return _env_int("RANK", -1), _env_int("WORLD_SIZE", 1)


def _launcher():
    """The launcher's RANK, WORLD_SIZE and LOCAL_RANK (-1, 1, -1 when unset)."""
    return _env_int("RANK", -1), _env_int("WORLD_SIZE", 1), _env_int("LOCAL_RANK", -1)

