#!/bin/sh
# scripts/bench.sh — the `make bench` report (make builds bin/woolly first).
#
# 1. Go kernel microbenchmarks (go test ./kernels -bench), ~1-2 minutes.
# 2. models/tinyllama-1.1b-q4_k_m.gguf, synthesized if absent (random
#    weights, TinyLlama-1.1B's exact shapes).
# 3. woolly bench on it (pp128 / tg64 at -t = physical cores).
# 4. Memory read bandwidth (woolly bench --bandwidth, all CPUs) and the
#    generation bound: bandwidth / weight bytes read per token.
# 5. With LLAMA_BENCH=/path/to/llama-bench, llama-bench on the same file and
#    the Woolly / llama.cpp ratio per test, on the CPU: llama-bench runs with
#    -ngl 0 and, where it has the option, -nopo 1 (no op offload). When the
#    llama-bench build has a GPU (its JSON's gpu_info, e.g. a Homebrew or
#    release build with Metal on a Mac), its default GPU run (-ngl 99) is
#    reported beside the CPU figure, in a column labelled GPU, not in the ratio.
# 3b. Generation deep in a context: tgN after BENCH_DEPTH (4096; 0 skips)
#    tokens (woolly bench -d, and llama-bench -d when given).
# 5b. With BENCH_MOE=1, the same (woolly bench, and llama-bench when given)
#    on a mixture-of-experts model: models/qwen3moe-7b-a1b-q4_k_m.gguf
#    (BENCH_MOE_MODEL), synthesized if absent (64 experts, 8 used).
# Writes bench-out/report.md (plus the raw outputs next to it).
#
# Environment: WOOLLY (bin/woolly), BENCH_OUT (bench-out), BENCH_MODEL,
# BENCH_P (128), BENCH_N (64), BENCH_R (3), BENCH_THREADS (physical cores),
# BENCH_KERNEL_TIME (100ms; "skip" skips the Go benchmarks), LLAMA_BENCH,
# BENCH_DEPTH (4096; 0 skips 3b).
# POSIX sh; works on Linux and macOS.
set -eu

cd "$(dirname "$0")/.."
WOOLLY=${WOOLLY:-bin/woolly}
OUT=${BENCH_OUT:-bench-out}
MODEL=${BENCH_MODEL:-models/tinyllama-1.1b-q4_k_m.gguf}
P=${BENCH_P:-128}
N=${BENCH_N:-64}
R=${BENCH_R:-3}
KTIME=${BENCH_KERNEL_TIME:-100ms}

if [ ! -x "$WOOLLY" ]; then
	echo "bench.sh: $WOOLLY not found; run 'make bench' (it builds bin/woolly first)" >&2
	exit 1
fi
mkdir -p "$OUT"

# --- machine -----------------------------------------------------------
os=$(uname -s)
arch=$(uname -m)
case $os in
Darwin)
	cpu=$(sysctl -n machdep.cpu.brand_string 2>/dev/null || echo "$arch")
	phys=$(sysctl -n hw.physicalcpu)
	logical=$(sysctl -n hw.logicalcpu)
	;;
*)
	cpu=$(grep -m1 -E '^(model name|Model|Hardware)' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
	[ -n "$cpu" ] || cpu=$arch
	logical=$(getconf _NPROCESSORS_ONLN)
	phys=$(lscpu -p=core,socket 2>/dev/null | grep -v '^#' | sort -u | wc -l | tr -d ' ' || true)
	case $phys in '' | 0) phys=$logical ;; esac
	;;
esac
THREADS=${BENCH_THREADS:-$phys}
echo "bench.sh: $cpu, $phys physical cores, $logical logical; threads $THREADS" >&2

# --- 1. kernel microbenchmarks -----------------------------------------
if [ "$KTIME" != skip ]; then
	echo "bench.sh: go test ./kernels -bench . -benchtime $KTIME" >&2
	go test ./kernels -run '^$' -bench . -benchtime "$KTIME" >"$OUT/kernels-bench.txt" 2>&1 || {
		echo "bench.sh: kernel benchmarks failed, see $OUT/kernels-bench.txt" >&2
		exit 1
	}
fi

# --- 2. model ----------------------------------------------------------
synth_s=""
if [ ! -f "$MODEL" ]; then
	mkdir -p "$(dirname "$MODEL")"
	echo "bench.sh: synthesizing $MODEL" >&2
	t0=$(date +%s)
	"$WOOLLY" synth --preset tinyllama-1.1b --type q4_k_m -o "$MODEL" >"$OUT/synth.txt"
	synth_s=$(($(date +%s) - t0))
fi

