# gpuslice: the commands a user types. CMake does the building underneath;
# this file only names the entry points and makes sure the Debian packages
# the build needs are present (scripts/deps.sh) before anything runs.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

GPU_STAGE  ?= gpu-stage
GPU_CHECK_ARGS ?=

.PHONY: all build build-asan deps demo test test-unit test-asan test-slurm bench gpu-check gpu-stage install deb fuzz clean format ptx

all: build

# The stamp records that deps.sh ran on this machine; deps.sh itself is
# idempotent and only calls apt-get for what is missing.
$(BUILD)/.deps-ok: scripts/deps.sh
	@bash scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

deps:
	@bash scripts/deps.sh

$(BUILD)/CMakeCache.txt: $(BUILD)/.deps-ok CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

$(ASAN_BUILD)/CMakeCache.txt: $(BUILD)/.deps-ok CMakeLists.txt
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON $(CMAKE_ARGS)

build-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS) -- --no-print-directory

# The whole suite: every test on the normal build, then the unit tests and
# fast integration tests again under ASan+UBSan, then the Slurm tests.
test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE slurm
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L asan
	$(MAKE) --no-print-directory test-slurm

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L asan

test-slurm: build
	@if [ -f tests/integration/slurm/run.sh ]; then bash tests/integration/slurm/run.sh $(BUILD); \
	 else echo "test-slurm: no Slurm tests in this tree yet"; fi

demo: build
	@bash scripts/demo.sh $(BUILD)

bench: build
	@bash scripts/bench.sh $(BUILD)

# `make install` (PREFIX, DESTDIR honoured): cmake --install of the build,
# configured for PREFIX first (the unit and the default paths name it).
PREFIX ?= /usr/local
install: build
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory
	cmake --install $(BUILD)

# The Debian packages, built once per input (scripts/build-deb.sh).
deb:
	@bash scripts/build-deb.sh

# The GPU check, in two steps: gpu-stage builds here a folder (ignored,
# under 64 MiB) with everything the check needs; gpu-check runs from that
# folder with no build and no deps step, so it works on a GPU machine that
# is offline and has no compiler (docs/testing.md has the exact command).
gpu-stage: build
	@bash scripts/gpu-stage.sh $(BUILD) $(GPU_STAGE)

gpu-check:
	@if [ ! -x $(GPU_STAGE)/gpu-check.sh ]; then \
		echo "gpu-check: no staged folder $(GPU_STAGE)/: run make gpu-stage first (where it builds)" >&2; exit 2; fi
	@bash $(GPU_STAGE)/gpu-check.sh $(GPU_CHECK_ARGS)

fuzz:
	@bash scripts/fuzz.sh

# Regenerates workloads/kernels.ptx from kernels.cu (needs nvcc; the build
# itself only embeds the checked-in PTX).
ptx:
	@bash workloads/regen-ptx.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(GPU_STAGE)
