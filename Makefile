# The two Quick-start commands: `make demo` and `make test`.
# Each installs what is missing, configures Release with Ninja and builds only what it needs:
# `make demo` the trex binary, `make test` the test programs (reusing what is built), `make bench`
# the benchmark programs. Each phase prints one line first; the build shows Ninja's progress.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps test-deps configure build demo test bench clean

# The demo needs the Debian packages only; the tests also need the npm client library.
deps:
	@echo "== packages: scripts/install-deps.sh --no-npm"
	@bash scripts/install-deps.sh --no-npm

test-deps:
	@echo "== packages for the tests: scripts/install-deps.sh"
	@bash scripts/install-deps.sh

# Configure once; later builds re-run CMake by themselves when a CMakeLists.txt changes.
# A unity build (CMakeLists.txt, TREX_UNITY_BUILD) halves the first build's CPU; configure
# without it for quick one-file rebuilds while editing.
configure: deps
	@if [ -f $(BUILD)/build.ninja ]; then \
	  echo "== configure: $(BUILD)/ already configured"; \
	else \
	  echo "== configure: cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTREX_UNITY_BUILD=ON"; \
	  mkdir -p $(BUILD); \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTREX_UNITY_BUILD=ON \
	    >$(BUILD)/configure.log 2>&1 \
	    || { cat $(BUILD)/configure.log; exit 1; }; \
	fi

# Everything: the binary, the tests and the benchmarks.
build: configure
	@echo "== build: everything, $(JOBS) jobs"
	@cmake --build $(BUILD) -j $(JOBS)

demo: configure
	@echo "== build: the trex binary, $(JOBS) jobs"
	@cmake --build $(BUILD) -j $(JOBS) --target trex
	@echo "== demo: $(BUILD)/trex demo"
	@$(BUILD)/trex demo

test: test-deps configure
	@echo "== build: the test programs, $(JOBS) jobs"
	@cmake --build $(BUILD) -j $(JOBS) --target tests
	@echo "== test: ctest in $(BUILD)/"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: configure
	@echo "== build: the benchmark programs, $(JOBS) jobs"
	@cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	@echo "== bench: bench/run_lp_bench.sh $(BUILD)"
	@bash bench/run_lp_bench.sh $(BUILD)

clean:
	rm -rf $(BUILD)
