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
# tree at the reference commit) with -mcpu=apple-m1 (dotprod) and again with
# -mcpu=apple-m2 (dotprod + i8mm), as its native build on those CPUs compiles
# them. One JSON object per line:
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
# APPLE_PROXY_TYPES ("q4_k q5_k q6_k q8_0 iq4_xs").
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
TYPES=${APPLE_PROXY_TYPES:-q4_k q5_k q6_k q8_0 iq4_xs}
if [ -z "$CC" ] || [ -z "$CXX" ]; then die "no clang found (apt-get install clang-16 lld-16)"; fi
[ -n "$HOSTCC" ] || die "no host C compiler for the qemu plugin"
command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (apt-get install qemu-user)"
[ -d "$SYSROOT" ] || die "no arm64 sysroot at $SYSROOT (apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu)"
case $REPS in '' | *[!0-9]* | 0) die "APPLE_PROXY_REPS must be a positive integer, got '$REPS'" ;; esac
case $NTOK in '' | *[!0-9]*) die "APPLE_PROXY_NTOK must be a positive multiple of 4, got '$NTOK'" ;; esac
if [ "$NTOK" -lt 4 ] || [ "$NTOK" -gt 64 ] || [ $((NTOK % 4)) -ne 0 ]; then
	die "APPLE_PROXY_NTOK must be a multiple of 4 in 4..64, got $NTOK"
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

# The impl id Go's dispatch picks on an M1 (dotprod) and on an M2 (i8mm, when
# Woolly has such a set; otherwise the M2 runs the dotprod set too), from the
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
# Only the kernels are taken from llama.cpp: each function in a section of its
# own and --gc-sections drop the rest, with the references of its fallback
# paths (the *_generic kernels of repack.cpp, the quantizers), which the
# kernels this CPU runs never reach.
GG="-D_GNU_SOURCE -DNDEBUG -ffunction-sections -fdata-sections -I$L/include -I$L/src -I$L/src/ggml-cpu"
for cpu in apple-m1 apple-m2; do
	# shellcheck disable=SC2086
	"$CC" $TARGET -mcpu=$cpu -O2 -std=c11 $GG -c "$L/src/ggml-cpu/arch/arm/quants.c" -o "$out/l_quants_$cpu.o"
	# shellcheck disable=SC2086
	"$CXX" $TARGET -mcpu=$cpu -O2 -std=c++17 $GG -c "$L/src/ggml-cpu/arch/arm/repack.cpp" -o "$out/l_repack_$cpu.o"
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
