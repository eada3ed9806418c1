# Woolly — build, test and benchmark.
#
# Portable to GNU make 3.81 (macOS) and newer: no GNU-make-4 features, POSIX
# sh in recipes, every recipe line stands on its own.
#
#   make build          bin/woolly
#   make test           everything this machine can run: lint, test-go, test-c,
#                       test-sanitize, test-arm64, test-darwin, fuzz-smoke,
#                       test-race-soak, lint-sh, test-bench-llama, check-nocgo;
#                       at its end, what it skipped and why. With CI=true a
#                       part whose tool is missing fails instead of skipping.
#   make test-go        go test ./... (through internal/testreport: the usual
#                       lines, plus the skipped tests for make test's list)
#   make fuzz-smoke     each fuzz target over its corpus and 10000-30000 new inputs
#   make test-race-soak the short soak (package soak) under -race
#   make test-asan      kernel tests and the runtime parity subset built with
#                       -asan (not in make test: about 10 minutes)
#   make test-bench-llama  how scripts/bench.sh drives llama-bench (-ngl 0, -nopo,
#                       the GPU column), against a stand-in llama-bench
#   make check-nocgo    without cgo the build stops with one needs-cgo line
#   make lint-sh        scripts/lint-sh.sh: shellcheck -s sh, no GNU-only options
#   make test-c         C kernel tests and a benchmark smoke run (CMake + CTest)
#   make test-sanitize  the C tests under AddressSanitizer + UBSan
#   make test-arm64     arm64 kernels: native on arm64, qemu on x86-64 (or a skip),
#                       with a runtime parity subset on one CPU
#   make test-arm64-full  all of scripts/test-arm64.sh (.ci/run runs it in
#                       make test: make test ARM64_TEST=test-arm64-full)
#   make test-darwin    compile every package for macOS/arm64 (and the kernels for
#                       macOS/amd64) with zig (or a skip)
#   make bench          scripts/bench.sh: kernel benchmarks, woolly bench on a
#                       synthesized TinyLlama-shaped model, bench-out/report.md
#   make bench-go       the Go kernel benchmarks only
#   make bench-c        the C microbenchmark
#   make apple-proxy LLAMA_SRC=/path/to/llama.cpp
#                       scripts/apple-proxy.sh: executed instructions of the NEON
#                       kernels beside llama.cpp's under qemu (docs/apple-proxy.md)
#   make lint           gofmt, go vet, staticcheck and go mod tidy -diff
#   make hooks          install the commit-msg hook (subjects <= 72 characters)
#   make test-hooks     check that hook (not part of make test)
#   make clean

GO      ?= go
CMAKE   ?= cmake
CTEST   ?= ctest
BUILD   ?= build
BIN     ?= bin
# parallel jobs for the C builds (nproc on Linux, sysctl on macOS)
JOBS    ?= $(shell (nproc || sysctl -n hw.ncpu || echo 2) 2>/dev/null | head -n 1)
GOFLAGS_TEST ?=
# fuzz-smoke: time per target (one worker each)
FUZZTIME ?=
# test-asan: the runtime tests that drive the kernels through cgo
ASAN_RUN ?= TestParityLogits|TestParityGreedy
# apple-proxy: llama.cpp's source tree at the reference commit
LLAMA_SRC ?=

.PHONY: all build test test-parts test-go test-c test-sanitize test-arm64 test-arm64-full test-darwin fuzz-smoke test-race-soak test-asan lint-sh check-nocgo bench bench-go bench-c test-bench-llama apple-proxy lint hooks test-hooks clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/woolly ./cmd/woolly

# The parts write what they skip to $(SKIPLOG) (scripts/skip.sh, and
# internal/testreport for skipped Go tests); make test prints it at the end.
SKIPLOG = $(BUILD)/skipped.txt

test:
	@mkdir -p $(BUILD) && : >$(SKIPLOG)
	@WOOLLY_SKIPLOG="`pwd`/$(SKIPLOG)" $(MAKE) -f $(firstword $(MAKEFILE_LIST)) test-parts; rc=$$?; \
	echo; if [ -s $(SKIPLOG) ]; then echo "make test: skipped (and why):"; sed 's/^/  /' $(SKIPLOG); \
	else echo "make test: nothing skipped"; fi; \
	if [ $$rc != 0 ]; then echo "make test: FAILED (see above)"; fi; exit $$rc

# ARM64_TEST: the arm64 part of make test (.ci/run sets test-arm64-full).
ARM64_TEST ?= test-arm64

test-parts: lint test-go test-c test-sanitize $(ARM64_TEST) test-darwin fuzz-smoke test-race-soak lint-sh test-bench-llama check-nocgo

# go test -json through internal/testreport: the lines plain go test prints,
# and each skipped test with its reason into $$WOOLLY_SKIPLOG.
test-go:
	@mkdir -p $(BUILD); \
	{ $(GO) test $(GOFLAGS_TEST) -json ./...; echo $$? >$(BUILD)/test-go.rc; } | $(GO) run ./internal/testreport; \
	rc=$$?; [ $$rc = 0 ] && [ "`cat $(BUILD)/test-go.rc`" = 0 ]

