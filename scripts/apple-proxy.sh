#!/bin/sh
# scripts/apple-proxy.sh — the Apple Silicon proxy (make apple-proxy; docs/apple-proxy.md).
#
#   sh scripts/apple-proxy.sh LLAMA_SRC
#
# Executed instructions of Woolly's NEON weight-matrix kernels beside llama.cpp's,
# counted under qemu-aarch64 with a TCG plugin. Both sides are cross-compiled as
# they are built for a Mac: Woolly's csrc as cgo builds it (clang, the package's
# #cgo CFLAGS, every file cgo would take for darwin/arm64) with -mcpu=apple-m1;
# llama.cpp's ggml-cpu arch/arm quants.c and repack.cpp (LLAMA_SRC: its source
# tree at the reference commit) at -O3 with -mcpu=apple-m1 (dotprod) and again
# with -mcpu=apple-m2 (dotprod + i8mm), as its native Release build on those
# CPUs compiles them. One JSON object per line:
#
#   {"type":"q4_k","path":"gemv","isa":"dotprod","woolly":N,"llama_vec_dot":N,"llama_repack":N,...}
#
# N = executed instructions per 256 weights per weight row (gemv: one token)
# or per 256 weights per row per token (gemm: APPLE_PROXY_NTOK tokens);
# null where llama.cpp has no such kernel. "woolly_impl" names the Woolly
# kernel set Go's dispatch picks on that CPU and "woolly_path" whether its
# packed (row-interleaved) kernels ran.
#
# Environment: APPLE_PROXY_BUILD (scratch, default build/apple-proxy),
# APPLE_PROXY_CC / APPLE_PROXY_CXX (clang-16 / clang++-16, else clang / clang++),
# APPLE_PROXY_SYSROOT (/usr/aarch64-linux-gnu), APPLE_PROXY_QEMU (qemu-aarch64),
# APPLE_PROXY_REPS (4), APPLE_PROXY_NTOK (16: tokens of the gemm path),
# APPLE_PROXY_TYPES ("q4_k q5_k q6_k q8_0 iq4_xs mxfp4").
#
# End to end, with APPLE_PROXY_E2E=MODEL.gguf: executed instructions per
# generated token (tg) and per prompt token (pp) of `woolly bench` (Woolly's
# arm64 build: static, cgo through the same clang -mcpu=apple-m1) and of
# llama-bench (llama.cpp's arm64 CPU build, static, -mcpu=apple-m1; built
# here under $APPLE_PROXY_BUILD/llama-arm64 unless APPLE_PROXY_LLAMA_BENCH
# names one), one thread each, both under qemu with the counting plugin:
#   {"type":"e2e","path":"tg"|"pp","model":"...","woolly":N,"llama":N,"ratio":R}
# Each figure is the difference of two runs of different lengths (tg: 1 and
# 1+APPLE_PROXY_E2E_TG tokens; pp: prompts of 32 and 32+APPLE_PROXY_E2E_PP
# tokens) over the tokens in that difference, so loading (llama.cpp's
# repacking included) cancels. Slow: minutes per run for a 1B model.
# Needs (Debian 12): clang-16 lld-16 qemu-user gcc-aarch64-linux-gnu
# g++-aarch64-linux-gnu (the arm64 C and C++ runtimes), a host C compiler.
set -eu

die() {
	printf 'apple-proxy: %s\n' "$*" >&2
	exit 1
}

[ $# -eq 1 ] || {
	echo "usage: sh scripts/apple-proxy.sh LLAMA_SRC" >&2
	exit 2
}
[ -d "$1/ggml/src/ggml-cpu/arch/arm" ] || die "$1 is not a llama.cpp source tree (no ggml/src/ggml-cpu/arch/arm)"
L=$(cd "$1" && pwd)/ggml

cd "$(dirname "$0")/.."
root=$(pwd)
here=$root/scripts/apple-proxy

pick() { # first command of the arguments that exists
	for c in "$@"; do
		if command -v "$c" >/dev/null 2>&1; then
			echo "$c"
			return 0
		fi
	done
	return 1
}
CC=${APPLE_PROXY_CC:-$(pick clang-16 clang || true)}
CXX=${APPLE_PROXY_CXX:-$(pick clang++-16 clang++ || true)}
HOSTCC=$(pick cc gcc clang || true)
QEMU=${APPLE_PROXY_QEMU:-qemu-aarch64}
SYSROOT=${APPLE_PROXY_SYSROOT:-/usr/aarch64-linux-gnu}
REPS=${APPLE_PROXY_REPS:-4}
NTOK=${APPLE_PROXY_NTOK:-16}
TYPES=${APPLE_PROXY_TYPES:-q4_k q5_k q6_k q8_0 iq4_xs mxfp4}
if [ -z "$CC" ] || [ -z "$CXX" ]; then die "no clang found (apt-get install clang-16 lld-16)"; fi
[ -n "$HOSTCC" ] || die "no host C compiler for the qemu plugin"
command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (apt-get install qemu-user)"
[ -d "$SYSROOT" ] || die "no arm64 sysroot at $SYSROOT (apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu)"
case $REPS in '' | *[!0-9]* | 0) die "APPLE_PROXY_REPS must be a positive integer, got '$REPS'" ;; esac
case $NTOK in '' | *[!0-9]*) die "APPLE_PROXY_NTOK must be a positive multiple of 4, got '$NTOK'" ;; esac
if [ "$NTOK" -lt 4 ] || [ "$NTOK" -gt 64 ] || [ $((NTOK % 4)) -ne 0 ]; then
	die "APPLE_PROXY_NTOK must be a multiple of 4 in 4..64, got $NTOK"
