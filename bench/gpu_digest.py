# SPDX-License-Identifier: MIT
# gpu_digest.py BUILD -- the device digest (BUILD/lib/libtpagent_cuda.so,
# agent/cuda/tpcuda.h) against its host reference, and its speed against a
# device-to-device copy.  Needs a CUDA device: elsewhere it prints SKIP and
# exits 0.
#
# Correctness: for every element kind the library knows (agent/cuda/
# devdigest.h) that this torch has, tensors of 0, 1, ... 17 elements, one
# 16 KiB chunk and a byte either side, 256 chunks either side, 2^20 + 3
# elements and 64 MiB, filled with random values (the floats with NaN,
# +-inf, -0, subnormals and the largest finite values among them) and with
# random bits, and views x[k:] whose data is not 16-byte aligned, are
# digested on torch's current stream (tpcu_enqueue, then one tpcu_collect
# per kind) and by tpcu_reference over the same bytes copied to the host.
# The 48 bytes of the results must be equal (lanes, sum, sum of squares,
# max |x|, non-finite count); a NaN statistic may differ in its payload
# only (an overflowed sum: the host's and the device's default NaN differ).
# The statistics are also checked against torch's own: the non-finite
# count and max |x| exactly, the sums to a relative 1e-9 (another order).
# Any mismatch is printed and the exit status is 1.
#
# Throughput: one digest (enqueue + collect) of a 1 GiB uint8 and a 1 GiB
# float32 tensor against dst.copy_(src) of the same bytes, and 200 tensors
# of 256 KiB in one collect against their 200 copies (the cost per launch):
# CUDA events, medians of 20 after 3 warm-ups.  Prints copy time / digest
# time (target >= 0.8) and the digest's GB/s, then the figures as JSON on
# its last line.
import ctypes
import json
import math
import os
import statistics
import struct
import sys

import torch

TARGET = 0.8  # copy time / digest time
BIG = 1 << 30  # bytes of the large tensors timed
WARM, REPS = 3, 20
CHUNK = 16384  # bytes per block of the kernels (TPA_DEV1_CHUNK)
KINDS = [("float32", 1), ("float64", 2), ("float16", 3), ("bfloat16", 4), ("int8", 5),
         ("int16", 6), ("int32", 7), ("int64", 8), ("uint8", 9), ("uint16", 10),
         ("uint32", 11), ("uint64", 12), ("bool", 13)]
FLOATS = {1, 2, 3, 4}
DEV = "cuda"


class Part(ctypes.Structure):
    """tpa_dev1_part: 48 bytes."""
    _fields_ = [("lane", ctypes.c_ulonglong * 2), ("sum", ctypes.c_double),
                ("sq", ctypes.c_double), ("mx", ctypes.c_double), ("nf", ctypes.c_ulonglong)]


def load(build):
    path = os.path.join(build, "lib", "libtpagent_cuda.so")
    if not os.path.exists(path):
        sys.exit("gpu_digest: FAIL: %s is not built" % path)
    lib = ctypes.CDLL(path)
    why = ctypes.c_size_t
    lib.tpcu_open.argtypes = [ctypes.c_char_p, why]
    lib.tpcu_open.restype = ctypes.c_int
    lib.tpcu_enqueue.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_char_p, why]
    lib.tpcu_enqueue.restype = ctypes.c_int
    lib.tpcu_collect.argtypes = [ctypes.POINTER(Part), ctypes.c_size_t, ctypes.c_char_p, why]
    lib.tpcu_collect.restype = ctypes.c_int
    lib.tpcu_reference.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.POINTER(Part)]
    lib.tpcu_reference.restype = None
    lib.tpcu_images.argtypes = []
    lib.tpcu_images.restype = ctypes.c_char_p
    return lib