# --- 3. woolly bench ---------------------------------------------------
echo "bench.sh: woolly bench -m $MODEL -p $P -n $N -t $THREADS -r $R" >&2
"$WOOLLY" bench -m "$MODEL" -p "$P" -n "$N" -t "$THREADS" -r "$R" --json >"$OUT/woolly-bench.json"

# llama-bench's CPU-only arguments: a Metal (or CUDA, Vulkan) build puts every
# layer on the GPU by default, and with -ngl 0 still sends the matrix products
# of large batches to it (op offload) unless -nopo 1 (builds older than that
# option have no op offload either).
LB_CPU=""
if [ -n "${LLAMA_BENCH:-}" ]; then
	LB_CPU="-ngl 0"
	if "$LLAMA_BENCH" --help 2>&1 | grep -q -- '--no-op-offload'; then LB_CPU="$LB_CPU -nopo 1"; fi
fi

# --- 3b. generation at depth -------------------------------------------
DEPTH=${BENCH_DEPTH:-4096}
depth_ts="" depth_llama=""
if [ "$DEPTH" != 0 ]; then
	echo "bench.sh: woolly bench -m $MODEL -p 0 -n $N -d $DEPTH -t $THREADS -r $R" >&2
	"$WOOLLY" bench -m "$MODEL" -p 0 -n "$N" -d "$DEPTH" -t "$THREADS" -r "$R" --json >"$OUT/woolly-bench-depth.json"
	depth_ts=$(tr '{' '\n' <"$OUT/woolly-bench-depth.json" | grep '"test":' | sed 's/.*"tokens_per_s":\([^,]*\),"stddev":\([^,}]*\).*/\1 \2/' | head -n 1)
	if [ -n "${LLAMA_BENCH:-}" ]; then
		echo "bench.sh: $LLAMA_BENCH -m $MODEL -p 0 -n $N -d $DEPTH -t $THREADS -r $R $LB_CPU -o json" >&2
		# shellcheck disable=SC2086 # LB_CPU is a list of arguments
		"$LLAMA_BENCH" -m "$MODEL" -p 0 -n "$N" -d "$DEPTH" -t "$THREADS" -r "$R" $LB_CPU -o json >"$OUT/llama-bench-depth.json" 2>"$OUT/llama-bench-depth.log" || true
		depth_llama=$(tr -d ' \n' <"$OUT/llama-bench-depth.json" | sed -n 's/.*"avg_ts":\([^,}]*\).*/\1/p' | head -n 1)
	fi
fi

# jfield FILE KEY: the first scalar value of "KEY" in a flat JSON text.
jfield() {
	sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p" "$1" | head -n 1
}
# results FILE: one line per result: threads test tokens_per_s stddev
results() {
	tr '{' '\n' <"$1" | grep '"test":' | sed 's/.*"threads":\([0-9]*\),"test":"\([a-z0-9]*\)","tokens_per_s":\([^,]*\),"stddev":\([^,}]*\).*/\1 \2 \3 \4/'
}

kern=$(jfield "$OUT/woolly-bench.json" kernels)
avail=$(sed -n 's/.*"kernels_available":\[\([^]]*\)\].*/\1/p' "$OUT/woolly-bench.json" | tr -d '"' | sed 's/,/, /g')
bpt=$(jfield "$OUT/woolly-bench.json" bytes_per_token)
ftype=$(jfield "$OUT/woolly-bench.json" file_type)
params=$(jfield "$OUT/woolly-bench.json" params)
fsize=$(wc -c <"$MODEL" | tr -d ' ')

# --- 4. bandwidth and bound --------------------------------------------
echo "bench.sh: memory bandwidth probe ($logical threads, 1 GiB)" >&2
"$WOOLLY" bench --bandwidth -t "$logical" --bw-size 1024 --json >"$OUT/bandwidth.json"
bw=$(awk -v x="$(jfield "$OUT/bandwidth.json" bandwidth_gbps)" 'BEGIN { printf "%.2f", x }')
bound=$(awk -v bw="$bw" -v b="$bpt" 'BEGIN { printf "%.1f", bw * 1e9 / b }')