fi

# the end-to-end settings, checked before any work
model=${APPLE_PROXY_E2E:-}
TG=${APPLE_PROXY_E2E_TG:-8}
PP=${APPLE_PROXY_E2E_PP:-32}
if [ -n "$model" ]; then
	[ -f "$model" ] || die "APPLE_PROXY_E2E: no model file $model"
	model=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
	for v in "$TG" "$PP"; do
		case $v in '' | *[!0-9]* | 0) die "APPLE_PROXY_E2E_TG and APPLE_PROXY_E2E_PP must be positive integers" ;; esac
	done
	command -v go >/dev/null 2>&1 || die "go not found (needed to build Woolly for arm64)"
	if [ -n "${APPLE_PROXY_LLAMA_BENCH:-}" ] && [ ! -x "$APPLE_PROXY_LLAMA_BENCH" ]; then
		die "APPLE_PROXY_LLAMA_BENCH: $APPLE_PROXY_LLAMA_BENCH is not an executable"
	fi
fi

out=${APPLE_PROXY_BUILD:-build/apple-proxy}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# --- the counting plugin (host code, loaded by qemu) ------------------------
"$HOSTCC" -O2 -shared -fPIC -I"$here" -o "$out/icount.so" "$here/icount.c"

# --- Woolly: csrc as cgo compiles it for darwin/arm64 -----------------------
# cgo's flags: CGO_CFLAGS (default -O2 -g) then the package's #cgo lines for
# every platform, arm64 and darwin; the files: *.c without another
# architecture's suffix and without a build constraint that excludes arm64,
# plus the ISA sub-packages (csrc/<dir>/*_arm64.c with their own #cgo lines),
# as CMakeLists.txt also takes them.
cgo_flags() { # the #cgo CFLAGS of the .go files in directory $1 for darwin/arm64
	for g in "$1"/*.go; do
		[ -f "$g" ] || continue
		sed -n 's/^#cgo \(darwin,arm64 \|arm64 \|darwin \|\)CFLAGS:\(.*\)$/\2/p' "$g"
	done | tr '\n' ' '
}
TARGET="--target=aarch64-linux-gnu --sysroot=$SYSROOT"
M1="-mcpu=apple-m1"
wflags="-O2 -g $(cgo_flags "$root/csrc")"
wobjs=""
for f in "$root"/csrc/*.c; do
	name=$(basename "$f" .c)
	case $name in *_amd64 | *_386 | *_riscv64 | *_ppc64le | *_s390x | *_wasm) continue ;; esac
	if grep -q '^//go:build' "$f" && grep '^//go:build' "$f" | grep -q '!arm64'; then continue; fi
	# shellcheck disable=SC2086 # flag lists
	"$CC" $TARGET $M1 $wflags -I"$root/csrc" -c "$f" -o "$out/w_$name.o"
	wobjs="$wobjs $out/w_$name.o"
done
for d in "$root"/csrc/*/; do
	d=${d%/}
	[ "$(basename "$d")" = tests ] && continue
	sflags=$(cgo_flags "$d")
	for f in "$d"/*_arm64.c; do
		[ -f "$f" ] || continue
		name=$(basename "$d")_$(basename "$f" .c)
		# shellcheck disable=SC2086
		"$CC" $TARGET $M1 -O2 -g $sflags -I"$root/csrc" -I"$d" -c "$f" -o "$out/w_$name.o"
		wobjs="$wobjs $out/w_$name.o"
	done
done

# The impl id Go's dispatch picks on an M1 (dotprod) and on an M2 (i8mm:
# neon-i8mm; were it gone, the M2 would run the dotprod set), from the
# archImpls list of kernels/dispatch_arm64.go: {"name", id}.
impl_of() { # $1: pattern of the set's name -> "name id"
	sed -n 's/.*implInfo{"\([a-z0-9-]*'"$1"'[a-z0-9-]*\)", *\([0-9][0-9]*\)}.*/\1 \2/p' \
		"$root/kernels/dispatch_arm64.go" | head -n 1
}
dot_set=$(impl_of dotprod)
[ -n "$dot_set" ] || die "kernels/dispatch_arm64.go names no dotprod kernel set"
mm_set=$(impl_of i8mm)
[ -n "$mm_set" ] || mm_set=$dot_set

