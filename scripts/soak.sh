#!/bin/sh
# scripts/soak.sh — the soak of issue 14 against a real `woolly serve` on
# loopback: builds bin/woolly and bin/woolly-soak, serves two models from a
# temporary directory (symbolic links), runs woolly-soak against it (64
# clients x 500 requests by default; extra arguments go to woolly-soak, e.g.
# -clients 8 -requests 20) and stops the server. Exit status: woolly-soak's.
#
#   sh scripts/soak.sh
#   WOOLLY_SOAK_MODELS=/path/to/models SOAK_MODEL1=a SOAK_MODEL2=b sh scripts/soak.sh -json
set -eu

src=${WOOLLY_SOAK_MODELS:-../shared/models}
m1=${SOAK_MODEL1:-stories260K-Q4_K_M}
m2=${SOAK_MODEL2:-synth-llama-mini-Q4_K_M}
threads=${SOAK_THREADS:-1}
go=${GO:-go}

for m in "$m1" "$m2"; do
	if [ ! -f "$src/$m.gguf" ]; then
		echo "soak: $src/$m.gguf not found (set WOOLLY_SOAK_MODELS, SOAK_MODEL1, SOAK_MODEL2)" >&2
		exit 2
	fi
done
mkdir -p bin
$go build -o bin/woolly ./cmd/woolly
$go build -o bin/woolly-soak ./cmd/woolly-soak

dir=$(mktemp -d "${TMPDIR:-/tmp}/woolly-soak.XXXXXX")
abs=$(cd "$src" && pwd)
ln -s "$abs/$m1.gguf" "$dir/$m1.gguf"
ln -s "$abs/$m2.gguf" "$dir/$m2.gguf"
pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Port 0: the server picks a free port and logs it.
bin/woolly serve --models "$dir" --host 127.0.0.1 --port 0 -t "$threads" --max-queue 256 2>"$dir/serve.log" &
pid=$!
url=""
i=0
while [ $i -lt 60 ]; do
	url=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$dir/serve.log" | head -n 1)
	if [ -n "$url" ]; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then cat "$dir/serve.log" >&2; exit 1; fi
	sleep 1
	i=$((i + 1))
done
if [ -z "$url" ]; then echo "soak: woolly serve did not start" >&2; cat "$dir/serve.log" >&2; exit 1; fi
echo "soak: woolly serve at $url (pid $pid), models $m1 and $m2" >&2

status=0
bin/woolly-soak -url "$url" -models "$m1,$m2" "$@" || status=$?
if grep -n 'panic' "$dir/serve.log" >&2; then
	echo "soak: the server logged a panic" >&2
	status=1
fi
exit $status
