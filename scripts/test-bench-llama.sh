#!/bin/sh
# scripts/test-bench-llama.sh — how scripts/bench.sh drives llama-bench
# (make test-bench-llama): bench.sh runs against a stand-in llama-bench that
# records its arguments and answers in llama-bench's JSON, three times:
#   cpu     a CPU-only build that has -nopo: every run gets -ngl 0 -nopo 1,
#           there is no GPU run and no GPU column
#   gpu     a Metal build (gpu_info "Apple M2 Max"): the same CPU runs, plus
#           one with -ngl 99 whose figures land in the GPU column only, the
#           ratio staying against the CPU figures
#   old     a build without -nopo: -ngl 0 alone
# bench.sh itself runs for real (woolly bench on a small model, the
# bandwidth probe); the kernel benchmarks and the cache section are skipped.
#
# Environment: WOOLLY (default: built into a temporary directory),
# TEST_BENCH_MODEL (default ../shared/models/stories260K-Q4_K_M.gguf).
set -eu

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
	printf 'test-bench-llama: FAIL: %s\n' "$*" >&2
	exit 1
}

woolly=${WOOLLY:-}
if [ -z "$woolly" ]; then
	go build -o "$tmp/woolly" ./cmd/woolly
	woolly=$tmp/woolly
fi
model=${TEST_BENCH_MODEL:-../shared/models/stories260K-Q4_K_M.gguf}
[ -f "$model" ] || fail "no model $model (set TEST_BENCH_MODEL)"

# The stand-in: FAKE_LOG gets one line of arguments per run; FAKE_GPU is its
# gpu_info ("" = CPU only); FAKE_NOPO=0 leaves -nopo out of its --help.
# Its speeds tell the runs apart: 11.5 (pp) and 3.25 (tg) tokens/s with
# -ngl 0, 222.5 and 44.25 otherwise.
cat >"$tmp/llama-bench" <<'EOF'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
case "$*" in
--help)
	echo "usage: llama-bench [options]"
	echo "  -ngl, --n-gpu-layers <n>"
	if [ "${FAKE_NOPO:-1}" = 1 ]; then echo "  -nopo, --no-op-offload <0|1>"; fi
	exit 0
	;;
esac
p=512 n=128 ngl=99
while [ $# -gt 0 ]; do
	case $1 in
	-p) p=$2; shift ;;
	-n) n=$2; shift ;;
	-ngl) ngl=$2; shift ;;
	-m | -d | -t | -r | -o | -nopo) shift ;;
	*) echo "llama-bench: unknown argument $1" >&2; exit 1 ;;
	esac
	shift
done
if [ "$ngl" = 0 ]; then pp=11.5 tg=3.25; else pp=222.5 tg=44.25; fi
first=1
echo "["
for t in pp tg; do
	if [ $t = pp ]; then np=$p ng=0 ts=$pp; else np=0 ng=$n ts=$tg; fi
	[ "$np" = 0 ] && [ "$ng" = 0 ] && continue
	[ $first = 1 ] || echo "  ,"
	first=0
	printf '  {\n    "build_commit": "fake",\n    "cpu_info": "Apple M2 Max",\n    "gpu_info": "%s",\n' "$FAKE_GPU"
	printf '    "backends": "%s",\n    "n_gpu_layers": %s,\n    "n_prompt": %s,\n    "n_gen": %s,\n' "$FAKE_BACKENDS" "$ngl" "$np" "$ng"
	printf '    "avg_ts": %s,\n    "stddev_ts": 0.125\n  }\n' "$ts"
done
echo "]"
EOF
chmod +x "$tmp/llama-bench"

