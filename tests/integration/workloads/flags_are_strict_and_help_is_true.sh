#!/usr/bin/env bash
# Every gs-* program: --help prints usage on stdout and exits 0; an unknown
# flag, a bad value or a stray argument exits 2 with exactly one line on
# stderr and nothing on stdout. Needs no GPU and no sim.
. "$(dirname "$0")/lib.sh" "$1"

expect_usage() {
	local out err rc
	set +e
	out=$("$@" 2>"$WORK/err")
	rc=$?
	set -e
	err=$(cat "$WORK/err")
	[ "$rc" -eq 2 ] || fail "$* exited $rc, want 2"
	[ -z "$out" ] || fail "$* printed on stdout: $out"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] ||
		fail "$* wrote more than one line on stderr: $err"
	case $err in
	"$(basename "$1"): "*) ;;
	*) fail "$* stderr does not start with the program name: $err" ;;
	esac
}

for p in gs-infer gs-matmul gs-burn gs-alloc gs-fault; do
	bin=$B/bin/$p
	[ -x "$bin" ] || fail "no $bin"
	out=$("$bin" --help) || fail "$p --help exited non-zero"
	case $out in
	usage:*) ;;
	*) fail "$p --help does not start with usage: $out" ;;
	esac
	grep -q -- '--via-getprocaddress' <<<"$out" ||
		fail "$p --help does not list --via-getprocaddress"
	expect_usage "$bin" --no-such-flag
	expect_usage "$bin" stray
	expect_usage "$bin" --device
	expect_usage "$bin" --device=-1
	expect_usage "$bin" --device x
done

expect_usage "$B/bin/gs-matmul" --iterations 0
expect_usage "$B/bin/gs-matmul" --n 8
expect_usage "$B/bin/gs-burn" --memory 1.5GiB
expect_usage "$B/bin/gs-burn" --memory 8GB
expect_usage "$B/bin/gs-burn" --seconds -1
expect_usage "$B/bin/gs-infer" --light --heavy
expect_usage "$B/bin/gs-infer" --seconds 1 --requests 5
expect_usage "$B/bin/gs-infer" --threads 0
expect_usage "$B/bin/gs-alloc" --chunk 1GiB
expect_usage "$B/bin/gs-alloc" --api bogus
expect_usage "$B/bin/gs-alloc" --api plain --chunk 0
expect_usage "$B/bin/gs-alloc" --api plain --stress 2 --limit 1GiB
expect_usage "$B/bin/gs-fault" --after-ms 1.5
echo "ok"
