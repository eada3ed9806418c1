#!/bin/sh
# scripts/check-nocgo.sh — Woolly needs cgo (the C kernels). Built without it,
# the build must stop with one clear line saying so (kernels/nocgo.go), not
# with "undefined: kernels.X" inside the packages that call the kernels; and
# the pure-Go packages (ggml, loader) must still build.
set -u
GO=${GO:-go}
status=0

if ! CGO_ENABLED=0 "$GO" build ./ggml ./loader; then
	echo "check-nocgo: ggml and loader no longer build without cgo" >&2
	status=1
fi

out=$(CGO_ENABLED=0 "$GO" build ./... 2>&1)
rc=$?
errs=$(printf '%s\n' "$out" | grep -v '^#' | grep -c .)
if [ "$rc" -eq 0 ]; then
	echo "check-nocgo: CGO_ENABLED=0 go build ./... succeeded; expected the needs-cgo error" >&2
	status=1
elif ! printf '%s\n' "$out" | grep -q 'undefined: Woolly_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler$' || [ "$errs" -ne 1 ]; then
	echo "check-nocgo: CGO_ENABLED=0 go build ./... should fail with the one needs-cgo line; it said:" >&2
	printf '%s\n' "$out" >&2
	status=1
fi

out=$(CGO_ENABLED=0 "$GO" vet ./runtime 2>&1)
if printf '%s\n' "$out" | grep -q 'undefined: kernels\.' || ! printf '%s\n' "$out" | grep -q 'Woolly_needs_cgo'; then
	echo "check-nocgo: CGO_ENABLED=0 go vet ./runtime should fail with the needs-cgo line; it said:" >&2
	printf '%s\n' "$out" >&2
	status=1
fi

if [ "$status" -eq 0 ]; then echo "check-nocgo: ok (without cgo the build stops with the needs-cgo line)"; fi
exit $status
