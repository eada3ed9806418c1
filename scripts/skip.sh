#!/bin/sh
# scripts/skip.sh PART REASON... — a part of make test that cannot run on
# this machine says why, in one line. The line also goes to $WOOLLY_SKIPLOG
# (make test lists those lines at its end). In CI (CI=true) every tool a
# part needs is installed by .ci/run, so a skip there is a failure: exit 1.
part=$1
shift
echo "$part: SKIP ($*)"
if [ -n "${WOOLLY_SKIPLOG:-}" ]; then echo "$part: $*" >>"$WOOLLY_SKIPLOG"; fi
if [ "${CI:-}" = true ]; then
	echo "$part: CI=true: a required tool is missing; failing instead of skipping" >&2
	exit 1
fi
exit 0
