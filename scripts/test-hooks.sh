#!/bin/sh
# test-hooks.sh — checks scripts/hooks/commit-msg on messages at and around
# its 72-character limit. Run by `make test-hooks` (not part of `make test`).
set -u
hook="$(dirname "$0")/hooks/commit-msg"
tmp=$(mktemp -d 2>/dev/null || mktemp -d -t woolly-hooks)
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

# expect WANT(0|1) NAME MESSAGE: run the hook on MESSAGE and compare its status.
expect() {
	want=$1 name=$2
	printf '%s' "$3" >"$tmp/msg"
	sh "$hook" "$tmp/msg" 2>"$tmp/err"
	got=$?
	[ "$got" -ne 0 ] && got=1
	if [ "$got" -ne "$want" ]; then
		echo "FAIL $name: exit $got, want $want"
		sed 's/^/    /' "$tmp/err"
		fails=$((fails + 1))
	else
		echo "ok   $name"
	fi
}

# s N: a subject of N ASCII characters.
s() { printf "%${1}s" '' | tr ' ' 'a'; }

expect 0 "72 characters" "$(s 72)"
expect 1 "73 characters" "$(s 73)"
expect 0 "short subject, long body" "$(printf 'kernels: a short subject\n\n%s\n' "$(s 200)")"
expect 1 "long subject, then a body" "$(printf '%s\n\nbody\n' "$(s 100)")"
expect 0 "72 characters with multi-byte ones (× é)" "$(s 70)×é"
expect 1 "73 characters with multi-byte ones" "$(s 71)×é"
expect 0 "comment lines before the subject" "$(printf '# a comment longer than seventy-two characters, which git strips anyway ....\n\nshort\n')"
expect 1 "blank and comment lines, then a long subject" "$(printf '\n# c\n%s\n' "$(s 80)")"
expect 0 "fixup! of a 72-character subject" "fixup! $(s 72)"

if [ "$fails" -ne 0 ]; then
	echo "test-hooks: $fails failed"
	exit 1
fi
echo "test-hooks: all passed"
