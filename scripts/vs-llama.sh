#!/bin/sh
# scripts/vs-llama.sh — Woolly against llama.cpp on one model, same run:
# ROUNDS interleaved rounds (Woolly, then each llama-bench build), each round
# pp128, pp512, tg64 at depth 0 and tg64 at depths 1024 and 4096; prints every
# sample, then the median per test and engine and Woolly's ratio to each
# llama.cpp build, and each engine's peak RSS (of its pp/tg run).
#
#   LLAMA_AVX2=…/build-avx2/bin/llama-bench LLAMA_NATIVE=…/build-native/bin/llama-bench \
#     sh scripts/vs-llama.sh MODEL.gguf [ROUNDS]
#
# Builds: ../shared/tools/build-llama-ref.sh. Either build may be left out.
# Environment: WOOLLY (bin/woolly), THREADS (2), DEPTHS (1024,4096; "" skips),
# PP (128,512), TG (64), R (2: repetitions of pp/tg per round; depth tests run once).
# Measure on a quiet machine: another job on the cores makes every ratio noise.
set -eu

[ $# -ge 1 ] || { echo "usage: sh scripts/vs-llama.sh MODEL.gguf [ROUNDS]" >&2; exit 2; }
model=$1
rounds=${2:-3}
WOOLLY=${WOOLLY:-bin/woolly}
THREADS=${THREADS:-2}
DEPTHS=${DEPTHS-1024,4096}
PP=${PP:-128,512}
TG=${TG:-64}
R=${R:-2}
[ -x "$WOOLLY" ] || { echo "vs-llama: $WOOLLY not found (make build)" >&2; exit 1; }
[ -f "$model" ] || { echo "vs-llama: $model not found" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# peak RSS in KiB of a command (GNU time -v, or BSD time -l in bytes)
case $(uname -s) in
Darwin) timeflag=-l ;;
*) timeflag=-v ;;
esac
peak_kib() {
	awk '/Maximum resident set size/ { print $NF; exit } /maximum resident set size/ { printf "%d\n", $1 / 1024; exit }' "$1"
}

# woolly bench --json: one line "test depth t/s" per result
woolly_rows() {
	tr '{' '\n' <"$1" | awk '/"test":/ {
		t = $0; sub(/.*"test":"/, "", t); sub(/".*/, "", t)
		v = $0; sub(/.*"tokens_per_s":/, "", v); sub(/,.*/, "", v)
		d = $0; sub(/.*"depth":/, "", d); sub(/[,}].*/, "", d)
		print t, d + 0, v
	}'
}

# llama-bench -o jsonl: the same rows
llama_rows() {
	awk '{
		p = $0; sub(/.*"n_prompt": /, "", p); sub(/,.*/, "", p)
		g = $0; sub(/.*"n_gen": /, "", g); sub(/,.*/, "", g)
		d = $0; sub(/.*"n_depth": /, "", d); sub(/,.*/, "", d)
		v = $0; sub(/.*"avg_ts": /, "", v); sub(/,.*/, "", v)
		print (p > 0 ? "pp" p : "tg" g), d + 0, v
	}' "$1"
}

run_engine() { # engine round
	e=$1 r=$2
	case $e in
	woolly)
		/usr/bin/time $timeflag "$WOOLLY" bench -m "$model" -p "$PP" -n "$TG" -t "$THREADS" -r "$R" --json >"$tmp/o" 2>"$tmp/t" || { cat "$tmp/t" >&2; exit 1; }
		woolly_rows "$tmp/o" >"$tmp/rows"
		if [ -n "$DEPTHS" ]; then
			"$WOOLLY" bench -m "$model" -p 0 -n "$TG" -d "$DEPTHS" -t "$THREADS" -r 1 --json >"$tmp/o" || exit 1
			woolly_rows "$tmp/o" >>"$tmp/rows"
		fi
		;;
	*)
		bin=${LLAMA_AVX2:-}
		[ "$e" = native ] && bin=${LLAMA_NATIVE:-}
		/usr/bin/time $timeflag "$bin" -m "$model" -p "$PP" -n "$TG" -t "$THREADS" -r "$R" -o jsonl >"$tmp/o" 2>"$tmp/t" || { cat "$tmp/t" >&2; exit 1; }
		llama_rows "$tmp/o" >"$tmp/rows"
		if [ -n "$DEPTHS" ]; then
			"$bin" -m "$model" -p 0 -n "$TG" -d "$DEPTHS" -t "$THREADS" -r 1 -o jsonl >"$tmp/o" 2>/dev/null || exit 1
			llama_rows "$tmp/o" >>"$tmp/rows"
		fi
		;;
	esac
	awk -v e="$e" -v r="$r" '{ printf "%s %s %s@%s %s\n", r, e, $1, $2, $3 }' "$tmp/rows" | tee -a "$tmp/all"
	echo "$r $e rss $(peak_kib "$tmp/t")" | tee -a "$tmp/all"
}

engines=woolly
[ -n "${LLAMA_AVX2:-}" ] && engines="$engines avx2"
[ -n "${LLAMA_NATIVE:-}" ] && engines="$engines native"
echo "model $model, $THREADS threads, $rounds rounds, engines: $engines"
echo "round engine test@depth t/s (rss: peak KiB of the pp/tg run)"
i=1
while [ "$i" -le "$rounds" ]; do
	for e in $engines; do run_engine "$e" "$i"; done
	i=$((i + 1))
done

echo
echo "median over $rounds rounds (t/s; rss MiB); ratio = woolly / llama.cpp build"
printf "%-12s %10s %10s %10s %10s %10s\n" test woolly avx2 native "vs avx2" "vs native"
sort -k3,3 -k2,2 -k4,4n "$tmp/all" | awk '
	{ k = $3 SUBSEP $2; n[k]++; v[k, n[k]] = $4; tests[$3] = 1; eng[$2] = 1 }
	function med(k) { return v[k, int((n[k] + 1) / 2)] }
	END {
		for (t in tests) {
			w = (t SUBSEP "woolly") in n ? med(t SUBSEP "woolly") : 0
			a = (t SUBSEP "avx2") in n ? med(t SUBSEP "avx2") : 0
			x = (t SUBSEP "native") in n ? med(t SUBSEP "native") : 0
			if (t == "rss") { w /= 1024; a /= 1024; x /= 1024 }
			ra = "-"; rx = "-"
			if (a > 0) ra = sprintf("%.2f", w / a)
			if (x > 0) rx = sprintf("%.2f", w / x)
			printf "%-12s %10.1f %10.1f %10.1f %10s %10s\n", t, w, a, x, ra, rx
		}
	}' | sort