# Without cmake (a bare Mac) the C tests are skipped with a message; CI has it.
test-c:
	@if ! command -v $(CMAKE) >/dev/null 2>&1; then sh scripts/skip.sh test-c "$(CMAKE) not found"; exit; fi; \
	set -e; \
	$(CMAKE) -S . -B $(BUILD)/c -DCMAKE_BUILD_TYPE=Release; \
	$(CMAKE) --build $(BUILD)/c -j $(JOBS); \
	cd $(BUILD)/c && $(CTEST) --output-on-failure

# AddressSanitizer + UBSan (leak checking is on by default where supported).
test-sanitize:
	@if ! command -v $(CMAKE) >/dev/null 2>&1; then sh scripts/skip.sh test-sanitize "$(CMAKE) not found"; exit; fi; \
	set -e; \
	$(CMAKE) -S . -B $(BUILD)/asan -DWOOLLY_SANITIZE=ON; \
	$(CMAKE) --build $(BUILD)/asan -j $(JOBS); \
	cd $(BUILD)/asan && ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(CTEST) --output-on-failure

# make test's arm64 part: the kernels on both CPUs, the C tests, a runtime
# parity subset on one; test-arm64-full (which .ci/run runs instead) is all of
# scripts/test-arm64.sh: the wider parity set on both CPUs, the clang build,
# the cross-arch logits check.
test-arm64:
	ARM64_QUICK=1 sh scripts/test-arm64.sh

test-arm64-full:
	sh scripts/test-arm64.sh

# darwin/arm64 compile check through zig cc (scripts/darwin-check.sh).
test-darwin:
	sh scripts/darwin-check.sh

# Each fuzz target over its corpus (testdata/fuzz/<name>) and a count of new
# inputs, one worker: go test runs one fuzz target per command. Counts, not
# durations: Go 1.26's coordinator can fail a duration run with a bare
# "context deadline exceeded" when a starved worker misses the deadline
# (go.dev/issue/75804, fixed in Go 1.27). FUZZTIME=30s (or 5000x) overrides
# every target's budget.
fuzz-smoke:
	ft="$(FUZZTIME)"; $(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $${ft:-20000x} -fuzzminimizetime 5s -parallel 1 ./loader
	ft="$(FUZZTIME)"; $(GO) test -run '^$$' -fuzz '^FuzzInfo$$' -fuzztime $${ft:-10000x} -fuzzminimizetime 5s -parallel 1 ./internal/ggufinfo
	ft="$(FUZZTIME)"; $(GO) test -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $${ft:-20000x} -fuzzminimizetime 5s -parallel 1 ./runtime/tokenizer
	ft="$(FUZZTIME)"; $(GO) test -run '^$$' -fuzz '^FuzzChatTemplate$$' -fuzztime $${ft:-30000x} -fuzzminimizetime 5s -parallel 1 ./runtime/chat
	ft="$(FUZZTIME)"; $(GO) test -run '^$$' -fuzz '^FuzzServerRequests$$' -fuzztime $${ft:-20000x} -fuzzminimizetime 5s -parallel 1 ./server

# The soak (16 clients x 25 requests, every fault) under the race detector;
# scripts/soak.sh is the full one against woolly serve.
test-race-soak:
	$(GO) test -race -count=1 -run '^TestSoak$$' ./soak

# Go's AddressSanitizer over the cgo boundary (needs a C compiler with
# libasan: gcc or clang); too slow for make test, see README "Reliability".
test-asan:
	$(GO) test -asan -count=1 ./kernels
	$(GO) test -asan -count=1 -run '$(ASAN_RUN)' ./runtime

lint-sh:
	sh scripts/lint-sh.sh

check-nocgo:
	GO=$(GO) sh scripts/check-nocgo.sh

test-bench-llama: build
	WOOLLY=$(BIN)/woolly sh scripts/test-bench-llama.sh

# The project benchmark (docs/performance.md): Go kernel benchmarks, woolly
# bench on a synthesized TinyLlama-shaped model, bench-out/report.md.
bench: build
	sh scripts/bench.sh

apple-proxy:
	@if [ -z "$(LLAMA_SRC)" ]; then echo "apple-proxy: set LLAMA_SRC=/path/to/llama.cpp (its source at the reference commit; docs/apple-proxy.md)" >&2; exit 2; fi
	sh scripts/apple-proxy.sh "$(LLAMA_SRC)"

bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 200ms ./kernels

bench-c:
	$(CMAKE) -S . -B $(BUILD)/c -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD)/c -j $(JOBS)
	$(BUILD)/c/bench_kernels $(BENCH_FILTER)

# staticcheck is a tool dependency in go.mod (go tool staticcheck): its
# version is pinned there and go mod download fetches it.
lint:
	@out=`gofmt -l . 2>&1`; \
	if [ -n "$$out" ]; then echo "gofmt -l: these files need gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; $(GO) mod tidy -diff; exit 1; }

# The commit-msg hook (scripts/hooks/commit-msg) into this repository's hooks
# directory (shared by its worktrees). CI does not need it.
hooks:
	@d=`git rev-parse --git-path hooks` || exit 1; \
	mkdir -p "$$d" && cp scripts/hooks/commit-msg "$$d/commit-msg" && chmod +x "$$d/commit-msg" && \
	echo "installed $$d/commit-msg (subjects <= 72 characters; bypass once: git commit --no-verify)"

test-hooks:
	sh scripts/test-hooks.sh

clean:
	rm -rf $(BIN) $(BUILD)
