#!/bin/sh
# test-arm64.sh — run Woolly's arm64 kernels (make test-arm64).
#
#   arm64 host   go test ./kernels natively, once as is and once with each
#                extension hidden (GODEBUG=cpu.i8mm=off, cpu.asimddp=off),
#                each time asserting which kernel set ran
#   x86-64 host  when aarch64-linux-gnu-gcc and qemu-aarch64 are installed:
#                cross-compile the Go test binaries of kernels (plus loader,
#                and runtime's -run Parity tests once they exist) and the C
#                tests, run them under qemu-aarch64 three times:
#                  default CPU (max)    dotprod + i8mm -> expects "neon-i8mm"
#                  -cpu cortex-a76      dotprod only   -> expects "neon-dotprod"
#                  -cpu cortex-a53      neither        -> expects "neon"
#                (the tests loop over every set the CPU has, so the default
#                CPU runs all three against each other)
#                and the kernels tests once more built by clang (as on a Mac);
#                and `woolly logits` on small models must print the same bytes
#                as the x86-64 build (ARM64_XARCH=0 leaves that out);
#                otherwise print why and skip (exit 0; with CI=true, fail)
#
# Two sizes: ARM64_QUICK=1 (make test-arm64, part of make test) runs the
# kernels on both CPUs, the C tests, and a runtime parity subset (four
# small models) on the default CPU only, without the loader (pure Go), the
# clang pass and the cross-arch logits check; unset (make test-arm64-full,
# which .ci/run calls) runs everything below.
#
# Environment: ARM64_CC (default aarch64-linux-gnu-gcc; e.g. "clang
# --target=aarch64-linux-gnu"), ARM64_SYSROOT (default /usr/aarch64-linux-gnu),
# ARM64_CLANG=0 to leave out the clang pass, ARM64_PARITY=0 to leave out the runtime parity subset, ARM64_PARITY_RUN (its
# -run filter), ARM64_QEMU_SKIP / ARM64_QEMU_SKIP2 (-test.skip under qemu, for
# the default-CPU run / the other runs), ARM64_XARCH=0, ARM64_BUILD (default
# build/arm64).
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '%s\n' "test-arm64: $*"; }

# ---- native arm64 -----------------------------------------------------------
case "$(uname -m)" in
arm64 | aarch64)
	dot=0 i8mm=0
	if [ -r /proc/cpuinfo ] && grep -q asimddp /proc/cpuinfo; then dot=1; fi
	if [ -r /proc/cpuinfo ] && grep -qw i8mm /proc/cpuinfo; then i8mm=1; fi
	if [ "$(sysctl -n hw.optional.arm.FEAT_DotProd 2>/dev/null || echo 0)" = 1 ]; then dot=1; fi
	if [ "$(sysctl -n hw.optional.arm.FEAT_I8MM 2>/dev/null || echo 0)" = 1 ]; then i8mm=1; fi
	want=neon
	[ "$dot" = 1 ] && want=neon-dotprod
	[ "$dot" = 1 ] && [ "$i8mm" = 1 ] && want=neon-i8mm
	log "native $(uname -m): go test ./kernels (expect $want)"
	WOOLLY_EXPECT_IMPL=$want go test -count=1 ./kernels
	if [ "$want" = neon-i8mm ]; then
		log "native: go test ./kernels with i8mm hidden (expect neon-dotprod)"
		GODEBUG=cpu.i8mm=off WOOLLY_EXPECT_IMPL=neon-dotprod go test -count=1 ./kernels
	fi
	log "native: go test ./kernels with dotprod hidden (expect neon)"
	GODEBUG=cpu.asimddp=off WOOLLY_EXPECT_IMPL=neon go test -count=1 ./kernels
	log "ok"
	exit 0
	;;
esac

# ---- x86-64 (or anything else): qemu ----------------------------------------
cc=${ARM64_CC:-aarch64-linux-gnu-gcc}
sysroot=${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}
cc_bin=${cc%% *}
missing=""
command -v "$cc_bin" >/dev/null 2>&1 || missing="$missing $cc_bin"
command -v qemu-aarch64 >/dev/null 2>&1 || missing="$missing qemu-aarch64"
[ -d "$sysroot" ] || missing="$missing $sysroot"
if [ -n "$missing" ]; then
	exec sh scripts/skip.sh test-arm64 "not on arm64 and missing:$missing (Debian/Ubuntu: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
fi

