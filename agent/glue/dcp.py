# SPDX-License-Identifier: MIT
# dcp.py -- torch.distributed.checkpoint (DCP, the format torchtitan and
# FSDP2 use): one dcp.save is one checkpoint, a directory (.metadata and
# the __<rank>_<n>.distcp files), however many torch.save calls DCP makes
# inside it; one dcp.load is one load of it.  Each is a `save` or `load`
# event with api `dcp`, target `dir`, the directory's path, the digest of
# its whole content (every file, by name and content) and a manifest of
# the state dict as DCP wrote or filled it (the state_dict() of each
# Stateful, as DCP takes it).  The load event goes out once DCP has filled
# the tensors and before it hands them to the Stateful objects'
# load_state_dict, so those restores follow the load they came from.
# Feature-detected: nothing is patched where DCP is absent (torch 1.13).
import os
import sys
import threading

from .core import _tp, S, _depth, _enter, _fail, _leave, _off, _wraps, _is_wrapped
from .save import _observe_save, _after_load

_dcp = threading.local()


def _dir_of(a, k, io_key):
    """The checkpoint directory of a dcp.save / dcp.load call: checkpoint_id,
    else the storage writer's or reader's path; None when there is none (a
    storage that is not a directory)."""
    cid = k.get("checkpoint_id")
    if cid is None:
        io = k.get(io_key) or (a[1] if len(a) > 1 else None)
        cid = getattr(io, "path", None) if io is not None else None
    if cid is None:
        return None
    try:
        p = os.fsdecode(os.fspath(cid))
    except TypeError:
        return None
    return os.path.abspath(p) if os.path.isdir(p) else None


def _dir_content(path):
    """(digest, bytes) of a DCP directory's whole content: every regular
    file in it, by name and content digest, in name order; (None, None)
    when it cannot be read."""
    try:
        names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
    except OSError:
        return None, None
    parts, total = [], 0
    for n in names:
        r = _tp.ckpt_file(os.path.join(path, n))
        if r is None:
            return None, None
        parts.append(n.encode("utf-8", "surrogateescape") + b"\0" + bytes(r[0]))
        total += r[2] or 0
    r = _tp.ckpt_bytes(b"\n".join(parts))
    return (r[0] if r is not None else None), total


def _body(path, error):
    digest, total = _dir_content(path) if path is not None else (None, None)
    return {"api": "dcp", "target": "dir", "name": path, "digest": digest,
            "via": "files" if digest is not None else "none", "records": [],
            "bytes": total, "error": error}


def _wrap_inner(mod, name, slot):
    """Wraps DCP's inner _save_state_dict / _load_state_dict to keep the state
    dict it is given (the Stateful objects' state_dict(), as DCP writes or
    fills it) for the outer call; a load's event goes out when it returns."""
    orig = mod.__dict__.get(name) if mod is not None else None
    if orig is None or _is_wrapped(orig):
        return

    def fn(*a, **k):
        op = getattr(_dcp, "op", None)
        if op is None or _off():
            return orig(*a, **k)
        sd = a[0] if a else k.get("state_dict")
        r = orig(*a, **k)
        try:
            op[slot] = sd
            if slot == "loaded":
                _emit_load(op, sd, None)
        except Exception:
            _fail("torch.distributed.checkpoint." + name)
        return r

    setattr(mod, name, _wraps(orig, fn))


def _emit_load(op, sd, error):
    if op.get("sent"):
        return
    op["sent"] = True
    body = _body(op["dir"], error)
    _after_load(body, [("", sd)] if error is None and sd is not None else [])


def _outer(orig, kind):
    cat = "save" if kind == "save" else "load"

    def fn(*a, **k):
        if _depth(cat) or _off():
            return orig(*a, **k)
        _enter(cat)
        op = {"dir": None}
        prev = getattr(_dcp, "op", None)
        _dcp.op = op
        try:
            try:
                op["dir"] = _dir_of(a, k, "storage_writer" if kind == "save" else "storage_reader")
                sd_arg = a[0] if a else k.get("state_dict")
            except Exception:
                sd_arg = None
                _fail("torch.distributed.checkpoint." + kind)
            try:
                r = orig(*a, **k)
            except BaseException as e:
                _finish(kind, op, sd_arg, repr(e)[:500], a, k)
                raise
            _finish(kind, op, sd_arg, None, a, k)
            return r
        finally:
            _dcp.op = prev
            _leave(cat)

    return _wraps(orig, fn)


def _finish(kind, op, sd_arg, error, a, k):
    try:
        if op["dir"] is None:
            op["dir"] = _dir_of(a, k, "storage_writer" if kind == "save" else "storage_reader")
        if op["dir"] is None:
            return  # not a directory: nothing to name or move aside
        if kind == "save":
            sd = op.get("saved", sd_arg)
            _observe_save("dcp", sd, None, None, error, body=_body(op["dir"], error))
        else:
            _emit_load(op, op.get("loaded", sd_arg), error)
    except Exception:
        _fail("torch.distributed.checkpoint." + kind)


def _patch_dcp(dcp):
    """Wraps dcp.save / save_state_dict and dcp.load / load_state_dict (the
    package's names and the modules that define them), and DCP's inner
    functions that take the state dict as it is written or filled."""
    if S.torch is None or _off():
        return
    saver = sys.modules.get("torch.distributed.checkpoint.state_dict_saver")
    loader = sys.modules.get("torch.distributed.checkpoint.state_dict_loader")
    _wrap_inner(saver, "_save_state_dict", "saved")
    _wrap_inner(loader, "_load_state_dict", "loaded")
    for mod, names, kind in ((saver, ("save", "save_state_dict"), "save"),
                             (loader, ("load", "load_state_dict"), "load")):
        for name in names:
            orig = getattr(mod, name, None) if mod is not None else None
            if orig is None:
                continue
            if _is_wrapped(orig):
                w = orig
            else:
                w = _outer(orig, kind)
                setattr(mod, name, w)
            if getattr(dcp, name, None) is orig:
                setattr(dcp, name, w)
