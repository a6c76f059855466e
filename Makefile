# Cellscope: every target installs what is missing first (scripts/setup.sh), then builds with
# CMake + Ninja (ccache when available). The binary is build/cellscope.

BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
# CI (CI=true): line tables only, and the I/O code (server/, adapter/) at -O1: a faster build
# (CMakeLists.txt).
ifeq ($(CI),true)
CMAKE_ARGS += -DCELLSCOPE_LINE_TABLES_ONLY=ON -DCELLSCOPE_IO_CODE_O1=ON
endif
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

export CCACHE_DIR ?= $(HOME)/.cache/ccache
export CCACHE_BASEDIR := $(CURDIR)
# With -g, ccache hashes the working directory by default: a fresh clone elsewhere (CI) would
# miss every object. Paths in debug information then name the directory of the first build.
export CCACHE_NOHASHDIR := true
# The test executables use precompiled headers (tests/CMakeLists.txt): ccache caches their
# sources only with these sloppiness settings (ccache's manual, "Precompiled headers").
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

# Files formatted / linted: our C++ sources, never generated code or build trees.
CXX_SOURCES = $(shell find graphcore protocol server adapter bench tests -type f \
                \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' -o -name '*.cc' \) \
                -not -path '*/node_modules/*' -not -name '*.pb.*' 2>/dev/null)
TIDY_SOURCES = $(filter %.cpp %.cc,$(CXX_SOURCES))

.PHONY: all setup configure build test demo bench fuzz sanitize format format-check tidy clean

all: build

# The start and end of set-up and build, for the time summary of `make test` (scripts/test.sh).
setup:
	@mkdir -p $(BUILD_DIR) && date +%s > $(BUILD_DIR)/.t-setup
	@bash scripts/setup.sh
	@date +%s > $(BUILD_DIR)/.t-configure

configure: setup
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >/dev/null \
	  || cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	@ninja -C $(BUILD_DIR) -j $(JOBS)
	@date +%s > $(BUILD_DIR)/.t-built

# ctest (unit + CLI tests), then every other tier; see scripts/test.sh.
test: build
	@BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) bash scripts/test.sh

demo: build
	@BUILD_DIR=$(BUILD_DIR) bash scripts/demo.sh

bench: build
	@BUILD_DIR=$(BUILD_DIR) bash scripts/bench.sh
	@BUILD_DIR=$(BUILD_DIR) bash scripts/bench.sh --lsp
	@node webview/scripts/view-bench.mjs --bin $(BUILD_DIR)/cellscope --bench $(BUILD_DIR)/bench/cellscope-bench
	@node tests/dap/bench-overhead.mjs --bin $(BUILD_DIR)/cellscope --run $(BUILD_DIR)/bench/cellscope-run
	@node tests/dap/bench-train.mjs --bin $(BUILD_DIR)/cellscope

# The ASan + UBSan and TSan tiers (scripts/sanitizers.sh; build-asan/, build-tsan/).
sanitize: setup
	@JOBS=$(JOBS) bash scripts/sanitizers.sh asan; a=$$?; JOBS=$(JOBS) bash scripts/sanitizers.sh tsan; t=$$?; \
	  test $$a -eq 0 -a $$t -eq 0

# libFuzzer harnesses (tests/fuzz) for FUZZ_SECONDS each (default 60); see docs/reliability.md.
fuzz: setup
	@bash scripts/fuzz.sh

format: setup
	@clang-format -i $(CXX_SOURCES)

format-check: setup
	@clang-format --dry-run --Werror $(CXX_SOURCES)

# Needs build/compile_commands.json (written by configure). clang cannot read GCC's precompiled
# headers (the test executables': tests/CMakeLists.txt), so clang-tidy reads a copy of the
# compilation database without them: each test source is checked with its own includes only.
tidy: configure
	@mkdir -p $(BUILD_DIR)/tidy && sed -E 's# -Winvalid-pch##g; s# -include [^ ]*/cmake_pch\.hxx##g' \
	  $(BUILD_DIR)/compile_commands.json > $(BUILD_DIR)/tidy/compile_commands.json
	@printf '%s\n' $(TIDY_SOURCES) | xargs -r -P $(JOBS) -n 4 \
	  clang-tidy -p $(BUILD_DIR)/tidy --quiet --extra-arg=-Wno-unknown-warning-option

clean:
	rm -rf $(BUILD_DIR)