out=${ARM64_BUILD:-build/arm64}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Go packages and the -run filter for each ("" = every test).
pkgs="kernels"
has_go() { ls "$1"/*.go >/dev/null 2>&1; }
has_go loader && pkgs="$pkgs loader"
if [ "${ARM64_PARITY:-1}" != 0 ] && has_go runtime && grep -qs 'func TestParity' runtime/*_test.go; then
	pkgs="$pkgs runtime"
fi
# The parity subset: the logits, greedy and full-row checks (and packed ==
# unpacked, bit for bit: packing is the arm64 default) on the small
# quantized and F32/F16 files; the f16 "mini" model and the perplexity runs
# take minutes under qemu (ARM64_PARITY_RUN overrides the filter).
parity_run=${ARM64_PARITY_RUN:-'(TestParity(Logits|Greedy|FullRows|IQ4AsReference|MXFP4Experts)|TestPackedLogitsMatchUnpacked)/(stories260K|llama-2-tiny|synth-.*-I?Q|qwen3moe-mini-)'}
quick=${ARM64_QUICK:-0}
if [ "$quick" = 1 ]; then
	parity_run=${ARM64_PARITY_RUN:-'TestParity(Logits|Greedy)/(stories260K-Q8_0|stories260K-Q4_K_M|synth-llama-mini-Q4_K_M|synth-qwen3-mini-Q4_K_M)'}
	ARM64_CLANG=0
	ARM64_XARCH=0
	# the loader is pure Go (no cgo since package ggml): the full run keeps it
	pkgs=$(echo "$pkgs" | sed 's/ loader//')
fi
run_filter() { case "$1" in runtime) echo "$parity_run" ;; *) echo . ;; esac; }
# qemu-user cannot run a test that re-executes its own (arm64) binary unless
# binfmt_misc is set up for it; those tests are skipped here.
qemu_skip=${ARM64_QEMU_SKIP:-'^TestDispatchFallback$'}
# Tests of code that does not depend on the arm64 kernel set (the attention
# numerics are the portable C on arm64) and take a minute or more under
# emulation run once, on the default CPU; the other passes skip them, and
# the packed-weights check (plain NEON has no packed layout: it would only
# skip its subtests).
qemu_skip2=${ARM64_QEMU_SKIP2:-'^(TestDispatchFallback|TestAttentionF16Acc|TestAttentionTiled|TestPackedLogitsMatchUnpacked)$'}

log "cross-compiling Go tests for arm64 with CC=\"$cc\": $pkgs"
t0=$(date +%s)
for p in $pkgs; do
	CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$cc" go test -vet=off -c -o "$out/$(echo "$p" | tr / _).test" "./$p"
done

log "cross-compiling the C tests"
# A cache written by another compiler cannot be reused: keep one per CC.
cdir="$out/c-$(echo "$cc_bin" | tr -c 'A-Za-z0-9_\n' '_')"
if [ "$cc_bin" = clang ]; then
	cmake_cc="-DCMAKE_C_COMPILER=clang -DCMAKE_C_COMPILER_TARGET=aarch64-linux-gnu"
else
	cmake_cc="-DCMAKE_C_COMPILER=$cc_bin"
fi
# shellcheck disable=SC2086
cmake -S "$root" -B "$cdir" -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 $cmake_cc >/dev/null
cmake --build "$cdir" -j 2 >/dev/null
t1=$(date +%s)
log "built in $((t1 - t0)) s"

# The emulated CPUs and the kernel set Go's dispatch must pick on each.
cpus="default cortex-a76 cortex-a53"
qemu_of() { if [ "$1" = default ]; then echo "qemu-aarch64 -L $sysroot"; else echo "qemu-aarch64 -cpu $1 -L $sysroot"; fi; }
want_of() { case $1 in default) echo neon-i8mm ;; cortex-a76) echo neon-dotprod ;; *) echo neon ;; esac; }

fail=0
for cpu in $cpus; do
	qemu=$(qemu_of "$cpu")
	want=$(want_of "$cpu")
	for p in $pkgs; do
		# quick: the non-kernel packages once, on the default CPU
		if [ "$quick" = 1 ] && [ "$cpu" != default ] && [ "$p" != kernels ]; then continue; fi
		name=$(echo "$p" | tr / _)
		t0=$(date +%s)
		# run in the package directory, as go test does (tests find ../shared from there)
		skip=$qemu_skip
		[ "$cpu" = default ] || skip=$qemu_skip2
		if (cd "$p" && WOOLLY_EXPECT_IMPL=$want $qemu "$out/$name.test" \
			-test.count=1 -test.v -test.run "$(run_filter "$p")" -test.skip "$skip" >"$out/$name.$cpu.log" 2>&1); then
			res=ok
		else
			res=FAIL
		fi
		# the kernels run must prove which set it used (TestExpectedImpl, not skipped)
		if [ "$p" = kernels ] && ! grep -q -- "--- PASS: TestExpectedImpl" "$out/$name.$cpu.log"; then
			res="FAIL (TestExpectedImpl did not pass with WOOLLY_EXPECT_IMPL=$want)"
		fi
		t1=$(date +%s)
		summary=$(grep -c -- "^--- PASS" "$out/$name.$cpu.log" || true)
		log "qemu cpu=$cpu ($want) $p: $res in $((t1 - t0)) s ($summary top-level tests passed)"
		case $res in
		ok) ;;
		*)
			fail=1
			grep -E -- "^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:" "$out/$name.$cpu.log" | tail -40
			;;
		esac
	done
	t0=$(date +%s)
	if $qemu "$cdir/test_kernels" >"$out/c.$cpu.log" 2>&1 && grep -q "^  dot      $want " "$out/c.$cpu.log"; then
		res=ok
	else
		res=FAIL
		fail=1
		tail -40 "$out/c.$cpu.log"
	fi
	t1=$(date +%s)
	log "qemu cpu=$cpu ($want) C test_kernels: $res in $((t1 - t0)) s ($(tail -1 "$out/c.$cpu.log"))"
done

# Cross-architecture check: `woolly logits` on small models must print the
# same bytes from the x86-64 build and from the arm64 build under qemu (both
# CPUs): the kernels follow one summation order on every ISA.
xarch_models="stories260K-Q4_K_M stories260K-Q4_0 stories260K-Q6_K stories260K-Q8_0 stories260K-F16 synth-llama-mini-Q5_K_M synth-qwen2-mini-Q4_K_M synth-qwen3-mini-Q4_K_M synth-qwen3moe-mini-Q4_K_M synth-phi3-mini-Q4_K_M synth-llama-mini-IQ4_NL synth-llama-mini-IQ4_XS"
shared=../shared/models
# (the x86 side must run SIMD kernels: the scalar ref sums in another order)
host_simd=0
if [ -r /proc/cpuinfo ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
	host_simd=1
fi
if [ "${ARM64_XARCH:-1}" != 0 ] && [ "$host_simd" = 1 ] && [ -d "$shared" ] && [ -d cmd/woolly ]; then
	t0=$(date +%s)
	if go build -o "$out/woolly-host" ./cmd/woolly >"$out/xarch-build.log" 2>&1 &&
		CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$cc" go build -o "$out/woolly-arm64" ./cmd/woolly >>"$out/xarch-build.log" 2>&1; then
		prompt="Once upon a time there was a little dog"
		nx=0
		for m in $xarch_models; do
			[ -f "$shared/$m.gguf" ] || continue
			"$out/woolly-host" logits --json --top 20 -t 1 -m "$shared/$m.gguf" -p "$prompt" >"$out/xarch.$m.host" 2>/dev/null || true
			for cpu in $cpus; do
				qemu=$(qemu_of "$cpu")
				$qemu "$out/woolly-arm64" logits --json --top 20 -t 1 -m "$shared/$m.gguf" -p "$prompt" >"$out/xarch.$m.$cpu" 2>/dev/null || true
				if [ -s "$out/xarch.$m.host" ] && cmp -s "$out/xarch.$m.host" "$out/xarch.$m.$cpu"; then
					nx=$((nx + 1))
				else
					fail=1
					log "cross-arch: $m logits differ between x86-64 and arm64 (cpu=$cpu): $out/xarch.$m.host vs $out/xarch.$m.$cpu"
				fi
			done
		done
		t1=$(date +%s)
		log "cross-arch: $nx model x CPU runs print the same logits as x86-64 ($((t1 - t0)) s)"
	else
		fail=1
		tail -20 "$out/xarch-build.log"
		log "cross-arch: building cmd/woolly failed"
	fi
fi

# Apple builds with clang: the kernels package once more, compiled by clang
# (its arm_neon.h and dotprod / i8mm handling differ from gcc's), on each CPU.
if [ "$cc_bin" != clang ] && command -v clang >/dev/null 2>&1 && [ "${ARM64_CLANG:-1}" != 0 ]; then
	t0=$(date +%s)
	if CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="clang --target=aarch64-linux-gnu" \
		go test -vet=off -c -o "$out/kernels.clang.test" ./kernels >"$out/clang-build.log" 2>&1; then
		for cpu in $cpus; do
			qemu=$(qemu_of "$cpu") want=$(want_of "$cpu")
			if (cd kernels && WOOLLY_EXPECT_IMPL=$want $qemu "$out/kernels.clang.test" -test.count=1 -test.v \
				-test.skip "$qemu_skip2" >"$out/kernels.clang.$cpu.log" 2>&1) &&
				grep -q -- "--- PASS: TestExpectedImpl" "$out/kernels.clang.$cpu.log"; then
				res=ok
			else
				res=FAIL
				fail=1
				grep -E -- "^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:" "$out/kernels.clang.$cpu.log" | tail -20
			fi
			log "qemu cpu=$cpu ($want) kernels built with clang: $res"
		done
	else
		fail=1
		tail -20 "$out/clang-build.log"
		log "clang cross build of ./kernels: FAIL"
	fi
	t1=$(date +%s)
	log "clang pass in $((t1 - t0)) s"
fi

if [ $fail != 0 ]; then
	log "FAILED (logs in $out)"
	exit 1
fi
log "ok"