# --- llama.cpp's kernels, for an M1 and for an M2 ---------------------------
# At -O3, as llama.cpp's own (CMake Release) build compiles them; cgo builds
# Woolly at -O2. (-O2 would cost llama.cpp's Q4_K gemm 55.8 instead of 42.9.)
# Only the kernels are taken from llama.cpp: each function in a section of its
# own and --gc-sections drop the rest, with the references of its fallback
# paths (the *_generic kernels of repack.cpp, the quantizers), which the
# kernels this CPU runs never reach.
GG="-D_GNU_SOURCE -DNDEBUG -ffunction-sections -fdata-sections -I$L/include -I$L/src -I$L/src/ggml-cpu"
for cpu in apple-m1 apple-m2; do
	# shellcheck disable=SC2086
	"$CC" $TARGET -mcpu=$cpu -O3 -std=c11 $GG -c "$L/src/ggml-cpu/arch/arm/quants.c" -o "$out/l_quants_$cpu.o"
	# shellcheck disable=SC2086
	"$CXX" $TARGET -mcpu=$cpu -O3 -std=c++17 $GG -c "$L/src/ggml-cpu/arch/arm/repack.cpp" -o "$out/l_repack_$cpu.o"
	# shellcheck disable=SC2086
	"$CC" $TARGET -mcpu=$cpu -O2 -std=c11 -I"$root/csrc" -c "$here/harness.c" -o "$out/harness_$cpu.o"
	# shellcheck disable=SC2086
	"$CXX" $TARGET -mcpu=$cpu -fuse-ld=lld -static -Wl,--gc-sections -o "$out/harness_$cpu" \
		"$out/harness_$cpu.o" $wobjs "$out/l_quants_$cpu.o" "$out/l_repack_$cpu.o" -lm
done

# --- counting -------------------------------------------------------------
# count BINARY ARGS...: instructions executed by one harness run ("none" when
# llama.cpp has no such kernel); the harness's own line stays in $out/run.out.
count() {
	bin=$1
	shift
	log=$out/run.log
	status=0
	"$QEMU" -cpu max -plugin "$out/icount.so" -d plugin -D "$log" "$bin" "$@" >"$out/run.out" 2>&1 || status=$?
	if [ "$status" -eq 3 ] && grep -q '^none$' "$out/run.out"; then
		echo none
		return 0
	fi
	[ "$status" -eq 0 ] || die "harness $* failed (status $status): $(cat "$out/run.out")"
	n=$(sed -n 's/^icount: \([0-9][0-9]*\)$/\1/p' "$log")
	[ -n "$n" ] || die "no instruction count from the plugin for harness $*"
	echo "$n"
}
# per256 BINARY SIDE TYPE NTOK [IMPL]: instructions per 256 weights per row
# per token of one product, from the counts at REPS and at 0 repetitions
per256() {
	bin=$1 side=$2 type=$3 ntok=$4
	shift 4
	base=$(count "$bin" "$side" "$type" "$ntok" 0 "$@")
	[ "$base" = none ] && {
		echo null
		return 0
	}
	full=$(count "$bin" "$side" "$type" "$ntok" "$REPS" "$@")
	geom=$(sed -n 's/.* rows=\([0-9]*\) n=\([0-9]*\) .*/\1 \2/p' "$out/run.out")
	[ -n "$geom" ] || die "no rows= n= in the harness output: $(cat "$out/run.out")"
	# shellcheck disable=SC2086 # rows and n
	set -- $geom
	awk -v a="$base" -v b="$full" -v r="$REPS" -v rows="$1" -v n="$2" -v t="$ntok" \
		'BEGIN { printf "%.1f", (b - a) / (r * rows * (n / 256) * t) }'
}

