# Thin wrapper around CMake. Every target installs the Debian packages it needs when missing.
BUILD       ?= build
ASAN_BUILD  ?= build-asan
JOBS        ?= $(shell nproc)
# What the podsim executable needs (`make run`); the tests and the Python module add the rest.
RUN_DEPS    := g++ make cmake libyaml-cpp-dev libeigen3-dev libboost-graph-dev libfmt-dev \
               libcli11-dev nlohmann-json3-dev zlib1g-dev
DEPS        := $(RUN_DEPS) doctest-dev pybind11-dev python3-dev
# `make test` also installs the module with pip into a virtual environment (CTest install) and runs
# the documentation's pandas example (CTest docs).
TEST_DEPS   := $(DEPS) python3-venv python3-setuptools python3-wheel python3-pandas ccache
# ccache, where installed (make test installs it): CTest install compiles podsim's libraries again
# for `pip install .` in a copy of the tree; with the cache keyed on paths relative to the checkout
# that second compile is all hits.
LAUNCHER     = $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)
SUDO        := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# The sanitizer build uses clang so that the same build also holds the libFuzzer targets.
CLANG_DEPS  := clang-14 libclang-rt-14-dev
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

.PHONY: all deps run-deps test-deps build run test docs-update bench asan-configure sanitize fuzz format format-check golden validation clean notebooks

all: build

# apt-get only when something is missing, so repeated runs cost nothing.
define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEPS))

run-deps:
	$(call install_missing,$(RUN_DEPS))

test-deps:
	$(call install_missing,$(TEST_DEPS))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPODSIM_BUILD_TESTS=ON -DPODSIM_PYTHON=ON $(LAUNCHER)
	cmake --build $(BUILD) -j$(JOBS)

# Only the podsim executable and the libraries it links: no tests, fuzz targets, bench or Python
# module. A build directory configured before keeps its options (a later `make test` builds the rest).
run: run-deps
	@[ -f $(BUILD)/CMakeCache.txt ] || \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPODSIM_BUILD_TESTS=OFF -DPODSIM_PYTHON=OFF $(LAUNCHER)
	cmake --build $(BUILD) -j$(JOBS) --target podsim
	./$(BUILD)/podsim run

test: test-deps
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# Rewrites the outputs shown in README.md and docs/*.md from what their examples print now (review
# the diff before committing).
docs-update: build
	PODSIM_UPDATE_DOCS=1 python3 tests/docs/doc_test.py --build $(BUILD)

bench: build
	./$(BUILD)/podsim_bench

# AddressSanitizer + UndefinedBehaviorSanitizer build of everything with clang, tests included; the
# same build holds the libFuzzer targets of tests/fuzz, and CTest replays their seeds and
# regression inputs.
asan-configure: deps
	$(call install_missing,$(CLANG_DEPS))
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPODSIM_SANITIZE=ON -DPODSIM_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" $(LAUNCHER)

sanitize: asan-configure
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -LE '^(docs|validation)$$'
# (The documentation's outputs and the accuracy suite run in `make test`; under ASan they take over
# 20 minutes and repeat code paths the unit, API, property and fuzz tests already run here.)

# Runs every fuzz target for FUZZ_SECONDS (default 60) under ASan+UBSan; FUZZ_TARGETS picks some.
# Fails on any crash, sanitizer report, input over 10 s or over 2 GB (see docs/fuzzing.md).
fuzz: asan-configure
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target podsim podsim_fuzz_targets
	tests/fuzz/run-fuzzers.sh $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

FORMAT_FILES = $(shell find sim tests bench -name '*.cpp' -o -name '*.hpp')
format:
	$(call install_missing,clang-format)
	clang-format -i $(FORMAT_FILES)

format-check:
	$(call install_missing,clang-format)
	clang-format --dry-run --Werror $(FORMAT_FILES)

# Rewrites tests/golden/*.json from the current model (review the diff before committing).
golden: build
	PODSIM_UPDATE_GOLDEN=1 ./$(BUILD)/tests/podsim_golden_tests

# Prints the validation table (docs/validation.md shows it; CTest docs checks it).
validation: build
	./$(BUILD)/podsim validate --suite tests/validation --format markdown

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

# Executes the notebooks in notebooks-export/ and exports them to HTML (not part of `make test`).
NOTEBOOK_DEPS := python3-matplotlib python3-pandas jupyter-nbconvert python3-ipykernel python3-nbformat
notebooks: build
	$(call install_missing,$(NOTEBOOK_DEPS))
	tools/notebooks.sh
