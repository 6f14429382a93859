# SPDX-License-Identifier: MIT
# data.py -- DataLoader: a `batch` event per batch a training loop
# receives, with the sampler's indices (or --sample-id's IDs), the worker
# that loaded it, its loader, epoch and position, and an end mark when an
# epoch's iterator runs out.
import operator
import weakref

from . import events as _ev
from .core import _tp, S, _fail, _index, _is_wrapped, _off, _wrap_method, _wraps
from .config import _cfg
from .dist import _rank_world


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


# --sample-id: a Python expression over `batch` giving its stable sample IDs
# (trainparity-run sets TRAINPARITY_SAMPLE_ID).  Compiled once; a bad
# expression is an agent error (the verdict is then ERROR, never a guess).
_SAMPLE_ID = _cfg.get("sample_id") or None


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
    _tp.emit("batch", _ev.batch(**body))


def _loader_body(it, pos):
    """What a batch event and an epoch's end share: the loader, its epoch,
    the position, rank and world, and what the DataLoader says of its
    dataset and sampler (nothing when it is gone); keyword arguments of
    events.batch."""
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
            try:
                shard = _shard(dl)
            except Exception:  # an attribute that raises: no shard said
                shard = None
            order = it._tp_order = (type(s).__name__, _int_or_none(n), shard)
        body["sampler"], body["total_size"] = order[0], order[1]
        body["drop_last"] = bool(dl.drop_last)
        if order[2] is not None:
            body.update(order[2])
    return body


def _int_or_none(n):
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _shard(dl):
    """What accelerate's BatchSamplerShard, when it deals dl's batches, says
    of how it deals them (keyword arguments of events.batch), or None.  Its
    even_batches fills the epoch's last batches from the epoch's first
    samples: the coverage check infers that padding from these."""
    bs = getattr(dl, "batch_sampler", None)
    if bs is None or type(bs).__name__ != "BatchSamplerShard":
        bs = getattr(dl, "sampler", None)  # accelerate passes a batch sampler as sampler=
        if bs is None or type(bs).__name__ != "BatchSamplerShard":
            return None
    ranks = _int_or_none(getattr(bs, "num_processes", None))
    if ranks is None:
        return None
    return {"shard": "split" if getattr(bs, "split_batches", False) else "batches",
            "shard_batch": _int_or_none(getattr(bs, "batch_size", None)),
            "shard_ranks": ranks, "shard_even": bool(getattr(bs, "even_batches", False)),
            "shard_drop_last": bool(getattr(bs, "drop_last", False))}


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
        _tp.emit("batch", _ev.batch(**body))
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

