# SPDX-License-Identifier: MIT
# save.py -- checkpoints: torch.save/torch.load (the records libtorch
# writes or reads, else the file's or buffer's content) and safetensors'
# save/load, each a `save` or `load` event with the checkpoint's digest and
# a manifest of the object; the snapshot at a save; and arming the
# interruption that resume asks for (TRAINPARITY_INTERRUPT_AT).
import os

from .core import _tp, S, _depth, _enter, _fail, _is_wrapped, _leave, _off, _wrap_function, _wraps
from . import events as _ev
from .config import _cfg
from .state import _snapshot


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


def _io_body(api, f, recs, use_records, data, error):
    """What a save and a load event share: where, what content, how
    (keyword arguments of events.save and events.load)."""
    target, name = _target(f) if f is not None else ("buffer", None)
    digest, via, records, nbytes = _content(f, recs, use_records, data)
    return {
        "api": api,
        "target": target,
        "name": name,
        "digest": digest,
        "via": via,
        "records": records,
        "bytes": nbytes,
        "error": error,
    }


def _observe_save(api, obj, f, recs, error, data=None, body=None):
    """A `save` event (body: where and what content, _io_body's unless given,
    as dcp.py gives a directory's), the snapshot at the save, and the
    interruption armed when resume asked for one at or after this step."""
    if body is None:
        body = _io_body(api, f, recs, api == "torch", data, error)
    at = _cfg["interrupt_at"]
    armed = at is not None and not S.armed and error is None and S.step >= at
    _tp.emit("save", _ev.save(armed=armed, **body), "manifest", [("", obj)], True)
    S.boundary = True
    if S.save_snap_step != S.step:
        S.save_snap_step = S.step
        _snapshot("save")
    if armed:
        S.armed = True


def _observe_load(api, f, recs, result, error, use_records, data=None):
    body = _io_body(api, f, recs, use_records, data, error)
    _after_load(body, [("", result)] if error is None else [])


def _after_load(body, items):
    """A `load` event (body: where and what content; items: its manifest);
    the next start-of-step snapshot is a boundary."""
    seq = _tp.emit("load", _ev.load(**body), "manifest", items, True)
    S.boundary = True
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