# --- 5. llama-bench ----------------------------------------------------
# lb_results FILE: one line per llama-bench test: test avg_ts stddev_ts
lb_results() {
	tr -d ' \n' <"$1" | tr '{' '\n' | grep '"n_prompt"' | awk -F, '{
		np = ng = ts = sd = ""
		for (i = 1; i <= NF; i++) {
			split($i, kv, ":"); k = kv[1]; gsub(/"/, "", k)
			if (k == "n_prompt") np = kv[2]; else if (k == "n_gen") ng = kv[2]
			else if (k == "avg_ts") ts = kv[2]; else if (k == "stddev_ts") sd = kv[2]
		}
		if (np + 0 > 0 && ng + 0 == 0) print "pp" np, ts, sd
		else if (ng + 0 > 0 && np + 0 == 0) print "tg" ng, ts, sd
	}'
}
# lb_string FILE KEY: the first string value of KEY in llama-bench's JSON
lb_string() {
	sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1
}
llama="" llama_gpu="" gpu_label=""
if [ -n "${LLAMA_BENCH:-}" ]; then
	echo "bench.sh: $LLAMA_BENCH -m $MODEL -p $P -n $N -t $THREADS -r $R $LB_CPU -o json" >&2
	# shellcheck disable=SC2086 # LB_CPU is a list of arguments
	"$LLAMA_BENCH" -m "$MODEL" -p "$P" -n "$N" -t "$THREADS" -r "$R" $LB_CPU -o json >"$OUT/llama-bench.json" 2>"$OUT/llama-bench.log"
	llama=$(lb_results "$OUT/llama-bench.json")
	gpu=$(lb_string "$OUT/llama-bench.json" gpu_info)
	if [ -n "$gpu" ]; then
		gpu_label="$(lb_string "$OUT/llama-bench.json" backends | tr -d ' '): $gpu"
		echo "bench.sh: llama-bench has a GPU ($gpu_label): $LLAMA_BENCH -m $MODEL -p $P -n $N -t $THREADS -r $R -ngl 99 -o json" >&2
		"$LLAMA_BENCH" -m "$MODEL" -p "$P" -n "$N" -t "$THREADS" -r "$R" -ngl 99 -o json >"$OUT/llama-bench-gpu.json" 2>"$OUT/llama-bench-gpu.log"
		llama_gpu=$(lb_results "$OUT/llama-bench-gpu.json")
	fi
fi

# --- 5b. mixture of experts (BENCH_MOE=1) -------------------------------
moe_md=""
if [ "${BENCH_MOE:-0}" = 1 ]; then
	MOE=${BENCH_MOE_MODEL:-models/qwen3moe-7b-a1b-q4_k_m.gguf}
	if [ ! -f "$MOE" ]; then
		mkdir -p "$(dirname "$MOE")"
		echo "bench.sh: synthesizing $MOE" >&2
		"$WOOLLY" synth --preset qwen3moe-7b-a1b --type q4_k_m -o "$MOE" >"$OUT/synth-moe.txt"
	fi
	echo "bench.sh: woolly bench -m $MOE -p $P -n $N -t $THREADS -r $R" >&2
	"$WOOLLY" bench -m "$MOE" -p "$P" -n "$N" -t "$THREADS" -r "$R" --json >"$OUT/woolly-bench-moe.json"
	moe_llama=""
	if [ -n "${LLAMA_BENCH:-}" ]; then
		echo "bench.sh: $LLAMA_BENCH -m $MOE -p $P -n $N -t $THREADS -r $R $LB_CPU -o json" >&2
		# shellcheck disable=SC2086 # LB_CPU is a list of arguments
		"$LLAMA_BENCH" -m "$MOE" -p "$P" -n "$N" -t "$THREADS" -r "$R" $LB_CPU -o json >"$OUT/llama-bench-moe.json" 2>"$OUT/llama-bench-moe.log"
		moe_llama=$(lb_results "$OUT/llama-bench-moe.json")
	fi
	moe_bpt=$(jfield "$OUT/woolly-bench-moe.json" bytes_per_token)
	moe_md="$OUT/moe.md"
	{
		echo "\`$MOE\`: $(jfield "$OUT/woolly-bench-moe.json" params) parameters; a generated token reads $moe_bpt bytes of weights"
		echo "(the 8 used experts of 64), so generation is bound by $(awk -v bw="$bw" -v b="$moe_bpt" 'BEGIN { printf "%.1f", bw * 1e9 / b }') tokens/s at $bw GB/s."
		echo
		echo "| threads | test | tokens/s | ± stddev | llama.cpp t/s | Woolly / llama.cpp |"
		echo "|---:|---:|---:|---:|---:|---:|"
		results "$OUT/woolly-bench-moe.json" | while read -r th test ts sd; do
			lts=$(printf '%s\n' "$moe_llama" | awk -v t="$test" '$1 == t { printf "%.2f", $2 }')
			ratio=""
			[ -n "$lts" ] && ratio=$(awk -v a="$ts" -v b="$lts" 'BEGIN { printf "%.2f", a / b }')
			printf '| %s | %s | %.2f | %.2f | %s | %s |\n' "$th" "$test" "$ts" "$sd" "${lts:--}" "${ratio:--}"
		done
	} >"$moe_md"
fi

