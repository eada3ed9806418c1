#!/bin/sh
# scripts/lint-sh.sh — keep the scripts and the Makefile portable to macOS's
# BSD userland and GNU make 3.81 (issue 14): shellcheck -s sh on every
# script (skipped with a message without shellcheck), no GNU-only options in
# the scripts and no GNU-make-3.82+ features in the Makefile.
set -u
status=0

if command -v shellcheck >/dev/null 2>&1; then
	shellcheck -s sh scripts/*.sh || status=1
else
	sh scripts/skip.sh lint-sh "shellcheck not found: POSIX check skipped (Debian: apt-get install shellcheck)" || status=1
fi

# GNU-only options that BSD tools refuse (nproc is fine behind a fallback:
# `nproc || sysctl -n hw.ncpu`).
for f in scripts/*.sh Makefile; do
	if [ "$f" = scripts/lint-sh.sh ]; then continue; fi # its own patterns
	if grep -nE 'sed -i|readlink -f|date \+%N|grep -[a-zA-Z]*P|stat -c|date -d|xargs -r|sort -V|cp -a|du -b|-printf' "$f" |
		grep -v '^[0-9]*:[[:space:]]*#' >&2; then
		echo "lint-sh: $f: GNU-only option above" >&2
		status=1
	fi
	if grep -n 'nproc' "$f" | grep -v '^[0-9]*:[[:space:]]*#' | grep -v '||' >&2; then
		echo "lint-sh: $f: nproc without a fallback above" >&2
		status=1
	fi
done

# GNU make 3.81 (macOS) lacks: .ONESHELL, .SHELLFLAGS, .RECIPEPREFIX (3.82),
# ::= and != assignments (4.0), $(file ...) (4.0), grouped targets &: (4.3),
# undefine and private (3.82), $(let/$(intcmp (4.4).
if grep -nE '^\.(ONESHELL|SHELLFLAGS|RECIPEPREFIX)|^[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(::=|!=)|\$\((file|let|intcmp|guile) |&:|^(undefine|private)[[:space:]]' Makefile >&2; then
	echo "lint-sh: Makefile: a feature GNU make 3.81 lacks, above" >&2
	status=1
fi
exit $status