class Dev:
    """The library with torch's current stream: enqueue, collect."""

    def __init__(self, lib):
        self.lib = lib
        self.why = ctypes.create_string_buffer(512)

    def open(self):
        if self.lib.tpcu_open(self.why, len(self.why)) != 0:
            sys.exit("gpu_digest: FAIL: tpcu_open: %s" % self.why.value.decode(errors="replace"))

    def enqueue(self, t, dt):
        """The slot of t's digest, or the reason the library refused it."""
        s = torch.cuda.current_stream(t.device)
        slot = self.lib.tpcu_enqueue(ctypes.c_void_p(t.data_ptr() or None),
                                     t.numel() * t.element_size(), dt, t.device.index or 0,
                                     ctypes.c_void_p(s.cuda_stream or None), self.why,
                                     len(self.why))
        return slot if slot >= 0 else self.why.value.decode(errors="replace")

    def collect(self, n):
        out = (Part * max(n, 1))()
        if self.lib.tpcu_collect(out, n, self.why, len(self.why)) != 0:
            return self.why.value.decode(errors="replace")
        return out

    def reference(self, cpu, dt):
        r = Part()
        self.lib.tpcu_reference(ctypes.c_void_p(cpu.data_ptr() or None),
                                cpu.numel() * cpu.element_size(), dt, ctypes.byref(r))
        return r


