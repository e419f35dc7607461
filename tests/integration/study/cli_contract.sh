#!/usr/bin/env bash
# `gpuslice bench study` usage and errors: --help is true usage on stdout
# (exit 0); bad options, lists and combinations are one-line usage errors
# (exit 2); without --sim and without a GPU it says so and points at --sim
# (exit 1), writing nothing.
set -euo pipefail
B=$(cd "$1" && pwd)
GS=$B/bin/gpuslice
W=$(mktemp -d /tmp/gs-study-cli.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

out=$("$GS" bench study --help)
grep -q '^usage: gpuslice bench study' <<<"$out" || fail "--help: $out"
grep -q -- '--quick' <<<"$out" || fail "--help lacks --quick"
"$GS" bench --help | grep -q study || fail "bench --help does not list study"

expect_usage() {
	local err rc=0
	err=$("$GS" bench study "$@" 2>&1 >/dev/null) || rc=$?
	[ $rc = 2 ] || fail "'$*': exit $rc, want 2 ($err)"
	[ "$(wc -l <<<"$err")" = 1 ] || fail "'$*': more than one line: $err"
	grep -q '^gpuslice bench study: ' <<<"$err" || fail "'$*': $err"
}
expect_usage --bogus
expect_usage --sim --gpu 0
expect_usage --gpu x
expect_usage --workloads inference,nope
expect_usage --strategies timeslicing
expect_usage --out
expect_usage stray

# Without --sim on a machine without a GPU (the sim kept off the paths).
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	rc=0
	err=$(env -u GPUSLICE_SIM_DIR LD_LIBRARY_PATH= "$GS" bench study --quick --out "$W/o" 2>&1) || rc=$?
	[ $rc = 1 ] || fail "no GPU: exit $rc, want 1 ($err)"
	grep -q -- '--sim' <<<"$err" || fail "no GPU: does not point at --sim: $err"
	[ ! -e "$W/o" ] || fail "no GPU: wrote $W/o anyway"
fi
echo "ok"