# --- report ------------------------------------------------------------
R_MD="$OUT/report.md"
{
	echo "# Woolly benchmark report"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "## Machine"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| OS / arch | $os $arch |"
	echo "| CPU | $cpu |"
	echo "| cores | $phys physical, $logical logical |"
	echo "| kernels in use | $kern (available: $avail) |"
	echo "| memory read bandwidth | $bw GB/s ($logical threads streaming 1 GiB, best of 5) |"
	echo
	echo "## Model"
	echo
	echo "\`$MODEL\`: $ftype, $params parameters, $fsize bytes; a generated token reads $bpt bytes of weights (all tensors but token_embd)."
	if [ -n "$synth_s" ]; then
		echo "Synthesized for this run in ${synth_s}s: $(cat "$OUT/synth.txt")"
	fi
	echo
	echo "## Speed (woolly bench, $R runs after one warm-up, each from an empty context)"
	echo
	if [ -n "$llama" ]; then
		echo "llama.cpp t/s: llama-bench on the CPU ($LB_CPU), the same threads; the ratio is against it."
		[ -n "$gpu_label" ] && echo "llama.cpp GPU t/s: the same llama-bench with every layer on its GPU (-ngl 99; $gpu_label), for reference only."
		echo
	fi
	if [ -n "$gpu_label" ]; then
		echo "| threads | test | tokens/s | ± stddev | llama.cpp t/s | Woolly / llama.cpp | llama.cpp GPU t/s ($gpu_label) |"
		echo "|---:|---:|---:|---:|---:|---:|---:|"
	else
		echo "| threads | test | tokens/s | ± stddev | llama.cpp t/s | Woolly / llama.cpp |"
		echo "|---:|---:|---:|---:|---:|---:|"
	fi
	results "$OUT/woolly-bench.json" | while read -r th test ts sd; do
		lts="" ratio=""
		if [ -n "$llama" ]; then
			lts=$(printf '%s\n' "$llama" | awk -v t="$test" '$1 == t { printf "%.2f", $2 }')
			[ -n "$lts" ] && ratio=$(awk -v a="$ts" -v b="$lts" 'BEGIN { printf "%.2f", a / b }')
		fi
		printf '| %s | %s | %.2f | %.2f | %s | %s |' "$th" "$test" "$ts" "$sd" "${lts:--}" "${ratio:--}"
		if [ -n "$gpu_label" ]; then
			gts=$(printf '%s\n' "$llama_gpu" | awk -v t="$test" '$1 == t { printf "%.2f", $2 }')
			printf ' %s (GPU) |' "${gts:--}"
		fi
		echo
	done
	if [ -n "$depth_ts" ]; then
		echo
		echo "## Generation at depth (tg$N after $DEPTH tokens in the context: woolly bench -d $DEPTH)"
		echo
		dts=${depth_ts% *} dsd=${depth_ts#* } ratio="-"
		[ -n "$depth_llama" ] && ratio=$(awk -v a="$dts" -v b="$depth_llama" 'BEGIN { printf "%.2f", a / b }')
		printf '| tokens/s | ± stddev | llama.cpp t/s | Woolly / llama.cpp |\n|---:|---:|---:|---:|\n| %.2f | %.2f | %s | %s |\n' "$dts" "$dsd" "${depth_llama:--}" "$ratio"
	fi
	echo
	echo "## Generation bound"
	echo
	tg=$(results "$OUT/woolly-bench.json" | awk '$2 ~ /^tg/ { print $3; exit }')
	echo "bandwidth / bytes per token = $bw GB/s / $bpt B = **$bound tokens/s** at most for generation."
	if [ -n "$tg" ]; then
		echo "Measured generation: $(awk -v a="$tg" 'BEGIN { printf "%.2f", a }') tokens/s = $(awk -v a="$tg" -v b="$bound" 'BEGIN { printf "%.0f", 100 * a / b }')% of the bound."
	fi
	if [ -z "${LLAMA_BENCH:-}" ]; then
		echo
		echo "(Set LLAMA_BENCH=/path/to/llama-bench to compare with llama.cpp on the same file.)"
	fi
	if [ -n "$moe_md" ]; then
		echo
		echo "## Mixture of experts (BENCH_MOE=1)"
		echo
		cat "$moe_md"
	fi
	if [ -f "$OUT/kernels-bench.txt" ] && [ "$KTIME" != skip ]; then
		echo
		echo "## Kernel microbenchmarks (go test ./kernels -bench . -benchtime $KTIME)"
		echo
		echo '```'
		grep -E '^(Benchmark|goos|goarch|cpu)' "$OUT/kernels-bench.txt" || true
		echo '```'
	fi
} >"$R_MD"

echo "bench.sh: wrote $R_MD" >&2
sed -n '/^## Speed/,/^## Kernel/p' "$R_MD" | sed '$d'
