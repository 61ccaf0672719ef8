# perfscope: `make demo` and `make test` work on a fresh Debian machine (they install what they
# need through scripts/install-deps first: `make demo` and `make build` the build's part alone,
# `make test` the tests' part too).
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan
JOBS ?= $(shell nproc)
CMAKE_GENERATOR ?= Ninja

.PHONY: all deps deps-build deps-test configure build demo test unit-tests sanitizer-tests tsan-tests pmu-lab format format-check bench fuzz clean

all: build

deps: deps-test

deps-build:
	./scripts/install-deps build

deps-test:
	./scripts/install-deps test

# The developer's switches, explicitly: they default to ON only for a top-level build, and the
# suite must not depend on how perfscope is configured by default.
DEV_OPTIONS ?= -DPERFSCOPE_WERROR=ON -DPERFSCOPE_BUILD_TESTS=ON -DPERFSCOPE_BUILD_BENCHMARKS=ON

# -g1: line tables and function names (backtraces, perf's srclines of perfscope itself) without
# the full type and variable information, which made up a third of the compile time. The test
# workloads that are read back with DWARF ask for -g themselves.
BUILD_FLAGS ?= -O2 -g1 -DNDEBUG

configure: deps-build
	cmake -S . -B $(BUILD_DIR) -G $(CMAKE_GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(BUILD_FLAGS)" -DCMAKE_CXX_COMPILER=g++ $(DEV_OPTIONS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on the bundled example: count what examples/demo_workload does. Only the tool and
# the example are built (the tests and benchmarks are `make build`'s).
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target perfscope_cli demo_workload
	./scripts/run-demo $(BUILD_DIR)

# deps-test first: the configure step then finds the test tools (clang, the cross compiler, xz).
test: deps-test build format-check
	./scripts/run-tests $(BUILD_DIR) $(ASAN_BUILD_DIR)

# The release suite only (no sanitizer pass), for quick iterations.
unit-tests: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The hardware-counter tests on an emulated arm64 PMU (QEMU): installs what it needs, cross-builds
# tests/lab, boots and reports. Also part of `make test`.
pmu-lab:
	./scripts/pmu-lab

# Every fuzz target for FUZZ_SECONDS each (the suite runs them 15 s); what crashes one is saved in
# fuzz/regressions/<target>/, which every build's tests replay.
FUZZ_SECONDS ?= 600
fuzz: deps-test
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/run-fuzzers $(ASAN_BUILD_DIR)

sanitizer-tests: deps-test
	./scripts/run-tests --sanitizer-only $(BUILD_DIR) $(ASAN_BUILD_DIR)

# The parallel analysis (--threads, issue #35) under ThreadSanitizer: the fanned-out walk's own
# test and every analysing subcommand on 1, 2, 3 and 8 threads, with a TSan build of perfscope.
# Not part of `make test` (a third full build); run it when the pipeline changes.
# (The walks' tests only: the reader's memory tests measure anonymous memory, which TSan's
# shadow of the mapped file inflates.)
tsan-tests: deps-test
	cmake -S . -B $(TSAN_BUILD_DIR) -G $(CMAKE_GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DPERFSCOPE_SANITIZE_THREADS=ON $(DEV_OPTIONS)
	cmake --build $(TSAN_BUILD_DIR) -j $(JOBS) --target perfscope_cli analysis_perf_data_test \
	  cli_threads_cli_test work_helper offcpu_workload
	cd $(TSAN_BUILD_DIR) && export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 && \
	  ./tests/analysis_perf_data_test --gtest_filter='*Walk*' && ./tests/cli_threads_cli_test

format:
	./scripts/check-format --fix

format-check: deps-test
	./scripts/check-format

bench: build
	./scripts/run-benchmarks $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR)
