#!/bin/sh
# scripts/apple-proxy/profile.sh — executed instructions per function of a run
# counted by the tbprof.c plugin (docs/apple-proxy.md, "Where a prompt token's
# instructions go").
#
#   sh scripts/apple-proxy/profile.sh BINARY PROFILE [BASE_PROFILE TOKENS]
#
# BINARY is the (static, not stripped) program that ran; PROFILE the plugin's
# out= file. Each block's count goes to the function symbol at or below its
# start address. With BASE_PROFILE and TOKENS (a run of the same program with
# fewer tokens), each function's figure is (PROFILE - BASE_PROFILE) / TOKENS:
# its instructions per extra token. Prints "instructions share function", the
# largest first, then the total. NM names the symbol lister (default: the
# first of llvm-nm-16, llvm-nm, aarch64-linux-gnu-nm, nm).
set -eu

die() {
	printf 'profile: %s\n' "$*" >&2
	exit 1
}

case $# in
2) base='' tokens=1 ;;
4) base=$3 tokens=$4 ;;
*)
	echo "usage: sh scripts/apple-proxy/profile.sh BINARY PROFILE [BASE_PROFILE TOKENS]" >&2
	exit 2
	;;
esac
bin=$1 prof=$2
[ -f "$bin" ] || die "no binary $bin"
[ -f "$prof" ] || die "no profile $prof"
[ -z "$base" ] || [ -f "$base" ] || die "no base profile $base"
case $tokens in '' | *[!0-9]* | 0) die "TOKENS must be a positive integer, got '$tokens'" ;; esac

nm=${NM:-}
if [ -z "$nm" ]; then
	for c in llvm-nm-16 llvm-nm aarch64-linux-gnu-nm nm; do
		if command -v "$c" >/dev/null 2>&1; then
			nm=$c
			break
		fi
	done
fi
[ -n "$nm" ] || die "no nm found (set NM)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# code symbols as "address 0 name", 16 hex digits, so that one sort orders
# them with the profile's "address 1 count" lines (a symbol before a block
# at its own address)
"$nm" -n --defined-only "$bin" | awk '$2 ~ /^[TtWw]$/ && length($1) <= 16 {
	a = $1; while (length(a) < 16) a = "0" a; print a, 0, $3 }' >"$tmp/syms"
[ -s "$tmp/syms" ] || die "$nm found no code symbols in $bin"

per_function() { # PROFILE -> "name instructions", one line per function
	awk '{ print $1, 1, $2 }' "$1" | cat - "$tmp/syms" | LC_ALL=C sort -k1,1 -k2,2n |
		awk '$2 == 0 { f = $3; next } { n[f == "" ? "?" : f] += $3 }
		END { for (k in n) print k, n[k] }'
}
per_function "$prof" >"$tmp/a"
if [ -n "$base" ]; then
	per_function "$base" >"$tmp/b"
else
	: >"$tmp/b"
fi
awk -v t="$tokens" 'FILENAME == ARGV[1] { b[$1] = $2; next } { a[$1] = $2 }
	END {
		for (k in b) if (!(k in a)) a[k] = 0
		for (k in a) { d[k] = (a[k] - b[k]) / t; tot += d[k] }
		for (k in d) if (d[k] >= 0.5 || d[k] <= -0.5) printf "%.0f %.2f%% %s\n", d[k], tot ? 100 * d[k] / tot : 0, k
		printf "%.0f 100.00%% (total)\n", tot > "/dev/stderr"
	}' "$tmp/b" "$tmp/a" 2>"$tmp/total" | LC_ALL=C sort -k1,1nr
cat "$tmp/total"