for isa in dotprod i8mm; do
	if [ "$isa" = dotprod ]; then
		bin=$out/harness_apple-m1 set=$dot_set
	else
		bin=$out/harness_apple-m2 set=$mm_set
	fi
	# shellcheck disable=SC2086 # "name id"
	set -- $set
	wname=$1 wimpl=$2
	for type in $TYPES; do
		wpath=$("$QEMU" -cpu max "$bin" info "$type" "$wimpl") || die "harness info $type $wimpl failed"
		# the two sides must compute the same products from the same bytes
		for ntok in 1 "$NTOK"; do
			"$QEMU" -cpu max "$bin" check "$type" "$ntok" "$wimpl" >"$out/check.out" 2>&1 ||
				die "$isa $type: Woolly's product and llama.cpp's vec_dot disagree: $(cat "$out/check.out")"
		done
		for path in gemv gemm; do
			if [ "$path" = gemv ]; then ntok=1; else ntok=$NTOK; fi
			w=$(per256 "$bin" woolly "$type" "$ntok" "$wimpl")
			v=$(per256 "$bin" vec_dot "$type" "$ntok")
			r=$(per256 "$bin" repack "$type" "$ntok")
			printf '{"type":"%s","path":"%s","isa":"%s","woolly":%s,"llama_vec_dot":%s,"llama_repack":%s,"woolly_impl":"%s","woolly_path":"%s","ntok":%s}\n' \
				"$type" "$path" "$isa" "$w" "$v" "$r" "$wname" "$wpath" "$ntok"
		done
	done
done

# --- end to end (APPLE_PROXY_E2E=MODEL.gguf) ----------------------------------
[ -n "$model" ] || exit 0

# Woolly for arm64, static, its cgo code compiled as for an M1
CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$CC $TARGET $M1" \
	go build -ldflags "-linkmode external -extldflags '-static -fuse-ld=lld'" -o "$out/woolly-arm64" ./cmd/woolly

# llama.cpp's llama-bench for arm64: CPU backend only, static, -mcpu=apple-m1
lb=${APPLE_PROXY_LLAMA_BENCH:-$out/llama-arm64/bin/llama-bench}
if [ ! -x "$lb" ]; then
	command -v cmake >/dev/null 2>&1 || die "cmake not found (needed to build llama-bench for arm64)"
	lf="--target=aarch64-linux-gnu -mcpu=apple-m1"
	cmake -S "$L/.." -B "$out/llama-arm64" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
		-DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
		-DCMAKE_C_FLAGS="$lf" -DCMAKE_CXX_FLAGS="$lf" -DCMAKE_EXE_LINKER_FLAGS="-static -fuse-ld=lld" \
		-DCMAKE_FIND_ROOT_PATH="$SYSROOT" -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
		-DGGML_BACKEND_DL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_SERVER=OFF >"$out/llama-arm64.log"
	jobs=$( (nproc || sysctl -n hw.ncpu || echo 2) 2>/dev/null | head -n 1)
	cmake --build "$out/llama-arm64" -j "$jobs" --target llama-bench >>"$out/llama-arm64.log" ||
		die "llama-bench arm64 build failed: see $out/llama-arm64.log"
fi

# e2e_count PROGRAM ARGS...: instructions the whole run executed, every thread
e2e_count() {
	log=$out/e2e.log
	"$QEMU" -cpu max -plugin "$out/icount.so,threads=on" -d plugin -D "$log" "$@" >"$out/e2e.out" 2>&1 ||
		die "$* failed under qemu: $(tail -n 5 "$out/e2e.out")"
	n=$(sed -n 's/^icount: \([0-9][0-9]*\)$/\1/p' "$log")
	[ -n "$n" ] || die "no instruction count from the plugin for $*"
	echo "$n"
}
per_token() { # A B TOKENS
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { printf "%.0f", (b - a) / t }'
}
# woolly bench runs each test twice (an unrecorded warm-up, then -r 1);
# llama-bench --no-warmup -r 1 once.
W="$out/woolly-arm64 bench -m $model -t 1 -r 1"
LB="$lb -m $model -t 1 -r 1 --no-warmup"
# (each count its own assignment, so that set -e stops at a failed run)
# shellcheck disable=SC2086 # argument lists
{
	a=$(e2e_count $W -p 0 -n 1)
	b=$(e2e_count $W -p 0 -n $((1 + TG)))
	w_tg=$(per_token "$a" "$b" $((2 * TG)))
	a=$(e2e_count $LB -p 0 -n 1)
	b=$(e2e_count $LB -p 0 -n $((1 + TG)))
	l_tg=$(per_token "$a" "$b" "$TG")
	a=$(e2e_count $W -p 32 -n 0)
	b=$(e2e_count $W -p $((32 + PP)) -n 0)
	w_pp=$(per_token "$a" "$b" $((2 * PP)))
	a=$(e2e_count $LB -p 32 -n 0)
	b=$(e2e_count $LB -p $((32 + PP)) -n 0)
	l_pp=$(per_token "$a" "$b" "$PP")
}
for p in tg pp; do
	if [ $p = tg ]; then w=$w_tg l=$l_tg; else w=$w_pp l=$l_pp; fi
	printf '{"type":"e2e","path":"%s","model":"%s","woolly":%s,"llama":%s,"ratio":%s}\n' "$p" "$(basename "$model")" \
		"$w" "$l" "$(awk -v a="$w" -v b="$l" 'BEGIN { printf "%.2f", a / b }')"
done