# run_bench NAME GPU BACKENDS NOPO: bench.sh with the stand-in; its report in $tmp/NAME/report.md
# (the default depth, 4096, past the model's 128-token context as on the
# synthesized TinyLlama: woolly bench must measure it, as llama-bench does)
run_bench() {
	FAKE_LOG=$tmp/$1.args FAKE_GPU=$2 FAKE_BACKENDS=$3 FAKE_NOPO=$4 LLAMA_BENCH=$tmp/llama-bench \
		WOOLLY=$woolly BENCH_OUT=$tmp/$1 BENCH_MODEL=$model BENCH_P=8 BENCH_N=4 BENCH_R=1 BENCH_THREADS=1 \
		BENCH_KERNEL_TIME=skip \
		sh scripts/bench.sh >"$tmp/$1.out" 2>"$tmp/$1.err" || {
		cat "$tmp/$1.err" >&2
		fail "$1: bench.sh failed"
	}
}
# runs NAME: the recorded benchmark runs (not --help)
runs() { grep -v -- '--help' "$tmp/$1.args" || true; }

# --- cpu: CPU-only build with -nopo --------------------------------------------
run_bench cpu "" CPU 1
[ "$(runs cpu | wc -l | tr -d ' ')" = 2 ] || fail "cpu: want 2 runs (depth, main), got: $(runs cpu)"
runs cpu | while read -r line; do
	case " $line " in *" -ngl 0 "*) ;; *) fail "cpu: a run without -ngl 0: $line" ;; esac
	case " $line " in *" -nopo 1 "*) ;; *) fail "cpu: a run without -nopo 1: $line" ;; esac
done
grep -q 'GPU' "$tmp/cpu/report.md" && fail "cpu: the report has a GPU figure for a CPU-only build"
grep -q '| 1 | pp8 | [0-9.]* | [0-9.]* | 11.50 | ' "$tmp/cpu/report.md" || fail "cpu: no pp8 row with the CPU figure 11.50: $(grep pp8 "$tmp/cpu/report.md")"

# --- gpu: a Metal build --------------------------------------------------------------
run_bench gpu "Apple M2 Max" "Metal,BLAS" 1
runs gpu | grep -v -- '-ngl 99' | while read -r line; do
	case " $line " in *" -ngl 0 "*) ;; *) fail "gpu: a CPU run without -ngl 0: $line" ;; esac
	case " $line " in *" -nopo 1 "*) ;; *) fail "gpu: a CPU run without -nopo 1: $line" ;; esac
done
[ "$(runs gpu | grep -c -- '-ngl 99')" = 1 ] || fail "gpu: want one -ngl 99 run, got: $(runs gpu)"
runs gpu | grep -- '-ngl 99' | grep -q -- '-ngl 0' && fail "gpu: the GPU run also has -ngl 0"
row=$(grep '| 1 | pp8 |' "$tmp/gpu/report.md") || fail "gpu: no pp8 row"
ts=$(echo "$row" | awk -F'|' '{ gsub(/ /, "", $4); print $4 }')
want=$(awk -v a="$ts" 'BEGIN { printf "%.2f", a / 11.5 }')
case $row in
*"| 11.50 | $want | 222.50 (GPU) |") ;;
*) fail "gpu: want CPU 11.50, ratio $want against it and GPU 222.50 in the pp8 row, got: $row" ;;
esac
grep -q 'llama.cpp GPU t/s (Metal,BLAS: Apple M2 Max)' "$tmp/gpu/report.md" || fail "gpu: the GPU column is not labelled with the device"
grep '| 1 | tg4 |' "$tmp/gpu/report.md" | grep -q '| 3.25 | .* | 44.25 (GPU) |' || fail "gpu: tg4 row: $(grep tg4 "$tmp/gpu/report.md")"

# --- old: a build without -nopo ---------------------------------------------------------
run_bench old "" CPU 0
runs old | while read -r line; do
	case " $line " in *" -nopo "*) fail "old: -nopo passed to a build without it: $line" ;; esac
	case " $line " in *" -ngl 0 "*) ;; *) fail "old: a run without -ngl 0: $line" ;; esac
done

echo "test-bench-llama: ok (cpu, gpu, old)"
