# The two Quick-start commands: `make demo` and `make test`.
# Both install what is missing, configure and build Release with Ninja.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps configure build demo test bench clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/trex demo

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@bash bench/run_lp_bench.sh $(BUILD)

clean:
	rm -rf $(BUILD)