def counts(es):
    """Element counts: small ones around the 8-byte pairs and the 16-byte
    vectors, one chunk and a byte either side, 256 chunks (the final
    reduction's stride) either side, 2^20 + 3, and 64 MiB."""
    c = CHUNK // es
    small = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33]
    chunky = [(CHUNK - 1) // es, c, (CHUNK + es) // es, 2 * c + 1, 256 * c - 1, 256 * c + 1,
              (1 << 20) + 3, (64 << 20) // es]
    return sorted(set(small + chunky))


def contents(dtype, dt, n, bits, gen):
    """n elements on the device: random bits, or for the floats random
    values of many magnitudes with the special values among them."""
    dev = DEV
    es = torch.empty(0, dtype=dtype).element_size()
    if dt == 13:
        return torch.randint(0, 2, (n,), dtype=torch.uint8, device=dev, generator=gen).view(dtype)
    if bits or dt not in FLOATS:
        raw = torch.randint(0, 256, (n * es,), dtype=torch.uint8, device=dev, generator=gen)
        return raw.view(dtype)
    work = torch.float64 if dt == 2 else torch.float32
    x = torch.randn(n, dtype=work, device=dev, generator=gen)
    e = 6 if dt == 3 else 30  # float16: up to 2^10 or so, most of them finite
    x *= torch.pow(2.0, torch.randint(-e, e, (n,), device=dev, generator=gen).to(work))
    x = x.to(dtype)
    fi = torch.finfo(dtype)
    special = [math.nan, math.inf, -math.inf, -0.0, fi.tiny / 4, -fi.tiny / 2, fi.max, fi.tiny]
    k = min(len(special), n // 2)
    if k:
        at = torch.randperm(n, device=dev, generator=gen)[:k]
        x[at] = torch.tensor(special[:k], dtype=dtype, device=dev)
    return x


def torch_stats(cpu, dt):
    """(sum, sq, mx, nf, bound) of cpu's elements as the digest defines them,
    computed by torch in float64 (bound: what the order of the additions
    can change the sums by), or None where this torch cannot."""
    if dt == 0:
        return 0.0, 0.0, 0.0, 0, 0.0
    try:
        if dt in (10, 11, 12):  # torch's unsigned kinds, through int64
            x = cpu.view({10: torch.int16, 11: torch.int32, 12: torch.int64}[dt]).to(torch.int64)
            if dt != 12:
                d = (x & (0xFFFF if dt == 10 else 0xFFFFFFFF)).double()
            else:  # two exact halves, one rounding: as C converts a uint64_t
                d = ((x >> 32) & 0xFFFFFFFF).double() * 2.0 ** 32 + (x & 0xFFFFFFFF).double()
        else:
            d = cpu.double()
    except (RuntimeError, TypeError):
        return None
    fin = torch.isfinite(d)
    f = d[fin]
    mx = f.abs().max().item() if f.numel() else 0.0
    sq = (f * f).sum().item()
    # recursive summation in any order: |error| <= (n - 1) eps sum|x| (squares: exact products)
    bound = (f.numel() + 1) * 2.0 ** -52 * (f.abs().sum().item() + sq)
    return f.sum().item(), sq, mx, int((~fin).sum().item()), bound


def raw(p):
    return ctypes.string_at(ctypes.addressof(p), ctypes.sizeof(p))


def show(p):
    return "lanes %016x %016x sum %s sq %s mx %s nf %d" % (
        p.lane[0], p.lane[1], float.hex(p.sum), float.hex(p.sq), float.hex(p.mx), p.nf)


def same_stat(a, b):
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


def close(a, b, bound):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return True  # overflowed: the order of the additions decides
    return abs(a - b) <= bound


class Tally:
    def __init__(self):
        self.cases = self.mismatches = self.notes = 0

    def bad(self, label, text):
        self.mismatches += 1
        print("MISMATCH %s: %s" % (label, text), flush=True)

    def note(self, label, text):
        self.notes += 1
        if self.notes <= 20:
            print("note %s: %s" % (label, text), flush=True)


def verify(dev, tally, label, t, dt, got):
    cpu = t.cpu().contiguous()
    ref = dev.reference(cpu, dt)
    tally.cases += 1
    if raw(got) != raw(ref):
        if (tuple(got.lane) == tuple(ref.lane) and got.nf == ref.nf and
                all(same_stat(getattr(got, f), getattr(ref, f)) for f in ("sum", "sq", "mx"))):
            tally.note(label, "equal but for a NaN payload: device %s, host %s"
                       % (show(got), show(ref)))
        else:
            tally.bad(label, "device %s\n    host   %s" % (show(got), show(ref)))
            return
    want = torch_stats(cpu, dt)
    if want is None:
        return
    s, sq, mx, nf, bound = want
    if (ref.nf != nf or not same_stat(ref.mx, mx) or not close(ref.sum, s, bound) or
            not close(ref.sq, sq, bound)):
        tally.bad(label, "digest statistics %s; torch's sum %r sq %r mx %r nf %d"
                  % (show(ref), s, sq, mx, nf))
    elif t.numel() * t.element_size() >= 8 and ref.lane[0] == 0 and ref.lane[1] == 0:
        tally.bad(label, "both lanes are zero")


def run_batch(dev, tally, cases):
    """Enqueues every (label, tensor, dt), collects once, verifies."""
    slots = []
    for label, t, dt in cases:
        r = dev.enqueue(t, dt)
        if isinstance(r, str):
            tally.cases += 1
            tally.bad(label, "tpcu_enqueue refused it: %s (ptr %% 16 = %d)"
                      % (r, t.data_ptr() % 16))
        else:
            slots.append((r, label, t, dt))
    out = dev.collect(len(slots))
    if isinstance(out, str):
        for _, label, _, _ in slots:
            tally.cases += 1
            tally.bad(label, "tpcu_collect failed: %s" % out)
        return
    for k, (slot, label, t, dt) in enumerate(slots):
        if slot != k:
            tally.bad(label, "slot %d, expected %d (enqueue order)" % (slot, k))
        verify(dev, tally, label, t, dt, out[k])


def correctness(dev):
    tally = Tally()
    gen = torch.Generator(device=DEV).manual_seed(1234)
    kinds = [(getattr(torch, name), name, dt) for name, dt in KINDS if hasattr(torch, name)]
    missing = [name for name, _ in KINDS if not hasattr(torch, name)]
    if missing:
        print("this torch has no %s: not checked" % ", ".join(missing), flush=True)
    # digest only (kind 0): bytes of any tensor, here uint8 and, if present, complex64
    kinds.append((torch.uint8, "other(uint8)", 0))
    if hasattr(torch, "complex64"):
        kinds.append((torch.complex64, "other(complex64)", 0))
    for dtype, name, dt in kinds:
        es = torch.empty(0, dtype=dtype).element_size()
        cases = []
        for n in counts(es):
            variants = [False, True] if dt in FLOATS and n <= (4 << 20) else [False]
            for bits in variants:
                if dtype == torch.complex64:
                    t = contents(torch.float32, 1, 2 * n, bits, gen).view(dtype)
                else:
                    t = contents(dtype, dt, n, bits, gen)
                cases.append(("%s n=%d%s" % (name, n, " bits" if bits else ""), t, dt))
        # views whose data is not 16-byte aligned
        for n in (1, 9, 17, CHUNK // es + 1, (1 << 20) + 3):
            for k in (1, 3):
                if (k * es) % 16 == 0:
                    continue
                if dtype == torch.complex64:
                    base = contents(torch.float32, 1, 2 * (n + k), False, gen).view(dtype)
                else:
                    base = contents(dtype, dt, n + k, False, gen)
                v = base[k:]
                cases.append(("%s n=%d view [%d:] (ptr %% 16 = %d)"
                              % (name, n, k, v.data_ptr() % 16), v, dt))
        run_batch(dev, tally, cases)
        print("  %-18s %3d cases checked" % (name, len(cases)), flush=True)
        del cases
        torch.cuda.empty_cache()
    return tally


def median_ms(fn):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def digest_fn(dev, tensors, dt, check=None):
    def fn():
        n = 0
        for t in tensors:
            r = dev.enqueue(t, dt)
            if isinstance(r, str):
                sys.exit("gpu_digest: FAIL: tpcu_enqueue: %s" % r)
            n += 1
        out = dev.collect(n)
        if isinstance(out, str):
            sys.exit("gpu_digest: FAIL: tpcu_collect: %s" % out)
        if check is not None:
            check.append(out[0])
    return fn


def throughput(dev, tally):
    res = {}
    gen = torch.Generator(device=DEV).manual_seed(99)
    big = {"uint8": (torch.randint(0, 256, (BIG,), dtype=torch.uint8, device=DEV,
                                   generator=gen), 9),
           "float32": (torch.randn(BIG // 4, device=DEV, generator=gen), 1)}
    for name, (src, dt) in big.items():
        dst = torch.empty_like(src)
        nbytes = src.numel() * src.element_size()
        got = []
        d_ms = median_ms(digest_fn(dev, [src], dt, got))
        c_ms = median_ms(lambda: dst.copy_(src))
        # the kernels alone: the end event queued right behind them
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        k = []
        for _ in range(REPS):
            e0.record()
            if isinstance(dev.enqueue(src, dt), str):
                break
            e1.record()
            dev.collect(1)
            k.append(e0.elapsed_time(e1))
        if dt == 1:  # (the host reference of 1 GiB of bytes takes too long)
            verify(dev, tally, "%s %d MiB" % (name, nbytes >> 20), src, dt, got[-1])
        res["%s_1GiB" % name] = {
            "digest_ms": d_ms, "kernels_ms": statistics.median(k) if k else None,
            "copy_ms": c_ms, "ratio": c_ms / d_ms, "digest_GBps": nbytes / d_ms / 1e6,
            "copy_GBps": 2 * nbytes / c_ms / 1e6}
        del dst
    del big
    torch.cuda.empty_cache()
    srcs = [torch.randn(1 << 16, device=DEV, generator=gen) for _ in range(200)]
    dsts = [torch.empty_like(s) for s in srcs]

    def copies():
        for s, d in zip(srcs, dsts):
            d.copy_(s)

    d_ms = median_ms(digest_fn(dev, srcs, 1))
    c_ms = median_ms(copies)
    res["many_256KiB_x200"] = {"digest_ms": d_ms, "copy_ms": c_ms, "ratio": c_ms / d_ms,
                               "digest_us_per_tensor": 1e3 * d_ms / len(srcs),
                               "digest_GBps": 200 * (256 << 10) / d_ms / 1e6}
    return res


def main(build):
    if not torch.cuda.is_available():
        print("SKIP gpu_digest: no CUDA device here (torch %s)" % torch.__version__)
        return 0
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    lib = load(build)
    dev = Dev(lib)
    dev.open()
    name = torch.cuda.get_device_name()
    print("gpu_digest: %s, torch %s (CUDA %s), kernel images: %s"
          % (name, torch.__version__, torch.version.cuda, lib.tpcu_images().decode()), flush=True)
    tally = correctness(dev)
    print("correctness: %d cases, %d mismatches, %d notes"
          % (tally.cases, tally.mismatches, tally.notes), flush=True)
    res = throughput(dev, tally)
    for k, v in res.items():
        print("throughput %-18s digest %.3f ms (%.0f GB/s), copy %.3f ms: copy/digest %.3f "
              "(target >= %.1f: %s)%s"
              % (k, v["digest_ms"], v["digest_GBps"], v["copy_ms"], v["ratio"], TARGET,
                 "met" if v["ratio"] >= TARGET else "NOT met",
                 "" if v.get("kernels_ms") is None else "; kernels alone %.3f ms"
                 % v["kernels_ms"]), flush=True)
    ok = tally.mismatches == 0
    print(json.dumps({"bench": "gpu_digest", "device": name, "torch": torch.__version__,
                      "cuda": torch.version.cuda, "images": lib.tpcu_images().decode(),
                      "cases": tally.cases, "mismatches": tally.mismatches,
                      "notes": tally.notes, "correct": ok, "target": TARGET,
                      "target_met": all(v["ratio"] >= TARGET for v in res.values()),
                      "throughput": res}))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_digest.py BUILD")
    sys.exit(main(os.path.abspath(sys.argv[1])))
