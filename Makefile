# The two commands a new user needs:
#   make run    install what is missing, build, run the main job
#   make test   install what is missing, build, pass every test
# and `make bench` for the figures. Everything builds with CMake presets and Ninja (see
# CMakePresets.json); build trees live under build/<preset>.

JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 15
TAILGUARD = build/release/apps/tailguard/tailguard

.PHONY: all deps build run test test-release test-asan test-tsan fuzz bench format clean

all: build

deps:
	@scripts/install-deps

build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

# The main job on the embedded default: the demo models served in-process under a two-minute
# scenario (docs/demo.md). DEMO_FLAGS passes flags, e.g. make run DEMO_FLAGS="--duration 45s".
DEMO_FLAGS ?=
run: build
	$(TAILGUARD) demo $(DEMO_FLAGS)

# Every test: the release suite, the same suite under ASan+UBSan and under TSan, and a short
# libFuzzer run of every parser.
test: deps test-release test-asan test-tsan fuzz
	@echo "make test: all suites passed"

test-release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@ctest --preset release -j $(JOBS)

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	@ctest --preset asan -j $(JOBS)

test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" ctest --preset tsan -j $(JOBS)

# The fuzz targets live in the asan tree (clang, ASan+UBSan, libFuzzer's coverage on the
# parsers' libraries), so `make test` compiles the parsers once for both; `make fuzz` alone
# builds only what they need there.
fuzz: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS) --target tailguard_fuzzers
	@scripts/run-fuzzers build/asan $(FUZZ_SECONDS)

bench: build
	@scripts/run-benchmarks build/release

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf build
