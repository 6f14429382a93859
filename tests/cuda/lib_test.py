# SPDX-License-Identifier: MIT
# lib_test.py BUILD -- libtpagent_cuda.so where there is no GPU: its kernel
# images are the architectures asked for and are the ones built in; it
# links no CUDA library; it refuses to start in a process that has no CUDA
# runtime loaded, and leaves it unloaded; with NVIDIA's runtime loaded (the
# wheel's), it resolves every function it uses and, without a device, says
# why it cannot launch, without harm.  (The kernels themselves run on a GPU:
# bench/gpu_digest.py.)
import ctypes
import os
import subprocess
import sys

BUILD = sys.argv[1]
LIB = os.path.join(BUILD, "lib", "libtpagent_cuda.so")
IMG = os.path.join(BUILD, "agent", "cuda")
KERNELS = ["tpa_dev1_final"] + ["tpa_dev1_chunks_" + k for k in (
    "other", "f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "bool")]


def cubin_arch(path):
    """The SM version an NVIDIA cubin is built for (ELF e_flags, low byte)."""
    b = open(path, "rb").read()
    assert b[:4] == b"\x7fELF" and b[4] == 2, path + ": not a 64-bit ELF"
    assert int.from_bytes(b[18:20], "little") == 190, path + ": not EM_CUDA"
    return int.from_bytes(b[48:52], "little") & 0xFF, b


def test_images():
    lib = open(LIB, "rb").read()
    for arch in (80, 90):
        sm, b = cubin_arch(os.path.join(IMG, "kernels_sm_%d.img" % arch))
        assert sm == arch, (arch, sm)
        for k in KERNELS:
            assert k.encode() + b"\0" in b, (arch, k)
        assert b in lib, "the sm_%d image is not the one built into %s" % (arch, LIB)
    ptx = open(os.path.join(IMG, "kernels_compute_80.img"), "rb").read()
    assert b".target sm_80" in ptx
    for k in KERNELS:
        assert (b".entry " + k.encode() + b"(") in ptx, k
    assert ptx.rstrip(b"\0") in lib


def test_links_no_cuda():
    out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True).stdout
    needed = [l for l in out.splitlines() if "(NEEDED)" in l]
    assert needed and not any("cuda" in l or "nvrtc" in l for l in needed), needed


def loaded(name):
    return any(name in l for l in open("/proc/self/maps"))


def child(code):
    """Runs code in a fresh interpreter (a process of its own: what is
    loaded stays loaded)."""
    r = subprocess.run([sys.executable, "-c", code, LIB], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


PRELUDE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
why = ctypes.create_string_buffer(256)
def maps(name):
    return any(name in l for l in open("/proc/self/maps"))
"""


def test_refuses_without_runtime():
    out = child(PRELUDE + """
assert not maps("libcudart")
assert lib.tpcu_open(why, 256) == -1
print(why.value.decode())
assert not maps("libcudart")
assert lib.tpcu_enqueue(None, 16, 1, 0, None, why, 256) == -1
assert lib.tpcu_collect(None, 0, why, 256) == 0
""")
    assert "no CUDA runtime" in out, out


def test_with_the_runtime_but_no_device():
    import nvidia

    rt = os.path.join(list(nvidia.__path__)[0], "cuda_runtime", "lib", "libcudart.so.12")
    out = child(PRELUDE + """
ctypes.CDLL(%r, mode=ctypes.RTLD_GLOBAL)
assert lib.tpcu_open(why, 256) == 0, why.value
assert lib.tpcu_open(why, 256) == 0
lib.tpcu_images.restype = ctypes.c_char_p
assert lib.tpcu_images() == b"sm_80 sm_90 compute_80", lib.tpcu_images()
assert lib.tpcu_enqueue(ctypes.c_void_p(4096), 16, 1, 0, None, why, 256) == -1
print(why.value.decode())
assert lib.tpcu_enqueue(ctypes.c_void_p(4096), 16, 1, 99, None, why, 256) == -1
assert b"out of range" in why.value, why.value
assert lib.tpcu_collect(None, 0, why, 256) == 0
""" % rt)
    line = out.strip()
    # The runtime's own reason: no device (or no driver) on this machine.
    assert line and ("device" in line or "driver" in line), out


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
